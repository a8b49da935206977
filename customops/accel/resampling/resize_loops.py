"""Compiled loops of Resize (customops.kernels.resampling.resize): separable filter passes of the last
two axes, of the last axis and of a middle axis (float32 and float64), and nearest gathers of the last
two axes.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). Callers
pass every output buffer; the only allocations here are scratch rows, bounded by the caller (a few
hundred KiB), which ``tracemalloc`` does not see.

Arithmetic: interpolation accumulates in float64, tap by tap in table order, and rounds once when it
stores a float32 result; no ``fastmath`` (no reassociation, no FMA contraction), so results do not
depend on vector width.

Threads: every loop is serial and compiled with ``nogil=True``; the large ones take the range of units
they compute as their last two arguments (output rows, blocks of rows or planes, numbered across planes
so that a range is one contiguous part of the output), and :mod:`customops.accel.parallel` runs the
parts on several threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

HELPERS = ("_row_finite", "_h_row", "_h_at", "_h_row_x2", "_h_row_down", "_v_row", "_split", "_flag_rows")
"""Functions the loops call: :func:`customops.accel.jit.get` compiles them before the loops, inlined
(per-row calls passing a dozen array views cost ~2 us of the ~10 us of a tiny Resize) but for those of
:data:`OUT_OF_LINE`."""

OUT_OF_LINE = ("_v_row",)
"""Helpers compiled once as functions of their own instead of inlined at each call. numba inlines by
copying and retyping the helper's IR at every call site, and _v_row has two sites in the columns-first and
middle-axis loops: a machine's first compilation of the loop of the README's first command
(resize_columns_first) took 2.9 s of CPU with it inlined, 2.1 s without (resize_middle 1.5 -> 1.1 s,
resize_rows_first 2.7 -> 2.5 s), while that command's downsampling Resize in a session ran alike (24.0-25.0
against 24.2-24.9 us a run; all helpers out of line: 25.8-26.6 us)."""

# ---------------------------------------------------------------------------------------------
# Resize: separable filter passes. Index tables are unsigned (np.uintp): numba then indexes without
# the negative-index wrap-around check, which otherwise keeps the gathers from running fast. Tables per axis: full (L, T) indices and weights (zero weights
# included, fixed tap count), and compacted ones (the nonzero taps first, in table order, with their
# count): taps with weight 0 must not touch a non-finite input, so rows that hold inf or NaN take the
# compacted loop; finite rows take the fixed-count loop (adding 0 * x changes nothing there).
# Passes down the columns combine whole rows, so every element of a row they read reaches the result:
# they run the fixed-count loop first and check the result row, which is non-finite exactly when a row
# read holds inf or NaN (or the float64 sum overflowed); only then are the rows read checked and the
# output row redone. The result is the same as checking every input row first, without that pass.


def _row_finite(row: Any) -> bool:
    """Whether every element of row is finite. v - v is +0 for a finite v and NaN for inf or NaN; the
    comparison vectorizes where math.isfinite did not (2-3x faster on long rows)."""
    bad = False
    for i in range(row.shape[0]):
        v = row[i]
        bad |= (v - v) != 0.0
    return not bad


def _h_row(
    src: Any, dst: Any, acc: Any, idx: Any, w: Any, idx_c: Any, w_c: Any, n_c: Any, finite: bool
) -> None:
    """dst[j] = sum_t w[t, j] * src[idx[t, j]], summed in float64 in tap order and stored once (dst may
    be float32); ``acc`` is a float64 scratch row. Tables are (taps, L)."""
    taps, length = idx.shape
    if not finite:
        for j in range(length):
            n = np.intp(n_c[j])
            total = 0.0
            if n:
                total = w_c[0, j] * np.float64(src[idx_c[0, j]])
                for t in range(1, n):
                    total += w_c[t, j] * np.float64(src[idx_c[t, j]])
            dst[j] = total
        return
    i0 = idx[0]
    w0 = w[0]
    if taps == 1:
        for j in range(length):
            dst[j] = w0[j] * np.float64(src[i0[j]])
        return
    if taps == 2:
        i1 = idx[1]
        w1 = w[1]
        for j in range(length):
            dst[j] = w0[j] * np.float64(src[i0[j]]) + w1[j] * np.float64(src[i1[j]])
        return
    # tap by tap over the whole row: independent sums, each in tap order
    for j in range(length):
        acc[j] = w0[j] * np.float64(src[i0[j]])
    for t in range(1, taps - 1):
        it = idx[t]
        wt = w[t]
        for j in range(length):
            acc[j] += wt[j] * np.float64(src[it[j]])
    it = idx[taps - 1]
    wt = w[taps - 1]
    for j in range(length):
        dst[j] = acc[j] + wt[j] * np.float64(src[it[j]])


def _h_at(src: Any, idx: Any, w: Any, j: int) -> float:
    """Output j of _h_row's sums for a finite row, through the (taps, L) tables: in tap order, in
    float64."""
    total = w[0, j] * np.float64(src[idx[0, j]])
    for t in range(1, idx.shape[0]):
        total += w[t, j] * np.float64(src[idx[t, j]])
    return total


def _h_row_x2(src: Any, dst: Any, idx: Any, w: Any, lo: int, hi: int) -> None:
    """_h_row's sums for a finite row (float64 dst) whose outputs 2m and 2m + 1, for every m in [lo, hi),
    read the same taps relative to m with the same weights (a last axis upsampled x2: the pairs of the
    run are computed together and stored as one complex128, which vectorizes where the table gathers do
    not); two or four taps, hi > lo. The other outputs go through the tables. Same operations, same
    order."""
    taps, length = idx.shape
    for j in range(length - 2 * (hi - lo)):
        if j >= 2 * lo:  # past the run's pairs, which are done below
            j += 2 * (hi - lo)
        dst[j] = _h_at(src, idx, w, j)
    # the run, through slices that start at each tap's first element: indices from 0 up, which numba
    # does not check for negative values, so the loop vectorizes
    pairs = dst.view(np.complex128)[lo:hi]
    a = 2 * lo
    b = a + 1
    n = hi - lo
    e0 = src[np.intp(idx[0, a]) :]
    o0 = src[np.intp(idx[0, b]) :]
    e1 = src[np.intp(idx[1, a]) :]
    o1 = src[np.intp(idx[1, b]) :]
    we0 = w[0, a]
    wo0 = w[0, b]
    we1 = w[1, a]
    wo1 = w[1, b]
    if taps == 2:
        for i in range(n):
            even = we0 * np.float64(e0[i]) + we1 * np.float64(e1[i])
            odd = wo0 * np.float64(o0[i]) + wo1 * np.float64(o1[i])
            pairs[i] = complex(even, odd)
        return
    e2 = src[np.intp(idx[2, a]) :]
    o2 = src[np.intp(idx[2, b]) :]
    e3 = src[np.intp(idx[3, a]) :]
    o3 = src[np.intp(idx[3, b]) :]
    we2 = w[2, a]
    wo2 = w[2, b]
    we3 = w[3, a]
    wo3 = w[3, b]
    for i in range(n):
        even = we0 * np.float64(e0[i]) + we1 * np.float64(e1[i])
        even = even + we2 * np.float64(e2[i])
        even = even + we3 * np.float64(e3[i])
        odd = wo0 * np.float64(o0[i]) + wo1 * np.float64(o1[i])
        odd = odd + wo2 * np.float64(o2[i])
        odd = odd + wo3 * np.float64(o3[i])
        pairs[i] = complex(even, odd)


def _h_row_down(src: Any, dst: Any, acc: Any, phases: Any, idx: Any, w: Any, run: Any) -> None:
    """_h_row's sums for a finite row whose outputs j in [lo, hi) read idx[t, j] = idx[t, lo] + k * (j -
    lo) with the same weights, run = (k, lo, hi), hi > lo (a last axis downsampled by k): the row is
    split into its k phases (phases[q, i] = src[k * i + q]), and each tap then reads one phase
    contiguously over the run, which vectorizes where the table gathers do not; at least two taps
    (_down_run asks for 2k). The other outputs go through the tables. Same operations, same order;
    ``acc`` a float64 scratch row."""
    taps, length = idx.shape
    k = run[0]
    lo = run[1]
    hi = run[2]
    for j in range(length - (hi - lo)):
        if j >= lo:  # past the run, which is done below
            j += hi - lo
        dst[j] = _h_at(src, idx, w, j)
    width = src.shape[0]
    for q in range(k):
        phase = phases[q]
        for i in range((width - q + k - 1) // k):
            phase[i] = src[k * i + q]
    n = hi - lo
    first = np.intp(idx[0, lo])
    part = phases[first % k, first // k :]
    c = w[0, lo]
    out = dst[lo:hi]
    for i in range(n):
        acc[i] = c * part[i]
    for t in range(1, taps - 1):
        first = np.intp(idx[t, lo])
        part = phases[first % k, first // k :]
        c = w[t, lo]
        for i in range(n):
            acc[i] += c * part[i]
    first = np.intp(idx[taps - 1, lo])
    part = phases[first % k, first // k :]
    c = w[taps - 1, lo]
    for i in range(n):
        out[i] = acc[i] + c * part[i]


def _v_row(
    rows: Any,
    lo: int,
    o: int,
    dst: Any,
    acc: Any,
    idx: Any,
    w: Any,
    idx_c: Any,
    w_c: Any,
    n_c: Any,
    finite: Any,
) -> None:
    """dst[:] = sum_t w[t, o] * rows[idx[t, o] - lo, :], summed in float64 in tap order and stored once
    (dst may be float32); ``acc`` is a float64 scratch row."""
    taps = idx.shape[0]
    ok = True
    for t in range(taps):
        ok &= finite[np.intp(idx[t, o]) - lo]
    width = dst.shape[0]
    if ok:
        n = taps
        ti = idx
        tw = w
    else:
        n = np.intp(n_c[o])
        ti = idx_c
        tw = w_c
    if n == 0:
        for j in range(width):
            dst[j] = 0.0
        return
    r0 = rows[np.intp(ti[0, o]) - lo]
    c0 = tw[0, o]
    if n == 1:
        for j in range(width):
            dst[j] = c0 * np.float64(r0[j])
        return
    if n == 2:
        r1 = rows[np.intp(ti[1, o]) - lo]
        c1 = tw[1, o]
        for j in range(width):
            dst[j] = c0 * np.float64(r0[j]) + c1 * np.float64(r1[j])
        return
    for j in range(width):
        acc[j] = c0 * np.float64(r0[j])
    for t in range(1, n - 1):
        r = rows[np.intp(ti[t, o]) - lo]
        c = tw[t, o]
        for j in range(width):
            acc[j] += c * np.float64(r[j])
    r = rows[np.intp(ti[n - 1, o]) - lo]
    c = tw[n - 1, o]
    for j in range(width):
        dst[j] = acc[j] + c * np.float64(r[j])


def _flag_rows(rows: Any, o: int, idx: Any, known: Any, finite: Any) -> None:
    """finite[r] for every row r that output row o reads through idx (T, L), each row checked once."""
    for t in range(idx.shape[0]):
        r = np.intp(idx[t, o])
        if not known[r]:
            finite[r] = _row_finite(rows[r])
            known[r] = True


def _split(ti: Any, tw: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Unpack a table pair, both (rows, L): ti = [indices (T) | compacted indices (T) | count (1)],
    tw = [weights (T) | compacted weights (T)]."""
    taps = tw.shape[0] // 2
    return ti[:taps], tw[:taps], ti[taps : 2 * taps], tw[taps:], ti[2 * taps]


