"""The spatial sampling family: GridSample, AffineGrid, RoiAlign, MaxRoiPool and DeformConv (kernels in
customops.kernels.spatial)."""

from __future__ import annotations

from customops.registry.core import NATIVE_TYPES, Attr, CustomOp, Family, Input, OpVersion


def _roi_align(version: int, types: tuple[str, ...]) -> OpVersion:
    """RoiAlign-10 has no coordinate_transformation_mode (its behaviour is 16's 'output_half_pixel')."""
    coords = (
        (
            Attr(
                "coordinate_transformation_mode",
                "string",
                "half_pixel",
                allowed=("half_pixel", "output_half_pixel"),
            ),
        )
        if version >= 16
        else ()
    )
    return OpVersion(
        "RoiAlign",
        version,
        (Input("X"), Input("rois"), Input("batch_indices", ("int64",))),
        (
            *coords,
            Attr("mode", "string", "avg", allowed=("avg", "max")),
            Attr("output_height", "int", 1),
            Attr("output_width", "int", 1),
            Attr("sampling_ratio", "int", 0),
            Attr("spatial_scale", "float", 1.0),
        ),
        types,
        "RoiAlign",
        notes="RoiAlign-10 samples without the half-pixel shift (16's output_half_pixel)"
        if version == 10
        else "",
    )


def _deform_conv(version: int, types: tuple[str, ...]) -> OpVersion:
    return OpVersion(
        "DeformConv",
        version,
        (Input("X"), Input("W"), Input("offset"), Input("B", optional=True), Input("mask", optional=True)),
        (
            Attr("dilations", "ints"),
            Attr("group", "int", 1),
            Attr("kernel_shape", "ints"),
            Attr("offset_group", "int", 1),
            Attr("pads", "ints"),
            Attr("strides", "ints"),
        ),
        types,
        "DeformConv",
    )


_GS_T_16 = (*NATIVE_TYPES, "float16", "complex64", "complex128")
_GS_T_22 = (*_GS_T_16, "bfloat16")
_GS_PADDING = ("zeros", "border", "reflection")


GRID_SAMPLE_16_MODES = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
"""GridSample-16's modes by GridSample-20's names: the same formula (16 is 20 on 4-D inputs), renamed."""


def _grid_sample(version: int) -> OpVersion:
    """GridSample-16 (4-D X, modes bilinear / nearest / bicubic), 20 and 22 (N-D, linear / nearest / cubic;
    22 adds bfloat16 for X and grid)."""
    modes = tuple(GRID_SAMPLE_16_MODES) if version == 16 else ("linear", "nearest", "cubic")
    grid_types = (
        ("float16", "float", "double") if version < 22 else ("bfloat16", "float16", "float", "double")
    )
    return OpVersion(
        "GridSample",
        version,
        (Input("X"), Input("grid", grid_types, probe_as_t=True)),
        (
            Attr("align_corners", "int", 0),
            Attr("mode", "string", modes[0], allowed=modes),
            Attr("padding_mode", "string", "zeros", allowed=_GS_PADDING),
        ),
        _GS_T_22 if version >= 22 else _GS_T_16,
        "GridSample",
        notes="4-D X only" if version == 16 else "",
    )


FAMILY = Family(
    "spatial",
    custom_ops=(
        CustomOp(
            name="AffineGrid",
            kernel="customops.kernels.spatial.affine_grid:affine_grid",
            inputs=(("theta", "T"), ("size", "int64")),
            attributes=(("align_corners", "int"),),
            types=("float", "double"),
            backend_tests=("test_affine_grid_",),
            case_module="affinegrid",
            # elements of its arrays (customops.kernels.work): 2 to 8 ns each; a 64x512x512 grid (772M)
            # takes 6 s, 8 x 1024x1024 (159M) 0.8 s
            reference_limit=600_000_000,
        ),
        CustomOp(
            name="MaxRoiPool",
            kernel="customops.kernels.spatial.max_roi_pool:max_roi_pool",
            inputs=(("X", "T"), ("rois", "T")),
            attributes=(("pooled_shape", "ints"), ("spatial_scale", "float")),
            types=("float", "double"),
            reference_limit=12_000_000,  # onnx 1.23's reference has no MaxRoiPool
        ),
        CustomOp(
            name="RoiAlign",
            kernel="customops.kernels.spatial.roi_align:roi_align",
            inputs=(("X", "T"), ("rois", "T"), ("batch_indices", "int64")),
            attributes=(
                ("coordinate_transformation_mode", "string"),
                ("mode", "string"),
                ("output_height", "int"),
                ("output_width", "int"),
                ("sampling_ratio", "int"),
                ("spatial_scale", "float"),
            ),
            types=("float", "double"),
            backend_tests=("test_roialign",),
            case_module="roialign",
            reference_limit=100_000_000,  # lines of its Python: 0.042 to 0.055 s per million
        ),
        CustomOp(
            name="DeformConv",
            kernel="customops.kernels.spatial.deform_conv:deform_conv",
            inputs=(("X", "T"), ("W", "T"), ("offset", "T"), ("B", "T"), ("mask", "T")),
            attributes=(
                ("dilations", "ints"),
                ("group", "int"),
                ("kernel_shape", "ints"),
                ("offset_group", "int"),
                ("pads", "ints"),
                ("strides", "ints"),
            ),
            types=("float", "double"),
            backend_tests=("test_basic_deform_conv", "test_deform_conv"),
            case_module="deformconv",
            reference_limit=30_000_000,  # lines of its Python (GridSample's per tap): 0.16 to 0.18 s per million
        ),
        CustomOp(
            name="GridSample",
            kernel="customops.kernels.spatial.grid_sample:grid_sample",
            inputs=(("X", "T"), ("grid", "double")),
            attributes=(("align_corners", "int"), ("mode", "string"), ("padding_mode", "string")),
            types=NATIVE_TYPES,
            backend_tests=("test_gridsample",),
            case_module="gridsample",
            reference_limit=40_000_000,  # lines of its Python: 0.09 to 0.14 s per million
        ),
    ),
    versions=(
        _grid_sample(16),
        _grid_sample(20),
        _grid_sample(22),
        OpVersion(
            "AffineGrid",
            20,
            (Input("theta"), Input("size", ("int64",))),
            (Attr("align_corners", "int", 0),),
            ("bfloat16", "float16", "float", "double"),
            "AffineGrid",
        ),
        _roi_align(10, ("float16", "float", "double")),
        _roi_align(16, ("float16", "float", "double")),
        _roi_align(22, ("bfloat16", "float16", "float", "double")),
        OpVersion(
            "MaxRoiPool",
            1,
            (Input("X"), Input("rois")),
            (Attr("pooled_shape", "ints", required=True), Attr("spatial_scale", "float", 1.0)),
            ("float16", "float", "double"),
            "MaxRoiPool",
        ),
        OpVersion(
            "MaxRoiPool",
            22,
            (Input("X"), Input("rois")),
            (Attr("pooled_shape", "ints", required=True), Attr("spatial_scale", "float", 1.0)),
            ("bfloat16", "float16", "float", "double"),
            "MaxRoiPool",
        ),
        _deform_conv(19, ("float16", "float", "double")),
        _deform_conv(22, ("bfloat16", "float16", "float", "double")),
    ),
)
