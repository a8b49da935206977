"""Where a side's whole-model run stops: the node its error names (ORT's text, our kernels' own;
customops.eval.running.messages.failing_node), placed in the model, and the part of a model that runs before it.

When both sides fail, compare decides from these points whether the inputs are at fault (both stop at the
same node, or an error names no node of the model) or the sides part ways before they fail (each stops at
a different node: a finding; docs/compare.md, Outputs and exit status)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from onnx import ModelProto, NodeProto, helper

from customops.eval.running.messages import failing_node
from customops.graphs import node_label, subgraphs, walk_graph

__all__ = ["FailPoint", "before_failure", "downstream", "fail_point", "parted", "reads"]


@dataclass
class FailPoint:
    """The node a side's run stops at: ``node`` its name in the model as compared (None when the name
    the runtime gives, ``reported``, is no node of it), ``op`` as the report writes it (``Pad-15`` for a
    swapped node), ``swapped`` whether our kernel runs it on the custom side."""

    reported: str
    op: str
    node: str | None
    swapped: bool

    def where(self) -> str:
        """``'name' [op]`` for a message."""
        return f"{self.node if self.node is not None else self.reported!r} [{self.op}]"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "reported": self.reported, "op": self.op, "swapped": self.swapped}


def fail_point(error: str | None, nodes: dict[str, NodeProto], swapped: dict[str, str]) -> FailPoint | None:
    """The point where a side stopped, from its ``error``: ``nodes`` are the main graph's nodes by name,
    ``swapped`` the swapped ones' ops (``Pad-15``) by name. ORT's layout pass names the node it puts in
    place of one ``<output>_nchwc``; that is the original node. None when the error names no node."""
    # the names as an error's text writes them (messages.message: whitespace collapsed; our kernels' own
    # errors quote them with repr)
    written = {" ".join(form.split()): k for k in nodes for form in (repr(k)[1:-1], k)}
    renamed = {f"{o}_nchwc" for n in nodes.values() for o in n.output if o}
    found = failing_node(error, [*written, *renamed])
    if found is None:
        return None
    name, op = found
    node = written.get(name) if name not in nodes else name
    if node is None and name.endswith("_nchwc"):
        node = next((k for k, n in nodes.items() if name[: -len("_nchwc")] in n.output), None)
    if node is not None:
        op = swapped.get(node, nodes[node].op_type)
    return FailPoint(name, op, node, node in swapped)


def parted(a: FailPoint | None, b: FailPoint | None) -> bool:
    """Whether the two sides stop at different nodes of the model (both named and placed): they then part
    ways before they fail, which is a finding; otherwise the model or its inputs are at fault."""
    return a is not None and b is not None and a.node is not None and b.node is not None and a.node != b.node


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