def resize_rows_first(
    x: Any,
    out: Any,
    tyi: Any,
    tyw: Any,
    txi: Any,
    txw: Any,
    block: int,
    rows: int,
    run: Any,
    start: int,
    stop: int,
) -> None:
    """Filter the last two axes of x (P, H, W) into out (P, Ho, Wo), rows first, for the blocks [start,
    stop) of the flat list of blocks (plane * blocks per plane + block): a block is ``block`` output
    rows of one plane, needing at most ``rows`` input rows filtered along the last axis into a float64
    scratch, then combined down the columns. ``run`` = (lo, hi): finite rows take _h_row_x2 with that
    run of pairs when hi > lo.

    Longer than 60 lines on purpose: one compiled loop whose two- and four-tap combinations down the
    columns are written out in it (a call per output row cost about 50 ns, most of a tiny image's time);
    its other steps are the inlined helpers above."""
    iy, wy, iy_c, wy_c, ny_c = _split(tyi, tyw)
    ix, wx, ix_c, wx_c, nx_c = _split(txi, txw)
    height = x.shape[1]
    out_h = out.shape[1]
    out_w = out.shape[2]
    scratch = np.empty((rows, out_w))
    acc = np.empty(out_w)
    finite = np.empty(rows, dtype=np.bool_)
    taps = iy.shape[0]
    per_plane = (out_h + block - 1) // block
    for u in range(start, stop):
        p = u // per_plane
        o0 = (u - p * per_plane) * block
        o1 = min(o0 + block, out_h)
        lo = height
        hi = 0
        for o in range(o0, o1):
            for t in range(taps):
                r = np.intp(iy[t, o])
                lo = min(lo, r)
                hi = max(hi, r + 1)
        for r in range(lo, hi):
            src = x[p, r]
            ok = _row_finite(src)
            dst = scratch[r - lo]
            if ok and run[1] > run[0]:
                _h_row_x2(src, dst, ix, wx, run[0], run[1])
            else:
                _h_row(src, dst, acc, ix, wx, ix_c, wx_c, nx_c, ok)
            finite[r - lo] = _row_finite(dst) if ok else False
        for o in range(o0, o1):
            # the two- and four-tap combinations of _v_row, written out: as a call it cost about
            # 50 ns a row, most of a tiny image's time (same operations, same order)
            k0 = np.intp(iy[0, o]) - lo
            k1 = np.intp(iy[min(1, taps - 1), o]) - lo
            if taps == 2 and finite[k0] and finite[k1]:
                c0 = wy[0, o]
                c1 = wy[1, o]
                dst = out[p, o]
                for j in range(out_w):
                    dst[j] = c0 * scratch[k0, j] + c1 * scratch[k1, j]
                continue
            if taps == 4:
                k2 = np.intp(iy[2, o]) - lo
                k3 = np.intp(iy[3, o]) - lo
                if finite[k0] and finite[k1] and finite[k2] and finite[k3]:
                    c0 = wy[0, o]
                    c1 = wy[1, o]
                    c2 = wy[2, o]
                    c3 = wy[3, o]
                    dst = out[p, o]
                    for j in range(out_w):
                        dst[j] = (
                            c0 * scratch[k0, j]
                            + c1 * scratch[k1, j]
                            + c2 * scratch[k2, j]
                            + c3 * scratch[k3, j]
                        )
                    continue
            _v_row(scratch, lo, o, out[p, o], acc, iy, wy, iy_c, wy_c, ny_c, finite)


