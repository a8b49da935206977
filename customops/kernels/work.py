"""The work onnx.reference does for one node of our ops, estimated before it runs (compare's
``--reference-limit``).

onnx.reference runs most of these operators as Python loops over the output: its time and memory grow
with what a node asks for (output elements, interpolation taps, RoiAlign's samples per bin), which its
inputs' sizes alone do not bound (a RoiAlign roi of [-1e30, 0, 1e30, 4] with sampling_ratio 0 asks for
2e30 samples from 5 numbers). :func:`reference_work` counts that work from the node as the rewriter
writes it in our domain (the custom op's fixed inputs, in order, ``None`` where a value is not known;
its attributes decoded), in steps of about one output element or one tap. It is pure arithmetic on
Python numbers: exact integers where sizes are integers, ``math.inf`` where a size computed from the
values is not finite (which never fits a limit), and it never allocates an array of the size it counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

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


_TAPS = {"nearest": 1, "linear": 2, "cubic": 4, "bilinear": 2, "bicubic": 4}
"""Input elements read per output element and per interpolated axis."""


def _resized(
    shape: tuple[int, ...], scales: list[float] | None, sizes: list[float] | None, axes: Any
) -> list[float]:
    """Output dimensions of a Resize or Upsample (rounded up: the estimate may only be larger)."""
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
        out[a] = max(abs(g), biggest * shape[a]) if sizes is not None else abs(g) * shape[a] + 1
    return out


def _resize_work(shape: tuple[int, ...], out: list[float], mode: str, antialias: bool) -> float:
    taps = _TAPS.get(mode, 4)
    total = _prod(out)
    for before, after in zip(shape, out, strict=True):
        if before != after:
            shrink = before / after if antialias and math.isfinite(after) and 0 < after < before else 1
            total *= taps * math.ceil(shrink)
    return total


def resize(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, _, scales, sizes = (list(inputs) + [None] * 4)[:4]
    if x is None:
        return _elements(inputs)
    out = _resized(x.shape, _values(scales), _values(sizes), attrs.get("axes"))
    return _resize_work(x.shape, out, str(attrs.get("mode", "nearest")), bool(attrs.get("antialias", 0)))


def upsample(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, scales = (list(inputs) + [None] * 2)[:2]
    if x is None:
        return _elements(inputs)
    out = _resized(x.shape, _values(scales), None, None)
    return _resize_work(x.shape, out, str(attrs.get("mode", "nearest")), False)


def pad(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
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
    x, image, block = (list(inputs) + [None] * 3)[:3]
    image_v, block_v = _values(image), _values(block)
    if x is None or x.ndim < 2 or image_v is None or block_v is None:
        return _elements(inputs)
    channels = x.shape[1] / max(_prod(block_v), 1)
    return _elements(inputs) + x.shape[0] * channels * _prod(image_v)


def center_crop_pad(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
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
    size = _values((list(inputs) + [None] * 2)[1])
    if size is None or len(size) < 3:
        return _elements(inputs)
    return _prod([size[0], *size[2:]]) * (len(size) - 2) + _elements(inputs)


def grid_sample(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, grid = (list(inputs) + [None] * 2)[:2]
    if x is None or grid is None or x.ndim < 3 or grid.ndim < 3:
        return _elements(inputs)
    spatial = grid.ndim - 2
    taps = _TAPS.get(str(attrs.get("mode", "linear")), 4) ** spatial
    return x.shape[0] * x.shape[1] * math.prod(grid.shape[1:-1]) * taps + _elements(inputs)


def deform_conv(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    x, w, offset = (list(inputs) + [None] * 3)[:3]
    if x is None or w is None or offset is None or w.ndim < 3 or offset.ndim < 3:
        return _elements(inputs)
    # every output element of every output channel sums in-channels / group x kernel taps, each bilinear
    per_output = math.prod(w.shape[1:]) * 4
    return x.shape[0] * w.shape[0] * math.prod(offset.shape[2:]) * per_output + _elements(inputs)


def roi_align(inputs: Inputs, attrs: Mapping[str, Any]) -> float:
    """Per roi: (channels + 1) x output bins x samples per bin (the reference's precomputed table and
    its loop over channels), samples counted from the roi's own size as onnx.reference does."""
    x, rois = (list(inputs) + [None] * 2)[:2]
    if x is None or rois is None or x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        return _elements(inputs)
    height, width = int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1))
    ratio, scale = int(attrs.get("sampling_ratio", 0)), float(attrs.get("spatial_scale", 1.0))
    half_pixel = str(attrs.get("coordinate_transformation_mode", "half_pixel")) == "half_pixel"
    with np.errstate(all="ignore"):
        boxes = np.asarray(rois, np.float64) * scale
        size_h, size_w = boxes[:, 3] - boxes[:, 1], boxes[:, 2] - boxes[:, 0]
        if not half_pixel:  # output_half_pixel: malformed rois become 1x1
            size_h, size_w = np.maximum(size_h, 1.0), np.maximum(size_w, 1.0)
        samples = _samples(size_h, height, ratio) * _samples(size_w, width, ratio)
        total = float(np.sum(samples))
    if not math.isfinite(total):
        return math.inf
    return height * width * (x.shape[1] + 1) * total + _elements(inputs)


def _samples(size: np.ndarray, pooled: int, ratio: int) -> np.ndarray:
    """RoiAlign's samples per bin on one axis for each roi: ``sampling_ratio``, or ceil(size / pooled)
    when it is 0 (none when that is negative; inf or NaN where the size is not finite)."""
    if ratio > 0:
        return np.full(size.shape, float(ratio))
    per = np.ceil(size / max(pooled, 1))
    return np.where(np.isnan(per), np.inf, np.maximum(per, 0.0))


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
