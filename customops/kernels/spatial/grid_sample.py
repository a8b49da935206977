"""ONNX GridSample (16, 20, 22): sample X at the normalized positions a grid gives, in any number of
spatial dimensions.

The kernel takes GridSample-20's mode names (``linear``, ``cubic``, ``nearest``); the translator maps
GridSample-16's ``bilinear`` / ``bicubic`` onto them. docs/semantics.md (GridSample) says why each rule
below is what it is.

For an output point, ``grid[n, o..., :]`` holds one normalized coordinate per spatial axis, the *last*
spatial axis first (x, then y, then z). Per spatial axis of length L, a normalized coordinate u becomes
the pixel coordinate ``x = (u + 1) / 2 * (L - 1)`` (align_corners=1) or ``x = ((u + 1) * L - 1) / 2``
(align_corners=0). The location is never moved: the padding mode gives values to the pixels outside
the image that the taps reach (the image is padded, then interpolated):

- ``zeros``: 0;
- ``border``: the nearest border pixel;
- ``reflection``: the pixel mirrored about the borders u = -1 and u = 1 (pixel coordinates -0.5 and
  L - 0.5 with align_corners=0, 0 and L - 1 with align_corners=1), again and again until inside.

``nearest`` rounds x half to even; ``linear`` weighs taps ``floor(x)``, ``floor(x) + 1`` by
``1 - t``, ``t``; ``cubic`` weighs ``floor(x) - 1 .. floor(x) + 2`` with Keys' kernel, a = -0.75. Several
spatial axes combine as the product of the per-axis weights. Arithmetic is float64 with one rounding to
X's type at the end: integers round half to even and saturate, bool is True iff the value is > 0.5.
A tap of weight 0 never contributes (an infinite X value reaches only outputs that use it). A NaN
coordinate, or an infinite one under reflection (the reflected image has no value at infinity), gives
NaN (float and complex X; other types raise KernelError).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.accel import jit, parallel
from customops.accel.plans import plan_cache
from customops.accel.spatial import grid_sample_loops
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import choice, flag
from customops.kernels.rounding import finish

__all__ = ["bind", "grid_sample"]

MODES = ("linear", "nearest", "cubic")
PADDING_MODES = ("zeros", "border", "reflection")
CUBIC_A = -0.75
"""The cubic kernel's coefficient (Keys; the spec names PyTorch's bicubic, which uses it)."""

_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}

MAX_TAPS = 1 << 12
"""The most taps one output point may read (per-axis taps to the power of the spatial axes): cubic up to 6
spatial axes, linear up to 12. The work per point grows as that power, whatever the sizes (cubic on 12
spatial axes of length 2 took over a minute for a single output point)."""


def grid_sample(
    X: np.ndarray,
    grid: np.ndarray,
    *,
    align_corners: int = 0,
    mode: str = "linear",
    padding_mode: str = "zeros",
) -> np.ndarray:
    """Sample ``X`` (N, C, D1..Dr) at the normalized positions of ``grid`` (N, O1..Or, r).

    Returns a new C-contiguous array (N, C, O1..Or) of X's dtype. Raises KernelError for invalid
    attributes, shapes or element types (strings interpolate only with ``nearest``), for ``border`` or
    ``reflection`` on an empty spatial axis, and for undefined locations on non-float X.
    """
    return _run(np.asarray(X), np.asarray(grid), _options(align_corners, mode, padding_mode))


def _run(x: np.ndarray, g: np.ndarray, options: _Options) -> np.ndarray:
    out_shape = _check_shapes(x, g, options)
    limits.check_output(out_shape, x.dtype)
    if math.prod(out_shape) == 0:
        return np.empty(out_shape, dtype=x.dtype)
    spatial = x.shape[2:]
    if 0 in spatial:
        return _empty_image(x, out_shape, options)
    if len(spatial) == 2 and x.dtype in jit.FLOATS and jit.enabled():
        return _compiled_2d(x, g, out_shape, options)
    return _sample(x, g, out_shape, options)


def bind(align_corners: int = 0, mode: str = "linear", padding_mode: str = "zeros") -> Any:
    """``grid_sample`` with its attributes checked once, for repeated calls (the ONNX Runtime hook): the
    compiled path is kept per shape and dtype of X and grid (shapes are checked when it is made)."""
    options = _options(align_corners, mode, padding_mode)
    plan = plan_cache(lambda x, g: _planned(x, g, options), lambda x, g: (x.shape, x.dtype, g.shape, g.dtype))

    def bound(X: Any, grid: Any) -> np.ndarray:
        x = X if type(X) is np.ndarray else np.asarray(X)
        g = grid if type(grid) is np.ndarray else np.asarray(grid)
        direct = plan(x, g)
        if direct is None:
            return _run(x, g, options)
        limits.check_output(direct.out_shape, x.dtype)  # type: ignore[attr-defined]
        return direct(x, g)

    return bound


def _planned(x: np.ndarray, g: np.ndarray, options: _Options) -> Any:
    """The compiled path of (x, g) with its output shape, or None where :func:`_run` decides."""
    out_shape = _check_shapes(x, g, options)
    if x.ndim != 4 or x.dtype not in jit.FLOATS or not jit.enabled() or 0 in x.shape[2:]:
        return None
    if math.prod(out_shape) == 0:
        return None
    direct = _direct(x.shape, x.dtype, out_shape, options)
    direct.out_shape = out_shape  # type: ignore[attr-defined]
    return direct


@dataclass(frozen=True)
class _Options:
    align: bool
    mode: str
    padding: str


def _options(align_corners: Any, mode: Any, padding_mode: Any) -> _Options:
    return _Options(
        flag(align_corners, "align_corners"),
        choice(mode, "mode", MODES),
        choice(padding_mode, "padding_mode", PADDING_MODES),
    )


def _check_shapes(x: np.ndarray, g: np.ndarray, options: _Options) -> tuple[int, ...]:
    """The output shape; raises KernelError for shapes and types that do not fit."""
    if x.ndim < 3:
        raise KernelError(
            f"X must have rank >= 3 (N, C and at least one spatial axis), got shape {x.shape!r}"
        )
    r = x.ndim - 2
    if g.ndim != x.ndim:
        raise KernelError(f"grid must have the rank of X ({x.ndim}), got shape {g.shape!r} for X {x.shape!r}")
    if g.shape[0] != x.shape[0]:
        raise KernelError(f"grid's batch {g.shape[0]} differs from X's batch {x.shape[0]}")
    if g.shape[-1] != r:
        raise KernelError(
            f"grid's last axis must hold one coordinate per spatial axis of X ({r}), got {g.shape[-1]}"
        )
    if _TAPS[options.mode] ** r > MAX_TAPS:
        raise KernelError(
            f"mode {options.mode!r} on {r} spatial axes reads {_TAPS[options.mode] ** r} taps per output "
            f"point; at most {MAX_TAPS} are allowed (cubic: up to 6 spatial axes, linear: up to 12)"
        )
    if g.dtype.kind != "f":
        raise KernelError(f"grid must hold floating-point values, got dtype {str(g.dtype)!r}")
    if x.dtype.kind in "OSU" and options.mode != "nearest":
        raise KernelError(f"mode {options.mode!r} cannot interpolate strings (allowed for string X: nearest)")
    if x.dtype.kind not in "biufcOSU":
        raise KernelError(f"X has an unsupported dtype {str(x.dtype)!r}")
    return (x.shape[0], x.shape[1], *g.shape[1:-1])


def _zero_of(dtype: np.dtype) -> Any:
    return "" if dtype.kind in "OSU" else 0


def _empty_image(x: np.ndarray, out_shape: tuple[int, ...], options: _Options) -> np.ndarray:
    """A non-empty output sampled from an image with an empty spatial axis: every location is out of
    bound; only ``zeros`` has a value for it."""
    if options.padding != "zeros":
        raise KernelError(
            f"X's spatial shape {x.shape[2:]!r} has an empty axis: padding_mode {options.padding!r} has no "
            "border value to use (zeros has)"
        )
    out = np.empty(out_shape, dtype=object if x.dtype.kind in "OSU" else x.dtype)
    out[...] = _zero_of(x.dtype)
    return out.astype(x.dtype) if x.dtype.kind in "SU" else out


# ---------------------------------------------------------------------------------------------
# coordinates and taps, one spatial axis at a time


def _pixel(u: np.ndarray, length: int, align: bool) -> np.ndarray:
    """Normalized coordinates -> pixel coordinates on an axis of ``length``."""
    if align:
        if length == 1:  # every location maps onto the one pixel's centre, ±inf included
            return np.where(np.isnan(u), np.nan, 0.0)
        return (u + 1.0) / 2.0 * (length - 1)
    return ((u + 1.0) * length - 1.0) / 2.0


def _coordinates(u: np.ndarray, length: int, options: _Options) -> np.ndarray:
    """Pixel coordinates of normalized ``u``, the location itself: padding only gives values to the
    taps outside the image. Far-out coordinates are brought near the image where that changes no
    result: under reflection by whole periods of the reflected image (4 in normalized coordinates,
    exactly: fmod has no rounding error; an infinite coordinate becomes NaN, it has no value), under
    zeros and border to a point whose taps all read 0, or all read the edge pixel with weight 1."""
    if options.padding == "reflection":
        return _pixel(np.fmod(u, 4.0), length, options.align)
    x = _pixel(u, length, options.align)
    if options.padding == "border":
        return np.clip(x, -2.0, length + 1.0)
    return np.clip(x, -3.5, length + 2.5)


def _tap_index(i: np.ndarray, length: int, options: _Options) -> tuple[np.ndarray, np.ndarray | None]:
    """(index inside the axis, validity or None when every tap is valid) of integer taps ``i``."""
    if options.padding == "zeros":
        valid = (i >= 0) & (i < length)
        return np.clip(i, 0, length - 1), valid
    if options.padding == "border":
        return np.clip(i, 0, length - 1), None
    if options.align:  # reflect about the centres of the border pixels
        if length == 1:
            return np.zeros_like(i), None
        period = 2 * (length - 1)
        m = np.mod(i, period)
        return np.where(m >= length, period - m, m), None
    period = 2 * length  # reflect about the outer edges of the border pixels
    m = np.mod(i, period)
    return np.where(m >= length, period - 1 - m, m), None


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys' weights of the taps at distances 1 + t, t, 1 - t, 2 - t (0 <= t < 1)."""
    a = CUBIC_A

    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a

    return [far(1.0 + t), near(t), near(1.0 - t), far(2.0 - t)]


