"""The table of yardsticks per op (docs/compare.md, "Yardsticks per op"): what gives the high-precision
value of each op's formula, the terms summed per output element in words, the configurations that do not
round, and whether onnx.reference is a vote (an independent implementation that computes in float64).

The measurement against it is customops.eval.judging.yardstick's; the rounding bound per op,
customops.eval.judging.rounding_bound's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Yardstick:
    """One op's row of the table (docs/compare.md, "Yardsticks per op")."""

    op: str
    source: str
    """What gives the high-precision value."""
    terms: str
    """The terms summed per output element (T in customops.eval.judging.rounding_bound.bound), in words."""
    exact: str
    """The configurations that do not round (no yardstick there), in words."""
    reference_vote: bool
    """Whether onnx.reference (onnx 1.23) is an independent implementation computing in float64 (for an
    exact kernel: exactly)."""
    reference_note: str
    exact_kernel: bool = False
    """Our kernel is exact (integer outputs: exact integer arithmetic; float outputs: the spec's value
    correctly rounded, or its float32 steps where the spec is a function body): the yardstick is our
    output itself, with a bound of 0 on every output type (customops.eval.judging.rounding_bound's ``exact``)."""


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
