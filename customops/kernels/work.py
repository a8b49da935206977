"""The work onnx.reference does for one node of our ops, estimated before it runs (compare's
``--reference-limit``).

onnx.reference runs most of these operators as Python loops: its time and memory grow with what a node
asks for (output elements, interpolation taps, RoiAlign's samples per bin) and with how its loops walk
the shapes (GridSample's linear mode reads the whole first spatial axis for every grid point), which
the inputs' sizes alone do not bound (a RoiAlign roi of [-1e30, 0, 1e30, 4] with sampling_ratio 0 asks
for 2e30 samples from 5 numbers). :func:`reference_work` counts that work from the node as the rewriter
writes it in our domain (the custom op's fixed inputs, in order, ``None`` where a value is not known;
its attributes decoded), following onnx.reference's own code (onnx 1.23) op by op: the ops it runs in
Python loops (GridSample, DeformConv, RoiAlign, Col2Im) in lines of that Python, as a trace of it counts
them (tests/hostile/test_reference_cost.py), the ops it runs in numpy in elements of its arrays (Resize
with its Python at :data:`PYTHON_MICROSECOND` elements a microsecond; the quantized integer family in
multiply-adds of its int32 matmuls and elements of its arrays at :data:`ARRAY_ELEMENT` each). Each op's limit
(customops.registry) is measured in its own unit. It is pure arithmetic on Python numbers: exact
integers where sizes are integers, ``math.inf`` where a size computed from the values is not finite
(which never fits a limit), and it never allocates an array of the size it counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from customops.registry import GRID_SAMPLE_16_MODES

Inputs = Sequence[np.ndarray | None]


def _elements(inputs: Inputs) -> int:
    return sum(math.prod(int(d) for d in v.shape) for v in inputs if v is not None)


def _values(v: np.ndarray | None) -> list[float] | None:
    """A small 1-D input's values as Python floats (None when unknown or empty)."""
    if v is None or v.size == 0 or v.size > 1024:
        return None
    with np.errstate(all="ignore"):
        return [float(x) for x in np.asarray(v, np.float64).reshape(-1)]


def _prod(sizes: Sequence[float]) -> float:
    """The product of sizes that may be floats, inf or NaN (NaN and inf: inf; negatives: 0)."""
    total: float = 1
    for s in sizes:
        if not math.isfinite(s):
            return math.inf
        total *= max(math.ceil(s), 0)
    return total


_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
"""Input elements read per output element and per interpolated axis (Upsample)."""


# ---------------------------------------------------------------------------------------------
# Resize: onnx.reference (1.23) resizes one axis at a time in numpy (op_resize._interpolate_nd), after a
# Python loop over the output positions of that axis for their coefficients; with ``axes`` it does all
# of that once per element of the axes left alone (a Python loop over them). Counted in elements of its
# arrays, the Python time at :data:`PYTHON_MICROSECOND` elements per microsecond.

PYTHON_MICROSECOND = 100
"""Elements of numpy work that cost onnx.reference's Resize about as much as a microsecond of its Python:
on arrays past the caches an element gathered, weighed or summed takes about 10 ns (measured on a 2-core
VM; on small arrays it is faster, so the estimate is then larger than the cost)."""

_RESIZE_TAPS = {"nearest": 2, "linear": 2, "cubic": 4}
"""The coefficients of one output position (onnx.reference's nearest has two, one of them 0)."""


def _resize_taps(mode: str, antialias: bool, scale: float) -> float:
    """The coefficients per output position on an axis scaled by ``scale``: with antialias a downscale
    widens linear's to about 2 / scale + 2 and cubic's to about 4 / scale + 2."""
    base = _RESIZE_TAPS.get(mode, 4)
    if not antialias or mode == "nearest" or scale >= 1:
        return base
    if not scale > 0:
        return math.inf
    return math.ceil(base / scale) + 2


