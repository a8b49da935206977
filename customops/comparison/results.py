"""compare's typed results: each graph output (:class:`OutputResult`), each swapped node
(:class:`NodeResult`), the whole report (:class:`Report`; ``to_json`` gives the ``--json`` document) and
:class:`Comparison`, the report with the tensors and isolated runs behind it. The report as text is
customops.comparison.table; the verdict line's words are customops.comparison.summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from customops.comparison.amplify import Effect
from customops.comparison.carried import CarriedIn
from customops.comparison.choices import NonFinite, Stopped
from customops.comparison.inputs import InputsUsed
from customops.comparison.isolate import Isolated
from customops.comparison.optimizer import Optimization
from customops.eval.judging.cpu_dependence import CpuDependence
from customops.eval.judging.metrics import Metrics

__all__ = [
    "NOTHING_TO_COMPARE",
    "Comparison",
    "NodeOutput",
    "NodeResult",
    "OutputResult",
    "Report",
    "VerdictLine",
]

NOTHING_TO_COMPARE = "nothing-to-compare"
"""The verdict of a comparison in which no node is swapped (the model has no node of our ops, or --ops,
--nodes and --exclude leave none): neither side is run, and the command exits 2."""


@dataclass
class OutputResult:
    """One graph output: its metrics (B against A), None when a side has no value."""

    name: str
    metrics: Metrics | None

    @property
    def verdict(self) -> str:
        if self.metrics is None:
            return "side-failed"
        return "agree" if self.metrics.passed else "disagree"

    def to_json(self) -> dict[str, Any]:
        metrics = None if self.metrics is None else self.metrics.to_json()
        return {"name": self.name, "metrics": metrics, "verdict": self.verdict}


@dataclass
class NodeOutput:
    """One output of a node that has several (DynamicQuantizeLinear's y, y_scale and y_zero_point): its
    figures inside the model and alone, and who leaves the spec on it alone; the node's own figures are
    those of its worst output (customops.comparison.outputs)."""

    name: str
    in_model: Metrics | None
    isolated: dict[str, Any] | None = None
    """The node alone, this output: the three pairwise metrics and, where measured, the yardstick."""
    attribution: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.name,
            "in_model": None if self.in_model is None else self.in_model.to_json(),
            "isolated": self.isolated,
            "attribution": self.attribution,
        }


@dataclass
class NodeResult:
    """One swapped node of the main graph (docs/compare.md, Verdicts), or, against loaded outputs, a node
    of ORT's whose output the file holds (``swapped`` False)."""

    node: str
    op: str
    output: str
    scope: str
    in_model: Metrics | None
    time_us: dict[str, float | None]
    fed_from: str
    provider: dict[str, str | None] = field(default_factory=dict)
    """The execution provider that ran the node in the model, per side (from ORT's profile)."""
    known: list[str] = field(default_factory=list)
    """Ids of documented deviations the difference matches (customops.eval.judging.deviations), where it
    starts."""
    isolated: dict[str, Any] | None = None
    origin: str = "unknown"
    attribution: str = "unknown"
    verdict: str = "agree"
    carried_from: str | None = None
    """Where the difference of its inputs comes from, when they differ (customops.comparison.carried):
    ``ort-nodes`` (no swapped node upstream makes a difference of its own) or ``swapped-nodes``; None: they do
    not."""
    swapped: bool = True
    """False for a node of ORT's, compared only against loaded outputs that hold its output
    (customops.comparison.loaded)."""
    each: list[NodeOutput] = field(default_factory=list)
    """Every output compared, for a node of several (the JSON's ``outputs``); empty for a node of one,
    whose figures are the node's own. ``output`` names the one whose figures the node shows."""
    cpu_dependence: CpuDependence | None = None
    """For MatMulInteger, QLinearMatMul, QLinearConv and ConvInteger: what ORT's saturating uint8 x int8
    kernel of x86 CPUs without VNNI would change of its output on its inputs in the run
    (customops.comparison.cpu_notes); None for other ops, and against loaded outputs. Never part of the
    verdict."""

    @property
    def breaks_agreement(self) -> bool:
        """Whether this node by itself makes the comparison a disagreement (docs/compare.md, Outputs and
        exit status): a side fails on it, or it differs and the difference is not shown to be carried in
        (a node that agrees alone, or differs alone within rounding, only reports its values inside the
        model; the graph outputs at their tolerances still decide)."""
        if self.verdict == "side-failed":
            return True
        return self.verdict == "disagree" and self.origin != "carried-in"

    def to_json(self) -> dict[str, Any]:
        several = {"outputs": [o.to_json() for o in self.each]} if self.each else {}
        return {
            "node": self.node,
            "op": self.op,
            "output": self.output,
            "scope": self.scope,
            "in_model": None if self.in_model is None else self.in_model.to_json(),
            "isolated": self.isolated,
            "origin": self.origin,
            "attribution": self.attribution,
            "known": self.known,
            "verdict": self.verdict,
            "time_us": self.time_us,
            "provider": self.provider,
            "fed_from": self.fed_from,
            "carried_from": self.carried_from,
            "swapped": self.swapped,
            "cpu_dependence": None if self.cpu_dependence is None else self.cpu_dependence.to_json(),
            **several,
        }


@dataclass
class VerdictLine:
    """The report's verdict line in its parts, each a clause in words (customops.comparison.summary):
    ``head`` the verdict and what differs; ``clauses`` why (a follow-up that explains more replaces them);
    ``inputs`` the sizes of generated inputs the ladder chose; ``notes`` what --fail-fast and --validate
    add; ``prefix`` --validate's INVALID, before it all."""

    head: str
    clauses: list[str] = field(default_factory=list)
    inputs: str | None = None
    notes: list[str] = field(default_factory=list)
    prefix: str | None = None

    def text(self) -> str:
        line = "; ".join([self.head, *self.clauses]) + (f" {self.inputs}" if self.inputs else "")
        return "; ".join([*([self.prefix] if self.prefix else []), line, *self.notes])


@dataclass
class Report:
    """The whole comparison; :meth:`to_json` is the ``--json`` document."""

    model: str
    ort_version: str
    customops_version: str
    seed: int
    verdict: str
    line: VerdictLine
    tolerances: dict[str, dict[str, float | None]]
    sides: dict[str, dict[str, Any]]
    outputs: list[OutputResult]
    nodes: list[NodeResult]
    inner_nodes: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    amplified: list[Effect] = field(default_factory=list)
    """When outputs differ but no swapped node differs alone: the swaps that move them (the culprits of
    customops.comparison.amplify)."""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each phase: prepare, whole runs, nodes alone, graph optimization (only when rerun),
    amplification."""
    graph_optimization: Optimization = field(default_factory=Optimization)
    """ORT's graph optimization level and the reruns at lower levels (customops.comparison.optimizer)."""
    inputs: InputsUsed | None = None
    """The inputs compared: shapes, dtypes and, generated, the sizes of the symbolic dimensions."""
    validation: list[NonFinite] | None = None
    """With --validate: each compared tensor and side holding NaN or inf (None: not asked for)."""
    stopped: Stopped | None = None
    """With --fail-fast: where the comparison stopped and the nodes not judged (None: it did not stop)."""
    carried_in: CarriedIn | None = None
    """Swapped nodes whose inputs differ though no swapped node upstream makes a difference of its own, and
    those values rerun at lower graph optimization levels (customops.comparison.carried); None: no such
    node."""

    @property
    def summary(self) -> str:
        """The verdict line (:class:`VerdictLine`) as the report gives it."""
        return self.line.text()

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "ort_version": self.ort_version,
            "customops_version": self.customops_version,
            "seed": self.seed,
            "verdict": self.verdict,
            "summary": self.summary,
            "tolerances": self.tolerances,
            "sides": self.sides,
            "outputs": [o.to_json() for o in self.outputs],
            "nodes": [n.to_json() for n in self.nodes],
            "inner_nodes": self.inner_nodes,
            "skipped": self.skipped,
            "amplified": [e.to_json() for e in self.amplified],
            "phase_seconds": self.phase_seconds,
            "graph_optimization": self.graph_optimization.to_json(),
            "inputs": None if self.inputs is None else self.inputs.to_json(),
            "validation": None if self.validation is None else [v.to_json() for v in self.validation],
            "fail_fast": None if self.stopped is None else self.stopped.to_json(),
            "carried_in": None if self.carried_in is None else self.carried_in.to_json(),
        }


@dataclass
class Comparison:
    """The typed report, the tensors behind it (key -> (A, B)) and the isolated runs by node."""

    report: Report
    tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]]
    isolated: dict[str, Isolated]
    feed: dict[str, np.ndarray] = field(default_factory=dict)
    """The inputs compared (generated ones at the sizes the verdict used)."""
    several: dict[str, dict[str, tuple[np.ndarray | None, np.ndarray | None]]] = field(default_factory=dict)
    """For each node of several outputs: every output's values (A, B) by output name (``tensors`` holds
    the one the node shows)."""

    @property
    def exit_status(self) -> int:
        """0 agree; 2 nothing to compare (no node swapped: as a usage error, never a pass); else 1."""
        if self.report.verdict == NOTHING_TO_COMPARE:
            return 2
        return 0 if self.report.verdict == "agree" else 1
