"""The support table: for every (op, version) and element type, how we run it and whether the installed
ONNX Runtime has a built-in CPU kernel for it (probed by creating a one-node session, not typed in)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from onnx import TensorProto, helper

from customops.registry import BRIDGE_MIN_OPSET, OPS, OpVersion, bridge_limit, lookup, type_support

_CODE = {k.lower(): v for k, v in TensorProto.DataType.items()}


@dataclass(frozen=True)
class SupportRow:
    """One (op, version, element type): ``ours`` is 'native', 'bridged' or 'no'; ``builtin`` is a bool;
    ``note`` says where a bridged type is refused (opsets before BRIDGE_MIN_OPSET), or is empty."""

    op: str
    version: int
    elem_type: str
    ours: str
    detail: str
    builtin: bool
    note: str = ""


def bridge_note(opv: OpVersion, how: str, elem: str) -> str:
    """For a bridged type of a version that applies before BRIDGE_MIN_OPSET: at which opsets it is refused."""
    if how != "bridged" or opv.version >= BRIDGE_MIN_OPSET:
        return ""
    return f"bridged at opset {BRIDGE_MIN_OPSET} and later only: {bridge_limit(elem)}"


def probe_opset(opv: OpVersion) -> int:
    """The opset a probe model for ``opv`` imports (ORT loads nothing older than opset 7)."""
    opset = max(opv.version, 7)
    return opset if lookup(opv.op, opset) == opv else opv.version


_PROBE_ATTRS: dict[str, dict[str, object]] = {"MaxRoiPool": {"pooled_shape": (1, 1)}}
"""Required attributes whose probe value above would fail ONNX's shape inference at load."""


def _probe_model(opv: OpVersion, elem: str) -> bytes:
    code = _CODE[elem]
    inputs = []
    names = []
    for inp in opv.inputs:
        same = inp.types == ("T",) or (inp.probe_as_t and elem in inp.types)
        ty = code if same else _CODE[inp.types[-1]]
        inputs.append(helper.make_tensor_value_info(inp.name, ty, None))
        names.append(inp.name)
    attrs = {a.name: (1.0, 1.0, 1.0, 1.0) for a in opv.attributes if a.required and a.kind == "floats"}
    attrs.update({a.name: (0, 0, 0, 0) for a in opv.attributes if a.required and a.kind == "ints"})
    attrs.update(_PROBE_ATTRS.get(opv.op, {}))
    node = helper.make_node(opv.op, names, ["Y"], **attrs)
    graph = helper.make_graph([node], "probe", inputs, [helper.make_tensor_value_info("Y", code, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", probe_opset(opv))])
    model.ir_version = 10 if probe_opset(opv) >= 21 else 8
    return model.SerializeToString()


@functools.cache
def builtin_supports(op: str, version: int, elem: str) -> bool:
    """Whether the installed onnxruntime has a built-in CPU kernel for (op, version, element type)."""
    import onnxruntime as ort

    opv = next(o for o in OPS if o.op == op and o.version == version)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(_probe_model(opv, elem), options, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def support_table(probe: bool = True) -> list[SupportRow]:
    """Every (op, version, element type) the spec allows, with our support and ORT's built-in coverage."""
    rows = []
    for opv in OPS:
        for elem in opv.types:
            how, detail = type_support(opv, elem)
            rows.append(
                SupportRow(
                    opv.op,
                    opv.version,
                    elem,
                    how,
                    detail or "",
                    builtin_supports(opv.op, opv.version, elem) if probe else False,
                    bridge_note(opv, how, elem),
                )
            )
    return rows
