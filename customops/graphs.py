"""Walking a model's graphs: the main graph, subgraphs (If, Loop, Scan bodies) at any depth and
model-local functions; every tensor a model holds; the checks of a model handed over as data (its text
is UTF-8, and one with no file points at no external data). Pure ONNX protobuf, so that every layer that
looks into a model (the bridge's check of our nodes, the model layer's loading and rewriting) walks it
the same way."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from onnx import ModelProto

from customops.errors import CustomOpsError


def model_tensors(model: Message) -> Iterator[onnx.TensorProto]:
    """Every TensorProto ``model`` holds, wherever the format lets one sit: initializers, sparse
    initializers' values and indices, tensors in attributes (Constant's ``value`` and ``sparse_value``,
    TENSORS, SPARSE_TENSORS), in the main graph, subgraphs at any depth, model-local functions and
    training graphs. Found through protobuf's own descriptors, so whatever type an attribute claims and
    whatever field onnx adds later, no tensor is missed (no recursion: the depth is the file's)."""
    return _held(model, onnx.TensorProto)


def sparse_tensors(model: Message) -> Iterator[onnx.SparseTensorProto]:
    """Every SparseTensorProto ``model`` holds (sparse initializers, Constant's ``sparse_value``,
    SPARSE_TENSORS attributes), wherever :func:`model_tensors` would find their values."""
    return _held(model, onnx.SparseTensorProto)


def _held(model: Message, kind: type[Message]) -> Iterator[Any]:
    """Every message of type ``kind`` reachable from ``model``, not looking inside one."""
    holders = _tensor_holders()
    stack: list[Message] = [model]
    while stack:
        message = stack.pop()
        if isinstance(message, kind):
            yield message
            continue
        if isinstance(message, onnx.TensorProto):
            continue
        for fd, value in message.ListFields():
            if fd.message_type is None or fd.message_type.full_name not in holders:
                continue
            if isinstance(value, Message):
                stack.append(value)
            else:  # a repeated field
                stack.extend(reversed(value))


@functools.cache
def _tensor_holders() -> frozenset[str]:
    """The full names of the message types from which a TensorProto can be reached."""
    edges: dict[str, set[str]] = {}
    todo = [ModelProto.DESCRIPTOR]
    while todo:
        d = todo.pop()
        if d.full_name in edges:
            continue
        kinds = [f.message_type for f in d.fields if f.message_type is not None]
        edges[d.full_name] = {k.full_name for k in kinds}
        todo.extend(kinds)
    holders = {onnx.TensorProto.DESCRIPTOR.full_name}
    grown = True
    while grown:
        before = len(holders)
        holders.update(name for name, kinds in edges.items() if kinds & holders)
        grown = len(holders) > before
    return frozenset(holders)


def check_text(model: Message, where: str) -> None:
    """Raise CustomOpsError naming the first text field of ``model`` (a name, a doc_string, a domain, a
    metadata entry, anywhere) that is not UTF-8: protobuf hands such a field back as bytes, on which
    every use of it as text fails."""
    if _all_text(model):
        return
    stack: list[tuple[Message, tuple]] = [(model, ())]
    while stack:  # the slow walk, that knows where it is, only once a field is known to be wrong
        message, path = stack.pop()
        for fd, value in message.ListFields():
            if fd.type == fd.TYPE_STRING:
                items = [value] if isinstance(value, (str, bytes)) else list(value)
                for i, item in enumerate(items):
                    if isinstance(item, bytes):
                        at = _field_path((path, fd.name, None if items[0] is value else i))
                        raise CustomOpsError(
                            f"{where}: {at} is not UTF-8 text ({item[:40]!r}); names and other text in a "
                            "model must be UTF-8"
                        )
            elif fd.type == fd.TYPE_MESSAGE:
                if isinstance(value, Message):
                    stack.append((value, (path, fd.name, None)))
                else:
                    stack.extend((m, (path, fd.name, i)) for i, m in enumerate(value))


def _all_text(model: Message) -> bool:
    """Whether every text field of ``model`` is UTF-8 (str): the quick walk of :func:`check_text`."""
    stack = [model]
    pop, push, extend = stack.pop, stack.append, stack.extend
    string, message = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
    while stack:
        for fd, value in pop().ListFields():
            kind = fd.type
            if kind == string:
                if type(value) is bytes or (type(value) is not str and any(type(v) is bytes for v in value)):
                    return False
            elif kind == message:
                if isinstance(value, Message):
                    push(value)
                else:
                    extend(value)
    return True


def _field_path(link: tuple) -> str:
    """``graph.node[3].name`` from the chain of (parent, field name, index) links of :func:`check_text`."""
    parts = []
    while link:
        link, name, index = link
        parts.append(name if index is None else f"{name}[{index}]")
    return ".".join(reversed(parts))


def external_location(tensor: onnx.TensorProto) -> str | None:
    """Where ``tensor`` keeps its data when it keeps it in external data (its ``location``), else None."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return None
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def check_in_memory(model: ModelProto, where: str) -> None:
    """Raise CustomOpsError unless ``model``, given as bytes or a ModelProto, can be used as it is: its
    text is UTF-8 (:func:`check_text`) and it points at no external data (:func:`refuse_external`)."""
    check_text(model, where)
    refuse_external(model, where)


def refuse_external(model: ModelProto, where: str) -> None:
    """Raise CustomOpsError when a tensor of ``model`` keeps its data in external data, which a model
    with no file has no directory to find in (ONNX Runtime would look in its current directory)."""
    for tensor in model_tensors(model):
        location = external_location(tensor)
        if location is not None:
            raise CustomOpsError(
                f"{where}: tensor {tensor.name!r} keeps its data in external data ({location!r}), which only "
                "a model file can locate: pass the model's path (external data is read from its directory)"
            )


def subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """The graphs held in ``node``'s attributes, with a name each (``body``, ``branches[1]``)."""
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.name, a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            for i, g in enumerate(a.graphs):
                yield f"{a.name}[{i}]", g


def walk_graph(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph in it, at any depth (no recursion: the depth is the file's)."""
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for node in reversed(g.node):
            stack.extend(reversed([sub for _, sub in subgraphs(node)]))


def all_graphs(model: ModelProto) -> Iterator[onnx.GraphProto]:
    """The main graph, its subgraphs, and the subgraphs in model-local functions' nodes."""
    yield from walk_graph(model.graph)
    for fn in model.functions:
        for node in fn.node:
            for _, g in subgraphs(node):
                yield from walk_graph(g)


def all_nodes(model: ModelProto) -> Iterator[onnx.NodeProto]:
    """Every node of the model: main graph, subgraphs at any depth, and model-local functions."""
    for g in all_graphs(model):
        yield from g.node
    for fn in model.functions:
        yield from fn.node


def node_label(node: onnx.NodeProto, fallback: str = "") -> str:
    """How a node is called in messages and reports: its name, else its first output's, else
    ``fallback`` (a node of neither)."""
    return node.name or (node.output[0] if node.output else fallback)
