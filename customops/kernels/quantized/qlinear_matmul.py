"""ONNX QLinearMatMul (versions 10, 21): the quantized matrix product.

The real product ``sum_k (a - a_zero_point) * a_scale * (b - b_zero_point) * b_scale`` (per row of a and
per column of b, numpy.matmul broadcasting) is divided by ``y_scale`` and, exactly as a real number, rounded
once: half to even for integer outputs, then the zero point added and the type's range saturated
(``y = saturate(round(x / y_scale) + y_zero_point)``); for float8 outputs (21) x / y_scale + y_zero_point
is rounded once to nearest even, saturating. The sum of products is computed exactly in integers (float8
inputs are integers once multiplied by a power of two) and is not wrapped: the spec only permits a 32-bit
accumulator to overflow, and the real value of the formula has no overflow (docs/semantics.md,
"Quantization").
"""

from __future__ import annotations

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.quantized.arithmetic import (
    Element,
    check_pair,
    element_of,
    exact_matmul,
    finish,
    requantize,
    required,
    shifted,
    single,
    version_of,
)
from customops.kernels.quantized.binding import binder
from customops.kernels.quantized.matmul_integer import operands, per_column, per_row

__all__ = ["bind", "qlinear_matmul"]

_FLOAT8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
TYPES = {10: ("int8", "uint8"), 21: ("int8", "uint8", *_FLOAT8)}
SCALES = {10: ("float",), 21: ("float", "float16", "bfloat16")}


def qlinear_matmul(
    a: np.ndarray,
    a_scale: np.ndarray,
    a_zero_point: np.ndarray,
    b: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
    *,
    version: int = 21,
) -> np.ndarray:
    """The quantized product of ``a`` and ``b`` as ONNX QLinearMatMul-``version``: a new C-contiguous
    array of y_zero_point's type. a's scale and zero point are one value or per row ([M], or a's shape
    with K replaced by 1), b's one value or per column ([N], or b's shape with K replaced by 1), y's one
    value; every scale has one float type. Raises KernelError for every invalid input, and for a NaN
    result into an integer type."""
    v = version_of("QLinearMatMul", version, (10, 21))
    names = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point")
    values = (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
    required("QLinearMatMul", dict(zip(names, values, strict=True)))
    a, b = np.asarray(a), np.asarray(b)
    scales = [np.asarray(s) for s in (a_scale, b_scale, y_scale)]
    zeros = [np.asarray(z) for z in (a_zero_point, b_zero_point, y_zero_point)]
    a_type, b_type, out = _types(v, a, b, scales, zeros)
    pair = operands(a, b)
    if not (single(scales[2].shape) and single(zeros[2].shape)):
        raise KernelError(
            f"y_scale {scales[2].shape!r} and y_zero_point {zeros[2].shape!r} must be one value each"
        )
    limits.check_output(pair.out_shape, np.float64)
    num = per_row(scales[0].astype(np.float64), pair, "a_scale") * per_column(
        scales[1].astype(np.float64), pair, "b_scale"
    )
    den = scales[2].reshape(()).astype(np.float64)
    zero = zeros[2].reshape(()).astype(np.int64 if out.kind == "int" else np.float64)
    a_zero = per_row(zeros[0], pair, "a_zero_point")
    b_zero = per_column(zeros[1], pair, "b_zero_point")
    y = _product((pair.a, a_zero, pair.b, b_zero), (a_type, b_type, out), num, den, zero)
    return np.array(pair.result(y), order="C")


def _types(
    version: int, a: np.ndarray, b: np.ndarray, scales: list[np.ndarray], zeros: list[np.ndarray]
) -> tuple[Element, Element, Element]:
    """The element types of a, b and y, checked: each zero point of its tensor's type and its scale's
    shape, the three scales of one float type."""
    a_type = element_of(a, "a", TYPES[version])
    b_type = element_of(b, "b", TYPES[version])
    out = element_of(zeros[2], "y_zero_point", TYPES[version])
    element_of(zeros[0], "a_zero_point", (a_type.name,))
    element_of(zeros[1], "b_zero_point", (b_type.name,))
    scale_type = element_of(scales[0], "a_scale", SCALES[version])
    element_of(scales[1], "b_scale", (scale_type.name,))
    element_of(scales[2], "y_scale", (scale_type.name,))
    for prefix, scale, zero in zip("aby", scales, zeros, strict=True):
        check_pair(scale, zero, (f"{prefix}_scale", f"{prefix}_zero_point"))
    return a_type, b_type, out


def _difference(values: np.ndarray, zero: np.ndarray, kind: Element) -> np.ndarray:
    """``values - zero`` exactly: integers of at most 9 bits in float32, the difference of two float8
    values, of at most 35 significant bits, in float64 (NaN and infinities as IEEE gives them)."""
    if kind.kind == "int":
        return shifted(values, zero)
    with np.errstate(invalid="ignore"):
        return values.astype(np.float64) - zero.astype(np.float64)


def _integers(difference: np.ndarray, kind: Element) -> np.ndarray:
    """A difference as integers (below 2**36): as it is for integer types, times 2**shift for float8 types,
    NaN and infinities as 0 (their outputs are computed apart)."""
    if kind.kind == "int":
        return difference
    return np.where(np.isfinite(difference), difference * 2.0**kind.shift, 0.0)


def _product(
    operands: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    types: tuple[Element, Element, Element],
    num: np.ndarray,
    den: np.ndarray,
    zero: np.ndarray,
) -> np.ndarray:
    """The requantized product of a and b (2-D forms) less their zero points (spread), exactly; where a
    difference of float8 values is NaN or infinite, the outputs it reaches are the float64 (IEEE)
    evaluation of the formula."""
    a, a_zero, b, b_zero = operands
    a_type, b_type, out = types
    da, db = _difference(a, a_zero, a_type), _difference(b, b_zero, b_type)
    acc = exact_matmul(_integers(da, a_type), _integers(db, b_type), dtype=np.int32)
    what = "the real value of y before the zero point"
    y = requantize(acc, num * 2.0 ** -(a_type.shift + b_type.shift), den, zero, out, what)
    if np.isfinite(da).all() and np.isfinite(db).all():
        return y
    with np.errstate(invalid="ignore", over="ignore"):
        real = np.matmul(da, db)
        unusual = ~np.isfinite(real)
        value, zero_b = np.broadcast_arrays(real * num / den, zero)
    y[unusual] = finish(value[unusual], zero_b[unusual], out, what)
    return y


bind = binder(qlinear_matmul)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
