"""``customops compare``: one model with ORT's built-in kernels (side A, *builtin*) and with ours (side B,
*custom*), node by node, with onnx.reference as the third vote.

For every swapped node of the main graph the report says whether its output differs inside the model,
whether the difference starts at that node (the node alone, fed A's own inputs to it, still differs) or
was carried in from upstream, and which side leaves the spec (customops.eval.judging.attribution). This module
holds the steps and the entry points. The steps: :func:`prepare` (restore, rewrite, pick the nodes and
the values to expose), the whole runs (customops.comparison.whole_runs: the model on both sides, then
with the exposed values as outputs), :func:`judge_outputs`, :func:`judge_node` for each swapped node, the follow-ups
(customops.comparison.followups) and the typed report (customops.comparison.results.Report, its verdict
line in the words of customops.comparison.summary). The entry points: :func:`compare_model`, then
:func:`run_and_judge` or, against loaded outputs, :func:`compare_loaded`, with the checked settings of
customops.comparison.settings.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto

from customops.comparison.amplify import Effect
from customops.comparison.choices import Choices, stops_here
from customops.comparison.cpu_notes import cpu_clauses, node_dependence
from customops.comparison.failures import FailPoint, parted
from customops.comparison.followups import (
    check_carried,
    check_optimizer,
    find_culprits,
    record_carried,
    record_choices,
    record_optimization,
)
from customops.comparison.inputs import InputPlan, InputsUsed, sizes_text
from customops.comparison.isolate import Isolated, metrics_of, run_isolated
from customops.comparison.loaded import judge_loaded, loaded_summary, runs_against_loaded
from customops.comparison.node_outputs import decide, judge_outputs_of, worst
from customops.comparison.optimizer import Optimization
from customops.comparison.prepared import Prepared, WholeRuns
from customops.comparison.results import (
    NOTHING_TO_COMPARE,
    Comparison,
    NodeResult,
    OutputResult,
    Report,
    VerdictLine,
)
from customops.comparison.saved import LoadedOutputs
from customops.comparison.settings import ErrorCheck, Settings, checked_settings
from customops.comparison.summary import nothing_summary, parted_summary, summary_line
from customops.comparison.whole_runs import fail_points, note_defaults, runs_that_fit
from customops.errors import CustomOpsError
from customops.eval.cases.testcase import tensor_value
from customops.eval.judging.cpu_dependence import MacBudget
from customops.eval.judging.metrics import DEFAULT_TOLERANCES
from customops.eval.running import sides
from customops.eval.running.sides import REFERENCE_TIMEOUT, SideRun
from customops.graphs import check_in_memory, node_label
from customops.safeio import printable

__all__ = ["compare_loaded", "compare_model", "log", "run_and_judge"]

Tensors = dict[str, tuple[np.ndarray | None, np.ndarray | None]]
"""Compared values by key (a graph output's name, a node's name): (A, B), either None when missing."""


def log(message: str) -> None:
    """A progress line on stderr, its names from the model escaped (:func:`customops.safeio.printable`)."""
    print(printable(message), file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------
# the steps


def prepare(
    model: ModelProto,
    feed: dict[str, np.ndarray],
    ops: Sequence[str] | None,
    say: Callable[[str], None],
    choices: Choices | None = None,
) -> Prepared:
    """Restore an already rewritten model, rewrite it (``ops`` only, and ``choices``' nodes), and pick the
    swapped nodes of the main graph and the values to expose."""
    from customops.model.rewriter import infer_types, is_rewritten, restore, rewrite_model, value_types

    count = is_rewritten(model)
    if count:
        say(
            f"the model is already rewritten ({count} node(s) in the customops domain): comparing its restored form"
        )
        model = restore(model)
    chosen = choices or Choices()
    result = rewrite_model(model, ops=ops, nodes=chosen.nodes, exclude=chosen.exclude)
    types: dict[str, int] = {}
    value_types(infer_types(model).graph, types)
    nodes = {node_label(n): n for n in model.graph.node}
    swapped = [r for r in result.swapped if r.scope == "graph" and r.node in nodes]
    exposed: list[str] = []
    for r in swapped:
        node = nodes[r.node]
        exposed.extend(o for o in node.output if o)
        exposed.extend(i for i in node.input if i)
    inits = {t.name: tensor_value(t, "initializer") for t in model.graph.initializer}
    exposed = [n for n in dict.fromkeys(exposed) if n not in inits and n not in feed]
    return Prepared(
        model, result.model, swapped, list(result.swapped), list(result.skipped), nodes, exposed, types, inits
    )


def note_failures(
    report: Report, points: dict[str, FailPoint | None], nodes: list[NodeResult], used: InputsUsed
) -> None:
    """Into ``report``: the inputs used, the node each failing side stopped at (``sides.*.failed_at``),
    the summary of two sides that stop at different nodes, and the sizes the ladder chose."""
    report.inputs = used
    for side, point in points.items():
        report.sides[side]["failed_at"] = None if point is None else point.to_json()
    a, b = points["builtin"], points["custom"]
    if a is not None and b is not None and parted(a, b):
        report.line = VerdictLine(parted_summary(a, b, nodes))
    if used.tried:
        failed = " and at ".join(sizes_text(t) for t in used.tried)
        report.line.inputs = f"(generated inputs with {sizes_text(used.dims)}: both sides failed at {failed})"


def judge_outputs(
    p: Prepared, runs: WholeRuns, s: Settings, tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]]
) -> list[OutputResult]:
    """Each graph output, A against B, ours: the relative error divides by B (recorded in ``tensors``)."""
    results = []
    for o in p.model.graph.output:
        a, b = runs.a.values.get(o.name), runs.b.values.get(o.name)
        tensors[o.name] = (a, b)
        results.append(OutputResult(o.name, metrics_of(a, b, *s.tol(o.name), s.criterion(o.name))))
    return results


def profiled(by_name: dict[str, Any], node: NodeProto) -> Any:
    """A node's entry in ORT's profile, by its name or by the name ORT's layout passes give the node
    they put in its place (the NCHWc pass turns a Resize into an Upsample named ``<output>_nchwc``)."""
    if node.name in by_name:
        return by_name[node.name]
    return next((by_name[f"{o}_nchwc"] for o in node.output if f"{o}_nchwc" in by_name), None)


def placed(run: SideRun, node: NodeProto, providers: list[str]) -> str | None:
    """The execution provider that ran ``node`` on a side: from the side's profile, else, for a side that
    ran on the CPU alone, the CPU (no profile is needed to know it)."""
    found = profiled(run.placement, node)
    if found is None and not run.error and providers == ["CPUExecutionProvider"]:
        return "CPUExecutionProvider"
    return found


def judge_node(
    p: Prepared, record: Any, runs: WholeRuns, known: dict[str, np.ndarray], s: Settings
) -> tuple[NodeResult, Isolated | None]:
    """One swapped node: each of its outputs inside the model, then alone on the three sides when every
    input it saw is known; the origin, attribution and verdict follow, from its worst output
    (customops.comparison.node_outputs; docs/compare.md, Verdicts)."""
    node = p.nodes[record.node]
    iso = None
    if all(n in known for n in node.input if n):
        iso = run_isolated(
            node, known, p.model, s.reference_limit, s.providers, s.reference_timeout, s.optimization
        )
    judged = judge_outputs_of(node, runs, iso, s)
    shown = worst(judged)
    entry = NodeResult(
        record.node,
        record.op,
        shown.result.name,
        record.scope,
        shown.result.in_model,
        {"builtin": profiled(runs.a.times, node), "custom": profiled(runs.b.times, node)}
        if s.repeats  # else any times are a warm-up's (a profile for placements), not kernel times
        else {"builtin": None, "custom": None},
        "builtin" if not runs.a.error else "custom",
        {
            "builtin": placed(runs.a, node, s.providers),
            "custom": placed(runs.b, node, ["CPUExecutionProvider"]),
        },
    )
    entry.each = [one.result for one in judged] if len(judged) > 1 else []
    if iso is not None and shown.view is not None:
        iso.yardstick = shown.view.yardstick  # the shown output's
    decide(entry, node, shown, None if iso is None else iso.errors)
    if (
        shown.result.in_model is None
        and (runs.a_exposed.error or runs.b_exposed.error)
        and entry.verdict == "agree"
    ):
        entry.verdict = "side-failed"
    return entry, iso


def _tolerances(s: Settings) -> dict[str, dict[str, float | None]]:
    out = {k: {"rtol": v[0], "atol": v[1]} for k, v in DEFAULT_TOLERANCES.items()}
    if s.rtol is not None or s.atol is not None:
        out = {"all": {"rtol": s.rtol, "atol": s.atol}}
    for name, (rtol, atol) in s.by_name.items():
        out[f"tensor {name}"] = {"rtol": rtol, "atol": atol}
    return out


def _skipped(p: Prepared) -> list[dict[str, str]]:
    """The report's ``skipped``: each node of our ops the rewriter left out, and why."""
    return [{"node": r.node, "op": r.op, "reason": r.reason, "scope": r.scope} for r in p.skipped]


def _report(
    p: Prepared,
    runs: WholeRuns,
    outputs: list[OutputResult],
    nodes: list[NodeResult],
    s: Settings,
    meta: tuple[str, int, list[Effect]],
) -> Report:
    """The typed report; ``meta``: the model's name, the seed, the swaps that move the outputs."""
    import onnxruntime as ort

    import customops

    inner = [
        {
            "node": r.node,
            "op": r.op,
            "scope": r.scope,
            "note": "inside a subgraph or function: compared through the graph outputs only",
        }
        for r in p.all_swapped
        if r not in p.swapped
    ]
    skipped = _skipped(p)
    failed = bool(runs.a.error or runs.b.error)
    disagree = any(n.breaks_agreement for n in nodes) or any(o.verdict != "agree" for o in outputs)
    verdict = "failed" if failed else ("disagree" if disagree else "agree")
    sides = {
        "builtin": {"ok": not runs.a.error, "error": runs.a.error, "providers": s.providers},
        "custom": {"ok": not runs.b.error, "error": runs.b.error, "providers": ["CPUExecutionProvider"]},
    }
    model_name, seed, amplified = meta
    summary = summary_line(
        verdict, nodes, outputs, (runs.a.error, runs.b.error), (len(p.all_swapped), amplified)
    )
    return Report(
        model_name,
        ort.__version__,
        customops.__version__,
        seed,
        verdict,
        summary,
        _tolerances(s),
        sides,
        outputs,
        nodes,
        inner,
        skipped,
        amplified,
    )


def _why_outputs_differ(
    p: Prepared,
    feed: dict[str, np.ndarray],
    runs: WholeRuns,
    judged: tuple[list[OutputResult], list[NodeResult]],
    s: Settings,
    out: tuple[Callable[[str], None], Phases],
) -> tuple[Optimization, list[Effect]]:
    """When outputs differ and no swapped node differs alone: the reruns at lower graph optimization
    levels (:func:`check_optimizer`), then, unless the difference vanishes there (the optimizer's, no
    kernel to search for), the swaps that move the outputs (:func:`find_culprits`)."""
    say, clock = out
    optimization = check_optimizer(p, feed, runs, judged, s, say)
    if optimization.reruns:
        clock.lap("graph optimization")
    explained = optimization.vanishes_at is not None
    amplified = [] if explained else find_culprits(p, feed, runs, judged, s, say)
    clock.lap("amplification")
    return optimization, amplified


# ---------------------------------------------------------------------------------------------------------
# the entry points


def _check_tolerance_names(p: Prepared, s: Settings, loaded: LoadedOutputs | None) -> None:
    """Every tensor named in a tolerance is a graph output or a swapped node's output (or, against
    ``loaded`` outputs, a value the file holds)."""
    names = [o.name for o in p.model.graph.output]
    names += [o for r in p.swapped for o in p.nodes[r.node].output if o]
    names += list(loaded.values) if loaded is not None else []
    named = [("a tolerance", n) for n in s.by_name] + [("an error statistic", n) for n in s.check.names()]
    for what, name in named:
        if name not in names:
            also = " nor a value of the loaded file" if loaded is not None else ""
            raise CustomOpsError(
                f"{what} names {name!r}, which is neither a graph output nor a swapped node's output{also} "
                f"(those are: {', '.join(map(repr, dict.fromkeys(names)))})"
            )


class Phases:
    """Wall time per phase of a comparison (the report's ``phase_seconds``); with ``started`` (a
    perf_counter time: the command's start), a first phase ``start`` from then until now."""

    def __init__(self, started: float | None = None) -> None:
        self.now = time.perf_counter
        self.started = started if started is not None else self.now()
        self.seconds: dict[str, float] = {}
        if started is not None:
            self.lap("start")

    def lap(self, phase: str) -> None:
        now = self.now()
        self.seconds[phase] = round(now - self.started, 3)
        self.started = now


def _judge_nodes(
    p: Prepared,
    runs: WholeRuns,
    feed: dict[str, np.ndarray],
    s: Settings,
    out: tuple[Tensors, Callable[[str], None]],
) -> tuple[list[NodeResult], dict[str, Isolated], dict[str, Tensors]]:
    """Each swapped node of the main graph, in the model and alone (:func:`judge_node`); its values in
    the model go into ``tensors`` (the output it shows), and, for a node of several outputs, each
    output's into the third value returned (by node, then output)."""
    tensors, say = out
    # no value from A: feed the isolated node B's values instead (the report says so: fed_from)
    exposed = runs.a_exposed if not runs.a.error else runs.b_exposed
    known = {**p.initializers, **feed, **exposed.values}
    nodes, isolated, several = [], {}, {}
    budget = MacBudget()

    def pair(name: str) -> tuple[np.ndarray | None, np.ndarray | None]:
        return runs.a_exposed.values.get(name), runs.b_exposed.values.get(name)

    for i, record in enumerate(p.swapped):
        say(f"node {i + 1}/{len(p.swapped)}: {record.node} [{record.op}] alone on three sides")
        entry, iso = judge_node(p, record, runs, known, s)
        refused = iso.errors.get("builtin") if iso is not None else None
        entry.cpu_dependence = node_dependence(p.nodes[record.node], known, p.model, budget, refused)
        tensors[record.node] = pair(entry.output)
        if entry.each:
            several[record.node] = {o.name: pair(o.name) for o in entry.each}
        if iso is not None:
            isolated[record.node] = iso
        nodes.append(entry)
        if s.choices.fail_fast and stops_here(entry.origin, entry.verdict):
            break  # --fail-fast: record_choices names the nodes not judged
    return nodes, isolated, several


def compare_model(
    model: ModelProto,
    feed: dict[str, np.ndarray],
    *,
    ops: Sequence[str] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    repeats: int = 0,
    reference_limit: int | None = None,
    model_name: str = "<model>",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    providers: Sequence[str] | None = None,
    tolerances: dict[str, tuple[float | None, float | None]] | None = None,
    check_error_stat: str | Mapping[str, str] = "elemwise",
    error_quantile: float | Mapping[str, float] | None = None,
    infinities_compare_equal: bool = False,
    reference_timeout: float = REFERENCE_TIMEOUT,
    graph_optimization_level: str = "all",
    plan: InputPlan | None = None,
    started: float | None = None,
    loaded: LoadedOutputs | None = None,
    choices: Choices | None = None,
) -> Comparison:
    """Compare ``model`` on ``feed`` between ORT's built-in kernels and ours; see the module docstring.
    ``rtol`` and ``atol`` (default: per dtype) must be finite and at least 0, ``reference_limit`` (None: per
    op, customops.registry.CustomOp.reference_limit) at least 0 (0: onnx.reference is given empty inputs
    only). ``providers``: execution providers of the built-in side (ORT names or aliases such as cuda; default
    CPU); ours always run on CPU. ``tolerances``: (rtol, atol) by tensor name (graph outputs, swapped nodes'
    outputs), either None for the global one. ``check_error_stat``, ``error_quantile`` and
    ``infinities_compare_equal``: what decides a tensor at its tolerances (customops.comparison.settings.ErrorCheck).
    ``reference_timeout``: seconds onnx.reference may take for one node (a positive finite number).
    ``graph_optimization_level``: ORT's, for every ORT session of both sides
    (customops.comparison.optimizer.OPTIMIZATION_LEVELS). ``plan``: how ``feed`` was generated, to draw it
    again at other sizes when both sides fail on it (customops.comparison.whole_runs.runs_that_fit). ``started``: the perf_counter
    time the command started (its process, or the call), timed as the phase ``start``. ``loaded``: saved
    outputs that stand in for side A (customops.comparison.loaded, customops.comparison.saved). ``choices``:
    the nodes compared, --validate and --fail-fast (customops.comparison.choices)."""
    settings = checked_settings(
        (rtol, atol, tolerances),
        (repeats, reference_limit, reference_timeout),
        (
            providers,
            ErrorCheck.of(check_error_stat, error_quantile, infinities_compare_equal),
            graph_optimization_level,
        ),
    )
    settings.choices = choices or Choices()
    check_in_memory(model, model_name)  # the sides' children get bytes: nothing may point at other files
    say = progress or (lambda _m: None)
    clock = Phases(started)
    sides.start_all(without=("builtin", "reference") if loaded is not None else ())  # during the rewrite
    p = prepare(model, feed, ops, say, settings.choices)
    _check_tolerance_names(p, settings, loaded)
    clock.lap("prepare")
    if not p.all_swapped:
        return nothing_to_compare(p, feed, settings, plan, (model_name, seed, clock))
    if loaded is not None:
        return compare_loaded(p, feed, settings, loaded, (model_name, seed, say, clock, plan))
    return run_and_judge(p, feed, settings, plan, (model_name, seed, say, clock))


def nothing_to_compare(
    p: Prepared,
    feed: dict[str, np.ndarray],
    s: Settings,
    plan: InputPlan | None,
    meta: tuple[str, int, Phases],
) -> Comparison:
    """:func:`compare_model` when no node is swapped: both sides would run ORT's built-in kernels alone,
    so neither is run; the report's verdict is :data:`NOTHING_TO_COMPARE`, its line says why (no node of
    our ops, or each one left out: the report's ``skipped``). ``meta``: model name, seed, phase clock."""
    import onnxruntime as ort

    import customops

    model_name, seed, clock = meta
    sides = {
        "builtin": {"ok": None, "error": None, "providers": s.providers},
        "custom": {"ok": None, "error": None, "providers": ["CPUExecutionProvider"]},
    }
    report = Report(
        model_name,
        ort.__version__,
        customops.__version__,
        seed,
        NOTHING_TO_COMPARE,
        VerdictLine(nothing_summary(p.skipped)),
        _tolerances(s),
        sides,
        [],
        [],
        skipped=_skipped(p),
    )
    report.phase_seconds = clock.seconds
    record_optimization(report, Optimization(s.optimization))
    report.inputs = InputsUsed.of(feed, plan)
    record_choices(report, p, {}, s.choices)  # --validate: nothing compared, nothing found
    return Comparison(report, {}, {}, feed)


def run_and_judge(
    p: Prepared,
    feed: dict[str, np.ndarray],
    settings: Settings,
    plan: InputPlan | None,
    meta: tuple[str, int, Callable[[str], None], Phases],
) -> Comparison:
    """The steps of :func:`compare_model` after the rewrite: the whole runs, the outputs and the nodes
    judged, why outputs differ, the typed report. ``meta``: model name, seed, progress, phase clock."""
    model_name, seed, say, clock = meta
    runs, feed, used = runs_that_fit(p, feed, settings, plan, say)
    clock.lap("whole runs")
    tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]] = {}
    outputs = judge_outputs(p, runs, settings, tensors)
    nodes, isolated, several = _judge_nodes(p, runs, feed, settings, (tensors, say))
    carried = check_carried(p, feed, runs, (outputs, nodes, isolated), settings, say)
    clock.lap("nodes alone")
    optimization, amplified = _why_outputs_differ(p, feed, runs, (outputs, nodes), settings, (say, clock))
    report = _report(p, runs, outputs, nodes, settings, (model_name, seed, amplified))
    report.phase_seconds = clock.seconds
    record_optimization(report, optimization)
    record_carried(report, carried)
    note_failures(report, fail_points(p, runs), nodes, used)
    report.line.clauses += cpu_clauses(nodes)  # information: the verdict and exit status stay as they are
    record_choices(report, p, tensors, settings.choices, several)
    return Comparison(report, tensors, isolated, feed, several)


