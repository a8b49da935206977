"""Compiled loops of the activations (customops.kernels.activations): Sigmoid, Tanh, Mish, Swish, Erf,
Gelu (both forms), HardSigmoid, HardSwish, Elu, Selu and Celu (alpha > 0) of float32 inputs (all but
Softplus), and the one rounding of every activation's float64 values to float32 (:func:`round_float32`).

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). They
compute in float64 without a call to the C library, so that the loops are vectorized (numba has no vector
exp), and index from 0 (a range from ``start`` would make numba check for negative indices, and LLVM then
gathers and scatters instead of loading and storing). Each loop works on blocks of :data:`BLOCK`
elements, each counting its elements in doubt, so that the caller searches only the blocks that have
any: Sigmoid, Tanh, Mish, Swish and Gelu's tanh form in one pass (:func:`sigmoid_block`,
:func:`tanh_block`, :func:`mish_block`, :func:`logistic_block`), Erf and Gelu in two per part of :data:`PART` elements
(:func:`series_block`: erfmath's table gathered, then the arithmetic of erfmath.erf_fast and gaussian's
_gelu_fast, with the exp below and within their kernels' bounds), HardSigmoid and HardSwish in the numpy
path's operations (:func:`hard_block`), Elu, Selu and Celu with the expm1 below (:func:`elu_block`).

**exp(-a)** for a float64 ``0 <= a <= LIMIT`` (:func:`exp_parts`; Sigmoid's a is |x| clamped): ``k =
rint(a / ln2)`` (0 to 159), ``r = k ln2 - a`` (``|r| <= 0.35``), ``exp(-a) = 2**-k exp(r)`` and ``exp(r)
~ P(r) / P(-r)``, the [6/6] Padé approximant
``P(r) = 665280 + 332640 r + 75600 r**2 + 10080 r**3 + 840 r**4 + 42 r**5 + r**6`` (integer coefficients,
exact in float64), as ``E + O`` and ``E - O`` with ``E`` its even and ``O`` its odd part. ``2**-k`` is
a product of three integers ``2**m`` (m <= 53) converted to float64 and 2**-159 (numba has no scalar bit
cast to build it from its exponent bits). The error, with ``u = 2**-53``:

- reduction: ``k ln2`` with ln2 in two pieces, the first (``LN2_HI``) of 29 bits, so that ``k LN2_HI``
  is exact (k < 2**24) and ``k LN2_HI - a`` too, for any float64 a: k >= 1 needs a >= 0.34, a multiple of
  2**-54, as ``k LN2_HI`` is, and their difference is below 0.35 < 2**53 * 2**-54 (``r = -a`` exactly
  when k = 0); adding ``k LN2_LO`` costs at most half an ulp of r plus ``k |LN2_LO| u`` and the piece's
  own error (below 2**-77): exp(r) moves by at most 0.18u;
- Padé: ``exp(r) Q(r) - P(r) = r**13 / 12! * int_0^1 t**6 (1 - t)**6 e**(tr) dt`` for the normalized
  approximant (Q = P(-r) / 665280, Perron), so that its relative error is at most ``|r|**13 (6!)**2
  e**0.35 / (12! 13! Q(r) exp(r)) < 2**-61`` on ``|r| <= 0.35`` (Q(r) exp(r) >= 0.83);
- evaluation: E by Horner in ``r**2`` (one rounding): its terms after 665280 are below 1.4 % of it, so the
  computed E is within ``u + 8u * 0.014 < 1.12u``; O's inner sum within ``1.02u``, O within ``2.02u``; the
  ratio ``(E + O) / (E - O)`` moves by ``2EO / (E**2 - O**2) = sinh(r) <= 0.357`` times the errors of E
  and O, plus the roundings of the sum and the difference: ``2u + 0.357 * 3.14u < 3.13u``.

So ``2**-k P / Q`` is within 3.32u of exp(-a) (relative). **Sigmoid**: ``y = n / (Q + 2**-k P)`` with n =
Q (x >= 0: ``1 / (1 + e)``) or ``2**-k P`` (x < 0: ``e / (1 + e)``), both of whose relative errors are at
most e's (their derivatives in log scale are below 1), plus the rounding of the sum and of the quotient:
within 5.33u (``ERROR``) of Sigmoid's exact value (|x| <= LIMIT; beyond, the float32 value is 0 or 1
either way). :func:`sigmoid_block` decides each float32 rounding with :data:`BOUND` (8u: 5.33u and the
roundings of ``y * BOUND`` and ``y -+ y * BOUND``, below 0.6u; float32's rounding is monotone): an
element whose rounding is not settled (about 2**-25.5 of them, one in 45 million: they lie within 2**-50
of a float32 midpoint, where float64 cannot decide), and every NaN input, is written as NaN and counted
in its block's mark, for the caller to evaluate again; everything else is the correctly rounded float32
value. The other loops do the same with their own bounds. The tests measure the float64 values against
mpmath and a long double oracle on dense grids (customops' tests/kernels/activations/test_compiled.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

ERROR_MODEL = "numpy"
"""Divisions by values that are never 0; without Python's check the loops are vectorized
(customops.accel.jit)."""

HELPERS = (
    "pade_terms",
    "exp_parts",
    "sigmoid_value",
    "times_sigmoid",
    "mish_value",
    "tanh_value",
    "series_terms",
    "series_value",
    "tail_exp",
    "erf_value",
    "gelu_value",
    "settle",
    "clip",
    "sigmoid_block",
    "logistic_block",
    "mish_block",
    "tanh_block",
    "series_block",
    "hard_block",
    "expm1_minus",
    "elu_block",
)

ERROR = 5.33 * 2.0**-53
"""The relative error bound of :func:`sigmoid_value` for |x| <= LIMIT (the module docstring's argument;
measured: 3.83u at most on 11 million points, tests/kernels/activations/test_compiled.py)."""

BOUND = 2.0**-50
"""The relative error bound :func:`sigmoid_block` decides Sigmoid's roundings with (ERROR and the
check's own roundings, with room to spare)."""

