"""Every output of a swapped node, judged inside the model and alone, and what the node's row shows.

A node of several outputs (DynamicQuantizeLinear's y, y_scale and y_zero_point) is compared output by
output, each at its own tolerance: inside the model (A's value against B's) and alone (the three sides'
values of that output, its own yardstick and attribution). The node's figures, attribution, origin and
verdict are those of its worst output (:func:`worst`): the first, in the node's order, that departs
alone (or a side fails), else that differs alone within rounding, else whose reference is the odd one
out, else that differs inside the model; the JSON lists every output (``outputs``). A node of one output
is judged as before and its report has no ``outputs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onnx import NodeProto

from customops.comparison.isolate import Isolated, add_yardstick, attribute, metrics_of
from customops.comparison.node_labels import labels
from customops.comparison.prepared import WholeRuns
from customops.comparison.results import NodeOutput, NodeResult
from customops.comparison.settings import Settings
from customops.eval.judging.metrics import Metrics
from customops.eval.judging.yardstick_table import alone_atol

__all__ = ["Judged", "decide", "judge_outputs_of", "worst"]

NOT_STARTING = ("agree", "reference-odd-one-out", "within-rounding")
"""Attributions of a node alone that start no difference (docs/compare.md, Verdicts)."""

SEVERITY = {"agree": 0, "unknown": 0, "reference-odd-one-out": 1, "within-rounding": 2}
"""How much an output's attribution alone weighs when the node's worst output is chosen; any other
attribution (a departure, a side that cannot run) weighs 3."""


@dataclass
class Judged:
    """One output of a node: its result for the report, the node alone seen through it (None: the node
    was not run alone) and the pairwise metrics of that run."""

    result: NodeOutput
    view: Isolated | None = None
    pairs: dict[str, Metrics | None] = field(default_factory=dict)

    @property
    def differs(self) -> bool:
        """Whether the output differs inside the model at its tolerance."""
        m = self.result.in_model
        return m is not None and not m.passed

    def weight(self) -> tuple[int, bool]:
        return SEVERITY.get(self.result.attribution, 3), self.differs


def judge_outputs_of(node: NodeProto, runs: WholeRuns, iso: Isolated | None, s: Settings) -> list[Judged]:
    """Each output of ``node``: A's value inside the model against B's (divided by ours, as alone), and,
    where the node ran alone (``iso``), that output on the three sides against its yardstick."""
    judged = []
    names = [o for o in node.output if o]
    for name in names:
        a, b = runs.a_exposed.values.get(name), runs.b_exposed.values.get(name)
        one = Judged(NodeOutput(name, metrics_of(a, b, *s.tol(name), s.criterion(name))))
        if iso is not None:
            one.view = iso.of(name) if len(names) > 1 else iso  # one output: the run itself
            rtol, atol = s.tol(name)
            alone = (rtol, alone_atol(node.op_type, atol))
            add_yardstick(one.view, *alone, s.criterion(name))
            one.result.attribution, one.pairs = attribute(one.view, *alone, s.criterion(name))
            one.result.isolated = _pairs_json(one)
        judged.append(one)
    return judged


def _pairs_json(one: Judged) -> dict[str, Any]:
    """An output's figures alone for the JSON: the three pairs and, where measured, its yardstick."""
    found: dict[str, Any] = {k: None if m is None else m.to_json() for k, m in one.pairs.items()}
    if one.view is not None and one.view.yardstick is not None:
        found["yardstick"] = one.view.yardstick.to_json()
    return found


def worst(judged: list[Judged]) -> Judged:
    """The output whose figures the node shows: the first of the heaviest (:data:`SEVERITY`, then
    differing inside the model)."""
    top = max(one.weight() for one in judged)
    return next(one for one in judged if one.weight() == top)


def decide(entry: NodeResult, node: NodeProto, shown: Judged, errors: dict[str, str | None] | None) -> None:
    """Fill ``entry``'s figures alone, attribution, origin, known ids and verdict from its ``shown``
    output (``errors``: the node alone's, None when it was not run alone; docs/compare.md, Verdicts)."""
    differs = shown.differs
    if shown.view is None or errors is None:
        entry.verdict = "disagree" if differs else entry.verdict
        return
    word = shown.result.attribution
    pairs_json = {k: v for k, v in (shown.result.isolated or {}).items() if k != "yardstick"}
    entry.isolated, entry.attribution = {**pairs_json, "errors": errors}, word
    if "yardstick" in (shown.result.isolated or {}):
        entry.isolated["yardstick"] = shown.result.isolated["yardstick"]  # type: ignore[index]
    starts = word not in NOT_STARTING
    entry.origin = "starts-here" if starts else ("carried-in" if differs else "none")
    if starts or word == "reference-odd-one-out":  # the reference's own departures are named too
        entry.known = labels(node, entry.op, word, shown.view, shown.pairs)
    if word == "within-rounding":
        entry.origin, entry.verdict = "rounding", "within-rounding"
    elif word.endswith("cannot-run"):
        entry.verdict = "agree" if word == "both-cannot-run" else "side-failed"
    elif starts or differs:
        entry.verdict = "disagree"