def _coefficient_microseconds(mode: str, antialias: bool, taps: float) -> float:
    """Python time of one output position's coefficients: a call of about 1.5 µs (cubic 2.5 µs); with
    antialias linear's is vectorized (5 µs), cubic's a Python call per tap (0.5 µs each)."""
    if antialias and mode == "cubic":
        return 2.5 + 0.5 * taps
    if antialias and mode == "linear":
        return 5.0
    return 2.5 if mode == "cubic" else 1.5


def _resize_pass(shape: Sequence[float], out: Sequence[float], mode: str, antialias: bool) -> float:
    """One call of onnx.reference's ``_interpolate_nd`` on an array of ``shape`` resized to ``out``:
    the input widened to float64, per changed axis its Python loop (25 µs a call, the coefficients of
    each output position) and three passes over the gathered taps, the output cast back."""
    current = [float(d) for d in shape]
    work = _prod(current) + _prod(out)
    for axis, (before, after) in enumerate(zip(shape, out, strict=True)):
        if before == after:
            continue  # the reference skips an axis it does not change
        taps = _resize_taps(mode, antialias, after / before if before else 1.0)
        current[axis] = after
        python = 25 + max(after, 0) * _coefficient_microseconds(mode, antialias, taps)
        work += 3 * _prod(current) * taps + PYTHON_MICROSECOND * python
    return work


def _resize_work(shape: tuple[int, ...], out: list[float], mode: str, antialias: bool, axes: Any) -> float:
    """The reference's work for a Resize of ``shape`` to ``out``: one pass (:func:`_resize_pass`) over
    the whole array, or with ``axes`` one per element of the other axes (5 µs each besides)."""
    if not axes:
        return _resize_pass(shape, out, mode, antialias)
    rank = len(shape)
    chosen = sorted({int(a) % rank for a in axes})
    others = _prod([shape[a] for a in range(rank) if a not in chosen])
    inner = _resize_pass([shape[a] for a in chosen], [out[a] for a in chosen], mode, antialias)
    return others * (inner + 5 * PYTHON_MICROSECOND)


def _resized(
    shape: tuple[int, ...], scales: list[float] | None, sizes: list[float] | None, axes: Any
) -> list[float]:
    """Output dimensions of a Resize or Upsample, not rounded down (the reference floors them; the
    estimate may only be larger)."""
    out: list[float] = [float(d) for d in shape]
    rank = len(shape)
    chosen = [int(a) % rank for a in axes] if axes else list(range(rank))
    given = sizes if sizes is not None else scales
    if given is None or len(given) != len(chosen):
        return out
    biggest = (
        max((abs(s) / max(shape[a], 1) for a, s in zip(chosen, sizes, strict=True)), default=1.0)
        if sizes
        else 0.0
    )
    for a, g in zip(chosen, given, strict=True):
        out[a] = max(abs(g), biggest * shape[a]) if sizes is not None else abs(g) * shape[a]
    return out


