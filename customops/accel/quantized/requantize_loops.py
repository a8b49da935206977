"""Compiled loop of the quantized kernels (customops.kernels.quantized): the last rounding of
:func:`customops.kernels.quantized.arithmetic.requantize` into an integer type, for a zero point of one
value.

A plain Python function, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). It takes
float64 values of ``acc * num / den`` within 2**-49 (relative) of the exact value, as the numpy path's
are, and rounds each where that bound settles it, as the numpy path does: half to even, the zero point
added, the type's range saturated. Where the bound does not settle it (a value within the bound of a half
integer, and NaN) it marks the element for the caller to compute again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ERROR_MODEL = "numpy"

BOUND = 2.0**-49
"""The relative error bound of the float64 values (requantize's margin)."""


def round_to_integers(
    value: Any, zero: float, low: float, high: float, out: Any, unsure: Any, start: int, stop: int
) -> None:
    """out[i] = min(max(rint(value[i]) + zero, low), high) for i in [start, stop) where the rounding of
    every value within ``BOUND`` (relative) of value[i] is the same, unsure[i] = 0 there; unsure[i] = 1
    (and out[i] = 0) elsewhere, NaN included. An infinite value saturates."""
    for i in range(start, stop):
        v = value[i]
        margin = abs(v) * BOUND if abs(v) < np.inf else 0.0
        lo = np.rint(v - margin)
        settled = lo == np.rint(v + margin)  # False for NaN
        rounded = min(max(lo + zero, low), high) if settled else 0.0
        out[i] = rounded
        unsure[i] = not settled
