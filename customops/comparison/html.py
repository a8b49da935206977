"""Self-contained HTML page for a ``customops compare`` report.

:func:`render` turns the JSON report of ``compare`` (see ``customops.comparison.results``) and the compared tensors
into one HTML page with no external resources: inline CSS, no JavaScript, and heat maps
(``customops.comparison.heatmap``) as PNG ``data:`` URIs, so the page needs neither Pillow nor matplotlib.

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

import base64
import html
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from customops.comparison.heatmap import (
    DIFF_NEGINF_RGB,
    DIFF_POSINF_RGB,
    DIFF_STOPS,
    NAN_RGB,
    NEGINF_RGB,
    POSINF_RGB,
    VIRIDIS_STOPS,
    heatmaps,
    is_image_like,
)

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
# Text about the tensors


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in float64; 0 where both are NaN or both the same infinity, else NaN / inf as it comes."""
    with np.errstate(invalid="ignore", over="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        return np.where(same, 0.0, np.abs(a - b))


def _where_they_differ(a: np.ndarray, b: np.ndarray) -> str | None:
    """One line on the exact differences of two same-shape arrays: count, first index, largest gap."""
    if a.shape != b.shape or a.size == 0:
        return None
    try:
        if a.dtype.kind in "iufb" and b.dtype.kind in "iufb":
            x, y = a.astype(np.float64), b.astype(np.float64)
            differ = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        else:
            differ = np.asarray(a != b, dtype=bool).reshape(a.shape)
    except (TypeError, ValueError):
        return None
    count = int(np.count_nonzero(differ))
    if count == 0:
        return "A and B are equal element for element (NaN counts as equal to NaN)."
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(differ)), a.shape))
    line = (
        f"{count} of {a.size} elements differ exactly; first at index {first}: "
        f"builtin {_short(a[first])}, custom {_short(b[first])}"
    )
    if a.dtype.kind in "iuf" and b.dtype.kind in "iuf":
        gap = np.where(differ, _difference(x, y), 0.0)
        gap = np.where(np.isfinite(gap), gap, -1.0)
        at = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), a.shape))
        if gap[at] > 0:
            line += f"; largest |A − B| = {_num(float(gap[at]))} at index {at}: builtin {_short(a[at])}, custom {_short(b[at])}"
    return line + "."


def _histogram(a: np.ndarray, b: np.ndarray) -> str:
    """A small inline SVG histogram of |A − B| by decade (customops.eval.judging.metrics.error_histogram) for
    two numeric tensors of one shape that differ; nothing otherwise. Each bar's count is on hover."""
    from customops.eval.judging.metrics import error_histogram

    if a.shape != b.shape or a.dtype.kind not in "iuf" or b.dtype.kind not in "iuf":
        return ""
    bins = error_histogram(a, b)
    if len(bins) < 2:  # no finite element, or every finite one equal
        return ""
    most = max(count for _, _, count in bins) or 1
    width, height, bar = 24 * len(bins), 60, 20
    parts = []
    for i, (low, high, count) in enumerate(bins):
        h = 0 if count == 0 else max(1, round(height * count / most))
        label = "= 0" if high == 0 else f"{_num(low, 1)} ≤ |A − B| < {_num(high, 1)}"
        parts.append(
            f'<rect x="{i * 24 + 2}" y="{height - h}" width="{bar}" height="{h}" fill="#b2182b">'
            f"<title>{_e(label)}: {count}</title></rect>"
        )
    axis = f"{_num(bins[1][0], 1)} … {_num(bins[-1][1], 1)}"
    return (
        f"<p>|A − B| by decade (first bar: equal elements; then {_e(axis)}; hover for counts):</p>"
        f'<svg width="{width}" height="{height}" role="img" aria-label="histogram of |A − B|">'
        + "".join(parts)
        + "</svg>"
    )


def _short(value: Any) -> str:
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _preview(arr: np.ndarray) -> str:
    """A short text rendering of ``arr`` (numpy's summarising repr), at most about 800 characters."""
    try:
        text = np.array2string(arr, threshold=24, edgeitems=3, max_line_width=100, precision=6)
    except Exception:  # odd element types: fall back to repr
        text = repr(arr)
    return text if len(text) <= 800 else text[:797] + "..."


