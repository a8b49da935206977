"""The quantized family: the integer and float8 operators (kernels in customops.kernels.quantized)."""

from __future__ import annotations

from customops.registry.core import Attr, CustomOp, Family, Input, OpVersion, signatures

_Q8 = ("int8", "uint8")
_Q_CARRIED = (*_Q8, "float")
"""The carriers of the quantized family's integer and float8 types (customops.kernels.quantized.binding)."""
_Q_ATTRS = (("types", "string"), ("version", "int"))
"""What every quantized kernel is told besides the standard attributes: the real element type of each
input and output (the layer carries narrow ones in wider types) and the op's version."""
_CONV_ATTRS = (
    ("auto_pad", "string"),
    ("dilations", "ints"),
    ("group", "int"),
    ("kernel_shape", "ints"),
    ("pads", "ints"),
    ("strides", "ints"),
)


def _quantized(name: str, module: str, **fields: object) -> CustomOp:
    """A custom op of the quantized family: its kernel ``customops.kernels.quantized.<module>:<module>``."""
    fields.setdefault("attributes", _Q_ATTRS)
    return CustomOp(name=name, kernel=f"customops.kernels.quantized.{module}:{module}", **fields)  # type: ignore[arg-type]


QUANTIZED_OPS = (
    _quantized(
        "MatMulInteger",
        "matmul_integer",
        inputs=(("A", "T1"), ("B", "T2"), ("a_zero_point", "T1"), ("b_zero_point", "T2")),
        types=_Q8,
        outputs=("int32",),
        signatures=signatures(T1=_Q8, T2=_Q8),
        backend_tests=("test_matmulinteger",),
        case_module="matmulinteger",
        reference_limit=2_000_000_000,  # multiply-adds, array elements x 10: 0.25 to 1.2 s per billion
    ),
    _quantized(
        "ConvInteger",
        "conv_integer",
        inputs=(("x", "T1"), ("w", "T2"), ("x_zero_point", "T1"), ("w_zero_point", "T2")),
        attributes=(*_CONV_ATTRS, *_Q_ATTRS),
        types=_Q8,
        outputs=("int32",),
        signatures=signatures(T1=_Q8, T2=_Q8),
        backend_tests=("test_convinteger",),
        case_module="convinteger",
        reference_limit=1_000_000_000,  # as MatMulInteger: 0.1 to 0.5 s per billion; bounds its im2col
    ),
    _quantized(
        "QLinearMatMul",
        "qlinear_matmul",
        inputs=(
            ("a", "T1"),
            ("a_scale", "float"),
            ("a_zero_point", "T1"),
            ("b", "T2"),
            ("b_scale", "float"),
            ("b_zero_point", "T2"),
            ("y_scale", "float"),
            ("y_zero_point", "T3"),
        ),
        types=_Q_CARRIED,
        outputs=("T3",),
        signatures=signatures(T1=_Q_CARRIED, T2=_Q_CARRIED, T3=_Q_CARRIED),
        backend_tests=("test_qlinearmatmul",),
        case_module="qlinearmatmul",
        reference_limit=2_000_000_000,  # as MatMulInteger: 0.4 to 1.6 s per billion
    ),
    _quantized(
        "QLinearConv",
        "qlinear_conv",
        inputs=(
            ("x", "T1"),
            ("x_scale", "float"),
            ("x_zero_point", "T1"),
            ("w", "T2"),
            ("w_scale", "float"),
            ("w_zero_point", "T2"),
            ("y_scale", "float"),
            ("y_zero_point", "T3"),
            ("B", "int32"),
        ),
        attributes=(*_CONV_ATTRS, *_Q_ATTRS),
        types=_Q8,
        outputs=("T3",),
        signatures=signatures(T1=_Q8, T2=_Q8, T3=_Q8),
        backend_tests=("test_qlinearconv",),
        case_module="qlinearconv",
        reference_limit=1_000_000_000,  # as ConvInteger: 0.1 to 0.45 s per billion
    ),
    _quantized(
        "QuantizeLinear",
        "quantize_linear",
        inputs=(("x", "T1"), ("y_scale", "T2"), ("y_zero_point", "T3")),
        attributes=(
            ("axis", "int"),
            ("block_size", "int"),
            ("output_dtype", "int"),
            ("precision", "int"),
            ("saturate", "int"),
            *_Q_ATTRS,
        ),
        types=("float", "int32"),
        outputs=("T3",),
        signatures=signatures(
            T1=("float", "int32"), T2=("float", "int32"), T3=("int8", "uint8", "int16", "uint16", "float")
        ),
        backend_tests=("test_quantizelinear",),
        case_module="quantizelinear",
        reference_limit=4_000_000_000,  # x elements x 8 passes x 10: 50M elements, 0.1 s per billion
    ),
    _quantized(
        "DequantizeLinear",
        "dequantize_linear",
        inputs=(("x", "T1"), ("x_scale", "float"), ("x_zero_point", "T1")),
        attributes=(("axis", "int"), ("block_size", "int"), ("output_dtype", "int"), *_Q_ATTRS),
        types=("int8", "uint8", "int16", "uint16", "int32", "float"),
        outputs=("float",),
        signatures=signatures(T1=("int8", "uint8", "int16", "uint16", "int32", "float")),
        backend_tests=("test_dequantizelinear",),
        case_module="dequantizelinear",
        reference_limit=3_000_000_000,  # x elements x 6 passes x 10: 50M elements, 0.06 s per billion
    ),
    _quantized(
        "DynamicQuantizeLinear",
        "dynamic_quantize_linear",
        inputs=(("x", "T"),),
        types=("float",),
        outputs=("uint8", "float", "uint8"),
        backend_tests=("test_dynamicquantizelinear",),
        case_module="dynamicquantizelinear",
        reference_limit=3_000_000_000,  # x elements x 7 passes x 10: 43M elements, 0.07 s per billion
    ),
)
"""The quantized integer family: each integer or float8 tensor crosses the layer in its carrier
(int8, uint8, int16, uint16, int32, or float for float8), the kernels compute on the real types."""