EXPM1_BOUND = 2.0**-49
"""The bound Tanh's, Mish's, Elu's and Selu's roundings are decided with: :func:`tanh_value`'s 12.9u,
:func:`mish_value`'s 10.1u, or :func:`expm1_minus`'s 10.4u and one product (u), and the check's own
roundings (0.6u), below 16u."""

CELU_BOUND = 2.0**-43
"""Celu's: x / alpha's rounding moves expm1(x / alpha) by up to 110u of itself (x / alpha >= -110 where the
value is not -alpha rounded), and :data:`EXPM1_BOUND`'s 16u."""

LIMIT = 110.0
"""Sigmoid's float32 value is 0 below -LIMIT and 1 above LIMIT: |x| is clamped to LIMIT (and so is the
argument of every exp here)."""

PART = 512
"""Elements per part of an Erf block (its scratch, 36 KiB, stays in the L1 cache)."""

ERF_LIMIT = 27.5
"""Where erfmath's fast table ends (erf is 1 in float64 long before)."""

BLOCK = 4096
"""Elements per block of the Sigmoid loop: each block counts its elements in doubt."""

LOG2E = 1.4426950408889634  # 1 / ln 2 rounded: only picks k (r stays within 0.35 either way)
LN2_HI = float.fromhex("0x1.62e42ffp-1")  # ln 2 to 29 bits
LN2_LO = float.fromhex("-0x1.718432a1b0e26p-35")  # ln 2 - LN2_HI, rounded
_ROUND = 1.5 * 2.0**52  # t + _ROUND - _ROUND is t rounded to an integer (|t| < 2**51)


