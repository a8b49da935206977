"""The one table of supported (op, version) pairs: inputs, attributes with spec defaults, element types.

Registration with ONNX Runtime, translation of standard nodes, the fuzzer and the docs all read this table.
Each standard (op, version) maps onto one *custom* op in :data:`DOMAIN` whose signature is fixed
(every optional input present, every attribute written out), so one kernel serves every version.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

DOMAIN = "customops"
"""The private operator domain our custom ops live in."""

# Element types by their ONNX names (``onnx.TensorProto.DataType`` names, lower case).
NUMERIC_NATIVE = (
    "float",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
)
NATIVE_TYPES = (*NUMERIC_NATIVE, "bool", "string")
"""Element types onnxruntime-extensions' Python op layer passes through to numpy directly."""

BRIDGED_TYPES = {
    "float16": "float",
    "bfloat16": "float",
    "float8e4m3fn": "float",
    "float8e4m3fnuz": "float",
    "float8e5m2": "float",
    "float8e5m2fnuz": "float",
    "float8e8m0": "float",
    "int4": "int8",
    "uint4": "uint8",
    "int2": "int8",
    "uint2": "uint8",
}
"""Types the Python op layer refuses: the translator casts them to the wider type and back, exactly.

Every value of each of these types is exactly representable in its bridge type, so the casts in are
exact; the cast back rounds the kernel's result (which only matters for interpolating Resize modes).
"""


def layer_carrier(elem: str) -> str:
    """The element type ``elem`` crosses the Python-op layer as: its bridge type, or itself."""
    return BRIDGED_TYPES.get(elem, elem)


PYTHON_FEEDS = (*NATIVE_TYPES, "float16")
"""Element types ONNX Runtime's Python API passes in and out as numpy arrays."""


def python_carrier(elem: str) -> str:
    """The type ``elem`` travels as at a graph's boundary when fed and fetched through ONNX Runtime's Python
    API: itself where the API takes it, else its bridge type (float for the other narrow floats), Cast
    exactly inside the graph."""
    return elem if elem in PYTHON_FEEDS else BRIDGED_TYPES.get(elem, "float")


BRIDGE_MIN_OPSET = 6
"""The first opset at which a bridge can be built: before opset 6 Cast takes its target as a string and
ONNX Runtime has no Cast kernel at all (Cast-1), so a bridged type is refused below it (only Pad-2, which
applies from opset 2, is affected; ONNX Runtime cannot run such a model's float16 Pad itself either)."""


def layer_string_refusal(value: str | bytes) -> str:
    """Why onnxruntime-extensions' Python op layer cannot carry the string ``value`` exactly, or '' when it
    can: it passes strings as NUL-terminated UTF-8, so a NUL cuts the string there, bytes that are not
    UTF-8 make it abort the process, and a lone surrogate has no UTF-8 form."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return "is not UTF-8 (bytes that are not valid UTF-8 make onnxruntime-extensions' Python layer abort)"
    if "\x00" in value:
        return "holds a NUL character, where onnxruntime-extensions' Python layer cuts strings"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate, which UTF-8 cannot encode"
    return ""


UNSUPPORTED_TYPES = {
    "float4e2m1": "ONNX Runtime has no Cast for float4e2m1, so it cannot be bridged to float",
    "complex64": "ONNX Runtime's custom-op layer rejects complex element types at model load",
    "complex128": "ONNX Runtime's custom-op layer rejects complex element types at model load",
}
"""Types the spec allows but that cannot pass through ONNX Runtime's custom-op layer, with the reason."""


@dataclass(frozen=True)
class Attr:
    """An attribute of a standard op: its ONNX kind ('int', 'float', 'string', 'ints', 'floats'),
    its spec default (``None``: absent by default), and the values the spec allows (strings only)."""

    name: str
    kind: str
    default: object = None
    required: bool = False
    allowed: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Input:
    """An input of a standard op: its name, allowed element types ('T' = the op's main type)."""

    name: str
    types: tuple[str, ...] = ("T",)
    optional: bool = False
    probe_as_t: bool = False
    """ONNX Runtime's kernels take this input in T's element type (GridSample's grid): the support probe
    (customops.support) feeds it so where its types allow, instead of its widest type."""


Signature = tuple[tuple[str, str], ...]
"""One registration of a custom op with several type variables: the element type of each variable, as
(variable, element type) pairs."""


def signatures(**variables: tuple[str, ...]) -> tuple[Signature, ...]:
    """Every combination of the element types of the type ``variables`` (name -> its types), in order."""
    names = list(variables)
    return tuple(tuple(zip(names, combo, strict=True)) for combo in itertools.product(*variables.values()))


