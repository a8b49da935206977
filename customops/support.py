"""The support table: for every (op, version) and element type, how we run it and how the installed
ONNX Runtime's CPU provider does (probed by creating a one-node session, not typed in): with a kernel for
the type, by casting around a kernel for another type, or by running the operator's function body."""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from onnx import TensorProto, helper

from customops.registry import BRIDGE_MIN_OPSET, OPS, Input, OpVersion, bridge_limit, lookup, type_support

_CODE = {k.lower(): v for k, v in TensorProto.DataType.items()}


BUILTIN_WAYS = {
    "kernel": "a kernel for this type",
    "cast": "ORT casts to another type around a kernel for that type",
    "function": "no kernel: ORT runs the operator's ONNX function body",
    "loads": "ORT loads it; how it runs it is unknown here (the graph ORT makes could not be saved)",
}
"""How the installed ONNX Runtime runs an (op, version, element type) it loads (``SupportRow.builtin_way``)."""


@dataclass(frozen=True)
class SupportRow:
    """One (op, version, element type): ``ours`` is 'native', 'bridged' or 'no'; ``builtin`` whether ORT
    loads it, and ``builtin_way`` how it runs it (a key of :data:`BUILTIN_WAYS`, or empty); ``note`` says
    where a bridged type is refused (opsets before BRIDGE_MIN_OPSET), or is empty."""

    op: str
    version: int
    elem_type: str
    ours: str
    detail: str
    builtin: bool
    note: str = ""
    builtin_way: str = ""


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
_OUTPUT_COUNT = {"DynamicQuantizeLinear": 3}
QUANTIZED = frozenset(o.op for o in OPS if o.type_vars)
"""Required attributes whose probe value above would fail ONNX's shape inference at load."""


def _input_code(opv: OpVersion, inp: Input, elem: str) -> int:
    """The element type a probe of ``opv`` on ``elem`` gives input ``inp``: ``elem`` for the main type
    variable (and an input ORT takes in it), else the input's last allowed type (for an op with several
    type variables, ``elem`` where the input's variable allows it, else its first type)."""
    if opv.type_vars:  # another variable takes the main type where it allows it (u8 x u8 -> u8)
        types = dict(opv.type_vars).get(inp.types[0], inp.types)
        return _CODE[elem if elem in types else types[0]]
    same = inp.types == ("T",) or (inp.probe_as_t and elem in inp.types)
    return _CODE[elem] if same else _CODE[inp.types[-1]]


def _outputs(node: Any, inputs: list[Any], opset: int, code: int) -> list[Any]:
    """The probe's graph outputs: one of ``code`` (the main type), or, for an op whose outputs have other
    types, as ONNX's shape inference types them."""
    if node.op_type not in QUANTIZED:
        return [helper.make_tensor_value_info("Y", code, None)]
    import onnx

    graph = helper.make_graph([node], "probe", inputs, [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        inferred = {
            v.name: v for v in onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.value_info
        }
    except Exception:  # an invalid combination: ORT refuses it too
        inferred = {}
    return [inferred.get(o) or helper.make_tensor_value_info(o, code, None) for o in node.output]


def _probe_model(opv: OpVersion, elem: str) -> bytes:
    code = _CODE[elem]
    inputs = []
    names = []
    for inp in opv.inputs:
        inputs.append(helper.make_tensor_value_info(inp.name, _input_code(opv, inp, elem), None))
        names.append(inp.name)
    attrs = {a.name: (1.0, 1.0, 1.0, 1.0) for a in opv.attributes if a.required and a.kind == "floats"}
    attrs.update({a.name: (0, 0, 0, 0) for a in opv.attributes if a.required and a.kind == "ints"})
    attrs.update(_PROBE_ATTRS.get(opv.op, {}))
    outputs = [f"Y{i}" for i in range(_OUTPUT_COUNT.get(opv.op, 1))] if opv.type_vars else ["Y"]
    node = helper.make_node(opv.op, names, outputs, **attrs)
    graph = helper.make_graph([node], "probe", inputs, _outputs(node, inputs, probe_opset(opv), code))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", probe_opset(opv))])
    model.ir_version = 10 if probe_opset(opv) >= 21 else 8
    return model.SerializeToString()


@functools.cache
def builtin_way(op: str, version: int, elem: str) -> str:
    """How the installed onnxruntime's CPU provider runs (op, version, element type): a key of
    :data:`BUILTIN_WAYS`, read from the graph it makes of a one-node model before optimizing it, or
    '' when it refuses the model."""
    opv = next(o for o in OPS if o.op == op and o.version == version)
    model = _probe_model(opv, elem)
    kinds = _graph_ops(model)
    if kinds is None:  # refused, or its graph had nowhere to go
        return "loads" if _ort_loads(model) else ""
    if op not in kinds:
        return "function"
    return "cast" if "Cast" in kinds else "kernel"


def _ort_loads(model: bytes, save: str = "") -> bool:
    """Whether ORT's CPU provider makes a session of ``model``; with ``save``, one that writes the graph
    it makes, before optimizing it, to that path."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    if save:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.optimized_model_filepath = save
    try:
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def _graph_ops(model: bytes) -> list[str] | None:
    """The node types of the graph ORT makes of ``model``, or None when it refuses the model or the graph
    cannot be saved (no writable temporary directory, a full disk, a file size limit)."""
    import onnx

    try:
        with tempfile.TemporaryDirectory(prefix="customops-probe-") as tmp:
            path = os.path.join(tmp, "probe.onnx")
            if not _ort_loads(model, path):
                return None
            return [node.op_type for node in onnx.load(path).graph.node]
    except Exception:  # OSError from tempfile, or a graph cut short by the limit
        return None


def support_table(probe: bool = True) -> list[SupportRow]:
    """Every (op, version, element type) the spec allows, with our support and ORT's built-in coverage."""
    rows = []
    for opv in OPS:
        for elem in opv.types:
            how, detail = type_support(opv, elem)
            way = builtin_way(opv.op, opv.version, elem) if probe else ""
            rows.append(
                SupportRow(
                    opv.op,
                    opv.version,
                    elem,
                    how,
                    detail or "",
                    way != "",
                    bridge_note(opv, how, elem),
                    way,
                )
            )
    return rows
