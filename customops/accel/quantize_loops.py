"""Compiled loops of the quantization kernels (customops.kernels.quantized): a float32 tensor quantized
to a narrow integer type by one float32 scale and zero point, and a narrow integer tensor dequantized to
float32 by one float32 scale and zero point.

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
    x: Any, scale: Any, zero: Any, low: Any, high: Any, out: Any, start: int, stop: int
) -> None:
    """out[i] = clamp(rint(x[i] / scale) + zero, low, high) for i in [start, stop), each operation in
    float32 (``scale``, ``zero``, ``low`` and ``high`` are float32 scalars, the last three integers). A NaN
    quotient is written as ``low``: the caller rules NaN out before (a flag set in the loop would keep it
    from being vectorized, and halve its speed)."""
    xs = x[start:stop]  # indices from 0 known non-negative: contiguous vector loads, no gathers
    ys = out[start:stop]
    for i in range(xs.size):
        t = np.rint(xs[i] / scale) + zero
        t = t if t > low else low  # NaN: low
        t = t if t < high else high
        ys[i] = t


def dequantize_float32(x: Any, zero: Any, scale: Any, out: Any, start: int, stop: int) -> None:
    """out[i] = (float32(x[i]) - zero) * scale for i in [start, stop), each operation in float32
    (``zero`` and ``scale`` float32 scalars)."""
    xs = x[start:stop]
    ys = out[start:stop]
    for i in range(xs.size):
        ys[i] = (np.float32(xs[i]) - zero) * scale


RANGE_BLOCK = 1 << 16
"""Elements per block of :func:`float32_range`: each block's extremes are kept apart, so that threads can
share the blocks (customops.accel.parallel) and the caller combines them."""


def float32_range(bits: Any, lows: Any, highs: Any, start: int, stop: int) -> None:
    """lows[b] and highs[b] = the least and greatest order key of block b of ``bits`` (a float32 array
    viewed as int32; block b is elements [b * RANGE_BLOCK, (b + 1) * RANGE_BLOCK)) for b in [start, stop).

    A float32's order key is its bits as an int32 with, for a negative sign, the other 31 bits flipped: the
    keys of non-NaN floats are in the floats' order (-0 just below +0), those of NaNs beyond the keys of
    +-inf. Integer minima and maxima are vectorized, where float ones (with NaN) are not."""
    for b in range(start, stop):
        block = bits[b * RANGE_BLOCK : min((b + 1) * RANGE_BLOCK, bits.size)]
        low = np.int32(2147483647)
        high = np.int32(-2147483648)
        for i in range(block.size):
            v = block[i]
            k = v ^ ((v >> 31) & np.int32(0x7FFFFFFF))
            low = min(low, k)
            high = max(high, k)
        lows[b] = low
        highs[b] = high
