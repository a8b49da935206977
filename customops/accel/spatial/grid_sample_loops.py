"""Compiled loops of GridSample (customops.kernels.spatial.grid_sample) on two spatial axes, float32 and
float64.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). The
arithmetic is the numpy path's, operation for operation (coordinates, taps and weights per axis; weights
multiplied y first; products summed in float64 in tap order, y outer and x inner; taps of weight 0
skipped, which the numpy path does by zeroing their terms), so both paths give the same bits.

:func:`grid_sample_2d` takes blocks of output points: the taps of the block's points on both axes
(indices, and weights that are 0 for taps outside the image under zeros padding), then the block's
values in every channel (the C planes of X are read at the same few pixels, which stay in cache from one
point to the next of a smooth grid). A point without a location (a NaN coordinate, or an infinite one
under reflection) is NaN in every channel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

NEAREST, LINEAR, CUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
CUBIC_A = -0.75

HELPERS = ("_nearest", "_linear", "_cubic", "_redo", "_coordinate", "_axis_taps", "_weight", "_reflect_index")
"""Functions the loops call: :func:`customops.accel.jit.get` compiles them (inlined) before the loops."""


BLOCK = 256
"""Output points per unit of :func:`grid_sample_2d`: their tap tables (taps² offsets and weights of 16
bytes per point: 16 KiB for linear, 64 KiB for cubic) stay in cache while the unit goes through the
channels."""


def grid_sample_2d(x: Any, grid: Any, params: Any, out: Any, start: int, stop: int) -> None:
    """Units [start, stop) of ``out`` (N * C * points, flat) from ``x`` (N * C * H * W, flat) and
    ``grid`` (N * points, 2) of (x, y) normalized coordinates, float64. ``params`` is (H, W, mode,
    padding, align_corners, C, points) as int64. A unit is a block of BLOCK output points of one batch
    (the last block of a batch may be shorter), numbered batch after batch.

    The tables hold, per point of the block and tap in the numpy path's order (y outer, x inner), the
    tap's pixel offset in the plane and its weight (0, offset 0, for a tap outside the image under zeros
    padding; NaN for every tap of a point without a location), at ``k * kstep + b * bstep``: tap-major
    for nearest and linear (the channel loop reads 4 tables sequentially), point-major for cubic (16
    taps: 32 streams would be too many)."""
    height, width, mode, padding = params[0], params[1], params[2], params[3]
    align = params[4] != 0
    channels, points = params[5], params[6]
    blocks = (points + BLOCK - 1) // BLOCK
    taps = 1 if mode == NEAREST else (2 if mode == LINEAR else 4)
    iy, ix = np.empty(4, np.intp), np.empty(4, np.intp)
    wy, wx = np.empty(4), np.empty(4)
    stride = taps * taps
    kstep, bstep = (BLOCK, 1) if taps < 4 else (1, stride)
    offsets = np.empty(stride * BLOCK, np.uintp)
    weights = np.empty(stride * BLOCK)
    for unit in range(start, stop):
        n = unit // blocks
        lo = (unit - n * blocks) * BLOCK
        size = min(BLOCK, points - lo)
        for b in range(size):
            q = n * points + lo + b
            y = _coordinate(grid[q, 1], height, padding, align)
            xc = _coordinate(grid[q, 0], width, padding, align)
            if math.isnan(y) or math.isnan(xc):
                for k in range(stride):
                    offsets[k * kstep + b * bstep] = 0
                    weights[k * kstep + b * bstep] = math.nan
                continue
            _axis_taps(y, height, mode, padding, align, iy, wy)
            _axis_taps(xc, width, mode, padding, align, ix, wx)
            for i in range(taps):
                for j in range(taps):
                    at = (i * taps + j) * kstep + b * bstep
                    offsets[at] = np.uintp(iy[i] * width + ix[j])
                    weights[at] = wy[i] * wx[j]
        for c in range(channels):
            plane = x[np.uintp((n * channels + c) * height * width) :]
            target = out[np.uintp((n * channels + c) * points + lo) :]
            if taps == 1:
                _nearest(plane, target, offsets, weights, size)
            elif taps == 2:
                _linear(plane, target, offsets, weights, size)
            else:
                _cubic(plane, target, offsets, weights, size)


def _nearest(plane: Any, target: Any, offsets: Any, weights: Any, size: int) -> None:
    """The pixel itself (-0.0 stays -0.0), 0 outside the image, or NaN without a location."""
    for b in range(size):
        w = weights[b]
        target[b] = plane[offsets[b]] if w == 1.0 else (0.0 if w == 0.0 else math.nan)


def _linear(plane: Any, target: Any, offsets: Any, weights: Any, size: int) -> None:
    """target[b]: the 4 taps of point b summed in float64 in table order, weight 0 included: adding
    0 * x changes nothing for a finite x (the sum starts at +0.0, so never holds -0.0). The block's
    results are checked afterwards, in a loop that vectorizes (v - v is NaN for inf and NaN): a
    non-finite result is redone by :func:`_redo` (a check per sum: 2.7 -> 3.0 ms for 64 channels of 16K
    points); one that is finite in float64 only overflowed float32, as the numpy path's does."""
    # slices: a reshape to (4, BLOCK) made the loop 20% slower
    o0, o1, o2, o3 = offsets[:BLOCK], offsets[BLOCK:], offsets[2 * BLOCK :], offsets[3 * BLOCK :]
    w0, w1, w2, w3 = weights[:BLOCK], weights[BLOCK:], weights[2 * BLOCK :], weights[3 * BLOCK :]
    for b in range(size):
        total = 0.0
        total += plane[o0[b]] * w0[b]
        total += plane[o1[b]] * w1[b]
        total += plane[o2[b]] * w2[b]
        total += plane[o3[b]] * w3[b]
        target[b] = total
    bad = False
    for b in range(size):
        v = target[b]
        bad |= (v - v) != 0.0
    if bad:
        for b in range(size):
            if not math.isfinite(target[b]):
                target[b] = _redo(plane, offsets, weights, b, BLOCK, 1)


