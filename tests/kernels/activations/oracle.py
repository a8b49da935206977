"""An oracle for the activations, independent of the kernels: each value of the formula in mpmath at 320
bits, rounded exactly (fractions) to the element type; made fast by a vectorized first answer in long
double (x87's 64-bit significand and the C library's expl, expm1l, log1pl, tanhl; erf and erfc from
Python's math module, the C library's float64 functions) whose bracket decides the rounding of almost
every element, mpmath deciding the rest."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import ml_dtypes
import mpmath
import numpy as np

LD = np.longdouble

TYPES = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
}
_FORMAT = {  # significand bits, smallest normal exponent, largest finite value
    np.dtype(np.float16): (11, -14, Fraction(65504)),
    np.dtype(ml_dtypes.bfloat16): (8, -126, Fraction(float(ml_dtypes.finfo(ml_dtypes.bfloat16).max))),
    np.dtype(np.float32): (24, -126, Fraction(float(np.finfo(np.float32).max))),
    np.dtype(np.float64): (53, -1022, Fraction(float(np.finfo(np.float64).max))),
}


def round_exact(value: Fraction, negative: bool, dtype: np.dtype) -> float:
    """An exact real rounded to nearest even in dtype (inf beyond its range, -0 for a negative value that
    rounds to 0), as a Python float."""
    bits, emin, top = _FORMAT[np.dtype(dtype)]
    if value == 0:
        return -0.0 if negative else 0.0
    magnitude = abs(value)
    exponent = max(magnitude.numerator.bit_length() - magnitude.denominator.bit_length(), emin)
    while exponent > emin and Fraction(2) ** exponent > magnitude:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= magnitude:
        exponent += 1
    quantum = Fraction(2) ** (exponent - bits + 1)
    rounded = round(magnitude / quantum) * quantum
    result = math.inf if rounded > top else float(rounded)
    return -result if value < 0 or (negative and result == 0) else result


def _fraction(value: mpmath.mpf) -> Fraction:
    man, exp = value.man_exp  # the magnitude's
    return (-1 if value < 0 else 1) * Fraction(int(man)) * Fraction(2) ** int(exp)


@dataclass(frozen=True)
class Formula:
    """One activation's formula: mpmath at a float (the exact value, or a Fraction for rational ones) and
    a long double (or float64) first answer with its relative bound."""

    exact: Callable[[float], Any]
    approx: Callable[[np.ndarray], np.ndarray]
    bound: Callable[[np.ndarray], np.ndarray] = field(default=lambda x: np.full(x.shape, 2.0**-56))
    log2_bound: Callable[[np.ndarray], np.ndarray] | None = None
    """An upper bound of log2 |value| (long double), for a transcendental formula whose first answer can
    underflow: where it is below -1100 the value rounds to 0 in every type."""
    rational: bool = False
    """Whether the first answer is 0 only where the exact value is (one rounding of a sum or product
    keeps its sign); a transcendental one's 0 may be an underflow of a value that does not round to 0."""


def _mp(x: float) -> mpmath.mpf:
    return mpmath.mpf(x)


