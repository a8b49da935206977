"""ONNX DynamicQuantizeLinear (version 11): x quantized to uint8 with a scale and zero point computed from
its range, by the operator's function body, all in float32:

    x_min = min(0, min(x))              x_max = max(0, max(x))
    y_scale = (x_max - x_min) / 255
    y_zero_point = uint8(round(clip(0 - x_min / y_scale, 0, 255)))      (ties to even)
    y = QuantizeLinear-10(x, y_scale, y_zero_point)

Where that arithmetic has no uint8 value the spec leaves the result undefined; docs/semantics.md
("Quantization") records what we do: a range of 0 (x all zeros, or empty) gives y_scale 0 (the formula's
value), zero point 0 and y all 0; NaN in x, an infinite x (its quotient inf / inf), and a non-zero range
whose scale underflows to 0 raise KernelError.
"""

from __future__ import annotations

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.quantized.arithmetic import ELEMENTS, element_of, first_index, version_of
from customops.kernels.quantized.binding import binder
from customops.kernels.quantized.compiled import quantize_float32
from customops.kernels.quantized.quantize_linear import quantize_linear

__all__ = ["bind", "dynamic_quantize_linear"]


def dynamic_quantize_linear(x: np.ndarray, *, version: int = 11) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, y_scale, y_zero_point) of float32 ``x`` as ONNX DynamicQuantizeLinear-11: y a new uint8 array of
    x's shape, y_scale a float32 scalar, y_zero_point a uint8 scalar (0-d arrays). Raises KernelError where
    the spec's float32 arithmetic gives no uint8 value (see the module's docstring)."""
    version_of("DynamicQuantizeLinear", version, (11,))
    x = np.asarray(x)
    element_of(x, "x", ("float",))
    limits.check_output(x.shape, np.uint8)
    zero = np.float32(0)
    least, most = (x.min(), x.max()) if x.size else (zero, zero)
    if np.isnan(least):  # numpy's min is NaN when any element is
        raise KernelError(
            f"x is NaN at index {first_index(np.isnan(x))}: its range, so y_scale and y_zero_point, are "
            "NaN, which uint8 cannot hold"
        )
    low = min(zero, least)
    high = max(zero, most)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        scale = np.float32(np.float32(high - low) / np.float32(255))
        if scale == 0:
            return _zero_range(x, high - low)
        initial = zero - np.float32(low / scale)
    if np.isnan(initial):
        raise KernelError(f"y_zero_point is NaN: 0 - min(x) / y_scale is {low} / {scale}")
    point = np.array(np.rint(min(max(initial, zero), np.float32(255))), dtype=np.uint8)  # clip, not NaN
    y = quantize_float32(x, np.array(scale), point, ELEMENTS["uint8"], nan_free=True)
    if y is None:  # no compiled loop, or a scale of inf (an infinite x)
        y = quantize_linear(x, np.array(scale), point, version=10)
    return y, np.array(scale, dtype=np.float32), point


def _zero_range(x: np.ndarray, span: np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x all zeros (or empty): y_scale is 0 / 255 = 0; the zero point (0 - 0 / 0) and y (0 / 0) have no
    value in the spec's arithmetic, and 0 is the one that maps x's zeros back to 0."""
    if span != 0:
        raise KernelError(
            f"the range of x, {span}, divided by 255 is 0 in float32: y_scale is 0 and the zero point, "
            "0 - min(x) / 0, has no value"
        )
    return np.zeros(x.shape, dtype=np.uint8), np.array(0, dtype=np.float32), np.array(0, dtype=np.uint8)


bind = binder(dynamic_quantize_linear)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
