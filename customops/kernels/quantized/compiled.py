"""The compiled paths of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
(customops.accel.quantized.quantize_loops), for their common cases: float32 quantized to an 8- or 16-bit
integer type, and such integers dequantized to float32, by float32 scales and zero points per tensor or
per axis. Each path answers None where it does not apply (another type, blocked scales, a scale of 0, inf
or NaN, NaN in x, no numba or ``CUSTOMOPS_JIT=0``, inside ``jit.numpy_only``): the caller then takes its
exact path.

Why the loops give the exact path's bits. The exact path computes with the exact value of every operand
and rounds once per result (customops.kernels.quantized.arithmetic): QuantizeLinear's quotient x / s
rounded to odd in float64 and then to float32 (the division's precision with a float32 scale), which is
RN(x / s), the exact quotient rounded once to the nearest float32, ties to even (rounding to odd at 53 bits,
then to nearest at 24 or fewer: Boldo and Melquiond; float64 holds every quotient of float32 operands
(magnitudes 2**-277 to 2**277) and every such product (2**-149 to 2**146) as a normal number, so the odd
rounding keeps its 53 bits, and float32's subnormal grid and its overflow threshold are boundaries of
fewer bits still); DequantizeLinear's RN((x - z) * s) the same way. The loops perform each step as one
IEEE 754 float32 operation (compiled without fastmath: nothing contracted into an FMA or reassociated),
with the FPU in its default modes: round to nearest even, no flush-to-zero, no denormals-are-zero (ORT
sets the last two only under its session option ``session.set_denormal_as_zero``, which flushes the exact
path's float32 conversions as well):

1. ``x / s``: IEEE 754 defines a float32 division's result as the exact quotient rounded once to float32
   by the rounding mode, subnormal results (gradual underflow; subnormal x and scales are exact operands
   like any other) and overflow to inf included: RN(x / s), the exact path's value, for every float32 x
   and every finite non-zero s (per axis: each element's own). x = +-0 gives +-0 and x = +-inf gives
   +-inf in both. Quotients the proof does not cover are not taken: NaN in x, and s = 0, +-inf or NaN
   (0 / 0 and inf / inf are NaN, which the exact path reports).
2. ``rint``: the exact path rounds float64(RN(x / s)) half to even to an integer; the loop rounds the same
   float32 value half to even in float32 (llvm.rint in the default mode). Both give the integer nearest the
   value, ties to even, and that integer is a float32: below 2**23 in magnitude the value lies between two
   consecutive integers of float32's grid, from 2**23 on it is an integer itself; +-inf stays +-inf.
3. ``+ z`` then clamping to the output type's [low, high]: the exact path adds exactly; the loop gets the
   sum v = r + z rounded to float32. For every real v, clamp(RN(v)) = clamp(v): low, high (8- and 16-bit
   types: magnitudes at most 65535 < 2**24) and every integer between them are float32 values, which RN
   leaves as they are, and RN is monotonic, so a v above high rounds to high or above (clamped to high) and
   one below low to low or below. So the huge quotients (up to 2**277 in magnitude for float32 operands)
   and +-inf saturate alike, and every sum in range is the exact integer.
4. The store converts an integer of [low, high], held exactly in float32, to the output type: exact.

DequantizeLinear's loop: ``float32(x) - float32(z)`` is exact (integers of magnitude below 2**17 < 2**24; a
zero difference is +0, as in the exact path's float64), and ``* s`` is IEEE's float32 product, the exact
product rounded once: RN((x - z) * s) for every float32 s, with IEEE's infinities and NaN (0 * inf is NaN,
a NaN scale propagates) as the exact path's float64 product gives them before its rounding to float32.

Results do not depend on the number of threads (customops.accel.parallel): each element is computed alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from customops.accel import jit, parallel
from customops.accel.quantized import quantize_loops
from customops.kernels.quantized.arithmetic import Element

__all__ = ["FAST_INTEGERS", "ROW", "dequantize_float32", "quantize_float32"]

FAST_INTEGERS = ("uint8", "int8", "uint16", "int16")
"""The integer types the compiled paths quantize to and dequantize from."""

_FLOAT32 = np.dtype(np.float32)


ROW = 1 << 12
"""Elements per row of a per-tensor loop: the rows are what threads share (customops.accel.parallel)."""


@dataclass(frozen=True)
class _Rows:
    """How a loop walks x: rows of ``inner`` elements, row r by entry r % n of the n scales and zero
    points (per tensor: n = 1 and rows of :data:`ROW`), or with ``last``, rows of n elements along the
    last axis, element c by entry c."""

    scales: np.ndarray
    zeros: np.ndarray
    inner: int
    last: bool
    rows: int


def _rows(
    shape: tuple[int, ...], scale: np.ndarray, zero_point: np.ndarray | None, axis: int | None
) -> _Rows | None:
    """The rows of an x of ``shape`` with a float32 ``scale`` of one element (``axis`` None) or along
    ``axis`` (1-D); None for another scale type, and for an empty x (nothing to compute)."""
    size = math.prod(shape)
    if scale.dtype != _FLOAT32 or size == 0:
        return None
    scales = scale.reshape(-1)
    zeros = np.zeros(scales.size, _FLOAT32) if zero_point is None else zero_point.reshape(-1).astype(_FLOAT32)
    inner = ROW if axis is None else math.prod(shape[axis + 1 :])
    if inner == 1 and scales.size > 1:
        return _Rows(scales, zeros, 1, True, size // scales.size)
    return _Rows(scales, zeros, inner, False, -(-size // inner))


def _divisors(scales: np.ndarray) -> bool:
    """Whether every scale is finite and not 0 (the premise of the quotient's proof)."""
    if scales.size == 1:
        return 0 < abs(float(scales[0])) < math.inf  # NaN fails both comparisons
    return bool(np.isfinite(scales).all() and scales.all())


def quantize_float32(
    x: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    out: Element,
    *,
    axis: int | None = None,
    nan_free: bool = False,
) -> np.ndarray | None:
    """QuantizeLinear's y for float32 ``x``, a float32 ``scale`` of one element (``axis`` None) or along
    ``axis``, its ``zero_point`` of ``out``'s type (None: 0) and the division in float32, by the compiled
    loops; None where this path does not apply (see the module's docstring). ``nan_free``: the caller
    knows x holds no NaN (else x is checked). Validation is the caller's: this only computes."""
    if x.dtype != _FLOAT32 or out.name not in FAST_INTEGERS:
        return None
    rows = _rows(x.shape, scale, zero_point, axis)
    if rows is None or not _divisors(rows.scales):
        return None
    loop = jit.get("quantize_float32_last" if rows.last else "quantize_float32", quantize_loops)
    if loop is None:
        return None
    flat = np.ascontiguousarray(x).reshape(-1)
    if not nan_free and flat.size and np.isnan(flat.min()):  # numpy's min is NaN when any element is
        return None  # the exact path names the first NaN
    y = np.empty(x.shape, dtype=out.dtype)
    bounds = (np.float32(out.low), np.float32(out.high), y.reshape(-1))
    args = (flat, rows.scales, rows.zeros, *bounds) + (() if rows.last else (rows.inner,))
    parallel.run(loop, rows.rows, flat.size, *args)
    return y


def dequantize_float32(
    x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, out: Element, *, axis: int | None = None
) -> np.ndarray | None:
    """DequantizeLinear's float32 y for ``x`` of an 8- or 16-bit integer type, a float32 ``scale`` of one
    element (``axis`` None) or along ``axis`` and its ``zero_point`` of x's type (None: 0), by the
    compiled loops; None where this path does not apply (another type or layout, no numba)."""
    if out.dtype != _FLOAT32 or x.dtype.name not in FAST_INTEGERS:
        return None
    rows = _rows(x.shape, scale, zero_point, axis)
    if rows is None:
        return None
    loop = jit.get("dequantize_float32_last" if rows.last else "dequantize_float32", quantize_loops)
    if loop is None:
        return None
    flat = np.ascontiguousarray(x).reshape(-1)
    y = np.empty(x.shape, dtype=_FLOAT32)
    args = (flat, rows.zeros, rows.scales, y.reshape(-1)) + (() if rows.last else (rows.inner,))
    parallel.run(loop, rows.rows, flat.size, *args)
    return y
