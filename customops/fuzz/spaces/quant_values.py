"""What the quantized family's spaces share (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv): the element types of each type variable, values
of the quantized types (their whole range, the extremes, small ones), scales (powers of two that make
exact ties, thirds, tiny and huge ones, and 0, ±inf and NaN), zero points (0, the extremes, any value),
the rules a scale and its zero point follow, and the features and simplifications of those inputs.

A case's T (``Case.dtype``) is its first input's type; every other input has its own element type, its
array's (customops.fuzz.case)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import ml_dtypes
import numpy as np

from customops.dtypes import numpy_dtype
from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor, output_elems
from customops.fuzz.spaces.base import Candidate
from customops.registry import OpVersion

SPECIAL_SCALE_SHARE = 0.08
"""Share of drawn scales holding 0, ±inf or NaN."""

COMMON = ("uint8", "int8", "float")
"""The types ONNX Runtime implements most: drawn three times as often as the others."""


def variables(opv: OpVersion) -> dict[str, tuple[str, ...]]:
    """Each type variable of ``opv`` and its element types."""
    return dict(opv.type_vars)


def variable_of(opv: OpVersion, name: str) -> str:
    """The type variable (or fixed type) of input ``name``."""
    return next(i.types[0] for i in opv.inputs if i.name == name)


def types_of(opv: OpVersion, name: str) -> tuple[str, ...]:
    """The element types input ``name`` of ``opv`` may have."""
    var = variable_of(opv, name)
    return variables(opv).get(var, (var,))


def draw_elem(rng: np.random.Generator, types: tuple[str, ...]) -> str:
    """One of ``types``, :data:`COMMON` ones three times as likely."""
    weights = np.array([3.0 if t in COMMON else 1.0 for t in types])
    return str(types[int(rng.choice(len(types), p=weights / weights.sum()))])


def has_no_nan(elem: str) -> bool:
    """Whether a NaN result has no value in ``elem`` (integers and float4e2m1)."""
    return V.is_int(elem) or elem.startswith("float4")


def draw_quantized(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values of a quantized type: spread over its whole range, small ones, or only its extremes and 0
    (where uint8 255 meets int8 -128 along K, an int16 sum of two adjacent products saturates on CPUs
    without VNNI); for float types ordinary values with special ones sometimes."""
    if not V.is_int(elem):
        values = V.ordinary(rng, elem, shape)
        return V.with_specials(rng, values, elem) if rng.random() < 0.25 else values
    lo, hi = V.int_range(elem)
    style = rng.choice(["wide", "small", "extremes"], p=[0.45, 0.3, 0.25])
    if style == "wide":
        raw = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
    elif style == "small":
        raw = rng.integers(max(lo, -8), min(hi, 8), size=shape, endpoint=True)
    else:
        raw = np.asarray([lo, hi, 0, hi, lo])[rng.integers(0, 5, size=shape)]
    return np.asarray(raw, dtype=np.int64).astype(numpy_dtype(elem))


