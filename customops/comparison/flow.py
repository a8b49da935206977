"""What flows where in a model's main graph: the values a node reads (in its subgraphs too), the values a
taint reaches going forward (:func:`downstream`: a difference carried in, customops.comparison.carried;
what depends on a failing node), and a model cut to what runs before a node where a side stops
(:func:`before_failure`, customops.comparison.failures)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from onnx import ModelProto, NodeProto, helper

from customops.graphs import node_label, subgraphs, walk_graph

__all__ = ["before_failure", "downstream", "reads"]


def reads(node: NodeProto) -> Iterable[str]:
    """The values ``node`` reads: its inputs, and what the nodes of its subgraphs read (outer-scope values
    among them; names made inside a subgraph are never made in the main graph)."""
    yield from node.input
    for _, sub in subgraphs(node):
        for g in walk_graph(sub):
            for inner in g.node:
                yield from inner.input


def before_failure(
    model: ModelProto, original: ModelProto, stop: str, wanted: list[str], types: dict[str, int]
) -> ModelProto | None:
    """``model`` (the original or its rewrite) cut to what computes the values of ``wanted`` that do not
    depend on the node ``stop`` of ``original`` (those are its graph outputs): a side that stopped at
    ``stop`` runs this far. None when none of ``wanted`` is left."""
    # made by the node ``stop`` (by its label) and by every node that reads them, at any remove
    after = downstream(original, lambda node, upstream: upstream or node_label(node) == stop)
    keep_values = [v for v in wanted if v not in after]
    needed, kept = set(keep_values), []
    for node in reversed(model.graph.node):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(n for n in reads(node) if n)
    made = {o for n in kept for o in n.output}
    outputs = [v for v in keep_values if v in made]
    if not outputs:
        return None
    out = ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(reversed(kept))
    del out.graph.output[:]
    for name in outputs:
        elem = types.get(name)
        info = (
            helper.make_tensor_value_info(name, elem, None)
            if elem
            else helper.make_empty_tensor_value_info(name)
        )
        out.graph.output.append(info)
    return out


def downstream(model: ModelProto, passes_on: Callable[[NodeProto, bool], bool]) -> set[str]:
    """The values of ``model``'s main graph that a taint reaches, forward: each node in order is asked
    ``passes_on(node, upstream)`` (``upstream``: whether it reads a tainted value, in a subgraph too), and
    its outputs are tainted when it says so."""
    tainted: set[str] = set()
    for node in model.graph.node:  # topologically sorted, as ONNX requires
        if passes_on(node, bool(tainted.intersection(n for n in reads(node) if n))):
            tainted.update(o for o in node.output if o)
    return tainted
