"""Tensor values for fuzz cases: ordinary values and special ones (NaN, ±Inf, extremes of the type, -0.0)
for every element type, drawn from a numpy Generator; and the simplifications the shrinker tries."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from customops.dtypes import numpy_dtype

_STRINGS = ("a", "bc", "xyz", "0", "hello", "Ω", "a b")
_SPECIAL_STRINGS = ("", "é\u0301", "x" * 40)

FLOAT_KINDS = "f"


def is_float(elem: str) -> bool:
    """Floating element types (float, double, float16, bfloat16, float8*, float4)."""
    return elem in ("float", "double", "float16", "bfloat16") or elem.startswith(("float8", "float4"))


def is_int(elem: str) -> bool:
    """Integer element types, including the 4- and 2-bit ones."""
    return elem.startswith(("int", "uint"))


def _finfo(elem: str) -> ml_dtypes.finfo:
    return ml_dtypes.finfo(numpy_dtype(elem))


def _iinfo(elem: str) -> ml_dtypes.iinfo:
    return ml_dtypes.iinfo(numpy_dtype(elem))


def int_range(elem: str) -> tuple[int, int]:
    """(min, max) of an integer element type."""
    info = _iinfo(elem)
    return int(info.min), int(info.max)


def has_nan(elem: str) -> bool:
    return is_float(elem) and bool(np.isnan(np.array(np.nan).astype(numpy_dtype(elem)).astype(np.float64)))


def has_inf(elem: str) -> bool:
    return is_float(elem) and bool(np.isinf(np.array(np.inf).astype(numpy_dtype(elem)).astype(np.float64)))


def special_values(elem: str) -> list[object]:
    """The special values of ``elem``: NaN, ±Inf, the extremes, the smallest normal and subnormal, -0.0."""
    if elem == "string":
        return list(_SPECIAL_STRINGS)
    if elem == "bool":
        return []
    if is_int(elem):
        return _int_specials(elem)
    info = _finfo(elem)
    out: list[object] = []
    if has_nan(elem):
        out.append(math.nan)
    if has_inf(elem):
        out += [math.inf, -math.inf]
    big = float(info.max)
    out.append(big)
    if float(np.array(-big).astype(numpy_dtype(elem)).astype(np.float64)) == -big:
        out.append(-big)
    out.append(float(info.smallest_normal))
    sub = float(info.smallest_subnormal)
    if sub != float(info.smallest_normal):
        out.append(sub)
    neg_zero = np.array(-0.0).astype(numpy_dtype(elem)).astype(np.float64)
    if math.copysign(1.0, float(neg_zero)) < 0:
        out.append(-0.0)
    return out


def _int_specials(elem: str) -> list[int]:
    lo, hi = int_range(elem)
    if hi < 127:  # 4- and 2-bit types: every value is an extreme
        return []
    return [v for v in (lo, hi) if v != 0]


def cast(values: np.ndarray | list[object], elem: str) -> np.ndarray:
    """``values`` (Python numbers, float64 or strings) as an array of ``elem``, saturating integers."""
    dtype = numpy_dtype(elem)
    if elem == "string":
        return np.array([str(v) for v in np.asarray(values, dtype=object).ravel()], dtype=object).reshape(
            np.shape(values)
        )
    arr = np.asarray(values, dtype=np.float64)
    if elem == "bool":
        return arr != 0
    if is_int(elem):
        lo, hi = int_range(elem)
        ints = np.nan_to_num(np.rint(arr), nan=0.0, posinf=float(hi), neginf=float(lo)).ravel().tolist()
        exact = [min(max(int(v), lo), hi) for v in ints]  # 64-bit extremes are not exact in float64
        return np.array(exact, dtype=np.int64 if lo < 0 else np.uint64).reshape(arr.shape).astype(dtype)
    with np.errstate(over="ignore"):  # values past the type's range become inf, as in the type's own cast
        return arr.astype(dtype)


def ordinary(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Ordinary values of ``elem``: small integers, normal values or values spread over the type's range."""
    return np.asarray(_ordinary(rng, elem, shape)).reshape(shape)


