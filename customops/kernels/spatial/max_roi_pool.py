"""ONNX MaxRoiPool (opsets 1 and 22): max pooling of each region of interest onto a fixed grid of bins.

The spec says only that the op max-pools each RoI into (num_rois, C, pooled_shape[0], pooled_shape[1]);
the rest is the classic ROI pooling of Fast R-CNN (Caffe's ROIPoolingLayer), where the op comes from,
with its arithmetic done exactly (docs/semantics.md, MaxRoiPool):

* a roi is ``[batch_index, x1, y1, x2, y2]``; each coordinate times ``spatial_scale`` is rounded to the
  nearest integer, halves away from zero (C's ``round``), from its exact product;
* the roi spans ``x2 - x1 + 1`` columns and ``y2 - y1 + 1`` rows, at least 1 each (a malformed roi
  becomes one pixel at (x1, y1));
* bin ``p`` of ``P`` over a span of ``L`` starting at ``s`` covers ``[s + floor(p L / P),
  s + ceil((p + 1) L / P))``, in integers, clipped to the image;
* a bin left empty by the clipping is 0; any other bin is the maximum of its window, NaN when the window
  holds a NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from customops.accel import jit, parallel
from customops.accel.spatial import roi_pool_loops
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import int_values

__all__ = ["bin_edges", "bind", "max_roi_pool", "round_half_away"]


def round_half_away(values: np.ndarray) -> np.ndarray:
    """Each float64 value rounded to the nearest integer, halves away from zero, exactly."""
    magnitude = np.abs(values)
    whole = np.floor(magnitude)
    rounded = whole + (magnitude - whole >= 0.5)  # magnitude - whole is exact
    return np.copysign(rounded, values)


MAX_BINS = 1 << 20
"""The most bins along one axis of pooled_shape: the bin tables and their setup grow with it, whatever
the output's other sizes (pooled_shape [2^27, 1] over a 4x4 image took 85 s and 4 GB before)."""


