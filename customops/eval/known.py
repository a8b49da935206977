"""Labels of differences that match a documented deviation: an id of docs/ort-deviations.md, a row of
docs/semantics.md ("semantics: <row>") where the difference is a recorded decision, or an ``F-`` id of a
deviation the fuzzer found (:data:`FOUND`; docs/findings.md lists them). One matcher for both tools: the
fuzzer labels its groups (customops.fuzz.summary.Labelled), compare the nodes where a difference
starts (a :class:`Subject` built from the node alone); both have a signature and facts.

The labels only name what a group is; they play no part in generating cases or in the signatures. Each
rule looks at the signature and at facts of the shrunk representative (:func:`facts`, and the features
the representative needs, ``facts["needs"]``: a group whose first case had two causes of its finding
has a signature that needs neither, and a representative that shows one of them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence


class Described(Protocol):
    """What a rule reads of a signature: the op and version, the odd side, the kind of difference, the
    normalized error (or broken rule) and the features the difference needs."""

    op: str
    version: int
    side: str
    kind: str
    detail: str
    features: Sequence[str]


class Labelled(Protocol):
    """Anything the rules label: a signature and the facts of its case (:func:`facts`)."""

    @property
    def signature(self) -> Described: ...

    @property
    def facts(self) -> dict[str, Any] | None: ...

    @property
    def ranks(self) -> list[int] | None: ...


@dataclass
class Signature:
    """A signature built outside the fuzzer (compare's node)."""

    op: str
    version: int
    side: str
    kind: str
    detail: str = ""
    features: tuple[str, ...] = ()


@dataclass
class Subject:
    """A difference to label that is not a fuzz group: compare's node where a difference starts."""

    signature: Signature
    facts: dict[str, Any] | None = None
    ranks: list[int] | None = None
    """The ranks of a fuzz group's members; a single case has its rank in ``facts``."""


FOUND: dict[str, str] = {
    "F-EXCLUDE-OUTSIDE-NEAREST": "Resize 11-19: exclude_outside=1 is refused at load unless the mode is cubic, "
    "or linear with antialias (the spec sets no such condition)",
    "F-SIZES-ZERO": "Resize 11-19: a size of 0 (an empty output axis) fails: 'Scale value should be greater than 0'",
    "F-ROI-TYPE": "Resize 11-19: with tf_crop_and_resize a roi of type float16 or double fails: 'Tensor type "
    "mismatch' (the spec allows float16, float and double)",
    "F-POLICY-NEGATIVE-AXES": "Resize 18-19: keep_aspect_ratio_policy with negative axes gives a wrong output shape "
    "(X 1x1, sizes [2], axes [-1], not_larger: 1x1 instead of 1x2; with axes [1] it is right)",
    "F-POLICY-NEGATIVE-SIZE": "Resize 18-19: a negative size is accepted under keep_aspect_ratio_policy when "
    "not_smaller takes another axis's larger ratio (X 2x2, sizes [-3, 4]: 4x4, as onnx.reference), or when "
    "the axes are negative (X 1x1, sizes [-3], axes [-2], either policy: 1x1); otherwise it fails ('Scale "
    "value should be greater than 0')",
    "F-AA-INT32-NARROWING": "Resize 18-19: antialias on int32 near the type's limits fails: 'narrowing_error'",
    "F-PAD-WRAP-BEFORE-19": "Pad 2-18: mode 'wrap' (added in Pad-19) is accepted",
    "F-COL2IM-ZERO-IMAGE": "Col2Im-18: an image_shape value of 0 fails ('All image_shape values must be positive') "
    "although the padded image holds the block",
    "F-COL2IM-NEGATIVE-PADS": "Col2Im-18: negative pads are accepted",
    "F-UNUSED-ATTRIBUTE-UNCHECKED": "Resize 11-19: an invalid nearest_mode is accepted when the mode is linear or "
    "cubic, which do not use it",
    "F-DEFORMCONV-KERNEL-DOES-NOT-FIT": "DeformConv 19/22: a kernel larger than the padded input is accepted "
    "when the offset has the rows a truncating division gives (0 rows with stride 1, 1 row with stride > 1)",
    "F-ROIALIGN-COORD-UNCHECKED": "RoiAlign-16: an invalid coordinate_transformation_mode is accepted (and "
    "read as output_half_pixel)",
}
"""Deviations of ONNX Runtime found by this fuzzer (not in docs/ort-deviations.md), by id."""

OURS: dict[str, str] = {
    "K-CUBIC-COEFF-NONFINITE": "our Resize kernel rejects a non-finite cubic_coeff_a whatever the mode; "
    "nearest and linear do not use it (ORT and the reference run such nodes)",
}
"""Disagreements where our kernel leaves the spec without a recorded decision (reported, not fixed here)."""

INDEX_INPUTS = ("roi", "axes", "shape", "image_shape")
"""Inputs whose element type and constness the rules read (by the registry's input names)."""

GRID_FAR = 1e6
"""|normalized coordinate| from which a GridSample grid value counts as far out (ORT 1.32 is wrong from
about 1e8 on with border padding, and for NaN, ±Inf and |u| ≳ 1e19 with zeros: G-GRID-FAR-OR-NAN)."""


def grid_far(grid: Any) -> bool:
    """Whether a GridSample grid holds NaN, ±Inf or a coordinate beyond :data:`GRID_FAR`."""
    g = np.asarray(grid, dtype=np.float64)
    return bool(g.size) and not bool((np.abs(g) <= GRID_FAR).all())


_INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def facts(ev: Any) -> dict[str, Any]:
    """What the rules need to know about a representative (an Evaluation): rank, T, attributes, whether
    the output keeps the input shape, whether ORT's output is its input, index input types, Col2Im's
    number of spatial axes."""
    case = ev.case
    x = case.main
    out: dict[str, Any] = {"rank": int(x.ndim), "dtype": case.dtype, "attrs": dict(case.attrs)}
    out["zero_axes"] = sum(1 for d in x.shape if d == 0)
    shape = ev.verdict.out_shape
    if shape is not None:
        out["same_shape"] = tuple(shape) == tuple(x.shape)
        if len(shape) == x.ndim:  # Col2Im's output has another rank than its input
            out["kept_axes"] = sum(1 for a, b in zip(shape, x.shape, strict=True) if a == b)
    b = ev.outcomes.get("builtin")
    if b is not None and b.status == "ok":
        value = np.asarray(b.value)
        try:
            same = value.shape == x.shape and bool(
                np.array_equal(value, x.astype(value.dtype), equal_nan=value.dtype.kind == "f")
            )
        except (TypeError, ValueError):
            same = False
        out["builtin_returns_input"] = same
    for name in INDEX_INPUTS:
        t = case.inputs.get(name)
        if t is not None:
            out[f"{name}_elem"] = t.elem
            out[f"{name}_const"] = t.const
            if name == "image_shape":
                out["spatial"] = int(t.value.size)
    built = b.value if b is not None and b.status == "ok" else None
    values = {name: t.value for name, t in case.inputs.items() if t is not None}
    out.update(op_facts(case.op, values, case.attrs, built))
    return out


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
        out["x_has_nan"] = bool(np.isnan(np.asarray(inputs["X"], dtype=np.float64)).any())
    if builtin is not None:
        out["builtin_has_lowest"] = bool((np.asarray(builtin) == np.finfo(np.float32).min).any())
    rois, pooled = inputs.get("rois"), attrs.get("pooled_shape")
    scale = float(attrs.get("spatial_scale", 1.0))
    if rois is not None:
        out["float_corners_differ"] = _float_corners_differ(np.asarray(rois), scale)
    if rois is not None and pooled is not None and len(pooled) == 2:
        out["float_bin_edges_differ"] = _float_bins_differ(np.asarray(rois), scale, list(pooled))
    return out


OP_FACTS: dict[str, Callable[[dict[str, Any], dict[str, Any], Any], dict[str, Any]]] = {
    "GridSample": _grid_sample_facts,
    "AffineGrid": _affine_grid_facts,
    "MaxRoiPool": _max_roi_pool_facts,
}
"""Facts some operators' rules read beyond :func:`facts`' common ones, by op type."""


def _float_corners_differ(rois: np.ndarray, scale: float) -> bool:
    """Whether a roi corner ORT rounds from a float32 product (``round(x * spatial_scale)`` in float32)
    differs from the corner rounded from the exact product (docs/semantics.md, MaxRoiPool: roi corners
    in pixels of X): x = 5, spatial_scale 0.7 gives 3.5 in float32, 3.49999994... exactly."""
    from customops.kernels.max_roi_pool import round_half_away

    if rois.ndim != 2 or rois.shape[1] != 5 or not np.isfinite(rois).all() or not np.isfinite(scale):
        return False
    values = rois[:, 1:].astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        single = values * np.float32(scale)  # float32 times float32, rounded to float32
        exact = values.astype(np.float64) * float(np.float32(scale))  # exact in float64
    keep = np.isfinite(single)
    return bool((round_half_away(single[keep].astype(np.float64)) != round_half_away(exact[keep])).any())


def _float_bins_differ(rois: np.ndarray, scale: float, pooled: list[int]) -> bool:
    """Whether a bin edge ORT computes in float32 (``floor(p * float(L) / P)``, ``ceil``) differs from
    the exact one for one of ``rois``."""
    if rois.ndim != 2 or rois.shape[1] != 5 or min(pooled) < 1 or not np.isfinite(rois).all():
        return False
    f32 = np.float32
    for roi in rois.astype(np.float32).tolist():
        with np.errstate(over="ignore"):
            products = [float(f32(v) * f32(scale)) for v in roi[1:]]  # ORT: float32, then C's round()
        if not all(np.isfinite(products)):
            continue
        x1, y1, x2, y2 = (int(np.copysign(np.floor(abs(v) + 0.5), v)) for v in products)
        for span, bins in ((max(y2 - y1 + 1, 1), pooled[0]), (max(x2 - x1 + 1, 1), pooled[1])):
            size = f32(span) / f32(bins)
            for p in range(bins):
                if int(np.floor(f32(p) * size)) != (p * span) // bins:
                    return True
                if int(np.ceil(f32(p + 1) * size)) != -((-(p + 1) * span) // bins):
                    return True
    return False


def _has(entry: Labelled, text: str) -> bool:
    return text in entry.signature.detail


def _feature(entry: Labelled, prefix: str) -> bool:
    """Whether the group's signature or its shrunk representative needs a feature named ``prefix...``."""
    needs = [*entry.signature.features, *(entry.facts or {}).get("needs", ())]
    return any(f.startswith(prefix) for f in needs)


def _attr(entry: Labelled, name: str) -> Any:
    return (entry.facts or {}).get("attrs", {}).get(name)


def _fact(entry: Labelled, name: str) -> Any:
    return (entry.facts or {}).get(name)


def _output_kind(entry: Labelled) -> bool:
    return entry.signature.kind in ("value", "shape", "dtype")


def _ort_side(entry: Labelled) -> bool:
    return entry.signature.side in ("builtin", "unknown", "three-way")


def _op(e: Labelled, *ops: str) -> bool:
    return e.signature.op in ops


def _detail_is(e: Labelled, detail: str) -> bool:
    return e.signature.detail == detail


def _ranks(e: Labelled, *ranks: int) -> bool:
    """Whether a member of the group (before shrinking) has one of these ranks (6: 6 or more)."""
    return any(min(r, 6) in ranks for r in e.ranks or [_fact(e, "rank")] if r is not None)


def _linear_rejected(e: Labelled, op: str) -> bool:
    return _op(e, op) and _has(e, "'Linear' mode only supports")


def _ort_output(e: Labelled) -> bool:
    """Both ran and ORT's output is the odd one (or the reference could not tell)."""
    return _output_kind(e) and _ort_side(e)


def _coord(e: Labelled) -> Any:
    return _attr(e, "coordinate_transformation_mode")


def _gs_mode(e: Labelled) -> str:
    """A GridSample group's mode by GridSample-20's names (16's bilinear / bicubic; absent: linear)."""
    mode = _attr(e, "mode")
    return {"bilinear": "linear", "bicubic": "cubic", None: "linear"}.get(mode, mode)


def _gs_output(e: Labelled) -> bool:
    return _op(e, "GridSample") and _output_kind(e)


def _missing_type(e: Labelled) -> bool:
    return (
        e.signature.side == "builtin"
        and e.signature.kind == "rejects-valid"
        and (_has(e, "Could not find an implementation") or _has(e, "Failed to find kernel"))
    )


_RULES: list[tuple[str, Callable[[Labelled], bool]]] = [
    # docs/ort-deviations.md
    ("T-RESIZE", lambda e: _op(e, "Resize") and _missing_type(e)),
    ("T-UPSAMPLE", lambda e: _op(e, "Upsample") and _missing_type(e)),
    ("T-PAD", lambda e: _op(e, "Pad") and _missing_type(e)),
    ("T-COL2IM", lambda e: _op(e, "Col2Im") and _missing_type(e)),
    ("T-CENTERCROPPAD", lambda e: _op(e, "CenterCropPad") and _missing_type(e)),
    ("T-GRIDSAMPLE", lambda e: _op(e, "GridSample") and _missing_type(e)),
    ("R-LINEAR-RANK", lambda e: _linear_rejected(e, "Resize") and _ranks(e, 1, 6)),
    ("R-LINEAR-OUTER-AXIS", lambda e: _linear_rejected(e, "Resize") and _ranks(e, 4, 5)),
    ("U-LINEAR-RANK", lambda e: _linear_rejected(e, "Upsample")),
    ("R-CUBIC-NHWC-DOWN", lambda e: _has(e, "'Cubic' mode only supports") and _ranks(e, 4)),
    ("R-CUBIC-RANK", lambda e: _has(e, "'Cubic' mode only supports") and _ranks(e, 1, 3, 5, 6)),
    (
        "R-CUBIC-INT-RUNTIME-ERROR",
        lambda e: (
            _has(e, "Tensor type mismatch")
            and _attr(e, "mode") == "cubic"
            and _fact(e, "dtype") in _INT_TYPES
        ),
    ),
    ("R-ALIGN-CORNERS-INT-LENGTH", lambda e: _ort_output(e) and _coord(e) == "align_corners"),
    ("R-HPS-FLOAT-ROUNDING", lambda e: _ort_output(e) and _coord(e) == "half_pixel_symmetric"),
    (
        "R-TFCROP-SAME-LENGTH-NO-ROI",
        lambda e: _ort_output(e) and _coord(e) == "tf_crop_and_resize" and (_fact(e, "kept_axes") or 0) > 0,
    ),
    (
        "R-SAME-SHAPE-NO-OP",
        lambda e: (
            _op(e, "Resize", "Upsample")
            and _ort_output(e)
            and bool(_fact(e, "same_shape"))
            and bool(_fact(e, "builtin_returns_input"))
            and _coord(e) not in ("tf_crop_and_resize", "tf_half_pixel_for_nn")
        ),
    ),
    (
        "R-AA-INT8-CLAMP",
        lambda e: _ort_output(e) and _fact(e, "dtype") == "int8" and _attr(e, "antialias") == 1,
    ),
    (
        "R-INT-TRUNCATION",
        lambda e: (
            _ort_output(e)
            and _fact(e, "dtype") in _INT_TYPES
            and _attr(e, "mode") == "linear"
            and _attr(e, "antialias") != 1
            and not _fact(e, "builtin_returns_input")
        ),
    ),
    (
        "P-REFLECT-PAD-GE-DIM",
        lambda e: _has(e, "exceeds maximum allowed") or _has(e, "requires axis length >="),
    ),
    ("P-CROP-TO-EMPTY", lambda e: _has(e, "zero effective input extent")),
    ("P-WRAP-EMPTY-TENSOR", lambda e: _has(e, "Unexpected mode of")),
    ("P-AXES-INT32-INIT", lambda e: _has(e, "ParseData type mismatch for tensor: axes")),
    ("C-3D-DILATION", lambda e: _op(e, "Col2Im") and _ort_output(e) and _feature(e, "dilations")),
    ("CCP-INT32-SHAPE", lambda e: _has(e, "bound to different types")),
    ("G-1D-SPATIAL", lambda e: _op(e, "GridSample") and _has(e, "-D tensor is supported")),
    (
        "G-CUBIC-3D-SPATIAL",
        lambda e: _op(e, "GridSample") and _has(e, "Only support GridSample Cubic mode in"),
    ),
    (
        "G-EMPTY-IMAGE",
        lambda e: _op(e, "GridSample") and _has(e, "Input spatial dimensions must be non-empty"),
    ),
    (
        "G-GRID-FAR-OR-NAN",
        lambda e: (
            _gs_output(e) and _ort_side(e) and (_feature(e, "grid-specials") or bool(_fact(e, "grid_far")))
        ),
    ),
    (
        "semantics: GridSample: inf / NaN in X",
        lambda e: _gs_output(e) and _feature(e, "special-values") and _gs_mode(e) != "nearest",
    ),
    (
        "semantics: GridSample: reflection of far-out coordinates",
        lambda e: (
            _gs_output(e)
            and e.signature.side in ("custom", "unknown", "three-way")
            and _attr(e, "padding_mode") == "reflection"
            and _feature(e, "grid-specials")
        ),
    ),
    (
        "semantics: GridSample: NaN and ±Inf in the grid, far-out values",
        lambda e: (
            _gs_output(e)
            and e.signature.side in ("custom", "three-way")
            and (_feature(e, "grid-specials") or bool(_fact(e, "grid_far")))
        ),
    ),
    (
        "semantics: GridSample-16: X that is not 4-D",
        lambda e: _op(e, "GridSample") and _detail_is(e, "x-rank-16"),
    ),
    # recorded decisions (docs/semantics.md)
    (
        "semantics: scale-1 axes",
        lambda e: (
            _output_kind(e) and _coord(e) == "tf_half_pixel_for_nn" and (_fact(e, "kept_axes") or 0) > 0
        ),
    ),
    (
        "semantics: inf / NaN inputs",
        lambda e: (
            _op(e, "Resize", "Upsample")
            and _output_kind(e)
            and _feature(e, "special-values")
            and _attr(e, "mode") in ("linear", "cubic")
        ),
    ),
    (
        "semantics: integer types, linear / cubic",
        lambda e: (
            _output_kind(e) and _fact(e, "dtype") in _INT_TYPES and _attr(e, "mode") in ("linear", "cubic")
        ),
    ),
    (
        "semantics: coordinate arithmetic",
        lambda e: (
            _op(e, "Resize", "Upsample")
            and e.signature.kind == "value"
            and _ort_output(e)
            and _attr(e, "mode") in (None, "nearest")
            and not _fact(e, "builtin_returns_input")
            and (
                _coord(e) in (None, "half_pixel", "pytorch_half_pixel", "asymmetric")
                # on axes it resizes; on kept axes ORT's tf_half_pixel_for_nn is "scale-1 axes"
                or (_coord(e) == "tf_half_pixel_for_nn" and not _fact(e, "kept_axes"))
            )
        ),
    ),
    (
        "semantics: coordinate arithmetic",
        lambda e: (
            _op(e, "Resize", "Upsample")
            and e.signature.kind == "value"
            and e.signature.side == "custom"
            and _attr(e, "mode") in (None, "nearest")
            and _attr(e, "nearest_mode") in ("floor", "ceil", None, "round_prefer_floor", "round_prefer_ceil")
        ),
    ),
    (
        "semantics: output length from scales",
        lambda e: (
            _op(e, "Resize", "Upsample")
            and e.signature.kind == "shape"
            and _ort_output(e)
            and _coord(e) != "tf_crop_and_resize"
            and _attr(e, "keep_aspect_ratio_policy") in (None, "stretch")
        ),
    ),
    (
        "semantics: `keep_aspect_ratio_policy` with an axis of length 0",
        lambda e: (
            _output_kind(e)
            and _attr(e, "keep_aspect_ratio_policy") in ("not_larger", "not_smaller")
            and (_fact(e, "zero_axes") or 0) > 0
        ),
    ),
    (
        "semantics: `length_resized` in `align_corners` / `tf_crop_and_resize` denominators",
        lambda e: _ort_output(e) and _coord(e) == "tf_crop_and_resize" and not _fact(e, "kept_axes"),
    ),
    (
        "semantics: `antialias=1` with `nearest`",
        lambda e: _has(e, "when anti-aliasing is set, Resize only supports"),
    ),
    (
        "semantics: resizing an axis of length 0 to length > 0",
        lambda e: _has(e, "Input dim is zero but required output dim is non-zero"),
    ),
    (
        "semantics: `tf_half_pixel_for_nn` in Resize-18/19",
        lambda e: (
            _detail_is(e, "attr-value:coordinate_transformation_mode") and _coord(e) == "tf_half_pixel_for_nn"
        ),
    ),
    (
        "semantics: `half_pixel_symmetric` before Resize-19",
        lambda e: (
            _detail_is(e, "attr-value:coordinate_transformation_mode") and _coord(e) == "half_pixel_symmetric"
        ),
    ),
    (
        "semantics: `cubic` in Resize-10 / Upsample",
        lambda e: _detail_is(e, "attr-value:mode") and _attr(e, "mode") == "cubic",
    ),
    (
        "semantics: Col2Im: dilation > 1 with blocks in the end padding, C > 1, 1-D or 3-D images",
        lambda e: _op(e, "Col2Im") and _ort_output(e) and _feature(e, "dilations"),
    ),
    (
        "semantics: Col2Im: C = 0 (input dim 1 = 0) or N = 0",
        lambda e: _has(e, "must be a positive multiple of prod(block_shape"),
    ),
    (
        "semantics: Pad reflect/edge/wrap when the axis has no elements left (length 0, or cropped to 0) and a "
        "positive pad",
        lambda e: _op(e, "Pad") and _detail_is(e, "pad-empty-axis"),
    ),
    ("semantics: Pad: repeated axis in `axes`", lambda e: _op(e, "Pad") and _detail_is(e, "axes-repeated")),
    (
        "semantics: CenterCropPad: negative target size",
        lambda e: _op(e, "CenterCropPad") and _detail_is(e, "shape-negative"),
    ),
    (
        "semantics: CenterCropPad: `shape` length ≠ number of axes",
        lambda e: _op(e, "CenterCropPad") and _detail_is(e, "shape-length"),
    ),
    ("semantics: Upsample-7/9", lambda e: _op(e, "Upsample") and _detail_is(e, "upsample-scale-below-1")),
    ("semantics: scales with `keep_aspect_ratio_policy`", lambda e: _detail_is(e, "scales-with-policy")),
    ("semantics: non-finite `cubic_coeff_a`", lambda e: _detail_is(e, "cubic_coeff_a-nonfinite")),
    # found by this fuzzer
    ("F-EXCLUDE-OUTSIDE-NEAREST", lambda e: _has(e, "exclude_outside can be set to # when")),
    ("F-SIZES-ZERO", lambda e: _has(e, "Scale value should be greater than #")),
    (
        "F-ROI-TYPE",
        lambda e: _has(e, "Tensor type mismatch") and _fact(e, "roi_elem") in ("float16", "double"),
    ),
    (
        "F-POLICY-NEGATIVE-AXES",
        lambda e: (
            _ort_side(e)
            and _output_kind(e)
            and _attr(e, "keep_aspect_ratio_policy") in ("not_larger", "not_smaller")
            and any(a < 0 for a in _attr(e, "axes") or [])
        ),
    ),
    (
        "F-POLICY-NEGATIVE-SIZE",
        lambda e: (
            _ort_side(e)
            and _detail_is(e, "size-negative")
            and _attr(e, "keep_aspect_ratio_policy") in ("not_larger", "not_smaller")
        ),
    ),
    ("F-AA-INT32-NARROWING", lambda e: _has(e, "narrowing_error")),
    (
        "F-PAD-WRAP-BEFORE-19",
        lambda e: _op(e, "Pad") and _detail_is(e, "attr-value:mode") and _attr(e, "mode") == "wrap",
    ),
    ("F-COL2IM-ZERO-IMAGE", lambda e: _has(e, "All 'image_shape' values must be positive")),
    ("F-COL2IM-NEGATIVE-PADS", lambda e: _op(e, "Col2Im") and _detail_is(e, "attr-value:pads")),
    # our kernels
    (
        "K-CUBIC-COEFF-NONFINITE",
        lambda e: (
            e.signature.side == "custom"
            and _has(e, "cubic_coeff_a # is not finite")
            and _attr(e, "mode") != "cubic"
        ),
    ),
    (
        "F-UNUSED-ATTRIBUTE-UNCHECKED",
        lambda e: (
            e.signature.side == "builtin"
            and _detail_is(e, "attr-value:nearest_mode")
            and _attr(e, "mode") in ("linear", "cubic")
        ),
    ),
    # AffineGrid (docs/ort-deviations.md and docs/semantics.md)
    ("T-AFFINEGRID", lambda e: _op(e, "AffineGrid") and _missing_type(e)),
    (
        "AG-FLOAT16-FUNCTION",
        lambda e: (
            _op(e, "AffineGrid")
            and _fact(e, "dtype") == "float16"
            and _ort_side(e)
            and e.signature.kind in ("rejects-valid", "value", "shape", "dtype")
        ),
    ),
    (
        "AG-ALIGN-CORNERS-SIZE-1",
        lambda e: (
            _op(e, "AffineGrid")
            and _ort_output(e)
            and _attr(e, "align_corners") == 1
            and 1 in (_fact(e, "grid_sizes") or [])
        ),
    ),
    ("AG-ZERO-SIZE", lambda e: _op(e, "AffineGrid") and _has(e, "must be positive")),
    (
        "semantics: AffineGrid: `align_corners` other than 0 or 1",
        lambda e: _op(e, "AffineGrid") and _detail_is(e, "attr-value:align_corners"),
    ),
    (
        "semantics: AffineGrid: a negative entry of `size`",
        lambda e: _op(e, "AffineGrid") and _detail_is(e, "size-negative"),
    ),
    # MaxRoiPool (docs/ort-deviations.md and docs/semantics.md)
    ("T-MAXROIPOOL", lambda e: _op(e, "MaxRoiPool") and _missing_type(e)),
    (
        "MRP-NAN-DROPPED",
        lambda e: _op(e, "MaxRoiPool") and _ort_output(e) and bool(_fact(e, "x_has_nan")),
    ),
    (
        "MRP-NEG-INF-LOWEST",
        lambda e: _op(e, "MaxRoiPool") and _ort_output(e) and bool(_fact(e, "builtin_has_lowest")),
    ),
    (
        "MRP-FLOAT-BIN-EDGE",
        lambda e: _op(e, "MaxRoiPool") and _ort_output(e) and bool(_fact(e, "float_bin_edges_differ")),
    ),
    (
        "semantics: MaxRoiPool: roi corners in pixels of X",
        lambda e: _op(e, "MaxRoiPool") and _ort_output(e) and bool(_fact(e, "float_corners_differ")),
    ),
    (
        "semantics: MaxRoiPool: batch index that is not an integer",
        lambda e: _op(e, "MaxRoiPool") and _detail_is(e, "batch-index-fraction"),
    ),
    (
        "semantics: MaxRoiPool: `spatial_scale` ≤ 0 or not finite",
        lambda e: _op(e, "MaxRoiPool") and _detail_is(e, "attr-value:spatial_scale"),
    ),
    (
        "semantics: MaxRoiPool: NaN or ±Inf roi coordinate",
        lambda e: _op(e, "MaxRoiPool") and _detail_is(e, "roi-nonfinite"),
    ),
    # RoiAlign (docs/ort-deviations.md, docs/semantics.md, found by this fuzzer)
    ("T-ROIALIGN", lambda e: _op(e, "RoiAlign") and _missing_type(e)),
    ("RA-REVERSED-ADAPTIVE", lambda e: _op(e, "RoiAlign") and _has(e, "overflow")),
    (
        "RA-EMPTY-MAP",
        lambda e: (
            _op(e, "RoiAlign")
            and (
                (
                    e.signature.side == "builtin"
                    and (
                        _detail_is(e, "feature-map-empty")
                        or (e.signature.kind == "crash" and (_fact(e, "zero_axes") or 0) > 0)
                    )
                )
                # compare: our kernel refuses the node, ORT ran it
                or (e.signature.side == "custom" and _has(e, "X has an empty spatial axis"))
            )
        ),
    ),
    (
        "semantics: RoiAlign: non-finite ROI coordinates (rois or `spatial_scale` inf / NaN)",
        lambda e: (
            _op(e, "RoiAlign")
            and (
                _has(e, "All 'rois' values must be finite")
                or (
                    _output_kind(e)
                    and (
                        _feature(e, "rois-nonfinite")
                        or str(_attr(e, "spatial_scale")) in ("nan", "inf", "-inf", "Infinity", "-Infinity")
                    )
                )
            )
        ),
    ),
    (
        "semantics: RoiAlign: special values in X (inf, NaN, values near the type's limits)",
        lambda e: _op(e, "RoiAlign") and _output_kind(e) and _feature(e, "special-values"),
    ),
    (
        "semantics: RoiAlign: `output_height` / `output_width` ≤ 0",
        lambda e: _op(e, "RoiAlign") and _detail_is(e, "output-size-nonpositive"),
    ),
    (
        "F-ROIALIGN-COORD-UNCHECKED",
        lambda e: (
            _op(e, "RoiAlign")
            and e.signature.side == "builtin"
            and _detail_is(e, "attr-value:coordinate_transformation_mode")
        ),
    ),
    # DeformConv
    ("T-DEFORMCONV", lambda e: _op(e, "DeformConv") and _missing_type(e)),
    ("DC-2D-ONLY", lambda e: _op(e, "DeformConv") and _has(e, "Input X must be 4D")),
    (
        "DC-EMPTY-AXIS",
        lambda e: (
            _op(e, "DeformConv")
            and e.signature.kind == "rejects-valid"
            and (
                _has(e, "Input channels C must be positive")
                or _has(e, "Output channels M (oC) must be positive")
                or _has(e, "Invalid deform conv dimensions")
            )
        ),
    ),
    (
        "semantics: DeformConv: NaN offset",
        lambda e: _op(e, "DeformConv") and _output_kind(e) and _feature(e, "offset-special"),
    ),
    (
        "DC-NONFINITE-SPREAD",
        lambda e: _op(e, "DeformConv") and _ort_output(e) and _feature(e, "special-values"),
    ),
    (
        "semantics: DeformConv: ±Inf or NaN pixel beside a sampling point",
        lambda e: (
            _op(e, "DeformConv")
            and _output_kind(e)
            and e.signature.side in ("custom", "unknown", "three-way")
            and _feature(e, "special-values")
        ),
    ),
    (
        "semantics: DeformConv: arithmetic",
        lambda e: (
            _op(e, "DeformConv")
            and e.signature.kind == "value"
            and not _feature(e, "special-values")
            and not _feature(e, "offset-special")
        ),
    ),
    (
        "F-DEFORMCONV-KERNEL-DOES-NOT-FIT",
        lambda e: (
            _op(e, "DeformConv")
            and e.signature.side == "builtin"
            and e.signature.kind == "accepts-invalid"
            and _detail_is(e, "kernel-does-not-fit")
        ),
    ),
]


_REFERENCE_RULES: list[tuple[str, Callable[[Labelled], bool]]] = [
    # where onnx.reference itself leaves the spec and ORT's kernel and ours agree (docs/semantics.md)
    (
        "semantics: RoiAlign-10 coordinates",
        lambda e: _op(e, "RoiAlign") and e.signature.version == 10 and _output_kind(e),
    ),
    (
        "semantics: `pytorch_half_pixel`, output length 1",
        lambda e: (
            _op(e, "Resize")
            and _output_kind(e)
            and _coord(e) == "pytorch_half_pixel"
            and bool(_fact(e, "resized_to_one"))
        ),
    ),
    (
        "semantics: cubic + border, location out of bound",
        lambda e: _gs_output(e) and _gs_mode(e) == "cubic" and _attr(e, "padding_mode") == "border",
    ),
]
"""The rules of a difference whose odd side is the reference (compare's ``reference-odd-one-out``)."""


def documented_ids() -> list[str]:
    """The ids of docs/ort-deviations.md the rules recognize, in rule order."""
    return [name for name, _ in _RULES if not name.startswith(("semantics:", "F-", "K-"))]


def known_labels(entry: Labelled) -> list[str]:
    """The documented deviations a fuzz group or a compare node matches (empty: new); a difference of
    the reference alone is matched against the reference's own departures only."""
    rules = _REFERENCE_RULES if entry.signature.side == "reference" else _RULES
    return [name for name, rule in rules if _safe(rule, entry)]


def _safe(rule: Callable[[Labelled], bool], entry: Labelled) -> bool:
    try:
        return bool(rule(entry))
    except (KeyError, TypeError, AttributeError, ValueError):  # a field of another shape (read from a file)
        return False