def _cubic(plane: Any, target: Any, offsets: Any, weights: Any, size: int) -> None:
    """:func:`_linear` with 16 taps, four at a time, written out, a check per sum, and the taps of a point
    together in the tables (one row per tap: 9.9 -> 11.4 ms for 64 channels of 16K points)."""
    for b in range(np.uintp(size)):
        total = 0.0
        for r in range(np.uintp(4)):
            at = (b * np.uintp(4) + r) * np.uintp(4)
            total += plane[offsets[at]] * weights[at]
            total += plane[offsets[at + np.uintp(1)]] * weights[at + np.uintp(1)]
            total += plane[offsets[at + np.uintp(2)]] * weights[at + np.uintp(2)]
            total += plane[offsets[at + np.uintp(3)]] * weights[at + np.uintp(3)]
        target[b] = total if math.isfinite(total) else _redo(plane, offsets, weights, b, 1, 16)


def _redo(plane: Any, offsets: Any, weights: Any, b: int, kstep: int, bstep: int) -> float:
    """The sum of point b without its taps of weight 0 (which must not touch an infinite or NaN pixel),
    or NaN for a point without a location. Taps of weight 0 add +0.0 to the numpy path's sum, which
    never holds -0.0: leaving them out gives its bits."""
    if math.isnan(weights[b * bstep]):
        return math.nan
    total = 0.0
    for k in range(offsets.size // BLOCK):
        at = k * kstep + b * bstep
        if weights[at] != 0.0:
            total += plane[offsets[at]] * weights[at]
    return total


def _coordinate(u: float, length: int, padding: int, align: bool) -> float:
    """The pixel coordinate of normalized ``u``, brought near the image as the numpy path does
    (customops.kernels.spatial.grid_sample); NaN: no value."""
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