def pade_terms(a: float) -> tuple[float, float, float, float]:
    """(k, E, O, 2**-k) of the reduction and the Padé approximant at a float64 0 <= a <= LIMIT:
    exp(-a) = 2**-k (E + O) / (E - O)."""
    k = (a * LOG2E + _ROUND) - _ROUND
    r = (k * LN2_HI - a) + k * LN2_LO
    r2 = r * r
    even = ((r2 + 840.0) * r2 + 75600.0) * r2 + 665280.0
    odd = ((42.0 * r2 + 10080.0) * r2 + 332640.0) * r
    # 2**-k (0 to 159) exactly, from three shifted integers: numba has no scalar bit cast
    n = np.int64(k)
    n1 = min(n, 53)
    n2 = min(n - n1, 53)
    n3 = n - n1 - n2
    high = np.float64(np.int64(1) << (53 - n1)) * np.float64(np.int64(1) << (53 - n2))
    return k, even, odd, high * (np.float64(np.int64(1) << (53 - n3)) * 2.0**-159)


def exp_parts(a: float) -> tuple[float, float]:
    """(p, q) with exp(-a) = p / q within 3.32u, for a float64 0 <= a <= LIMIT (p = 2**-k P exactly: a
    power of two, in the normal range)."""
    _, even, odd, scale = pade_terms(a)
    return (even + odd) * scale, even - odd


def sigmoid_value(x: float) -> float:
    """Sigmoid(x) in float64 within ERROR, for a float32 value x (any value for NaN x)."""
    a = abs(x)
    e, q = exp_parts(a if a < LIMIT else LIMIT)  # e = 2**-k P exactly: a power of two, in the normal range
    return (e if x < 0 else q) / (q + e)


def series_terms(z: float, table: Any, coefficients: Any, i: int) -> float:
    """For z >= 0 (or NaN): the series of erfmath.series_fast at z (erf(z) below 1, g(z) = exp(z**2)
    erfc(z) from 1 on): its 8 coefficients copied to ``coefficients[:, i]`` from ``table``
    (customops.kernels.activations.erfmath.fast_table), and its variable t returned. A separate scalar
    pass: LLVM does not vectorize the gathers (its cost model prefers none on these processors)."""
    z = z if z < ERF_LIMIT else ERF_LIMIT  # NaN too: the table is never read out of its range
    center = (z * 64.0 + _ROUND) - _ROUND
    row = np.uint64(center) + np.uint64(z >= 1.0)  # unsigned indices: no check for negative ones
    for n in range(8):
        coefficients[n, i] = table[n, row]
    return z - center * (1.0 / 64.0)


def series_value(t: float, coefficients: Any, i: int) -> float:
    """series_fast's Horner sum of :func:`series_terms`'s coefficients, in its order."""
    acc = coefficients[7, i] * t + coefficients[6, i]
    acc = acc * t + coefficients[5, i]
    acc = acc * t + coefficients[4, i]
    acc = acc * t + coefficients[3, i]
    acc = acc * t + coefficients[2, i]
    acc = acc * t + coefficients[1, i]
    return acc * t + coefficients[0, i]


def tail_exp(square: float) -> float:
    """exp(-square) within 3.82u (:func:`exp_parts` and its quotient) for the square of a float32 value,
    or half of it (both exact); 0 from LIMIT on (and for NaN), where erfc(|x|) (Erf) and x erfc(|x| /
    sqrt(2)) (Gelu) are below 2**-150 for every float32 x."""
    inside = square < LIMIT
    e, q = exp_parts(square if inside else LIMIT)
    return e / q if inside else 0.0


