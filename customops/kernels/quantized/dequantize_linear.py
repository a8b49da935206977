"""ONNX DequantizeLinear (versions 10, 13, 19, 21, 23, 24, 25, 28): ``y = (x - x_zero_point) * x_scale``.

``x - x_zero_point`` is exact (an integer, or the difference of two float8 or float4 values), and the
product is rounded once to the output type, the type that "determines the precision of the
multiplication" (23 and later; before, the output type is x_scale's): read as IEEE 754 reads an
operation's precision, the exact product rounded once to that type. docs/semantics.md ("Quantization")
records the decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import integer
from customops.kernels.quantized.arithmetic import (
    Element,
    Origin,
    check_pair,
    element_code,
    element_of,
    elementwise,
    layout,
    odd_product,
    only_attributes,
    optional,
    to_floats,
    version_of,
)
from customops.kernels.quantized.binding import binder
from customops.kernels.quantized.compiled import dequantize_float32

__all__ = ["SCHEMAS", "VERSIONS", "bind", "dequantize_linear"]

VERSIONS = (10, 13, 19, 21, 23, 24, 25, 28)

_FLOAT8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
_FLOATS = ("float", "float16", "bfloat16")


@dataclass(frozen=True)
class Schema:
    """What one version of DequantizeLinear allows."""

    x: tuple[str, ...]
    """The types of x and x_zero_point."""
    scale: tuple[str, ...]
    out: tuple[str, ...]
    """The types ``output_dtype`` may name (23 and later; before, y has x_scale's type)."""
    layouts: tuple[str, ...]
    attributes: tuple[str, ...]


_X21 = ("int8", "uint8", "int16", "uint16", "int32", *_FLOAT8, "uint4", "int4")
SCHEMAS: dict[int, Schema] = {
    10: Schema(("int8", "uint8", "int32"), ("float",), (), ("tensor",), ()),
    13: Schema(("int8", "uint8", "int32"), ("float",), (), ("tensor", "axis"), ("axis",)),
    19: Schema(("int8", "uint8", "int32", *_FLOAT8), _FLOATS, (), ("tensor", "axis"), ("axis",)),
    21: Schema(_X21, _FLOATS, (), ("tensor", "axis", "blocked"), ("axis", "block_size")),
    23: Schema(
        (*_X21, "float4e2m1"),
        _FLOATS,
        _FLOATS,
        ("tensor", "axis", "blocked"),
        ("axis", "block_size", "output_dtype"),
    ),
}
SCHEMAS[24] = Schema(
    SCHEMAS[23].x, (*_FLOATS, "float8e8m0"), _FLOATS, SCHEMAS[23].layouts, SCHEMAS[23].attributes
)
SCHEMAS[25] = Schema(
    (*SCHEMAS[24].x, "uint2", "int2"), SCHEMAS[24].scale, _FLOATS, SCHEMAS[24].layouts, SCHEMAS[24].attributes
)
SCHEMAS[28] = SCHEMAS[25]
"""28 adds the float6 types (float6e2m3, float6e3m2), which no numpy type holds: 25's arithmetic on the
rest (a float6 tensor is refused before it reaches the kernel)."""


def dequantize_linear(
    x: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    *,
    axis: int = 1,
    block_size: int = 0,
    output_dtype: int = 0,
    version: int = 25,
) -> np.ndarray:
    """Dequantize ``x`` as ONNX DequantizeLinear-``version`` does: ``(x - x_zero_point) * x_scale``.

    ``x_scale`` (and ``x_zero_point``, of x's type and the scale's shape; default 0) is one value, a 1-D
    tensor along ``axis`` (13 and later) or, with ``block_size`` > 0 (21 and later), x's shape with
    ceil(D / block_size) entries along ``axis``. The output type is ``output_dtype`` (a data type code, 23
    and later; 0: not given), else x_scale's. The zero point applies whatever x's type (float8, and int32,
    where the spec expects it to be 0, included). Returns a new C-contiguous array of x's shape."""
    v = version_of("DequantizeLinear", version, VERSIONS)
    schema = SCHEMAS[v]
    given = {"axis": (axis, 1), "block_size": (block_size, 0), "output_dtype": (output_dtype, 0)}
    only_attributes("DequantizeLinear", v, schema.attributes, given)
    x, scale = np.asarray(x), np.asarray(x_scale)
    zero_point = optional(x_zero_point, scale)
    x_type = element_of(x, "x", schema.x)
    scale_type = element_of(scale, "x_scale", schema.scale)
    if zero_point is not None:
        element_of(zero_point, "x_zero_point", (x_type.name,))
    out = _output_type(output_dtype, scale_type, schema)
    check_pair(scale, zero_point, ("x_scale", "x_zero_point"))
    spread = layout(x.shape, scale.shape, axis, block_size, schema.layouts)
    limits.check_output(x.shape, out.dtype)
    if spread.kind != "blocked":  # 8- or 16-bit integers into float32
        fast = dequantize_float32(
            x, scale, zero_point, out, axis=spread.axis if spread.kind == "axis" else None
        )
        if fast is not None:
            return fast
    zeros = np.zeros((), x.dtype) if zero_point is None else spread.spread(zero_point, x.shape)

    def chunk(origin: Origin, xs: np.ndarray, ss: np.ndarray, zs: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            difference = xs.astype(np.float64) - zs.astype(np.float64)  # exact
        return to_floats(odd_product(difference, ss.astype(np.float64)), out, True, "y", origin)

    return elementwise(chunk, [x, spread.spread(scale, x.shape), zeros], x.shape, out.dtype)


def _output_type(output_dtype: Any, scale_type: Element, schema: Schema) -> Element:
    code = integer(output_dtype, "output_dtype")
    if code:
        return element_code(code, "output_dtype", schema.out)
    if scale_type.kind == "e8m0":
        raise KernelError(
            "x_scale is float8e8m0 and output_dtype is not given: y would be float8e8m0, which is not an "
            f"output type; give output_dtype ({', '.join(schema.out)})"
        )
    return scale_type


bind = binder(dequantize_linear)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