# ----------------------------------------------------------------------------------------------
# HTML pieces


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v) or math.isinf(v):
        return str(v)
    return f"{v:.{digits}g}"


def _needed(value: Any) -> str:
    """A tolerance that would let a tensor pass; 'none finite' where none would (never 'inf')."""
    text = _num(value)
    return "none finite" if text in ("inf", "-inf", "nan") else text


def _us(value: Any) -> str:
    if value is None:
        return "–"
    try:
        return f"{float(value):,.1f}"
    except (TypeError, ValueError):
        return str(value)


def _dims(shape: Any) -> str:
    if shape is None:
        return "?"
    try:
        return "×".join(str(d) for d in shape) if len(shape) else "scalar"
    except TypeError:
        return str(shape)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        value = obj.get(key, default)
        return default if value is None else value
    return default


def _items(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)) else []


def _verdict(value: Any) -> str:
    text = str(value) if value is not None else "unknown"
    return f'<span class="verdict {_VERDICT_CLASS.get(text, "unknown")}">{_e(text)}</span>'


def _shape_cell(m: Any) -> str:
    a, b = _get(m, "shape_a"), _get(m, "shape_b")
    if a is None and b is None:
        return "–"
    return _e(_dims(a)) if a == b else f"{_e(_dims(a))} / {_e(_dims(b))}"


def _dtype_cell(m: Any) -> str:
    a, b = _get(m, "dtype_a"), _get(m, "dtype_b")
    if a is None and b is None:
        return "–"
    return _e(a) if a == b else f"{_e(a)} / {_e(b)}"


def _mismatch_cell(m: Any) -> str:
    mism, count = _get(m, "mismatches"), _get(m, "count")
    if mism is None:
        return "–"
    return f"{_e(mism)} / {_e(count)}" if count is not None else _e(mism)


def _metric_cells(m: Any) -> str:
    """The table cells shape, dtype, max abs, max rel, mismatches, max ULP of one METRICS dict."""
    return (
        f"<td>{_shape_cell(m)}</td><td>{_dtype_cell(m)}</td>"
        f'<td class="num">{_e(_num(_get(m, "max_abs")))}</td>'
        f'<td class="num">{_e(_num(_get(m, "max_rel")))}</td>'
        f'<td class="num">{_mismatch_cell(m)}</td>'
        f"{_ulp_cell(m)}"
    )


def _ulp_cell(m: Any) -> str:
    """The max ULP cell: n/a with the reason as its title where the distance is not counted."""
    note = _get(m, "ulp_note")
    if note:
        return f'<td class="num" title="{_e(note)}">n/a</td>'
    return f'<td class="num">{_e(_num(_get(m, "max_ulp")))}</td>'