def times_sigmoid(x: float, alpha: float, c1: float, c3: float, gelu: bool) -> float:
    """x Sigmoid(v) in float64 for a float32 value x: Swish (``gelu`` False: v = alpha x, exact, for a
    float32 alpha; within ERROR + u) or Gelu's tanh form (v = x (c1 + c3 x**2), c1 and c3 its constants
    rounded: within the Gelu kernel's bound, v's roundings times |v| as its numpy path). Where v > LIMIT,
    Sigmoid(v) is 1 to 2**-158 (the clamped value); where v < -LIMIT: Gelu's value is -0 (|x| e**v is
    below 2**-150 there: v falls with x**3), Swish's NaN (x e**v may be any size for a small alpha: the
    caller evaluates it again)."""
    v = x * (c1 + c3 * (x * x)) if gelu else alpha * x
    a = abs(v)
    e, q = exp_parts(a if a < LIMIT else LIMIT)  # NaN too
    s = (e if v < 0 else q) / (q + e)
    if v < -LIMIT:
        s = 0.0 if gelu else np.nan
    return x * s


def logistic_block(x: Any, out: Any, alpha: float, c1: float, c3: float, bound: float, gelu: bool) -> int:
    """:func:`sigmoid_block` for :func:`times_sigmoid`, decided with ``bound``."""
    marked = 0
    for i in range(x.size):
        xi = np.float64(x[i])
        out[i], doubt = settle(times_sigmoid(xi, alpha, c1, c3, gelu), xi, bound)
        marked += doubt
    return marked


def swish_float32(x: Any, out: Any, marks: Any, alpha: float, start: int, stop: int) -> None:
    """:func:`sigmoid_float32` for Swish (a float32 alpha), decided with :data:`BOUND`."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = logistic_block(x[low:high], out[low:high], alpha, 0.0, 0.0, BOUND, False)


def gelu_tanh_float32(
    x: Any, out: Any, marks: Any, c1: float, c3: float, bound: float, start: int, stop: int
) -> None:
    """:func:`sigmoid_float32` for Gelu's tanh form (``c1``, ``c3``: its constants as its kernel rounds
    them; ``bound``: the kernel's)."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = logistic_block(x[low:high], out[low:high], 0.0, c1, c3, bound, True)


def mish_value(x: float) -> float:
    """Mish(x) in float64 within 10.1u for a float32 value x, in the numpy path's form without
    cancellation (E = exp(-|x|) within 3.82u by :func:`tail_exp`'s quotient): ``x (1 + 2E) / (1 + 2E +
    2E**2)`` for x >= 0 (the quotient's log moves by at most E's error, plus five roundings: 8.9u) and ``x
    E(E + 2) / (E(E + 2) + 2)`` for x < 0 (1.34 times E's error, plus five roundings: 10.1u); E is 0 from
    |x| = LIMIT on, where |x| E is below 2**-150."""
    a = abs(x)
    inside = a < LIMIT
    p, q = exp_parts(a if inside else LIMIT)  # NaN too
    e = p / q if inside else 0.0
    up = 1.0 + 2.0 * e
    down = e * (e + 2.0)
    numerator = up if x >= 0 else down
    return x * (numerator / (numerator + (2.0 * e * e if x >= 0 else 2.0)))


def mish_block(x: Any, out: Any) -> int:
    """:func:`sigmoid_block` for Mish, decided with :data:`EXPM1_BOUND` (10.1u and the check's 0.6u)."""
    marked = 0
    for i in range(x.size):
        xi = np.float64(x[i])
        out[i], doubt = settle(mish_value(xi), xi, EXPM1_BOUND)
        marked += doubt
    return marked