def resize_small_rows_first(x: Any, out: Any, ints: Any, weights: Any) -> bool:
    """resize_rows_first's result for a small image (x (N, C, H, W) into out (N, C, Ho, Wo), every input
    row of a plane filtered into an (H, Wo) float64 scratch) when every input row and every filtered row
    is finite, in a short loop with few arguments (inside a session, each argument and each reshaped
    view costs a tiny call a fraction of a microsecond: 4-D arrays as they come, the tables in two).
    ``ints`` = [taps y, taps x, the (taps y, Ho) indices, the (taps x, Wo) indices], ``weights`` = [the
    (taps y, Ho) weights, the (taps x, Wo) weights]. Returns False when a row is not finite; ``out`` is
    then to be recomputed by resize_rows_first, whose rules for inf and NaN apply. Same operations in
    the same order as resize_rows_first on finite rows (tap by tap, left to right, in float64, one
    rounding when stored), so the same bits.

    Longer than 60 lines on purpose: its point is one short compiled loop with no calls and few
    arguments (the two-tap cases written out), for images where a call or a view costs a visible part of
    the time."""
    ty = np.intp(ints[0])
    tx = np.intp(ints[1])
    height = x.shape[2]
    out_h = out.shape[2]
    out_w = out.shape[3]
    ny = ty * out_h
    nx = tx * out_w
    tyi = ints[2 : 2 + ny].reshape((ty, out_h))
    txi = ints[2 + ny : 2 + ny + nx].reshape((tx, out_w))
    tyw = weights[:ny].reshape((ty, out_h))
    txw = weights[ny : ny + nx].reshape((tx, out_w))
    scratch = np.empty((height, out_w))
    acc = np.empty(out_w)
    ix0 = txi[0]
    wx0 = txw[0]
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            plane = x[n, c]
            for r in range(height):
                src = plane[r]
                if not _row_finite(src):
                    return False
                row = scratch[r]
                if tx == 2:
                    ix1 = txi[1]
                    wx1 = txw[1]
                    for j in range(out_w):
                        row[j] = wx0[j] * np.float64(src[ix0[j]]) + wx1[j] * np.float64(src[ix1[j]])
                else:
                    for j in range(out_w):
                        row[j] = wx0[j] * np.float64(src[ix0[j]])
                    for t in range(1, tx):
                        it = txi[t]
                        wt = txw[t]
                        for j in range(out_w):
                            row[j] += wt[j] * np.float64(src[it[j]])
                if not _row_finite(row):
                    return False
            target = out[n, c]
            for o in range(out_h):
                dst = target[o]
                r0 = scratch[np.intp(tyi[0, o])]
                c0 = tyw[0, o]
                if ty == 2:
                    r1 = scratch[np.intp(tyi[1, o])]
                    c1 = tyw[1, o]
                    for j in range(out_w):
                        dst[j] = c0 * r0[j] + c1 * r1[j]
                    continue
                for j in range(out_w):
                    acc[j] = c0 * r0[j]
                for t in range(1, ty):
                    rt = scratch[np.intp(tyi[t, o])]
                    ct = tyw[t, o]
                    for j in range(out_w):
                        acc[j] += ct * rt[j]
                for j in range(out_w):
                    dst[j] = acc[j]
    return True


