"""Compiled loops of RoiAlign (customops.kernels.spatial.roi_align): every bin of every ROI and channel.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``; the
helpers first, so that the main loop calls their compiled forms).
The kernel computes the sample points of each ROI along each axis (two neighbouring pixels and their
weights per point, 0 for points outside the map) and passes them as flat tables. A term is
``w_y * w_x * pixel``, and 0 where that weight is 0 whatever the pixel holds; sums are float64 and each
bin is stored once, rounding to the output's type.

avg is separable: each row of the ROI's band is first reduced along x for every output column, then
those rows are combined along y, about half the work of forming every corner term; where a ROI's bins
are densely sampled (an adaptive grid), the x weights are first summed per pixel (:func:`_dense`), so
that the x pass reads contiguous pixels once. max takes two steps too, with maxima over the points'
own terms (see :func:`_max_channel`). Where the ROI's band of a channel holds inf or NaN, the loops
test every weight (the quick ones multiply without looking).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_DENSE_LIMIT = 1 << 22
"""The largest table of summed x weights (output width x map width) avg mode keeps; wider maps take
the point-by-point x pass."""

HELPERS = ("_band_finite", "_dense", "_x_dense", "_x_sparse", "_avg_channel", "_max_channel")
OUT_OF_LINE = HELPERS
"""Every helper is compiled as a function of its own: the channel loops are large, and numba inlines by
copying a helper's IR into each call site."""


def roi_align_bins(
    x: Any,
    out: Any,
    batch: Any,
    ytab: Any,
    yw: Any,
    xtab: Any,
    xw: Any,
    meta: Any,
    use_max: bool,
    finite: bool,
    start: int,
    stop: int,
) -> None:
    """ROIs [start, stop) of out (R, C, oh, ow) from x (N, C, H, W).

    ``meta[r]`` is (y offset, y grid, x offset, x grid, state, first row, last row, first column, last
    column) of ROI r: its y samples are rows ``ytab[offset : offset + oh * grid]`` (low, high pixel)
    with weights ``yw[...]`` (low, high), bin by bin; x alike; the pixels with a non-zero weight lie in
    the band of rows and columns given. ``state`` 1 fills the ROI's outputs with NaN (a non-finite
    coordinate); an empty grid fills them with 0. ``finite`` says that x holds no inf or NaN.
    """
    channels = out.shape[1]
    oh = out.shape[2]
    ow = out.shape[3]
    rows = np.empty((max(1, x.shape[2]), max(1, ow)))
    sums = np.empty(max(1, ow))
    dense_ok = ow * x.shape[3] <= _DENSE_LIMIT
    ax = np.empty((ow, x.shape[3]) if dense_ok else (1, 1))
    xspan = np.empty((max(1, ow), 2), dtype=np.int64)
    for r in range(start, stop):
        gy = meta[r, 1]
        gx = meta[r, 3]
        if meta[r, 4] != 0 or gy == 0 or gx == 0:
            fill = np.nan if meta[r, 4] != 0 else 0.0
            for c in range(channels):
                for p in range(oh):
                    for q in range(ow):
                        out[r, c, p, q] = fill
            continue
        ys = ytab[meta[r, 0] : meta[r, 0] + oh * gy]
        wys = yw[meta[r, 0] : meta[r, 0] + oh * gy]
        xs = xtab[meta[r, 2] : meta[r, 2] + ow * gx]
        wxs = xw[meta[r, 2] : meta[r, 2] + ow * gx]
        use = dense_ok and not use_max and _dense(xs, wxs, gx, ow, ax, xspan)
        dense = (use, ax, xspan)
        m = meta[r]
        for c in range(channels):
            img = x[batch[r], c]
            careful = not finite and not _band_finite(img, m[5], m[6], m[7], m[8])
            if use_max:
                _max_channel(img, out[r, c], ys, wys, gy, xs, wxs, gx, m[5], m[6], rows, careful)
            else:
                _avg_channel(img, out[r, c], ys, wys, gy, xs, wxs, gx, dense, m[5], m[6], rows, sums, careful)


