"""The resampling family: Resize and Upsample (kernels in customops.kernels.resampling)."""

from __future__ import annotations

from customops.registry.core import NATIVE_TYPES, Attr, CustomOp, Family, Input, OpVersion

_RESIZE_T_10 = (*NATIVE_TYPES, "float16", "complex64", "complex128")
_RESIZE_T_13 = (*_RESIZE_T_10, "bfloat16")
_ROI_T = ("float16", "float", "double")
_COORD_11 = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
_COORD_18 = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
_COORD_19 = (*_COORD_18, "half_pixel_symmetric")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_MODES = ("nearest", "linear", "cubic")


def _resize_attrs(coords: tuple[str, ...], v18: bool) -> tuple[Attr, ...]:
    common = (
        Attr("coordinate_transformation_mode", "string", "half_pixel", allowed=coords),
        Attr("cubic_coeff_a", "float", -0.75),
        Attr("exclude_outside", "int", 0),
        Attr("extrapolation_value", "float", 0.0),
        Attr("mode", "string", "nearest", allowed=_MODES),
        Attr("nearest_mode", "string", "round_prefer_floor", allowed=_NEAREST),
    )
    if not v18:
        return common
    return (
        Attr("antialias", "int", 0),
        Attr("axes", "ints", None),
        *common,
        Attr(
            "keep_aspect_ratio_policy", "string", "stretch", allowed=("stretch", "not_larger", "not_smaller")
        ),
    )


FAMILY = Family(
    "resampling",
    custom_ops=(
        CustomOp(
            name="Resize",
            kernel="customops.kernels.resampling.resize:resize",
            inputs=(("X", "T"), ("roi", "double"), ("scales", "float"), ("sizes", "int64")),
            attributes=(
                ("antialias", "int"),
                ("axes", "ints"),
                ("coordinate_transformation_mode", "string"),
                ("cubic_coeff_a", "float"),
                ("exclude_outside", "int"),
                ("extrapolation_value", "float"),
                ("keep_aspect_ratio_policy", "string"),
                ("mode", "string"),
                ("nearest_mode", "string"),
            ),
            types=NATIVE_TYPES,
            backend_tests=("test_resize",),
            case_module="resize",
            # elements of its arrays, a microsecond of its Python as 100 (customops.kernels.work): about 10 ns
            # each; nearest x2 of 1x3x720x1280 (114M) takes 1.2 s, 20000 resizes of one element (axes, 66M)
            # 0.65 s
            reference_limit=500_000_000,
        ),
        CustomOp(
            name="Upsample",
            kernel="customops.kernels.resampling.upsample:upsample",
            inputs=(("X", "T"), ("scales", "float")),
            attributes=(("mode", "string"),),
            types=NATIVE_TYPES,
            backend_tests=("test_upsample",),
            case_module="upsample",
            reference_limit=48_000_000,  # output elements x taps: numpy's repeat (nearest; the rest is refused)
        ),
    ),
    versions=(
        OpVersion(
            "Resize",
            10,
            (Input("X"), Input("scales", ("float",))),
            (Attr("mode", "string", "nearest", allowed=("nearest", "linear")),),
            _RESIZE_T_10,
            "Upsample",
            notes="asymmetric coordinates; nearest rounds down on growing axes and up on shrinking ones",
        ),
        OpVersion(
            "Resize",
            11,
            (
                Input("X"),
                Input("roi", _ROI_T),
                Input("scales", ("float",)),
                Input("sizes", ("int64",), optional=True),
            ),
            _resize_attrs(_COORD_11, v18=False),
            _RESIZE_T_10,
            "Resize",
        ),
        OpVersion(
            "Resize",
            13,
            (
                Input("X"),
                Input("roi", _ROI_T, optional=True),
                Input("scales", ("float",), optional=True),
                Input("sizes", ("int64",), optional=True),
            ),
            _resize_attrs(_COORD_11, v18=False),
            _RESIZE_T_13,
            "Resize",
        ),
        OpVersion(
            "Resize",
            18,
            (
                Input("X"),
                Input("roi", _ROI_T, optional=True),
                Input("scales", ("float",), optional=True),
                Input("sizes", ("int64",), optional=True),
            ),
            _resize_attrs(_COORD_18, v18=True),
            _RESIZE_T_13,
            "Resize",
        ),
        OpVersion(
            "Resize",
            19,
            (
                Input("X"),
                Input("roi", _ROI_T, optional=True),
                Input("scales", ("float",), optional=True),
                Input("sizes", ("int64",), optional=True),
            ),
            _resize_attrs(_COORD_19, v18=True),
            _RESIZE_T_13,
            "Resize",
        ),
        OpVersion(
            "Upsample",
            7,
            (Input("X"),),
            (
                Attr("mode", "string", "nearest", allowed=("nearest", "linear")),
                Attr("scales", "floats", required=True),
            ),
            _RESIZE_T_10,
            "Upsample",
            notes="asymmetric coordinates; nearest rounds down (floor); output = floor(input * scale)",
        ),
        OpVersion(
            "Upsample",
            9,
            (Input("X"), Input("scales", ("float",))),
            (Attr("mode", "string", "nearest", allowed=("nearest", "linear")),),
            _RESIZE_T_10,
            "Upsample",
            notes="asymmetric coordinates; nearest rounds down (floor); output = floor(input * scale)",
            until=9,
        ),
    ),
)
