"""Self-contained HTML page for a ``customops compare`` report.

:func:`render` turns the JSON report of ``compare`` (see ``customops.comparison.results``) and the compared tensors
into one HTML page with no external resources: inline CSS, no JavaScript, and heat maps
(``customops.comparison.heatmap``) as PNG ``data:`` URIs, so the page needs neither Pillow nor matplotlib.
This module lays out the page (header, tables, sections, the budget of images); each compared tensor's
panel is customops.comparison.html_tensors'.

A numeric tensor of rank >= 2 gets the heat maps of its slice with the largest |A - B|, with the slice,
the scales and the NaN / inf counts in the captions. The three maps share an HTML image map whose
rectangles show A, B and A - B on hover (``title``, no script), so a page grows by at most
``HOVER_CELLS**2`` regions per tensor. Strings, bools, rank 0 and rank 1 tensors get a short text
preview instead.

Pages stay usable on models with hundreds of swapped nodes: a node whose verdict is agree is one line
(its metrics, no maps), and heat maps are added, in page order, only while the page stays within
:data:`PAGE_BUDGET` bytes; the maps left out are said so where they would be and counted at the top.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from customops.comparison.html_tensors import dims, escaped, legend, number, tensor_panel

__all__ = ["PAGE_BUDGET", "render"]

#: The size in bytes that heat maps may bring a page to; maps that would take it further are left out.
PAGE_BUDGET = 2 * 1024 * 1024

_VERDICT_CLASS = {
    "agree": "agree",
    "pass": "agree",
    "disagree": "disagree",
    "fail": "disagree",
    "side-failed": "failed",
    "failed": "failed",
}
_ORIGIN_TEXT = {
    "starts-here": "starts here",
    "carried-in": "carried in",
    "rounding": "within rounding",
    "none": "–",
    "unknown": "unknown",
}
_SIDES = ("builtin", "custom")

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#1f2328;background:#fff}
h1{font-size:1.5em;margin:0 0 .3em}h2{margin-top:1.6em;border-bottom:1px solid #d0d7de}
h3{margin:1.2em 0 .4em;font-size:1.1em}
table{border-collapse:collapse;margin:.4em 0}th,td{border:1px solid #d0d7de;padding:2px 6px;text-align:left}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.agree{background:#dafbe1;color:#116329}.disagree{background:#ffebe9;color:#a40e26}
.failed{background:#fff1e5;color:#953800}.unknown{background:#eaeef2;color:#57606a}
.verdict{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600}
.banner{font-size:1.15em;padding:.5em .8em;border-radius:6px;margin:.4em 0 .8em}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:.4em 0}
dl.meta dt{font-weight:600}dl.meta dd{margin:0}
pre{background:#f6f8fa;padding:.5em;overflow-x:auto;white-space:pre-wrap;max-height:20em}
pre.error{background:#fff1e5;color:#953800}
section.tensor{border:1px solid #d0d7de;border-radius:6px;padding:.4em .9em;margin:1em 0}
.figs{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
figure{margin:0}figcaption{font-size:.85em;color:#57606a;max-width:520px}
img.heat{image-rendering:pixelated;border:1px solid #d0d7de;display:block}
.bar{display:inline-block;width:160px;height:12px;vertical-align:middle;border:1px solid #d0d7de}
.swatch{display:inline-block;width:12px;height:12px;vertical-align:middle;border:1px solid #999}
.note{color:#57606a}
p.collapsed{margin:.3em 0;padding:.2em .9em;border:1px solid #d0d7de;border-radius:6px}
"""


# ----------------------------------------------------------------------------------------------
# HTML pieces


def _needed(value: Any) -> str:
    """A tolerance that would let a tensor pass; 'none finite' where none would (never 'inf')."""
    text = number(value)
    return "none finite" if text in ("inf", "-inf", "nan") else text


def _us(value: Any) -> str:
    if value is None:
        return "–"
    try:
        return f"{float(value):,.1f}"
    except (TypeError, ValueError):
        return str(value)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        value = obj.get(key, default)
        return default if value is None else value
    return default


def _items(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)) else []


def _verdict(value: Any) -> str:
    text = str(value) if value is not None else "unknown"
    return f'<span class="verdict {_VERDICT_CLASS.get(text, "unknown")}">{escaped(text)}</span>'


