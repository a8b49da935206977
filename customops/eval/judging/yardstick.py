"""The yardstick: a high-precision value of the spec formula for one node, and how far each side may be
from it for its output type and the op's arithmetic.

When ORT's built-in kernel and ours differ on a node alone, a majority of three float32 computations
can outvote the exact answer (ORT's RoiAlign and onnx.reference's, a port of it, agree bit for bit and
are further from the exact value than ours). So where a node's arithmetic rounds, each side is judged
against a value of the formula computed in float64: our kernel run on the node's inputs widened to
float64 (the inputs of the op's type T; float64 inputs: our output itself). A side within
:func:`bound` of it does not leave the spec (customops.eval.judging.attribution.odd_one_out).

:data:`YARDSTICKS` is the table per op (docs/compare.md, "Yardsticks per op"): what gives the value,
the terms summed per output element, and whether onnx.reference is a vote (an independent
implementation that computes in float64). Configurations that do not round (copies, nearest sampling,
maxima) have no yardstick: a difference there is one of formula, and the three votes decide.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, helper

from customops import dtypes
from customops.eval.judging.attribution import Within
from customops.eval.judging.metrics import compare_arrays

Inputs = Sequence[np.ndarray | None]
Run64 = Callable[[ModelProto, dict[str, np.ndarray]], tuple["np.ndarray | None", "str | None"]]
"""Runs a one-node model on our kernels (in the custom side's child): (first output, None) or (None,
the error)."""

COORDINATE_OPS = 8
"""Rounding steps, in ulps of the largest coordinate, allowed for a sample coordinate computed in the
output's type (scale, shift, bin size, step within the bin: RoiAlign takes about eight)."""


@dataclass(frozen=True)
class Yardstick:
    """One op's row of the table (docs/compare.md, "Yardsticks per op")."""

    op: str
    source: str
    """What gives the high-precision value."""
    terms: str
    """The terms summed per output element (T in :func:`bound`), in words."""
    exact: str
    """The configurations that do not round (no yardstick there), in words."""
    reference_vote: bool
    """Whether onnx.reference (onnx 1.23) is an independent implementation computing in float64 (for an
    exact kernel: exactly)."""
    reference_note: str
    exact_kernel: bool = False
    """Our kernel is exact (integer outputs: exact integer arithmetic; float outputs: the spec's value
    correctly rounded, or its float32 steps where the spec is a function body): the yardstick is our
    output itself, with a bound of 0 on every output type (:data:`TERMS`' :func:`exact`)."""


_OURS = "ours on the inputs widened to float64 (ours computes in float64 and rounds once)"

EXACT_SOURCE = "ours: exact (integer sums exact, one rounding per float or requantized result)"
"""The yardstick of the quantized integer family: our output itself (docs/semantics.md, "Quantized
integer family kernels")."""

QUANTIZED_REFERENCE: tuple[tuple[str, bool, str], ...] = (
    (
        "MatMulInteger",
        True,
        "own implementation in int32 (wraps as ours); a per-row a_zero_point [M] is subtracted along K, "
        "a configuration ORT refuses",
    ),
    ("ConvInteger", True, "own implementation: im2col and a matmul in int32 (wraps as ours)"),
    ("QLinearMatMul", False, "rounds the multiplier a_scale * b_scale / y_scale to float32 first"),
    ("QLinearConv", False, "rounds the multiplier x_scale * w_scale / y_scale to float32 first"),
    (
        "QuantizeLinear",
        False,
        "the type's minimum for +inf and quotients beyond int32 (int16, int4, ...); numpy's promotion "
        "for the division's precision; float8 zero points ignored",
    ),
    ("DequantizeLinear", False, "a float32 product, then a second rounding to float16 or bfloat16"),
    (
        "DynamicQuantizeLinear",
        False,
        "the function body's float32 steps, but x all zeros gives y_scale 1/255 (the spec's 0)",
    ),
)
"""Whether onnx.reference (onnx 1.23) is a vote for each op of the quantized family, and why: a vote only
where it is an independent exact implementation (docs/semantics.md lists where it is wrong)."""

ACTIVATION_SOURCE = "ours: correctly rounded (the exact value rounded once to the output's type)"
"""The yardstick of the activation family: our output itself (docs/semantics.md, "Activations")."""

