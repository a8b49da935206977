"""ONNX AffineGrid (opset 20): the sampling grid of a batch of 2-D or 3-D affine matrices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.accel import jit, parallel
from customops.accel.spatial import affine_grid_loops
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import flag, int_list

__all__ = ["affine_grid", "base_coordinates", "bind"]


def base_coordinates(count: int, align_corners: int) -> np.ndarray:
    """The ``count`` positions evenly spaced in [-1, 1] along one axis, in float64, each with one rounding.

    With ``align_corners=1`` -1 and 1 are the centres of the corner pixels: ``(2i - (n - 1)) / (n - 1)``;
    one pixel has one centre, 0 (what PyTorch's affine_grid gives; the spec's picture has no answer).
    With ``align_corners=0`` they are the outer edges of the corner pixels: ``(2i + 1 - n) / n``.
    """
    i = np.arange(count, dtype=np.float64)
    if align_corners:
        if count <= 1:
            return np.zeros(count, dtype=np.float64)
        return (2.0 * i - (count - 1)) / (count - 1)
    return (2.0 * i + 1.0 - count) / count


def affine_grid(theta: Any, size: Any, *, align_corners: int = 0) -> np.ndarray:
    """The grid ``theta @ [x, y, (z,) 1]`` over the base positions of ``size`` (N, C, H, W) or
    (N, C, D, H, W): shape (N, H, W, 2) or (N, D, H, W, 3), of theta's dtype.

    x runs along W, y along H and z along D; output component k is
    ``theta[n, k, 0] * x + theta[n, k, 1] * y (+ theta[n, k, 2] * z) + theta[n, k, -1]``, computed in
    float64 and rounded once to theta's type. C is not used. Raises KernelError for a size of another
    length than 4 or 5, a negative size, theta not of shape (N, 2, 3) or (N, 3, 4) matching size, or an
    align_corners other than 0 or 1.
    """
    t = np.asarray(theta)
    spatial, out_shape = _check(t, size, align_corners)
    limits.check_output(out_shape, t.dtype)
    out = np.empty(out_shape, dtype=t.dtype)
    if out.size == 0:
        return out
    axes = [base_coordinates(out_shape[1 + a], align_corners) for a in range(spatial)]  # (D,) H, W
    theta64 = np.ascontiguousarray(t, dtype=np.float64)
    loop = _compiled(spatial, t.dtype)
    if loop is not None:
        rows = out.size // (out_shape[-2] * spatial)
        parallel.run(loop, rows, out.size, theta64, *reversed(axes), out)
        return out
    # the numpy path: coordinate j is x (along the last spatial axis), y, z, broadcast over the grid
    coords = []
    for j in range(spatial):
        shape = [1] * (spatial + 1)
        shape[spatial - j] = out_shape[spatial - j]
        coords.append(axes[spatial - 1 - j].reshape(shape))
    m = theta64.reshape(t.shape[0], spatial, spatial + 1, *([1] * spatial))
    for k in range(spatial):
        acc = m[:, k, 0] * coords[0]
        for j in range(1, spatial):
            acc = acc + m[:, k, j] * coords[j]
        out[..., k] = acc + m[:, k, spatial]
    return out


def _compiled(spatial: int, dtype: np.dtype) -> Any:
    """The compiled loop of this grid, or None (no numba, or a type it is not compiled for)."""
    if dtype not in jit.FLOATS:
        return None
    return jit.get("affine_grid_2d" if spatial == 2 else "affine_grid_3d", affine_grid_loops)


def _check(t: np.ndarray, size: Any, align_corners: Any) -> tuple[int, tuple[int, ...]]:
    """(number of spatial axes, output shape); raises KernelError for an invalid configuration."""
    if t.dtype.kind != "f":
        raise KernelError(f"theta must be a floating-point tensor, got dtype {str(t.dtype)!r}")
    flag(align_corners, "align_corners")
    shape = np.shape(size)
    if len(shape) == 1 and shape[0] > 5:  # before listing its entries: it may hold millions
        raise KernelError(f"size has {shape[0]} entries; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)")
    dims = int_list(size, "size")
    if len(dims) not in (4, 5):
        raise KernelError(
            f"size {dims!r} has {len(dims)} entries; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)"
        )
    for v in dims:
        if v < 0:
            raise KernelError(f"size {dims!r} contains {v!r}; sizes must be >= 0")
    spatial = len(dims) - 2
    expected = (dims[0], spatial, spatial + 1)
    if t.shape != expected:
        raise KernelError(
            f"theta has shape {t.shape!r}; size {dims!r} asks for {'x'.join(map(str, expected))} "
            f"(N, {spatial}, {spatial + 1}) with the same N"
        )
    return spatial, (dims[0], *dims[2:], spatial)


def bind(align_corners: int = 0) -> Callable[[Any, Any], np.ndarray]:
    """``affine_grid`` with its attribute fixed (the ONNX Runtime hook calls it once per node)."""

    def bound(theta: Any, size: Any) -> np.ndarray:
        return affine_grid(theta, size, align_corners=align_corners)

    return bound
