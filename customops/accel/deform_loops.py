"""Compiled loop of DeformConv (customops.kernels.deform_conv): the deformable im2col of 2-D images.

A plain Python function, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). It
computes exactly what the numpy path computes: sampling coordinates and bilinear weights in float64,
each sample summed in float64 over its corners in (top-left, top-right, bottom-left, bottom-right)
order, corners outside the image or of weight 0 left out, a NaN coordinate giving NaN, the mask applied
in float64, one rounding to the column buffer's type.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

GEOMETRY = 11
"""Entries of ``geometry``: kh, kw, dilation_h, dilation_w, stride_h, stride_w, pad_h, pad_w, out_w,
the first output position of the chunk, and whether ``mask`` is given (1) or not (0)."""


def deform_im2col_2d(x: Any, off: Any, mask: Any, geometry: Any, cols: Any, start: int, stop: int) -> None:
    """Fill the rows of ``cols`` (C, K, L) of units [start, stop) (unit u is offset group u // K, kernel
    position u % K) from x (C, H, W), off (groups, K, 2, L) and mask (groups, K, L)."""
    kh, kw, dil_h, dil_w, stride_h, stride_w, pad_h, pad_w, out_w, first, has_mask = geometry
    channels, height, width = x.shape[0], x.shape[1], x.shape[2]
    taps = kh * kw
    groups = off.shape[0]
    per = channels // groups
    length = cols.shape[2]
    rows = np.empty((4, length), dtype=np.int64)
    columns = np.empty((4, length), dtype=np.int64)
    weights = np.empty((4, length), dtype=np.float64)
    scale = np.empty(length, dtype=np.float64)
    nan = np.empty(length, dtype=np.bool_)
    for u in range(start, stop):
        g = u // taps
        k = u - g * taps
        ky = k // kw
        kx = k - ky * kw
        for i in range(length):
            pos = first + i
            oy = pos // out_w
            ox = pos - oy * out_w
            h = float(oy * stride_h - pad_h + ky * dil_h) + float(off[g, k, 0, i])
            w = float(ox * stride_w - pad_w + kx * dil_w) + float(off[g, k, 1, i])
            scale[i] = float(mask[g, k, i]) if has_mask else 1.0
            nan[i] = math.isnan(h) or math.isnan(w)
            for c in range(4):
                weights[c, i] = 0.0
                rows[c, i] = 0
                columns[c, i] = 0
            if nan[i] or not (-1.0 < h < height and -1.0 < w < width):
                continue
            hl = math.floor(h)
            wl = math.floor(w)
            fh = h - hl
            fw = w - wl
            for c in range(4):
                y = int(hl) + c // 2
                xx = int(wl) + c % 2
                wt = (fh if c // 2 else 1.0 - fh) * (fw if c % 2 else 1.0 - fw)
                if 0 <= y < height and 0 <= xx < width and wt != 0.0:
                    weights[c, i] = wt
                    rows[c, i] = y
                    columns[c, i] = xx
        for ch in range(g * per, (g + 1) * per):
            plane = x[ch]
            dst = cols[ch, k]
            for i in range(length):
                acc = 0.0
                if nan[i]:
                    acc = math.nan
                else:
                    for c in range(4):
                        wt = weights[c, i]
                        if wt != 0.0:
                            acc += float(plane[rows[c, i], columns[c, i]]) * wt
                if has_mask:
                    acc *= scale[i]
                dst[i] = acc
