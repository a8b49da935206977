"""ONNX QLinearConv (version 10): the quantized convolution.

The exact integer sum of ConvInteger (:func:`customops.kernels.quantized.conv_integer.integer_conv`) plus
the bias ``B`` (quantized with scale x_scale * w_scale and zero point 0, as the spec requires) is the
real value ``x_scale * w_scale * (sum + B)``; divided by ``y_scale`` it is rounded once, half to even,
then the zero point is added and the output type's range saturated. No sum wraps around: the real value
of the formula has no overflow (docs/semantics.md, "Quantization").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import is_absent
from customops.kernels.quantized.arithmetic import (
    check_pair,
    element_of,
    requantize,
    required,
    shifted,
    version_of,
)
from customops.kernels.quantized.binding import binder
from customops.kernels.quantized.conv_integer import EIGHT_BITS, channel_values, geometry, integer_conv

__all__ = ["bind", "qlinear_conv"]


def qlinear_conv(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray,
    w: np.ndarray,
    w_scale: np.ndarray,
    w_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
    B: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Any = None,
    group: int = 1,
    kernel_shape: Any = None,
    pads: Any = None,
    strides: Any = None,
    version: int = 10,
) -> np.ndarray:
    """The quantized Conv of int8 or uint8 ``x`` [N, C, D1..Dr] and ``w`` [M, C/group, k1..kr] as ONNX
    QLinearConv-10: a new C-contiguous [N, M, o1..or] array of y_zero_point's type. x's and y's scale and
    zero point are one value each, w's one value or one per output channel [M] (a scale and its zero
    point of one shape); ``B`` an int32 [M] (absent or empty: none). Attributes as ONNX Conv's. Raises
    KernelError for every invalid input, and for a NaN result (a scale 0, inf or NaN)."""
    version_of("QLinearConv", version, (10,))
    names = ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point")
    values = (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point)
    required("QLinearConv", dict(zip(names, values, strict=True)))
    x, w = np.asarray(x), np.asarray(w)
    scales = [np.asarray(s) for s in (x_scale, w_scale, y_scale)]
    zeros = [np.asarray(z) for z in (x_zero_point, w_zero_point, y_zero_point)]
    x_type = element_of(x, "x", EIGHT_BITS)
    w_type = element_of(w, "w", EIGHT_BITS)
    out = element_of(zeros[2], "y_zero_point", EIGHT_BITS)
    for name, zero, kind in (("x_zero_point", zeros[0], x_type), ("w_zero_point", zeros[1], w_type)):
        element_of(zero, name, (kind.name,))
    for prefix, scale, zero in zip("xwy", scales, zeros, strict=True):
        element_of(scale, f"{prefix}_scale", ("float",))
        check_pair(scale, zero, (f"{prefix}_scale", f"{prefix}_zero_point"))
    geo = geometry(x.shape, w.shape, auto_pad, dilations, group, kernel_shape, pads, strides)
    rank = len(geo.out_shape)
    limits.check_output(geo.out_shape, np.float64)
    x_zero = channel_values(zeros[0], "x_zero_point", None, 0).astype(np.int64)
    w_zero = channel_values(zeros[1], "w_zero_point", geo.out_channels, w.ndim - 1).astype(np.int64)
    acc = integer_conv(shifted(x, x_zero), shifted(w, w_zero), geo)
    acc += _bias(B, geo.out_channels, rank)
    num = channel_values(scales[0], "x_scale", None, 0).astype(np.float64) * channel_values(
        scales[1], "w_scale", geo.out_channels, rank - 2
    ).astype(np.float64)
    den = channel_values(scales[2], "y_scale", None, 0).astype(np.float64)
    zero = channel_values(zeros[2], "y_zero_point", None, 0).astype(np.int64)
    return requantize(acc, num, den, zero, out, "the real value of y before the zero point")


def _bias(value: Any, channels: int, rank: int) -> np.ndarray:
    """B as int64 [M, 1, ...] (0 when absent or empty)."""
    if value is None or (is_absent(value) and channels):
        return np.zeros((), dtype=np.int64)
    b = np.asarray(value)
    element_of(b, "B", ("int32",))
    if b.shape != (channels,):
        raise KernelError(f"B has shape {b.shape!r}; it must be [M] = ({channels},)")
    return b.astype(np.int64).reshape((channels,) + (1,) * (rank - 2))


bind = binder(qlinear_conv)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