@dataclass(frozen=True)
class CustomOp:
    """A custom op in :data:`DOMAIN`: fixed inputs (an element type, or a type variable: 'T', or the
    variables of ``signatures``), string-encoded attributes, one output or more."""

    name: str
    kernel: str
    """``module:function`` of the kernel; the module's ``bind(**attributes)`` is the kernel with its
    attributes fixed, which the ONNX Runtime hook calls."""
    inputs: tuple[tuple[str, str], ...]
    attributes: tuple[tuple[str, str], ...]
    """(name, kind) of each kernel attribute, passed losslessly as strings."""
    types: tuple[str, ...]
    """Element types T registered with ONNX Runtime."""
    backend_tests: tuple[str, ...] = ()
    """Name prefixes of ONNX's backend node tests of this op (``customops conformance`` runs them)."""
    case_module: str = ""
    """onnx's module of those tests (``onnx/backend/test/case/node/<case_module>.py``)."""
    reference_limit: int = 12_000_000
    """compare's default: the most work a node may ask of onnx.reference (customops.kernels.work: lines
    of its Python loops or elements of its arrays, per op; at least its inputs' elements), measured to
    cost about 5 s at the limit (docs/compare.md, What is compared)."""
    outputs: tuple[str, ...] = ("T",)
    """Each output's element type or type variable."""
    signatures: tuple[Signature, ...] = ()
    """For an op with several type variables, the types of each registration (:func:`signatures`); empty:
    one registration per element type of ``types``, for the variable 'T'."""

    def registrations(self) -> tuple[dict[str, str], ...]:
        """The element type of each type variable, per registration with ONNX Runtime."""
        if self.signatures:
            return tuple(dict(s) for s in self.signatures)
        return tuple({"T": t} for t in self.types)

    def typed(self, registration: dict[str, str]) -> tuple[list[str], list[str]]:
        """The element types of the inputs and of the outputs of one registration."""
        ins = [registration.get(ty, ty) for _, ty in self.inputs]
        return ins, [registration.get(ty, ty) for ty in self.outputs]


@dataclass(frozen=True)
class OpVersion:
    """One (op, version) of the standard domain that we can translate."""

    op: str
    version: int
    inputs: tuple[Input, ...]
    attributes: tuple[Attr, ...]
    types: tuple[str, ...]
    """Element types of T the spec allows for this version."""
    custom: str
    """Name of the custom op it maps onto."""
    notes: str = ""
    until: int | None = None
    """Last opset this version is valid in (deprecated ops), or None."""
    type_vars: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """An op with several type variables (the quantized family): each variable of the schema and the
    element types it allows; its inputs name their variable (``Input.types``), and ``types`` are the first
    input's."""
    kernel_types: tuple[str, ...] = ()
    """The element types of ``types`` our kernel takes where it takes fewer than the spec allows (Erf-9's
    integer types: the activation family computes floats only); empty: every one."""

    @property
    def key(self) -> str:
        return f"{self.op}-{self.version}"

    def attr(self, name: str) -> Attr:
        for a in self.attributes:
            if a.name == name:
                return a
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# Custom ops (what is registered with ONNX Runtime)

_ALL_T = NATIVE_TYPES

CUSTOM_OPS: dict[str, CustomOp] = {
    op.name: op
    for op in (
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
            types=_ALL_T,
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
            types=_ALL_T,
            backend_tests=("test_upsample",),
            case_module="upsample",
            reference_limit=48_000_000,  # output elements x taps: numpy's repeat (nearest; the rest is refused)
        ),
        CustomOp(
            name="Pad",
            kernel="customops.kernels.padding.pad:pad",
            inputs=(("data", "T"), ("pads", "int64"), ("constant_value", "T"), ("axes", "int64")),
            attributes=(("mode", "string"),),
            types=_ALL_T,
            backend_tests=("test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_wrap_pad"),
            case_module="pad",
            reference_limit=50_000_000,  # output elements (numpy's pad): 0.35 s; kept there for the memory
        ),
        CustomOp(
            name="Col2Im",
            kernel="customops.kernels.padding.col2im:col2im",
            inputs=(("input", "T"), ("image_shape", "int64"), ("block_shape", "int64")),
            attributes=(("dilations", "ints"), ("pads", "ints"), ("strides", "ints")),
            types=_ALL_T,
            backend_tests=("test_col2im",),
            case_module="col2im",
            reference_limit=30_000_000,  # lines of its Python: 0.15 to 0.29 s per million
        ),
        CustomOp(
            name="CenterCropPad",
            kernel="customops.kernels.padding.center_crop_pad:center_crop_pad",
            inputs=(("input_data", "T"), ("shape", "int64")),
            attributes=(("axes", "ints"),),
            types=_ALL_T,
            backend_tests=("test_center_crop_pad",),
            case_module="center_crop_pad",
            reference_limit=50_000_000,  # input and output elements (slices): well under a second
        ),
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
            types=_ALL_T,
            backend_tests=("test_gridsample",),
            case_module="gridsample",
            reference_limit=40_000_000,  # lines of its Python: 0.09 to 0.14 s per million
        ),
    )
}

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

