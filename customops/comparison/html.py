"""Self-contained HTML page for a ``customops compare`` report.

:func:`render` turns the JSON report of ``compare`` (see ``customops.comparison.pipeline``) and the compared tensors
into one HTML page with no external resources: inline CSS, no JavaScript, and heat maps as PNG
``data:`` URIs. The PNG encoder (:func:`encode_png`) and the colour maps are written here with zlib and
struct only, so the page needs neither Pillow nor matplotlib.

Heat maps: for a numeric tensor of rank >= 2 a representative 2-D slice is shown (the last two axes at
index 0 of every leading axis), builtin (A) and custom (B) on one shared scale (viridis), and
``|A - B|`` on its own scale (inferno, black = no difference). NaN, +inf and -inf get colours no map
contains (:data:`NAN_RGB`, :data:`POSINF_RGB`, :data:`NEGINF_RGB`). Small slices are enlarged with
nearest-neighbour repetition to at least :data:`MIN_PIXELS` pixels, large ones subsampled to at most
:data:`MAX_PIXELS`. Strings, bools, rank 0 and rank 1 tensors get a short text preview instead.
"""

from __future__ import annotations

import base64
import html
import math
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DIFF_STOPS",
    "MAX_PIXELS",
    "MIN_PIXELS",
    "NAN_RGB",
    "NEGINF_RGB",
    "POSINF_RGB",
    "VIRIDIS_STOPS",
    "colormap",
    "encode_png",
    "heatmaps",
    "render",
]

#: The larger side of a heat map is enlarged (nearest) to at least this many pixels.
MIN_PIXELS = 128
#: Slices larger than this on either side are subsampled (every k-th pixel) to fit.
MAX_PIXELS = 512
#: The shorter side of a very thin slice (e.g. 1 x 2000) is stretched to at least this many pixels.
MIN_THIN_PIXELS = 24

#: Viridis, approximated by 9 evenly spaced stops (linear interpolation between them).
VIRIDIS_STOPS = np.array(
    [
        (68, 1, 84),
        (71, 44, 122),
        (59, 82, 139),
        (44, 113, 142),
        (33, 145, 140),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ],
    dtype=np.float64,
)
#: Inferno-like map for |A - B|: 0 is near-black, so a zero difference is a uniform dark image.
DIFF_STOPS = np.array(
    [(0, 0, 4), (87, 16, 110), (188, 55, 84), (249, 142, 9), (252, 255, 164)],
    dtype=np.float64,
)
#: Colours of non-finite values (also of NaN / inf differences); none of them occurs in either map.
NAN_RGB = (255, 0, 255)
POSINF_RGB = (255, 255, 255)
NEGINF_RGB = (0, 255, 255)

_VERDICT_CLASS = {
    "agree": "agree",
    "pass": "agree",
    "disagree": "disagree",
    "fail": "disagree",
    "side-failed": "failed",
    "failed": "failed",
}
_ORIGIN_TEXT = {"starts-here": "starts here", "carried-in": "carried in", "none": "–", "unknown": "unknown"}
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
"""


# ----------------------------------------------------------------------------------------------
# PNG and colour maps


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png(rgb: np.ndarray) -> bytes:
    """Encode an ``(height, width, 3)`` uint8 array as an 8-bit RGB PNG (filter 0 on every row)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"encode_png needs a non-empty (H, W, 3) array, got shape {rgb.shape}")
    height, width = rgb.shape[:2]
    raw = np.zeros((height, 1 + 3 * width), dtype=np.uint8)
    raw[:, 1:] = rgb.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)),
            _png_chunk(b"IEND", b""),
        )
    )