def compare_loaded(
    p: Prepared,
    feed: dict[str, np.ndarray],
    s: Settings,
    loaded: LoadedOutputs,
    meta: tuple[str, int, Callable[[str], None], Phases, InputPlan | None],
) -> Comparison:
    """:func:`compare_model` against outputs loaded from a file in place of side A: the graph outputs, and
    every node whose output the file holds, inside the model (customops.comparison.loaded); no node
    alone, no rerun of side A. ``meta``: model name, seed, progress, phase clock, input plan."""
    model_name, seed, say, clock, plan = meta
    note_defaults(plan, say)
    runs = runs_against_loaded(p, feed, s, loaded, say)
    clock.lap("whole runs")
    tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]] = {}
    outputs = judge_outputs(p, runs, s, tensors)
    several: dict[str, Tensors] = {}
    nodes = judge_loaded(p, runs, s, feed, (tensors, several))
    clock.lap("nodes in the model")
    report = _report(p, runs, outputs, nodes, s, (model_name, seed, []))
    report.sides["builtin"] = {"ok": True, "error": None, "loaded_from": loaded.path, "source": loaded.source}
    if report.verdict != "failed":
        report.line = VerdictLine(loaded_summary(outputs, nodes, loaded, p))
    report.phase_seconds = clock.seconds
    record_optimization(report, Optimization(s.optimization))
    note_failures(report, fail_points(p, runs), nodes, InputsUsed.of(feed, plan))
    validate_only = Choices(s.choices.nodes, s.choices.exclude, s.choices.validate)  # nothing stops early
    record_choices(report, p, tensors, validate_only, several)
    return Comparison(report, tensors, {}, feed, several)