ACTIVATION_REFERENCE: tuple[tuple[str, str], ...] = (
    ("Sigmoid", "numpy in the input's type (exp(x) / (1 + exp(x)) below 0): several roundings"),
    ("Tanh", "numpy's tanh in the input's type"),
    ("Erf", "math.erf rounded to float32 (doubles too), then to the input's type"),
    ("Gelu", "its function body in the input's type: 1 + erf and 1 + tanh cancel in the tail"),
    ("Softplus", "numpy's logaddexp in the input's type"),
    ("Mish", "its function body in the input's type; NaN at -inf"),
    ("Swish", "the formula in the input's type; NaN at -inf"),
    ("HardSigmoid", "the formula in the input's type (alpha * x rounded, then + beta)"),
    ("HardSwish", "its function body: HardSigmoid with alpha 1/6 as float32, then a product"),
    ("Elu", "alpha * expm1(x) in the input's type"),
    ("Selu", "alpha * expm1(x), times gamma, in the input's type; -0 at -0"),
    ("Celu", "alpha * expm1(x / alpha) in the input's type; -0 at -0"),
)
"""Why onnx.reference (onnx 1.23) is no vote for any activation: it computes in the input's type, several
roundings (docs/semantics.md, "Activations")."""

YARDSTICKS: dict[str, Yardstick] = {
    y.op: y
    for y in (
        Yardstick(
            "Resize",
            _OURS,
            "2 (linear) or 4 (cubic) taps per resized axis, more with antialias when shrinking",
            "nearest",
            True,
            "own implementation; coefficients and sums in float64",
        ),
        Yardstick("Upsample", _OURS, "2 taps per axis (linear)", "nearest", True, "nearest only; copies"),
        Yardstick("Pad", "none: copies", "-", "always", True, "numpy.pad; copies"),
        Yardstick("CenterCropPad", "none: copies", "-", "always", True, "slices; copies"),
        Yardstick(
            "Col2Im",
            "ours on float64 inputs (ours sums in T, so its float64 run is the value)",
            "the blocks overlapping a pixel (at most the product of block_shape)",
            "never",
            False,
            "sums in the input's type (float32 for float32)",
        ),
        Yardstick(
            "GridSample",
            _OURS,
            "2^r (linear) or 4^r (cubic) taps, r spatial axes",
            "nearest",
            False,
            "computes coordinates and sums in the input's type (float32 for float32)",
        ),
        Yardstick(
            "AffineGrid",
            _OURS,
            "r + 1 products per component (r = 2 or 3)",
            "never",
            True,
            "own implementation; matches float64 rounded once",
        ),
        Yardstick(
            "RoiAlign",
            _OURS,
            "4 bilinear taps times the samples per bin (avg), 4 (max)",
            "never",
            False,
            "a port of ORT's C++ in the input's type: not independent",
        ),
        Yardstick("MaxRoiPool", "none: maxima of copies", "-", "always", False, "onnx 1.23 has none"),
        *(
            Yardstick(op, EXACT_SOURCE, "-", "always (bound 0)", vote, note, exact_kernel=True)
            for op, vote, note in QUANTIZED_REFERENCE
        ),
        *(
            Yardstick(op, ACTIVATION_SOURCE, "-", "always (bound 0)", False, note, exact_kernel=True)
            for op, note in ACTIVATION_REFERENCE
        ),
        Yardstick(
            "DeformConv",
            "ours on float64 inputs (ours samples in float64, then a product in T; in float64 throughout "
            "on float64 inputs)",
            "in-channels per group x kernel taps x 2^r bilinear corners, plus the bias",
            "never",
            False,
            "samples and sums in the input's type (float32 for float32)",
        ),
    )
}


CORRECTLY_ROUNDED = frozenset(op for op, _ in ACTIVATION_REFERENCE)
"""The ops whose kernel gives the exact value rounded once (the activations)."""


def alone_atol(op: str, atol: float | None) -> float | None:
    """The absolute tolerance at which a node of ``op`` alone is compared: ``atol`` (None: the dtype's
    default), but 0 for a correctly rounded op given none. A result near 0 is then all the value there
    is (Sigmoid's tail: ORT's 0 where the exact value is 2e-9, which a Log downstream makes -inf against
    -20), and the relative tolerance alone judges it; results a rounding apart stay within it."""
    return 0.0 if atol is None and op in CORRECTLY_ROUNDED else atol


MEMORY_LIMIT = 1 << 30
"""Most bytes of float64 the yardstick holds in this process: the widened inputs and the value (each
side's output is widened in turn besides). A node over it has no yardstick (``Measured.error`` says
why) and the votes decide: the values of a model's node are bounded only by the sides' output limit,
and widening float16 takes four times its bytes."""