def _metric_head(denominator: str) -> str:
    """The header cells of :func:`_metric_cells`; ``denominator``: the side the relative error divides by."""
    return (
        "<th>shape</th><th>dtype</th><th>max abs err</th>"
        f"<th>max rel err (÷ {_e(denominator)})</th><th>mismatches</th><th>max ULP</th>"
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
        title = f"{_e(comparison)} <small>(÷ |{_e(spec)}|)</small>"
        if not isinstance(m, Mapping):
            out.append(f'<tr><td>{title}</td><td colspan="10" class="note">not available</td></tr>')
            continue
        nan_inf = f"{_num(m.get('nan_match'))} / {_num(m.get('inf_match'))}"
        needed = f"{_needed(m.get('needed_atol'))} / {_needed(m.get('needed_rtol'))}"
        tol = f"{_num(m.get('atol'))} / {_num(m.get('rtol'))}"
        passed = m.get("pass")
        badge = _verdict("pass" if passed else "fail") if passed is not None else "–"
        out.append(
            f"<tr><td>{title}</td>{_metric_cells(m)}<td>{_e(nan_inf)}</td>"
            f"<td>{_e(needed)}</td><td>{_e(tol)}</td><td>{badge}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _figure(png: bytes, alt: str, caption: str, usemap: str | None = None) -> str:
    mapped = f' usemap="#{_e(usemap)}"' if usemap else ""
    return (
        f'<figure><img class="heat" src="{_data_uri(png)}" alt="{_e(alt)}"{mapped}>'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _side_label(side: str, arr: np.ndarray | None) -> str:
    if arr is None:
        return f"{side}: no tensor (this side failed or produced nothing)"
    return f"{side}: {_dims(arr.shape)} {arr.dtype}"


def _counts_text(counts: tuple[int, int, int] | None, what: str) -> str:
    """ "; 2 NaN, 1 +inf" for non-zero (NaN, +inf, -inf) ``counts``, nothing when all are zero."""
    if not counts or not any(counts):
        return ""
    parts = [f"{n} {label}" for n, label in zip(counts, ("NaN", "+inf", "−inf"), strict=True) if n]
    return f"; {', '.join(parts)} {what}"


def _hover_map(uid: str, cells: list[tuple[tuple[int, int, int, int], str]]) -> str:
    """An image map that the heat maps share: one rectangle per hover cell, its text in ``title``
    (links to the figures themselves, so that every browser shows the tooltip)."""
    areas = "".join(
        f'<area shape="rect" coords="{x0},{y0},{x1},{y1}" href="#{uid}" title="{_e(text)}" '
        f'alt="{_e(text.split(": ", 1)[-1].split(";", 1)[0])}">'
        for (x0, y0, x1, y1), text in cells
    )
    return f'<map name="{uid}-map">{areas}</map>'


def _size_text(maps: dict[str, Any]) -> str:
    size = []
    if maps["step"] > 1:
        size.append(f"subsampled 1:{maps['step']}")
    if maps["zoom"] != (1, 1):
        kh, kw = maps["zoom"]
        size.append(f"enlarged ×{kh}" if kh == kw else f"enlarged ×{kh} vertically, ×{kw} horizontally")
    block = maps["hover_block"]
    if block and block > 1:
        size.append(f"hover: one value per {block}×{block} block, the one with the largest |A − B|")
    return f" ({'; '.join(size)})" if size else ""


def _heatmap_panel(key: str, arrays: dict[str, np.ndarray | None], uid: str) -> list[str]:
    """The heat maps of one tensor: a line on the slice and the scales, A, B and A - B, hover map."""
    maps = heatmaps(arrays["builtin"], arrays["custom"])
    shape = _dims(next(x for x in arrays.values() if x is not None).shape)
    scale = (
        "no finite values"
        if maps["range"] is None
        else f"{_num(maps['range'][0])} … {_num(maps['range'][1])}"
    )
    chosen = "largest |A − B|" if maps["diff"] is not None else "the first (no element-wise difference)"
    shown = f"slice {maps['slice']} of {shape}: {maps['where']}, the one with the {chosen}" + _size_text(maps)
    usemap = f"{uid}-map" if maps["hover"] else None
    figs = []
    for side, tag in (("builtin", "a"), ("custom", "b")):
        if maps[tag] is not None:
            caption = f"{side} ({tag.upper()})" + _counts_text(maps["non_finite"].get(tag), "in the slice")
            figs.append(_figure(maps[tag], f"{side}: {key}", caption.rstrip(), usemap))
    if maps["diff"] is not None:
        top, (lo, hi) = _num(maps["diff_max"]), maps["diff_range"] or (0.0, 0.0)
        caption = (
            f"A − B: {_num(lo)} … {_num(hi)} on the scale −{top} … +{top} "
            "(blue: A < B, white: equal, red: A > B)"
            + _counts_text(maps["non_finite"].get("diff"), "differences")
        )
        figs.append(_figure(maps["diff"], f"A − B: {key}", caption, usemap))
    elif len(figs) == 2:
        figs.append('<p class="note">No difference image: the slices have different shapes.</p>')
    out = [f"<p>{_e(shown)}; A and B share the scale {_e(scale)}; hover over a map for the values.</p>"]
    out.append(f'<div class="figs" id="{_e(uid)}">' + "".join(figs) + "</div>")
    if usemap:
        out.append(_hover_map(uid, maps["hover"]))
    return out


def _tensor_panel(
    key: str, a: Any, b: Any, images: bool, uid: str = "heat-0", left_out: str = "image limit reached"
) -> str:
    """Heat maps (or text previews) of one compared tensor, with a line on where A and B differ.
    ``uid`` names the panel's figures and hover map (unique in the page); without ``images``, a note
    says the maps were left out and why (``left_out``)."""
    arrays = {"builtin": None if a is None else np.asarray(a), "custom": None if b is None else np.asarray(b)}
    present = [x for x in arrays.values() if x is not None]
    if not present:
        return '<p class="note">Neither side produced this tensor.</p>'
    out = [
        "<p>" + " · ".join(_e(_side_label(side, x)) for side, x in arrays.items()) + "</p>",
    ]
    if arrays["builtin"] is not None and arrays["custom"] is not None:
        line = _where_they_differ(arrays["builtin"], arrays["custom"])
        if line is None and arrays["builtin"].shape != arrays["custom"].shape:
            line = "shapes differ, so there is no element-wise difference."
        if line:
            out.append(f"<p>{_e(line)}</p>")
        out.append(_histogram(arrays["builtin"], arrays["custom"]))
    if all(is_image_like(x) for x in present) and images:
        out.extend(_heatmap_panel(key, arrays, uid))
    elif all(is_image_like(x) for x in present):
        out.append(f'<p class="note">Heat maps left out ({_e(left_out)}).</p>')
    else:
        for side, x in arrays.items():
            if x is not None:
                out.append(f"<p>{_e(side)}:</p><pre>{_e(_preview(x))}</pre>")
    return "".join(out)


def _legend() -> str:
    def gradient(stops: np.ndarray) -> str:
        parts = ",".join(f"rgb({int(r)},{int(g)},{int(b)})" for r, g, b in stops)
        return f'<span class="bar" style="background:linear-gradient(to right,{parts})"></span>'

    def swatch(rgb: tuple[int, int, int]) -> str:
        return f'<span class="swatch" style="background:rgb{rgb}"></span>'

    return (
        '<p class="note">Heat maps of the 2-D slice (e.g. channel of an NCHW tensor) with the largest '
        "|A − B|: A = builtin (ORT), B = custom (customops), on one shared scale "
        f"{gradient(VIRIDIS_STOPS)} low → high; the signed difference A − B on its own symmetric scale "
        f"{gradient(DIFF_STOPS)} −max → 0 → +max (blue: A &lt; B, uniform white: no difference, red: A &gt; B). "
        f"{swatch(NAN_RGB)} NaN, {swatch(POSINF_RGB)} +inf, {swatch(NEGINF_RGB)} −inf in A and B; "
        f"in A − B {swatch(NAN_RGB)} NaN (NaN against a number), {swatch(DIFF_POSINF_RGB)} +inf, "
        f"{swatch(DIFF_NEGINF_RGB)} −inf. Hover over a map for A, B and A − B at that index.</p>"
    )


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
        f'<p class="banner {cls}">{_verdict(verdict)} {_e(summary)}</p>',
        '<dl class="meta">',
        *(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in meta),
        "</dl>",
    ]
    tolerances = _get(report, "tolerances", {})
    if isinstance(tolerances, Mapping) and tolerances:
        out.append("<table><tr><th>dtype</th><th>rtol</th><th>atol</th></tr>")
        for dtype, tol in tolerances.items():
            out.append(
                f'<tr><td>{_e(dtype)}</td><td class="num">{_e(_num(_get(tol, "rtol")))}</td>'
                f'<td class="num">{_e(_num(_get(tol, "atol")))}</td></tr>'
            )
        out.append("</table>")
    sides = _get(report, "sides", {})
    for side in _SIDES:
        info = _get(sides, side)
        if info is None:
            continue
        ok = _get(info, "ok")
        status = "ran" if ok else (_verdict("failed") if ok is not None else "not run")
        out.append(f"<p>{_e(side)} side: {status}</p>")
        error = _get(info, "error")
        if error:
            out.append(f'<pre class="error">{_e(error)}</pre>')
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
            f'<tr><td><a href="#{_section_id("output", i)}">{_e(name)}</a></td>'
            f"{_metric_cells(_get(item, 'metrics'))}<td>{_verdict(_get(item, 'verdict'))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _time_cells(times: Any) -> str:
    """A node's kernel times (``--kernel-times``) as two table cells."""
    return "".join(f'<td class="num">{_e(_us(_get(times, side)))}</td>' for side in ("builtin", "custom"))


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
        origin_html = f"<strong>{_e(origin_text)}</strong>" if origin == "starts-here" else _e(origin_text)
        out.append(
            f'<tr><td><a href="#{_section_id("node", i)}">{_e(_get(item, "node", "?"))}</a></td>'
            f"<td>{_e(_get(item, 'op', '?'))}</td>{_metric_cells(_get(item, 'in_model'))}"
            f"<td>{_verdict(_get(item, 'verdict'))}</td><td>{_e(_get(item, 'attribution', '–'))}</td>"
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
            f"<tr><td>{_e(_get(item, 'node', '?'))}</td><td>{_e(_get(item, 'op', '?'))}</td>"
            f"<td>{_e(_get(item, 'reason', ''))}</td></tr>"
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
        text = _tensor_panel(key, a, b, key in self.with_images, uid)
        if key in self.with_images and self.used + len(text.encode()) > self.budget:
            why = f"the page reached its size budget of {_bytes(self.budget)}"
            text = _tensor_panel(key, a, b, False, uid, why)
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
        _legend(),
        _outputs_table(outputs),
        _nodes_table(nodes),
        _skipped_table(_items(_get(report, "skipped", []))),
    ]
    with_images = _image_budget(report, [str(k) for k in tensors], max_heatmaps)
    title = f"customops compare: {_get(report, 'model', 'model')}"
    fixed = "".join(head) + _CSS + _e(title) + _budget_note(len(tensors), max_bytes)  # the note, if needed
    panel = _Panels(tensors, with_images, len(fixed.encode()) + 200, max_bytes)
    details = [*_output_sections(outputs, panel), *_node_sections(nodes, panel)]
    if panel.left_out:
        head.insert(1, _budget_note(panel.left_out, max_bytes))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
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
            f'<section class="tensor" id="{_section_id("output", i)}"><h3>{_e(name)} '
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
        f"<strong>{_e(_get(item, 'node', '?'))}</strong> "
        f"<small>({_e(_get(item, 'op', '?'))} → {_e(_get(item, 'output', '?'))})</small>: "
        f"max abs err {_e(_num(_get(m, 'max_abs')))}, max rel err {_e(_num(_get(m, 'max_rel')))}, "
        f"mismatches {_mismatch_cell(m)}{_cpu_text(item, '; CPU: ')}</p>"
    )


def _cpu_text(item: Any, before: str) -> str:
    """A swapped integer node's dependence on the CPU in words (its ``cpu_dependence``), after ``before``;
    nothing for other nodes."""
    from customops.eval.judging.cpu_dependence import CpuDependence

    found = _get(item, "cpu_dependence")
    if not isinstance(found, Mapping):
        return ""
    return before + _e(CpuDependence.from_json(dict(found)).text())


def _node_section(i: int, item: Any, panel: Callable[[str], str]) -> str:
    """Node ``i``'s section: heading, attribution and difference, the metrics in the model and isolated,
    the errors of the isolated run, and ``panel`` of its tensors; one line when the node agrees."""
    if _VERDICT_CLASS.get(str(_get(item, "verdict"))) == "agree":
        return _collapsed_node(i, item)
    name = str(_get(item, "node", "?"))
    isolated = _get(item, "isolated", {})
    head = (
        f'<section class="tensor" id="{_section_id("node", i)}"><h3>{_e(name)} '
        f"<small>({_e(_get(item, 'op', '?'))} → {_e(_get(item, 'output', '?'))})</small> "
        f"{_verdict(_get(item, 'verdict'))}</h3>"
    )
    facts = (
        f"<p>attribution: {_e(_get(item, 'attribution', '–'))}; difference: "
        f"{_e(_ORIGIN_TEXT.get(str(_get(item, 'origin', 'unknown')), _get(item, 'origin')))}"
        + (f"; scope: {_e(_get(item, 'scope'))}" if _get(item, "scope") else "")
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
        f'<p>{_e(side)} error:</p><pre class="error">{_e(err)}</pre>' for side, err in errors.items() if err
    )