def formulas(alpha: float = 1.0, beta: float = 0.5, gamma: float = 1.0) -> dict[str, Formula]:
    """The formulas by op (snake case), with the attributes given (the float32 values)."""
    a, b, g = LD(alpha), LD(beta), LD(gamma)
    with mpmath.workprec(400):
        root2 = mpmath.sqrt(2)
        c = mpmath.sqrt(2 / mpmath.pi)
        k = mpmath.mpf(44715) / 10**6
    gelu_bound = lambda x: (x.astype(np.float64) ** 2 + 8) * 2.0**-52  # noqa: E731
    frac = Fraction
    log2e = LD(1 / math.log(2))
    log2x = lambda x: np.log2(np.maximum(np.abs(x), LD(2) ** -16000))  # noqa: E731
    return {
        "sigmoid": Formula(
            lambda x: 1 / (1 + mpmath.exp(-_mp(x))),
            lambda x: 1 / (1 + np.exp(-x)),
            log2_bound=lambda x: x * log2e,
        ),
        "tanh": Formula(lambda x: mpmath.tanh(_mp(x)), np.tanh),
        "softplus": Formula(
            lambda x: mpmath.log1p(mpmath.exp(_mp(x))),
            lambda x: np.where(x > 0, x + np.log1p(np.exp(-x)), np.log1p(np.exp(np.minimum(x, 0)))),
            log2_bound=lambda x: x * log2e,
        ),
        "mish": Formula(
            lambda x: _mp(x) * mpmath.tanh(mpmath.log1p(mpmath.exp(_mp(x)))),
            lambda x: (
                x * np.tanh(np.where(x > 0, x + np.log1p(np.exp(-x)), np.log1p(np.exp(np.minimum(x, 0)))))
            ),
            log2_bound=lambda x: log2x(x) + x * log2e,
        ),
        "swish": Formula(
            lambda x: _mp(x) / (1 + mpmath.exp(-mpmath.mpf(alpha) * _mp(x))),
            lambda x: x / (1 + np.exp(-a * x)),
            log2_bound=lambda x: log2x(x) + a * x * log2e,
        ),
        "erf": Formula(
            lambda x: mpmath.erf(_mp(x)),
            lambda x: np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64),
            lambda x: np.full(x.shape, 2.0**-49),
        ),
        "gelu": Formula(
            # beyond |x| = 1e4, erfc(|x| / sqrt 2) < exp(-5e7) (mpmath's erfc overflows there): x or 0
            lambda x: _mp(x) / 2 * mpmath.erfc(-_mp(x) / root2) if abs(x) < 1e4 else max(_mp(x), _mp(0)),
            lambda x: (
                x.astype(np.float64)
                / 2
                * np.frompyfunc(math.erfc, 1, 1)(-x.astype(np.float64) / math.sqrt(2)).astype(np.float64)
            ),
            gelu_bound,
            log2_bound=lambda x: log2x(x) - x * x / 2 * log2e,
        ),
        "gelu_tanh": Formula(
            lambda x: _mp(x) / (1 + mpmath.exp(-2 * c * (_mp(x) + k * _mp(x) ** 3))),
            lambda x: x / (1 + np.exp(-2 * LD(c) * (x + LD(k) * x**3))),
            lambda x: (np.abs(x.astype(np.float64)) ** 3 + 8) * 2.0**-56,
            log2_bound=lambda x: log2x(x) + 2 * LD(c) * (x + LD(k) * x**3) * log2e,
        ),
        "hard_sigmoid": Formula(
            lambda x: min(frac(1), max(frac(0), frac(alpha) * frac(x) + frac(beta))),
            lambda x: np.clip(a * x + b, 0, 1),
            rational=True,
        ),
        "hard_swish": Formula(
            lambda x: frac(x) * min(frac(6), max(frac(0), frac(x) + 3)) / 6,
            lambda x: x * np.clip(x + 3, 0, 6) / 6,
            rational=True,
        ),
        "elu": Formula(
            lambda x: mpmath.mpf(alpha) * mpmath.expm1(_mp(x)) if x < 0 else _mp(x),
            lambda x: np.where(x < 0, a * np.expm1(np.minimum(x, 0)), x),
        ),
        "selu": Formula(
            lambda x: mpmath.mpf(gamma) * (mpmath.mpf(alpha) * mpmath.expm1(_mp(x)) if x <= 0 else _mp(x)),
            lambda x: g * np.where(x <= 0, a * np.expm1(np.minimum(x, 0)), x),
        ),
        "celu": Formula(
            lambda x: mpmath.mpf(alpha) * mpmath.expm1(_mp(x) / mpmath.mpf(alpha)) if x < 0 else _mp(x),
            lambda x: np.where(x < 0, a * np.expm1(np.minimum(x, 0) / a), x),
        ),
    }


def exact_rounded(formula: Formula, x: float, dtype: np.dtype) -> float:
    """The formula's exact value at finite x rounded once to dtype (mpmath at 320 bits)."""
    with mpmath.workprec(320):
        value = formula.exact(x)
        if isinstance(value, Fraction):
            return round_exact(value, value < 0, dtype)
        value = mpmath.mpf(value)
        if abs(value) < mpmath.mpf(2) ** -1100:  # below half the smallest subnormal of every type
            return -0.0 if value < 0 else 0.0
        if abs(value) > mpmath.mpf(2) ** 1100:  # beyond the largest value of every type
            return -math.inf if value < 0 else math.inf
        return round_exact(_fraction(value), value < 0, dtype)


def expected(formula: Formula, x: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """The correctly rounded values at finite x (a 1-D array of dtype's values) as an array of dtype, and
    how many elements mpmath decided."""
    xl = x.astype(LD)
    with np.errstate(all="ignore"):
        approx = np.asarray(formula.approx(xl), dtype=LD)
        margin = np.abs(approx) * np.asarray(formula.bound(x), dtype=LD)
        low = np.nextafter((approx - margin).astype(np.float64), -np.inf)
        high = np.nextafter((approx + margin).astype(np.float64), np.inf)
        if np.dtype(dtype) == np.float64:
            low, high = (approx - margin).astype(np.float64), (approx + margin).astype(np.float64)
        r_low, r_high = low.astype(dtype), high.astype(dtype)
    result = r_low.copy()
    doubt = (r_low != r_high) | ~np.isfinite(approx)  # by value: a bracket around 0 holds both zeros
    if not formula.rational:
        underflow = (approx == 0) & (x != 0)
        if formula.log2_bound is not None and np.any(underflow):
            underflow &= ~(formula.log2_bound(xl) < -1100)  # keeps the formula's signed zero
        doubt |= underflow
    result[approx == 0] = approx[approx == 0].astype(np.float64).astype(dtype)
    for i in np.flatnonzero(doubt):
        result[i] = exact_rounded(formula, float(x[i]), dtype)
    return result, int(doubt.sum())


def all_values(dtype: np.dtype) -> np.ndarray:
    """Every finite value of a 16-bit type."""
    codes = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    return codes[np.isfinite(codes.astype(np.float32))]


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many values of the type lie between got and want (0 when the same, any zeros equal)."""
    bits = 8 * got.dtype.itemsize
    signed = np.dtype(f"i{got.dtype.itemsize}")

    def order(v: np.ndarray) -> np.ndarray:
        i = v.view(signed).astype(np.int64)
        return np.where(i < 0, -(i & ((1 << (bits - 1)) - 1)), i)

    return np.abs(order(got) - order(want))