def draw_scales(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Scales of ``elem``: powers of two (exact ties), 1/3, short decimals, normal draws, tiny and huge
    ones, rarely negative; 0, ±inf and NaN in :data:`SPECIAL_SCALE_SHARE` of the draws. int32 scales
    (QuantizeLinear's int32 division) are small positive integers; float8e8m0 ones powers of two."""
    size = math.prod(shape)
    if elem == "int32":
        raw = rng.integers(1, 6, size=size).astype(np.float64)
        if rng.random() < SPECIAL_SCALE_SHARE and size:
            raw[int(rng.integers(0, size))] = 0.0
        return V.cast(raw.reshape(shape), elem)
    pool = np.array([2.0 ** int(k) for k in range(-8, 5)] + [1 / 3, 0.1, 0.05, 1.5, 0.007, 3.0])
    style = rng.choice(["pool", "normal", "extreme"], p=[0.7, 0.2, 0.1])
    if style == "pool":
        raw = pool[rng.integers(0, len(pool), size=size)]
    elif style == "normal":
        raw = np.abs(rng.standard_normal(size)) * 0.5 + 1e-3
    else:
        raw = np.asarray([1e-30, 1e-7, 6e4, 1e30])[rng.integers(0, 4, size=size)]
    if elem != "float8e8m0" and rng.random() < 0.05:
        raw = -raw
    if rng.random() < SPECIAL_SCALE_SHARE and size:
        raw = raw.copy()
        raw[int(rng.integers(0, size))] = float(rng.choice([0.0, math.inf, -math.inf, math.nan]))
    return V.cast(raw.reshape(shape), elem)


def draw_zero_points(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Zero points of ``elem``: 0, the type's extremes, its middle, or any value of it (float types:
    mostly 0, as the spec expects of float8)."""
    if not V.is_int(elem):
        raw = np.zeros(shape) if rng.random() < 0.7 else rng.integers(-4, 5, size=shape) / 2.0
        return V.cast(raw, elem)
    lo, hi = V.int_range(elem)
    style = rng.choice(["zero", "extreme", "middle", "any"], p=[0.3, 0.25, 0.15, 0.3])
    if style == "zero":
        raw = np.zeros(shape, dtype=np.int64)
    elif style == "extreme":
        raw = np.asarray([lo, hi])[rng.integers(0, 2, size=shape)]
    elif style == "middle":
        raw = np.full(shape, (lo + hi + 1) // 2, dtype=np.int64)
    else:
        raw = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
    return np.asarray(raw, dtype=np.int64).astype(numpy_dtype(elem))


def optional_zero_point(
    rng: np.random.Generator, elem: str, shape: Callable[[], tuple[int, ...]]
) -> Tensor | None:
    """An optional zero point of ``elem`` (given 3 times in 5), of the shape ``shape()`` draws, an
    initializer or a graph input alike."""
    if rng.random() >= 0.6:
        return None
    zero = draw_zero_points(rng, elem, shape())
    return Tensor(zero, bool(rng.random() < 0.5))


def scales_and_zero_points(
    rng: np.random.Generator, params: dict[str, tuple[tuple[int, ...], str]], scale_elem: str
) -> dict[str, Tensor | None]:
    """``<prefix>_scale`` (of ``scale_elem``) and ``<prefix>_zero_point`` for each prefix of ``params``
    (prefix -> (shape, zero point element type)), each pair initializers or graph inputs together."""
    inputs: dict[str, Tensor | None] = {}
    for prefix, (shape, elem) in params.items():
        const = bool(rng.random() < 0.5)
        inputs[f"{prefix}_scale"] = Tensor(draw_scales(rng, scale_elem, shape), const)
        inputs[f"{prefix}_zero_point"] = Tensor(draw_zero_points(rng, elem, shape), const)
    return inputs


def ties(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values halfway between two neighbours of ``elem`` (k + 0.5 for integers; for 8-bit floats the
    midpoints of consecutive finite values), as float64: where rounding to ``elem`` is a tie."""
    if V.is_int(elem) or numpy_dtype(elem).itemsize != 1:
        return rng.integers(-300, 301, size=shape) + 0.5
    finite = np.arange(256, dtype=np.uint8).view(numpy_dtype(elem)).astype(np.float64)
    finite = np.unique(finite[np.isfinite(finite)])
    midpoints = (finite[:-1] + finite[1:]) / 2
    return midpoints[rng.integers(0, len(midpoints), size=shape)]


def beyond(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values past the range of ``elem`` (below or above), as float64: where its output saturates."""
    k = rng.integers(1, 301, size=shape).astype(np.float64)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    if V.is_int(elem):
        lo, hi = V.int_range(elem)
        return np.where(sign < 0, lo - k, hi + k)
    return sign * float(ml_dtypes.finfo(numpy_dtype(elem)).max) * (1.0 + k / 100.0)


# ---------------------------------------------------------------------------------------------
# rules


def single(shape: tuple[int, ...]) -> bool:
    """One value: a scalar or a 1-element 1-D tensor (ONNX's own tests give zero points as [1] beside
    scalar scales)."""
    return len(shape) == 0 or tuple(shape) == (1,)


def pair_reason(scale: np.ndarray, zero: np.ndarray | None, prefix: str) -> str | None:
    """'zero-point-shape:PREFIX' when a zero point's shape is not its scale's (one value either way is
    the same shape: "Each scale and zero-point pair must have same shape")."""
    if zero is None or scale.shape == zero.shape or (single(scale.shape) and single(zero.shape)):
        return None
    return f"zero-point-shape:{prefix}"


def given(case: Case, name: str) -> np.ndarray | None:
    """Input ``name``'s value, None when absent."""
    t = case.inputs.get(name)
    return None if t is None else t.value


def elem(case: Case, name: str) -> str | None:
    t = case.inputs.get(name)
    return None if t is None else t.elem


def type_reason(case: Case, names: tuple[str, ...]) -> str | None:
    """'type:NAME' for the first input of ``names`` whose element type its variable does not allow, or
    that differs from another input of the same variable."""
    bound: dict[str, str] = {}
    for name in names:
        e = elem(case, name)
        if e is None:
            continue
        var = variable_of(case.opv, name)
        if e not in types_of(case.opv, name) or bound.setdefault(var, e) != e:
            return f"type:{name}"
    return None


def finite_floats(value: np.ndarray) -> np.ndarray:
    """``value`` as float64 (NaN, ±inf kept)."""
    return np.asarray(value).astype(np.float64)


# ---------------------------------------------------------------------------------------------
# features and simplifications of scales, zero points and constants


def zero_point_features(case: Case, names: tuple[str, ...]) -> Iterator[tuple[str, Case]]:
    """'NAME-nonzero' for each zero point holding a value other than 0 (made all zeros)."""
    for name in names:
        z = given(case, name)
        if z is not None and z.size and np.any(finite_floats(z) != 0):
            yield f"{name}-nonzero", case.with_input(name, np.zeros_like(z))


def scale_features(case: Case, names: tuple[str, ...]) -> Iterator[tuple[str, Case]]:
    """'NAME-special' for each scale holding 0, ±inf or NaN (those made 1)."""
    for name in names:
        s = given(case, name)
        if s is None or not s.size:
            continue
        f = finite_floats(s)
        bad = ~np.isfinite(f) | (f == 0)
        if bad.any():
            fixed = np.where(bad, 1.0, f)
            yield f"{name}-special", case.with_input(name, V.cast(fixed, elem(case, name) or "float"))


def const_features(case: Case, names: tuple[str, ...]) -> Iterator[tuple[str, Case]]:
    """'NAME-const' for each input given as an initializer (made a graph input): ORT takes other paths
    for constant weights (packed once at load)."""
    for name in names:
        t = case.inputs.get(name)
        if t is not None and t.const:
            yield f"{name}-const", case.with_input(name, t.value, const=False)


def parameter_simplifications(
    case: Case, scales: tuple[str, ...], zeros: tuple[str, ...]
) -> Iterator[Candidate]:
    """Zero points made 0, scales made 1 (each, keeping its shape), constants made graph inputs."""
    for label, simpler in zero_point_features(case, zeros):
        yield f"{label.removesuffix('-nonzero')} zeros", simpler
    for name in scales:
        s = given(case, name)
        if s is not None and s.size and np.any(finite_floats(s) != 1):
            yield f"{name} ones", case.with_input(name, V.cast(np.ones(s.shape), elem(case, name) or "float"))
    for label, simpler in const_features(case, tuple(case.inputs)):
        yield f"{label.removesuffix('-const')} as input", simpler


def mutate_nan_scale(rng: np.random.Generator, case: Case) -> Case | None:
    """One scale holding NaN where the output is an integer type: the real value is NaN, which has no
    value there (QLinearMatMul, QLinearConv)."""
    names = [n for n, t in case.inputs.items() if n.endswith("_scale") and t is not None and t.value.size]
    if not names or not has_no_nan(output_elems(case)[0]):
        return None
    name = names[int(rng.integers(0, len(names)))]
    s = finite_floats(given(case, name)).copy().reshape(-1)  # type: ignore[arg-type]
    s[int(rng.integers(0, s.size))] = math.nan
    return case.with_input(name, V.cast(s.reshape(given(case, name).shape), elem(case, name) or "float"))  # type: ignore[union-attr]