CUSTOM_OPS.update({op.name: op for op in QUANTIZED_OPS})

_ACTIVATIONS: tuple[tuple[str, str, tuple[tuple[str, str], ...], int], ...] = (
    ("Sigmoid", "sigmoid", (), 60_000_000),
    ("Tanh", "tanh", (), 60_000_000),
    ("Erf", "erf", (), 12_000_000),
    ("Gelu", "gelu", (("approximate", "string"),), 12_000_000),
    ("Softplus", "softplus", (), 50_000_000),
    ("Mish", "mish", (), 50_000_000),
    ("Swish", "swish", (("alpha", "float"),), 60_000_000),
    ("HardSigmoid", "hard_sigmoid", (("alpha", "float"), ("beta", "float")), 60_000_000),
    ("HardSwish", "hard_swish", (), 60_000_000),
    ("Elu", "elu", (("alpha", "float"),), 60_000_000),
    ("Selu", "selu", (("alpha", "float"), ("gamma", "float")), 60_000_000),
    ("Celu", "celu", (("alpha", "float"),), 60_000_000),
)
"""The activation family: (op, its kernel module and function in customops.kernels.activations, its
attributes, compare's reference limit). Float attributes cross the layer as the shortest text of their
float32 value (customops.bridge.attrs), which the kernels take; every kernel is also told ``elem_type``,
X's real element type (customops.kernels.activations.carried). The limits count X's elements (the
default of customops.kernels.work): onnx.reference takes 0.36 to 0.44 s per million for Erf and Gelu
(math.erf element by element), 0.085 for Mish and Softplus, at most 0.055 for the others."""

ACTIVATION_OPS = tuple(
    CustomOp(
        name=name,
        kernel=f"customops.kernels.activations.{module}:{module}",
        inputs=(("X", "T"),),
        attributes=(*attributes, ("elem_type", "string")),
        types=("float", "double"),
        backend_tests=(f"test_{module.replace('_', '')}",),
        case_module=module.replace("_", ""),
        reference_limit=limit,
    )
    for name, module, attributes, limit in _ACTIVATIONS
)
"""One custom op per activation, on float and double; float16 and bfloat16 cross the layer as float and
are computed on their real type, so that each result is rounded once."""

CUSTOM_OPS.update({op.name: op for op in ACTIVATION_OPS})

MARKER_ATTRS = ("customops_origin", "customops_node")
"""Attributes every custom node carries (declared, so the kernel sees them): where it came from and the
name of the node, for error messages."""

RESTORE_ATTR = "customops_restore"
"""Undeclared attribute holding what :func:`customops.restore` needs to put the original node back."""

# ---------------------------------------------------------------------------------------------
# Standard ops and versions

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

_ACT_T_6 = ("float16", "float", "double")
_ACT_T_13 = ("bfloat16", *_ACT_T_6)


def _activation(
    op: str, version: int, types: tuple[str, ...], *attributes: Attr, **more: object
) -> OpVersion:
    """A version of an activation: its one input (Tanh and Erf call it ``input``, the others ``X``)."""
    name = "input" if op in ("Tanh", "Erf") else "X"
    return OpVersion(op, version, (Input(name),), attributes, types, op, **more)  # type: ignore[arg-type]


_ALPHA_1 = Attr("alpha", "float", 1.0)
_HARD_SIGMOID = (Attr("alpha", "float", 0.2), Attr("beta", "float", 0.5))
_SELU = (Attr("alpha", "float", 1.6732631921768188), Attr("gamma", "float", 1.0507010221481323))

