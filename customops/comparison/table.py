"""compare's report as text, from its JSON document (customops.comparison.results.Report.to_json): the verdict
first, the table of graph outputs and of the nodes where a difference starts (every swapped node with
``all_rows``), the side errors, and the verdict again last. A node's row shows the node alone (the figures its
attribution is decided on); a row "in the model" under it shows its values inside the model run, and for a
node of several outputs (whose figures are its worst output's) a row per output follows."""

from __future__ import annotations

import math
from typing import Any

from customops.comparison.optimizer import LevelRun
from customops.comparison.summary import rerun_outcome
from customops.safeio import printable


def _fmt(x: Any, spec: str = ".3g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return format(x, spec)
    return str(x)


def shown(report: dict[str, Any], all_rows: bool) -> list[dict[str, Any]]:
    """The node rows of the table: with ``all_rows`` all, else the nodes where a difference starts, a
    side fails, or whose swap moves the outputs (report["amplified"]); against loaded outputs, every node
    that differs from them (no node ran alone: where the difference comes from is its origin)."""
    moving = {name for e in report.get("amplified", []) for name in e["nodes"]}
    loaded = _loaded(report)
    return [
        n
        for n in report["nodes"]
        if all_rows
        or n["origin"] in ("starts-here", "rounding")
        or n["verdict"] == "side-failed"
        or n["node"] in moving
        or (loaded and n["verdict"] != "agree")
    ]


def _hidden_lines(report: dict[str, Any], hidden: int) -> list[str]:
    """The line that counts the node rows :func:`shown` leaves out, if any."""
    if not hidden:
        return []
    if _loaded(report):
        return [f"  {hidden} more node(s) agree with the loaded outputs (--all-rows shows them)"]
    return [f"  {hidden} more swapped node(s) agree alone or carry a difference in (--all-rows shows them)"]


def _loaded(report: dict[str, Any]) -> bool:
    """Whether side A is outputs loaded from a file (--load-outputs)."""
    return "loaded_from" in report["sides"]["builtin"]


def format_table(report: dict[str, Any], all_rows: bool = True) -> str:
    """The human-readable report: the verdict, the table (see :func:`shown`), the errors, the verdict;
    when nothing was compared, the verdict and the nodes left out."""
    if report["verdict"] == "nothing-to-compare":
        return _nothing_compared(report)
    return _table(report, all_rows)


def _table(report: dict[str, Any], all_rows: bool) -> str:
    """The report of a comparison: see :func:`format_table`."""
    head = ("node / output", "op", "shape", "dtype", "max abs", "max rel /|B|", "mism.", "ulp", "verdict")
    timed = any(v is not None for n in report["nodes"] for v in (n.get("time_us") or {}).values())
    rows: list[tuple[str, ...]] = [(*head, "attribution", "starts", *(("A µs", "B µs") if timed else ()))]

    def row(name: str, op: str, m: dict[str, Any], verdict: str, more: tuple[str, ...], times: dict) -> None:
        ulp = "n/a" if m.get("ulp_note") else m.get("max_ulp")  # why: a line below the table
        stats = (m.get("max_abs"), m.get("max_rel"), m.get("mismatches"), ulp)
        shape = "x".join(map(str, m.get("shape_a", []))) or "-"
        timing = (_fmt(times.get("builtin"), ".0f"), _fmt(times.get("custom"), ".0f")) if times else ("", "")
        rows.append(
            (name, op, shape, m.get("dtype_a", "-"), *map(_fmt, stats), verdict, *more, *timing[: 2 * timed])
        )

    for o in report["outputs"]:
        row(o["name"], "(graph output)", o["metrics"] or {}, o["verdict"], ("", ""), {})
    nodes = shown(report, all_rows)
    for n in nodes:
        alone, in_model = node_figures(n)
        known = n.get("known") or []
        attribution = n["attribution"] + (f" ({', '.join(known)})" if known else "")
        row(
            n["node"],
            n["op"] if n.get("swapped", True) else f"{n['op']} (not swapped)",
            alone or in_model or {},
            n["verdict"],
            (attribution, n["origin"]),
            n["time_us"],
        )
        if alone is not None and in_model is not None:
            row("  in the model", _in_context(n), in_model, "", ("", ""), {})
        for name, where, figures, attribution in output_rows(n):
            row(name, where, figures, "", (attribution, ""), {})
    rows = [tuple(printable(c) for c in r) for r in rows]  # names from the model: no control characters
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.extend(_hidden_lines(report, len(report["nodes"]) - len(nodes)))
    lines.extend(_passing_tolerances(report, nodes))
    lines.extend(error_stat_lines(report, nodes))
    lines.extend(decided_by_lines(report, nodes))
    lines.extend(_ulp_notes(report, nodes))
    lines.extend(cpu_lines(report, all_rows))
    for n in nodes:
        errors = (n["isolated"] or {}).get("errors") or {}
        for side, err in errors.items():
            if err and not (side == "reference" and n["verdict"] == "agree"):
                lines.append(f"  {n['node']}: {side}: {err}")
    lines.extend(_skipped_lines(report))
    lines.extend(_placement_lines(report))
    lines.extend(_optimization_lines(report))
    for side, info in report["sides"].items():
        if info["error"]:
            lines.append(f"  {side} side failed: {info['error']}")
    lines.extend(inputs_lines(report.get("inputs")))
    lines.extend(choice_lines(report))
    lines = [report["summary"], "", *lines, report["summary"]]
    return "\n".join(printable(line) for line in lines)


CPU_LINES = 20
"""Most lines :func:`cpu_lines` gives, one per node; a last line counts the rest."""


def cpu_lines(report: dict[str, Any], all_rows: bool) -> list[str]:
    """A line for each swapped integer node whose result depends on the CPU (other numbers on x86 CPUs
    without VNNI) or that was too large to check; with ``all_rows``, for each one checked (the report's
    ``cpu_dependence``; customops.eval.judging.cpu_dependence). At most :data:`CPU_LINES`."""
    from customops.eval.judging.cpu_dependence import CpuDependence

    lines = []
    for n in report["nodes"]:
        found = n.get("cpu_dependence")
        if not found:
            continue
        dependence = CpuDependence.from_json(found)
        if all_rows or dependence.differs or dependence.status == "too-large":
            lines.append(f"  {n['node']} [{n['op']}]: {dependence.text()}")
    if len(lines) > CPU_LINES:
        more = len(lines) - CPU_LINES
        lines = [*lines[:CPU_LINES], f"  and {more} more integer node(s) (--json: cpu_dependence)"]
    return lines


def output_rows(n: dict[str, Any]) -> list[tuple[str, str, dict[str, Any], str]]:
    """A node of several outputs (its figures are its worst output's): a row for each output, its
    figures alone (else in the model) and its attribution alone."""
    rows = []
    for o in n.get("outputs") or []:
        figures = (o.get("isolated") or {}).get("builtin_vs_custom")
        where = "(alone)" if figures is not None else "(in context)"
        rows.append((f"  output {o['output']}", where, figures or o["in_model"] or {}, o["attribution"]))
    return rows


def _nothing_compared(report: dict[str, Any]) -> str:
    """The report of a comparison in which no node is swapped: the verdict, and each node of our ops
    left out with why (between the verdict and its repetition)."""
    lines = _skipped_lines(report)
    if lines:
        lines = [report["summary"], "", *lines, report["summary"]]
    return "\n".join(printable(line) for line in lines or [report["summary"]])


def _skipped_lines(report: dict[str, Any]) -> list[str]:
    """A line for each node of our ops the rewriter left out, with why."""
    return [f"  skipped {s['node']} [{s['op']}]: {s['reason']}" for s in report["skipped"]]


def _in_context(n: dict[str, Any]) -> str:
    """The label of a node's row of figures inside the model: where the difference of its inputs comes
    from, when ORT's own nodes made it (customops.comparison.carried)."""
    if n.get("carried_from") == "ort-nodes":
        return "(in context; carried in from ORT's own nodes)"
    return "(in context)"


def node_figures(n: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A node row's figures: (alone, in the model). The attribution and origin are the node's alone,
    on A's inputs, so its row shows those figures (custom against built-in); the values inside the
    model, which carry upstream differences in, go on a row of their own labelled so."""
    alone = (n.get("isolated") or {}).get("builtin_vs_custom")
    return alone, n.get("in_model")


def _placement_lines(report: dict[str, Any]) -> list[str]:
    """With providers other than CPU alone: which ran the built-in side, and each node ORT placed on a
    provider other than the first asked for."""
    providers = report["sides"]["builtin"].get("providers") or ["CPUExecutionProvider"]
    if providers == ["CPUExecutionProvider"]:
        return []
    lines = [f"  built-in side on: {', '.join(providers)}"]
    for n in report["nodes"]:
        placed = (n.get("provider") or {}).get("builtin")
        if placed and placed != providers[0]:
            lines.append(f"  {n['node']}: the built-in side ran it on {placed}")
    return lines


def _ulp_notes(report: dict[str, Any], nodes: list[dict[str, Any]]) -> list[str]:
    """For each row whose ulp column reads n/a: why (customops.eval.judging.metrics.ulp_distance)."""
    items = [(o["name"], o["metrics"]) for o in report["outputs"]]
    items += [(n["node"], n["in_model"] or ((n["isolated"] or {}).get("builtin_vs_custom"))) for n in nodes]
    return [f"  {name}: ulp {m['ulp_note']}" for name, m in items if m and m.get("ulp_note")]


def _passing_tolerances(report: dict[str, Any], nodes: list[dict[str, Any]]) -> list[str]:
    """For each differing output and shown node: the smallest atol (at its rtol) and rtol (at its atol)
    that would let it pass, where finite tolerances can."""
    lines = []
    items = [(o["name"], o["metrics"]) for o in report["outputs"]]
    items += [(n["node"], n["in_model"]) for n in nodes]
    for name, m in items:
        if not m or m.get("pass") or not m.get("shape_match") or m.get("needed_atol") is None:
            continue
        lines.append(f"  {name}: {_needed_text(m)}")
    return lines


def error_stat_lines(report: dict[str, Any], nodes: list[dict[str, Any]]) -> list[str]:
    """For each differing output and shown node (its figures alone, else in the model): the mean, median
    and 99th percentile of |A - B| and of the relative error (customops.eval.judging.metrics.ErrorStats)."""
    items = [(o["name"], o["metrics"]) for o in report["outputs"]]
    items += [(n["node"], node_figures(n)[0] or n["in_model"]) for n in nodes]
    lines = []
    for name, m in items:
        found = (m or {}).get("error_stats")
        if not found or m.get("pass"):
            continue
        parts = [
            f"{label} mean {_fmt(found[key]['mean'])}, median {_fmt(found[key]['median'])}, "
            f"p99 {_fmt(found[key]['p99'])}"
            for key, label in (("abs", "|A-B|"), ("rel", "rel"))
        ]
        lines.append(f"  {name}: {'; '.join(parts)}")
    return lines


def decided_by_lines(report: dict[str, Any], nodes: list[dict[str, Any]]) -> list[str]:
    """For each output and shown node decided by an error statistic (--check-error-stat, not elemwise):
    the statistic, its quantile, whether matching infinities counted as errors of 0, and its absolute and
    relative values against atol and rtol (its figures in the model: where they are decided)."""
    items = [(o["name"], o["metrics"]) for o in report["outputs"]]
    items += [(n["node"], n["in_model"]) for n in nodes]
    lines = []
    for name, m in items:
        if not m or not m.get("stat"):
            continue
        stat = m["stat"] + (f" {_fmt(m['quantile'])}" if m.get("quantile") is not None else "")
        infinities = ", matching infinities as 0" if m.get("infinities_equal") else ""
        lines.append(
            f"  {name}: --check-error-stat {stat}{infinities}: |A-B| {_fmt(m['stat_abs'])} (atol "
            f"{_fmt(m['atol'])}), rel {_fmt(m['stat_rel'])} (rtol {_fmt(m['rtol'])}): "
            + ("passes" if m.get("pass") else "fails")
        )
    return lines


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def _needed_text(m: dict[str, Any]) -> str:
    """The smallest --atol (at the tensor's rtol) and --rtol (at its atol) that would let a tensor pass,
    each only where it is finite: no tolerance is ever suggested as inf. The rtol is infinite where the
    tensor differs from a value of 0 by more than atol (a relative error there is infinite)."""
    atol, rtol = m.get("needed_atol"), m.get("needed_rtol")
    by_atol = f"--atol {_fmt(atol)} (at rtol {_fmt(m['rtol'])})" if _finite(atol) else None
    by_rtol = f"--rtol {_fmt(rtol)} (at atol {_fmt(m['atol'])})" if _finite(rtol) else None
    shown = [t for t in (by_atol, by_rtol) if t]
    text = "passes at " + " or ".join(shown) if shown else "no finite tolerance lets it pass"
    if rtol is not None and not _finite(rtol):
        text += f"; no --rtol does at atol {_fmt(m['atol'])}: it differs from a value of 0 by more than that"
    return text


def _optimization_lines(report: dict[str, Any]) -> list[str]:
    """ORT's graph optimization level of both sides, and the reruns at lower levels, if any."""
    found = report.get("graph_optimization") or {}
    lines = [f"  ORT graph optimization level: {found.get('level', 'all')} (--graph-optimization-level)"]
    for run in found.get("reruns", []):
        lines.append(f"  rerun at level {run['level']}: {rerun_outcome(LevelRun(**run), 'the outputs')}")
    return lines + _carried_lines(report.get("carried_in"))


def _carried_lines(carried: dict[str, Any] | None) -> list[str]:
    """The swapped nodes whose inputs ORT's own nodes made differ, and those values rerun at lower
    levels (the report's ``carried_in``)."""
    if not carried:
        return []
    nodes = ", ".join(carried["nodes"])
    lines = [
        f"  inputs carried in from ORT's own nodes (no swapped node upstream makes a difference of its own): {nodes}"
    ]
    for run in carried["reruns"]:
        lines.append(
            f"  those inputs rerun at level {run['level']}: {rerun_outcome(LevelRun(**run), 'they')}"
        )
    return lines


def choice_lines(report: dict[str, Any]) -> list[str]:
    """Where --fail-fast stopped and the nodes it did not judge; with --validate, each compared tensor and
    side holding NaN or inf, or that none does (the report's ``fail_fast`` and ``validation``)."""
    from customops.comparison.choices import SIDE_WORDS

    lines = []
    stopped = report.get("fail_fast")
    if stopped:
        names = ", ".join(f"{n['node']} [{n['op']}]" for n in stopped["not_judged"])
        lines.append(f"  --fail-fast: stopped at {stopped['stopped_at']}; not judged: {names}")
    found = report.get("validation")
    if found is not None and not found:
        lines.append("  --validate: no NaN or inf in any compared tensor on either side")
    for v in found or ():
        counts = ", ".join(
            f"{v[k]} {w}" for k, w in (("nan", "NaN"), ("posinf", "+inf"), ("neginf", "-inf")) if v[k]
        )
        where = f" (output of {v['node']})" if v["node"] and v["node"] != v["tensor"] else ""
        lines.append(f"  --validate: {v['tensor']}{where}: {counts} on the {SIDE_WORDS[v['side']]} side")
    return lines


def inputs_lines(inputs: dict[str, Any] | None) -> list[str]:
    """The inputs compared: each one's shape and dtype, the sizes of the symbolic dimensions of generated
    ones, and the sizes at which both sides failed before (the report's ``inputs``)."""
    if not inputs:
        return []
    from customops.comparison.inputs import sizes_text as sizes

    shapes = "; ".join(
        f"{name} {'x'.join(map(str, shape)) or 'scalar'} {inputs['dtypes'][name]}"
        for name, shape in inputs["shapes"].items()
    )
    text = f"  inputs ({'generated' if inputs['generated'] else 'given'}): {shapes or 'none'}"
    if inputs["dims"]:
        text += f"; symbolic dims {sizes(inputs['dims'])}"
    if inputs["tried"]:
        text += " (both sides failed at " + " and at ".join(sizes(t) for t in inputs["tried"]) + ")"
    return [text]
