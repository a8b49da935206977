"""compare's follow-ups, after the outputs and the nodes are judged: where an output differs and no
swapped node alone explains it, the reruns at lower graph optimization levels (:func:`check_optimizer`)
and the swaps that move the outputs (:func:`find_culprits`); where a node's inputs differ, whether ORT's
own nodes made that (:func:`check_carried`); and what --fail-fast and --validate add to the report
(:func:`record_choices`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from customops.comparison import optimizer
from customops.comparison.amplify import CulpritSearch, Effect, culprits
from customops.comparison.carried import FROM_ORT, CarriedIn, sources
from customops.comparison.choices import Choices, Stopped, non_finite
from customops.comparison.isolate import Isolated
from customops.comparison.optimizer import Optimization, Rerun
from customops.comparison.prepared import Prepared, WholeRuns, with_outputs
from customops.comparison.results import NodeResult, OutputResult, Report
from customops.comparison.settings import Settings
from customops.comparison.summary import carried_text, optimizer_text
from customops.eval.judging.metrics import same_bits

__all__ = [
    "check_carried",
    "check_optimizer",
    "explained_alone",
    "find_culprits",
    "record_carried",
    "record_choices",
    "record_optimization",
    "unexplained",
]


def explained_alone(nodes: list[NodeResult]) -> bool:
    """Whether a swapped node run alone explains a difference of the outputs: one starts there, or the
    two kernels differ there within rounding (no rerun or search can add to that)."""
    return any(n.origin in ("starts-here", "rounding") for n in nodes)


def unexplained(runs: WholeRuns, judged: tuple[list[OutputResult], list[NodeResult]]) -> bool:
    """Whether both sides ran, an output differs and no swapped node alone explains it
    (:func:`explained_alone`): only then do the reruns and the search run."""
    outputs, nodes = judged
    if runs.a.error or runs.b.error or explained_alone(nodes):
        return False
    return not all(o.verdict == "agree" for o in outputs)


def find_culprits(
    p: Prepared,
    feed: dict[str, np.ndarray],
    runs: WholeRuns,
    judged: tuple[list[OutputResult], list[NodeResult]],
    s: Settings,
    say: Callable[[str], None],
) -> list[Effect]:
    """When an output differs but no swapped node differs alone: the swaps that move the outputs
    (customops.comparison.amplify), largest effect first; else nothing (and no extra run)."""
    outputs, _ = judged
    if not unexplained(runs, judged):
        return []
    say("no swapped node differs alone: running the model with one swap at a time")
    builtin = {o.name: runs.a.values[o.name] for o in outputs if o.name in runs.a.values}
    search = CulpritSearch(p.model, feed, builtin, s.tol, say, s.criterion, optimization=s.optimization)
    swaps = list(dict.fromkeys((r.node, r.op) for r in p.all_swapped))
    found = culprits(search, swaps)
    say(f"{search.runs} model run(s) to find {len(found)} swap(s) that move the outputs")
    return found


def check_optimizer(
    p: Prepared,
    feed: dict[str, np.ndarray],
    runs: WholeRuns,
    judged: tuple[list[OutputResult], list[NodeResult]],
    s: Settings,
    say: Callable[[str], None],
) -> Optimization:
    """When an output differs but no swapped node differs alone: both sides rerun at lower graph
    optimization levels until the outputs pass (customops.comparison.optimizer); else no rerun."""
    outputs, _ = judged
    found = Optimization(s.optimization)
    if not unexplained(runs, judged):
        return found
    names = [o.name for o in outputs]
    rerun = Rerun(p.model, p.rewritten, feed, names, s.tol, s.criterion, s.providers, say)
    return optimizer.check(rerun, s.optimization)


def record_optimization(report: Report, found: Optimization) -> None:
    """The graph optimization level and its reruns into ``report``; where the difference vanished at a
    lower level, the verdict line says it is the optimizer's, instead of why it gave before
    (customops.comparison.summary.optimizer_text)."""
    report.graph_optimization = found
    if found.vanishes_at is not None:
        report.line.clauses = [optimizer_text(found)]


def record_choices(
    report: Report,
    p: Prepared,
    tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]],
    choices: Choices,
    several: dict[str, dict[str, tuple[np.ndarray | None, np.ndarray | None]]] | None = None,
) -> None:
    """Into ``report``: where --fail-fast stopped and the swapped nodes it did not judge; with --validate,
    each compared tensor (graph outputs, judged nodes' outputs: every output of a node of several, from
    ``several``) and side holding NaN or inf, which makes an agreement "invalid" (exit status 1) and is
    named on the verdict line."""
    judged = {n.node for n in report.nodes}
    if choices.fail_fast and len(judged) < len(p.swapped):
        last = report.nodes[-1]
        rest = [{"node": r.node, "op": r.op} for r in p.swapped if r.node not in judged]
        report.stopped = Stopped(last.node, last.op, rest)
        report.line.notes.append(
            f"--fail-fast stopped at {last.node!r}: {len(rest)} swapped node(s) not judged"
        )
    if not choices.validate:
        return
    found = [v for o in report.outputs for v in non_finite(o.name, None, tensors[o.name])]
    for n in report.nodes:
        pairs = (several or {}).get(n.node) or {n.output: tensors[n.node]}
        found += [v for name, pair in pairs.items() for v in non_finite(name, n.node, pair)]
    report.validation = found
    if not found:
        return
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    if report.verdict == "agree":
        report.verdict = "invalid"
        report.line.prefix = f"INVALID (--validate): {found[0].text()}{more}"
    else:
        report.line.notes.append(f"--validate: {found[0].text()}{more}")


def check_carried(
    p: Prepared,
    feed: dict[str, np.ndarray],
    runs: WholeRuns,
    judged: tuple[list[OutputResult], list[NodeResult], dict[str, Isolated]],
    s: Settings,
    say: Callable[[str], None],
) -> CarriedIn | None:
    """Mark each node whose inputs differ with where that comes from (customops.comparison.carried);
    where ORT's own nodes made a difference a node shows inside the model, rerun those values on both
    sides at lower graph optimization levels (customops.comparison.optimizer), unless the graph outputs
    are rerun anyway (:func:`unexplained`: an output differs and no node alone explains it), whatever
    the graph outputs do. None: no such node."""
    if runs.a.error or runs.b.error:
        return None
    outputs, nodes, isolated = judged
    alone = {n.node: _differs_alone(isolated.get(n.node)) for n in nodes}
    by_name = {n.node: n for n in nodes}
    values = (runs.a_exposed.values, runs.b_exposed.values)
    inner = frozenset(r.node for r in p.all_swapped if r not in p.swapped)
    found = sources(p.model, alone, inner, values)
    for src in found:
        by_name[src.node].carried_from = src.source
    ort = [src for src in found if src.source == FROM_ORT]
    if not any(by_name[src.node].verdict == "disagree" for src in ort):
        return None
    names = list(dict.fromkeys(v for src in ort for v in src.values))
    carried = CarriedIn([src.node for src in ort], names, Optimization(s.optimization))
    if unexplained(runs, (outputs, nodes)):  # the graph outputs are rerun at the lower levels anyway
        return carried
    a, b = with_outputs(p.model, names, p.types), with_outputs(p.rewritten, names, p.types)
    rerun = Rerun(a, b, feed, names, s.tol, s.criterion, s.providers, say)
    why = "inputs of swapped nodes differ, made by ORT's own nodes"
    carried.optimization = optimizer.check(rerun, s.optimization, why)
    return carried


def _differs_alone(iso: Isolated | None) -> bool:
    """Whether the two kernels alone give other bits on any output (or either gave none, or the node was
    not run)."""
    if iso is None:
        return True
    for values in iso.every.values() or [iso.outputs]:
        a, b = values.get("builtin"), values.get("custom")
        if a is None or b is None or not same_bits(np.asarray(a), np.asarray(b)):
            return True
    return False


def record_carried(report: Report, carried: CarriedIn | None) -> None:
    """The values carried in from ORT's own nodes into ``report``, and a clause of the verdict line."""
    report.carried_in = carried
    if carried is not None and report.verdict in ("agree", "disagree"):
        report.line.clauses.append(carried_text(carried, report.nodes))