_F8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
_FLOATS = ("float", "float16", "bfloat16")
_CONV_STD = (
    Attr("auto_pad", "string", "NOTSET", allowed=("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")),
    Attr("dilations", "ints"),
    Attr("group", "int", 1),
    Attr("kernel_shape", "ints"),
    Attr("pads", "ints"),
    Attr("strides", "ints"),
)


def _typed(
    op: str, version: int, inputs: tuple[Input, ...], variables: dict[str, tuple[str, ...]], **more: object
) -> OpVersion:
    """A version of a quantized op: its inputs name the schema's type variables (or a fixed type), and
    ``variables`` are the types each allows."""
    first = inputs[0].types[0]
    return OpVersion(
        op,
        version,
        inputs,
        more.pop("attributes", ()),  # type: ignore[arg-type]
        variables[first],
        more.pop("custom", op),  # type: ignore[arg-type]
        type_vars=tuple(variables.items()),
        **more,  # type: ignore[arg-type]
    )


def _quantize(version: int) -> OpVersion:
    """QuantizeLinear: x and y_scale share T1 in 19 and 21; 23 on types y_scale by its own T2."""
    t3 = ("int8", "uint8")
    if version >= 19:
        t3 = (*t3, *_F8) if version == 19 else ("int8", "uint8", "int16", "uint16", *_F8, "uint4", "int4")
    if version >= 23:
        t3 = (*t3, "float4e2m1")
    if version >= 25:
        t3 = (*t3, "uint2", "int2")
    if version >= 28:
        t3 = (*t3, "float6e2m3", "float6e3m2")
    x = ("float", "int32") if version < 19 else (*_FLOATS, "int32")
    scale: tuple[str, ...] = ("float",) if version < 19 else x
    if version >= 24:
        scale = (*x, "float8e8m0")
    shared = version in (19, 21)
    names = ("T1", "float" if version < 19 else ("T1" if shared else "T2"), "T2" if version < 23 else "T3")
    variables = {"T1": x, **({} if version < 19 or shared else {"T2": scale}), names[2]: t3}
    attrs = [Attr("axis", "int", 1)] if version >= 13 else []
    if version >= 19:
        attrs.append(Attr("saturate", "int", 1))
    if version >= 21:
        attrs += [Attr("block_size", "int", 0), Attr("output_dtype", "int", 0)]
    if version >= 23:
        attrs.append(Attr("precision", "int", 0))
    inputs = (
        Input("x", (names[0],)),
        Input("y_scale", (names[1],)),
        Input("y_zero_point", (names[2],), True),
    )
    return _typed("QuantizeLinear", version, inputs, variables, attributes=tuple(attrs))