def _shape_cell(m: Any) -> str:
    a, b = _get(m, "shape_a"), _get(m, "shape_b")
    if a is None and b is None:
        return "–"
    return escaped(dims(a)) if a == b else f"{escaped(dims(a))} / {escaped(dims(b))}"


def _dtype_cell(m: Any) -> str:
    a, b = _get(m, "dtype_a"), _get(m, "dtype_b")
    if a is None and b is None:
        return "–"
    return escaped(a) if a == b else f"{escaped(a)} / {escaped(b)}"


def _mismatch_cell(m: Any) -> str:
    mism, count = _get(m, "mismatches"), _get(m, "count")
    if mism is None:
        return "–"
    return f"{escaped(mism)} / {escaped(count)}" if count is not None else escaped(mism)


def _metric_cells(m: Any) -> str:
    """The table cells shape, dtype, max abs, max rel, mismatches, max ULP of one METRICS dict."""
    return (
        f"<td>{_shape_cell(m)}</td><td>{_dtype_cell(m)}</td>"
        f'<td class="num">{escaped(number(_get(m, "max_abs")))}</td>'
        f'<td class="num">{escaped(number(_get(m, "max_rel")))}</td>'
        f'<td class="num">{_mismatch_cell(m)}</td>'
        f"{_ulp_cell(m)}"
    )


def _ulp_cell(m: Any) -> str:
    """The max ULP cell: n/a with the reason as its title where the distance is not counted."""
    note = _get(m, "ulp_note")
    if note:
        return f'<td class="num" title="{escaped(note)}">n/a</td>'
    return f'<td class="num">{escaped(number(_get(m, "max_ulp")))}</td>'


def _metric_head(denominator: str) -> str:
    """The header cells of :func:`_metric_cells`; ``denominator``: the side the relative error divides by."""
    return (
        "<th>shape</th><th>dtype</th><th>max abs err</th>"
        f"<th>max rel err (÷ {escaped(denominator)})</th><th>mismatches</th><th>max ULP</th>"
    )