def resize(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, _, scales, sizes = (list(inputs) + [None] * 4)[:4]
    if x is None:
        return _elements(inputs)
    axes = attrs.get("axes")
    out = _resized(x.shape, _values(scales), _values(sizes), axes)
    mode, antialias = str(attrs.get("mode", "nearest")), bool(attrs.get("antialias", 0))
    return _resize_work(x.shape, out, mode, antialias, axes)


def upsample(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """onnx.reference's Upsample repeats elements (nearest with integer scales; it refuses the rest at
    once): output elements times taps."""
    x, scales = (list(inputs) + [None] * 2)[:2]
    if x is None:
        return _elements(inputs)
    out = _resized(x.shape, _values(scales), None, None)
    taps = _TAPS.get(str(attrs.get("mode", "nearest")), 4)
    total = _prod(out)
    for before, after in zip(x.shape, out, strict=True):
        if before != after:
            total *= taps
    return total


def pad(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """numpy's pad: output elements."""
    data, pads, _, axes = (list(inputs) + [None] * 4)[:4]
    given = _values(pads)
    if data is None or given is None:
        return _elements(inputs)
    rank = data.ndim
    chosen = [int(a) % rank for a in (_values(axes) or range(rank))] if rank else []
    if len(given) != 2 * len(chosen):
        return _elements(inputs)
    out = [float(d) for d in data.shape]
    for i, a in enumerate(chosen):
        out[a] += given[i] + given[i + len(chosen)]
    return _prod(out)


def col2im(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """onnx.reference's Col2Im (op_col2im) calls a Python function per batch and channel (about 100
    lines, as long as 200 with its numpy calls, and an image of zeros: a fifth of a line per element),
    whose loop runs once per element of the input, each about 8 + 13 lines per image axis. In lines of
    its Python."""
    x, image, block = (list(inputs) + [None] * 3)[:3]
    image_v, block_v = _values(image), _values(block)
    if x is None or x.ndim < 2 or image_v is None or block_v is None:
        return _elements(inputs)
    calls = x.shape[0] * math.floor(x.shape[1] / max(_prod(block_v), 1))
    per_element = 8 + 13 * len(image_v)
    return x.size * per_element + calls * (200 + _prod(image_v) / 5)


def center_crop_pad(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """Slices in numpy: input and output elements."""
    x, shape = (list(inputs) + [None] * 2)[:2]
    given = _values(shape)
    if x is None or given is None or not x.ndim:
        return _elements(inputs)
    axes = attrs.get("axes") or range(x.ndim)
    out = [float(d) for d in x.shape]
    for a, g in zip(axes, given, strict=False):
        out[int(a) % x.ndim] = g
    return _elements(inputs) + _prod(out)


def affine_grid(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """onnx.reference's AffineGrid (op_affine_grid) builds the base grid of the spatial size once (about
    2 x axes + 4 arrays of it, whatever the batch), then multiplies it by each theta (axes x (axes + 1)
    products per point) and copies the result twice: elements of its arrays. The batch is theta's (the
    reference ignores ``size``'s first value)."""
    theta, size = (list(inputs) + [None] * 2)[:2]
    given = _values(size)
    if given is None or len(given) < 3:
        return _elements(inputs)
    axes = len(given) - 2
    batch = theta.shape[0] if theta is not None and theta.ndim else given[0]
    points = _prod(given[2:])
    return (2 * axes + 4) * points + 3 * _prod([batch]) * axes * (axes + 1) * points + _elements(inputs)


# ---------------------------------------------------------------------------------------------
# GridSample and DeformConv: onnx.reference's GridSample (op_grid_sample) interpolates each output point
# in Python, recursively: linear and cubic read the whole first spatial axis (1-D interpolations along
# it for every row, then one across), so a point of an N-D input costs 1 + D1 + D1 x D2 + ... 1-D
# interpolations whatever the grid; its DeformConv calls GridSample once per output position, input
# channel of the group and output channel. Counted in lines of its Python (measured by tracing it).

_POINT_LINES = 20
"""Lines of one output point besides its axes and interpolation."""
_AXIS_LINES = {"nearest": 24}
"""Lines per spatial axis of one output point (denormalized, bordered; nearest: its pixel too)."""
_ROW_LINES = {"linear": 43, "cubic": 78}
"""Lines of one 1-D interpolation (the recursion's rows)."""


def grid_point_lines(dims: Sequence[int], mode: str, padding: str) -> float:
    """Lines of onnx.reference's GridSample for one output point on an input of spatial ``dims`` (``mode``
    by either version's names)."""
    mode = GRID_SAMPLE_16_MODES.get(mode, mode)
    axes = len(dims)
    if mode == "nearest":
        # zeros padding: a point outside the first axes makes an array of zeros of the rest
        zeros = sum(_prod(dims[j:]) for j in range(1, axes)) / 100 if padding == "zeros" else 0
        return _POINT_LINES + _AXIS_LINES["nearest"] * axes + zeros
    rows = sum(_prod(dims[:j]) for j in range(axes))  # 1 + D1 + D1 x D2 + ...
    return _POINT_LINES + 12 * axes + _ROW_LINES.get(mode, 78) * rows


def grid_sample(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """X's batch x channels x the grid's points, each :func:`grid_point_lines` (45 lines per batch and
    channel besides)."""
    x, grid = (list(inputs) + [None] * 2)[:2]
    if x is None or grid is None or x.ndim < 3 or grid.ndim < 3:
        return _elements(inputs)
    mode, padding = str(attrs.get("mode", "linear")), str(attrs.get("padding_mode", "zeros"))
    planes = x.shape[0] * x.shape[1]
    points = planes * math.prod(grid.shape[1:-1])
    if points == 0:
        return _elements(inputs)
    per_point = grid_point_lines([int(d) for d in x.shape[2:]], mode, padding)
    return points * per_point + planes * 45 + _elements(inputs)


DEFORM_CALL_LINES = 1500
"""onnx.reference's DeformConv per call of GridSample: its own lines and the evaluator's set-up, about
100 µs, as many as 1,500 lines of GridSample's Python."""


def deform_conv(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """Per batch, output channel, input channel of the group and output position a GridSample of the
    kernel's taps on the (1, 1, H, W) plane; every other input channel is passed over (3 lines)."""
    x, w, offset = (list(inputs) + [None] * 3)[:3]
    if x is None or w is None or offset is None or x.ndim < 3 or w.ndim < 3 or offset.ndim < 3:
        return _elements(inputs)
    batch, channels, spatial = x.shape[0], x.shape[1], [int(d) for d in x.shape[2:]]
    per_channel = batch * w.shape[0]  # the reference's loops over batch and output channels
    calls = per_channel * w.shape[1] * math.prod(offset.shape[2:])
    taps = math.prod(w.shape[2:])
    per_call = DEFORM_CALL_LINES + taps * grid_point_lines(spatial, "linear", "zeros")
    return calls * per_call + per_channel * channels * 3 + _elements(inputs)


# ---------------------------------------------------------------------------------------------
# RoiAlign: onnx.reference's RoiAlign (op_roi_align) loops in Python over rois, a table of samples per
# bin (made as a list of sample_h x sample_w objects per bin, even when both are negative), then
# channels, bins and samples. Counted in lines of its Python.


def roi_align(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """Per roi: 52 lines, 10 per channel, per bin 5 + 7 per channel, per sample row of a bin 8 + 2 per
    channel, per sample 45 + 21 per channel and 12 per object of the table; samples counted from the
    roi's own size as onnx.reference does (negative sizes make no samples, but two make a table)."""
    x, rois = (list(inputs) + [None] * 2)[:2]
    if x is None or rois is None or x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        return _elements(inputs)
    height, width = int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1))
    ratio, scale = int(attrs.get("sampling_ratio", 0)), float(attrs.get("spatial_scale", 1.0))
    half_pixel = str(attrs.get("coordinate_transformation_mode", "half_pixel")) == "half_pixel"
    channels, bins = x.shape[1], max(height, 0) * max(width, 0)
    with np.errstate(all="ignore"):
        boxes = np.asarray(rois, np.float64) * scale
        size_h, size_w = boxes[:, 3] - boxes[:, 1], boxes[:, 2] - boxes[:, 0]
        if not half_pixel:  # output_half_pixel: malformed rois become 1x1
            size_h, size_w = np.maximum(size_h, 1.0), np.maximum(size_w, 1.0)
        grid_h, grid_w = _samples(size_h, height, ratio), _samples(size_w, width, ratio)
        rows, samples = np.maximum(grid_h, 0), np.maximum(grid_h, 0) * np.maximum(grid_w, 0)
        table = np.maximum(grid_h * grid_w, 0)
        per_bin = 5 + 7 * channels + rows * (8 + 2 * channels) + samples * (45 + 21 * channels) + 12 * table
        total = float(np.sum(52 + 10 * channels + bins * per_bin))
    if not math.isfinite(total):
        return math.inf
    return total + _elements(inputs)


def _samples(size: np.ndarray, pooled: int, ratio: int) -> np.ndarray:
    """RoiAlign's samples per bin on one axis for each roi, as onnx.reference counts them:
    ``sampling_ratio``, or ceil(size / pooled) when it is 0 (negative for a negative size; inf where the
    size is not finite)."""
    if ratio > 0:
        return np.full(size.shape, float(ratio))
    per = np.ceil(size / max(pooled, 1))
    return np.where(np.isnan(per), np.inf, per)


# ---------------------------------------------------------------------------------------------
# The quantized integer family: onnx.reference (1.23) computes these in numpy alone (no Python loop over
# the data): its integer matmuls (MatMulInteger, QLinearMatMul, and the Convs after an im2col of index
# arrays) in int32, the rest elementwise, pass by pass. Counted in multiply-adds of those matmuls (about
# 1.5 ns each on a 2-core VM) and, at :data:`ARRAY_ELEMENT` each, elements of the arrays it makes (a pass
# over x, an index array, a copy): those cost 3 to 17 ns each there, and bound its memory.

ARRAY_ELEMENT = 10
"""An element of an array onnx.reference makes for the quantized family, in multiply-adds of its int32
matmul (measured: 1 to 2 ns a multiply-add, 3 to 17 ns an element of its elementwise passes and im2col)."""

_PASSES = {"QuantizeLinear": 8, "DequantizeLinear": 6, "DynamicQuantizeLinear": 7}
"""Passes over x of the elementwise ops: QuantizeLinear divides, rounds, casts, adds the zero point,
clips and casts again (a blocked scale and zero point are repeated to x's shape first); DequantizeLinear
casts, subtracts, multiplies and casts (and repeats a blocked scale); DynamicQuantizeLinear reduces twice,
then divides, rounds, adds, clips and casts."""


def _elementwise(op: str) -> Callable[[Inputs, Mapping[str, Any]], float]:
    def work(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
        x = inputs[0] if inputs else None
        return _elements(inputs) if x is None else float(ARRAY_ELEMENT * _PASSES[op] * x.size)

    return work


def _matmul_shapes(a: np.ndarray, b: np.ndarray) -> tuple[int, int] | None:
    """(multiply-adds, output elements) of numpy's matmul of ``a`` and ``b``'s shapes, None when they do
    not fit."""
    a_shape = a.shape if a.ndim > 1 else (1, *a.shape)
    b_shape = b.shape if b.ndim > 1 else (*b.shape, 1)
    if not a.ndim or not b.ndim or a_shape[-1] != b_shape[-2]:
        return None
    try:
        batch = math.prod(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    except ValueError:
        return None
    out = batch * a_shape[-2] * b_shape[-1]
    return out * a_shape[-1], out


def _gemm(a: np.ndarray | None, b: np.ndarray | None, out_passes: int, inputs: Inputs) -> float:
    """A and B cast to int32 and their zero points subtracted (two passes each), the matmul's
    multiply-adds, ``out_passes`` passes over its output."""
    sizes = None if a is None or b is None else _matmul_shapes(a, b)
    if sizes is None:
        return _elements(inputs)
    macs, out = sizes
    return macs + ARRAY_ELEMENT * (2 * a.size + 2 * b.size + out_passes * out)  # type: ignore[union-attr]


def matmul_integer(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """The matmul and its output (one pass)."""
    a, b = (list(inputs) + [None] * 2)[:2]
    return _gemm(a, b, 1, inputs)


def qlinear_matmul(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """The int32 matmul, then six passes over its output: the product by the multiplier (float64), the
    zero point added, rint, clip and the cast."""
    a, b = (list(inputs) + [None] * 4)[0], (list(inputs) + [None] * 4)[3]
    return _gemm(a, b, 6, inputs)


def _conv_out(x: np.ndarray, kernel: Sequence[int], attrs: Mapping[str, Any]) -> list[int]:
    """A Conv's output spatial lengths as onnx.reference makes them (ceil(length / stride) with SAME
    padding; negative lengths: 0)."""
    rank = len(kernel)
    strides = list(attrs.get("strides") or [1] * rank)
    dilations = list(attrs.get("dilations") or [1] * rank)
    pads = list(attrs.get("pads") or [0] * 2 * rank)
    pad = str(attrs.get("auto_pad") or "NOTSET")
    out = []
    for i, n in enumerate(x.shape[2:]):
        if pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-n // max(strides[i], 1)))
            continue
        span = (kernel[i] - 1) * dilations[i] + 1
        extra = pads[i] + pads[i + rank] if pad == "NOTSET" else 0
        out.append(max((n + extra - span) // max(strides[i], 1) + 1, 0))
    return out


def _conv(
    x: np.ndarray | None, w: np.ndarray | None, attrs: Mapping[str, Any], out_passes: int, inputs: Inputs
) -> float:
    """onnx.reference's Conv of integers: x and w cast and their zero points subtracted, an index array
    per spatial axis and the gathered columns (C x kernel taps x output pixels, the columns per image
    and a copy), the grouped int32 matmul, ``out_passes`` passes over the output."""
    if x is None or w is None or x.ndim < 3 or w.ndim != x.ndim:
        return _elements(inputs)
    kernel = [int(k) for k in (attrs.get("kernel_shape") or w.shape[2:])]
    out_pixels = math.prod(_conv_out(x, kernel, attrs))
    batch, channels = x.shape[0], x.shape[1]
    columns = channels * math.prod(kernel) * out_pixels
    group = max(int(attrs.get("group") or 1), 1)
    macs = w.shape[0] * (channels // group) * math.prod(kernel) * batch * out_pixels
    arrays = 2 * x.size + 2 * w.size + (len(kernel) + 2 * batch) * columns
    return macs + ARRAY_ELEMENT * (arrays + out_passes * batch * w.shape[0] * out_pixels)


def conv_integer(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, w = (list(inputs) + [None] * 2)[:2]
    return _conv(x, w, attrs, 3, inputs)


def qlinear_conv(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, w = (list(inputs) + [None] * 4)[0], (list(inputs) + [None] * 4)[3]
    return _conv(x, w, attrs, 9, inputs)


WORK: dict[str, Callable[[Inputs, Mapping[str, Any]], float]] = {
    "Resize": resize,
    "Upsample": upsample,
    "Pad": pad,
    "Col2Im": col2im,
    "CenterCropPad": center_crop_pad,
    "AffineGrid": affine_grid,
    "GridSample": grid_sample,
    "DeformConv": deform_conv,
    "RoiAlign": roi_align,
    "MatMulInteger": matmul_integer,
    "QLinearMatMul": qlinear_matmul,
    "ConvInteger": conv_integer,
    "QLinearConv": qlinear_conv,
    **{op: _elementwise(op) for op in _PASSES},
}
"""The estimate of each custom op (by name in customops.registry.CUSTOM_OPS); any other op: its inputs'
elements."""


def reference_work(op: str, inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """The work onnx.reference does for a node of custom op ``op`` with ``inputs`` and ``attrs`` (see the
    module docstring), at least the elements of its inputs; ``math.inf`` when a size is not finite."""
    estimate = WORK.get(op, lambda i, _a: _elements(i))
    try:
        work = estimate(inputs, attrs)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return math.inf  # a node whose sizes do not even compute: never given to the reference
    return max(work, _elements(inputs))
