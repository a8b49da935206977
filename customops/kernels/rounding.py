"""How a kernel's float64 results become the output's element type (Resize and GridSample): one
rounding; integers round half to even and saturate to the type's range; bool is True where the value
rounded half to even is at least 1 (0.5 gives False, 0.51 True)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def finisher(dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
    """How computed values become ``dtype`` (None: a plain cast, for float and complex components)."""
    if dtype.kind == "b":
        return lambda values: np.rint(values) >= 1
    if dtype.kind in "iu":
        return lambda values: saturate(np.rint(values), dtype)
    return None


def finish(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` (float64 or complex128) as ``dtype`` by :func:`finisher`'s rule."""
    rule = finisher(dtype)
    return values.astype(dtype) if rule is None else rule(values)


def saturate(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Rounded float64 values cast to an integer type, clamped to its range."""
    info = np.iinfo(dtype)
    top = float(info.max)
    if int(top) > info.max:  # 64-bit types: the float just above the maximum must not reach the cast
        result = np.clip(y, float(info.min), np.nextafter(top, 0.0)).astype(dtype)
        result[y >= top] = info.max
        return result
    return np.clip(y, float(info.min), top).astype(dtype)
