"""The rounding bound per op: how far an output computed with its type's rounding may be from the
exact value of the formula, from the terms each output element sums (:class:`Terms`, :data:`TERMS`) and
the machine epsilon of the output's type (:func:`bound`). The ops of exact kernels (the table's
``exact_kernel``, customops.eval.judging.yardstick_table) have a bound of 0; the configurations that do
not round have none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.eval.judging.yardstick_table import ACTIVATION_REFERENCE, QUANTIZED_REFERENCE

Inputs = Sequence[np.ndarray | None]

COORDINATE_OPS = 8
"""Rounding steps, in ulps of the largest coordinate, allowed for a sample coordinate computed in the
output's type (scale, shift, bin size, step within the bin: RoiAlign takes about eight)."""


FLOATS = ("float16", "bfloat16", "float32", "float64")
"""The output types a yardstick judges (narrower ones are copies in every op here)."""


def is_float(dtype: Any) -> bool:
    return str(np.dtype(dtype)) in FLOATS


def epsilon(dtype: Any) -> float:
    """The machine epsilon of a float type of :data:`FLOATS`."""
    import ml_dtypes

    return float(ml_dtypes.finfo(np.dtype(dtype)).eps)


def _mag(x: np.ndarray | None) -> float:
    """The largest finite |x| (0 for none)."""
    if x is None or x.size == 0 or (x.dtype.kind not in "fiu" and not is_float(x.dtype)):
        return 0.0
    f = np.abs(np.asarray(x, np.float64))
    f = f[np.isfinite(f)]
    return float(f.max()) if f.size else 0.0


@dataclass(frozen=True)
class Terms:
    """What bounds the rounding of one output element: ``count`` terms summed, ``rank`` coordinates
    computed per term over an ``extent`` (the largest coordinate, in pixels), and ``scale`` (the sum of
    the terms' magnitudes)."""

    count: float | np.ndarray
    rank: int
    extent: float | np.ndarray
    scale: float | np.ndarray
    """``count``, ``extent`` and ``scale`` may be arrays that broadcast over the output (RoiAlign's: one
    per roi)."""


def _interpolating(x: np.ndarray, out_shape: Sequence[int], mode: str, antialias: int) -> Terms | None:
    taps = {"linear": 2, "cubic": 4}.get(mode)
    if taps is None or len(out_shape) != x.ndim:
        return None
    count, rank = 1.0, 0
    for n, m in zip(x.shape, out_shape, strict=True):
        if n == m:
            continue
        rank += 1
        count *= math.ceil(taps * n / m) + 1 if antialias and 0 < m < n else taps
    weights = 1.5**rank if taps == 4 else 1.0  # Keys' cubic weights sum to at most 1.5 in magnitude
    extent = float(max([*x.shape, *out_shape], default=1))
    return Terms(count, rank, extent, _mag(x) * weights)


