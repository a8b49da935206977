"""ONNX QuantizeLinear (versions 10, 13, 19, 21, 23, 24, 25, 28): ``y = saturate(x / y_scale + y_zero_point)``.

The quotient is computed in the division's precision: the ``precision`` attribute (23 and later) or else
the type of ``y_scale`` (float32 before 19, x's own type in 19 and 21, where x and y_scale share one
type). "The precision of the division" is read as IEEE 754 reads an operation's precision: the exact
quotient of x and y_scale (each with its exact value) is rounded once to that type. An int32 precision
(an int32 y_scale) gives the exact quotient rounded half to even to an integer. Then:

- integer outputs: the quotient rounded half to even, plus the zero point, saturated to the type's range
  (+-inf saturate; NaN has no value there: KernelError);
- float8 outputs: quotient + zero point (exactly) rounded once to nearest even by the Cast table of the
  spec, with ``saturate``; float4e2m1 always saturates (it has no infinity) and has no NaN (KernelError).

docs/semantics.md ("Quantization") records each decision and where onnx.reference and ONNX Runtime differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import flag, integer
from customops.kernels.quantized.arithmetic import (
    ELEMENTS,
    Element,
    Origin,
    check_pair,
    element_code,
    element_of,
    elementwise,
    layout,
    odd_quotient,
    odd_sum,
    only_attributes,
    optional,
    to_floats,
    to_integers,
    version_of,
)
from customops.kernels.quantized.binding import binder
from customops.kernels.quantized.compiled import quantize_float32

__all__ = ["SCHEMAS", "VERSIONS", "bind", "quantize_linear"]

VERSIONS = (10, 13, 19, 21, 23, 24, 25, 28)

_FLOAT8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
_X = ("float", "float16", "bfloat16", "int32")


@dataclass(frozen=True)
class Schema:
    """What one version of QuantizeLinear allows."""

    x: tuple[str, ...]
    scale: tuple[str, ...]
    out: tuple[str, ...]
    """The types of y_zero_point and y."""
    layouts: tuple[str, ...]
    attributes: tuple[str, ...]
    shared: bool
    """x and y_scale have one type (T1 of versions 19 and 21)."""


SCHEMAS: dict[int, Schema] = {
    10: Schema(("float", "int32"), ("float",), ("int8", "uint8"), ("tensor",), (), False),
    13: Schema(("float", "int32"), ("float",), ("int8", "uint8"), ("tensor", "axis"), ("axis",), False),
    19: Schema(_X, _X, ("int8", "uint8", *_FLOAT8), ("tensor", "axis"), ("axis", "saturate"), True),
    21: Schema(
        _X,
        _X,
        ("int8", "uint8", "int16", "uint16", *_FLOAT8, "uint4", "int4"),
        ("tensor", "axis", "blocked"),
        ("axis", "saturate", "block_size", "output_dtype"),
        True,
    ),
}
SCHEMAS[23] = Schema(
    _X,
    _X,
    (*SCHEMAS[21].out, "float4e2m1"),
    SCHEMAS[21].layouts,
    (*SCHEMAS[21].attributes, "precision"),
    False,
)
SCHEMAS[24] = Schema(
    _X, (*_X, "float8e8m0"), SCHEMAS[23].out, SCHEMAS[23].layouts, SCHEMAS[23].attributes, False
)
SCHEMAS[25] = Schema(
    _X,
    SCHEMAS[24].scale,
    (*SCHEMAS[24].out, "uint2", "int2"),
    SCHEMAS[24].layouts,
    SCHEMAS[24].attributes,
    False,
)
SCHEMAS[28] = SCHEMAS[25]
"""28 adds the float6 types (float6e2m3, float6e3m2), which no numpy type holds: 25's arithmetic on the
rest (a float6 tensor is refused before it reaches the kernel)."""

PRECISIONS = ("float", "float16", "bfloat16", "int32")
"""The types a division can be computed in (the ``precision`` attribute's values)."""


def quantize_linear(
    x: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    saturate: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    precision: int = 0,
    version: int = 25,
) -> np.ndarray:
    """Quantize ``x`` as ONNX QuantizeLinear-``version`` does: ``saturate(x / y_scale + y_zero_point)``.

    ``y_scale`` (and ``y_zero_point``, of its shape) is one value (per tensor), a 1-D tensor along
    ``axis`` (13 and later) or, with ``block_size`` > 0 (21 and later), x's shape with ceil(D / block_size)
    entries along ``axis``. The output type is ``y_zero_point``'s; without it ``output_dtype`` (a data type
    code, 21 and later; 0: not given), else uint8. A zero point given as an empty tensor beside a non-empty
    scale counts as absent. Returns a new C-contiguous array of x's shape. Raises KernelError for every
    invalid input, and for a NaN quotient into a type without NaN."""
    v = version_of("QuantizeLinear", version, VERSIONS)
    schema = SCHEMAS[v]
    given = {"axis": (axis, 1), "saturate": (saturate, 1), "block_size": (block_size, 0)}
    given.update(output_dtype=(output_dtype, 0), precision=(precision, 0))
    only_attributes("QuantizeLinear", v, schema.attributes, given)
    saturating = flag(saturate, "saturate")
    x, scale = np.asarray(x), np.asarray(y_scale)
    zero_point = optional(y_zero_point, scale)
    x_type = element_of(x, "x", schema.x)
    scale_type = element_of(scale, "y_scale", schema.scale)
    if schema.shared and scale_type != x_type:
        raise KernelError(
            f"x is {x_type.name} but y_scale is {scale_type.name}; in QuantizeLinear-{v} they have one type"
        )
    out = _output_type(zero_point, output_dtype, schema)
    check_pair(scale, zero_point, ("y_scale", "y_zero_point"))
    spread = layout(x.shape, scale.shape, axis, block_size, schema.layouts)
    divide_in = _precision(precision, scale_type)
    limits.check_output(x.shape, out.dtype)
    if spread.kind != "blocked" and divide_in.name == "float":  # float32 into 8- or 16-bit integers
        fast = quantize_float32(
            x, scale, zero_point, out, axis=spread.axis if spread.kind == "axis" else None
        )
        if fast is not None:
            return fast
    scales = spread.spread(scale, x.shape)
    zeros = np.zeros((), np.int64) if zero_point is None else spread.spread(zero_point, x.shape)

    def chunk(origin: Origin, xs: np.ndarray, ss: np.ndarray, zs: np.ndarray) -> np.ndarray:
        quotient = divide(xs, ss, divide_in)
        if out.kind == "int":
            return to_integers(quotient, zs, out, "x / y_scale", origin)
        total = odd_sum(quotient, zs.astype(np.float64))
        return to_floats(total, out, saturating, "x / y_scale + y_zero_point", origin)

    return elementwise(chunk, [x, scales, zeros], x.shape, out.dtype)


def _output_type(zero_point: np.ndarray | None, output_dtype: Any, schema: Schema) -> Element:
    """y's type: the zero point's, else ``output_dtype``'s, else uint8; the two must agree when both are
    given."""
    code = integer(output_dtype, "output_dtype")
    if zero_point is None:
        return element_code(code, "output_dtype", schema.out) if code else ELEMENTS["uint8"]
    out = element_of(zero_point, "y_zero_point", schema.out)
    if code and code != out.code:
        raise KernelError(
            f"output_dtype is {code} but y_zero_point is {out.name} ({out.code}); when both are given "
            "they must be the same type"
        )
    return out


def _precision(precision: Any, scale_type: Element) -> Element:
    """The type the division is computed in: ``precision`` (a data type code; 0: not given), else the
    type of y_scale. A float8e8m0 y_scale cannot be that type (it holds only powers of two, no sign)."""
    code = integer(precision, "precision")
    if code:
        return element_code(code, "precision", PRECISIONS)
    if scale_type.kind == "e8m0":
        raise KernelError(
            "y_scale is float8e8m0 and precision is not given: the division would be computed in "
            "float8e8m0, which holds only powers of two; give precision (float, float16, bfloat16 or int32)"
        )
    return scale_type


def divide(x: np.ndarray, scale: np.ndarray, precision: Element) -> np.ndarray:
    """x / scale (broadcasting) rounded once to ``precision``, as float64: a float type's nearest value
    (ties to even; infinities and NaN by IEEE), or for int32 the nearest integer, ties to even.

    The exact quotient rounded to odd in float64 rounds once to any type of at most 51 bits of precision;
    an integer quotient of 2**51 or more is past every output type's range, which saturates it."""
    exact = odd_quotient(x.astype(np.float64), scale.astype(np.float64))
    if precision.kind == "int":
        return np.rint(exact)
    with np.errstate(over="ignore"):
        return exact.astype(precision.dtype).astype(np.float64)


bind = binder(quantize_linear)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
