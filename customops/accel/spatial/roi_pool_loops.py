"""Compiled loop of MaxRoiPool (customops.kernels.spatial.max_roi_pool): the maximum of each bin, channel
by channel.

A plain Python function, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def max_roi_pool_last(x: Any, out: Any, batch: Any, rows: Any, cols: Any, start: int, stop: int) -> None:
    """Rois [start, stop) of out (R, C, PH, PW) from the channels-last x (N, H, W, C): each bin the
    maximum of its window, NaN when the window holds one (a NaN wins and stays: nothing compares
    greater), 0 when the window is empty. The inner loop runs over contiguous channels, into one bin's
    accumulator, which is then written to the bin's place in every channel of out.

    ``batch`` (R) is each roi's image; ``rows`` (R, PH, 2) and ``cols`` (R, PW, 2) are the [start, end)
    of each bin's rows and columns, already clipped to the image.
    """
    channels = out.shape[1]
    acc = np.empty(channels, dtype=out.dtype)
    for r in range(start, stop):
        img = x[batch[r]]
        for i in range(out.shape[2]):
            y0 = rows[r, i, 0]
            y1 = rows[r, i, 1]
            for j in range(out.shape[3]):
                x0 = cols[r, j, 0]
                x1 = cols[r, j, 1]
                if y1 <= y0 or x1 <= x0:
                    for c in range(channels):
                        out[r, c, i, j] = 0
                    continue
                first = img[y0, x0]
                for c in range(channels):
                    acc[c] = first[c]
                for y in range(y0, y1):
                    for k in range(x0, x1):
                        pixel = img[y, k]
                        for c in range(channels):
                            v = pixel[c]
                            a = acc[c]
                            acc[c] = v if (v > a or v != v) else a
                for c in range(channels):
                    out[r, c, i, j] = acc[c]