def colormap(t: np.ndarray, stops: np.ndarray = VIRIDIS_STOPS) -> np.ndarray:
    """Map values ``t`` in [0, 1] (clipped; NaN counts as 0) to uint8 RGB by linear interpolation between
    evenly spaced colour ``stops`` (default viridis). Returns ``t.shape + (3,)``."""
    t = np.nan_to_num(np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0), nan=0.0)
    positions = np.linspace(0.0, 1.0, len(stops))
    out = np.empty((*t.shape, 3), dtype=np.uint8)
    for channel in range(3):  # three vectorised passes, not a per-pixel loop
        out[..., channel] = np.rint(np.interp(t, positions, stops[:, channel]))
    return out


def _mark_non_finite(rgb: np.ndarray, values: np.ndarray) -> None:
    rgb[np.isnan(values)] = NAN_RGB
    rgb[np.isposinf(values)] = POSINF_RGB
    rgb[np.isneginf(values)] = NEGINF_RGB


def _normalise(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """(x - lo) / (hi - lo), halved first so float64 extremes do not overflow; 0 when hi <= lo."""
    if not hi > lo:
        return np.zeros(x.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        return (x / 2 - lo / 2) / (hi / 2 - lo / 2)


def _finite_range(*arrays: np.ndarray) -> tuple[float, float] | None:
    finite = [a[np.isfinite(a)] for a in arrays]
    finite = [f for f in finite if f.size]
    if not finite:
        return None
    return min(float(f.min()) for f in finite), max(float(f.max()) for f in finite)


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in float64; 0 where both are NaN or both the same infinity, else NaN / inf as it comes."""
    with np.errstate(invalid="ignore", over="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        return np.where(same, 0.0, np.abs(a - b))


# ----------------------------------------------------------------------------------------------
# Tensors


def _is_image_like(arr: np.ndarray) -> bool:
    return arr.ndim >= 2 and arr.size > 0 and arr.dtype.kind in "iuf"


def _slice_2d(arr: np.ndarray) -> tuple[np.ndarray, str]:
    """The last two axes at index 0 of every leading axis, as float64, and its index text."""
    lead = (0,) * (arr.ndim - 2)
    label = "[" + ", ".join([*("0" for _ in lead), ":", ":"]) + "]"
    return np.asarray(arr[lead], dtype=np.float64), label


def _layout(height: int, width: int) -> tuple[int, int, int]:
    """(subsampling step, vertical and horizontal repeat factors) that bring a slice into range."""
    step = max(1, math.ceil(max(height, width) / MAX_PIXELS))
    h, w = -(-height // step), -(-width // step)
    k = max(1, math.ceil(MIN_PIXELS / max(h, w)))
    kh = max(k, math.ceil(MIN_THIN_PIXELS / h))
    kw = max(k, math.ceil(MIN_THIN_PIXELS / w))
    return step, kh, kw


def _picture(
    values: np.ndarray, lo: float, hi: float, stops: np.ndarray, layout: tuple[int, int, int]
) -> bytes:
    """PNG of ``values`` on the scale [lo, hi]: subsampled first, coloured, non-finite values marked,
    then enlarged by repetition."""
    step, kh, kw = layout
    values = values[::step, ::step]
    rgb = colormap(_normalise(values, lo, hi), stops)
    _mark_non_finite(rgb, values)
    return encode_png(np.repeat(np.repeat(rgb, kh, axis=0), kw, axis=1))


def heatmaps(a: np.ndarray | None, b: np.ndarray | None) -> dict[str, Any]:
    """Heat maps of the representative 2-D slices of ``a`` (builtin) and ``b`` (custom).

    Returns a dict with ``"a"``, ``"b"`` and ``"diff"`` (PNG bytes, or None when that side is missing
    or the shapes differ), ``"slice"`` (index text such as ``[0, 0, :, :]``), ``"range"`` (the shared
    finite (min, max) of A and B, or None), ``"diff_max"`` (largest finite |A - B| of the slice, or
    None), ``"step"`` (subsampling step) and ``"zoom"`` ((vertical, horizontal) repeat factors). Both
    present arrays must be numeric of rank >= 2 and non-empty.
    """
    slices = {side: _slice_2d(x) if x is not None else None for side, x in (("a", a), ("b", b))}
    present = [s[0] for s in slices.values() if s is not None]
    if not present:
        raise ValueError("heatmaps needs at least one array")
    label = next(s[1] for s in slices.values() if s is not None)
    height = max(p.shape[0] for p in present)
    width = max(p.shape[1] for p in present)
    layout = _layout(height, width)
    step, kh, kw = layout
    span = _finite_range(*present)
    lo, hi = span if span is not None else (0.0, 0.0)
    result: dict[str, Any] = {"slice": label, "range": span, "diff_max": None, "step": step, "zoom": (kh, kw)}
    for side, s in slices.items():
        if s is None:
            result[side] = None
            continue
        result[side] = _picture(s[0], lo, hi, VIRIDIS_STOPS, layout)
    result["diff"] = None
    if slices["a"] is not None and slices["b"] is not None and slices["a"][0].shape == slices["b"][0].shape:
        diff = _difference(slices["a"][0], slices["b"][0])
        finite = diff[np.isfinite(diff)]
        top = float(finite.max()) if finite.size else 0.0
        result["diff_max"] = top
        result["diff"] = _picture(diff, 0.0, top, DIFF_STOPS, layout)
    return result


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
        f'<td class="num">{_e(_num(_get(m, "max_ulp")))}</td>'
    )


_METRIC_HEAD = (
    "<th>shape</th><th>dtype</th><th>max abs err</th><th>max rel err</th><th>mismatches</th><th>max ULP</th>"
)


def _metrics_detail(rows: list[tuple[str, Any]]) -> str:
    """A table of several METRICS dicts, one row each, with every field of the schema."""
    out = [
        "<table><tr><th>comparison</th>",
        _METRIC_HEAD,
        "<th>NaN / inf match</th><th>needed atol / rtol</th><th>atol / rtol</th><th>pass</th></tr>",
    ]
    for title, m in rows:
        if not isinstance(m, Mapping):
            out.append(f'<tr><td>{_e(title)}</td><td colspan="10" class="note">not available</td></tr>')
            continue
        nan_inf = f"{_num(m.get('nan_match'))} / {_num(m.get('inf_match'))}"
        needed = f"{_num(m.get('needed_atol'))} / {_num(m.get('needed_rtol'))}"
        tol = f"{_num(m.get('atol'))} / {_num(m.get('rtol'))}"
        passed = m.get("pass")
        badge = _verdict("pass" if passed else "fail") if passed is not None else "–"
        out.append(
            f"<tr><td>{_e(title)}</td>{_metric_cells(m)}<td>{_e(nan_inf)}</td>"
            f"<td>{_e(needed)}</td><td>{_e(tol)}</td><td>{badge}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _figure(png: bytes, alt: str, caption: str) -> str:
    return (
        f'<figure><img class="heat" src="{_data_uri(png)}" alt="{_e(alt)}">'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _side_label(side: str, arr: np.ndarray | None) -> str:
    if arr is None:
        return f"{side}: no tensor (this side failed or produced nothing)"
    return f"{side}: {_dims(arr.shape)} {arr.dtype}"


def _tensor_panel(key: str, a: Any, b: Any, images: bool) -> str:
    """Heat maps (or text previews) of one compared tensor, with a line on where A and B differ."""
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
    if all(_is_image_like(x) for x in present) and images:
        maps = heatmaps(arrays["builtin"], arrays["custom"])
        shape = _dims(present[0].shape)
        scale = (
            "no finite values"
            if maps["range"] is None
            else f"{_num(maps['range'][0])} … {_num(maps['range'][1])}"
        )
        size = []
        if maps["step"] > 1:
            size.append(f"subsampled 1:{maps['step']}")
        if maps["zoom"] != (1, 1):
            kh, kw = maps["zoom"]
            size.append(f"enlarged ×{kh}" if kh == kw else f"enlarged ×{kh} vertically, ×{kw} horizontally")
        shown = f"slice {maps['slice']} of {shape}" + (f" ({', '.join(size)})" if size else "")
        figs = []
        for side, tag in (("builtin", "a"), ("custom", "b")):
            if maps[tag] is not None:
                figs.append(
                    _figure(maps[tag], f"{side}: {key}", f"{side} (A)" if tag == "a" else f"{side} (B)")
                )
        if maps["diff"] is not None:
            figs.append(_figure(maps["diff"], f"|A − B|: {key}", f"|A − B|: 0 … {_num(maps['diff_max'])}"))
        elif len(figs) == 2:
            figs.append('<p class="note">No difference image: the slices have different shapes.</p>')
        out.append(f"<p>{_e(shown)}; A and B share the scale {_e(scale)}.</p>")
        out.append('<div class="figs">' + "".join(figs) + "</div>")
    elif all(_is_image_like(x) for x in present):
        out.append('<p class="note">Heat maps left out (image limit reached).</p>')
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
        '<p class="note">Heat maps: A = builtin (ORT), B = custom (customops), on one shared scale '
        f"{gradient(VIRIDIS_STOPS)} low → high; |A − B| on its own scale {gradient(DIFF_STOPS)} 0 → max "
        f"(uniform black: no difference). {swatch(NAN_RGB)} NaN, {swatch(POSINF_RGB)} +inf, "
        f"{swatch(NEGINF_RGB)} −inf (in |A − B|: NaN against a number, or inf).</p>"
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
        status = "ran" if ok else (_verdict("failed") if ok is not None else "unknown")
        out.append(f"<p>{_e(side)} side: {status}</p>")
        error = _get(info, "error")
        if error:
            out.append(f'<pre class="error">{_e(error)}</pre>')
    out.append("</header>")
    return "".join(out)


def _outputs_table(outputs: list[Any]) -> str:
    if not outputs:
        return '<h2>Graph outputs</h2><p class="note">No graph outputs compared.</p>'
    out = ["<h2>Graph outputs</h2><table><tr><th>output</th>", _METRIC_HEAD, "<th>verdict</th></tr>"]
    for i, item in enumerate(outputs):
        name = _get(item, "name", "?")
        out.append(
            f'<tr><td><a href="#{_section_id("output", i)}">{_e(name)}</a></td>'
            f"{_metric_cells(_get(item, 'metrics'))}<td>{_verdict(_get(item, 'verdict'))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _nodes_table(nodes: list[Any]) -> str:
    if not nodes:
        return '<h2>Nodes</h2><p class="note">No nodes compared.</p>'
    out = [
        "<h2>Nodes</h2><table><tr><th>node</th><th>op</th>",
        _METRIC_HEAD,
        "<th>verdict</th><th>attribution</th><th>difference</th><th>builtin µs</th><th>custom µs</th></tr>",
    ]
    for i, item in enumerate(nodes):
        times = _get(item, "time_us", {})
        origin = _get(item, "origin", "unknown")
        origin_text = _ORIGIN_TEXT.get(str(origin), str(origin))
        origin_html = f"<strong>{_e(origin_text)}</strong>" if origin == "starts-here" else _e(origin_text)
        out.append(
            f'<tr><td><a href="#{_section_id("node", i)}">{_e(_get(item, "node", "?"))}</a></td>'
            f"<td>{_e(_get(item, 'op', '?'))}</td>{_metric_cells(_get(item, 'in_model'))}"
            f"<td>{_verdict(_get(item, 'verdict'))}</td><td>{_e(_get(item, 'attribution', '–'))}</td>"
            f"<td>{origin_html}</td>"
            f'<td class="num">{_e(_us(_get(times, "builtin")))}</td>'
            f'<td class="num">{_e(_us(_get(times, "custom")))}</td></tr>'
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


def render(
    report: Mapping[str, Any],
    tensors: Mapping[str, tuple[np.ndarray | None, np.ndarray | None]],
    *,
    max_heatmaps: int = 200,
) -> str:
    """One self-contained HTML page for a compare ``report`` (the JSON report's dict).

    ``tensors`` maps a compared tensor's key (a node name as in ``report["nodes"][i]["node"]`` or a
    graph output name as in ``report["outputs"][i]["name"]``) to its (builtin, custom) arrays, either
    of which may be None when that side failed. Numeric tensors of rank >= 2 get heat maps (at most
    ``max_heatmaps`` tensors, default 200: outputs first, then nodes that do not agree); others a text
    preview. Missing optional keys and None values in the report are shown as "–" or "?".
    """
    report = report if isinstance(report, Mapping) else {}
    outputs = _items(_get(report, "outputs", []))
    nodes = _items(_get(report, "nodes", []))
    with_images = _image_budget(report, [str(k) for k in tensors], max_heatmaps)

    def panel(key: str) -> str:
        if key not in tensors:
            return '<p class="note">No tensors recorded for this entry.</p>'
        pair = tensors[key]
        a, b = pair if isinstance(pair, (tuple, list)) and len(pair) == 2 else (None, None)
        return _tensor_panel(key, a, b, key in with_images)

    title = f"customops compare: {_get(report, 'model', 'model')}"
    body = [
        _header(report),
        _legend(),
        _outputs_table(outputs),
        _nodes_table(nodes),
        _skipped_table(_items(_get(report, "skipped", []))),
        *_output_sections(outputs, panel),
        *_node_sections(nodes, panel),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>" + "".join(body) + "</body></html>\n"
    )


def _output_sections(outputs: list[Any], panel: Callable[[str], str]) -> list[str]:
    """The part "Graph outputs in detail": one section per output (verdict, metrics, ``panel`` of its
    tensors)."""
    sections = ["<h2>Graph outputs in detail</h2>"] if outputs else []
    for i, item in enumerate(outputs):
        name = str(_get(item, "name", "?"))
        sections.append(
            f'<section class="tensor" id="{_section_id("output", i)}"><h3>output {_e(name)} '
            f"{_verdict(_get(item, 'verdict'))}</h3>"
            f"{_metrics_detail([('builtin vs custom', _get(item, 'metrics'))])}{panel(name)}</section>"
        )
    return sections


def _node_sections(nodes: list[Any], panel: Callable[[str], str]) -> list[str]:
    """The part "Nodes in detail": one section per node (see :func:`_node_section`)."""
    sections = ["<h2>Nodes in detail</h2>"] if nodes else []
    sections.extend(_node_section(i, item, panel) for i, item in enumerate(nodes))
    return sections


def _node_section(i: int, item: Any, panel: Callable[[str], str]) -> str:
    """Node ``i``'s section: heading, attribution and difference, the metrics in the model and isolated,
    the errors of the isolated run, and ``panel`` of its tensors."""
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
        + "</p>"
    )
    table = _metrics_detail(
        [
            ("in the model: builtin vs custom", _get(item, "in_model")),
            ("isolated: builtin vs custom", _get(isolated, "builtin_vs_custom")),
            ("isolated: builtin vs reference", _get(isolated, "builtin_vs_reference")),
            ("isolated: custom vs reference", _get(isolated, "custom_vs_reference")),
        ]
    )
    return head + facts + table + _isolated_errors(isolated) + panel(name) + "</section>"


def _isolated_errors(isolated: Any) -> str:
    """The error message of each side that failed in the isolated run (nothing unless they are a mapping)."""
    errors = _get(isolated, "errors", {})
    if not isinstance(errors, Mapping):
        return ""
    return "".join(
        f'<p>{_e(side)} error:</p><pre class="error">{_e(err)}</pre>' for side, err in errors.items() if err
    )