def resize_columns_first(
    x: Any, out: Any, tyi: Any, tyw: Any, txi: Any, txw: Any, run: Any, start: int, stop: int
) -> None:
    """Filter the last two axes of x (P, H, W) into the flat output rows (plane * Ho + row) [start, stop)
    of out (P, Ho, Wo), columns first: each output row combines input rows into a float64 row, then
    filters it along the last axis. ``run`` = (k, lo, hi): finite rows take _h_row_down with it when
    k > 0."""
    iy, wy, iy_c, wy_c, ny_c = _split(tyi, tyw)
    ix, wx, ix_c, wx_c, nx_c = _split(txi, txw)
    height, width = x.shape[1], x.shape[2]
    out_w = out.shape[2]
    column = np.empty(width)
    acc = np.empty(max(width, out_w))
    k = max(run[0], 1)
    phases = np.empty((k, (width + k - 1) // k))
    assume = np.ones(height, dtype=np.bool_)
    finite = np.empty(height, dtype=np.bool_)
    known = np.empty(height, dtype=np.bool_)
    out_h = out.shape[1]
    rows = x[0]
    plane = -1
    for r in range(start, stop):
        p = r // out_h
        o = r - p * out_h
        if p != plane:
            plane = p
            rows = x[p]
            known[:] = False
        _v_row(rows, 0, o, column, acc, iy, wy, iy_c, wy_c, ny_c, assume)
        ok = _row_finite(column)
        if not ok:
            _flag_rows(rows, o, iy, known, finite)
            _v_row(rows, 0, o, column, acc, iy, wy, iy_c, wy_c, ny_c, finite)
            ok = _row_finite(column)
        if ok and run[0] > 0:
            _h_row_down(column, out[p, o], acc, phases, ix, wx, run)
        else:
            _h_row(column, out[p, o], acc, ix, wx, ix_c, wx_c, nx_c, ok)


def resize_rows(x: Any, out: Any, txi: Any, txw: Any, pairs: Any, down: Any, start: int, stop: int) -> None:
    """Filter the last axis: rows [start, stop) of x (R, W) into out (R, Wo). Finite rows take
    _h_row_x2 with ``pairs`` = (lo, hi) when hi > lo (through a float64 row), else _h_row_down with
    ``down`` = (k, lo, hi) when k > 0."""
    ix, wx, ix_c, wx_c, nx_c = _split(txi, txw)
    out_w = out.shape[1]
    acc = np.empty(out_w)
    k = max(down[0], 1)
    phases = np.empty((k, (x.shape[1] + k - 1) // k))
    paired = pairs[1] > pairs[0]
    row = np.empty(out_w if paired else 0)
    for r in range(start, stop):
        src = x[r]
        ok = _row_finite(src)
        if ok and paired:
            _h_row_x2(src, row, ix, wx, pairs[0], pairs[1])
            dst = out[r]
            for j in range(out_w):
                dst[j] = row[j]
        elif ok and down[0] > 0:
            _h_row_down(src, out[r], acc, phases, ix, wx, down)
        else:
            _h_row(src, out[r], acc, ix, wx, ix_c, wx_c, nx_c, ok)


def resize_middle(x: Any, out: Any, tyi: Any, tyw: Any, start: int, stop: int) -> None:
    """Filter the middle axis: x (P, H, Q) into the flat output rows (plane * Ho + row) [start, stop) of
    out (P, Ho, Q)."""
    iy, wy, iy_c, wy_c, ny_c = _split(tyi, tyw)
    acc = np.empty(x.shape[2])
    height = x.shape[1]
    out_h = out.shape[1]
    assume = np.ones(height, dtype=np.bool_)
    finite = np.empty(height, dtype=np.bool_)
    known = np.empty(height, dtype=np.bool_)
    rows = x[0]
    plane = -1
    for r in range(start, stop):
        p = r // out_h
        o = r - p * out_h
        if p != plane:
            plane = p
            rows = x[p]
            known[:] = False
        dst = out[p, o]
        _v_row(rows, 0, o, dst, acc, iy, wy, iy_c, wy_c, ny_c, assume)
        if not _row_finite(dst):
            _flag_rows(rows, o, iy, known, finite)
            _v_row(rows, 0, o, dst, acc, iy, wy, iy_c, wy_c, ny_c, finite)


# ---------------------------------------------------------------------------------------------
# Nearest: a gather of the last two axes. The loops take a range of flat output rows (plane by plane,
# row by row), so that a part of the output is one contiguous block whatever the number of planes (row
# ranges across many small planes left each thread writing scattered pieces: a second thread made the
# 1x128x160x160 output of a detection neck slower). Consecutive output rows of one plane that read the
# same input row are copies of the previous output row.


def gather_last2(x: Any, out: Any, iy: Any, ix: Any, start: int, stop: int) -> None:
    """out[p, o, j] = x[p, iy[o], ix[j]] for the flat output rows p * Ho + o in [start, stop)."""
    rows = out.shape[1]
    out_w = out.shape[2]
    for r in range(start, stop):
        p = r // rows
        o = r - p * rows
        dst = out[p, o]
        if r > start and o > 0 and iy[o] == iy[o - 1]:  # tables are unsigned: no wrap-around checks
            prev = out[p, o - 1]
            for j in range(out_w):
                dst[j] = prev[j]
        else:
            src = x[p, iy[o]]
            for j in range(out_w):
                dst[j] = src[ix[j]]


def repeat2_last2(x: Any, out: Any, iy: Any, pair: Any, start: int, stop: int) -> None:
    """out[p, o, j] = pair * x[p, iy[o], j] for the flat output rows p * Ho + o in [start, stop): a
    nearest gather whose last axis repeats every element twice, with out viewed at twice the element
    width and ``pair`` = 1 + 2**bits (one element's bits written to both halves: stores that vectorize,
    where the gather's table lookups do not)."""
    rows = out.shape[1]
    width = x.shape[2]
    for r in range(start, stop):
        p = r // rows
        o = r - p * rows
        dst = out[p, o]
        if r > start and o > 0 and iy[o] == iy[o - 1]:
            prev = out[p, o - 1]
            for j in range(width):
                dst[j] = prev[j]
        else:
            src = x[p, iy[o]]
            for j in range(width):
                dst[j] = pair * np.uint64(src[j])
