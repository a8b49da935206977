"""Compiled loop of Pad (customops.kernels.padding.pad): pads and crops of the last two axes, row by row.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). Pad
only moves elements, so callers pass every numeric and bool type as the unsigned integer of its width
(complex128 as pairs of uint64): four compiled specializations. Tables and offsets are unsigned
(np.uintp): added to a loop index, a signed offset brings in numba's negative-index handling, which
keeps the row copy from being vectorized (about 2x slower); slicing each row instead costs about 20%
on 1x64x256x256, more on narrow rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

GEOMETRY = 6
"""Entries of the ``table`` of :func:`pad_last2` before its row and column tables."""


def pad_last2(x: Any, out: Any, table: Any, fill: Any, start: int, stop: int) -> None:
    """Write planes [start, stop) of out (P, Ho, Wo), the padded (or cropped) x (P, H, W), one output
    row after the other.

    ``table`` is (at, lo, kept, top, bottom, constant), then the input row of each output row (Ho
    entries), then the input column of each output column (Wo entries; read for the border columns
    only). Output columns [at, at + kept) are input columns [lo, lo + kept). With ``constant`` set,
    the output rows outside [top, bottom) and the border columns are copied from ``fill`` (Wo), a row
    of the constant.
    """
    out_h = out.shape[1]
    width = x.shape[2]
    at = table[0]
    lo = table[1]
    right = at + table[2]
    n_left = np.intp(at)
    kept = np.intp(table[2])
    top = np.intp(table[3])
    bottom = np.intp(table[4])
    constant = table[5] != 0
    rows = table[GEOMETRY : GEOMETRY + out_h]
    cols = table[GEOMETRY + out_h :]
    cols_right = cols[np.intp(right) :]
    fill_right = fill[np.intp(right) :] if constant else fill
    n_right = cols_right.shape[0]
    # Every column kept (so lo is 0) and none added: the kept rows are one block in the input and in
    # the output, copied at once (a row costs about 10 ns, which dominates when rows are short).
    block = at == 0 and kept == width and kept == out.shape[2]
    block_size = (bottom - top) * width
    block_dst = np.uintp(top * width)
    block_src = rows[top] * np.uintp(width) if block else np.uintp(0)
    skip = bottom - top if block else 0
    for p in range(start, stop):
        if block:
            flat_dst = out[p].reshape(out_h * width)
            flat_src = x[p].reshape(x.shape[1] * width)
            for j in range(block_size):
                flat_dst[block_dst + np.uintp(j)] = flat_src[block_src + np.uintp(j)]
        for r in range(out_h - skip):  # every output row but the block
            i = r if r < top else r + skip
            dst = out[p, i]
            if constant and (i < top or i >= bottom):
                for j in range(dst.shape[0]):
                    dst[j] = fill[j]
                continue
            src = x[p, rows[i]]
            if constant:
                for j in range(n_left):
                    dst[j] = fill[j]
            else:
                for j in range(n_left):
                    dst[j] = src[cols[j]]
            for j in range(kept):
                dst[at + np.uintp(j)] = src[lo + np.uintp(j)]
            if constant:
                for j in range(n_right):
                    dst[right + np.uintp(j)] = fill_right[j]
            else:
                for j in range(n_right):
                    dst[right + np.uintp(j)] = src[cols_right[j]]
