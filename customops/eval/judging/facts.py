"""The facts of a case that the rules of customops.eval.judging.deviations read, computed in one place for both
tools from an :class:`Observed`: the fuzzer builds one from its shrunk representative
(customops.fuzz.triage.observed), compare from the node where a difference starts, run alone
(customops.comparison.node_labels). The facts are a JSON object (a fuzz group keeps them in
summary.json, which the merge reads back and labels again).

One rule for each fact, whichever tool asks:

- ``rank``, ``zero_axes``: of X; ``dtype``: T, X's element type; ``attrs``: the node's attributes.
- ``same_shape``, ``kept_axes``: the spec side's output shape against X's (kept axes only when the ranks
  agree: Col2Im's output has another rank).
- ``builtin_returns_input``: ORT's output is X, compared in the output's element type with NaN equal to
  NaN (an X holding NaN that ORT returns as it is counts, and so does an X ORT returns in another type
  when the values survive the cast); False when the two cannot be compared.
- ``<input>_elem``, ``<input>_const`` for the index inputs (:data:`INDEX_INPUTS`) given; ``spatial``:
  Col2Im's number of spatial axes.
- the facts of some operators' own rules (:data:`OP_FACTS`).
- ``resized_to_one`` (an axis brought to length 1) only when asked (``reference=True``): the rules of the
  reference's own deviations read it, and the fuzzer keeps those differences as notes, which are not
  labelled, so a fuzz group's facts never hold it.

With no X (compare's node whose first input has no value here) the facts are ``dtype`` ("float") and
``attrs`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from customops.registry import ACTIVATION_OPS

INDEX_INPUTS = ("roi", "axes", "shape", "image_shape")
"""Inputs whose element type and constness the rules read (by the registry's input names)."""

GRID_FAR = 1e6
"""|normalized coordinate| from which a GridSample grid value counts as far out (ORT 1.32 is wrong from
about 1e8 on with border padding, and for NaN, ±Inf and |u| ≳ 1e19 with zeros: G-GRID-FAR-OR-NAN)."""


@dataclass(frozen=True)
class Given:
    """One input given to the node: its value, element type and whether it is a constant of the model."""

    value: Any
    elem: str
    const: bool


@dataclass
class Observed:
    """A case as the facts see it, built by either tool: the op type, X (None when unknown), T, the inputs
    given by the registry's names, the attributes, the spec side's output shape (None when it has none)
    and ORT's output (None when ORT failed)."""

    op: str
    x: np.ndarray | None
    dtype: str
    attrs: dict[str, Any]
    inputs: dict[str, Given] = field(default_factory=dict)
    out_shape: tuple[int, ...] | None = None
    builtin: Any = None


def grid_far(grid: Any) -> bool:
    """Whether a GridSample grid holds NaN, ±Inf or a coordinate beyond :data:`GRID_FAR`."""
    g = _floats(grid)
    far = g.dtype.type(min(GRID_FAR, float(np.finfo(g.dtype).max)))
    return bool(g.size) and not bool((np.abs(g) <= far).all())


def _floats(value: Any) -> np.ndarray:
    """``value`` as a numpy floating array: itself when it is one (no copy of a large tensor), else in
    float64 (integers, ml_dtypes' types)."""
    array = np.asarray(value)
    return array if array.dtype.kind == "f" else array.astype(np.float64)


def facts(seen: Observed, reference: bool = False) -> dict[str, Any]:
    """What the rules read of a case (the module docstring says each fact's rule); ``reference``: also the
    facts of the reference's own rules."""
    x = seen.x
    if x is None:
        return {"dtype": seen.dtype, "attrs": dict(seen.attrs)}
    out: dict[str, Any] = {"rank": int(x.ndim), "dtype": seen.dtype, "attrs": dict(seen.attrs)}
    out["zero_axes"] = sum(1 for d in x.shape if d == 0)
    shape = seen.out_shape
    if shape is not None:
        out["same_shape"] = tuple(shape) == tuple(x.shape)
        if len(shape) == x.ndim:  # Col2Im's output has another rank than its input
            pairs = list(zip(shape, x.shape, strict=True))
            out["kept_axes"] = sum(1 for a, b in pairs if a == b)
            if reference:
                out["resized_to_one"] = any(a == 1 and b != 1 for a, b in pairs)
    if seen.builtin is not None:
        out["builtin_returns_input"] = returns_input(np.asarray(seen.builtin), x)
    for name in INDEX_INPUTS:
        given = seen.inputs.get(name)
        if given is not None:
            out[f"{name}_elem"] = given.elem
            out[f"{name}_const"] = given.const
            if name == "image_shape":
                out["spatial"] = int(np.asarray(given.value).size)
    values = {name: given.value for name, given in seen.inputs.items()}
    out.update(op_facts(seen.op, values, seen.attrs, seen.builtin))
    return out


def returns_input(value: np.ndarray, x: np.ndarray) -> bool:
    """Whether ``value`` is ``x``: the same shape and the same elements in ``value``'s element type, NaN
    equal to NaN; False when ``x`` does not cast to it."""
    try:
        return value.shape == x.shape and bool(
            np.array_equal(value, x.astype(value.dtype), equal_nan=value.dtype.kind == "f")
        )
    except (TypeError, ValueError):
        return False


def op_facts(op: str, inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """The facts of one operator's rules (:data:`OP_FACTS`) from its inputs by registry name, its
    attributes and ORT's output (None when ORT failed); {} for the other operators."""
    reader = OP_FACTS.get(op)
    return reader(inputs, attrs, builtin) if reader is not None else {}


def _affine_grid_facts(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """AffineGrid: the grid's sizes (size without N and C)."""
    if inputs.get("size") is None:
        return {}
    return {"grid_sizes": [int(v) for v in np.asarray(inputs["size"]).tolist()[2:]]}


def _grid_sample_facts(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """GridSample: whether the grid holds NaN, ±Inf or far-out coordinates (:func:`grid_far`)."""
    if inputs.get("grid") is None:
        return {}
    return {"grid_far": grid_far(inputs["grid"])}


def _max_roi_pool_facts(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """MaxRoiPool: whether X holds a NaN, whether ORT's output holds float32's lowest value, whether
    float32 bin edges (ORT's arithmetic) differ from the exact ones."""
    out: dict[str, Any] = {}
    if inputs.get("X") is not None:
        out["x_has_nan"] = bool(np.isnan(_floats(inputs["X"])).any())
    if builtin is not None:
        out["builtin_has_lowest"] = bool((np.asarray(builtin) == np.finfo(np.float32).min).any())
    rois, pooled = inputs.get("rois"), attrs.get("pooled_shape")
    scale = float(attrs.get("spatial_scale", 1.0))
    if rois is not None:
        out["float_corners_differ"] = _float_corners_differ(np.asarray(rois), scale)
    if rois is not None and pooled is not None and len(pooled) == 2:
        out["float_bin_edges_differ"] = _float_bins_differ(np.asarray(rois), scale, list(pooled))
    return out


GEMM_LIMIT = 1 << 27
"""Most multiply-adds of a node's integer GEMM the facts of ORT's arithmetic (:func:`_ort_gemm_facts`)
are computed for (a few seconds of the numpy models): past it they are left out, as the labels only name
a difference."""

QLINEAR_MATMUL = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")


def _matmul_integer_facts(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """MatMulInteger: whether ORT's output is its u8 x s8 kernel's without VNNI, where saturating pairs
    make it differ from the exact result (customops.eval.judging.ort_gemm, Q-U8S8-PAIR-SATURATION)."""
    from customops.eval.judging.ort_gemm import explained_by_u8s8_saturation

    a, b = inputs.get("A"), inputs.get("B")
    if builtin is None or a is None or b is None or _gemm_work(a, b) > GEMM_LIMIT:
        return {}
    zeros = (inputs.get("a_zero_point"), inputs.get("b_zero_point"))
    return {"u8s8_saturated": explained_by_u8s8_saturation(a, b, *zeros, builtin).explained}


def _gemm_work(a: Any, b: Any) -> int:
    """Multiply-adds of a matrix product of ``a`` and ``b``'s shapes (their batch axes broadcast)."""
    a_shape, b_shape = np.shape(a), np.shape(b)
    if not a_shape or not b_shape:
        return 0
    rows, columns = (a_shape[-2] if len(a_shape) > 1 else 1), (b_shape[-1] if len(b_shape) > 1 else 1)
    batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) if min(len(a_shape), len(b_shape)) > 1 else ()
    return int(np.prod(batch, dtype=np.int64)) * rows * a_shape[-1] * columns


def _qlinear_matmul_facts(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """QLinearMatMul: :func:`_ort_gemm_facts` of ORT's QLinearMatMul (customops.eval.judging.ort_gemm)."""
    from customops.eval.judging import ort_gemm

    values = [inputs.get(name) for name in QLINEAR_MATMUL]
    if builtin is None or any(v is None for v in values) or _gemm_work(values[0], values[3]) > GEMM_LIMIT:
        return {}
    a, a_zero, b, b_zero = values[0], values[2], values[3], values[5]

    def ort(saturating: bool) -> np.ndarray:
        return ort_gemm.qlinear_matmul(*values, saturating=saturating)

    return _ort_gemm_facts(ort, lambda: ort_gemm.exact_matmul_integer(a, b, a_zero, b_zero), builtin)


def _qlinear_conv_facts(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
    """QLinearConv: :func:`_ort_gemm_facts` of ORT's QLinearConv (customops.eval.judging.ort_gemm)."""
    from customops.eval.judging import ort_gemm

    x, w = inputs.get("x"), inputs.get("w")
    if builtin is None or x is None or w is None or x.ndim < 3 or w.ndim != x.ndim:
        return {}
    quant = [ort_gemm.QuantParams(inputs.get(f"{n}_scale"), inputs.get(f"{n}_zero_point")) for n in "xwy"]
    geometry = ort_gemm.ConvGeometry.of_attributes(attrs, tuple(x.shape[2:]), tuple(w.shape[2:]))
    work = x.size // max(x.shape[1], 1) * w.size  # output pixels x M x K, at stride 1
    if any(q.scale is None or q.zero_point is None for q in quant) or work > GEMM_LIMIT:
        return {}

    def ort(saturating: bool) -> np.ndarray:
        bias = inputs.get("B")
        return ort_gemm.qlinear_conv(
            x, quant[0], w, quant[1], quant[2], bias, geometry, saturating=saturating
        )

    def sums() -> np.ndarray:
        return ort_gemm.conv_sums(x, quant[0], w, quant[1], geometry, saturating=False)[0]

    return _ort_gemm_facts(ort, sums, builtin)


def _ort_gemm_facts(
    ort: Callable[[bool], np.ndarray], sums: Callable[[], np.ndarray], builtin: Any
) -> dict[str, Any]:
    """The facts of a QLinear node from ORT's arithmetic as numpy (``ort``: with saturating pairs or
    not) and its exact integer sums: ``ort_arithmetic``, ORT's output is its arithmetic on a CPU whose
    GEMM is exact (a float32 multiplier, sums wrapped in int32, MLAS's rounding); ``u8s8_saturated``, it
    is the saturating u8 x s8 kernel's and that differs from the exact GEMM's (Q-U8S8-PAIR-SATURATION);
    ``sums_beyond_int32``, an exact sum leaves int32. None of them where ORT's kernels refuse the node
    (the models raise ValueError)."""
    try:
        exact_path, paired, exact_sums = ort(False), ort(True), sums()
    except ValueError:
        return {}
    value = np.asarray(builtin)

    def same(model: np.ndarray) -> bool:
        return model.shape == value.shape and bool(np.array_equal(model, value))

    return {
        "ort_arithmetic": same(exact_path),
        "u8s8_saturated": same(paired) and not np.array_equal(paired, exact_path),
        "sums_beyond_int32": bool((np.abs(exact_sums) > 2**31 - 1).any()),
    }


def _dynamic_quantize_linear_facts(
    inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any
) -> dict[str, Any]:
    """DynamicQuantizeLinear: whether x is all zeros or empty (docs/semantics.md: its zero range)."""
    x = inputs.get("x")
    return {} if x is None else {"x_all_zero": not bool(np.any(np.asarray(x)))}


ACTIVATION_LIMIT = 1 << 24
"""Most elements of an activation's X the facts of its values are computed for (our kernel runs once
on X): past it they are left out, as the labels only name a difference."""


def _activation_facts(op: str) -> Callable[[dict[str, Any], dict[str, Any], Any], dict[str, Any]]:
    """The facts of an activation's rules, from X, the node's attributes and ORT's output against our
    correctly rounded one (customops.kernels.activations; docs/ort-deviations.md, "Activations"):

    - ``builtin_zeroed``: ORT's output is exactly 0 where the exact value is not (at least the smallest
      subnormal of the output's type: ours rounds it to a nonzero value);
    - ``builtin_nan_at_infinity``: ORT's output is NaN where X is +-inf and ours is not (the limit);
    - ``builtin_relative_only``: ORT's output differs from ours beyond the type's relative tolerance,
      and every such element lies within the type's absolute tolerance of ours (a small result, off in
      its own digits).
    """

    def read(inputs: dict[str, Any], attrs: dict[str, Any], builtin: Any) -> dict[str, Any]:
        x = next(iter(inputs.values()), None)
        if x is None or builtin is None or np.asarray(x).size > ACTIVATION_LIMIT:
            return {}
        ours, b = _activation_values(op, np.asarray(x), attrs), np.asarray(builtin)
        if ours is None or b.shape != ours.shape:
            return {}
        return _activation_differences(np.asarray(x), ours, b)

    return read


def _activation_values(op: str, x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray | None:
    """Our kernel's output of activation ``op`` on ``x`` with the node's ``attrs``, None when it refuses."""
    import importlib

    from customops.errors import CustomOpsError
    from customops.registry import CUSTOM_OPS

    module, _, function = CUSTOM_OPS[op].kernel.partition(":")
    kernel = getattr(importlib.import_module(module), function)
    try:
        return kernel(x, **attrs)
    except (CustomOpsError, TypeError):
        return None


def _activation_differences(x: np.ndarray, ours: np.ndarray, builtin: np.ndarray) -> dict[str, Any]:
    from customops.eval.judging.metrics import DEFAULT_TOLERANCES

    b, c = builtin.astype(np.float64), ours.astype(np.float64)
    rtol, atol = DEFAULT_TOLERANCES.get(ours.dtype.name, (0.0, 0.0))
    with np.errstate(invalid="ignore"):
        off = np.abs(b - c)
        beyond = np.isfinite(off) & (off > rtol * np.abs(c))
        return {
            "builtin_zeroed": bool(((b == 0) & (c != 0) & np.isfinite(c)).any()),
            "builtin_nan_at_infinity": bool(
                (np.isnan(b) & np.isinf(x.astype(np.float64)) & ~np.isnan(c)).any()
            ),
            "builtin_relative_only": bool(beyond.any() and (off[beyond] <= atol).all()),
        }


OP_FACTS: dict[str, Callable[[dict[str, Any], dict[str, Any], Any], dict[str, Any]]] = {
    "GridSample": _grid_sample_facts,
    "AffineGrid": _affine_grid_facts,
    "MaxRoiPool": _max_roi_pool_facts,
    "MatMulInteger": _matmul_integer_facts,
    "QLinearMatMul": _qlinear_matmul_facts,
    "QLinearConv": _qlinear_conv_facts,
    "DynamicQuantizeLinear": _dynamic_quantize_linear_facts,
    **{op.name: _activation_facts(op.name) for op in ACTIVATION_OPS},
}
"""Facts some operators' rules read beyond :func:`facts`' common ones, by op type."""


def _float_corners_differ(rois: np.ndarray, scale: float) -> bool:
    """Whether a roi corner ORT rounds from a float32 product (``round(x * spatial_scale)`` in float32)
    differs from the corner rounded from the exact product (docs/semantics.md, MaxRoiPool: roi corners
    in pixels of X): x = 5, spatial_scale 0.7 gives 3.5 in float32, 3.49999994... exactly."""
    from customops.kernels.spatial.max_roi_pool import round_half_away

    if rois.ndim != 2 or rois.shape[1] != 5 or not np.isfinite(rois).all() or not np.isfinite(scale):
        return False
    values = rois[:, 1:].astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        single = values * np.float32(scale)  # float32 times float32, rounded to float32
        exact = values.astype(np.float64) * float(np.float32(scale))  # exact in float64
    keep = np.isfinite(single)
    return bool((round_half_away(single[keep].astype(np.float64)) != round_half_away(exact[keep])).any())


BIN_CHECKS = 1 << 20
"""Bin edges :func:`_float_bins_differ` looks at, at most, over all rois (our MaxRoiPool kernel refuses
more bins than this in one output): past it the fact stays false, as the labels only name a difference."""

ROI_CHECKS = 4096
"""Rois :func:`_float_bins_differ` looks at, at most (the first ones): each costs a few numpy calls."""

SPAN_LIMIT = 1 << 31
"""Roi lengths in pixels beyond which ORT's int arithmetic overflows: no bin edge of such a roi is read."""


def _float_bins_differ(rois: np.ndarray, scale: float, pooled: list[int]) -> bool:
    """Whether a bin edge ORT computes in float32 (``floor(p * float(L) / P)``, ``ceil``) differs from
    the exact one for one of ``rois``, among the first :data:`BIN_CHECKS` edges of the first
    :data:`ROI_CHECKS` rois."""
    if rois.ndim != 2 or rois.shape[1] != 5 or min(pooled) < 1 or not np.isfinite(rois).all():
        return False
    f32 = np.float32
    left = BIN_CHECKS
    for roi in rois[:ROI_CHECKS].astype(np.float32).tolist():
        with np.errstate(over="ignore"):
            products = [float(f32(v) * f32(scale)) for v in roi[1:]]  # ORT: float32, then C's round()
        if not all(np.isfinite(products)):
            continue
        x1, y1, x2, y2 = (int(np.copysign(np.floor(abs(v) + 0.5), v)) for v in products)
        for span, bins in ((max(y2 - y1 + 1, 1), pooled[0]), (max(x2 - x1 + 1, 1), pooled[1])):
            count = min(bins, left)
            if count < 1:
                return False
            left -= count
            if span < SPAN_LIMIT and bins < SPAN_LIMIT and _edges_differ(span, bins, count):
                return True
    return False


def _edges_differ(span: int, bins: int, count: int) -> bool:
    """Whether one of the first ``count`` bins of ``bins`` over ``span`` pixels has a float32 edge other
    than the exact one (start ``p * span // bins``, end its ceiling for ``p + 1``)."""
    size = np.float32(span) / np.float32(bins)
    p = np.arange(count, dtype=np.int64)
    start = np.floor(p.astype(np.float32) * size)  # float32 times float32, as ORT
    end = np.ceil((p + 1).astype(np.float32) * size)
    return bool((start != (p * span) // bins).any() or (end != -((-(p + 1) * span) // bins)).any())