FLOATS = ("float16", "bfloat16", "float32", "float64")
"""The output types a yardstick judges (narrower ones are copies in every op here)."""


def is_float(dtype: Any) -> bool:
    return str(np.dtype(dtype)) in FLOATS


def epsilon(dtype: Any) -> float:
    """The machine epsilon of a float type of :data:`FLOATS`."""
    import ml_dtypes

    return float(ml_dtypes.finfo(np.dtype(dtype)).eps)


def _mag(x: np.ndarray | None) -> float:
    """The largest finite |x| (0 for none)."""
    if x is None or x.size == 0 or (x.dtype.kind not in "fiu" and not is_float(x.dtype)):
        return 0.0
    f = np.abs(np.asarray(x, np.float64))
    f = f[np.isfinite(f)]
    return float(f.max()) if f.size else 0.0


@dataclass(frozen=True)
class Terms:
    """What bounds the rounding of one output element: ``count`` terms summed, ``rank`` coordinates
    computed per term over an ``extent`` (the largest coordinate, in pixels), and ``scale`` (the sum of
    the terms' magnitudes)."""

    count: float | np.ndarray
    rank: int
    extent: float | np.ndarray
    scale: float | np.ndarray
    """``count``, ``extent`` and ``scale`` may be arrays that broadcast over the output (RoiAlign's: one
    per roi)."""


def _interpolating(x: np.ndarray, out_shape: Sequence[int], mode: str, antialias: int) -> Terms | None:
    taps = {"linear": 2, "cubic": 4}.get(mode)
    if taps is None or len(out_shape) != x.ndim:
        return None
    count, rank = 1.0, 0
    for n, m in zip(x.shape, out_shape, strict=True):
        if n == m:
            continue
        rank += 1
        count *= math.ceil(taps * n / m) + 1 if antialias and 0 < m < n else taps
    weights = 1.5**rank if taps == 4 else 1.0  # Keys' cubic weights sum to at most 1.5 in magnitude
    extent = float(max([*x.shape, *out_shape], default=1))
    return Terms(count, rank, extent, _mag(x) * weights)