ACTIVATION_VERSIONS: tuple[OpVersion, ...] = (
    _activation("Sigmoid", 6, _ACT_T_6),
    _activation("Sigmoid", 13, _ACT_T_13),
    _activation("Tanh", 6, _ACT_T_6),
    _activation("Tanh", 13, _ACT_T_13),
    _activation(
        "Erf",
        9,
        (*NUMERIC_NATIVE[2:], *_ACT_T_6),
        kernel_types=_ACT_T_6,
        notes="integer types left to ORT (the family computes floats)",
    ),
    _activation("Erf", 13, _ACT_T_13),
    _activation("Gelu", 20, _ACT_T_13, Attr("approximate", "string", "none", allowed=("none", "tanh"))),
    _activation("Softplus", 1, _ACT_T_6),
    _activation("Softplus", 22, _ACT_T_13),
    _activation("Mish", 18, _ACT_T_6),
    _activation("Mish", 22, _ACT_T_13),
    _activation("Swish", 24, _ACT_T_13, _ALPHA_1),
    _activation("HardSigmoid", 6, _ACT_T_6, *_HARD_SIGMOID),
    _activation("HardSigmoid", 22, _ACT_T_13, *_HARD_SIGMOID),
    _activation("HardSwish", 14, _ACT_T_6),
    _activation("HardSwish", 22, _ACT_T_13),
    _activation("Elu", 6, _ACT_T_6, _ALPHA_1),
    _activation("Elu", 22, _ACT_T_13, _ALPHA_1),
    _activation("Selu", 6, _ACT_T_6, *_SELU),
    _activation("Selu", 22, _ACT_T_13, *_SELU),
    _activation("Celu", 12, ("float",), _ALPHA_1),
    _activation("Celu", 28, _ACT_T_13, _ALPHA_1),
)
"""The activation family's versions (each op's version 1 with ``consumed_inputs`` left out: ONNX Runtime
loads no model below opset 7)."""

OPS: tuple[OpVersion, ...] = (
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
    *QUANTIZED_VERSIONS,
    *ACTIVATION_VERSIONS,
)

OP_TYPES: tuple[str, ...] = tuple(dict.fromkeys(o.op for o in OPS))


def versions(op: str) -> list[int]:
    """The since-versions of ``op`` we support, ascending."""
    return [o.version for o in OPS if o.op == op]


def lookup(op: str, opset: int) -> OpVersion | None:
    """The (op, version) in force for a model importing the default domain at ``opset``, or None."""
    best = None
    for o in OPS:
        if o.op == op and o.version <= opset and (best is None or o.version > best.version):
            best = o
    if best is not None and best.until is not None and opset > best.until:
        return None
    return best


def custom_defaults(custom: str) -> dict[str, object]:
    """The spec default of every attribute of custom op ``custom``, from the newest version defining it."""
    defaults: dict[str, object] = {}
    for opv in sorted(OPS, key=lambda o: o.version, reverse=True):
        if opv.custom != custom:
            continue
        for a in opv.attributes:
            defaults.setdefault(a.name, a.default)
    return {name: defaults.get(name) for name, _ in CUSTOM_OPS[custom].attributes}  # ours only: None


def type_support(opv: OpVersion, elem_type: str, opset: int | None = None) -> tuple[str, str | None]:
    """How we run ``elem_type`` for ``opv`` (in a model importing the default domain at ``opset``, when
    given): ('native', None), ('bridged', via-type) or ('no', reason)."""
    if elem_type not in opv.types:
        return (
            "no",
            f"element type {elem_type!r} is not allowed by {opv.key} (allowed: {', '.join(opv.types)})",
        )
    if opv.kernel_types and elem_type not in opv.kernel_types:
        return "no", f"our {opv.op} kernel computes {', '.join(opv.kernel_types)} only, not {elem_type}"
    if elem_type in NATIVE_TYPES:
        return "native", None
    if elem_type in BRIDGED_TYPES:
        if opset is not None and opset < BRIDGE_MIN_OPSET:
            return "no", bridge_limit(elem_type, opset)
        return "bridged", BRIDGED_TYPES[elem_type]
    return "no", UNSUPPORTED_TYPES.get(elem_type, f"element type {elem_type!r} is not supported")


def bridge_limit(elem_type: str, opset: int | None = None) -> str:
    """Why ``elem_type`` cannot be bridged below :data:`BRIDGE_MIN_OPSET` (at ``opset``, when given)."""
    at = f" (this model imports opset {opset})" if opset is not None else ""
    return (
        f"{elem_type} needs a Cast to {BRIDGED_TYPES[elem_type]} and back, and ONNX Runtime has no Cast "
        f"kernel before opset {BRIDGE_MIN_OPSET}{at}"
    )