def _metrics_detail(rows: list[tuple[str, str, Any]]) -> str:
    """A table of several METRICS dicts, one row each, with every field of the schema; each row is
    (comparison, its spec side: the side its relative error divides by, METRICS)."""
    out = [
        "<table><tr><th>comparison</th>",
        _metric_head("|spec side|"),
        "<th>NaN / inf match</th><th>needed atol / rtol</th><th>atol / rtol</th><th>pass</th></tr>",
    ]
    for comparison, spec, m in rows:
        title = f"{escaped(comparison)} <small>(÷ |{escaped(spec)}|)</small>"
        if not isinstance(m, Mapping):
            out.append(f'<tr><td>{title}</td><td colspan="10" class="note">not available</td></tr>')
            continue
        nan_inf = f"{number(m.get('nan_match'))} / {number(m.get('inf_match'))}"
        needed = f"{_needed(m.get('needed_atol'))} / {_needed(m.get('needed_rtol'))}"
        tol = f"{number(m.get('atol'))} / {number(m.get('rtol'))}"
        passed = m.get("pass")
        badge = _verdict("pass" if passed else "fail") if passed is not None else "–"
        out.append(
            f"<tr><td>{title}</td>{_metric_cells(m)}<td>{escaped(nan_inf)}</td>"
            f"<td>{escaped(needed)}</td><td>{escaped(tol)}</td><td>{badge}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _section_id(prefix: str, index: int) -> str:
    return f"{prefix}-{index}"


def _header(report: Mapping[str, Any]) -> str:
    verdict = _get(report, "verdict", "unknown")
    cls = _VERDICT_CLASS.get(str(verdict), "unknown")
    summary = _get(report, "summary", str(verdict))
    meta = [
        ("model", _get(report, "model", "?")),
        ("onnxruntime", _get(report, "ort_version", "?")),
        ("customops", _get(report, "customops_version", "?")),
        ("seed", _get(report, "seed", "–")),
    ]
    out = [
        "<header><h1>customops compare</h1>",
        f'<p class="banner {cls}">{_verdict(verdict)} {escaped(summary)}</p>',
        '<dl class="meta">',
        *(f"<dt>{escaped(k)}</dt><dd>{escaped(v)}</dd>" for k, v in meta),
        "</dl>",
    ]
    tolerances = _get(report, "tolerances", {})
    if isinstance(tolerances, Mapping) and tolerances:
        out.append("<table><tr><th>dtype</th><th>rtol</th><th>atol</th></tr>")
        for dtype, tol in tolerances.items():
            out.append(
                f'<tr><td>{escaped(dtype)}</td><td class="num">{escaped(number(_get(tol, "rtol")))}</td>'
                f'<td class="num">{escaped(number(_get(tol, "atol")))}</td></tr>'
            )
        out.append("</table>")
    sides = _get(report, "sides", {})
    for side in _SIDES:
        info = _get(sides, side)
        if info is None:
            continue
        ok = _get(info, "ok")
        status = "ran" if ok else (_verdict("failed") if ok is not None else "not run")
        out.append(f"<p>{escaped(side)} side: {status}</p>")
        error = _get(info, "error")
        if error:
            out.append(f'<pre class="error">{escaped(error)}</pre>')
    out.append("</header>")
    return "".join(out)


def _outputs_table(outputs: list[Any]) -> str:
    if not outputs:
        return '<h2>Graph outputs</h2><p class="note">No graph outputs compared.</p>'
    out = [
        "<h2>Graph outputs</h2><table><tr><th>output</th>",
        _metric_head("|custom|"),
        "<th>verdict</th></tr>",
    ]
    for i, item in enumerate(outputs):
        name = _get(item, "name", "?")
        out.append(
            f'<tr><td><a href="#{_section_id("output", i)}">{escaped(name)}</a></td>'
            f"{_metric_cells(_get(item, 'metrics'))}<td>{_verdict(_get(item, 'verdict'))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _time_cells(times: Any) -> str:
    """A node's kernel times (``--kernel-times``) as two table cells."""
    return "".join(
        f'<td class="num">{escaped(_us(_get(times, side)))}</td>' for side in ("builtin", "custom")
    )


def _nodes_table(nodes: list[Any]) -> str:
    if not nodes:
        return '<h2>Nodes</h2><p class="note">No nodes compared.</p>'
    timed = any(v is not None for item in nodes for v in (_get(item, "time_us", {}) or {}).values())
    out = [
        "<h2>Nodes</h2><table><tr><th>node</th><th>op</th>",
        _metric_head("|custom|"),
        "<th>verdict</th><th>attribution</th><th>difference</th>",
        "<th>builtin µs</th><th>custom µs</th></tr>" if timed else "</tr>",
    ]
    for i, item in enumerate(nodes):
        times = _get(item, "time_us", {}) or {}
        origin = _get(item, "origin", "unknown")
        origin_text = _ORIGIN_TEXT.get(str(origin), str(origin))
        origin_html = (
            f"<strong>{escaped(origin_text)}</strong>" if origin == "starts-here" else escaped(origin_text)
        )
        out.append(
            f'<tr><td><a href="#{_section_id("node", i)}">{escaped(_get(item, "node", "?"))}</a></td>'
            f"<td>{escaped(_get(item, 'op', '?'))}</td>{_metric_cells(_get(item, 'in_model'))}"
            f"<td>{_verdict(_get(item, 'verdict'))}</td><td>{escaped(_get(item, 'attribution', '–'))}</td>"
            f"<td>{origin_html}</td>{_time_cells(times) if timed else ''}</tr>"
        )
    out.append("</table>")
    return "".join(out)


def _skipped_table(skipped: list[Any]) -> str:
    if not skipped:
        return ""
    out = ["<h2>Skipped nodes</h2><table><tr><th>node</th><th>op</th><th>reason</th></tr>"]
    for item in skipped:
        out.append(
            f"<tr><td>{escaped(_get(item, 'node', '?'))}</td><td>{escaped(_get(item, 'op', '?'))}</td>"
            f"<td>{escaped(_get(item, 'reason', ''))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _image_budget(report: Mapping[str, Any], keys: list[str], limit: int) -> set[str]:
    """The tensor keys that get heat maps: graph outputs first, then nodes that do not agree, then
    the rest, in report order, up to ``limit``."""
    verdicts: dict[str, str] = {}
    for item in _items(_get(report, "outputs", [])):
        verdicts.setdefault(str(_get(item, "name", "")), str(_get(item, "verdict", "")))
    outputs = set(verdicts)
    for item in _items(_get(report, "nodes", [])):
        verdicts.setdefault(str(_get(item, "node", "")), str(_get(item, "verdict", "")))
    ranked = sorted(keys, key=lambda k: (k not in outputs, verdicts.get(k) == "agree"))
    return set(ranked[:limit])


class _Panels:
    """The tensor panels of one page, in page order: heat maps while the page stays within ``budget``
    bytes (``used`` counts what the page holds so far), and only for the keys in ``with_images``."""

    def __init__(self, tensors: Mapping[str, Any], with_images: set[str], used: int, budget: int) -> None:
        self.tensors, self.with_images = tensors, with_images
        self.used, self.budget = used, budget
        self.left_out = 0
        self.count = itertools.count()

    def __call__(self, key: str) -> str:
        if key not in self.tensors:
            return '<p class="note">No tensors recorded for this entry.</p>'
        pair = self.tensors[key]
        a, b = pair if isinstance(pair, (tuple, list)) and len(pair) == 2 else (None, None)
        uid = f"heat-{next(self.count)}"
        text = tensor_panel(key, a, b, key in self.with_images, uid)
        if key in self.with_images and self.used + len(text.encode()) > self.budget:
            why = f"the page reached its size budget of {_bytes(self.budget)}"
            text = tensor_panel(key, a, b, False, uid, why)
            self.left_out += 1
        self.used += len(text.encode())
        return text


def _bytes(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n} bytes"


def render(
    report: Mapping[str, Any],
    tensors: Mapping[str, tuple[np.ndarray | None, np.ndarray | None]],
    *,
    max_heatmaps: int = 200,
    max_bytes: int = PAGE_BUDGET,
) -> str:
    """One self-contained HTML page for a compare ``report`` (the JSON report's dict).

    ``tensors`` maps a compared tensor's key (a node name as in ``report["nodes"][i]["node"]`` or a
    graph output name as in ``report["outputs"][i]["name"]``) to its (builtin, custom) arrays, either
    of which may be None when that side failed. Numeric tensors of rank >= 2 get heat maps (at most
    ``max_heatmaps`` tensors, default 200: outputs first, then nodes that do not agree; and only while
    the page stays within ``max_bytes``); others a text preview. Nodes that agree are one line each.
    Missing optional keys and None values in the report are shown as "–" or "?".
    """
    report = report if isinstance(report, Mapping) else {}
    outputs = _items(_get(report, "outputs", []))
    nodes = _items(_get(report, "nodes", []))
    head = [
        _header(report),
        legend(),
        _outputs_table(outputs),
        _nodes_table(nodes),
        _skipped_table(_items(_get(report, "skipped", []))),
    ]
    with_images = _image_budget(report, [str(k) for k in tensors], max_heatmaps)
    title = f"customops compare: {_get(report, 'model', 'model')}"
    fixed = (
        "".join(head) + _CSS + escaped(title) + _budget_note(len(tensors), max_bytes)
    )  # the note, if needed
    panel = _Panels(tensors, with_images, len(fixed.encode()) + 200, max_bytes)
    details = [*_output_sections(outputs, panel), *_node_sections(nodes, panel)]
    if panel.left_out:
        head.insert(1, _budget_note(panel.left_out, max_bytes))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escaped(title)}</title><style>{_CSS}</style></head><body>"
        + "".join(head + details)
        + "</body></html>\n"
    )


def _budget_note(count: int, budget: int) -> str:
    return (
        f'<p class="note">Heat maps of {count} tensor(s) left out: the page reached its size budget of '
        f"{_bytes(budget)}; their metrics are all shown.</p>"
    )


def _output_sections(outputs: list[Any], panel: Callable[[str], str]) -> list[str]:
    """The part "Graph outputs in detail": one section per output (verdict, metrics, ``panel`` of its
    tensors)."""
    sections = ["<h2>Graph outputs in detail</h2>"] if outputs else []
    for i, item in enumerate(outputs):
        name = str(_get(item, "name", "?"))
        sections.append(
            f'<section class="tensor" id="{_section_id("output", i)}"><h3>{escaped(name)} '
            f"<small>(graph output)</small> {_verdict(_get(item, 'verdict'))}</h3>"
            f"{_metrics_detail([('builtin vs custom', 'custom', _get(item, 'metrics'))])}{panel(name)}</section>"
        )
    return sections


def _node_sections(nodes: list[Any], panel: Callable[[str], str]) -> list[str]:
    """The part "Nodes in detail": one section per node (see :func:`_node_section`)."""
    sections = ["<h2>Nodes in detail</h2>"] if nodes else []
    sections.extend(_node_section(i, item, panel) for i, item in enumerate(nodes))
    return sections


def _collapsed_node(i: int, item: Any) -> str:
    """One line for a node that agrees: name, op, output, verdict and its errors in the model."""
    m = _get(item, "in_model")
    return (
        f'<p class="collapsed" id="{_section_id("node", i)}">{_verdict(_get(item, "verdict"))} '
        f"<strong>{escaped(_get(item, 'node', '?'))}</strong> "
        f"<small>({escaped(_get(item, 'op', '?'))} → {escaped(_get(item, 'output', '?'))})</small>: "
        f"max abs err {escaped(number(_get(m, 'max_abs')))}, max rel err {escaped(number(_get(m, 'max_rel')))}, "
        f"mismatches {_mismatch_cell(m)}{_cpu_text(item, '; CPU: ')}</p>"
    )


def _cpu_text(item: Any, before: str) -> str:
    """A swapped integer node's dependence on the CPU in words (its ``cpu_dependence``), after ``before``;
    nothing for other nodes."""
    from customops.eval.judging.cpu_dependence import CpuDependence

    found = _get(item, "cpu_dependence")
    if not isinstance(found, Mapping):
        return ""
    return before + escaped(CpuDependence.from_json(dict(found)).text())


def _node_section(i: int, item: Any, panel: Callable[[str], str]) -> str:
    """Node ``i``'s section: heading, attribution and difference, the metrics in the model and isolated,
    the errors of the isolated run, and ``panel`` of its tensors; one line when the node agrees."""
    if _VERDICT_CLASS.get(str(_get(item, "verdict"))) == "agree":
        return _collapsed_node(i, item)
    name = str(_get(item, "node", "?"))
    isolated = _get(item, "isolated", {})
    head = (
        f'<section class="tensor" id="{_section_id("node", i)}"><h3>{escaped(name)} '
        f"<small>({escaped(_get(item, 'op', '?'))} → {escaped(_get(item, 'output', '?'))})</small> "
        f"{_verdict(_get(item, 'verdict'))}</h3>"
    )
    facts = (
        f"<p>attribution: {escaped(_get(item, 'attribution', '–'))}; difference: "
        f"{escaped(_ORIGIN_TEXT.get(str(_get(item, 'origin', 'unknown')), _get(item, 'origin')))}"
        + (f"; scope: {escaped(_get(item, 'scope'))}" if _get(item, "scope") else "")
        + _cpu_text(item, "; CPU: ")
        + "</p>"
    )
    table = _metrics_detail(
        [
            ("in the model: builtin vs custom", "custom", _get(item, "in_model")),
            ("isolated: builtin vs custom", "custom", _get(isolated, "builtin_vs_custom")),
            ("isolated: builtin vs reference", "reference", _get(isolated, "builtin_vs_reference")),
            ("isolated: custom vs reference", "reference", _get(isolated, "custom_vs_reference")),
            *_output_metrics(item),
        ]
    )
    return head + facts + table + _isolated_errors(isolated) + panel(name) + "</section>"


def _output_metrics(item: Any) -> list[tuple[str, str, Any]]:
    """The metric rows of each output of a node of several (its own figures are its worst output's): in
    the model and alone, builtin vs custom, with its attribution alone."""
    rows = []
    for o in _items(_get(item, "outputs")):
        name, word = _get(o, "output", "?"), _get(o, "attribution", "?")
        rows.append((f"output {name} in the model: builtin vs custom", "custom", _get(o, "in_model")))
        alone = _get(_get(o, "isolated", {}), "builtin_vs_custom")
        rows.append((f"output {name} isolated ({word}): builtin vs custom", "custom", alone))
    return rows


def _isolated_errors(isolated: Any) -> str:
    """The error message of each side that failed in the isolated run (nothing unless they are a mapping)."""
    errors = _get(isolated, "errors", {})
    if not isinstance(errors, Mapping):
        return ""
    return "".join(
        f'<p>{escaped(side)} error:</p><pre class="error">{escaped(err)}</pre>'
        for side, err in errors.items()
        if err
    )
