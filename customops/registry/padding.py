"""The padding family: Pad, Col2Im and CenterCropPad (kernels in customops.kernels.padding)."""

from __future__ import annotations

from customops.registry.core import NATIVE_TYPES, NUMERIC_NATIVE, Attr, CustomOp, Family, Input, OpVersion

_PAD_T_11 = (*NUMERIC_NATIVE, "float16")
_PAD_T_13 = (*NATIVE_TYPES, "float16", "bfloat16", "complex64", "complex128")
_PAD_T_21 = (*_PAD_T_13, "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4")
_PAD_T_23 = (*_PAD_T_21, "float4e2m1")
_PAD_T_24 = (*_PAD_T_23, "float8e8m0")
_PAD_T_25 = (*_PAD_T_24, "uint2", "int2")
_PAD_MODES = ("constant", "reflect", "edge")
_PAD_MODES_19 = (*_PAD_MODES, "wrap")


def _pad_18(version: int, types: tuple[str, ...]) -> OpVersion:
    return OpVersion(
        "Pad",
        version,
        (
            Input("data"),
            Input("pads", ("int64",)),
            Input("constant_value", optional=True),
            Input("axes", ("int32", "int64"), optional=True),
        ),
        (Attr("mode", "string", "constant", allowed=_PAD_MODES if version < 19 else _PAD_MODES_19),),
        types,
        "Pad",
    )


_ALL_13 = (*NATIVE_TYPES, "float16", "bfloat16", "complex64", "complex128")


FAMILY = Family(
    "padding",
    custom_ops=(
        CustomOp(
            name="Pad",
            kernel="customops.kernels.padding.pad:pad",
            inputs=(("data", "T"), ("pads", "int64"), ("constant_value", "T"), ("axes", "int64")),
            attributes=(("mode", "string"),),
            types=NATIVE_TYPES,
            backend_tests=("test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_wrap_pad"),
            case_module="pad",
            reference_limit=50_000_000,  # output elements (numpy's pad): 0.35 s; kept there for the memory
        ),
        CustomOp(
            name="Col2Im",
            kernel="customops.kernels.padding.col2im:col2im",
            inputs=(("input", "T"), ("image_shape", "int64"), ("block_shape", "int64")),
            attributes=(("dilations", "ints"), ("pads", "ints"), ("strides", "ints")),
            types=NATIVE_TYPES,
            backend_tests=("test_col2im",),
            case_module="col2im",
            reference_limit=30_000_000,  # lines of its Python: 0.15 to 0.29 s per million
        ),
        CustomOp(
            name="CenterCropPad",
            kernel="customops.kernels.padding.center_crop_pad:center_crop_pad",
            inputs=(("input_data", "T"), ("shape", "int64")),
            attributes=(("axes", "ints"),),
            types=NATIVE_TYPES,
            backend_tests=("test_center_crop_pad",),
            case_module="center_crop_pad",
            reference_limit=50_000_000,  # input and output elements (slices): well under a second
        ),
    ),
    versions=(
        OpVersion(
            "Pad",
            2,
            (Input("data"),),
            (
                Attr("mode", "string", "constant", allowed=_PAD_MODES),
                Attr("pads", "ints", required=True),
                Attr("value", "float", 0.0),
            ),
            ("float16", "float", "double"),
            "Pad",
        ),
        OpVersion(
            "Pad",
            11,
            (Input("data"), Input("pads", ("int64",)), Input("constant_value", optional=True)),
            (Attr("mode", "string", "constant", allowed=_PAD_MODES),),
            _PAD_T_11,
            "Pad",
        ),
        OpVersion(
            "Pad",
            13,
            (Input("data"), Input("pads", ("int64",)), Input("constant_value", optional=True)),
            (Attr("mode", "string", "constant", allowed=_PAD_MODES),),
            _PAD_T_13,
            "Pad",
        ),
        _pad_18(18, _PAD_T_13),
        _pad_18(19, _PAD_T_13),
        _pad_18(21, _PAD_T_21),
        _pad_18(23, _PAD_T_23),
        _pad_18(24, _PAD_T_24),
        _pad_18(25, _PAD_T_25),
        OpVersion(
            "Col2Im",
            18,
            (Input("input"), Input("image_shape", ("int64",)), Input("block_shape", ("int64",))),
            (Attr("dilations", "ints"), Attr("pads", "ints"), Attr("strides", "ints")),
            _ALL_13,
            "Col2Im",
        ),
        OpVersion(
            "CenterCropPad",
            18,
            (Input("input_data"), Input("shape", ("int32", "int64"))),
            (Attr("axes", "ints"),),
            _ALL_13,
            "CenterCropPad",
        ),
    ),
)