def bin_edges(start: int, span: int, bins: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the ``bins`` bins over ``span`` pixels from ``start``, clipped to [0, limit], as
    int64 arrays: exact integer arithmetic, in int64 where it cannot overflow (``bins`` <= MAX_BINS)."""
    if abs(start) < 1 << 40 and span < 1 << 40:
        p = np.arange(bins, dtype=np.int64)
        lo = start + (p * span) // bins
        hi = start - ((-(p + 1) * span) // bins)  # ceil((p + 1) * span / bins)
        return np.clip(lo, 0, limit), np.clip(hi, 0, limit)
    # a huge roi (Python integers): only bins [first, stop) meet (0, limit), a few at most; those before
    # end at or below 0 and those after start at or past limit
    first = min(bins, max(0, (-start * bins) // span))
    stop = min(bins, max(first, -((start - limit) * bins // span)))
    starts = np.zeros(bins, dtype=np.int64)
    ends = np.zeros(bins, dtype=np.int64)
    starts[stop:] = ends[stop:] = limit
    for p in range(first, stop):
        starts[p] = min(max(start + (p * span) // bins, 0), limit)
        ends[p] = min(max(start - ((-(p + 1) * span) // bins), 0), limit)
    return starts, ends


def max_roi_pool(
    X: Any, rois: Any, *, pooled_shape: Sequence[int] | None = None, spatial_scale: float = 1.0
) -> np.ndarray:
    """Max-pool each roi of ``rois`` (num_rois, 5) on ``X`` (N, C, H, W) into pooled_shape bins: an array
    (num_rois, C, pooled_shape[0], pooled_shape[1]) of X's dtype. Raises KernelError for an invalid
    configuration: shapes, pooled_shape entries < 1 or > MAX_BINS, a spatial_scale that is not positive and finite,
    a batch index that is not an integer in [0, N), or a non-finite roi coordinate."""
    x = np.asarray(X)
    r = np.asarray(rois)
    pooled = _check(x, r, pooled_shape, spatial_scale)
    boxes = _boxes(r, float(spatial_scale), x.shape[0])
    out_shape = (r.shape[0], x.shape[1], *pooled)
    limits.check_output(out_shape, x.dtype)
    loop = jit.get("max_roi_pool_last", roi_pool_loops) if x.dtype in jit.FLOATS else None
    out = np.zeros(out_shape, dtype=x.dtype) if loop is None else np.empty(out_shape, dtype=x.dtype)
    if out.size == 0:
        return out
    batch, rows, cols = _tables(boxes, pooled, x.shape[2], x.shape[3])
    if loop is None:
        _pool_numpy(x, out, batch, rows, cols)
        return out
    # channels last: the loop's inner maximum runs over contiguous channels (3x faster than per plane)
    last = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    spans_h = (rows[:, :, 1] - rows[:, :, 0]).sum(axis=1)
    spans_w = (cols[:, :, 1] - cols[:, :, 0]).sum(axis=1)
    work = (int((spans_h * spans_w).sum()) + pooled[0] * pooled[1]) * x.shape[1]
    parallel.run(loop, r.shape[0], work, last, out, batch, rows, cols)
    return out


def _tables(
    boxes: list[tuple[int, int, int, int, int]], pooled: tuple[int, int], height: int, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(batch (R), rows (R, PH, 2), cols (R, PW, 2)): each roi's image and its bins' clipped windows."""
    batch = np.array([b for b, *_ in boxes], dtype=np.intp)
    rows = _edges([y1 for _, _, y1, _, _ in boxes], [h for *_, h in boxes], pooled[0], height)
    cols = _edges([x1 for _, x1, _, _, _ in boxes], [w for _, _, _, w, _ in boxes], pooled[1], width)
    return batch, rows, cols


def _edges(starts: list[int], spans: list[int], bins: int, limit: int) -> np.ndarray:
    """(R, bins, 2): :func:`bin_edges` of every roi along one axis, all rois at once in int64 where the
    products cannot overflow (|start|, span < 2^40, bins <= MAX_BINS), one by one otherwise."""
    out = np.zeros((len(starts), bins, 2), dtype=np.intp)
    safe = [abs(s) < 1 << 40 and n < 1 << 40 for s, n in zip(starts, spans, strict=True)]
    some = [i for i, ok in enumerate(safe) if ok]
    if some:
        s = np.array([starts[i] for i in some], dtype=np.int64)[:, None]
        n = np.array([spans[i] for i in some], dtype=np.int64)[:, None]
        p = np.arange(bins, dtype=np.int64)
        out[some, :, 0] = np.clip(s + (p * n) // bins, 0, limit)
        out[some, :, 1] = np.clip(s - ((-(p + 1) * n) // bins), 0, limit)
    for i, ok in enumerate(safe):
        if not ok:
            out[i, :, 0], out[i, :, 1] = bin_edges(starts[i], spans[i], bins, limit)
    return out


def _pool_numpy(
    x: np.ndarray, out: np.ndarray, batch: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> None:
    """The numpy path (no numba): per roi, the maxima of the row bands, then of their column bands (one
    ``np.maximum.reduceat`` over every non-empty column bin), on channels-last images (out is zero where
    a window is empty)."""
    last = np.ascontiguousarray(x.transpose(0, 2, 3, 1))  # N, H, W, C
    for r in range(out.shape[0]):
        img = last[batch[r]]
        full = cols[r, :, 1] > cols[r, :, 0]
        if not full.any():
            continue
        # [start, end) of each non-empty column bin, in a row: reduceat's even results are their maxima
        edges = cols[r, full].ravel()
        for i, (y0, y1) in enumerate(rows[r].tolist()):
            if y1 <= y0:
                continue
            band = img[y0:y1].max(axis=0)  # W, C
            band = np.concatenate([band, band[:1]])  # an end of W is an index reduceat accepts
            out[r, :, i][:, full] = np.maximum.reduceat(band, edges, axis=0)[::2].T


def _check(x: np.ndarray, r: np.ndarray, pooled_shape: Any, spatial_scale: Any) -> tuple[int, int]:
    """pooled_shape as (height, width); raises KernelError for an invalid configuration."""
    if x.dtype.kind != "f" or r.dtype.kind != "f":
        raise KernelError(f"X and rois must be floating-point tensors, got {x.dtype} and {r.dtype}")
    if x.ndim != 4:
        raise KernelError(f"X must be 4-D (N, C, H, W), got shape {x.shape!r}")
    if r.ndim != 2 or r.shape[1] != 5:
        raise KernelError(
            f"rois must have shape (num_rois, 5) of [batch_index, x1, y1, x2, y2], got {r.shape!r}"
        )
    if pooled_shape is None:
        raise KernelError("pooled_shape is required: two positive integers (height, width)")
    pooled = int_values(pooled_shape, "pooled_shape")
    if len(pooled) != 2 or min(pooled) < 1:
        raise KernelError(f"pooled_shape {pooled!r} must be two positive integers (height, width)")
    if max(pooled) > MAX_BINS:
        raise KernelError(
            f"pooled_shape {pooled!r} has more than the {MAX_BINS} bins per axis this kernel pools"
        )
    scale = float(spatial_scale)
    if not (np.isfinite(scale) and scale > 0):
        raise KernelError(f"spatial_scale {scale!r} must be positive and finite")
    return pooled[0], pooled[1]


def _round_exact(value: float, scale: float) -> int:
    """``value * scale`` rounded to the nearest integer, halves away from zero, in exact rationals."""
    product = Fraction(value) * Fraction(scale)
    rounded = math.floor(abs(product) + Fraction(1, 2))
    return rounded if product >= 0 else -rounded


def _boxes(r: np.ndarray, scale: float, batch_size: int) -> list[tuple[int, int, int, int, int]]:
    """(batch index, x1, y1, width, height) of each roi in pixels of X; raises KernelError for a batch
    index that is not an integer in [0, batch_size) or a coordinate that is not finite."""
    values = r.astype(np.float64)
    if not np.isfinite(values[:, 1:]).all():
        bad = int(np.flatnonzero(~np.isfinite(values[:, 1:]).all(axis=1))[0])
        raise KernelError(f"roi {bad} {values[bad].tolist()!r} has a coordinate that is not finite")
    batch = values[:, 0]
    wrong = ~((batch == np.floor(batch)) & (batch >= 0) & (batch < batch_size))
    if wrong.any():
        bad = int(np.flatnonzero(wrong)[0])
        raise KernelError(
            f"roi {bad} has batch index {float(batch[bad])!r}; it must be an integer in [0, {batch_size})"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        corners = round_half_away(values[:, 1:] * scale)  # float32 * float32 is exact in float64
    boxes = []
    for i, (b, row) in enumerate(zip(batch.tolist(), corners.tolist(), strict=True)):
        if not np.isfinite(row).all():  # a product past float64's range (double rois): exactly
            row = [_round_exact(v, scale) for v in values[i, 1:].tolist()]
        x1, y1, x2, y2 = (int(v) for v in row)
        boxes.append((int(b), x1, y1, max(x2 - x1 + 1, 1), max(y2 - y1 + 1, 1)))
    return boxes


def bind(
    pooled_shape: Sequence[int] | None = None, spatial_scale: float = 1.0
) -> Callable[[Any, Any], np.ndarray]:
    """``max_roi_pool`` with its attributes fixed (the ONNX Runtime hook calls it once per node)."""

    def bound(X: Any, rois: Any) -> np.ndarray:
        return max_roi_pool(X, rois, pooled_shape=pooled_shape, spatial_scale=spatial_scale)

    return bound
