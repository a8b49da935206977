"""Where a difference a swapped node carries in comes from: ORT's own nodes, or a swapped node upstream.

A swapped node that agrees alone but differs inside the model carries a difference in: its inputs
already differ between the two sides. A swapped node makes a difference of its own when its output
inside the model differs in any bit and the two kernels alone give other bits (within tolerance or not;
or it was not run alone), and passes on any difference it reads; a node holding swapped nodes in a
subgraph or function may make one too. When nothing upstream of a node makes or passes on a difference
of its own, no kernel of ours made the difference of its inputs: ORT's own nodes did, computing other
bits in the two sessions (ORT's graph optimizer rewrites the model around our opaque nodes differently:
other fusions, another layout, sums in another order). :func:`sources` tells the two apart per node, and
the pipeline reruns the values at lower graph optimization levels to name the level at which they match
(customops.comparison.optimizer), as it does for the graph outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto

from customops.comparison.flow import downstream
from customops.comparison.optimizer import Optimization
from customops.eval.judging.metrics import same_bits
from customops.graphs import node_label, subgraphs, walk_graph

__all__ = ["FROM_ORT", "FROM_SWAPPED", "CarriedIn", "Source", "sources"]

FROM_ORT = "ort-nodes"
"""A node's inputs differ, and no swapped node upstream makes a difference of its own: ORT's own nodes made it."""
FROM_SWAPPED = "swapped-nodes"
"""A node's inputs differ, and a swapped node upstream makes a difference of its own (or may)."""


@dataclass(frozen=True)
class Source:
    """One swapped node of the main graph: its name, its inputs that differ between the sides, and what
    may have made them differ (:data:`FROM_ORT` or :data:`FROM_SWAPPED`)."""

    node: str
    values: tuple[str, ...]
    source: str


def _differing(names: Sequence[str], a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, ...]:
    """The names among ``names`` whose values both sides have and that differ in any bit."""
    out = []
    for n in dict.fromkeys(names):
        if n and n in a and n in b and not same_bits(np.asarray(a[n]), np.asarray(b[n])):
            out.append(n)
    return tuple(out)


def sources(
    model: ModelProto,
    swapped: Mapping[str, bool],
    inner: frozenset[str],
    values: tuple[Mapping[str, Any], Mapping[str, Any]],
) -> list[Source]:
    """Each swapped node of ``model``'s main graph whose inputs differ between the sides (``values``: the
    built-in and custom sides' values inside the model), with where the difference may come from.
    ``swapped``: each swapped node by name (else its first output), True when the two kernels alone do
    not give the same bits (or it was not run alone); ``inner``: the names of swapped nodes inside
    subgraphs or model-local functions (a node holding one may differ, unseen). A swapped node passes a
    difference of its own on when its output inside the model differs and it differs alone or reads one
    passed on."""
    holders = _holders(model, inner)
    found = []

    def passes_on(node: NodeProto, upstream: bool) -> bool:
        key = node_label(node)
        if key not in swapped:
            return upstream or _holds(node, inner, holders)
        differ = _differing(list(node.input), *values)
        if differ:
            found.append(Source(key, differ, FROM_SWAPPED if upstream else FROM_ORT))
        differs = any(_output_differs(o, *values) for o in node.output if o)
        return (upstream or swapped[key]) and differs

    downstream(model, passes_on)
    return found


def _holders(model: ModelProto, inner: frozenset[str]) -> set[tuple[str, str]]:
    """The model-local functions (domain, name) with a swapped node among their nodes."""
    return {(f.domain, f.name) for f in model.functions if any(_label(n) in inner for n in f.node)}


def _holds(node: NodeProto, inner: frozenset[str], holders: set[tuple[str, str]]) -> bool:
    """Whether ``node`` holds a swapped node: in a subgraph at any depth, or as a call of a function."""
    if not inner:
        return False
    if (node.domain, node.op_type) in holders:
        return True
    return any(_label(n) in inner for _, sub in subgraphs(node) for g in walk_graph(sub) for n in g.node)


def _label(node: NodeProto) -> str:
    """A node's name in the rewriter's records (customops.model.rewriter): its name, else its first
    output, else its op."""
    return node_label(node, node.op_type)


def _output_differs(name: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether the value ``name`` differs between the sides inside the model (or is missing on one)."""
    return name not in a or name not in b or bool(_differing([name], a, b))


@dataclass
class CarriedIn:
    """The swapped nodes whose inputs differ with no swapped node upstream differing alone (``nodes``),
    the values that differ (``values``), and those values rerun on both sides at lower graph optimization
    levels (``optimization``: where they match, ORT's graph optimizer made the difference)."""

    nodes: list[str]
    values: list[str]
    optimization: Optimization = field(default_factory=Optimization)

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "values": self.values, **self.optimization.to_json()}