def _resize(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    return _interpolating(inputs[0], out_shape, str(attrs.get("mode")), int(attrs.get("antialias") or 0))


def _grid_sample(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    x, grid = inputs[0], inputs[1]
    taps = {"linear": 2, "cubic": 4}.get(str(attrs.get("mode")))
    if taps is None or grid is None:
        return None
    rank = x.ndim - 2
    # a location far outside reads padding however its coordinate rounds: the extent stops at 2 L
    extent = float(max(x.shape[2:], default=1)) * min(max(1.0, _mag(grid)), 2.0)
    return Terms(float(taps**rank), rank, extent, _mag(x) * (1.5**rank if taps == 4 else 1.0))


def _affine_grid(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    rank = len(out_shape) - 2
    return Terms(rank + 1.0, rank, 1.0, _mag(inputs[0]) * (rank + 1))


def _col2im(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    block = inputs[2]
    count = float(np.prod(np.asarray(block, np.float64))) if block is not None else math.inf
    return Terms(count, 0, 0.0, count * _mag(inputs[0]))


def _roi_samples(r: np.ndarray, attrs: Mapping[str, Any]) -> np.ndarray:
    """The sample points per bin of each roi (``r`` scaled by spatial_scale)."""
    ratio = int(attrs.get("sampling_ratio") or 0)
    if ratio > 0:
        return np.full(len(r), float(ratio * ratio))
    h = np.ceil(np.abs(r[:, 3] - r[:, 1]) / max(int(attrs.get("output_height", 1)), 1))
    w = np.ceil(np.abs(r[:, 2] - r[:, 0]) / max(int(attrs.get("output_width", 1)), 1))
    return np.maximum(h, 1.0) * np.maximum(w, 1.0)


def _roi_align(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    """Per roi (its output rows): a roi's own size and coordinates bound its rounding, so a roi far off
    the map (many pixels of rounding, and only zeros read) does not loosen the bound of the others."""
    x, rois = inputs[0], inputs[1]
    r = np.asarray(rois, np.float64).reshape(-1, 4) * float(attrs.get("spatial_scale", 1.0))
    r[~np.isfinite(r)] = 0.0  # such a roi's output is NaN (ours) whatever rounds: the others' bound holds
    samples = np.ones(len(r)) if attrs.get("mode") == "max" else _roi_samples(r, attrs)
    extent = np.maximum(float(max(x.shape[2:], default=1)), np.max(np.abs(r), axis=1, initial=0.0))
    rows = (-1, *[1] * (len(out_shape) - 1))
    scale = _roi_magnitudes(x, r, inputs[2])
    return Terms((4.0 * samples).reshape(rows), 2, (extent + 1.0).reshape(rows), scale.reshape(rows))


WINDOW_LIMIT = 1 << 24
"""Most elements of X read in all for RoiAlign's magnitudes per roi (else the largest of X serves)."""


def _roi_magnitudes(x: np.ndarray, r: np.ndarray, batch: np.ndarray | None) -> np.ndarray:
    """The largest finite |X| each roi (``r`` scaled) can read: its image's pixels within two of its box,
    which hold every corner its sample points weigh, however their coordinates round by a pixel. Where
    that would read more than :data:`WINDOW_LIMIT` elements in all: the largest |X| for every roi."""
    whole = np.full(len(r), _mag(x))
    idx = None if batch is None else np.asarray(batch).reshape(-1)
    if x.ndim != 4 or idx is None or len(idx) != len(r) or idx.dtype.kind not in "iu" or len(r) > 1 << 16:
        return whole
    if len(idx) and (idx.min() < 0 or idx.max() >= x.shape[0]):
        return whole
    box = []
    for a, b, n in ((r[:, 1], r[:, 3], x.shape[2]), (r[:, 0], r[:, 2], x.shape[3])):
        box.append(np.clip(np.floor(np.minimum(a, b)) - 2, 0, n - 1).astype(np.int64))
        box.append(np.clip(np.ceil(np.maximum(a, b)) + 3, 1, n).astype(np.int64))
    y0, y1, x0, x1 = box
    if int(((y1 - y0) * (x1 - x0)).sum()) * x.shape[1] > WINDOW_LIMIT:
        return whole
    windows = zip(idx.tolist(), y0.tolist(), y1.tolist(), x0.tolist(), x1.tolist(), strict=True)
    return np.array([_mag(x[i, :, a:b, c:d]) for i, a, b, c, d in windows], np.float64)


def _deform_conv(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    x, w, offset, b, mask = (list(inputs) + [None] * 5)[:5]
    rank = x.ndim - 2
    per_output = float(math.prod(w.shape[1:]))  # in-channels per group x kernel taps
    scale = per_output * _mag(x) * _mag(w) * max(1.0, _mag(mask)) + _mag(b)
    length = float(max(x.shape[2:], default=1))
    extent = length + min(_mag(offset), length + 2)  # taps beyond the input read 0 however they round
    return Terms(per_output * 2**rank + 1, rank, extent, scale)


EXACT = Terms(0.0, 0, 0.0, 0.0)
"""No rounding allowed: an exact kernel's output is the spec's value."""


def exact(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    """The quantized integer family and the activations: our kernel is exact (:attr:`Yardstick.exact_kernel`),
    so a side is within its bound only where it gives our value."""
    return EXACT


def _interpolating_upsample(
    inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]
) -> Terms | None:
    return _interpolating(inputs[0], out_shape, str(attrs.get("mode")), 0)


TERMS: dict[str, Callable[[Inputs, Mapping[str, Any], Sequence[int]], Terms | None]] = {
    "Resize": _resize,
    "Upsample": _interpolating_upsample,
    "GridSample": _grid_sample,
    "AffineGrid": _affine_grid,
    "Col2Im": _col2im,
    "RoiAlign": _roi_align,
    "DeformConv": _deform_conv,
    **{op: exact for op, _, _ in QUANTIZED_REFERENCE},
    **{op: exact for op, _ in ACTIVATION_REFERENCE},
}
"""The ops whose arithmetic rounds, and their :class:`Terms` from the custom op's inputs (in its order),
decoded attributes and the output's shape; None for a configuration that does not round."""


def bound(
    op: str, inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int], dtype: Any
) -> float | np.ndarray | None:
    """How far an output of ``dtype`` computed with that type's rounding may be from the exact value:
    ``eps * S * (T + COORDINATE_OPS * r * E)`` with eps the type's machine epsilon, T terms summed of
    magnitudes adding up to S (Higham's bound for a sum, one eps per term), and r coordinates per term,
    each within COORDINATE_OPS half-ulps (COORDINATE_OPS / 2 eps E) of the largest coordinate E, moving
    an interpolation weight by that much times a difference of two pixels (at most 2 S). None where the
    op's configuration does not round (no yardstick), the output is not a float, or the bound is not
    finite. An array (RoiAlign's: one per roi) broadcasts over the output. An exact kernel's bound is 0
    on every output type."""
    terms_of = TERMS.get(op)
    if terms_of is exact:
        return 0.0
    if terms_of is None or not is_float(np.dtype(dtype)) or inputs[0] is None:
        return None
    with np.errstate(all="ignore"):
        t = terms_of(inputs, attrs, out_shape)
    if t is None:
        return None
    eps = epsilon(dtype)
    with np.errstate(all="ignore"):
        value = eps * t.scale * (t.count + COORDINATE_OPS * t.rank * t.extent)
    if not np.all(np.isfinite(value)):
        return None
    return float(value) if np.ndim(value) == 0 else np.asarray(value, np.float64)


def widened(model: ModelProto, feed: Mapping[str, np.ndarray]) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """The one-node ``model`` and its ``feed`` with the inputs of the op's type T that are float16,
    bfloat16 or float32 (graph inputs and initializers) made float64: the same numbers, so our kernel on
    them computes the formula in float64 throughout."""
    from customops.registry import lookup

    node = model.graph.node[0]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    opv = lookup(node.op_type, opset)
    tied = {
        name
        for name, spec in zip(node.input, opv.inputs if opv else (), strict=False)
        if name and "T" in spec.types
    }
    out = ModelProto()
    out.CopyFrom(model)
    new_feed = {k: (_wide(v) if k in tied else v) for k, v in feed.items()}
    for vi in out.graph.input:
        if vi.name in tied and vi.name in new_feed and new_feed[vi.name].dtype == np.float64:
            vi.type.tensor_type.elem_type = dtypes.code_of(np.dtype(np.float64))
    from customops.eval.cases.testcase import tensor_proto, tensor_value

    for i, t in enumerate(out.graph.initializer):
        if t.name in tied:
            value = _wide(tensor_value(t, "initializer"))
            if value.dtype == np.float64:
                out.graph.initializer[i].CopyFrom(tensor_proto(value, t.name))
    del out.graph.output[:]
    out.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in node.output if o)
    return out, new_feed


def _wide(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v)
    if str(v.dtype) in ("float16", "float32", "bfloat16"):
        return v.astype(np.float64)
    return v


@dataclass
class Measured:
    """The sides of one node against the yardstick: ``value`` (float64), ``bound`` (for the output's
    type), each side's largest distance from it and whether that is within the bound (None: no output;
    for the reference also when it is no vote for the op)."""

    op: str
    value: np.ndarray | None
    bound: float | np.ndarray | None
    distance: dict[str, float | None] = field(default_factory=dict)
    within: dict[str, bool | None] = field(default_factory=dict)
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.value is not None and self.bound is not None and self.error is None

    def sides_within(self) -> Within | None:
        """Whether each kernel is within its bound (customops.eval.judging.attribution.odd_one_out's
        ``within``); None where the yardstick is not usable or a kernel gave no output."""
        b, c = self.within.get("builtin"), self.within.get("custom")
        if not self.usable or b is None or c is None:
            return None
        return Within(b, c, self.within.get("reference"))

    def to_json(self) -> dict[str, Any]:
        row = YARDSTICKS.get(self.op)
        return {
            "source": row.source if row else None,
            "bound": None if self.bound is None else float(np.max(self.bound, initial=0.0)),
            "distance": self.distance,
            "within": self.within,
            "reference_vote": bool(row and row.reference_vote),
            "error": self.error,
        }


def measure(
    op: str,
    value: np.ndarray | None,
    bound_: float | np.ndarray | None,
    outputs: Mapping[str, np.ndarray | None],
) -> Measured:
    """Each side of ``outputs`` (builtin, custom, reference) against the yardstick ``value``, rounded
    first to the side's output type (its last rounding is allowed; an overflow to inf matches); a bound
    per element where :func:`bound` gives an array."""
    m = Measured(op, value, bound_)
    if value is None or bound_ is None:
        return m
    row = YARDSTICKS.get(op)
    vote, any_type = (row.reference_vote, row.exact_kernel) if row else (False, False)
    for side, out in outputs.items():
        if out is None or (side == "reference" and not vote):
            m.distance[side], m.within[side] = None, None
            continue
        out = np.asarray(out)
        if out.shape != value.shape or not (is_float(out.dtype) or any_type):
            m.distance[side], m.within[side] = None, False
            continue
        if any_type:
            m.distance[side], m.within[side] = exact_distance(out, value)
            continue
        rounded = value.astype(out.dtype).astype(np.float64)
        wide = out.astype(np.float64)
        metrics = compare_arrays(wide, rounded, 0.0, float(np.max(bound_, initial=0.0)))
        m.distance[side], m.within[side] = (
            metrics.max_abs,
            metrics.passed and _each_within(wide, rounded, bound_),
        )
    return m


def exact_distance(out: np.ndarray, value: np.ndarray) -> tuple[float, bool]:
    """A side's output against an exact kernel's ``value``: the largest |difference| (0 where the two
    are one value: NaN at the same place, or the same infinity) and whether every element is ``value``'s
    (in its element type: a bool, integer, float or float8 output of the same type)."""
    if out.dtype != value.dtype:
        return math.inf, False
    a, b = out.astype(np.float64), value.astype(np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if bool(same.all()):
        return 0.0, True
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.abs(a - b)[~same].max()), False


def _each_within(a: np.ndarray, b: np.ndarray, limit: float | np.ndarray) -> bool:
    """Whether every finite difference of ``a`` and ``b`` is within its ``limit`` (NaN and inf places are
    compare_arrays' to match)."""
    if np.ndim(limit) == 0:
        return True
    with np.errstate(invalid="ignore"):
        return not bool(np.any(np.abs(a - b) > limit))


def custom_call(
    rewritten: ModelProto, feed: Mapping[str, np.ndarray]
) -> tuple[str, list[np.ndarray | None], dict[str, Any]] | None:
    """The call of our kernel in the one-node ``rewritten``: its op, inputs (from ``feed``, the rewrite's
    initializers and through its Casts: a bridged type's value has the same shape and numbers; None
    where unknown) and attributes decoded; None for a model with no node of ours."""
    from customops.bridge import attrs as codec
    from customops.eval.cases.testcase import tensor_value
    from customops.registry import CUSTOM_OPS, DOMAIN

    values = {**feed, **{t.name: tensor_value(t, "initializer") for t in rewritten.graph.initializer}}
    for n in rewritten.graph.node:
        if n.domain == DOMAIN and n.op_type in CUSTOM_OPS:
            kinds = dict(CUSTOM_OPS[n.op_type].attributes)
            attrs = {
                a.name: codec.decode(kinds[a.name], a.s.decode()) for a in n.attribute if a.name in kinds
            }
            return n.op_type, [values.get(i) if i else None for i in n.input], attrs
        if n.op_type == "Cast" and n.input[0] in values:
            values[n.output[0]] = values[n.input[0]]
    return None


def judge(
    model: ModelProto, feed: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray | None], run64: Run64
) -> Measured | None:
    """The sides' ``outputs`` of the one-node ``model`` (standard domain) on ``feed`` against its
    yardstick: our kernel on the inputs widened to float64 (:func:`widened`, run by ``run64``; float64
    inputs: our output itself). None where the configuration does not round, the output is not a float,
    or ours gave no output; a :class:`Measured` with ``error`` when the float64 run fails."""
    from customops.model.rewriter import rewrite_model

    ours = outputs.get("custom")
    if ours is None or len(model.graph.node) != 1:  # the fuzzer's narrow types come between Casts
        return None
    rewritten = rewrite_model(model)
    call = None if rewritten.skipped else custom_call(rewritten.model, feed)
    limit = None if call is None else bound(*call, ours.shape, ours.dtype)
    if call is None or limit is None:
        return None
    op = call[0]
    need = 8 * (ours.size + sum(np.asarray(v).size for v in feed.values() if is_float(np.asarray(v).dtype)))
    if need > MEMORY_LIMIT:
        return Measured(op, None, limit, error=f"the yardstick would hold {need} bytes, over {MEMORY_LIMIT}")
    if ours.dtype == np.float64 or TERMS.get(op) is exact:  # the value itself
        return measure(op, ours, limit, outputs)
    value, error = run64(*widened(model, feed))
    if value is None or value.dtype != np.float64 or value.shape != ours.shape:
        got = "no output" if value is None else f"{value.dtype} of shape {value.shape}"
        return Measured(op, None, limit, error=error or f"our kernel on float64 inputs gave {got}")
    return measure(op, value, limit, outputs)
