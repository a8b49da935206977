"""Walking a model's graphs: the main graph, subgraphs (If, Loop, Scan bodies) at any depth and
model-local functions. Pure ONNX protobuf, so that every layer that looks into a model (the bridge's
check of our nodes, the model layer's loading and rewriting) walks it the same way."""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from onnx import ModelProto


def model_tensors(model: ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of the model that may hold data: initializers and tensor attributes, in the main
    graph, subgraphs at any depth and model-local functions."""
    for g in all_graphs(model):
        yield from g.initializer
        yield from (s.values for s in g.sparse_initializer)
        yield from (s.indices for s in g.sparse_initializer)
    for node in all_nodes(model):
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t
            elif a.type == onnx.AttributeProto.TENSORS:
                yield from a.tensors


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
