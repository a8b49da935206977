"""Nodes of our domain in a model someone else wrote, checked before ONNX Runtime sees the model.

A model handed to :class:`customops.bridge.session.InferenceSession` may already hold nodes in
:data:`~customops.registry.DOMAIN`, written by anyone. onnxruntime-extensions' Python-op layer reads every
attribute we declared for a registration when it creates the node's kernel, and decodes each one as UTF-8
into a Python ``str`` on every run, before our hook is called: bytes that are not UTF-8 there raise inside
its C++ code, which aborts the process. ONNX Runtime itself refuses the rest of what is malformed (a
missing attribute or one of another type, wrong arity, an element type not registered) with an error.
:func:`check_model` applies one rule set to every node of our domain, in every graph, subgraph and
model-local function, and raises CustomOpsError naming the node and the rule, so that neither the abort
nor a late, obscure error can happen.
"""

from __future__ import annotations

from typing import NoReturn

import onnx
from google.protobuf.message import DecodeError

from customops.bridge import attrs as attr_codec
from customops.errors import CustomOpsError, brief
from customops.graphs import all_nodes, check_text
from customops.registry import CUSTOM_OPS, DOMAIN, MARKER_ATTRS, RESTORE_ATTR, CustomOp
from customops.safeio import printable

_STRING = onnx.AttributeProto.STRING


def check_model(model: onnx.ModelProto) -> None:
    """Raise CustomOpsError unless every node of ``model`` in our domain (main graph, subgraphs at any
    depth, model-local functions) passes :func:`check_node`."""
    for node in all_nodes(model):
        if node.domain == DOMAIN:
            check_node(node)


def checked_bytes(data: bytes, what: str) -> onnx.ModelProto:
    """``data`` parsed as a model whose nodes of our domain pass :func:`check_model`; CustomOpsError for
    bytes that are not an ONNX model (an ORT-format model included: its nodes cannot be checked) or whose
    text is not UTF-8 (customops.graphs.check_text)."""
    try:
        model = onnx.ModelProto.FromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CustomOpsError(f"{what} is not an ONNX model customops can read: {printable(exc)}") from None
    check_text(model, what)  # first: the node checks below name nodes
    check_model(model)
    return model


def check_node(node: onnx.NodeProto) -> None:
    """Raise CustomOpsError unless ``node`` (in our domain) is one of our custom ops as the rewriter writes
    it: the op's inputs (none left empty) and outputs (each named); exactly the attributes the op declares, each once,
    each a string of UTF-8 written in the node (not a reference to a function caller's attribute, whose
    value the check cannot see), each kernel attribute a value of its kind as :mod:`customops.bridge.attrs`
    writes it (ints within int64); besides those, only the restore record, a UTF-8 string too."""
    op = CUSTOM_OPS.get(node.op_type)
    if op is None:
        _refuse(node, f"is not one of the ops of domain {DOMAIN!r} ({', '.join(CUSTOM_OPS)})")
    if len(node.input) != len(op.inputs) or not all(node.input):
        _refuse(
            node,
            f"must have {len(op.inputs)} inputs, none of them empty ({', '.join(n for n, _ in op.inputs)})",
        )
    if len(node.output) != len(op.outputs) or not all(node.output):
        _refuse(node, f"must have exactly {len(op.outputs)} output(s), each named")
    _check_attributes(node, op)


def _check_attributes(node: onnx.NodeProto, op: CustomOp) -> None:
    kinds = dict(op.attributes)
    declared = [*kinds, *MARKER_ATTRS]
    seen: set[str] = set()
    for a in node.attribute:
        if a.name in seen:
            _refuse(node, f"has attribute {a.name!r} more than once")
        seen.add(a.name)
        if a.name not in declared and a.name != RESTORE_ATTR:
            _refuse(node, f"has attribute {a.name!r}, which it does not take ({', '.join(declared)})")
        if a.ref_attr_name:
            _refuse(
                node,
                f"attribute {a.name!r} refers to attribute {a.ref_attr_name!r} of a function's caller; "
                "our ops take their attributes' values written in the node",
            )
        if a.type != _STRING:
            kind = onnx.AttributeProto.AttributeType.Name(a.type) if a.type in _TYPE_NAMES else str(a.type)
            _refuse(node, f"attribute {a.name!r} is of type {kind}; every attribute of our ops is a STRING")
        try:
            text = a.s.decode("utf-8")
        except UnicodeDecodeError:
            _refuse(
                node,
                f"attribute {a.name!r} is not UTF-8 text (onnxruntime-extensions' Python layer aborts on the bytes of a declared one)",
            )
        if a.name in kinds:
            try:
                attr_codec.decode(kinds[a.name], text)
            except CustomOpsError as exc:
                _refuse(node, f"attribute {a.name!r}: {exc}")
    missing = [name for name in declared if name not in seen]
    if missing:
        _refuse(node, f"lacks attribute(s) {', '.join(missing)}")


_TYPE_NAMES = frozenset(onnx.AttributeProto.AttributeType.values())


def _refuse(node: onnx.NodeProto, rule: str) -> NoReturn:
    where = f"node {node.name!r} ({DOMAIN}::{printable(node.op_type)})"
    raise CustomOpsError(brief(f"{where} {rule}"))
