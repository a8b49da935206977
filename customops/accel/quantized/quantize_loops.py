"""Compiled loops of the quantization kernels (customops.kernels.quantized): a float32 tensor quantized
to a narrow integer type, and a narrow integer tensor dequantized to float32, by float32 scales and zero
points per tensor or per axis.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``, no
``fastmath``: every operation below is one IEEE float32 operation, rounded to nearest even, nothing
contracted or reassociated). Why these operations give the exact kernels' values bit for bit is proved
where the kernels call them (customops.kernels.quantized.compiled); here they only compute.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ERROR_MODEL = "numpy"
"""A division by a zero scale gives IEEE's inf or NaN instead of raising, and the loop is vectorized
(customops.accel.jit)."""


def quantize_float32(
    x: Any, scales: Any, zeros: Any, low: Any, high: Any, out: Any, inner: int, start: int, stop: int
) -> None:
    """Rows r in [start, stop) of ``x`` and ``out`` cut into rows of ``inner`` elements (the last may be
    shorter): out[i] = clamp(rint(x[i] / s) + z, low, high) with s and z the entries r % n of ``scales``
    and ``zeros`` (n entries: n = 1 is per tensor; else x is [outer, n, inner], per axis), each operation
    in float32 (``zeros``, ``low`` and ``high`` hold integers). A NaN quotient is written as ``low``: the
    caller rules NaN out before (a flag set in the loop would keep it from being vectorized, and halve
    its speed)."""
    count = scales.size
    for r in range(start, stop):
        s = scales[r % count]
        z = zeros[r % count]
        xs = x[r * inner : (r + 1) * inner]  # indices from 0, known non-negative: vector loads
        ys = out[r * inner : (r + 1) * inner]
        for i in range(xs.size):
            t = np.rint(xs[i] / s) + z
            t = t if t > low else low  # NaN: low
            t = t if t < high else high
            ys[i] = t


def quantize_float32_last(
    x: Any, scales: Any, zeros: Any, low: Any, high: Any, out: Any, start: int, stop: int
) -> None:
    """:func:`quantize_float32` per axis along the last axis: rows r in [start, stop) of n elements (n
    entries in ``scales``), element c of a row by scales[c] and zeros[c]."""
    count = scales.size
    for r in range(start, stop):
        xs = x[r * count : (r + 1) * count]
        ys = out[r * count : (r + 1) * count]
        for c in range(count):
            t = np.rint(xs[c] / scales[c]) + zeros[c]
            t = t if t > low else low
            t = t if t < high else high
            ys[c] = t


def dequantize_float32(x: Any, zeros: Any, scales: Any, out: Any, inner: int, start: int, stop: int) -> None:
    """Rows r in [start, stop) of ``inner`` elements, as :func:`quantize_float32` cuts them: out[i] =
    (float32(x[i]) - z) * s with z and s the entries r % n of ``zeros`` and ``scales``, each operation
    in float32."""
    count = scales.size
    for r in range(start, stop):
        s = scales[r % count]
        z = zeros[r % count]
        xs = x[r * inner : (r + 1) * inner]
        ys = out[r * inner : (r + 1) * inner]
        for i in range(xs.size):
            ys[i] = (np.float32(xs[i]) - z) * s


def dequantize_float32_last(x: Any, zeros: Any, scales: Any, out: Any, start: int, stop: int) -> None:
    """:func:`dequantize_float32` per axis along the last axis: rows r in [start, stop) of n elements,
    element c of a row by zeros[c] and scales[c]."""
    count = scales.size
    for r in range(start, stop):
        xs = x[r * count : (r + 1) * count]
        ys = out[r * count : (r + 1) * count]
        for c in range(count):
            ys[c] = (np.float32(xs[c]) - zeros[c]) * scales[c]
