"""Heat maps of two compared tensors, as PNG pictures for the compare report's page.

:func:`heatmaps` picks the 2-D slice of a numeric tensor of rank >= 2 (the last two axes; e.g. one
channel of one batch of an NCHW tensor) holding the largest |A - B| (a NaN or infinite difference counts
as the largest; index 0 of every leading axis when there is no element-wise difference) and draws
builtin (A) and custom (B) on one shared scale (viridis), and the signed difference ``A - B`` on its own
symmetric diverging scale (blue: A < B, white: equal, red: A > B). NaN, +inf and -inf get colours no map
contains (:data:`NAN_RGB`, :data:`POSINF_RGB`, :data:`NEGINF_RGB`; in ``A - B`` :data:`NAN_RGB`,
:data:`DIFF_POSINF_RGB`, :data:`DIFF_NEGINF_RGB`) and are counted. Small slices are enlarged with
nearest-neighbour repetition to at least :data:`MIN_PIXELS` pixels, large ones subsampled to at most
:data:`MAX_PIXELS`. The three maps share hover cells that show A, B and A - B: one per element, or for
slices over :data:`HOVER_CELLS` per side one per block, showing the block's element with the largest
|A - B|, so a map has at most ``HOVER_CELLS**2`` cells. The PNG encoder (:func:`encode_png`) and the
colour maps (:func:`colormap`) are written with zlib and struct only: no Pillow, no matplotlib.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import Any

import numpy as np

__all__ = [
    "DIFF_NEGINF_RGB",
    "DIFF_POSINF_RGB",
    "DIFF_STOPS",
    "HOVER_CELLS",
    "MAX_PIXELS",
    "MIN_PIXELS",
    "MIN_THIN_PIXELS",
    "NAN_RGB",
    "NEGINF_RGB",
    "POSINF_RGB",
    "VIRIDIS_STOPS",
    "colormap",
    "encode_png",
    "heatmaps",
    "is_image_like",
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
#: Diverging map for the signed difference A - B (ColorBrewer RdBu, reversed): dark blue = most
#: negative (A < B), white = 0 (the middle stop), dark red = most positive (A > B).
DIFF_STOPS = np.array(
    [
        (5, 48, 97),
        (33, 102, 172),
        (67, 147, 195),
        (146, 197, 222),
        (209, 229, 240),
        (255, 255, 255),
        (253, 219, 199),
        (244, 165, 130),
        (214, 96, 77),
        (178, 24, 43),
        (103, 0, 31),
    ],
    dtype=np.float64,
)
#: Hover regions per heat map are at most this many per side; larger slices get one region per block
#: of elements, which shows the block's element with the largest |A - B|.
HOVER_CELLS = 64
NAN_RGB = (255, 0, 255)
POSINF_RGB = (255, 255, 255)
NEGINF_RGB = (0, 255, 255)
#: Colours of +inf and -inf differences in the A - B map (NaN differences get NAN_RGB); not in DIFF_STOPS.
DIFF_POSINF_RGB = (255, 200, 0)
DIFF_NEGINF_RGB = (0, 255, 255)


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


# ----------------------------------------------------------------------------------------------
# Tensors


def is_image_like(arr: np.ndarray) -> bool:
    """Whether :func:`heatmaps` can draw ``arr``: numeric, rank >= 2, not empty."""
    return arr.ndim >= 2 and arr.size > 0 and arr.dtype.kind in "iuf"


def _signed_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A - B in float64; 0 where both are NaN or both the same infinity, else NaN / ±inf as it comes
    (NaN against a number is NaN, a finite value against +inf is -inf)."""
    with np.errstate(invalid="ignore", over="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        return np.where(same, 0.0, a - b)


def _gap_score(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|A - B| as a ranking score: NaN and infinite differences count as the largest (+inf)."""
    return np.nan_to_num(np.abs(_signed_difference(a, b)), nan=np.inf)


def _leading_index(a: np.ndarray | None, b: np.ndarray | None) -> tuple[int, ...]:
    """The index over the leading axes (all but the last two; e.g. batch and channel of NCHW) of the
    2-D slice holding the largest |A - B| (a NaN or infinite difference counts as the largest; the
    first such slice on ties). All zeros when a side is missing or the shapes differ."""
    present = a if a is not None else b
    assert present is not None
    lead_shape = present.shape[:-2]
    if a is None or b is None or a.shape != b.shape:
        return (0,) * len(lead_shape)
    score = _gap_score(a.astype(np.float64), b.astype(np.float64))
    per_slice = score.reshape(-1, a.shape[-2] * a.shape[-1]).max(axis=1)
    flat = int(np.argmax(per_slice))
    return tuple(int(i) for i in np.unravel_index(flat, lead_shape)) if lead_shape else ()


def _slice_2d(arr: np.ndarray, lead: tuple[int, ...]) -> tuple[np.ndarray, str]:
    """The last two axes at the leading index ``lead``, as float64, and its index text."""
    label = "[" + ", ".join([*(str(i) for i in lead), ":", ":"]) + "]"
    return np.asarray(arr[lead], dtype=np.float64), label


def _where_text(lead: tuple[int, ...], lead_shape: tuple[int, ...]) -> str:
    """Which slice, in words: "batch 0 of 1, channel 5 of 16" for NCHW, else the leading index."""
    if not lead:
        return "the only slice"
    if len(lead) == 2:
        return f"channel {lead[1]} of {lead_shape[1]}, batch {lead[0]} of {lead_shape[0]}"
    if len(lead) == 1:
        return f"index {lead[0]} of {lead_shape[0]} on axis 0"
    return f"leading index {list(lead)} of {list(lead_shape)}"


def _layout(height: int, width: int) -> tuple[int, int, int]:
    """(subsampling step, vertical and horizontal repeat factors) that bring a slice into range."""
    step = max(1, math.ceil(max(height, width) / MAX_PIXELS))
    h, w = -(-height // step), -(-width // step)
    k = max(1, math.ceil(MIN_PIXELS / max(h, w)))
    kh = max(k, math.ceil(MIN_THIN_PIXELS / h))
    kw = max(k, math.ceil(MIN_THIN_PIXELS / w))
    return step, kh, kw


def _enlarge(rgb: np.ndarray, layout: tuple[int, int, int]) -> bytes:
    _, kh, kw = layout
    return encode_png(np.repeat(np.repeat(rgb, kh, axis=0), kw, axis=1))


def _picture(
    values: np.ndarray, lo: float, hi: float, stops: np.ndarray, layout: tuple[int, int, int]
) -> bytes:
    """PNG of ``values`` on the scale [lo, hi]: subsampled first, coloured, non-finite values marked,
    then enlarged by repetition."""
    values = values[:: layout[0], :: layout[0]]
    rgb = colormap(_normalise(values, lo, hi), stops)
    _mark_non_finite(rgb, values)
    return _enlarge(rgb, layout)


def _diff_picture(diff: np.ndarray, top: float, layout: tuple[int, int, int]) -> bytes:
    """PNG of the signed difference on the symmetric diverging scale [-top, top] (white = 0; all white
    when ``top`` is 0); NaN and ±inf differences in colours the scale does not contain."""
    values = diff[:: layout[0], :: layout[0]]
    t = _normalise(values, -top, top) if top > 0 else np.full(values.shape, 0.5)
    rgb = colormap(t, DIFF_STOPS)
    rgb[np.isnan(values)] = NAN_RGB
    rgb[np.isposinf(values)] = DIFF_POSINF_RGB
    rgb[np.isneginf(values)] = DIFF_NEGINF_RGB
    return _enlarge(rgb, layout)


def _non_finite(values: np.ndarray) -> tuple[int, int, int]:
    """How many NaN, +inf and -inf ``values`` holds."""
    return (
        int(np.count_nonzero(np.isnan(values))),
        int(np.count_nonzero(np.isposinf(values))),
        int(np.count_nonzero(np.isneginf(values))),
    )


def _exact(value: float) -> str:
    return f"{value:.8g}"


def _hover_text(
    a2: np.ndarray | None,
    b2: np.ndarray | None,
    index: tuple[int, ...],
    block: tuple[int, int, int, int] | None,
) -> str:
    """The hover text of one cell: its index and A, B and A - B there; for a block of several elements
    (a large slice) the block's rows and columns, and the element with the largest |A - B| in it."""
    row, col = index[-2:]
    where = "[" + ", ".join(str(i) for i in index) + "]"
    if block is not None:
        r0, r1, c0, c1 = block
        pick = "largest |A − B|" if a2 is not None and b2 is not None else "first element"
        where = f"rows {r0}–{r1}, columns {c0}–{c1}: {pick} at {where}"
    parts = [where]
    for name, x in (("A", a2), ("B", b2)):
        if x is not None:
            parts.append(f"{name} = {_exact(x[row, col])}")
    if a2 is not None and b2 is not None:
        parts.append(f"A − B = {_exact(float(_signed_difference(a2[row, col], b2[row, col])))}")
    return "; ".join(parts)


def _block_argmax(score: np.ndarray, block: int) -> np.ndarray:
    """For each ``block`` x ``block`` tile of ``score`` (row-major tiles), the flat offset inside the tile
    of its largest value (the first on ties, so the tile's top-left element when all are equal)."""
    height, width = score.shape
    rows, cols = -(-height // block), -(-width // block)
    padded = np.full((rows * block, cols * block), -1.0)
    padded[:height, :width] = score
    tiles = padded.reshape(rows, block, cols, block).transpose(0, 2, 1, 3).reshape(rows, cols, block * block)
    return tiles.argmax(axis=2)


def _hover_cells(
    a2: np.ndarray | None, b2: np.ndarray | None, lead: tuple[int, ...], layout: tuple[int, int, int]
) -> tuple[list[tuple[tuple[int, int, int, int], str]], int]:
    """Hover regions over the heat maps: ((x0, y0, x1, y1) in image pixels, text) for at most
    :data:`HOVER_CELLS` x :data:`HOVER_CELLS` cells, and how many slice elements a cell spans per side
    (1: one cell per element)."""
    step, kh, kw = layout
    shape = (a2 if a2 is not None else b2).shape  # type: ignore[union-attr]
    sub_h, sub_w = -(-shape[0] // step), -(-shape[1] // step)
    group = max(1, math.ceil(max(sub_h, sub_w) / HOVER_CELLS))
    block = group * step
    score = _gap_score(a2, b2) if a2 is not None and b2 is not None else np.zeros(shape)
    best = _block_argmax(score, block)
    cells = []
    for i, j in np.ndindex(best.shape):
        row, col = i * block + int(best[i, j]) // block, j * block + int(best[i, j]) % block
        span = None
        if block > 1:
            span = (
                i * block,
                min((i + 1) * block, shape[0]) - 1,
                j * block,
                min((j + 1) * block, shape[1]) - 1,
            )
        box = (
            j * group * kw,
            i * group * kh,
            min((j + 1) * group, sub_w) * kw,
            min((i + 1) * group, sub_h) * kh,
        )
        cells.append((box, _hover_text(a2, b2, (*lead, row, col), span)))
    return cells, block


def heatmaps(a: np.ndarray | None, b: np.ndarray | None) -> dict[str, Any]:
    """Heat maps of the 2-D slice of ``a`` (builtin) and ``b`` (custom) holding the largest |A - B|.

    Returns a dict with ``"a"``, ``"b"`` and ``"diff"`` (PNG bytes, or None when that side is missing
    or the shapes differ; ``"diff"`` is the signed A - B on a diverging scale), ``"index"`` (the leading
    index of the slice), ``"slice"`` (index text such as ``[0, 5, :, :]``), ``"where"`` (the slice in
    words, e.g. ``channel 5 of 16, batch 0 of 1``), ``"range"`` (the shared finite (min, max) of A and
    B, or None), ``"diff_range"`` (finite (min, max) of A - B, or None), ``"diff_max"`` (largest finite
    |A - B| of the slice: the diverging scale is [-diff_max, diff_max]; None without a difference),
    ``"non_finite"`` ((NaN, +inf, -inf) counts of the slice per ``"a"``, ``"b"``, ``"diff"``),
    ``"step"`` (subsampling step), ``"zoom"`` ((vertical, horizontal) repeat factors), ``"hover"``
    (see :func:`_hover_cells`; None when the shapes differ) and ``"hover_block"``. Both present arrays
    must be numeric of rank >= 2 and non-empty.
    """
    if a is None and b is None:
        raise ValueError("heatmaps needs at least one array")
    lead = _leading_index(a, b)
    slices = {side: _slice_2d(x, lead)[0] if x is not None else None for side, x in (("a", a), ("b", b))}
    present = [s for s in slices.values() if s is not None]
    layout = _layout(max(p.shape[0] for p in present), max(p.shape[1] for p in present))
    span = _finite_range(*present)
    lo, hi = span if span is not None else (0.0, 0.0)
    first = a if a is not None else b
    result: dict[str, Any] = {
        "index": lead,
        "slice": _slice_2d(first, lead)[1],  # type: ignore[arg-type]
        "where": _where_text(lead, first.shape[:-2]),  # type: ignore[union-attr]
        "range": span,
        "diff_range": None,
        "diff_max": None,
        "diff": None,
        "step": layout[0],
        "zoom": layout[1:],
        "non_finite": {side: _non_finite(s) for side, s in slices.items() if s is not None},
        "hover": None,
        "hover_block": None,
    }
    for side, s in slices.items():
        result[side] = None if s is None else _picture(s, lo, hi, VIRIDIS_STOPS, layout)
    sa, sb = slices["a"], slices["b"]
    if sa is not None and sb is not None and sa.shape != sb.shape:
        return result
    if sa is not None and sb is not None:
        diff = _signed_difference(sa, sb)
        result["diff_range"] = _finite_range(diff)
        result["diff_max"] = float(np.abs(result["diff_range"]).max()) if result["diff_range"] else 0.0
        result["non_finite"]["diff"] = _non_finite(diff)
        result["diff"] = _diff_picture(diff, result["diff_max"], layout)
    result["hover"], result["hover_block"] = _hover_cells(sa, sb, lead, layout)
    return result
