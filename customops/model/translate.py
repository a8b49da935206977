"""Translation of one standard node into its equivalent in :data:`~customops.registry.DOMAIN`, and back.

The custom node has a fixed signature: every optional input is present (absent ones get an empty filler
of the right type), index inputs are int64 and roi is double (a Cast is inserted where needed), every
attribute is written out with its default, encoded losslessly as a string, and version-dependent
semantics (Resize-10 and Upsample's coordinate rules, Pad-2's attribute form) are resolved here.
Element types the Python op layer refuses (float16, bfloat16, float8, int4, ...) are bridged with a Cast
to a wider type and back. The original node is stored on the custom node so restore is exact.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import AttributeProto, NodeProto, TensorProto, helper

from customops import dtypes
from customops.bridge import attrs as attr_codec
from customops.errors import CustomOpsError
from customops.graphs import node_label
from customops.registry import (
    ACTIVATION_OPS,
    CUSTOM_OPS,
    DOMAIN,
    GRID_SAMPLE_16_MODES,
    RESTORE_ATTR,
    OpVersion,
    custom_defaults,
    type_support,
)

HELPER_DOC = "added by customops.rewrite"
"""doc_string of every helper node the translator adds (fillers and casts)."""


def elem_type_name(code: int) -> str:
    """The lower-case ONNX name of an element type code (1 -> 'float')."""
    return dtypes.name_of(code)


class Skip(Exception):
    """The node stays as it is; the message says why."""


@dataclass
class Translation:
    """The nodes that replace one standard node: helpers before, the custom node, casts after."""

    nodes: list[NodeProto]
    custom: NodeProto
    helpers: list[str] = field(default_factory=list)


class Namer:
    """Hands out names not used anywhere in the model (values, nodes) so helpers never collide."""

    def __init__(self, used: Iterable[str]) -> None:
        self.used = set(used)

    def __call__(self, base: str) -> str:
        name = base
        i = 1
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.used.add(name)
        return name


def attribute_values(node: NodeProto, opv: OpVersion) -> dict[str, object]:
    known = {a.name: a for a in opv.attributes}
    values: dict[str, object] = {}
    for a in node.attribute:
        if a.ref_attr_name:
            raise Skip(
                f"attribute {a.name!r} refers to function attribute {a.ref_attr_name!r}; its value is unknown here"
            )
        spec = known.get(a.name)
        if spec is None:
            raise Skip(
                f"attribute {a.name!r} is not defined for {opv.key} (defined: {', '.join(known) or 'none'})"
            )
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise Skip(f"attribute {a.name!r} is not valid UTF-8") from None
        expected = {
            "int": AttributeProto.INT,
            "float": AttributeProto.FLOAT,
            "string": AttributeProto.STRING,
            "ints": AttributeProto.INTS,
            "floats": AttributeProto.FLOATS,
        }[spec.kind]
        if a.type != expected:
            raise Skip(
                f"attribute {a.name!r} has type {AttributeProto.AttributeType.Name(a.type)}, expected {spec.kind}"
            )
        if spec.allowed is not None and value not in spec.allowed:
            raise Skip(f"invalid {a.name} {value!r} for {opv.key} (allowed: {', '.join(spec.allowed)})")
        values[a.name] = list(value) if isinstance(value, list | tuple) else value
    for spec in opv.attributes:
        if spec.name not in values:
            if spec.required:
                raise Skip(f"required attribute {spec.name!r} of {opv.key} is missing")
            values[spec.name] = spec.default
    return values


@dataclass
class Builder:
    node: NodeProto
    opv: OpVersion
    opset: int
    type_of: Callable[[str], int | None]
    namer: Namer
    before: list[NodeProto] = field(default_factory=list)
    after: list[NodeProto] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return node_label(self.node, self.opv.op)

    def helper_node(
        self, op_type: str, inputs: list[str], outputs: list[str], what: str, **kwargs: object
    ) -> NodeProto:
        name = self.namer(f"{self.stem}/customops_{what}")
        self.helpers.append(name)
        return helper.make_node(op_type, inputs, outputs, name=name, doc_string=HELPER_DOC, **kwargs)

    def input(self, index: int) -> str:
        return self.node.input[index] if index < len(self.node.input) else ""

    def constant(self, what: str, array: np.ndarray | None, elem: str) -> str:
        """A Constant helper holding ``array`` (an empty 1-D tensor when None) of element type ``elem``."""
        out = self.namer(f"{self.stem}/customops_{what}")
        code = dtypes.CODE[elem]
        if array is None:
            tensor = helper.make_tensor(out, code, [0], [])
        elif elem == "string":
            tensor = helper.make_tensor(
                out, code, list(array.shape), [str(v).encode() for v in array.ravel()]
            )
        else:
            tensor = onnx.numpy_helper.from_array(np.asarray(array, dtype=dtypes.numpy_dtype(code)), out)
        self.before.append(self.helper_node("Constant", [], [out], what, value=tensor))
        return out

    def cast(self, name: str, to: str, what: str) -> str:
        """A Cast helper of ``name`` to ``to``, before the custom node. Casts appear only where the opset
        is :data:`~customops.registry.BRIDGE_MIN_OPSET` or later (the registry refuses bridges below
        it; index and roi casts belong to versions of opset 11 on), so ``to`` is always the Cast-6 int."""
        out = self.namer(f"{self.stem}/customops_{what}")
        self.before.append(self.helper_node("Cast", [name], [out], what, to=dtypes.CODE[to]))
        return out

    def index_input(self, index: int, what: str) -> str | None:
        """An int64 version of an optional index input, or None when absent."""
        name = self.input(index)
        if not name:
            return None
        if self.type_of(name) == TensorProto.INT64:
            return name
        return self.cast(name, "int64", what)

    def int64_only(self, name: str, what: str) -> None:
        """Skip unless input ``name`` (called ``what``), which the spec types int64 only, is int64 (or of
        unknown type): a Cast would turn an invalid model into a plausible one."""
        code = self.type_of(name)
        if code is not None and code != TensorProto.INT64:
            raise Skip(f"{what} has element type {elem_type_name(code)}; {self.opv.key} requires int64")

    def like_x(self, name: str, what: str, compute: str, bridged: bool, param: str = "T") -> str:
        """Input ``name`` (called ``what``), which the spec types like X (type parameter ``param``): Skip
        when the model gives it another type; Cast to ``compute`` when the node is ``bridged``."""
        code, x_code = self.type_of(name), self.type_of(self.input(0))
        if code is not None and code != x_code:
            raise Skip(
                f"{what} has element type {elem_type_name(code)} but X has {elem_type_name(x_code or 0)}; "
                f"{self.opv.key} requires the same type ({param})"
            )
        return self.cast(name, compute, f"cast_{what}") if bridged else name


def _main_type(b: Builder, name: str) -> tuple[str, str]:
    """(element type of the main input, type the custom node computes in)."""
    code = b.type_of(name)
    if code is None:
        raise Skip(f"element type of input {name!r} is unknown (no type information reaches it)")
    elem = elem_type_name(code)
    how, detail = type_support(b.opv, elem, b.opset)
    if how == "no":
        raise Skip(str(detail))
    return elem, (detail if how == "bridged" else elem)  # type: ignore[return-value]


def _encode(custom: str, values: dict[str, object]) -> dict[str, str]:
    kinds = dict(CUSTOM_OPS[custom].attributes)
    return {name: attr_codec.encode(kind, values[name]) for name, kind in kinds.items()}


def _resize_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    kernel = custom_defaults("Resize")
    kernel.update({k: v for k, v in values.items() if k in kernel})
    roi, scales, sizes = b.input(1), b.input(2), b.input(3)
    if roi and b.type_of(roi) != TensorProto.DOUBLE:
        roi = b.cast(roi, "double", "roi")
    inputs = [
        roi or b.constant("roi", None, "double"),
        scales or b.constant("scales", None, "float"),
        sizes or b.constant("sizes", None, "int64"),
    ]
    return inputs, kernel


def translate(
    node: NodeProto,
    opv: OpVersion,
    opset: int,
    type_of: Callable[[str], int | None],
    namer: Namer,
    value_info: Iterable[str] = (),
) -> Translation:
    """Translate ``node`` (of standard ``opv``, in a graph importing the default domain at ``opset``).

    ``type_of`` gives a value's element type code or None; ``namer`` hands out unused names;
    ``value_info`` (base64 ValueInfoProtos) is what the rewriter takes off the output, kept for restore.
    Raises :class:`Skip` with the reason when the node cannot be swapped.
    """
    values = attribute_values(node, opv)
    b = Builder(node, opv, opset, type_of, namer)
    x = b.input(0)
    if not x:
        raise Skip("the main input is empty")
    elem, compute = _main_type(b, x)
    bridged = compute != elem
    if bridged:
        x = b.cast(x, compute, "cast_in")
    rest, kernel = _custom_inputs(b, values, compute, bridged)
    outputs = _custom_outputs(b, elem, bridged)
    encoded = custom_attributes(b, kernel, value_info)
    new = helper.make_node(opv.custom, [x, *rest], outputs, name=node.name, domain=DOMAIN, **encoded)
    new.doc_string = node.doc_string
    return Translation([*b.before, new, *b.after], new, list(b.helpers))


def _custom_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """The custom node's inputs after the main one (helpers added to ``b``) and the attribute values of
    its kernel, from the standard node's attribute ``values``; ``compute`` is the element type the
    custom node computes in (``bridged`` when it differs from the main input's)."""
    translator = TRANSLATORS.get(b.opv.custom)
    if translator is None:  # the registry names only the customs of TRANSLATORS (a test checks)
        raise Skip(f"no translation for custom op {b.opv.custom!r}")  # pragma: no cover
    return translator(b, values, compute, bridged)


def _upsample_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """Upsample: the scales input (Upsample-7's scales attribute as a Constant, each at least 1)."""
    kernel: dict[str, object] = {"mode": values["mode"]}
    if b.opv.version == 7:
        factors = np.asarray(values["scales"], np.float32)
        if (factors < 1).any():
            raise Skip(f"invalid scales {values['scales']!r} for {b.opv.key} (each must be >= 1)")
        scales = b.constant("scales", factors, "float")
    else:
        scales = b.input(1)
    if not scales:
        raise Skip(f"{b.opv.key} needs its scales input")
    return [scales], kernel


def _pad_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """Pad: pads, constant_value and axes (Pad-2's attributes as Constants; absent inputs as empty
    fillers; the constant value Cast to ``compute`` when the node is ``bridged``)."""
    kernel: dict[str, object] = {"mode": values["mode"]}
    if b.opv.version == 2:
        pads = b.constant("pads", np.asarray(values["pads"], np.int64), "int64")
        value = np.asarray([values["value"]], np.float32).astype(dtypes.numpy_dtype(compute))
        cval = b.constant("constant_value", value, compute)
        axes = b.constant("axes", None, "int64")
    else:
        pads = b.index_input(1, "pads") or b.constant("pads", None, "int64")
        cval = b.input(2)
        if cval and bridged:
            cval = b.cast(cval, compute, "cast_constant_value")
        cval = cval or b.constant("constant_value", None, compute)
        axes = b.index_input(3, "axes") or b.constant("axes", None, "int64")
    return [pads, cval, axes], kernel


def _col2im_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """Col2Im: image_shape and block_shape, both required, as int64."""
    kernel = dict(values)
    rest = [b.index_input(1, "image_shape") or "", b.index_input(2, "block_shape") or ""]
    if not all(rest):
        raise Skip("Col2Im needs both image_shape and block_shape")
    return rest, kernel


def _center_crop_pad_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """CenterCropPad: the shape input, required, as int64."""
    kernel = dict(values)
    shape = b.index_input(1, "shape")
    if shape is None:
        raise Skip("CenterCropPad needs its shape input")
    return [shape], kernel


def _affine_grid_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """AffineGrid: the size input, required, of the type the spec allows (int64)."""
    size = b.input(1)
    if not size:
        raise Skip("AffineGrid needs its size input")
    b.int64_only(size, "size")
    return [size], {"align_corners": values["align_corners"]}


def _max_roi_pool_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """MaxRoiPool: the rois input, required, of X's type (T), Cast to ``compute`` when the node is
    ``bridged``."""
    rois = b.input(1)
    if not rois:
        raise Skip("MaxRoiPool needs its rois input")
    rois = b.like_x(rois, "rois", compute, bridged)
    return [rois], {"pooled_shape": values["pooled_shape"], "spatial_scale": values["spatial_scale"]}


def _roi_align_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """RoiAlign: rois (Cast to ``compute`` when bridged) and batch_indices, both required and of the
    types the spec allows (rois: X's type; batch_indices: int64); RoiAlign-10, which has no
    coordinate_transformation_mode, samples as 16's 'output_half_pixel' does."""
    kernel = dict(values)
    if b.opv.version < 16:
        kernel["coordinate_transformation_mode"] = "output_half_pixel"
    rois, batch = b.input(1), b.input(2)
    if not rois or not batch:
        raise Skip("RoiAlign needs its rois and batch_indices inputs")
    rois = b.like_x(rois, "rois", compute, bridged, param="T1")
    b.int64_only(batch, "batch_indices")
    return [rois, batch], kernel


def _deform_conv_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """DeformConv: W and offset (required), B and mask (empty fillers of ``compute`` when absent), all of
    X's type (T); every one Cast to ``compute`` when the node is ``bridged``."""
    kernel = dict(values)
    rest = []
    for index, name in enumerate(("W", "offset", "B", "mask"), start=1):
        value = b.input(index)
        if not value:
            if index <= 2:
                raise Skip(f"DeformConv needs its {name} input")
            rest.append(b.constant(name, None, compute))
            continue
        rest.append(b.like_x(value, name, compute, bridged))
    return rest, kernel


def _grid_sample_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """GridSample: the grid, required, Cast to double (exact from float16, bfloat16 and float); the
    mode by GridSample-20's names (16's bilinear / bicubic are 20's linear / cubic)."""
    grid = b.input(1)
    if not grid:
        raise Skip("GridSample needs its grid input")
    if b.type_of(grid) != TensorProto.DOUBLE:
        grid = b.cast(grid, "double", "grid")
    kernel = dict(values)
    if b.opv.version == 16:
        kernel["mode"] = GRID_SAMPLE_16_MODES[str(values["mode"])]
    return [grid], kernel


def _activation_inputs(
    b: Builder, values: dict[str, object], compute: str, bridged: bool
) -> tuple[list[str], dict[str, object]]:
    """An activation: X alone; its attributes, and X's real element type (float16 and bfloat16 cross the
    layer as float, and the kernel rounds once to the real type: customops.kernels.activations.carried)."""
    code = b.type_of(b.input(0))
    return [], {**values, "elem_type": elem_type_name(code) if code is not None else compute}


def _custom_outputs(b: Builder, elem: str, bridged: bool) -> list[str]:
    """The custom node's output: the node's first output, or, when ``bridged``, a new value that a Cast
    helper after the custom node turns back into ``elem`` under the node's output name."""
    outputs = list(b.node.output[:1])
    if not outputs or not outputs[0]:
        raise Skip("the node has no output")
    if bridged:
        tmp = b.namer(f"{b.stem}/customops_out")
        b.after.append(b.helper_node("Cast", [tmp], [outputs[0]], "cast_out", to=dtypes.CODE[elem]))
        outputs = [tmp]
    return outputs


def custom_attributes(b: Builder, kernel: dict[str, object], value_info: Iterable[str]) -> dict[str, str]:
    """The custom node's attributes: the kernel's ``kernel`` values encoded, the standard op it stands
    for, the node's label, and what restore needs (the original node, the names of the helpers added
    so far, ``value_info``)."""
    node, opv = b.node, b.opv
    encoded = _encode(opv.custom, kernel)
    encoded["customops_origin"] = opv.key
    encoded["customops_node"] = node_label(node)
    restore_info: dict[str, object] = {
        "node": base64.b64encode(node.SerializeToString()).decode("ascii"),
        "helpers": b.helpers,
    }
    if value_info:
        restore_info["value_info"] = list(value_info)
    encoded[RESTORE_ATTR] = json.dumps(restore_info, separators=(",", ":"))
    return encoded


@dataclass(frozen=True)
class Original:
    """What a custom node's restore information holds: the original node, the names of the helper nodes
    added with it, and the value_info entries (serialized) the rewriter took the shape off."""

    node: NodeProto
    helpers: list[str]
    value_info: list[onnx.ValueInfoProto]


def original_of(node: NodeProto) -> Original | None:
    """For a node the translator made, what restore puts back; None for any other node. Raises
    CustomOpsError naming the node when its restore information is corrupt."""
    if node.domain != DOMAIN:
        return None
    found = [a for a in node.attribute if a.name == RESTORE_ATTR]
    if not found:
        return None
    try:
        return _decode_restore(found[0])
    except _Corrupt as why:
        label = node_label(node, node.op_type)
        raise CustomOpsError(
            f"node {label!r}: its {RESTORE_ATTR} attribute is corrupt ({why}); the model cannot be restored"
        ) from None


class _Corrupt(Exception):
    """Restore information that is not what the translator writes."""


def _b64_message(text: object, message: NodeProto | onnx.ValueInfoProto, what: str) -> None:
    if not isinstance(text, str):
        raise _Corrupt(f"{what} is not a string")
    try:
        message.ParseFromString(base64.b64decode(text.encode("ascii"), validate=True))
    except (ValueError, UnicodeError, DecodeError):
        raise _Corrupt(f"{what} is not a base64 serialized {type(message).__name__}") from None


def _decode_restore(attr: AttributeProto) -> Original:
    if attr.type != AttributeProto.STRING:
        raise _Corrupt(f"type {AttributeProto.AttributeType.Name(attr.type)}, expected STRING")
    try:
        info = json.loads(attr.s.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Corrupt("not JSON (or nested too deeply)") from None
    if not isinstance(info, dict):
        raise _Corrupt("not a JSON object")
    original = NodeProto()
    _b64_message(info.get("node"), original, "'node'")
    helpers = info.get("helpers", [])
    if not isinstance(helpers, list) or not all(isinstance(h, str) for h in helpers):
        raise _Corrupt("'helpers' is not a list of names")
    infos = info.get("value_info", [])
    if not isinstance(infos, list):
        raise _Corrupt("'value_info' is not a list")
    value_info = [onnx.ValueInfoProto() for _ in infos]
    for text, v in zip(infos, value_info, strict=True):
        _b64_message(text, v, "a 'value_info' entry")
    _check_standard(original)
    return Original(original, helpers, value_info)


def _check_standard(node: NodeProto) -> None:
    """A restored node must be a standard op that onnx knows, with an output."""
    if not node.op_type:
        raise _Corrupt("the original node has no op_type")
    if node.domain not in ("", "ai.onnx") or not onnx.defs.has(node.op_type, ""):
        where = f"{node.domain}." if node.domain else ""
        raise _Corrupt(f"the original node's op {where}{node.op_type} is not a standard ONNX op")
    if not node.output or not node.output[0]:
        raise _Corrupt("the original node has no output")


Translator = Callable[[Builder, dict[str, object], str, bool], tuple[list[str], dict[str, object]]]
"""The inputs after the main one and the kernel's attribute values of one custom op, from the builder,
the standard node's attribute values, the element type computed in and whether it is bridged."""

TRANSLATORS: dict[str, Translator] = {
    "Resize": _resize_inputs,
    "Upsample": _upsample_inputs,
    "Pad": _pad_inputs,
    "Col2Im": _col2im_inputs,
    "CenterCropPad": _center_crop_pad_inputs,
    "GridSample": _grid_sample_inputs,
    "DeformConv": _deform_conv_inputs,
    "AffineGrid": _affine_grid_inputs,
    "MaxRoiPool": _max_roi_pool_inputs,
    "RoiAlign": _roi_align_inputs,
    **{op.name: _activation_inputs for op in ACTIVATION_OPS},
}
"""One row per custom op of the registry: adding an operator adds a row here."""
