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


def deform_im2col_2d(
    x: Any, height: int, off: Any, mask: Any, geometry: Any, cols: Any, start: int, stop: int
) -> None:
    """Fill the rows of ``cols`` (C, K, L) of units [start, stop) (unit u is offset group u // K, kernel
    position u % K) from x (C, height * width + 2: each image's pixels row by row, then a 0 and a NaN),
    off (groups, K, 2, L) and mask (groups, K, L).

    Each sample is the sum of four products pixel * weight, branch-free: a corner outside the image or of
    weight 0 reads the 0 with weight 0, a NaN coordinate reads the NaN with weight 1 (indices unsigned:
    numba then skips its negative-index handling)."""
    kh, kw, dil_h, dil_w, stride_h, stride_w, pad_h, pad_w, out_w, first, has_mask = geometry
    pixels = x.shape[1] - 2
    width = pixels // height
    per = x.shape[0] // off.shape[0]
    length = cols.shape[2]
    index = np.empty((4, length), dtype=np.uintp)
    weights = np.empty((4, length), dtype=np.float64)
    scale = np.ones(length, dtype=np.float64)
    for u in range(start, stop):
        g = u // (kh * kw)
        k = u - g * (kh * kw)
        for i in range(length):
            oy = (first + i) // out_w
            h = float(oy * stride_h - pad_h + (k // kw) * dil_h) + float(off[g, k, 0, i])
            w = float((first + i - oy * out_w) * stride_w - pad_w + (k % kw) * dil_w) + float(off[g, k, 1, i])
            if has_mask:
                scale[i] = float(mask[g, k, i])
            for c in range(4):
                index[c, i] = pixels
                weights[c, i] = 0.0
            if math.isnan(h) or math.isnan(w):
                index[0, i] = pixels + 1
                weights[0, i] = 1.0
            elif -1.0 < h < height and -1.0 < w < width:
                fh = h - math.floor(h)
                fw = w - math.floor(w)
                for c in range(4):
                    y = math.floor(h) + c // 2
                    xx = math.floor(w) + c % 2
                    wt = (fh if c // 2 else 1.0 - fh) * (fw if c % 2 else 1.0 - fw)
                    if 0 <= y < height and 0 <= xx < width and wt != 0.0:
                        index[c, i] = y * width + xx
                        weights[c, i] = wt
        for ch in range(g * per, (g + 1) * per):
            plane = x[ch]
            dst = cols[ch, k]
            for i in range(length):
                acc = 0.0
                acc += float(plane[index[0, i]]) * weights[0, i]
                acc += float(plane[index[1, i]]) * weights[1, i]
                acc += float(plane[index[2, i]]) * weights[2, i]
                acc += float(plane[index[3, i]]) * weights[3, i]
                if has_mask:
                    acc *= scale[i]
                dst[i] = acc