def mish_float32(x: Any, out: Any, marks: Any, start: int, stop: int) -> None:
    """:func:`sigmoid_float32` for Mish."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = mish_block(x[low:high], out[low:high])


def mish_float64(x: Any, y: Any) -> None:
    """y = :func:`mish_value` of every element of the float32 array x (the tests measure it)."""
    for i in range(x.size):
        y[i] = mish_value(np.float64(x[i]))


def tanh_value(x: float) -> float:
    """tanh(x) in float64 within 12.9u for a float32 value x, from :func:`pade_terms` at t = 2|x| (exact):
    ``-O / E`` when k = 0 (r = -t: no cancellation; O within 2.02u, E within 1.12u, the quotient: 4.2u),
    ``(Q - 2**-k P) / (Q + 2**-k P) = (1 - e) / (1 + e)`` from k = 1 on, a function of e = exp(-t) <=
    0.71 alone whose log moves by ``2e / (1 - e**2) <= 2.83`` times e's 3.5u, and three roundings."""
    t = 2.0 * abs(x)
    k, even, odd, scale = pade_terms(t if t < LIMIT else LIMIT)  # NaN too
    e = (even + odd) * scale
    q = even - odd
    value = -odd / even if k == 0.0 else (q - e) / (q + e)
    return math.copysign(value, x)


def tanh_block(x: Any, out: Any) -> int:
    """:func:`sigmoid_block` for tanh, decided with :data:`EXPM1_BOUND` (12.9u and the check's 0.6u)."""
    marked = 0
    for i in range(x.size):
        xi = np.float64(x[i])
        out[i], doubt = settle(tanh_value(xi), xi, EXPM1_BOUND)
        marked += doubt
    return marked


def tanh_float32(x: Any, out: Any, marks: Any, start: int, stop: int) -> None:
    """:func:`sigmoid_float32` for tanh."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = tanh_block(x[low:high], out[low:high])


def tanh_float64(x: Any, y: Any) -> None:
    """y = :func:`tanh_value` of every element of the float32 array x (the tests measure it)."""
    for i in range(x.size):
        y[i] = tanh_value(np.float64(x[i]))


def erf_value(x: float, t: float, coefficients: Any, i: int) -> float:
    """erf(x) in float64 within 2**-48 for a float32 value x (:func:`series_terms` at |x|): erfmath's
    erf_fast with :func:`tail_exp` (better than the 2**-48 erfmath's bound takes for exp); beyond |x| =
    10.48 erfc is below 2**-160 and the value 1 either way."""
    s = series_value(t, coefficients, i)
    value = s if abs(x) < 1.0 else 1.0 - tail_exp(x * x) * s
    return math.copysign(value, x)


def gelu_value(x: float, z: float, t: float, coefficients: Any, i: int) -> float:
    """Gelu(x) in float64 within the Gelu kernel's bound for a float32 value x (:func:`series_terms` at
    ``z = |x| / sqrt(2)``): gaussian's _gelu_fast with :func:`tail_exp`."""
    s = series_value(t, coefficients, i)
    e = tail_exp(x * x * 0.5) * s
    negative = x < 0
    near = 1.0 + (-s if negative else s)
    far = e if negative else 2.0 - e
    return 0.5 * x * (near if z < 1.0 else far)


def settle(y: float, x: float, bound: float) -> tuple[Any, int]:
    """(y rounded to float32, 0) where every value within ``bound`` (relative) of y rounds alike, else
    (NaN, 1); (NaN, 0) for NaN x."""
    margin = y * bound
    number = x == x
    settled = (np.float32(y - margin) == np.float32(y + margin)) & number
    return (np.float32(y) if settled else np.float32(np.nan)), np.int64(number) - np.int64(settled)


def sigmoid_block(x: Any, out: Any) -> int:
    """out = Sigmoid(x) rounded to float32 where :data:`BOUND` settles it, else NaN (and NaN for NaN x);
    returns how many elements are in doubt (NaN inputs not counted)."""
    marked = 0
    for i in range(x.size):
        xi = np.float64(x[i])
        out[i], doubt = settle(sigmoid_value(xi), xi, BOUND)
        marked += doubt
    return marked