def _ordinary(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    size = math.prod(shape)
    if elem == "string":
        return np.array([_STRINGS[i] for i in rng.integers(0, len(_STRINGS), size)], dtype=object).reshape(
            shape
        )
    if elem == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    style = rng.choice(["small", "normal", "wide"], p=[0.4, 0.4, 0.2])
    if is_int(elem):
        lo, hi = int_range(elem)
        if style == "wide":
            raw = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)
            return raw.astype(numpy_dtype(elem))
        span = 8 if style == "small" else 100
        return cast(rng.integers(-span, span + 1, size=shape).astype(np.float64), elem)
    if style == "small":
        return cast(rng.integers(-8, 9, size=shape).astype(np.float64), elem)
    if style == "normal":
        return cast(rng.standard_normal(shape) * 10.0, elem)
    top = math.log2(float(_finfo(elem).max))
    exponent = rng.uniform(-top / 2, top / 2, size=shape)
    signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return cast(signs * np.exp2(exponent), elem)


def with_specials(rng: np.random.Generator, values: np.ndarray, elem: str) -> np.ndarray:
    """``values`` with one to three positions set to special values of ``elem`` (a copy)."""
    specials = special_values(elem)
    if not specials or values.size == 0:
        return values
    out = values.copy().reshape(-1)
    count = int(rng.integers(1, min(3, out.size) + 1))
    where = rng.choice(out.size, size=count, replace=False)
    for w in where:
        v = specials[int(rng.integers(0, len(specials)))]
        out[w] = cast(np.array([v], dtype=object if elem == "string" else np.float64), elem)[0]
    return out.reshape(values.shape)


def special_mask(values: np.ndarray, elem: str) -> np.ndarray:
    """Where ``values`` holds a special value of ``elem`` (bool array of the same shape)."""
    if values.size == 0 or elem == "bool":
        return np.zeros(values.shape, dtype=bool)
    if elem == "string":
        return np.isin(values.astype(str), np.array(_SPECIAL_STRINGS, dtype=str))
    if is_int(elem):
        specials = _int_specials(elem)
        if not specials:
            return np.zeros(values.shape, dtype=bool)
        return np.isin(values, np.array(specials, dtype=values.dtype))
    f = values.astype(np.float64)
    info = _finfo(elem)
    tiny = float(info.smallest_normal)
    return (
        ~np.isfinite(f)
        | (np.abs(f) >= float(info.max))
        | ((f != 0) & (np.abs(f) <= tiny))
        | ((f == 0) & np.signbit(f))
    )


def simple(shape: tuple[int, ...], elem: str) -> np.ndarray:
    """Easy-to-read values: 1, 2, 3, ... (strings 's1', 's2', ...; bool alternating)."""
    size = math.prod(shape)
    if elem == "string":
        return np.array([f"s{i + 1}" for i in range(size)], dtype=object).reshape(shape)
    if elem == "bool":
        return (np.arange(size) % 2 == 0).reshape(shape)
    base = np.arange(1, size + 1, dtype=np.float64)
    if is_int(elem):
        lo, hi = int_range(elem)
        base = lo + (base - lo) % (hi - lo + 1) if hi - lo < size + 1 else base
    return cast(base.reshape(shape), elem)


def replace_specials(values: np.ndarray, elem: str) -> np.ndarray:
    """``values`` with every special value replaced by an ordinary one (1, or 's' for strings)."""
    mask = special_mask(values, elem)
    if not mask.any():
        return values
    out = values.copy()
    out[mask] = "s" if elem == "string" else cast(np.array([1.0]), elem)[0]
    return out


def convert(values: np.ndarray, elem: str, to: str) -> np.ndarray | None:
    """``values`` of ``elem`` converted to ``to`` (None when that makes no sense, e.g. strings)."""
    if elem == to:
        return values
    if elem == "string" or to == "string":
        return None
    return cast(values.astype(np.float64), to)


def value_complexity(values: np.ndarray, elem: str) -> int:
    """How many elements are not small whole numbers (the shrinker prefers fewer)."""
    if values.size == 0 or elem in ("bool",):
        return 0
    if elem == "string":
        return int(sum(1 for s in values.ravel().tolist() if not (isinstance(s, str) and len(s) <= 3)))
    f = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        plain = np.isfinite(f) & (np.abs(f) <= 64) & (f == np.round(f)) & ~((f == 0) & np.signbit(f))
    return int(values.size - np.count_nonzero(plain))
