"""The one table of supported (op, version) pairs: inputs, attributes with spec defaults, element types.

Registration with ONNX Runtime, translation of standard nodes, the fuzzer and the docs all read this table.
Each standard (op, version) maps onto one *custom* op in :data:`DOMAIN` whose signature is fixed
(every optional input present, every attribute written out), so one kernel serves every version.

The table is assembled from :data:`FAMILIES`: each family's rows are in a module of its own beside
core.py (what the rows are made of). A new family is one more module and one more entry there.
"""

from __future__ import annotations

from customops.registry import activations, padding, quantized, resampling, spatial
from customops.registry.activations import ACTIVATION_OPS, ACTIVATION_VERSIONS
from customops.registry.core import (
    BRIDGE_MIN_OPSET,
    BRIDGED_TYPES,
    DOMAIN,
    MARKER_ATTRS,
    NATIVE_TYPES,
    NUMERIC_NATIVE,
    PYTHON_FEEDS,
    RESTORE_ATTR,
    UNSUPPORTED_TYPES,
    Attr,
    CustomOp,
    Family,
    Input,
    OpVersion,
    Signature,
    bridge_limit,
    layer_carrier,
    layer_string_refusal,
    python_carrier,
    signatures,
    type_support,
)
from customops.registry.quantized import QUANTIZED_OPS, QUANTIZED_VERSIONS
from customops.registry.spatial import GRID_SAMPLE_16_MODES

FAMILIES: tuple[Family, ...] = (
    resampling.FAMILY,
    padding.FAMILY,
    spatial.FAMILY,
    quantized.FAMILY,
    activations.FAMILY,
)
"""Every family, in the order of the table (``customops ops``, docs/support.md)."""

CUSTOM_OPS: dict[str, CustomOp] = {op.name: op for family in FAMILIES for op in family.custom_ops}
"""Every custom op by name: what is registered with ONNX Runtime."""

OPS: tuple[OpVersion, ...] = tuple(opv for family in FAMILIES for opv in family.versions)
"""Every standard (op, version) we translate."""

OP_TYPES: tuple[str, ...] = tuple(dict.fromkeys(o.op for o in OPS))

__all__ = [
    "ACTIVATION_OPS",
    "ACTIVATION_VERSIONS",
    "BRIDGED_TYPES",
    "BRIDGE_MIN_OPSET",
    "CUSTOM_OPS",
    "DOMAIN",
    "FAMILIES",
    "GRID_SAMPLE_16_MODES",
    "MARKER_ATTRS",
    "NATIVE_TYPES",
    "NUMERIC_NATIVE",
    "OPS",
    "OP_TYPES",
    "PYTHON_FEEDS",
    "QUANTIZED_OPS",
    "QUANTIZED_VERSIONS",
    "RESTORE_ATTR",
    "UNSUPPORTED_TYPES",
    "Attr",
    "CustomOp",
    "Family",
    "Input",
    "OpVersion",
    "Signature",
    "bridge_limit",
    "custom_defaults",
    "layer_carrier",
    "layer_string_refusal",
    "lookup",
    "python_carrier",
    "signatures",
    "type_support",
    "versions",
]


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