def sigmoid_float32(x: Any, out: Any, marks: Any, start: int, stop: int) -> None:
    """Blocks [start, stop) of :data:`BLOCK` elements: :func:`sigmoid_block` of each, marks[b] = how
    many of block b's elements are in doubt."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = sigmoid_block(x[low:high], out[low:high])


def series_block(
    x: Any, out: Any, table: Any, bound: float, scale: float, gelu: bool, coefficients: Any, t: Any
) -> int:
    """:func:`sigmoid_block` for erf (``gelu`` False) or Gelu at ``z = |x| * scale`` (1, or 1 / sqrt(2)
    for Gelu), their roundings decided with ``bound``, in parts of :data:`PART` elements
    (``coefficients`` and ``t``: their scratch, 8 x PART and PART)."""
    marked = 0
    for low in range(0, x.size, PART):
        high = min(low + PART, x.size)
        part = x[low:high]
        for i in range(part.size):
            t[i] = series_terms(abs(np.float64(part[i])) * scale, table, coefficients, i)
        target = out[low:high]
        for i in range(part.size):
            xi = np.float64(part[i])
            if gelu:
                y = gelu_value(xi, abs(xi) * scale, t[i], coefficients, i)
            else:
                y = erf_value(xi, t[i], coefficients, i)
            target[i], doubt = settle(y, xi, bound)
            marked += doubt
    return marked


def erf_float32(x: Any, out: Any, marks: Any, table: Any, bound: float, start: int, stop: int) -> None:
    """:func:`sigmoid_float32` for erf (``table``: erfmath's fast table; ``bound``: the Erf kernel's)."""
    coefficients = np.empty((8, PART))
    t = np.empty(PART)
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = series_block(x[low:high], out[low:high], table, bound, 1.0, False, coefficients, t)


def gelu_float32(
    x: Any, out: Any, marks: Any, table: Any, bound: float, scale: float, start: int, stop: int
) -> None:
    """:func:`erf_float32` for Gelu (approximate "none"; ``scale``: 1 / sqrt(2) rounded, as its kernel
    takes it)."""
    coefficients = np.empty((8, PART))
    t = np.empty(PART)
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = series_block(x[low:high], out[low:high], table, bound, scale, True, coefficients, t)


def clip(y: float, low: float, high: float) -> float:
    """numpy's clip of one value: y itself (NaN, -0 included) unless below low or above high."""
    return low if y < low else (high if y > high else y)


def hard_block(x: Any, out: Any, alpha: float, beta: float, bound: float, swish: bool) -> int:
    """:func:`sigmoid_block` for HardSigmoid (``swish`` False: ``clip(alpha x + beta, 0, 1)``, alpha x
    exact, one rounding) or HardSwish (``x clip(x + 3, 0, 6) / 6``, three roundings), in the numpy path's
    operations and order, their roundings decided with ``bound``."""
    marked = 0
    for i in range(x.size):
        xi = np.float64(x[i])
        y = xi * clip(xi + 3.0, 0.0, 6.0) / 6.0 if swish else clip(alpha * xi + beta, 0.0, 1.0)
        out[i], doubt = settle(y, xi, bound)
        marked += doubt
    return marked


def hard_sigmoid_float32(
    x: Any, out: Any, marks: Any, alpha: float, beta: float, bound: float, start: int, stop: int
) -> None:
    """:func:`sigmoid_float32` for HardSigmoid with its float32 attributes and bound."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = hard_block(x[low:high], out[low:high], alpha, beta, bound, False)


def hard_swish_float32(x: Any, out: Any, marks: Any, bound: float, start: int, stop: int) -> None:
    """:func:`sigmoid_float32` for HardSwish with its bound."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = hard_block(x[low:high], out[low:high], 0.0, 0.0, bound, True)


def expm1_minus(a: float) -> float:
    """expm1(-a) within 10.4u for 0 <= a (clamped to LIMIT, where it is -1 to 2**-158): from
    :func:`pade_terms`, ``2 O / Q`` when k = 0 (the odd part itself, no cancellation: O within 2.02u, Q =
    E - O within 2.76u, the quotient: 5.8u) and ``(2**-k P - Q) / Q`` from k = 1 on (e = exp(-a) <= 0.71
    there, so e - 1 amplifies e's 3.5u by e / (1 - e) <= 2.42, and two roundings)."""
    k, even, odd, scale = pade_terms(a if a < LIMIT else LIMIT)
    q = even - odd
    return (2.0 * odd if k == 0.0 else (even + odd) * scale - q) / q


