"""compare's report as text: the verdict first, the table of graph outputs and of the nodes where a
difference starts (every swapped node with ``all_rows``), the side errors, and the verdict again last."""

from __future__ import annotations

from typing import Any

from customops.safeio import printable


def _fmt(x: Any, spec: str = ".3g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return format(x, spec)
    return str(x)


def shown(report: dict[str, Any], all_rows: bool) -> list[dict[str, Any]]:
    """The node rows of the table: with ``all_rows`` all, else the nodes where a difference starts, a
    side fails, or whose swap moves the outputs (report["amplified"])."""
    moving = {name for e in report.get("amplified", []) for name in e["nodes"]}
    return [
        n
        for n in report["nodes"]
        if all_rows or n["origin"] == "starts-here" or n["verdict"] == "side-failed" or n["node"] in moving
    ]


def format_table(report: dict[str, Any], all_rows: bool = True) -> str:
    """The human-readable report: the verdict, the table (see :func:`shown`), the errors, the verdict."""
    head = ("node / output", "op", "shape", "dtype", "max abs", "max rel /|B|", "mism.", "ulp", "verdict")
    rows: list[tuple[str, ...]] = [(*head, "attribution", "starts", "A µs", "B µs")]

    def row(name: str, op: str, m: dict[str, Any], verdict: str, more: tuple[str, ...], times: dict) -> None:
        ulp = "n/a" if m.get("ulp_note") else m.get("max_ulp")  # why: a line below the table
        stats = (m.get("max_abs"), m.get("max_rel"), m.get("mismatches"), ulp)
        shape = "x".join(map(str, m.get("shape_a", []))) or "-"
        timing = (_fmt(times.get("builtin"), ".0f"), _fmt(times.get("custom"), ".0f")) if times else ("", "")
        rows.append((name, op, shape, m.get("dtype_a", "-"), *map(_fmt, stats), verdict, *more, *timing))

    for o in report["outputs"]:
        row(o["name"], "(graph output)", o["metrics"] or {}, o["verdict"], ("", ""), {})
    nodes = shown(report, all_rows)
    for n in nodes:
        m = n["in_model"] or ((n["isolated"] or {}).get("builtin_vs_custom") or {})
        known = n.get("known") or []
        attribution = n["attribution"] + (f" ({', '.join(known)})" if known else "")
        row(n["node"], n["op"], m, n["verdict"], (attribution, n["origin"]), n["time_us"])
    rows = [tuple(printable(c) for c in r) for r in rows]  # names from the model: no control characters
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    hidden = len(report["nodes"]) - len(nodes)
    if hidden:
        lines.append(
            f"  {hidden} more swapped node(s) agree alone or carry a difference in (--all-rows shows them)"
        )
    lines.extend(_passing_tolerances(report, nodes))
    lines.extend(_ulp_notes(report, nodes))
    for n in nodes:
        errors = (n["isolated"] or {}).get("errors") or {}
        for side, err in errors.items():
            if err and not (side == "reference" and n["verdict"] == "agree"):
                lines.append(f"  {n['node']}: {side}: {err}")
    for s in report["skipped"]:
        lines.append(f"  skipped {s['node']} [{s['op']}]: {s['reason']}")
    lines.extend(_placement_lines(report))
    for side, info in report["sides"].items():
        if info["error"]:
            lines.append(f"  {side} side failed: {info['error']}")
    lines = [report["summary"], "", *lines, report["summary"]]
    return "\n".join(printable(line) for line in lines)


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
    """For each row whose ulp column reads n/a: why (customops.eval.metrics.ulp_distance)."""
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
        rtol = m.get("needed_rtol")
        by_rtol = f" or --rtol {_fmt(rtol)} (at atol {_fmt(m['atol'])})" if rtol is not None else ""
        lines.append(
            f"  {name}: passes at --atol {_fmt(m['needed_atol'])} (at rtol {_fmt(m['rtol'])}){by_rtol}"
        )
    return lines
