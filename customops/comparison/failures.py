"""Where a side's whole-model run stops: the node its error names (ORT's text, our kernels' own;
customops.eval.running.messages.failing_node), placed in the model (the part of a model that runs before
it: customops.comparison.flow.before_failure).

When both sides fail, compare decides from these points whether the inputs are at fault (both stop at the
same node, or an error names no node of the model) or the sides part ways before they fail (each stops at
a different node: a finding; docs/compare.md, Outputs and exit status)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onnx import NodeProto

from customops.eval.running.messages import failing_node

__all__ = ["FailPoint", "fail_point", "parted"]


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