def elu_block(x: Any, out: Any, alpha: float, gamma: float, zero: float, kind: int) -> int:
    """:func:`sigmoid_block` for Elu (kind 0: ``alpha expm1(x)`` below 0, x from 0 on), Selu (kind 1:
    alpha is the product alpha gamma, exact; ``gamma x`` above 0, ``zero`` at +-0) and Celu (kind 2:
    ``alpha expm1(x / alpha)`` below 0 for alpha > 0, x above, +0 at +-0), decided with
    :data:`EXPM1_BOUND`."""
    marked = 0
    for i in range(x.size):
        xi = np.float64(x[i])
        u = xi / alpha if kind == 2 else xi
        below = alpha * expm1_minus(-u if u < 0 else 0.0)  # NaN too: 0
        if kind == 0:
            y = below if xi < 0 else xi
        elif kind == 1:
            y = gamma * xi if xi > 0 else (below if xi < 0 else zero)
        else:
            y = xi if xi > 0 else (below if xi < 0 else 0.0)
        out[i], doubt = settle(y, xi, EXPM1_BOUND if kind != 2 else CELU_BOUND)
        marked += doubt
    return marked


def elu_float32(
    x: Any, out: Any, marks: Any, alpha: float, gamma: float, zero: float, kind: int, start: int, stop: int
) -> None:
    """:func:`sigmoid_float32` for Elu, Selu and Celu (:func:`elu_block`'s arguments)."""
    for b in range(start, stop):
        low = b * BLOCK
        high = min(low + BLOCK, x.size)
        marks[b] = elu_block(x[low:high], out[low:high], alpha, gamma, zero, kind)


def sigmoid_float64(x: Any, y: Any) -> None:
    """y = Sigmoid(x) in float64 as :func:`sigmoid_float32` computes it before rounding (within ERROR),
    for every element of the float32 array x (the tests measure it)."""
    for i in range(x.size):
        y[i] = sigmoid_value(np.float64(x[i]))


def series_float64(x: Any, y: Any, table: Any, scale: float, gelu: bool) -> None:
    """y = erf(x) (``gelu`` False, scale 1) or Gelu(x) in float64 as :func:`erf_float32` and
    :func:`gelu_float32` compute them before rounding, for every element of the float32 array x (the tests
    measure it)."""
    coefficients = np.empty((8, x.size))
    for i in range(x.size):
        y[i] = series_terms(abs(np.float64(x[i])) * scale, table, coefficients, i)
    for i in range(x.size):
        xi = np.float64(x[i])
        if gelu:
            y[i] = gelu_value(xi, abs(xi) * scale, y[i], coefficients, i)
        else:
            y[i] = erf_value(xi, y[i], coefficients, i)


def expm1_float64(a: Any, y: Any) -> None:
    """y = :func:`expm1_minus` of every element of the float64 array a (the tests measure it)."""
    for i in range(a.size):
        y[i] = expm1_minus(a[i])


def round_float32(y: Any, out: Any, bound: float) -> int:
    """out[i] = y[i] (float64, within ``bound`` of an exact value) rounded to float32, or NaN where the
    values within the bound do not all round alike (and where y is NaN); returns how many are NaN. An
    infinite y (the float64 value overflowed) rounds to itself."""
    marked = 0
    for i in range(y.size):
        yi = y[i]
        margin = abs(yi) * bound if abs(yi) < np.inf else 0.0
        settled = np.float32(yi - margin) == np.float32(yi + margin)  # False for NaN
        out[i] = np.float32(yi) if settled else np.float32(np.nan)
        marked += np.int64(not settled)
    return marked