def _band_finite(img: Any, r0: int, r1: int, c0: int, c1: int) -> bool:
    """Whether img[r0 : r1 + 1, c0 : c1 + 1] holds only finite values (True for an empty band)."""
    for i in range(r0, r1 + 1):
        for j in range(c0, c1 + 1):
            v = img[i, j]
            if v - v != 0.0:
                return False
    return True


def _dense(tab: Any, w: Any, grid: int, bins: int, mat: Any, span: Any) -> bool:
    """The summed weight each bin gives each pixel along one axis, ``mat[q, lo : hi + 1]`` for bin q
    with ``span[q]`` = (lo, hi), the pixels its points refer to (0 where none lands), when those
    ranges hold no more pixels than the points have corners (else False, and ``mat`` is not set)."""
    total = 0
    for q in range(bins):
        lo = tab[q * grid, 0]
        hi = tab[q * grid, 1]
        for j in range(q * grid, (q + 1) * grid):
            lo = min(lo, tab[j, 0])
            hi = max(hi, tab[j, 1])
        span[q, 0] = lo
        span[q, 1] = hi
        total += hi - lo + 1
    if total > 2 * bins * grid:
        return False
    for q in range(bins):
        for k in range(span[q, 0], span[q, 1] + 1):
            mat[q, k] = 0.0
        for j in range(q * grid, (q + 1) * grid):
            mat[q, tab[j, 0]] += w[j, 0]
            mat[q, tab[j, 1]] += w[j, 1]
    return True


def _x_dense(img: Any, rows: Any, r0: int, r1: int, ax: Any, xspan: Any, ow: int, careful: bool) -> None:
    """``rows[i - r0, q]`` for rows r0..r1: the sum over bin q's pixels (contiguous) of its summed
    weight (:func:`_dense`) times the pixel, two rows at a time (independent sums); ``careful``
    leaves out pixels of weight 0."""
    i = r0
    while i <= r1:
        pair = i + 1 <= r1
        la = img[i]
        lb = img[i + 1] if pair else la
        for q in range(ow):
            acc_a = 0.0
            acc_b = 0.0
            weights = ax[q]
            for k in range(xspan[q, 0], xspan[q, 1] + 1):
                wk = weights[k]
                if careful and wk == 0.0:
                    continue
                acc_a += wk * la[k]
                acc_b += wk * lb[k]
            rows[i - r0, q] = acc_a
            if pair:
                rows[i + 1 - r0, q] = acc_b
        i += 2


def _x_sparse(
    img: Any, rows: Any, r0: int, r1: int, xs: Any, wxs: Any, gx: int, ow: int, careful: bool
) -> None:
    """``rows[i - r0, q]`` for rows r0..r1: the sum over bin q's points of their two weighted pixels
    (output columns innermost: independent sums); ``careful`` leaves out terms of weight 0."""
    for i in range(r0, r1 + 1):
        line = img[i]
        acc = rows[i - r0]
        for q in range(ow):
            acc[q] = 0.0
        for k in range(gx):
            for q in range(ow):
                j = q * gx + k
                wa = wxs[j, 0]
                wb = wxs[j, 1]
                if careful:
                    if wa != 0.0:
                        acc[q] += wa * line[xs[j, 0]]
                    if wb != 0.0:
                        acc[q] += wb * line[xs[j, 1]]
                else:
                    acc[q] += wa * line[xs[j, 0]] + wb * line[xs[j, 1]]


