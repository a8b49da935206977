"""Compiled loops of GridSample (customops.kernels.grid_sample) on two spatial axes, float32 and float64.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). The
arithmetic is the numpy path's, operation for operation (coordinates, taps and weights per axis; weights
multiplied y first; products summed in float64 in tap order, y outer and x inner; taps of weight 0
skipped, which the numpy path does by zeroing their terms), so both paths give the same bits.

:func:`grid_sample_2d` takes one output point after the other: its taps on both axes (indices, and
weights that are 0 for taps outside the image under zeros padding), then its value in every channel
(the C planes of X are read at the same few pixels, which stay in cache from one point to the next of
a smooth grid). A point without a location (a NaN coordinate, or an infinite one under reflection) is
NaN in every channel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

NEAREST, LINEAR, CUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
CUBIC_A = -0.75

HELPERS = ("_channel", "_coordinate", "_axis_taps", "_weight", "_reflect_index")
"""Functions the loops call: :func:`customops.accel.jit.get` compiles them (inlined) before the loops."""


BLOCK = 256
"""Output points per unit of :func:`grid_sample_2d`: their tap tables (taps² entries of 16 bytes per
point, packed: 16 KiB for linear, 64 KiB for cubic) stay in cache while the unit goes through the
channels."""


def grid_sample_2d(x: Any, grid: Any, params: Any, out: Any, start: int, stop: int) -> None:
    """Units [start, stop) of ``out`` (N * C * points, flat) from ``x`` (N * C * H * W, flat) and
    ``grid`` (N * points, 2) of (x, y) normalized coordinates, float64. ``params`` is (H, W, mode,
    padding, align_corners, C, points) as int64. A unit is a block of BLOCK output points of one batch
    (the last block of a batch may be shorter), numbered batch after batch.

    Per point, the tables get taps² entries at b * taps²: pixel offsets in the plane and weights, those
    of nonzero weight first (y outer, x inner: the numpy path's order), then zeros; ``counts[b]`` is how
    many have a nonzero weight, or -1 when the point has no location (its weights are then NaN, so that
    the fixed-count sum is non-finite). This body is written out here, not in a helper: numba's inlining
    of a helper taking these arrays made the tables take twice as long."""
    height, width, mode, padding = params[0], params[1], params[2], params[3]
    align = params[4] != 0
    channels, points = params[5], params[6]
    blocks = (points + BLOCK - 1) // BLOCK
    taps = 1 if mode == NEAREST else (2 if mode == LINEAR else 4)
    stride = taps * taps
    iy, ix = np.empty(4, np.intp), np.empty(4, np.intp)
    wy, wx = np.empty(4), np.empty(4)
    offsets = np.empty(BLOCK * stride, np.uintp)
    weights = np.empty(BLOCK * stride)
    counts = np.empty(BLOCK, np.intp)
    for unit in range(start, stop):
        n = unit // blocks
        lo = (unit - n * blocks) * BLOCK
        size = min(BLOCK, points - lo)
        for b in range(size):
            q = n * points + lo + b
            at = b * stride
            y = _coordinate(grid[q, 1], height, padding, align)
            xc = _coordinate(grid[q, 0], width, padding, align)
            count = -1
            if not (math.isnan(y) or math.isnan(xc)):
                _axis_taps(y, height, mode, padding, align, iy, wy)
                _axis_taps(xc, width, mode, padding, align, ix, wx)
                count = 0
                for i in range(taps):
                    for j in range(taps):
                        w = wy[i] * wx[j]
                        if w != 0.0:
                            offsets[at + count] = np.uintp(iy[i] * width + ix[j])
                            weights[at + count] = w
                            count += 1
            for k in range(max(count, 0), stride):
                offsets[at + k] = 0
                weights[at + k] = 0.0 if count >= 0 else math.nan
            counts[b] = count
        for c in range(channels):
            plane = x[np.uintp((n * channels + c) * height * width) :]
            target = out[np.uintp((n * channels + c) * points + lo) :]
            _channel(plane, target, offsets, weights, counts, size, stride)


def _channel(
    plane: Any, target: Any, offsets: Any, weights: Any, counts: Any, size: int, stride: int
) -> None:
    """target[b] for the ``size`` points of a block in one channel's ``plane``, from the tables.

    Every tap is summed, weight 0 included: adding 0 * x changes nothing for a finite x (the sum starts at
    +0.0, so never holds -0.0); a non-finite sum is redone without the taps of weight 0. The taps go four
    at a time, written out (linear: 4.0 -> 2.9 ms for 64 channels of 16K points), in table order."""
    if stride == 1:
        for b in range(size):  # nearest: the pixel itself (-0.0 stays -0.0), 0 outside, or NaN
            target[b] = plane[offsets[b]] if counts[b] > 0 else (0.0 if counts[b] == 0 else math.nan)
        return
    rows = np.uintp(stride // 4)
    one, two, three = np.uintp(1), np.uintp(2), np.uintp(3)
    for b in range(np.uintp(size)):
        total = 0.0
        for r in range(rows):
            at = (b * rows + r) * np.uintp(4)
            total += plane[offsets[at]] * weights[at]
            total += plane[offsets[at + one]] * weights[at + one]
            total += plane[offsets[at + two]] * weights[at + two]
            total += plane[offsets[at + three]] * weights[at + three]
        if not math.isfinite(total):
            total = math.nan if counts[b] < 0 else 0.0
            first = np.intp(b) * stride
            for k in range(first, first + max(counts[b], 0)):
                total += plane[offsets[k]] * weights[k]
        target[b] = total


def _coordinate(u: float, length: int, padding: int, align: bool) -> float:
    """The pixel coordinate of normalized ``u``, brought near the image as the numpy path does
    (customops.kernels.grid_sample); NaN: no value."""
    if padding == REFLECTION:
        u = np.fmod(u, 4.0) if math.isfinite(u) else math.nan
    if not align:
        x = ((u + 1.0) * length - 1.0) / 2.0
    elif length > 1:
        x = (u + 1.0) / 2.0 * (length - 1)
    else:
        x = u if math.isnan(u) else 0.0  # the one pixel's centre
    if padding == BORDER:
        x = -2.0 if x < -2.0 else (length + 1.0 if x > length + 1.0 else x)
    elif padding == ZEROS:
        x = -3.5 if x < -3.5 else (length + 2.5 if x > length + 2.5 else x)
    return x


def _axis_taps(x: float, length: int, mode: int, padding: int, align: bool, idx: Any, weights: Any) -> None:
    """The taps of pixel coordinate ``x`` on an axis of ``length``: pixels into ``idx``, weights into
    ``weights`` (0 for a tap outside the image under zeros padding)."""
    first = np.floor(x)
    t = x - first
    if mode == NEAREST and (t > 0.5 or (t == 0.5 and first % 2.0 != 0.0)):
        first += 1.0
    start = np.intp(first) - (1 if mode == CUBIC else 0)
    for k in range(1 if mode == NEAREST else (2 if mode == LINEAR else 4)):
        w = _weight(mode, k, t)
        i = start + k
        if i < 0 or i >= length:
            if padding == ZEROS:
                w, i = 0.0, 0
            elif padding == BORDER:
                i = 0 if i < 0 else length - 1
            else:
                i = _reflect_index(i, length, align)
        idx[k] = i
        weights[k] = w


def _weight(mode: int, k: int, t: float) -> float:
    """Weight of tap k at fraction t (nearest: 1; linear: 1 - t, t; cubic: Keys at 1 + t, t, 1 - t, 2 - t)."""
    if mode == NEAREST:
        return 1.0
    if mode == LINEAR:
        return 1.0 - t if k == 0 else t
    a = CUBIC_A
    if k == 1 or k == 2:
        d = t if k == 1 else 1.0 - t
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    d = 1.0 + t if k == 0 else 2.0 - t
    return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a


def _reflect_index(i: int, length: int, align: bool) -> int:
    """The pixel a tap outside [0, length) reads under reflection."""
    if align:
        period = 2 * (length - 1)
        if period == 0:
            return 0
        m = i % period
        return period - m if m >= length else m
    period = 2 * length
    m = i % period
    return period - 1 - m if m >= length else m
