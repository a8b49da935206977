"""How every activation is evaluated and rounded once to X's element type.

An activation is described by an :class:`Activation`: a float64 evaluation with a known relative error
bound (``fast``, for outputs of float32 and narrower types), a double-double one (``precise``, relative
error below :data:`PRECISE_BOUND`), its values at +-inf and, for the rational ones, the exact value
(``exact``, a :class:`fractions.Fraction` of the input). :func:`apply` then gives:

- float, float16, bfloat16: the fast value rounded to the type, except where the interval of its bound
  holds a midpoint between two values of the type (where the rounding of the exact value is in doubt):
  those elements, about B * 2**(p + 1) of them for a bound B and p significant bits (a few per million
  for float32), are evaluated again in double-double and rounded to odd in float64, then to the type
  (correct: rounding to odd at 53 bits then to nearest at p <= 51 bits is one rounding, Boldo and
  Melquiond 2008). A rational activation takes the exact value of any element still in doubt after that,
  so a midpoint itself rounds to even. A transcendental one never has a midpoint for its value (a
  value of exp, erf or tanh at a nonzero rational is irrational), and no float32 or narrower input comes
  within 2**-90 of one (the closest known approaches of such functions are around 2**-(2p + 8)), so the
  result is correctly rounded.
- double: the double-double value rounded to nearest: within 0.5 ulp + 2**-88 of the exact value
  (within 1 ulp always, correctly rounded but for inputs closer than 2**-88 to a midpoint; the rational
  activations resolve those exactly too). Where the double-double's low part leaves the float64 range
  (results below about 2**-960), the error stays within 1 ulp of the subnormal result.

Every activation but Softplus (and Celu with alpha < 0) has a compiled loop for float32
(customops.accel.activations.activation_loops: vectorized float64 with a proven bound, in blocks; Sigmoid's 2**-50
leaves about one element in 45 million in doubt, Erf's 2**-46 one in 3 million, the Gelu forms' 2**-43
one in 400,000), whose elements in doubt take the path above (only the blocks a loop marks are searched
for them). NaN gives NaN; +-inf gives the limit of the formula (the activation's ``at_infinity``). Work
is done in chunks of :data:`CHUNK` elements (temporaries stay in the cache), shared by
customops.accel.parallel's threads; every element is computed by the same arithmetic whichever chunk it
falls in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from customops.accel import jit, parallel
from customops.accel.activations import activation_loops
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.activations.ddmath import DD

__all__ = ["CHUNK", "PRECISE_BOUND", "TYPES", "Activation", "apply", "attribute", "to_odd"]

CHUNK = 1 << 14
"""Elements evaluated together (their float64 temporaries stay in a core's L2 cache)."""

PRECISE_BOUND = 2.0**-88
"""The relative error bound of every activation's double-double evaluation."""

TYPES: dict[np.dtype, str] = {
    np.dtype(np.float16): "float16",
    np.dtype(ml_dtypes.bfloat16): "bfloat16",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}
"""The element types the activations take, with their ONNX names."""


@dataclass(frozen=True)
class Activation:
    """One activation with its attributes bound."""

    name: str
    fast: Callable[[np.ndarray], np.ndarray]
    """Finite float64 inputs (values of float32 or a narrower type) -> the value in float64, within
    ``bound`` (relative) of the exact value, or exact."""
    bound: float
    precise: Callable[[np.ndarray], DD]
    """Finite float64 inputs -> the value as a double-double, within :data:`PRECISE_BOUND` (relative)."""
    at_infinity: tuple[float, float]
    """The values at +inf and -inf."""
    exact: Callable[[Fraction], Fraction] | None = None
    """For a rational activation: its exact value at a finite input."""
    loop: str | None = None
    """The compiled loop of customops.accel.activations.activation_loops for float32 inputs, if any, over blocks of
    its ``BLOCK`` elements: it writes the correctly rounded value, or NaN where its own bound leaves the
    rounding in doubt (and for NaN), and counts the elements in doubt of each block."""
    loop_args: Callable[[], tuple[Any, ...]] = tuple
    """The loop's arguments after X, the output and the marks (made on first use: tables)."""


def attribute(value: Any, name: str, op: str) -> float:
    """A FLOAT attribute as the float32 value ONNX stores (a Python float is rounded to float32 first),
    as a Python float; raises KernelError for a value that is not a finite real number."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise KernelError(f"{op}: attribute {name} must be a float, got {value!r}")
    with np.errstate(over="ignore"):
        result = float(np.float32(value))
    if not math.isfinite(result):
        raise KernelError(f"{op}: attribute {name} is {result!r}; it must be a finite float32")
    return result


def apply(x: Any, activation: Activation) -> np.ndarray:
    """The activation of every element of X, as a new C-contiguous array of X's element type."""
    data = np.asarray(x)
    if data.dtype not in TYPES:
        raise KernelError(
            f"{activation.name}: X has element type {data.dtype}; allowed: float16, bfloat16, float, double"
        )
    limits.check_output(data.shape, data.dtype)
    flat = np.ascontiguousarray(data).reshape(-1)
    out = np.empty(data.shape, dtype=data.dtype)
    if flat.size == 0:
        return out
    target = out.reshape(-1)
    loop = (
        jit.get(activation.loop, activation_loops) if activation.loop and data.dtype == np.float32 else None
    )
    if loop is not None:
        _blocks(activation, loop, flat, target)
        return out
    count = -(-flat.size // CHUNK)
    parallel.run(_chunks, count, flat.size, activation, flat, target)
    return out


def _blocks(activation: Activation, loop: Any, flat: np.ndarray, target: np.ndarray) -> None:
    """Run a compiled loop over blocks of ``activation_loops.BLOCK`` elements, then evaluate again the
    elements it left in doubt (NaN in the blocks it marked; infinite values among them, whose margin is
    not finite: an input of infinities is correct, not fast)."""
    block = activation_loops.BLOCK
    marks = np.zeros(-(-flat.size // block), dtype=np.int64)
    parallel.run(loop, marks.size, flat.size, flat, target, marks, *activation.loop_args())
    marked = np.flatnonzero(marks)
    if marked.size:
        spots = (marked[:, None] * block + np.arange(block)).reshape(-1)
        spots = spots[spots < flat.size]
        again = spots[np.isnan(target[spots]) & ~np.isnan(flat[spots])]  # NaN inputs are done
        for start in range(0, again.size, CHUNK):  # temporaries of CHUNK elements, as the numpy path's
            part = again[start : start + CHUNK]
            target[part] = _narrow(activation, flat[part], target.dtype)


def _chunks(activation: Activation, flat: np.ndarray, target: np.ndarray, start: int, stop: int) -> None:
    evaluate = _double if flat.dtype == np.float64 else _narrow
    for i in range(start, stop):
        part = slice(i * CHUNK, min((i + 1) * CHUNK, flat.size))
        target[part] = evaluate(activation, flat[part], target.dtype)


def _specials(activation: Activation, x: np.ndarray, y: np.ndarray) -> None:
    """Set y where x is not finite: NaN, or the values at +-inf."""
    bad = ~np.isfinite(x)
    hi, lo = activation.at_infinity
    y[bad] = np.where(np.isnan(x[bad]), np.nan, np.where(x[bad] > 0, hi, lo))


def _narrow(activation: Activation, part: np.ndarray, dtype: np.dtype) -> np.ndarray:
    x = part.astype(np.float64)
    with np.errstate(invalid="ignore"):
        finite = bool(np.isfinite(np.add.reduce(x)))  # one pass: no inf or NaN in a sum of float32 values
    if not finite:
        x_clean = np.where(np.isfinite(x), x, 0.0)
    with np.errstate(all="ignore"):
        y = activation.fast(x if finite else x_clean)
    if not finite:
        _specials(activation, x, y)
    rounding = jit.get("round_float32", activation_loops) if dtype == np.float32 else None
    if rounding is not None:
        result = np.empty(y.shape, dtype=dtype)
        if rounding(y, result, activation.bound):  # NaN marks the elements in doubt (and NaN values)
            doubt = np.isnan(result) & np.isfinite(x)
            result[np.isnan(x)] = np.nan
            _resolve(activation, x, result, doubt)
        return result
    doubt = _doubt_float32(y, activation.bound) if dtype == np.float32 else _doubt(y, activation.bound, dtype)
    doubt &= np.isfinite(x)
    with np.errstate(over="ignore"):
        result = y.astype(dtype)
    if np.any(doubt):
        _resolve(activation, x, result, doubt)
    return result


_FEW = 32
"""Elements in doubt of a rational activation below which their exact values are cheaper than one
double-double evaluation (a hundred numpy calls)."""


def _resolve(activation: Activation, x: np.ndarray, result: np.ndarray, doubt: np.ndarray) -> None:
    """Evaluate again, in double-double, the elements in doubt, and exactly those still in doubt (a
    rational activation's few: exactly at once; their fast values are often exact midpoints)."""
    index = np.flatnonzero(doubt)
    if activation.exact is not None and index.size <= _FEW:
        for i in index:
            result[i] = _round_fraction(activation.exact(Fraction(float(x[i]))), result.dtype)
        return
    with np.errstate(all="ignore"):
        value = activation.precise(x[index])
    with np.errstate(over="ignore"):
        result[index] = to_odd(value).astype(result.dtype)
    if activation.exact is None:
        return
    still = _doubt(value.hi, PRECISE_BOUND * 2, result.dtype)
    for i in index[still]:
        result[i] = _round_fraction(activation.exact(Fraction(float(x[i]))), result.dtype)


def _double(activation: Activation, part: np.ndarray, dtype: np.dtype) -> np.ndarray:
    finite = np.isfinite(part)
    every = bool(np.all(finite))
    x = part if every else np.where(finite, part, 0.0)
    with np.errstate(all="ignore"):
        value = activation.precise(x)
    y = np.array(value.hi, dtype=np.float64)
    if activation.exact is not None:
        with np.errstate(over="ignore"):  # an infinite hi (x near the largest double) has no spacing
            half = np.spacing(np.abs(y)) / 2
        doubt = np.abs(np.abs(value.lo) - half) <= PRECISE_BOUND * 2 * np.abs(y)
        for i in np.flatnonzero(doubt & finite):
            y[i] = _round_fraction(activation.exact(Fraction(float(x[i]))), np.dtype(np.float64))
    zeros = part == 0
    if np.any(zeros):  # the double-double arithmetic has no signed zeros; at +-0 the formula is exact
        y[zeros] = activation.fast(part[zeros])
    if not every:
        _specials(activation, part, y)
    return y


def to_odd(value: DD) -> np.ndarray:
    """``hi + lo`` rounded to odd in float64: ``hi`` itself when lo is 0, else the one of hi and its
    neighbour towards lo whose last bit is 1 (lo is at most half an ulp of hi)."""
    hi = np.array(value.hi, dtype=np.float64)
    move = (value.lo != 0) & np.isfinite(hi) & ((hi.view(np.uint64) & np.uint64(1)) == 0)
    if np.any(move):
        hi[move] = np.nextafter(hi[move], np.where(value.lo[move] > 0, np.inf, -np.inf))
    return hi


def _round_fraction(value: Fraction, dtype: np.dtype) -> Any:
    """An exact rational rounded once to nearest even in dtype (through float64 rounded to odd)."""
    nearest = float(value)  # correctly rounded to float64
    if dtype == np.float64 or Fraction(nearest) == value:
        return np.array(nearest).astype(dtype)
    direction = 1.0 if value > Fraction(nearest) else -1.0
    odd = to_odd(DD(np.array([nearest]), np.array([direction])))
    return odd.astype(dtype)[0]


_LOW29 = np.uint64((1 << 29) - 1)


def _doubt_float32(y: np.ndarray, bound: float) -> np.ndarray:
    """Where the float32 rounding of the exact value may differ from y's (y within ``bound`` of it).

    A float64 y rounds to float32 by its low 29 significand bits (normal results); a midpoint has them
    equal to 2**28, and y is within bound * 2**53 of its ulps of the exact value. Results below the
    float32 normal range are checked as the other types are."""
    reach = int(bound * 2.0**53) + 2
    low = (y.view(np.uint64) + np.uint64((1 << 28) + reach)) & _LOW29  # the low bits shifted by 2**28
    doubt = low <= np.uint64(2 * reach)
    tiny = np.abs(y) < 2.0**-126
    if np.any(tiny):
        doubt |= tiny & _doubt(y, bound, np.dtype(np.float32))
    return doubt


def _doubt(y: np.ndarray, bound: float, dtype: np.dtype) -> np.ndarray:
    """Where the values within ``bound`` (relative) of y do not all round to the same value of dtype."""
    with np.errstate(over="ignore", invalid="ignore"):
        margin = np.where(np.isinf(y), 0.0, np.abs(y) * bound)  # inf: the float64 value overflowed
        low = (y - margin).astype(dtype)
        high = (y + margin).astype(dtype)
    return low != high  # by value: y - 0 and y + 0 are zeros of both signs at y = -0
