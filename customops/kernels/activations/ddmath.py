"""Double-double arithmetic on numpy float64 arrays, and the functions the activations need in it.

A double-double (:class:`DD`) is an unevaluated sum ``hi + lo`` of two float64 arrays with
``|lo| <= ulp(hi) / 2``: about 106 bits. The operations are the classical error-free transformations
(Knuth's two-sum, Dekker's two-product with Veltkamp's split, since numpy has no fused multiply-add) and
the sums, products and quotients built on them (relative error below 2**-100 each, without overflow or
underflow).

The functions, each with a relative error below 2**-90 where it is used (the module's tests measure
them against mpmath on dense samples):

- :func:`exp_parts`: ``exp(a) = M * 2**k`` with ``M`` a double-double in [1, 2.01): ``a = (64 k + j) ln2
  / 64 + r`` (ln2 / 64 in three pieces whose first two have trailing zeros, so that the reduction is
  exact), ``2**(j/64)`` from a table (computed once with the decimal module), ``expm1(r)`` by its Taylor
  series (|r| <= 0.0055: the terms after r**10 / 10! are below 2**-95 of r; the first six coefficients
  in double-double, the rest in float64, where their rounding is below 2**-96 of the sum).
- :func:`expm1`, :func:`exp`, :func:`tanh` (``expm1(2t) / (expm1(2t) + 2)``), :func:`log1p_small`
  (one Newton step on float64's log1p, all of whose terms keep their relative accuracy).
customops.kernels.activations.erfmath builds erf and erfc on these.
"""

from __future__ import annotations

import functools
from decimal import Decimal, localcontext
from typing import NamedTuple

import numpy as np

__all__ = [
    "DD",
    "add",
    "add_float",
    "dd",
    "div",
    "exp",
    "exp_constants",
    "exp_parts",
    "expm1",
    "fast_two_sum",
    "from_decimal",
    "horner",
    "ldexp",
    "log1p_small",
    "mul",
    "mul_float",
    "neg",
    "scaled",
    "tanh",
    "two_prod",
    "two_sum",
]


class DD(NamedTuple):
    """``hi + lo``: float64 arrays (or scalars) of one shape, ``|lo| <= ulp(hi) / 2``."""

    hi: np.ndarray
    lo: np.ndarray


def dd(value: np.ndarray | float) -> DD:
    """A float64 value as a double-double (its ``lo`` zero)."""
    hi = np.asarray(value, dtype=np.float64)
    return DD(hi, np.zeros_like(hi))


def from_decimal(value: Decimal) -> DD:
    """A decimal constant as the double-double nearest it (scalars)."""
    with localcontext() as context:
        context.prec = 80
        hi = float(value)
        lo = float(value - Decimal(hi))
    return DD(np.float64(hi), np.float64(lo))


def two_sum(a: np.ndarray, b: np.ndarray) -> DD:
    """``a + b`` exactly (Knuth): the rounded sum and its error."""
    s = a + b
    bb = s - a
    return DD(s, (a - (s - bb)) + (b - bb))


def fast_two_sum(a: np.ndarray, b: np.ndarray) -> DD:
    """``a + b`` exactly when ``|a| >= |b|`` (or a is 0) (Dekker)."""
    s = a + b
    return DD(s, b - (s - a))


_SPLIT = 134217729.0  # 2**27 + 1
_SPLIT_LIMIT = 2.0**995


