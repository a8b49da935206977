"""Compiled loops of the activations (customops.kernels.activations): Sigmoid of float32 inputs, and
the one rounding of every activation's float64 values to float32 (:func:`round_float32`).

A plain Python function, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). It
computes in float64 without a call to the C library, so that the loop is vectorized (numba has no vector
exp): ``exp(t)`` for ``|t| <= 110 / 1024`` by its Taylor polynomial of degree 10 (truncation below
2**-60; Horner's roundings below 21 * 2**-53 * e**0.22 of the value: 2**-48.3), raised to the power
1024 by ten squarings (each doubles the relative error and adds a rounding: 2**-38.3 in all), then
``1 / (1 + e)``: within 2**-38 of Sigmoid's exact value. An element whose float32 rounding is not
settled by that bound (about 2 in 10,000), and every NaN input, is written as NaN, for the caller to
evaluate again; everything else is the correctly rounded float32 value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ERROR_MODEL = "numpy"
"""1 / (1 + e) never divides by 0; without Python's check the loop is vectorized (customops.accel.jit)."""

BOUND = 2.0**-37
"""The relative error bound the loop decides its roundings with (2**-38 with a factor 2 to spare)."""

LIMIT = 110.0
"""Sigmoid's float32 value is 0 below -LIMIT and 1 above LIMIT: inputs are clamped to [-LIMIT, LIMIT]."""


def sigmoid_float32(x: Any, out: Any, start: int, stop: int) -> None:
    """out[i] = Sigmoid(x[i]) rounded to float32 for i in [start, stop), or NaN where in doubt."""
    for i in range(start, stop):
        xi = np.float64(x[i])
        t = min(max(-xi, -LIMIT), LIMIT) * (1.0 / 1024.0)
        p = 1.0 / 3628800.0
        p = p * t + 1.0 / 362880.0
        p = p * t + 1.0 / 40320.0
        p = p * t + 1.0 / 5040.0
        p = p * t + 1.0 / 720.0
        p = p * t + 1.0 / 120.0
        p = p * t + 1.0 / 24.0
        p = p * t + 1.0 / 6.0
        p = p * t + 0.5
        p = p * t + 1.0
        p = p * t + 1.0
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        y = 1.0 / (1.0 + p)
        settled = (np.float32(y - y * BOUND) == np.float32(y + y * BOUND)) & (xi == xi)
        out[i] = np.float32(y) if settled else np.float32(np.nan)


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
