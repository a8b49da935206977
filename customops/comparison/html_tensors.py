"""One compared tensor on the --html page (customops.comparison.html): a line on where A and B differ, a
histogram of |A - B| by decade, and its heat maps (customops.comparison.heatmap: the slice with the largest
difference, A, B and A - B on their scales, a hover map of the values) or a short text preview; the
legend of the maps; and the page's text helpers (escaped text, numbers, shapes)."""

from __future__ import annotations

import base64
import html
import math
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

__all__ = ["dims", "escaped", "legend", "number", "tensor_panel"]


def escaped(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def number(value: Any, digits: int = 4) -> str:
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


def dims(shape: Any) -> str:
    if shape is None:
        return "?"
    try:
        return "×".join(str(d) for d in shape) if len(shape) else "scalar"
    except TypeError:
        return str(shape)


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
            line += f"; largest |A − B| = {number(float(gap[at]))} at index {at}: builtin {_short(a[at])}, custom {_short(b[at])}"
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
        label = "= 0" if high == 0 else f"{number(low, 1)} ≤ |A − B| < {number(high, 1)}"
        parts.append(
            f'<rect x="{i * 24 + 2}" y="{height - h}" width="{bar}" height="{h}" fill="#b2182b">'
            f"<title>{escaped(label)}: {count}</title></rect>"
        )
    axis = f"{number(bins[1][0], 1)} … {number(bins[-1][1], 1)}"
    return (
        f"<p>|A − B| by decade (first bar: equal elements; then {escaped(axis)}; hover for counts):</p>"
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


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _figure(png: bytes, alt: str, caption: str, usemap: str | None = None) -> str:
    mapped = f' usemap="#{escaped(usemap)}"' if usemap else ""
    return (
        f'<figure><img class="heat" src="{_data_uri(png)}" alt="{escaped(alt)}"{mapped}>'
        f"<figcaption>{escaped(caption)}</figcaption></figure>"
    )


def _side_label(side: str, arr: np.ndarray | None) -> str:
    if arr is None:
        return f"{side}: no tensor (this side failed or produced nothing)"
    return f"{side}: {dims(arr.shape)} {arr.dtype}"


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
        f'<area shape="rect" coords="{x0},{y0},{x1},{y1}" href="#{uid}" title="{escaped(text)}" '
        f'alt="{escaped(text.split(": ", 1)[-1].split(";", 1)[0])}">'
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
    shape = dims(next(x for x in arrays.values() if x is not None).shape)
    scale = (
        "no finite values"
        if maps["range"] is None
        else f"{number(maps['range'][0])} … {number(maps['range'][1])}"
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
        top, (lo, hi) = number(maps["diff_max"]), maps["diff_range"] or (0.0, 0.0)
        caption = (
            f"A − B: {number(lo)} … {number(hi)} on the scale −{top} … +{top} "
            "(blue: A < B, white: equal, red: A > B)"
            + _counts_text(maps["non_finite"].get("diff"), "differences")
        )
        figs.append(_figure(maps["diff"], f"A − B: {key}", caption, usemap))
    elif len(figs) == 2:
        figs.append('<p class="note">No difference image: the slices have different shapes.</p>')
    out = [
        f"<p>{escaped(shown)}; A and B share the scale {escaped(scale)}; hover over a map for the values.</p>"
    ]
    out.append(f'<div class="figs" id="{escaped(uid)}">' + "".join(figs) + "</div>")
    if usemap:
        out.append(_hover_map(uid, maps["hover"]))
    return out


def tensor_panel(
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
        "<p>" + " · ".join(escaped(_side_label(side, x)) for side, x in arrays.items()) + "</p>",
    ]
    if arrays["builtin"] is not None and arrays["custom"] is not None:
        line = _where_they_differ(arrays["builtin"], arrays["custom"])
        if line is None and arrays["builtin"].shape != arrays["custom"].shape:
            line = "shapes differ, so there is no element-wise difference."
        if line:
            out.append(f"<p>{escaped(line)}</p>")
        out.append(_histogram(arrays["builtin"], arrays["custom"]))
    if all(is_image_like(x) for x in present) and images:
        out.extend(_heatmap_panel(key, arrays, uid))
    elif all(is_image_like(x) for x in present):
        out.append(f'<p class="note">Heat maps left out ({escaped(left_out)}).</p>')
    else:
        for side, x in arrays.items():
            if x is not None:
                out.append(f"<p>{escaped(side)}:</p><pre>{escaped(_preview(x))}</pre>")
    return "".join(out)


def legend() -> str:
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