def _dequantize(version: int) -> OpVersion:
    """DequantizeLinear: x and its zero point share T1; y is float before 19, x_scale's T2 from 19, and
    T3 (output_dtype, else T2) from 23."""
    t1 = ("int8", "uint8", "int32")
    if version >= 19:
        t1 = (*t1, *_F8)
    if version >= 21:
        t1 = ("int8", "uint8", "int16", "uint16", "int32", *_F8, "uint4", "int4")
    if version >= 23:
        t1 = (*t1, "float4e2m1")
    if version >= 25:
        t1 = (*t1, "uint2", "int2")
    if version >= 28:
        t1 = (*t1, "float6e2m3", "float6e3m2")
    var = "T" if version < 19 else "T1"
    variables = {var: t1}
    if version >= 19:
        variables["T2"] = (*_FLOATS, "float8e8m0") if version >= 24 else _FLOATS
    if version >= 23:
        variables["T3"] = _FLOATS
    attrs = [Attr("axis", "int", 1)] if version >= 13 else []
    if version >= 21:
        attrs.append(Attr("block_size", "int", 0))
    if version >= 23:
        attrs.append(Attr("output_dtype", "int", 0))
    scale = "float" if version < 19 else "T2"
    inputs = (Input("x", (var,)), Input("x_scale", (scale,)), Input("x_zero_point", (var,), True))
    return _typed("DequantizeLinear", version, inputs, variables, attributes=tuple(attrs))


def _qlinear_matmul(version: int) -> OpVersion:
    t = _Q8 if version < 21 else (*_Q8, *_F8)
    scale = "float" if version < 21 else "TS"
    variables = {"T1": t, "T2": t, "T3": t, **({"TS": _FLOATS} if version >= 21 else {})}
    inputs = tuple(
        Input(name, (var,))
        for name, var in (
            ("a", "T1"),
            ("a_scale", scale),
            ("a_zero_point", "T1"),
            ("b", "T2"),
            ("b_scale", scale),
            ("b_zero_point", "T2"),
            ("y_scale", scale),
            ("y_zero_point", "T3"),
        )
    )
    return _typed("QLinearMatMul", version, inputs, variables)


QUANTIZED_VERSIONS: tuple[OpVersion, ...] = (
    _typed(
        "MatMulInteger",
        10,
        (
            Input("A", ("T1",)),
            Input("B", ("T2",)),
            Input("a_zero_point", ("T1",), True),
            Input("b_zero_point", ("T2",), True),
        ),
        {"T1": _Q8, "T2": _Q8, "T3": ("int32",)},
    ),
    _typed(
        "ConvInteger",
        10,
        (
            Input("x", ("T1",)),
            Input("w", ("T2",)),
            Input("x_zero_point", ("T1",), True),
            Input("w_zero_point", ("T2",), True),
        ),
        {"T1": _Q8, "T2": _Q8, "T3": ("int32",)},
        attributes=_CONV_STD,
    ),
    _qlinear_matmul(10),
    _qlinear_matmul(21),
    _typed(
        "QLinearConv",
        10,
        tuple(
            Input(name, (var,), name == "B")
            for name, var in (
                ("x", "T1"),
                ("x_scale", "float"),
                ("x_zero_point", "T1"),
                ("w", "T2"),
                ("w_scale", "float"),
                ("w_zero_point", "T2"),
                ("y_scale", "float"),
                ("y_zero_point", "T3"),
                ("B", "T4"),
            )
        ),
        {"T1": _Q8, "T2": _Q8, "T3": _Q8, "T4": ("int32",)},
        attributes=_CONV_STD,
    ),
    _typed("DynamicQuantizeLinear", 11, (Input("x", ("T1",)),), {"T1": ("float",), "T2": ("uint8",)}),
    *(_quantize(v) for v in (10, 13, 19, 21, 23, 24, 25, 28)),
    *(_dequantize(v) for v in (10, 13, 19, 21, 23, 24, 25, 28)),
)
"""The quantized family's versions, as their schemas type them."""
FAMILY = Family("quantized", QUANTIZED_OPS, QUANTIZED_VERSIONS)
