"""Compiled loop of DeformConv (customops.kernels.spatial.deform_conv): the deformable im2col of 2-D images.

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
    """Fill output positions [start, stop) of ``cols`` (L, group, K, C / group) from x (height * width
    + 2, C: the pixels channels-last, then a row of 0 and a row of NaN), off (offset groups, K, 2, L)
    and mask (offset groups, K, L).

    Each sample is the sum of four products pixel * weight, branch-free over the channels: a corner
    outside the image or of weight 0 reads the 0 row with weight 0, a NaN coordinate reads the NaN row
    with weight 1 (row numbers unsigned: numba then skips its negative-index handling)."""
    kh, kw, dil_h, dil_w, stride_h, stride_w, pad_h, pad_w, out_w, first, has_mask = geometry
    pixels = x.shape[0] - 2
    width = pixels // height
    per_group = cols.shape[3]
    per = x.shape[1] // off.shape[0]
    rows = np.empty(4, dtype=np.uintp)
    weights = np.empty(4, dtype=np.float64)
    for i in range(start, stop):
        oy = (first + i) // out_w
        base_h = oy * stride_h - pad_h
        base_w = (first + i - oy * out_w) * stride_w - pad_w
        for u in range(off.shape[0] * kh * kw):
            g = u // (kh * kw)
            k = u - g * (kh * kw)
            h = float(base_h + (k // kw) * dil_h) + float(off[g, k, 0, i])
            w = float(base_w + (k % kw) * dil_w) + float(off[g, k, 1, i])
            scale = float(mask[g, k, i]) if has_mask else 1.0
            for c in range(4):
                rows[c] = pixels
                weights[c] = 0.0
            if math.isnan(h) or math.isnan(w):
                rows[0] = pixels + 1
                weights[0] = 1.0
            elif -1.0 < h < height and -1.0 < w < width:
                fh = h - math.floor(h)
                fw = w - math.floor(w)
                for c in range(4):
                    y = math.floor(h) + c // 2
                    xx = math.floor(w) + c % 2
                    wt = (fh if c // 2 else 1.0 - fh) * (fw if c % 2 else 1.0 - fw)
                    if 0 <= y < height and 0 <= xx < width and wt != 0.0:
                        rows[c] = y * width + xx
                        weights[c] = wt
            w0, w1, w2, w3 = weights[0], weights[1], weights[2], weights[3]
            c = g * per
            while c < (g + 1) * per:  # the group's channels, split at the conv groups' borders
                gi = c // per_group
                end = min((g + 1) * per, (gi + 1) * per_group)
                # slices indexed from 0: numba then needs no negative-index handling and vectorizes
                dst = cols[i, gi, k, c - gi * per_group : end - gi * per_group]
                r0, r1, r2, r3 = x[rows[0], c:end], x[rows[1], c:end], x[rows[2], c:end], x[rows[3], c:end]
                for j in range(end - c):
                    acc = 0.0 + float(r0[j]) * w0 + float(r1[j]) * w1 + float(r2[j]) * w2 + float(r3[j]) * w3
                    dst[j] = acc * scale if has_mask else acc
                c = end