def _halves(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split of a into two 26-bit halves; values above 2**995 are split scaled down (exact)."""
    big = np.abs(a) > _SPLIT_LIMIT
    if np.any(big):
        scale = np.where(big, 2.0**-60, 1.0)
        c = _SPLIT * (a * scale)
        hi = (c - (c - a * scale)) / scale
        return hi, a - hi
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray) -> DD:
    """``a * b`` exactly (Dekker), without overflow or underflow of the product."""
    p = a * b
    ah, al = _halves(a)
    bh, bl = _halves(b)
    with np.errstate(invalid="ignore", over="ignore"):
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return DD(p, np.where(np.isfinite(err), err, 0.0))


def add(a: DD, b: DD) -> DD:
    """``a + b`` (the accurate sum: both parts summed exactly)."""
    s, e = two_sum(a.hi, b.hi)
    t, f = two_sum(a.lo, b.lo)
    e = e + t
    s, e = fast_two_sum(s, e)
    return fast_two_sum(s, e + f)


def add_float(a: DD, b: np.ndarray | float) -> DD:
    """``a + b`` for a float64 b."""
    s, e = two_sum(a.hi, b)
    return fast_two_sum(s, e + a.lo)


def neg(a: DD) -> DD:
    return DD(-a.hi, -a.lo)


def mul(a: DD, b: DD) -> DD:
    """``a * b``."""
    p, e = two_prod(a.hi, b.hi)
    return fast_two_sum(p, e + (a.hi * b.lo + a.lo * b.hi))


def mul_float(a: DD, b: np.ndarray | float) -> DD:
    """``a * b`` for a float64 b."""
    p, e = two_prod(a.hi, np.asarray(b, dtype=np.float64))
    return fast_two_sum(p, e + a.lo * b)


def div(a: DD, b: DD) -> DD:
    """``a / b`` (three quotient digits: relative error below 2**-104)."""
    q1 = a.hi / b.hi
    r = add(a, neg(mul_float(b, q1)))
    q2 = r.hi / b.hi
    r = add(r, neg(mul_float(b, q2)))
    q3 = r.hi / b.hi
    return add_float(fast_two_sum(q1, q2), q3)


def ldexp(a: DD, k: np.ndarray) -> DD:
    """``a * 2**k`` (exact unless it overflows or leaves the normal range)."""
    return DD(np.ldexp(a.hi, k), np.ldexp(a.lo, k))


def scaled(a: DD, factor: float) -> DD:
    """``a * factor`` for a power of two ``factor`` (exact in the normal range)."""
    return DD(a.hi * factor, a.lo * factor)


def horner(coefficients: list[DD], t: DD) -> DD:
    """``sum(c_n t**n)`` for coefficients c_0, c_1, ... (double-doubles broadcasting against t)."""
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = add(mul(acc, t), c)
    return acc


# ---------------------------------------------------------------------------------------------
# exp and expm1

_STEPS = 64
_EXP_LIMIT = 1500.0  # |a| beyond which exp saturates for every use here (the callers clamp to it)


@functools.cache
def exp_constants() -> tuple[float, float, float, float, np.ndarray, np.ndarray, list[DD]]:
    """ln2 / 64 in three pieces (the first two with 35 significant bits, so that n times each is exact
    for |n| < 2**18), 64 / ln2, the table 2**(j/64) as double-doubles, and 1/n! for n = 1..5."""
    with localcontext() as context:
        context.prec = 60
        ln2 = Decimal(2).ln()
        step = ln2 / _STEPS
        pieces = []
        rest = step
        for _ in range(2):
            piece = float(rest)
            mantissa, exponent = np.frexp(piece)
            piece = float(np.ldexp(np.round(np.ldexp(mantissa, 35)), int(exponent) - 35))
            pieces.append(piece)
            rest -= Decimal(piece)
        pieces.append(float(rest))
        table = [(ln2 * j / _STEPS).exp() for j in range(_STEPS)]
        hi = np.array([float(v) for v in table])
        lo = np.array([float(v - Decimal(float(v))) for v in table])
        inverse = [from_decimal(Decimal(1) / Decimal(n)) for n in (1, 2, 6, 24, 120)]
        return pieces[0], pieces[1], pieces[2], float(1 / step), hi, lo, inverse


_TAIL = tuple(1.0 / f for f in (720.0, 5040.0, 40320.0, 362880.0, 3628800.0))  # 1/6! .. 1/10!


def _expm1_reduced(r: DD) -> DD:
    """``expm1(r)`` for |r| <= 0.0055."""
    inverse = exp_constants()[6]
    tail = np.float64(_TAIL[-1])
    for c in reversed(_TAIL[:-1]):
        tail = tail * r.hi + c
    acc = dd(tail)
    for c in reversed(inverse):  # 1/120, 1/24, 1/6, 1/2, 1
        acc = add(mul(acc, r), c)
    return mul(acc, r)


def _reduce(a: DD) -> tuple[np.ndarray, np.ndarray, DD]:
    """``a = (64 k + j) ln2 / 64 + r``: k, j and r (|r| <= 0.0055), for |a| <= 1500."""
    c1, c2, c3, inv, _, _, _ = exp_constants()
    n = np.rint(a.hi * inv)
    r = two_sum(a.hi - n * c1, -(n * c2))  # a.hi - n c1 is exact (Sterbenz), and n c2 too
    r = add_float(r, a.lo - n * c3)
    j = np.mod(n, _STEPS)
    k = ((n - j) / _STEPS).astype(np.int64)
    return k, j.astype(np.int64), r


def exp_parts(a: DD) -> tuple[np.ndarray, DD]:
    """``exp(a) = m * 2**k``: (k, m), m a double-double in [1, 2.02); a clamped to [-1500, 1500]."""
    a = _clamped(a)
    k, j, r = _reduce(a)
    _, _, _, _, hi, lo, _ = exp_constants()
    t = DD(hi[j], lo[j])
    return k, add(t, mul(t, _expm1_reduced(r)))


def exp(a: DD) -> DD:
    """``exp(a)`` (0 below the subnormal range, inf above the float64 range)."""
    k, m = exp_parts(a)
    with np.errstate(over="ignore"):
        return ldexp(m, k)


def expm1(a: DD) -> DD:
    """``exp(a) - 1`` with its relative accuracy at every size (for a below 1500)."""
    a = _clamped(a)
    k, j, r = _reduce(a)
    _, _, _, _, hi, lo, _ = exp_constants()
    t = DD(hi[j], lo[j])
    over = k > 1023  # exp(a) beyond the float64 range
    k = np.where(over, 0, k)
    base = add_float(ldexp(t, k), -1.0)  # 2**k t - 1: exactly 0 when k = j = 0
    value = add(base, ldexp(mul(t, _expm1_reduced(r)), k))
    return DD(np.where(over, np.inf, value.hi), np.where(over, 0.0, value.lo))


def _clamped(a: DD) -> DD:
    """a within [-1500, 1500] (a NaN, which only unused lanes of a masked evaluation hold, as -1500)."""
    inside = np.abs(a.hi) <= _EXP_LIMIT
    if np.all(inside):
        return a
    return DD(
        np.where(inside, a.hi, np.where(a.hi > 0, _EXP_LIMIT, -_EXP_LIMIT)), np.where(inside, a.lo, 0.0)
    )


def tanh(a: DD) -> DD:
    """``tanh(a)``: ``expm1(2t) / (expm1(2t) + 2)`` for t = |a| (at most 40: beyond, the result differs
    from 1 by less than 2**-230), with a's sign."""
    sign = np.where(a.hi < 0, -1.0, 1.0)
    t = DD(np.minimum(np.abs(a.hi), 40.0), np.where(np.abs(a.hi) > 40.0, 0.0, a.lo * sign))
    e = expm1(scaled(t, 2.0))
    q = div(e, add_float(e, 2.0))
    return DD(q.hi * sign, q.lo * sign)


def log1p_small(e: DD) -> DD:
    """``log(1 + e)`` for 0 <= e <= 1: y0 = float64 log1p(e), then y0 + w with
    ``w = (1 + e) exp(-y0) - 1 = e + expm1(-y0) (1 + e)``, whose terms keep their relative accuracy
    (log(1 + w) = w - w**2 / 2, and |w| is below 2**-50 y0)."""
    y0 = np.log1p(e.hi)
    m = expm1(dd(-y0))
    w = add(e, add(m, mul(m, e)))
    return add_float(w, y0)
