"""``compare --load-outputs``: outputs saved by another runtime stand in for the built-in side (A). Side B
(ours) runs with every value the file holds exposed, each of them is compared, and each node whose output
the file holds is described inside the model: whether the difference starts there (its inputs agree
with the file's) or was carried in (docs/compare.md, Saved outputs in place of the built-in side). No
node is run alone and nothing is rerun: that would judge ORT's built-in kernels, not the runtime that
wrote the file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from onnx import NodeProto

from customops.comparison.isolate import metrics_of
from customops.comparison.node_labels import loaded_labels
from customops.comparison.prepared import Prepared, WholeRuns, with_outputs
from customops.comparison.results import NodeOutput, NodeResult, OutputResult
from customops.comparison.saved import LoadedOutputs
from customops.comparison.settings import Settings
from customops.eval.judging.metrics import Metrics
from customops.eval.running.sides import SideRun, run_side
from customops.graphs import node_label
from customops.safeio import printable

__all__ = ["exposed_names", "judge_loaded", "loaded_summary", "runs_against_loaded"]

Tensors = dict[str, tuple[np.ndarray | None, np.ndarray | None]]


def exposed_names(p: Prepared, loaded: LoadedOutputs) -> list[str]:
    """The values side B exposes against ``loaded``: the swapped nodes' outputs and inputs, and every
    value the file holds that is no graph output."""
    graph = {o.name for o in p.model.graph.output}
    return list(dict.fromkeys([*p.exposed, *(k for k in loaded.values if k not in graph)]))


def runs_against_loaded(
    p: Prepared, feed: dict[str, np.ndarray], s: Settings, loaded: LoadedOutputs, say: Callable[[str], None]
) -> WholeRuns:
    """The loaded values stand in for side A (its model is not run); side B runs as usual, and again with
    :func:`exposed_names` as outputs."""
    say(
        f"the built-in side: outputs loaded from {printable(loaded.path)} ({printable(loaded.source)}), not run"
    )
    say("running the model with customops kernels")
    b = run_side(p.rewritten, feed, custom=True, repeats=s.repeats, optimization=s.optimization)
    names = exposed_names(p, loaded)
    b_exposed = SideRun()
    if names and not b.error:
        b_exposed = run_side(
            with_outputs(p.rewritten, names, p.types), feed, custom=True, optimization=s.optimization
        )
    graph = {o.name for o in p.model.graph.output}
    a = SideRun(values={k: v for k, v in loaded.values.items() if k in graph})
    a_exposed = SideRun(values={k: v for k, v in loaded.values.items() if k not in graph})
    return WholeRuns(a, b, a_exposed, b_exposed)


@dataclass
class _Compared:
    """The values compared so far, by tensor name: whether each agrees at its tolerance."""

    agrees: dict[str, bool] = field(default_factory=dict)
    same: set[str] = field(default_factory=set)
    """Values that are the same on both sides by construction: graph inputs and initializers."""

    def origin(self, node: NodeProto) -> str:
        """Where the difference of a differing node comes from: ``carried-in`` (an input already differs),
        ``starts-here`` (every input agrees), ``unknown`` (the file holds no value for an input)."""
        inputs = [i for i in node.input if i and i not in self.same]
        if any(self.agrees.get(i) is False for i in inputs):
            return "carried-in"
        return "starts-here" if all(i in self.agrees for i in inputs) else "unknown"


def judge_loaded(
    p: Prepared,
    runs: WholeRuns,
    s: Settings,
    feed: dict[str, np.ndarray],
    tensors: tuple[Tensors, dict[str, Tensors]],
) -> list[NodeResult]:
    """Each node of the main graph, in graph order, whose outputs the file holds, compared inside the
    model (each of those outputs, at its tolerance; the node's figures are those of the first that
    differs, and with several held each is listed): a swapped node always; a node of ORT's (not swapped)
    unless its outputs there are graph outputs only and the file lacks some of its inputs (it is then the
    graph output's row, and nothing tells where its difference comes from). A differing node's
    ``origin``: :meth:`_Compared.origin`; where a swapped node's difference starts, the known ids it
    matches (customops.comparison.node_labels.loaded_labels). ``tensors``: the values shown by node, and
    every held output's of a node that holds several (by node, then output), filled here."""
    shown_values, several = tensors
    a_values = {**runs.a_exposed.values, **runs.a.values}
    b_values = {**runs.b_exposed.values, **runs.b.values}
    graph = {o.name for o in p.model.graph.output}
    swapped = {r.node: r for r in p.swapped}
    compared = _Compared(same={*p.initializers, *feed})
    inputs = {**p.initializers, **feed, **a_values}  # what the file's runtime saw (where origin tells)
    nodes = []
    for node in p.model.graph.node:
        held = [o for o in node.output if o and o in a_values]
        if not held:
            continue
        key = node_label(node)
        record = swapped.get(key) if p.nodes.get(key) == node else None  # not a namesake
        origin = compared.origin(node)
        found = {o: metrics_of(a_values[o], b_values.get(o), *s.tol(o), s.criterion(o)) for o in held}
        compared.agrees.update({o: m is not None and m.passed for o, m in found.items()})
        if record is None and set(held) <= graph and origin == "unknown":
            continue
        shown = next((o for o in held if not compared.agrees[o]), held[0])
        shown_values[key] = (a_values[shown], b_values.get(shown))
        entry = _entry(key, record.op if record else node.op_type, shown, found[shown], origin)
        entry.swapped = record is not None
        if entry.swapped and entry.origin == "starts-here":
            entry.known = loaded_labels(node, entry.op, inputs, p.model, (*shown_values[key], found[shown]))
        if len(held) > 1:
            entry.each = [NodeOutput(o, found[o]) for o in held]
            several[key] = {o: (a_values[o], b_values.get(o)) for o in held}
        nodes.append(entry)
    return nodes


def _entry(key: str, op: str, output: str, m: Metrics | None, origin: str) -> NodeResult:
    """A node's result inside the model: agree, disagree (with its ``origin``), or side-failed when ours
    has no value for its output."""
    entry = NodeResult(key, op, output, "graph", m, {}, "builtin")
    if m is None:
        entry.verdict = "side-failed"
    elif not m.passed:
        entry.verdict, entry.origin = "disagree", origin
    else:
        entry.origin = "none"
    return entry


def loaded_summary(
    outputs: list[OutputResult], nodes: list[NodeResult], loaded: LoadedOutputs, p: Prepared
) -> str:
    """The verdict line of an agreement or a disagreement with loaded outputs: no node was run alone, so
    no side is named; where the difference starts inside the model, when the file tells; the swapped
    nodes of the main graph whose output the file does not hold (not compared), and those inside
    subgraphs or functions (compared through the graph outputs)."""
    bad = [n for n in nodes if n.verdict != "agree"]
    bad_out = [o for o in outputs if o.verdict != "agree"]
    source = f"the outputs loaded from {loaded.path}"
    if not bad and not bad_out:
        text = f"AGREE: {len(outputs)} output(s) and {len(nodes)} node(s) match {source}"
    else:
        text = f"DISAGREE: {len(bad)} node(s), {len(bad_out)} output(s) differ from {source}"
    if bad:
        text += f"; {_first_text(bad)}"
    held = {n.node for n in nodes}
    missing = [r for r in p.swapped if r.node not in held]
    if missing:
        text += (
            f"; {len(missing)} swapped node(s) not compared: the loaded file holds no value for their "
            "outputs (save it with --onnx-outputs mark all)"
        )
    inner = len(p.all_swapped) - len(p.swapped)
    if inner:
        text += f"; {inner} swapped node(s) inside subgraphs or functions: compared through the graph outputs only"
    return text


def _first_text(bad: list[NodeResult]) -> str:
    """The words for the first node in the model whose output differs from the loaded one."""
    first = bad[0]
    where = f"{first.node!r} [{first.op}{'' if first.swapped else ', not swapped'}]"
    if first.verdict == "side-failed":
        return f"the custom side has no value for the output of {where}"
    if first.origin == "starts-here":
        after = sum(n.origin == "carried-in" for n in bad)
        carried = f"; {after} node(s) after it carry the difference in" if after else ""
        known = f" (known: {', '.join(first.known)})" if first.known else ""
        return (
            f"the difference starts at {where}: its inputs agree with the loaded values, its output does "
            f"not{known}{carried}"
        )
    if first.origin == "unknown":
        return (
            f"the first node in the model whose output differs: {where} (the file holds no value for some "
            "of its inputs: where the difference starts is not known)"
        )
    return f"the first node in the model whose output differs: {where}"
