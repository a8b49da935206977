"""What every family's rows are made of: element types and their carriers, :class:`CustomOp`,
:class:`OpVersion` and their parts, :class:`Family`, and how an element type runs (:func:`type_support`).

The rows themselves are in one module per family beside this one; customops.registry assembles them.
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


@dataclass(frozen=True)
class Family:
    """One family of operators: its kernels are in ``customops.kernels.<name>`` (and its compiled loops,
    if any, in ``customops.accel.<name>``), its rows in ``customops.registry.<name>``."""

    name: str
    custom_ops: tuple[CustomOp, ...]
    """What is registered with ONNX Runtime, in the order of ``customops ops``."""
    versions: tuple[OpVersion, ...]
    """Each standard (op, version) the family translates, onto one of ``custom_ops``."""


MARKER_ATTRS = ("customops_origin", "customops_node")
"""Attributes every custom node carries (declared, so the kernel sees them): where it came from and the
name of the node, for error messages."""

RESTORE_ATTR = "customops_restore"
"""Undeclared attribute holding what :func:`customops.restore` needs to put the original node back."""


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
