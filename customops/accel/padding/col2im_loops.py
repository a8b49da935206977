"""Compiled loop of Col2Im (customops.kernels.padding.col2im) on 2-D images, for the types it is compiled for.

A plain Python function, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). It sums
in the element type in increasing kernel-offset order, as the numpy path does, and takes the range of
images it computes as its last two arguments (:mod:`customops.accel.parallel` runs the parts on several
threads).
"""

from __future__ import annotations

from typing import Any

# ---------------------------------------------------------------------------------------------
# Col2Im, 2-D images: per channel, one accumulation per kernel offset in increasing order, so every
# pixel sums its blocks in that order, rounding to the element type after each add (as numpy's +=).


def col2im_2d(cols: Any, out: Any, geometry: Any, start: int, stop: int) -> None:
    """Images [start, stop) (image b is out[b // C, b % C]) of cols (N, C * kh * kw, nb_h * nb_w) into
    out (N, C, H, W), whose images are set to zero first. ``geometry`` holds (kh, kw, dilation_h,
    dilation_w, pad_h, pad_w, stride_h, stride_w, nb_h, nb_w)."""
    kh, kw, dil_h, dil_w, pad_h, pad_w, stride_h, stride_w, nb_h, nb_w = geometry
    channels = out.shape[1]
    height = out.shape[2]
    width = out.shape[3]
    for b in range(start, stop):
        n = b // channels
        c = b - n * channels
        img = out[n, c]
        for y in range(height):
            for x in range(width):
                img[y, x] = 0
        for ky in range(kh):
            y0 = ky * dil_h - pad_h
            for kx in range(kw):
                src = cols[n, (c * kh + ky) * kw + kx]
                x0 = kx * dil_w - pad_w
                # blocks bx whose element lands inside: 0 <= bx * stride_w + x0 < width
                bx_lo = max(0, (-x0 + stride_w - 1) // stride_w)
                bx_hi = min(nb_w, (width - 1 - x0) // stride_w + 1) if width - 1 - x0 >= 0 else 0
                if bx_hi <= bx_lo:
                    continue
                count = bx_hi - bx_lo
                for by in range(nb_h):
                    y = by * stride_h + y0
                    if y < 0 or y >= height:
                        continue
                    part = src[by * nb_w + bx_lo : by * nb_w + bx_hi]
                    if stride_w == 1:
                        dst = img[y, bx_lo + x0 : bx_lo + x0 + count]
                        for i in range(count):
                            dst[i] += part[i]
                    else:
                        row = img[y]
                        first = bx_lo * stride_w + x0
                        for i in range(count):
                            row[first + i * stride_w] += part[i]