def _avg_channel(
    img: Any,
    out: Any,
    ys: Any,
    wys: Any,
    gy: int,
    xs: Any,
    wxs: Any,
    gx: int,
    dense: Any,
    r0: int,
    r1: int,
    rows: Any,
    sums: Any,
    careful: bool,
) -> None:
    """out (oh, ow): the mean of each bin's samples, x first over rows r0..r1 into ``rows``, then y
    into ``sums`` (float64 scratch of ow entries; output columns innermost: independent sums). ``dense``
    is (use it, ax, xspan): the x pass from :func:`_dense`'s summed weights when set."""
    oh = out.shape[0]
    ow = out.shape[1]
    use, ax, xspan = dense
    if use:
        _x_dense(img, rows, r0, r1, ax, xspan, ow, careful)
    else:
        _x_sparse(img, rows, r0, r1, xs, wxs, gx, ow, careful)
    count = float(gy * gx)
    res = sums
    for p in range(oh):
        for q in range(ow):
            res[q] = 0.0
        for i in range(p * gy, (p + 1) * gy):
            wa = wys[i, 0]
            wb = wys[i, 1]
            ra = rows[ys[i, 0] - r0]
            rb = rows[ys[i, 1] - r0]
            for q in range(ow):
                if not careful:
                    res[q] += wa * ra[q] + wb * rb[q]
                    continue
                if wa != 0.0:
                    res[q] += wa * ra[q]
                if wb != 0.0:
                    res[q] += wb * rb[q]
        for q in range(ow):
            out[p, q] = res[q] / count


def _max_channel(
    img: Any,
    out: Any,
    ys: Any,
    wys: Any,
    gy: int,
    xs: Any,
    wxs: Any,
    gx: int,
    r0: int,
    r1: int,
    rows: Any,
    careful: bool,
) -> None:
    """out (oh, ow): the largest weighted corner term w_y * (w_x * v) of each bin (NaN when one is NaN;
    +0 for a zero maximum: the bits do not depend on the order of the terms). Weights are
    separable and >= 0, so max(w_y * w_x * v) over a bin is max over its y points of w_y * (the largest
    w_x * v over its x points) — exact, as multiplying by w_y > 0 keeps the order; ``rows`` holds the
    latter for rows r0..r1 (output columns innermost: independent maxima). Longer than 60 lines: the
    two passes, each with its careful branch, in one compiled function (a call per row would cost more
    than the row)."""

    oh = out.shape[0]
    ow = out.shape[1]
    for i in range(r0, r1 + 1):
        line = img[i]
        top = rows[i - r0]
        for q in range(ow):
            top[q] = -np.inf
        for k in range(gx):
            for q in range(ow):
                j = q * gx + k
                ta = wxs[j, 0] * line[xs[j, 0]]
                tb = wxs[j, 1] * line[xs[j, 1]]
                if careful:
                    ta = ta if wxs[j, 0] != 0.0 else 0.0
                    tb = tb if wxs[j, 1] != 0.0 else 0.0
                    if (ta > top[q] or ta != ta) and top[q] == top[q]:
                        top[q] = ta
                    if (tb > top[q] or tb != tb) and top[q] == top[q]:
                        top[q] = tb
                else:
                    m = ta if ta > tb else tb
                    t = top[q]
                    top[q] = m if m > t else t
    for p in range(oh):
        res = out[p]
        for q in range(ow):
            res[q] = -np.inf
        for i in range(p * gy, (p + 1) * gy):
            wa = wys[i, 0]
            wb = wys[i, 1]
            ra = rows[ys[i, 0] - r0]
            rb = rows[ys[i, 1] - r0]
            for q in range(ow):
                if careful:
                    ta = wa * ra[q] if wa != 0.0 else 0.0
                    tb = wb * rb[q] if wb != 0.0 else 0.0
                    if (ta > res[q] or ta != ta) and res[q] == res[q]:
                        res[q] = ta
                    if (tb > res[q] or tb != tb) and res[q] == res[q]:
                        res[q] = tb
                else:
                    ta = wa * ra[q]
                    tb = wb * rb[q]
                    m = ta if ta > tb else tb
                    t = res[q]
                    res[q] = m if m > t else t
        for q in range(ow):
            res[q] = res[q] + 0.0  # a zero maximum is +0, whichever of +0 and -0 came first
