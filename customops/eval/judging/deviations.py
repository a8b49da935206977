"""Known deviations and the rules that recognize them: the catalogue of deviations found by the fuzzer
(:data:`FOUND`, ``F-`` ids; docs/findings.md lists them) and of our kernels' own (:data:`OURS`, ``K-``),
and the rules that label a difference with an id of docs/ort-deviations.md, a row of docs/semantics.md
("semantics: <row>") where the difference is a recorded decision, or one of those ids.

Both tools label with :func:`known_labels`: the fuzzer its groups (customops.fuzz.summary.GroupSummary),
compare the node where a difference starts (customops.comparison.node_labels builds a
customops.eval.judging.signature.Subject). Each reads a signature (customops.eval.judging.signature) and the
facts of the case (customops.eval.judging.facts, plus ``facts["needs"]``, the features a fuzz group's shrunk
representative needs: a group whose first case had two causes of its finding has a signature that needs
neither, and a representative that shows one of them).

A rule is data (:class:`Rule`): the conditions it sets, each field left empty setting none, and an extra
predicate (``when``) only for what the fields cannot say. No rule takes precedence over another: every
rule that matches gives its label, in the list's order (:data:`RULES`; :data:`REFERENCE_RULES` for a
difference of the reference alone). A rule that does not match says which of its conditions fails first
(:class:`Match`; :func:`misses` for every rule of a difference). The labels only name what a difference
is; they play no part in generating cases or in the signatures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from customops.eval.judging.signature import Signature
from customops.registry import ACTIVATION_OPS, GRID_SAMPLE_16_MODES

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
    "F-GELU-APPROXIMATE-UNCHECKED": "Gelu-20: an approximate other than 'none' or 'tanh' is accepted (and read "
    "as 'none')",
}
"""Deviations of ONNX Runtime found by this fuzzer (not in docs/ort-deviations.md), by id."""

OURS: dict[str, str] = {
    "K-CUBIC-COEFF-NONFINITE": "our Resize kernel rejects a non-finite cubic_coeff_a whatever the mode; "
    "nearest and linear do not use it (ORT and the reference run such nodes)",
}
"""Disagreements where our kernel leaves the spec without a recorded decision (reported, not fixed here)."""


class Labelled(Protocol):
    """Anything the rules label: a signature, the facts of its case and the ranks of a group's members
    (a customops.eval.judging.signature.Subject, a fuzz group's summary entry)."""

    @property
    def signature(self) -> Signature: ...

    @property
    def facts(self) -> dict[str, Any] | None: ...

    @property
    def ranks(self) -> list[int] | None: ...


@dataclass(frozen=True)
class Rule:
    """A documented deviation as conditions on a signature and its facts; a difference matches when it
    meets every condition set (:func:`matches`)."""

    id: str
    ops: tuple[str, ...] = ()
    """The op is one of these."""
    texts: tuple[str, ...] = ()
    """The detail (the normalized error) contains one of these."""
    detail: str | None = None
    """The detail is exactly this (an invalid case's broken rule)."""
    sides: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    attrs: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """Each attribute's value is one of these (None: the attribute is not set)."""
    not_attrs: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """Each attribute's value is none of these."""
    elems: tuple[str, ...] = ()
    """T (the fact ``dtype``) is one of these."""
    ranks: tuple[int, ...] = ()
    """A member of the group (or the case) has one of these ranks (6: 6 or more)."""
    features: tuple[str, ...] = ()
    """The signature or the representative needs a feature starting with each of these."""
    holds: tuple[str, ...] = ()
    """Facts that are true."""
    lacks: tuple[str, ...] = ()
    """Facts that are false or absent."""
    positive: tuple[str, ...] = ()
    """Facts that count something above 0."""
    when: Callable[[Labelled], bool] | None = None
    """What the fields cannot say."""


@dataclass(frozen=True)
class Match:
    """Whether a difference meets a rule (true as a bool), and when it does not, the first condition it
    fails, in words (``reason``; as onnxscript's rewriter's MatchResult says why a pattern did not
    match)."""

    reason: str | None = None

    def __bool__(self) -> bool:
        return self.reason is None

    @classmethod
    def fail(cls, reason: str) -> Match:
        return cls(reason)


def matches(rule: Rule, e: Labelled) -> Match:
    """Whether ``e`` meets every condition of ``rule``, or the first one it fails; each is read only when
    the ones before it hold."""
    for holds, reason in _conditions(rule, e):
        if not holds:
            return Match.fail(reason)
    return Match()


def _conditions(rule: Rule, e: Labelled) -> Iterator[tuple[bool, str]]:
    """Each condition ``rule`` sets, in order, read when asked for: whether ``e`` meets it, and what it
    asks of ``e``."""
    sig = e.signature
    yield not rule.ops or sig.op in rule.ops, f"the op is one of {rule.ops}"
    yield not rule.sides or sig.side in rule.sides, f"the side is one of {rule.sides}"
    yield not rule.kinds or sig.kind in rule.kinds, f"the kind is one of {rule.kinds}"
    yield rule.detail is None or sig.detail == rule.detail, f"the detail is {rule.detail!r}"
    yield not rule.texts or any(t in sig.detail for t in rule.texts), f"the detail holds one of {rule.texts}"
    for name, values in rule.attrs.items():
        yield _attr(e, name) in values, f"attribute {name} is one of {values}"
    for name, values in rule.not_attrs.items():
        yield _attr(e, name) not in values, f"attribute {name} is none of {values}"
    yield not rule.elems or _fact(e, "dtype") in rule.elems, f"T is one of {rule.elems}"
    yield not rule.ranks or _ranks(e, rule.ranks), f"a rank is one of {rule.ranks}"
    for prefix in rule.features:
        yield _feature(e, prefix), f"a feature {prefix}... is needed"
    for name in rule.holds:
        yield bool(_fact(e, name)), f"the fact {name} holds"
    for name in rule.lacks:
        yield not _fact(e, name), f"the fact {name} does not hold"
    for name in rule.positive:
        yield (_fact(e, name) or 0) > 0, f"the fact {name} is above 0"
    if rule.when is not None:
        yield bool(rule.when(e)), f"{getattr(rule.when, '__name__', 'its own condition')} holds"


def _feature(e: Labelled, prefix: str) -> bool:
    """Whether the group's signature or its shrunk representative needs a feature named ``prefix...``."""
    needs = [*e.signature.features, *(e.facts or {}).get("needs", ())]
    return any(f.startswith(prefix) for f in needs)


def _attr(e: Labelled, name: str) -> Any:
    return (e.facts or {}).get("attrs", {}).get(name)


def _fact(e: Labelled, name: str) -> Any:
    return (e.facts or {}).get(name)


def _ranks(e: Labelled, ranks: tuple[int, ...]) -> bool:
    """Whether a member of the group (before shrinking) has one of these ranks (6: 6 or more)."""
    return any(min(r, 6) in ranks for r in e.ranks or [_fact(e, "rank")] if r is not None)


def _gs_mode(e: Labelled) -> str:
    """A GridSample group's mode by GridSample-20's names (16's bilinear / bicubic; absent: linear)."""
    mode = _attr(e, "mode")
    return "linear" if mode is None else GRID_SAMPLE_16_MODES.get(mode, mode)


def _grid_far(e: Labelled) -> bool:
    """The grid holds NaN, ±Inf or far-out values: a feature the representative needs, or a fact."""
    return _feature(e, "grid-specials") or bool(_fact(e, "grid_far"))


def _coordinate_arithmetic(e: Labelled) -> bool:
    """A coordinate mode whose arithmetic docs/semantics.md records, on axes it resizes (on kept axes
    ORT's tf_half_pixel_for_nn is "scale-1 axes")."""
    coord = _attr(e, COORD)
    return coord in (None, "half_pixel", "pytorch_half_pixel", "asymmetric") or (
        coord == "tf_half_pixel_for_nn" and not _fact(e, "kept_axes")
    )


def _negative_axes(e: Labelled) -> bool:
    return any(a < 0 for a in _attr(e, "axes") or [])


def _empty_map(e: Labelled) -> bool:
    """ORT's RoiAlign on an empty feature map: its refusal, or its crash on an X with an empty axis;
    in compare, our kernel refuses the node that ORT ran."""
    sig = e.signature
    if sig.side == "builtin":
        return sig.detail == "feature-map-empty" or (sig.kind == "crash" and (_fact(e, "zero_axes") or 0) > 0)
    return sig.side == "custom" and "X has an empty spatial axis" in sig.detail


def _roi_nonfinite(e: Labelled) -> bool:
    """RoiAlign's refusal of a non-finite roi, or an output difference with NaN / ±Inf rois or
    spatial_scale."""
    if "All 'rois' values must be finite" in e.signature.detail:
        return True
    return e.signature.kind in OUTPUT and (
        _feature(e, "rois-nonfinite")
        or str(_attr(e, "spatial_scale")) in ("nan", "inf", "-inf", "Infinity", "-Infinity")
    )


COORD = "coordinate_transformation_mode"
POLICY = "keep_aspect_ratio_policy"
OUTPUT = ("value", "shape", "dtype")
"""The kinds of a difference between two outputs (both ORT's kernel and ours ran)."""
ORT_OR_UNDECIDED = ("builtin", "unknown", "three-way")
"""The sides that say ORT's output is the odd one, or that no side is: the reference could not vote or
agrees with both (``unknown``), or all three differ (``three-way``)."""
INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
MISSING_TYPE = ("Could not find an implementation", "Failed to find kernel")
LINEAR_ONLY = ("'Linear' mode only supports",)
CUBIC_ONLY = ("'Cubic' mode only supports",)
RESIZES = ("Resize", "Upsample")
LINEAR_CUBIC = ("linear", "cubic")
NEAREST = (None, "nearest")
POLICIES = ("not_larger", "not_smaller")
PAST_FAR = ("custom", "unknown", "three-way")
QLINEAR = ("QLinearMatMul", "QLinearConv")
U8S8_OPS = ("MatMulInteger", *QLINEAR)
"""The ops whose uint8 x int8 GEMM saturates pairs of products on x86 without VNNI (ORT's MLAS)."""
REJECTS = ("rejects-valid",)
ROW_ZERO_POINT = ("IsScalarOr1ElementVector(a_zero_point)", "zero point must be a scalar or")
CHANNEL_ZERO_POINT = (
    "IsScalarOr1ElementVector(W_Zero_Point)",
    "Non per-tensor quantization is not supported",
)


def _missing(ident: str, op: str) -> Rule:
    """ORT has no kernel of ``op`` for the element type (docs/ort-deviations.md's ``T-`` ids)."""
    return Rule(ident, ops=(op,), sides=("builtin",), kinds=("rejects-valid",), texts=MISSING_TYPE)


def _ort_output(ident: str, **conditions: Any) -> Rule:
    """Both ran and ORT's output is the odd one (or the reference could not tell)."""
    return Rule(ident, sides=ORT_OR_UNDECIDED, kinds=OUTPUT, **conditions)


ACTIVATIONS = tuple(op.name for op in ACTIVATION_OPS)
"""The activation family (customops.kernels.activations): its rules read the facts of its values
(customops.eval.judging.facts: ORT's output against our correctly rounded one)."""
ELU_FAMILY = ("Elu", "Selu", "Celu")
SIGMOID_TAIL = ("Sigmoid", "Swish")


def _activation_output(ident: str, ops: tuple[str, ...], **conditions: Any) -> Rule:
    """An activation whose ORT output is the odd one: values only (the facts say which class)."""
    return Rule(ident, ops=ops, sides=ORT_OR_UNDECIDED, kinds=("value",), **conditions)


ACTIVATION_RULES: tuple[Rule, ...] = (
    Rule("T-ACTIVATIONS", ops=ACTIVATIONS, sides=("builtin",), kinds=REJECTS, texts=MISSING_TYPE),
    _activation_output("A-SIGMOID-ZERO-TAIL", SIGMOID_TAIL, holds=("builtin_zeroed",)),
    _activation_output("A-GELU-ZERO-TAIL", ("Gelu",), holds=("builtin_zeroed",)),
    _activation_output("A-ELU-FAMILY-ACCURACY", ELU_FAMILY),
    _activation_output("A-HARDSIGMOID-ROUNDING", ("HardSigmoid",), lacks=("builtin_nan_at_infinity",)),
    _activation_output(
        "A-RELATIVE-ACCURACY",
        tuple(op for op in ACTIVATIONS if op not in (*ELU_FAMILY, "HardSigmoid")),
        holds=("builtin_relative_only",),
        lacks=("builtin_nan_at_infinity",),
        when=lambda e: e.signature.op not in (*SIGMOID_TAIL, "Gelu") or not _fact(e, "builtin_zeroed"),
    ),
    _activation_output(
        "semantics: HardSigmoid with alpha = 0 at ±inf",
        ("HardSigmoid",),
        attrs={"alpha": (0.0,)},
        holds=("builtin_nan_at_infinity",),
    ),
    _activation_output(
        "semantics: Gelu `tanh`: constants and order",
        ("Gelu",),
        attrs={"approximate": ("tanh",)},
        elems=("double",),
        lacks=("builtin_relative_only", "builtin_nan_at_infinity"),
    ),
    _activation_output(
        "semantics: Mish, Swish (alpha > 0), Gelu (both forms), HardSwish at -inf",
        ("Mish", "Swish", "Gelu", "HardSwish"),
        holds=("builtin_nan_at_infinity",),
    ),
    Rule("F-GELU-APPROXIMATE-UNCHECKED", ops=("Gelu",), detail="attr-value:approximate"),
)
"""The activation family's rules (docs/ort-deviations.md, "Activations")."""

RULES: tuple[Rule, ...] = (
    # docs/ort-deviations.md
    _missing("T-RESIZE", "Resize"),
    _missing("T-UPSAMPLE", "Upsample"),
    _missing("T-PAD", "Pad"),
    _missing("T-COL2IM", "Col2Im"),
    _missing("T-CENTERCROPPAD", "CenterCropPad"),
    _missing("T-GRIDSAMPLE", "GridSample"),
    Rule("R-LINEAR-RANK", ops=("Resize",), texts=LINEAR_ONLY, ranks=(1, 6)),
    Rule("R-LINEAR-OUTER-AXIS", ops=("Resize",), texts=LINEAR_ONLY, ranks=(4, 5)),
    Rule("U-LINEAR-RANK", ops=("Upsample",), texts=LINEAR_ONLY),
    Rule("R-CUBIC-NHWC-DOWN", texts=CUBIC_ONLY, ranks=(4,)),
    Rule("R-CUBIC-RANK", texts=CUBIC_ONLY, ranks=(1, 3, 5, 6)),
    Rule(
        "R-CUBIC-INT-RUNTIME-ERROR",
        texts=("Tensor type mismatch",),
        attrs={"mode": ("cubic",)},
        elems=INT_TYPES,
    ),
    _ort_output("R-ALIGN-CORNERS-INT-LENGTH", attrs={COORD: ("align_corners",)}),
    _ort_output("R-HPS-FLOAT-ROUNDING", attrs={COORD: ("half_pixel_symmetric",)}),
    _ort_output(
        "R-TFCROP-SAME-LENGTH-NO-ROI", attrs={COORD: ("tf_crop_and_resize",)}, positive=("kept_axes",)
    ),
    _ort_output(
        "R-SAME-SHAPE-NO-OP",
        ops=RESIZES,
        holds=("same_shape", "builtin_returns_input"),
        not_attrs={COORD: ("tf_crop_and_resize", "tf_half_pixel_for_nn")},
    ),
    _ort_output("R-AA-INT8-CLAMP", elems=("int8",), attrs={"antialias": (1,)}),
    _ort_output(
        "R-INT-TRUNCATION",
        elems=INT_TYPES,
        attrs={"mode": ("linear",)},
        not_attrs={"antialias": (1,)},
        lacks=("builtin_returns_input",),
    ),
    Rule("P-REFLECT-PAD-GE-DIM", texts=("exceeds maximum allowed", "requires axis length >=")),
    Rule("P-CROP-TO-EMPTY", texts=("zero effective input extent",)),
    Rule("P-WRAP-EMPTY-TENSOR", texts=("Unexpected mode of",)),
    Rule("P-AXES-INT32-INIT", texts=("ParseData type mismatch for tensor: axes",)),
    _ort_output("C-3D-DILATION", ops=("Col2Im",), features=("dilations",)),
    Rule("CCP-INT32-SHAPE", texts=("bound to different types",)),
    Rule("G-1D-SPATIAL", ops=("GridSample",), texts=("-D tensor is supported",)),
    Rule("G-CUBIC-3D-SPATIAL", ops=("GridSample",), texts=("Only support GridSample Cubic mode in",)),
    Rule("G-EMPTY-IMAGE", ops=("GridSample",), texts=("Input spatial dimensions must be non-empty",)),
    _ort_output("G-GRID-FAR-OR-NAN", ops=("GridSample",), when=_grid_far),
    Rule(
        "semantics: GridSample: inf / NaN in X",
        ops=("GridSample",),
        kinds=OUTPUT,
        features=("special-values",),
        when=lambda e: _gs_mode(e) != "nearest",
    ),
    Rule(
        "semantics: GridSample: reflection of far-out coordinates",
        ops=("GridSample",),
        kinds=OUTPUT,
        sides=PAST_FAR,
        attrs={"padding_mode": ("reflection",)},
        features=("grid-specials",),
    ),
    Rule(
        "semantics: GridSample: NaN and ±Inf in the grid, far-out values",
        ops=("GridSample",),
        kinds=OUTPUT,
        sides=("custom", "three-way"),
        when=_grid_far,
    ),
    Rule("semantics: GridSample-16: X that is not 4-D", ops=("GridSample",), detail="x-rank-16"),
    # recorded decisions (docs/semantics.md)
    Rule(
        "semantics: scale-1 axes",
        kinds=OUTPUT,
        attrs={COORD: ("tf_half_pixel_for_nn",)},
        positive=("kept_axes",),
    ),
    Rule(
        "semantics: inf / NaN inputs",
        ops=RESIZES,
        kinds=OUTPUT,
        features=("special-values",),
        attrs={"mode": LINEAR_CUBIC},
    ),
    Rule(
        "semantics: integer types, linear / cubic",
        kinds=OUTPUT,
        elems=INT_TYPES,
        attrs={"mode": LINEAR_CUBIC},
    ),
    Rule(
        "semantics: coordinate arithmetic",
        ops=RESIZES,
        kinds=("value",),
        sides=ORT_OR_UNDECIDED,
        attrs={"mode": NEAREST},
        lacks=("builtin_returns_input",),
        when=_coordinate_arithmetic,
    ),
    Rule(
        "semantics: coordinate arithmetic",
        ops=RESIZES,
        kinds=("value",),
        sides=("custom",),
        attrs={
            "mode": NEAREST,
            "nearest_mode": ("floor", "ceil", None, "round_prefer_floor", "round_prefer_ceil"),
        },
    ),
    Rule(
        "semantics: output length from scales",
        ops=RESIZES,
        kinds=("shape",),
        sides=ORT_OR_UNDECIDED,
        not_attrs={COORD: ("tf_crop_and_resize",)},
        attrs={POLICY: (None, "stretch")},
    ),
    Rule(
        "semantics: `keep_aspect_ratio_policy` with an axis of length 0",
        kinds=OUTPUT,
        attrs={POLICY: POLICIES},
        positive=("zero_axes",),
    ),
    _ort_output(
        "semantics: `length_resized` in `align_corners` / `tf_crop_and_resize` denominators",
        attrs={COORD: ("tf_crop_and_resize",)},
        lacks=("kept_axes",),
    ),
    Rule(
        "semantics: `antialias=1` with `nearest`", texts=("when anti-aliasing is set, Resize only supports",)
    ),
    Rule(
        "semantics: resizing an axis of length 0 to length > 0",
        texts=("Input dim is zero but required output dim is non-zero",),
    ),
    Rule(
        "semantics: `tf_half_pixel_for_nn` in Resize-18/19",
        detail=f"attr-value:{COORD}",
        attrs={COORD: ("tf_half_pixel_for_nn",)},
    ),
    Rule(
        "semantics: `half_pixel_symmetric` before Resize-19",
        detail=f"attr-value:{COORD}",
        attrs={COORD: ("half_pixel_symmetric",)},
    ),
    Rule("semantics: `cubic` in Resize-10 / Upsample", detail="attr-value:mode", attrs={"mode": ("cubic",)}),
    _ort_output(
        "semantics: Col2Im: dilation > 1 with blocks in the end padding, C > 1, 1-D or 3-D images",
        ops=("Col2Im",),
        features=("dilations",),
    ),
    Rule(
        "semantics: Col2Im: C = 0 (input dim 1 = 0) or N = 0",
        texts=("must be a positive multiple of prod(block_shape",),
    ),
    Rule(
        "semantics: Pad reflect/edge/wrap when the axis has no elements left (length 0, or cropped to 0) and a "
        "positive pad",
        ops=("Pad",),
        detail="pad-empty-axis",
    ),
    Rule("semantics: Pad: repeated axis in `axes`", ops=("Pad",), detail="axes-repeated"),
    Rule("semantics: CenterCropPad: negative target size", ops=("CenterCropPad",), detail="shape-negative"),
    Rule(
        "semantics: CenterCropPad: `shape` length ≠ number of axes",
        ops=("CenterCropPad",),
        detail="shape-length",
    ),
    Rule("semantics: Upsample-7/9", ops=("Upsample",), detail="upsample-scale-below-1"),
    Rule("semantics: scales with `keep_aspect_ratio_policy`", detail="scales-with-policy"),
    Rule("semantics: non-finite `cubic_coeff_a`", detail="cubic_coeff_a-nonfinite"),
    # found by this fuzzer
    Rule("F-EXCLUDE-OUTSIDE-NEAREST", texts=("exclude_outside can be set to # when",)),
    Rule("F-SIZES-ZERO", texts=("Scale value should be greater than #",)),
    Rule(
        "F-ROI-TYPE",
        texts=("Tensor type mismatch",),
        when=lambda e: _fact(e, "roi_elem") in ("float16", "double"),
    ),
    _ort_output("F-POLICY-NEGATIVE-AXES", attrs={POLICY: POLICIES}, when=_negative_axes),
    Rule("F-POLICY-NEGATIVE-SIZE", sides=ORT_OR_UNDECIDED, detail="size-negative", attrs={POLICY: POLICIES}),
    Rule("F-AA-INT32-NARROWING", texts=("narrowing_error",)),
    Rule("F-PAD-WRAP-BEFORE-19", ops=("Pad",), detail="attr-value:mode", attrs={"mode": ("wrap",)}),
    Rule("F-COL2IM-ZERO-IMAGE", texts=("All 'image_shape' values must be positive",)),
    Rule("F-COL2IM-NEGATIVE-PADS", ops=("Col2Im",), detail="attr-value:pads"),
    # our kernels
    Rule(
        "K-CUBIC-COEFF-NONFINITE",
        sides=("custom",),
        texts=("cubic_coeff_a # is not finite",),
        not_attrs={"mode": ("cubic",)},
    ),
    Rule(
        "F-UNUSED-ATTRIBUTE-UNCHECKED",
        sides=("builtin",),
        detail="attr-value:nearest_mode",
        attrs={"mode": LINEAR_CUBIC},
    ),
    # AffineGrid (docs/ort-deviations.md and docs/semantics.md)
    _missing("T-AFFINEGRID", "AffineGrid"),
    Rule(
        "AG-FLOAT16-FUNCTION",
        ops=("AffineGrid",),
        elems=("float16",),
        sides=ORT_OR_UNDECIDED,
        kinds=("rejects-valid", *OUTPUT),
    ),
    _ort_output(
        "AG-ALIGN-CORNERS-SIZE-1",
        ops=("AffineGrid",),
        attrs={"align_corners": (1,)},
        when=lambda e: 1 in (_fact(e, "grid_sizes") or []),
    ),
    Rule("AG-ZERO-SIZE", ops=("AffineGrid",), texts=("must be positive",)),
    Rule(
        "semantics: AffineGrid: `align_corners` other than 0 or 1",
        ops=("AffineGrid",),
        detail="attr-value:align_corners",
    ),
    Rule("semantics: AffineGrid: a negative entry of `size`", ops=("AffineGrid",), detail="size-negative"),
    # MaxRoiPool (docs/ort-deviations.md and docs/semantics.md)
    _missing("T-MAXROIPOOL", "MaxRoiPool"),
    _ort_output("MRP-NAN-DROPPED", ops=("MaxRoiPool",), holds=("x_has_nan",)),
    _ort_output("MRP-NEG-INF-LOWEST", ops=("MaxRoiPool",), holds=("builtin_has_lowest",)),
    _ort_output("MRP-FLOAT-BIN-EDGE", ops=("MaxRoiPool",), holds=("float_bin_edges_differ",)),
    _ort_output(
        "semantics: MaxRoiPool: roi corners in pixels of X",
        ops=("MaxRoiPool",),
        holds=("float_corners_differ",),
    ),
    Rule(
        "semantics: MaxRoiPool: batch index that is not an integer",
        ops=("MaxRoiPool",),
        detail="batch-index-fraction",
    ),
    Rule(
        "semantics: MaxRoiPool: `spatial_scale` ≤ 0 or not finite",
        ops=("MaxRoiPool",),
        detail="attr-value:spatial_scale",
    ),
    Rule("semantics: MaxRoiPool: NaN or ±Inf roi coordinate", ops=("MaxRoiPool",), detail="roi-nonfinite"),
    # RoiAlign (docs/ort-deviations.md, docs/semantics.md, found by this fuzzer)
    _missing("T-ROIALIGN", "RoiAlign"),
    Rule("RA-REVERSED-ADAPTIVE", ops=("RoiAlign",), texts=("overflow",)),
    Rule("RA-EMPTY-MAP", ops=("RoiAlign",), when=_empty_map),
    Rule(
        "semantics: RoiAlign: non-finite ROI coordinates (rois or `spatial_scale` inf / NaN)",
        ops=("RoiAlign",),
        when=_roi_nonfinite,
    ),
    Rule(
        "semantics: RoiAlign: special values in X (inf, NaN, values near the type's limits)",
        ops=("RoiAlign",),
        kinds=OUTPUT,
        features=("special-values",),
    ),
    Rule(
        "semantics: RoiAlign: `output_height` / `output_width` ≤ 0",
        ops=("RoiAlign",),
        detail="output-size-nonpositive",
    ),
    Rule("F-ROIALIGN-COORD-UNCHECKED", ops=("RoiAlign",), sides=("builtin",), detail=f"attr-value:{COORD}"),
    # DeformConv
    _missing("T-DEFORMCONV", "DeformConv"),
    Rule("DC-2D-ONLY", ops=("DeformConv",), texts=("Input X must be 4D",)),
    Rule(
        "DC-EMPTY-AXIS",
        ops=("DeformConv",),
        kinds=("rejects-valid",),
        texts=(
            "Input channels C must be positive",
            "Output channels M (oC) must be positive",
            "Invalid deform conv dimensions",
        ),
    ),
    Rule(
        "semantics: DeformConv: NaN offset", ops=("DeformConv",), kinds=OUTPUT, features=("offset-special",)
    ),
    _ort_output("DC-NONFINITE-SPREAD", ops=("DeformConv",), features=("special-values",)),
    Rule(
        "semantics: DeformConv: ±Inf or NaN pixel beside a sampling point",
        ops=("DeformConv",),
        kinds=OUTPUT,
        sides=PAST_FAR,
        features=("special-values",),
    ),
    Rule(
        "semantics: DeformConv: arithmetic",
        ops=("DeformConv",),
        kinds=("value",),
        when=lambda e: not _feature(e, "special-values") and not _feature(e, "offset-special"),
    ),
    Rule(
        "F-DEFORMCONV-KERNEL-DOES-NOT-FIT",
        ops=("DeformConv",),
        sides=("builtin",),
        kinds=("accepts-invalid",),
        detail="kernel-does-not-fit",
    ),
    # the quantized integer family (docs/ort-deviations.md and docs/semantics.md)
    _ort_output("Q-U8S8-PAIR-SATURATION", ops=U8S8_OPS, holds=("u8s8_saturated",)),
    Rule("Q-MATMULINTEGER-ROW-ZERO-POINT", ops=("MatMulInteger",), kinds=REJECTS, texts=ROW_ZERO_POINT),
    Rule("Q-CONVINTEGER-CHANNEL-ZERO-POINT", ops=("ConvInteger",), kinds=REJECTS, texts=CHANNEL_ZERO_POINT),
    _missing("T-QLINEARMATMUL", "QLinearMatMul"),
    _missing("T-QLINEARCONV", "QLinearConv"),
    _missing("T-QUANTIZELINEAR", "QuantizeLinear"),
    _missing("T-DEQUANTIZELINEAR", "DequantizeLinear"),
    _ort_output(
        "semantics: QLinearMatMul, QLinearConv: requantization",
        ops=QLINEAR,
        holds=("ort_arithmetic",),
        lacks=("sums_beyond_int32",),
    ),
    _ort_output(
        "semantics: QLinearMatMul, QLinearConv: sums beyond int32",
        ops=QLINEAR,
        holds=("ort_arithmetic", "sums_beyond_int32"),
    ),
    _ort_output(
        "semantics: DynamicQuantizeLinear: x all zeros, or empty",
        ops=("DynamicQuantizeLinear",),
        holds=("x_all_zero",),
    ),
    *ACTIVATION_RULES,
)
"""The rules of a difference whose odd side is ORT's kernel or ours (or undecided), in label order."""

REFERENCE_RULES: tuple[Rule, ...] = (
    # where onnx.reference itself leaves the spec and ORT's kernel and ours agree (docs/semantics.md)
    Rule(
        "semantics: RoiAlign-10 coordinates",
        ops=("RoiAlign",),
        kinds=OUTPUT,
        when=lambda e: e.signature.version == 10,
    ),
    Rule(
        "semantics: `pytorch_half_pixel`, output length 1",
        ops=("Resize",),
        kinds=OUTPUT,
        attrs={COORD: ("pytorch_half_pixel",)},
        holds=("resized_to_one",),
    ),
    Rule(
        "semantics: cubic + border, location out of bound",
        ops=("GridSample",),
        kinds=OUTPUT,
        attrs={"mode": ("cubic", "bicubic"), "padding_mode": ("border",)},
    ),
)
"""The rules of a difference whose odd side is the reference (compare's ``reference-odd-one-out``)."""


MACHINE_DEPENDENT: dict[str, str] = {
    "Q-U8S8-PAIR-SATURATION": "ORT shows it on x86 CPUs without VNNI only (AVX2, AVX-512 BW): where ORT "
    "runs with VNNI, AVX-VNNI or AMX its integer GEMM is exact, so no campaign there finds it",
}
"""Ids of docs/ort-deviations.md whose deviation shows on some machines only, and why: the fuzzer's
campaigns are not expected to find them again (:func:`documented_ids`); compare labels them by values."""


def documented_ids() -> list[str]:
    """The ids of docs/ort-deviations.md the rules recognize, in rule order, that the fuzzer's campaigns
    find again on any machine (not :data:`MACHINE_DEPENDENT`)."""
    skipped = ("semantics:", "F-", "K-")
    return [r.id for r in RULES if not r.id.startswith(skipped) and r.id not in MACHINE_DEPENDENT]


def known_labels(entry: Labelled) -> list[str]:
    """The documented deviations a fuzz group or a compare node matches (empty: new); a difference of
    the reference alone is matched against the reference's own departures only."""
    return [rule.id for rule in _rules_for(entry) if match_read(rule, entry)]


def misses(entry: Labelled) -> dict[str, str]:
    """Why ``entry`` matches none of the other rules of its side: each rule's id and the first condition
    it fails (:class:`Match`)."""
    found = {rule.id: match_read(rule, entry) for rule in _rules_for(entry)}
    return {rule_id: m.reason for rule_id, m in found.items() if m.reason is not None}


def _rules_for(entry: Labelled) -> tuple[Rule, ...]:
    return tuple(REFERENCE_RULES if entry.signature.side == "reference" else RULES)


def match_read(rule: Rule, entry: Labelled) -> Match:
    """:func:`matches` on facts that may have been read from a file: a field of another shape than a
    condition reads (a KeyError, TypeError, AttributeError or ValueError as it is read) fails that rule,
    and the reason says so."""
    try:
        return matches(rule, entry)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        return Match.fail(f"a field of another shape than the rule reads ({type(exc).__name__})")
