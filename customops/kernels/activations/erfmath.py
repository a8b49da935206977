"""erf and erfc in float64 and in double-double, from Taylor tables (numpy has no erf).

Two tables, made once with the decimal module at 60 digits and kept as double-doubles:

- erf around x0 = i / 16, i = 0..16: ``erf(x0 + t) = sum c_n t**n`` with c_0 = erf(x0) (Kummer's
  series ``2x / sqrt(pi) exp(-x**2) sum (2x**2)**n / (2n+1)!!``, all terms positive) and
  ``c_n = 2 / sqrt(pi) exp(-x0**2) (-1)**(n-1) H_(n-1)(x0) / n!`` (Hermite polynomials);
- ``g(z) = exp(z**2) erfc(z)`` around z0 = i / 16, i = 16..440 (z in [1, 27.5]): ``a_0 = g(z0)`` by
  the continued fraction ``1 / (sqrt(pi) (z + (1/2) / (z + 1 / (z + (3/2) / ...))))`` (1600 / z0**2 + 60
  terms), and ``(n + 1) a_(n+1) = 2 z0 a_n + 2 a_(n-1)`` (from g' = 2 z g - 2 / sqrt(pi)).

With |t| <= 1/32, the terms after degree 21 are below 2**-100 of the value: :func:`erf` and
:func:`erfc_parts` (double-double, relative error below 2**-90). The float64 evaluations
(:func:`erf_fast`, :func:`erfc_fast`, :func:`series_fast`) use :func:`fast_table`, the same series
re-expanded around multiples of 1/64 to degree 7 (|t| <= 1/128: the next term is below 2**-56 of the
value; with Horner's roundings and exp's, the results are within 2**-48, 2**-46 for erfc below z = 1
where 1 - erf multiplies erf's error by up to 5.4). Beyond z = 27.5, erfc(z) < 2**-1090 and the results
are 0 (and erf is +-1).
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext

import numpy as np

from customops.kernels.activations import ddmath
from customops.kernels.activations.ddmath import DD

__all__ = ["PI", "erf", "erf_fast", "erfc_fast", "erfc_parts", "fast_table", "series_fast", "tables"]

PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863")
"""pi to 85 digits."""

_PER_UNIT = 16
_G_FIRST = 16  # g's table starts at z = 1
_G_LAST = 440  # and ends at z = 27.5
_DEGREE = 21


def _kummer_erf(x: Decimal, root_pi: Decimal) -> Decimal:
    x2 = x * x
    term = Decimal(1)
    total = Decimal(0)
    n = 0
    while term > Decimal(10) ** -70 * (total or 1):
        total += term
        term = term * 2 * x2 / (2 * n + 3)
        n += 1
    return 2 * x / root_pi * (-x2).exp() * total


def _g_fraction(z: Decimal, root_pi: Decimal) -> Decimal:
    depth = int(1600 / (z * z)) + 60
    k = z
    for n in range(depth, 0, -1):
        k = z + Decimal(n) / 2 / k
    return 1 / (root_pi * k)


def _erf_row(x0: Decimal, root_pi: Decimal) -> list[Decimal]:
    scale = 2 / root_pi * (-x0 * x0).exp()
    hermite = [Decimal(1), 2 * x0]
    for n in range(1, _DEGREE):
        hermite.append(2 * x0 * hermite[n] - 2 * n * hermite[n - 1])
    row = [_kummer_erf(x0, root_pi)]
    factorial = Decimal(1)
    for n in range(1, _DEGREE + 1):
        factorial *= n
        row.append(scale * (-1) ** (n - 1) * hermite[n - 1] / factorial)
    return row


def _g_row(z0: Decimal, root_pi: Decimal) -> list[Decimal]:
    row = [_g_fraction(z0, root_pi)]
    row.append(2 * z0 * row[0] - 2 / root_pi)
    for n in range(1, _DEGREE):
        row.append((2 * z0 * row[n] + 2 * row[n - 1]) / (n + 1))
    return row


def _as_dd(rows: list[list[Decimal]]) -> DD:
    hi = np.array([[float(v) for v in row] for row in rows])
    lo = np.array([[float(v - Decimal(float(v))) for v in row] for row in rows])
    return DD(hi, lo)


@functools.cache
def tables() -> tuple[DD, DD]:
    """The erf table (17 rows) and the g table (425 rows), each row c_0 .. c_21 of one center."""
    with localcontext() as context:
        context.prec = 60
        root_pi = PI.sqrt()
        erf_rows = [_erf_row(Decimal(i) / _PER_UNIT, root_pi) for i in range(_G_FIRST + 1)]
        g_rows = [_g_row(Decimal(i) / _PER_UNIT, root_pi) for i in range(_G_FIRST, _G_LAST + 1)]
    return _as_dd(erf_rows), _as_dd(g_rows)


_FINE = 64  # the fast table's centers: multiples of 1/64
_FAST_DEGREE = 7


@functools.cache
def fast_table() -> np.ndarray:
    """The float64 evaluations' table, by degree (8 rows) and center: columns 0..64 the erf series around
    k / 64 (k = 0..64), then columns 65.. the g series around k / 64 (k = 64..1760), degree 7 each (|t| <= 1/128: the next term is below
    2**-56 of the value). Each row is the coarse double-double series re-expanded around its center."""
    erf_table, g_table = tables()
    rows = [_recenter(erf_table, 0, k / _FINE) for k in range(_FINE + 1)]
    rows += [_recenter(g_table, _G_FIRST, k / _FINE) for k in range(_FINE, _G_LAST * _FINE // _PER_UNIT + 1)]
    return np.ascontiguousarray(np.array(rows).T)  # a row per degree: one gather per coefficient


def _recenter(table: DD, first: int, center: float) -> list[float]:
    """The Taylor coefficients 0.._FAST_DEGREE around ``center`` of the coarse series nearest it."""
    row = int(np.clip(round(center * _PER_UNIT), first, first + table.hi.shape[0] - 1)) - first
    coefficients = table.hi[row] + table.lo[row]
    shift = center - (row + first) / _PER_UNIT
    out = []
    for m in range(_FAST_DEGREE + 1):
        total = 0.0
        for n in range(_DEGREE, m - 1, -1):  # sum of C(n, m) c_n shift**(n - m), small terms first
            total += math.comb(n, m) * coefficients[n] * shift ** (n - m)
        out.append(total)
    return out


def series_fast(z: np.ndarray) -> np.ndarray:
    """For z >= 0 (float64): erf(z) below 1, g(z) = exp(z**2) erfc(z) from 1 on (up to 27.5)."""
    table = fast_table()
    z = np.minimum(z, _G_LAST / _PER_UNIT)
    k = np.rint(z * _FINE)
    t = z - k / _FINE  # exact: z and the center are within a factor 2 (or the center is 0)
    row = k.astype(np.intp) + (z >= 1.0)
    acc = table[_FAST_DEGREE].take(row)
    for n in range(_FAST_DEGREE - 1, -1, -1):
        acc *= t
        acc += table[n].take(row)
    return acc


def _row_index(z: np.ndarray, first: int, last: int) -> np.ndarray:
    return np.clip(np.rint(z * _PER_UNIT), first, last).astype(np.intp)


def _series(table: DD, first: int, last: int, z: DD) -> DD:
    index = _row_index(z.hi, first, last)
    t = ddmath.add_float(DD(z.hi, z.lo), -index / _PER_UNIT)
    rows = index - first
    coefficients = [DD(table.hi[rows, n], table.lo[rows, n]) for n in range(_DEGREE + 1)]
    return ddmath.horner(coefficients, t)


def erf_fast(x: np.ndarray, square: np.ndarray) -> np.ndarray:
    """erf(x) in float64 (relative error below 2**-48), given ``square`` = x**2 (exact for the inputs of
    float32 and narrower types, whose squares fit a float64)."""
    a = np.abs(x)
    s = series_fast(a)
    with np.errstate(under="ignore"):
        result = np.where(a < 1.0, s, 1.0 - np.exp(-square) * s)
    return np.copysign(result, x)


def erfc_fast(z: np.ndarray, square: np.ndarray) -> np.ndarray:
    """erfc(z) for z >= 0 in float64 (relative error below 2**-48), given ``square`` = z**2 exactly (an
    erfc of the Gelu tail takes z = |x| / sqrt(2) and square = x**2 / 2)."""
    s = series_fast(z)
    with np.errstate(under="ignore"):
        return np.where(z < 1.0, 1.0 - s, np.exp(-square) * s)


def erf(x: DD) -> DD:
    """erf(x) in double-double (relative error below 2**-90)."""
    erf_table, g_table = tables()
    sign = np.where(x.hi < 0, -1.0, 1.0)
    z = DD(np.abs(x.hi), x.lo * sign)
    small = z.hi < 1.0
    near = _series(erf_table, 0, _G_FIRST, z)
    far = ddmath.add_float(ddmath.neg(_tail(g_table, z, ddmath.mul(z, z))), 1.0)
    return DD(np.where(small, near.hi, far.hi) * sign, np.where(small, near.lo, far.lo) * sign)


def erfc_parts(z: DD, square: DD) -> tuple[np.ndarray, DD]:
    """erfc(z) = m * 2**k for z >= 0: (k, m), m a double-double within 2**-90 (relative), given
    ``square`` = z**2; the scaling is left to the caller, so that a product with erfc far below the float64
    range keeps its significand."""
    erf_table, g_table = tables()
    small = z.hi < 1.0
    near = ddmath.add_float(ddmath.neg(_series(erf_table, 0, _G_FIRST, z)), 1.0)
    k, far = _tail_parts(g_table, z, square)
    return np.where(small, 0, k), DD(np.where(small, near.hi, far.hi), np.where(small, near.lo, far.lo))


def _tail_parts(g_table: DD, z: DD, square: DD) -> tuple[np.ndarray, DD]:
    """exp(-square) g(z) as (k, m) (m = 0 where z > 27.5)."""
    inside = z.hi <= _G_LAST / _PER_UNIT
    zc = DD(np.minimum(z.hi, _G_LAST / _PER_UNIT), np.where(inside, z.lo, 0.0))
    g = _series(g_table, _G_FIRST, _G_LAST, zc)
    k, m = ddmath.exp_parts(ddmath.neg(square))
    value = ddmath.mul(m, g)
    return k, DD(np.where(inside, value.hi, 0.0), np.where(inside, value.lo, 0.0))


def _tail(g_table: DD, z: DD, square: DD) -> DD:
    """exp(-square) g(z) (0 where z > 27.5)."""
    k, m = _tail_parts(g_table, z, square)
    with np.errstate(under="ignore"):
        return ddmath.ldexp(m, k)