def _axis_taps(
    x: np.ndarray, length: int, options: _Options
) -> tuple[list[np.ndarray], list[np.ndarray] | None, list[np.ndarray | None]]:
    """(indices, weights or None for nearest, validity per tap) of pixel coordinates ``x``."""
    safe = np.where(np.isnan(x), 0.0, x)
    if options.mode == "nearest":
        index, valid = _tap_index(np.rint(safe).astype(np.int64), length, options)
        return [index], None, [valid]
    base = np.floor(safe)
    t = safe - base
    first = base.astype(np.int64)
    if options.mode == "linear":
        offsets, weights = (0, 1), [1.0 - t, t]
    else:
        offsets, weights = (-1, 0, 1, 2), _cubic_weights(t)
    indices, valids = [], []
    for k in offsets:
        index, valid = _tap_index(first + k, length, options)
        indices.append(index)
        valids.append(valid)
    return indices, weights, valids


# ---------------------------------------------------------------------------------------------
# sampling


CHUNK = 1 << 22
"""Output elements (points times channels) the numpy path computes at a time: its float64 temporaries
(a few per element) stay bounded whatever the output's size."""


def _sample(x: np.ndarray, g: np.ndarray, out_shape: tuple[int, ...], options: _Options) -> np.ndarray:
    """The numpy path: channels last (each tap gathers the C values of a pixel at once), output points
    in chunks of about CHUNK elements."""
    n, c = x.shape[:2]
    size = math.prod(x.shape[2:])
    points = math.prod(out_shape[2:])
    u = g.reshape(n * points, x.ndim - 2)
    table = np.ascontiguousarray(x.reshape(n, c, size).transpose(0, 2, 1)).reshape(n * size, c)
    result = np.empty((n * points, c), dtype=x.dtype)
    step = max(1, CHUNK // max(c, 1))
    finite = x.dtype.kind not in "fc" or bool(np.isfinite(x).all())  # once, not once a chunk
    for start in range(0, n * points, step):
        stop = min(start + step, n * points)
        result[start:stop] = _sample_points(table, finite, u[start:stop], start, x.shape, points, options)
    out = result.reshape(n, points, c).transpose(0, 2, 1).reshape(out_shape)
    return np.ascontiguousarray(out)


def _sample_points(
    table: np.ndarray,
    finite: bool,
    u: np.ndarray,
    first: int,
    shape: tuple[int, ...],
    points: int,
    options: _Options,
) -> np.ndarray:
    """Output points [first, first + len(u)) (numbered across the batch) of normalized coordinates
    ``u``, as (points, C) rows; ``finite``: X holds no inf or NaN (taps of weight 0 need no masking)."""
    spatial = shape[2:]
    r = len(spatial)
    with np.errstate(over="ignore", invalid="ignore"):
        coords = [_coordinates(u[:, r - 1 - a].astype(np.float64), spatial[a], options) for a in range(r)]
    undefined = np.zeros(len(u), dtype=bool)
    for coord in coords:
        undefined |= np.isnan(coord)
    if undefined.any() and table.dtype.kind not in "fc":
        raise KernelError(
            f"grid holds location(s) that are NaN (or infinite under reflection); X of type {table.dtype} "
            "has no NaN to give there (float X gives NaN)"
        )
    base = (np.arange(first, first + len(u), dtype=np.int64) // points) * math.prod(spatial)
    strides = [math.prod(spatial[a + 1 :]) for a in range(r)]
    taps = [_axis_taps(coords[a], spatial[a], options) for a in range(r)]
    if options.mode == "nearest":
        return _nearest(table, base, strides, taps, undefined, table.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 terms are dropped right after
        return _interpolate(table, finite, base, strides, taps, undefined, table.dtype)


def _nearest(
    table: np.ndarray,
    base: np.ndarray,
    strides: list[int],
    taps: list[tuple[list[np.ndarray], Any, list[np.ndarray | None]]],
    undefined: np.ndarray,
    dtype: np.dtype,
) -> np.ndarray:
    flat = base.copy()
    valid = None
    for stride, (indices, _, valids) in zip(strides, taps, strict=True):
        flat += indices[0] * stride
        if valids[0] is not None:
            valid = valids[0] if valid is None else valid & valids[0]
    out = table[flat]
    if valid is not None and not valid.all():
        out[~valid] = _zero_of(dtype)
    if undefined.any():
        out[undefined] = np.nan
    return out


def _interpolate(
    table: np.ndarray,
    finite: bool,
    base: np.ndarray,
    strides: list[int],
    taps: list[tuple[list[np.ndarray], Any, list[np.ndarray | None]]],
    undefined: np.ndarray,
    dtype: np.dtype,
) -> np.ndarray:
    compute = np.complex128 if dtype.kind == "c" else np.float64
    source = table.view(np.uint8) if dtype.kind == "b" else table
    acc = np.zeros((base.size, table.shape[1]), dtype=compute)
    term = np.empty_like(acc)
    for combo in itertools.product(*(range(len(t[0])) for t in taps)):
        flat = base.copy()
        weight = np.ones(base.size)
        for stride, (indices, weights, valids), k in zip(strides, taps, combo, strict=True):
            flat += indices[k] * stride
            weight = weight * weights[k]
            if valids[k] is not None:
                weight = np.where(valids[k], weight, 0.0)
        np.multiply(source[flat], weight[:, None], out=term)
        if not finite:
            term[weight == 0.0] = 0
        acc += term
    if undefined.any():
        acc[undefined] = np.nan
    return finish(acc, dtype)


# ---------------------------------------------------------------------------------------------
# the compiled path: two spatial axes, float32 and float64 (customops.accel.spatial.grid_sample_loops)

_MODE_CODES = {
    "nearest": grid_sample_loops.NEAREST,
    "linear": grid_sample_loops.LINEAR,
    "cubic": grid_sample_loops.CUBIC,
}
_PADDING_CODES = {
    "zeros": grid_sample_loops.ZEROS,
    "border": grid_sample_loops.BORDER,
    "reflection": grid_sample_loops.REFLECTION,
}


def _compiled_2d(x: np.ndarray, g: np.ndarray, out_shape: tuple[int, ...], options: _Options) -> np.ndarray:
    """The numpy path's result from the compiled loop, split over output points."""
    return _direct(x.shape, x.dtype, out_shape, options)(x, g)


def _direct(
    shape: tuple[int, ...], dtype: np.dtype, out_shape: tuple[int, ...], options: _Options
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The compiled path for X of ``shape`` and ``dtype`` as one function of (X, grid), everything but
    the data resolved here, once per shape when bound (a tiny call spends microseconds per step)."""
    n, c, h, w = shape
    points = out_shape[2] * out_shape[3]
    codes = (_MODE_CODES[options.mode], _PADDING_CODES[options.padding], int(options.align))
    params = np.array([h, w, *codes, c, points], np.int64)
    work = n * points * c * _TAPS[options.mode] ** 2
    units = n * -(-points // grid_sample_loops.BLOCK)
    loop = jit.get("grid_sample_2d", grid_sample_loops)
    serial = parallel.serial(work)

    def direct(x: np.ndarray, g: np.ndarray) -> np.ndarray:
        grid = np.ascontiguousarray(g.reshape(n * points, 2), dtype=np.float64)
        out = np.empty(n * c * points, dtype)
        flat = np.ascontiguousarray(x).reshape(-1)
        if serial:
            loop(flat, grid, params, out, 0, units)
        else:
            parallel.run(loop, units, work, flat, grid, params, out)
        return out.reshape(out_shape)

    return direct
