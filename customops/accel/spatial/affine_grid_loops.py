"""Compiled loops of AffineGrid (customops.kernels.spatial.affine_grid): the grid row by row, in float64.

Plain Python functions, compiled on demand by :func:`customops.accel.jit.get` (``numba.njit``). Each
output component is ``(theta[k, 0] * x + theta[k, 1] * y) (+ theta[k, 2] * z) + theta[k, -1]``, in this
order, in float64 (no fastmath: no contraction into FMA), rounded once when stored: the same operations
as the numpy path, so the same bits.
"""

from __future__ import annotations

from typing import Any


def affine_grid_2d(theta: Any, xs: Any, ys: Any, out: Any, start: int, stop: int) -> None:
    """Rows [start, stop) of out (N, H, W, 2), row u being out[u // H, u % H], from theta (N, 2, 3) in
    float64 and the base coordinates xs (W) and ys (H)."""
    height = out.shape[1]
    for u in range(start, stop):
        n = u // height
        h = u - n * height
        y = ys[h]
        row = out[n, h]
        for k in range(2):
            a = theta[n, k, 0]
            b = theta[n, k, 1] * y
            t = theta[n, k, 2]
            for w in range(row.shape[0]):
                row[w, k] = (a * xs[w] + b) + t


def affine_grid_3d(theta: Any, xs: Any, ys: Any, zs: Any, out: Any, start: int, stop: int) -> None:
    """Rows [start, stop) of out (N, D, H, W, 3), row u being out[n, d, h] with u = (n * D + d) * H + h,
    from theta (N, 3, 4) in float64 and the base coordinates xs (W), ys (H) and zs (D)."""
    depth = out.shape[1]
    height = out.shape[2]
    for u in range(start, stop):
        nd = u // height
        h = u - nd * height
        n = nd // depth
        d = nd - n * depth
        y = ys[h]
        z = zs[d]
        row = out[n, d, h]
        for k in range(3):
            a = theta[n, k, 0]
            b = theta[n, k, 1] * y
            c = theta[n, k, 2] * z
            t = theta[n, k, 3]
            for w in range(row.shape[0]):
                row[w, k] = ((a * xs[w] + b) + c) + t
