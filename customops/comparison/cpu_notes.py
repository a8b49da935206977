"""Whether each swapped integer node's result depends on the CPU (docs/compare.md, CPU-dependent integer
nodes): its inputs' values in the model run, as the node alone is fed them, handed to
customops.eval.judging.cpu_dependence, and the verdict line's clause. Information only: it never changes
a verdict or the exit status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from onnx import ModelProto, NodeProto

from customops.comparison.node_labels import attributes
from customops.eval.judging.cpu_dependence import (
    NO_VNNI,
    OPS,
    UNKNOWN,
    CpuDependence,
    MacBudget,
    cpu_dependence,
)
from customops.registry import lookup

if TYPE_CHECKING:
    from customops.comparison.results import NodeResult

__all__ = ["cpu_clauses", "node_dependence"]


def node_dependence(
    node: NodeProto,
    values: Mapping[str, np.ndarray],
    model: ModelProto,
    budget: MacBudget,
    builtin_error: str | None = None,
) -> CpuDependence | None:
    """What the saturating u8 x s8 kernel would do to ``node``'s output on the ``values`` its inputs have
    (graph inputs, initializers, values of the model run by name); None for a node of another op,
    ``unknown`` when one of its inputs has no value here or ORT's built-in kernel refused the node alone
    (``builtin_error``: then no kernel of ORT's computes it, on any CPU)."""
    if node.op_type not in OPS:
        return None
    if builtin_error:
        return CpuDependence(UNKNOWN, reason="ORT's built-in kernel does not run it here")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    opv = lookup(node.op_type, opset)
    if opv is None:
        return None
    inputs = {}
    for name, given in zip((i.name for i in opv.inputs), node.input, strict=False):
        if not given:
            continue
        if given not in values:
            return CpuDependence(UNKNOWN, reason=f"its input {name} has no value here")
        inputs[name] = np.asarray(values[given])
    return cpu_dependence(node.op_type, inputs, attributes(node), budget)


def cpu_clauses(nodes: list[NodeResult]) -> list[str]:
    """The verdict line's clauses (none when there is nothing to say): the swapped integer nodes that give
    other numbers on x86 CPUs without VNNI, their outputs that change in all and what avoids it; those
    too large to check."""
    found = [n.cpu_dependence for n in nodes if n.cpu_dependence is not None]
    changing = [d for d in found if d.differs]
    large = sum(d.status == "too-large" for d in found)
    clauses = []
    if changing:
        outputs = sum(d.changed for d in changing)
        clauses.append(
            f"{len(changing)} integer node(s) would give other numbers on {NO_VNNI}: {outputs:,} "
            "output(s) in all (Q-U8S8-PAIR-SATURATION); uint8 weights, 7-bit weights (reduce_range=True) "
            "or a CPU with VNNI avoid it"
        )
    if large:
        more = " more" if changing else ""
        clauses.append(f"{large}{more} integer node(s) not checked for {NO_VNNI}: too large")
    return clauses