def _resize(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    return _interpolating(inputs[0], out_shape, str(attrs.get("mode")), int(attrs.get("antialias") or 0))


def _grid_sample(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    x, grid = inputs[0], inputs[1]
    taps = {"linear": 2, "cubic": 4}.get(str(attrs.get("mode")))
    if taps is None or grid is None:
        return None
    rank = x.ndim - 2
    # a location far outside reads padding however its coordinate rounds: the extent stops at 2 L
    extent = float(max(x.shape[2:], default=1)) * min(max(1.0, _mag(grid)), 2.0)
    return Terms(float(taps**rank), rank, extent, _mag(x) * (1.5**rank if taps == 4 else 1.0))


def _affine_grid(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    rank = len(out_shape) - 2
    return Terms(rank + 1.0, rank, 1.0, _mag(inputs[0]) * (rank + 1))


def _col2im(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    block = inputs[2]
    count = float(np.prod(np.asarray(block, np.float64))) if block is not None else math.inf
    return Terms(count, 0, 0.0, count * _mag(inputs[0]))


def _roi_samples(r: np.ndarray, attrs: Mapping[str, Any]) -> np.ndarray:
    """The sample points per bin of each roi (``r`` scaled by spatial_scale)."""
    ratio = int(attrs.get("sampling_ratio") or 0)
    if ratio > 0:
        return np.full(len(r), float(ratio * ratio))
    h = np.ceil(np.abs(r[:, 3] - r[:, 1]) / max(int(attrs.get("output_height", 1)), 1))
    w = np.ceil(np.abs(r[:, 2] - r[:, 0]) / max(int(attrs.get("output_width", 1)), 1))
    return np.maximum(h, 1.0) * np.maximum(w, 1.0)


def _roi_align(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    """Per roi (its output rows): a roi's own size and coordinates bound its rounding, so a roi far off
    the map (many pixels of rounding, and only zeros read) does not loosen the bound of the others."""
    x, rois = inputs[0], inputs[1]
    r = np.asarray(rois, np.float64).reshape(-1, 4) * float(attrs.get("spatial_scale", 1.0))
    r[~np.isfinite(r)] = 0.0  # such a roi's output is NaN (ours) whatever rounds: the others' bound holds
    samples = np.ones(len(r)) if attrs.get("mode") == "max" else _roi_samples(r, attrs)
    extent = np.maximum(float(max(x.shape[2:], default=1)), np.max(np.abs(r), axis=1, initial=0.0))
    rows = (-1, *[1] * (len(out_shape) - 1))
    scale = _roi_magnitudes(x, r, inputs[2])
    return Terms((4.0 * samples).reshape(rows), 2, (extent + 1.0).reshape(rows), scale.reshape(rows))


WINDOW_LIMIT = 1 << 24
"""Most elements of X read in all for RoiAlign's magnitudes per roi (else the largest of X serves)."""


def _roi_magnitudes(x: np.ndarray, r: np.ndarray, batch: np.ndarray | None) -> np.ndarray:
    """The largest finite |X| each roi (``r`` scaled) can read: its image's pixels within two of its box,
    which hold every corner its sample points weigh, however their coordinates round by a pixel. Where
    that would read more than :data:`WINDOW_LIMIT` elements in all: the largest |X| for every roi."""
    whole = np.full(len(r), _mag(x))
    idx = None if batch is None else np.asarray(batch).reshape(-1)
    if x.ndim != 4 or idx is None or len(idx) != len(r) or idx.dtype.kind not in "iu" or len(r) > 1 << 16:
        return whole
    if len(idx) and (idx.min() < 0 or idx.max() >= x.shape[0]):
        return whole
    box = []
    for a, b, n in ((r[:, 1], r[:, 3], x.shape[2]), (r[:, 0], r[:, 2], x.shape[3])):
        box.append(np.clip(np.floor(np.minimum(a, b)) - 2, 0, n - 1).astype(np.int64))
        box.append(np.clip(np.ceil(np.maximum(a, b)) + 3, 1, n).astype(np.int64))
    y0, y1, x0, x1 = box
    if int(((y1 - y0) * (x1 - x0)).sum()) * x.shape[1] > WINDOW_LIMIT:
        return whole
    windows = zip(idx.tolist(), y0.tolist(), y1.tolist(), x0.tolist(), x1.tolist(), strict=True)
    return np.array([_mag(x[i, :, a:b, c:d]) for i, a, b, c, d in windows], np.float64)


def _deform_conv(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    x, w, offset, b, mask = (list(inputs) + [None] * 5)[:5]
    rank = x.ndim - 2
    per_output = float(math.prod(w.shape[1:]))  # in-channels per group x kernel taps
    scale = per_output * _mag(x) * _mag(w) * max(1.0, _mag(mask)) + _mag(b)
    length = float(max(x.shape[2:], default=1))
    extent = length + min(_mag(offset), length + 2)  # taps beyond the input read 0 however they round
    return Terms(per_output * 2**rank + 1, rank, extent, scale)


EXACT = Terms(0.0, 0, 0.0, 0.0)
"""No rounding allowed: an exact kernel's output is the spec's value."""


def exact(inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]) -> Terms | None:
    """The quantized integer family and the activations: our kernel is exact
    (customops.eval.judging.yardstick_table.Yardstick.exact_kernel),
    so a side is within its bound only where it gives our value."""
    return EXACT


def _interpolating_upsample(
    inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int]
) -> Terms | None:
    return _interpolating(inputs[0], out_shape, str(attrs.get("mode")), 0)


TERMS: dict[str, Callable[[Inputs, Mapping[str, Any], Sequence[int]], Terms | None]] = {
    "Resize": _resize,
    "Upsample": _interpolating_upsample,
    "GridSample": _grid_sample,
    "AffineGrid": _affine_grid,
    "Col2Im": _col2im,
    "RoiAlign": _roi_align,
    "DeformConv": _deform_conv,
    **{op: exact for op, _, _ in QUANTIZED_REFERENCE},
    **{op: exact for op, _ in ACTIVATION_REFERENCE},
}
"""The ops whose arithmetic rounds, and their :class:`Terms` from the custom op's inputs (in its order),
decoded attributes and the output's shape; None for a configuration that does not round."""


def bound(
    op: str, inputs: Inputs, attrs: Mapping[str, Any], out_shape: Sequence[int], dtype: Any
) -> float | np.ndarray | None:
    """How far an output of ``dtype`` computed with that type's rounding may be from the exact value:
    ``eps * S * (T + COORDINATE_OPS * r * E)`` with eps the type's machine epsilon, T terms summed of
    magnitudes adding up to S (Higham's bound for a sum, one eps per term), and r coordinates per term,
    each within COORDINATE_OPS half-ulps (COORDINATE_OPS / 2 eps E) of the largest coordinate E, moving
    an interpolation weight by that much times a difference of two pixels (at most 2 S). None where the
    op's configuration does not round (no yardstick), the output is not a float, or the bound is not
    finite. An array (RoiAlign's: one per roi) broadcasts over the output. An exact kernel's bound is 0
    on every output type."""
    terms_of = TERMS.get(op)
    if terms_of is exact:
        return 0.0
    if terms_of is None or not is_float(np.dtype(dtype)) or inputs[0] is None:
        return None
    with np.errstate(all="ignore"):
        t = terms_of(inputs, attrs, out_shape)
    if t is None:
        return None
    eps = epsilon(dtype)
    with np.errstate(all="ignore"):
        value = eps * t.scale * (t.count + COORDINATE_OPS * t.rank * t.extent)
    if not np.all(np.isfinite(value)):
        return None
    return float(value) if np.ndim(value) == 0 else np.asarray(value, np.float64)
