"""ONNX DeformConv (opsets 19, 22): convolution whose kernel taps sample the input at learned offsets.

For output position ``o`` and kernel position ``k`` of offset group ``g`` the tap of every input channel
of ``g`` reads the input at ``o * strides - pads_begin + k * dilations + offset[n, g, k, :, o]``
(one coordinate per spatial axis, in axis order: (y, x) in 2-D), interpolated multilinearly from the
2^r surrounding pixels; pixels outside the input are zero, so a coordinate at or beyond -1 or the axis
length on any axis samples zero. The sample is scaled by ``mask[n, g, k, o]`` (default 1), and the
samples of a group's channels are convolved with ``W`` as in Conv (``group`` groups of channels), plus
``B`` (default 0). Any number r >= 1 of spatial axes is accepted (docs/semantics.md).

The computation is a deformable im2col: for each image and chunk of output positions, the samples of
every channel and kernel position (a column buffer of at most :data:`COLUMN_BUDGET` elements) are
gathered with numpy (or the compiled loop of :mod:`customops.accel`), then one matrix product per group.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.accel import jit, parallel
from customops.accel.spatial import deform_loops
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import int_values, integer, ints, is_absent

__all__ = ["bind", "deform_conv"]

COLUMN_BUDGET = 1 << 22
"""Most elements of the column buffer and the corner tables of one chunk (kernel positions x output
positions x (channels + 2^(r+1))); the output positions of an image are processed in chunks that fit
it."""

MAX_SPATIAL = 10
"""Most spatial axes: a sample interpolates 2^r corners, so the work grows as 2^r whatever the data."""

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def deform_conv(
    X: np.ndarray,
    W: np.ndarray,
    offset: np.ndarray,
    B: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    *,
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    offset_group: int = 1,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """DeformConv of X [N, C, D1..Dr] with W [oC, C/group, k1..kr] sampling at ``offset``
    [N, offset_group * prod(k) * r, o1..or], optional ``mask`` [N, offset_group * prod(k), o1..or]
    and bias ``B`` [oC] (None or empty: absent). Returns a new C-contiguous [N, oC, o1..or] array of
    X's dtype (float32 or float64). Raises KernelError for every invalid input."""
    x, w, off = (np.asarray(a) for a in (X, W, offset))
    geo = _geometry(x, w, off, dilations, group, kernel_shape, offset_group, pads, strides)
    bias = _optional(B, "B", (geo.out_channels,), x.dtype)
    scale = _optional(mask, "mask", (x.shape[0], geo.offset_group * geo.taps, *geo.out), x.dtype)
    out_shape = (x.shape[0], geo.out_channels, *geo.out)
    limits.check_output(out_shape, x.dtype)
    # with no channel there is nothing to sum (and group may be any size: no loop runs over it)
    out = np.empty(out_shape, dtype=x.dtype) if geo.channels else np.zeros(out_shape, dtype=x.dtype)
    flat = out.reshape(x.shape[0], geo.out_channels, geo.positions)
    if geo.channels and out.size:
        weights = _group_weights(geo, w)
        for n in range(x.shape[0]):
            _image(geo, x[n], weights, off[n], None if scale is None else scale[n], flat[n])
    if bias is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            flat += bias[:, None]
    return out


@dataclass(frozen=True)
class _Geometry:
    """A validated DeformConv: sizes along the spatial axes and the channel partitions."""

    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    dilations: tuple[int, ...]
    strides: tuple[int, ...]
    begin: tuple[int, ...]
    out: tuple[int, ...]
    channels: int
    out_channels: int
    group: int
    offset_group: int

    @property
    def taps(self) -> int:
        return math.prod(self.kernel)

    @property
    def positions(self) -> int:
        return math.prod(self.out)


def _geometry(
    x: np.ndarray,
    w: np.ndarray,
    off: np.ndarray,
    dilations: Any,
    group: Any,
    kernel_shape: Any,
    offset_group: Any,
    pads: Any,
    strides: Any,
) -> _Geometry:
    """Check every shape and attribute; raises KernelError."""
    for name, a in (("X", x), ("W", w), ("offset", off)):
        if a.dtype not in _FLOATS:
            raise KernelError(f"{name} must be float32 or float64, got {a.dtype}")
        if a.dtype != x.dtype:
            raise KernelError(f"{name} has dtype {a.dtype} but X has {x.dtype}; all inputs share one type")
    if x.ndim < 3:
        raise KernelError(
            f"X must have shape [N, C, D1, ...] with at least one spatial axis, got {x.shape!r}"
        )
    r = x.ndim - 2
    if r > MAX_SPATIAL:
        raise KernelError(
            f"X has {r} spatial axes; at most {MAX_SPATIAL} are accepted (each sample interpolates "
            f"2^{r} corners)"
        )
    if w.ndim != x.ndim:
        raise KernelError(f"W must have rank {x.ndim} [oC, C/group, k1..k{r}] like X, got shape {w.shape!r}")
    kernel = tuple(int(k) for k in w.shape[2:])
    if kernel_shape is not None and np.asarray(kernel_shape).size:
        given = tuple(int_values(kernel_shape, "kernel_shape"))
        if given != kernel:
            raise KernelError(f"kernel_shape {list(given)!r} differs from W's spatial shape {list(kernel)!r}")
    if min(kernel) < 1:
        raise KernelError(
            f"W's kernel shape {list(kernel)!r} has an empty axis; kernel sizes must be positive"
        )
    geo = _sizes(x, w, kernel, dilations, group, offset_group, pads, strides)
    expected = (x.shape[0], geo.offset_group * geo.taps * r, *geo.out)
    if off.shape != expected:
        raise KernelError(
            f"offset has shape {off.shape!r}; expected {expected!r} [N, offset_group * prod(kernel) * "
            f"{r}, output sizes] for output sizes {list(geo.out)!r}"
        )
    return geo


def _sizes(
    x: np.ndarray,
    w: np.ndarray,
    kernel: tuple[int, ...],
    dilations: Any,
    group: Any,
    offset_group: Any,
    pads: Any,
    strides: Any,
) -> _Geometry:
    """The channel partitions and output sizes; raises KernelError."""
    r = x.ndim - 2
    dil = tuple(ints(dilations, "dilations", r, 1, 1))
    stride = tuple(ints(strides, "strides", r, 1, 1))
    pad = tuple(ints(pads, "pads", 2 * r, 0, 0))
    groups = integer(group, "group", 1)
    offset_groups = integer(offset_group, "offset_group", 1)
    channels, out_channels = int(x.shape[1]), int(w.shape[0])
    if w.shape[1] * groups != channels:
        raise KernelError(
            f"W's dimension 1 ({w.shape[1]}) times group ({groups}) must equal X's channels ({channels})"
        )
    if out_channels % groups:
        raise KernelError(f"W's output channels ({out_channels}) are not divisible by group ({groups})")
    if channels % offset_groups:
        raise KernelError(f"X's channels ({channels}) are not divisible by offset_group ({offset_groups})")
    out = []
    for i in range(r):
        extent = dil[i] * (kernel[i] - 1) + 1
        size = (x.shape[2 + i] + pad[i] + pad[r + i] - extent) // stride[i] + 1
        if size < 1:
            raise KernelError(
                f"kernel of extent {extent} (size {kernel[i]}, dilation {dil[i]}) does not fit in spatial "
                f"axis {i} of X (size {x.shape[2 + i]}, padded by {pad[i]} and {pad[r + i]}): output size {size}"
            )
        out.append(size)
    return _Geometry(
        tuple(int(d) for d in x.shape[2:]),
        kernel,
        dil,
        stride,
        pad[:r],
        tuple(out),
        channels,
        out_channels,
        groups,
        offset_groups,
    )


def _optional(value: Any, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
    """An optional input: None when absent (None or empty), else checked against ``shape``."""
    if is_absent(value):
        return None
    a = np.asarray(value)
    if a.dtype != dtype:
        raise KernelError(f"{name} has dtype {a.dtype} but X has {dtype}; all inputs share one type")
    if a.shape != shape:
        raise KernelError(f"{name} has shape {a.shape!r}; expected {shape!r}")
    return a


def _group_weights(geo: _Geometry, w: np.ndarray) -> np.ndarray:
    """W's columns of each group in (kernel position, channel) order: [group, K * C/group, oC/group]."""
    per_group, oc = geo.channels // geo.group, geo.out_channels // geo.group
    return np.ascontiguousarray(
        w.reshape(geo.group, oc, per_group, geo.taps)
        .transpose(0, 3, 2, 1)
        .reshape(geo.group, geo.taps * per_group, oc)
    )


def _image(
    geo: _Geometry,
    x: np.ndarray,
    weights: np.ndarray,
    off: np.ndarray,
    mask: np.ndarray | None,
    out: np.ndarray,
) -> None:
    """One image: ``out`` [oC, positions] from x [C, D...], off [og * K * r, o...], mask [og * K, o...]
    and the groups' ``weights`` (:func:`_group_weights`).

    The column buffer is [L, group, K, C/group] (L output positions of a chunk): each sample's channels
    side by side, and each conv group's columns one [L, K * C/group] matrix whose product with W's
    columns in (kernel position, channel) order gives the group's outputs."""
    r, taps, positions = len(geo.spatial), geo.taps, geo.positions
    off = off.reshape(geo.offset_group, taps, r, positions)
    mask = None if mask is None else mask.reshape(geo.offset_group, taps, positions)
    per_group, oc = geo.channels // geo.group, geo.out_channels // geo.group
    fill = _compiled(geo, x) or _numpy_columns(geo, x)
    # per kernel position and output position: a sample per channel, and 2^r corner indices and weights
    chunk = max(1, COLUMN_BUDGET // (taps * (geo.channels + 2 ** (r + 1))))
    cols = np.empty((min(chunk, positions), geo.group, taps, per_group), dtype=x.dtype)
    product = np.empty((min(chunk, positions), oc), dtype=x.dtype)
    for start in range(0, positions, chunk):
        stop = min(positions, start + chunk)
        part = cols[: stop - start]
        with np.errstate(invalid="ignore", over="ignore"):  # Inf * 0, overflow to Inf: IEEE results
            fill(off[..., start:stop], None if mask is None else mask[..., start:stop], start, part)
            for gi in range(geo.group):
                # [L, K * C/group] @ [K * C/group, oC/group], rows contiguous: OpenBLAS runs it on
                # one thread for small sizes (the transposed forms go to its threads and wait there)
                lhs = part[:, gi].reshape(stop - start, taps * per_group)
                np.matmul(lhs, weights[gi], out=product[: stop - start])
                out[gi * oc : (gi + 1) * oc, start:stop] = product[: stop - start].T


Fill = Callable[[np.ndarray, "np.ndarray | None", int, np.ndarray], None]
"""Fills the column buffer [L, group, K, C/group] from the chunk's offsets, mask and first output
position."""


def _compiled(geo: _Geometry, x: np.ndarray) -> Fill | None:
    """The compiled im2col of a 2-D image (customops.accel.spatial.deform_loops), or None."""
    if len(geo.spatial) != 2 or not jit.enabled() or not geo.channels or not geo.spatial[0]:
        return None
    loop = jit.get("deform_im2col_2d", deform_loops)
    if loop is None:
        return None
    pixels = math.prod(geo.spatial)
    # the pixels channels-last, then a row of 0 and a row of NaN: what corners outside the image and
    # NaN coordinates read
    image = np.empty((pixels + 2, geo.channels), dtype=x.dtype)
    image[:pixels] = x.reshape(geo.channels, pixels).T
    image[pixels] = 0
    image[pixels + 1] = np.nan
    dummy = np.ones((1, 1, 1), dtype=x.dtype)

    def fill(off: np.ndarray, mask: np.ndarray | None, start: int, cols: np.ndarray) -> None:
        geometry = np.array(
            [*geo.kernel, *geo.dilations, *geo.strides, *geo.begin, geo.out[1], start, mask is not None],
            dtype=np.int64,
        )
        scale = dummy if mask is None else mask
        parallel.run(loop, cols.shape[0], cols.size, image, geo.spatial[0], off, scale, geometry, cols)

    return fill


def _numpy_columns(geo: _Geometry, x: np.ndarray) -> Fill:
    """The numpy im2col: gathers of each corner over every channel and output position of a group."""
    pixels = math.prod(geo.spatial)
    # each channel's pixels, then a zero: corners outside the input read the zero
    padded = np.zeros((geo.channels, pixels + 1), dtype=x.dtype)
    padded[:, :pixels] = x.reshape(geo.channels, pixels)

    def fill(off: np.ndarray, mask: np.ndarray | None, start: int, cols: np.ndarray) -> None:
        _columns(geo, padded, off, mask, start, cols)

    return fill


def _columns(
    geo: _Geometry,
    padded: np.ndarray,
    off: np.ndarray,
    mask: np.ndarray | None,
    start: int,
    cols: np.ndarray,
) -> None:
    """Fill ``cols`` [L, group, K, C/group] with the masked samples of output positions
    start..start+L: each summed in float64 over its corners, then scaled by the mask in float64,
    rounded once."""
    per = geo.channels // geo.offset_group
    per_group = geo.channels // geo.group
    by_channel = cols.transpose(1, 3, 2, 0)  # [group, C/group, K, L]
    # kernel positions a block at a time: the corner tables hold 2^(r+1) entries per position and
    # output position (a chunk of one output position may still have more kernel positions than fit)
    step = max(1, COLUMN_BUDGET // (cols.shape[0] * 2 ** (len(geo.spatial) + 1)))
    for g in range(geo.offset_group):
        src = padded[g * per : (g + 1) * per]
        acc = np.zeros((per, geo.taps, cols.shape[0]), dtype=np.float64)
        for k0 in range(0, geo.taps, step):
            block = acc[:, k0 : k0 + step]
            index, weight, nan = _corners(geo, off[g, k0 : k0 + step], start, cols.shape[0], k0)
            for idx, wt in zip(index, weight, strict=True):
                block += np.take(src, idx, axis=1) * wt
            if nan is not None:
                block[:, nan] = np.nan
        if mask is not None:
            acc *= mask[g].astype(np.float64)
        # channels g * per .. (g + 1) * per, split at the conv groups' borders
        c = g * per
        while c < (g + 1) * per:
            gi, j = divmod(c, per_group)
            end = min((g + 1) * per, (gi + 1) * per_group)
            by_channel[gi, j : j + end - c] = acc[c - g * per : end - g * per]
            c = end


def _corners(
    geo: _Geometry, off: np.ndarray, start: int, length: int, first: int = 0
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray | None]:
    """For one offset group's offsets ``off`` [k, r, L] of kernel positions first..first+k: the flat
    pixel index and float64 weight [k, L] of each of the 2^r corners around every sampling point (the
    zero slot and weight 0 where the corner lies outside the input or has weight 0), and where a
    coordinate is NaN (None when none is)."""
    r = len(geo.spatial)
    pixels = math.prod(geo.spatial)
    pos = np.unravel_index(np.arange(start, start + length), geo.out)
    taps = np.unravel_index(np.arange(first, first + off.shape[0]), geo.kernel)
    nan = None
    lows, fracs, steps = [], [], []
    for d in range(r):
        base = (pos[d] * geo.strides[d] - geo.begin[d])[None, :]
        tap = (taps[d] * geo.dilations[d])[:, None]
        p = (base + tap).astype(np.float64) + off[:, d, :].astype(np.float64)
        bad = np.isnan(p)
        if bad.any():
            nan = bad if nan is None else nan | bad
            p = np.where(bad, -2.0, p)
        # outside (-1, size) every corner reads zero; clipping keeps it outside and the cast exact
        p = np.clip(p, -2.0, geo.spatial[d] + 1.0)
        low = np.floor(p)
        lows.append(low.astype(np.int64))
        fracs.append(p - low)
        steps.append(math.prod(geo.spatial[d + 1 :]))
    index, weight = [], []
    for corner in itertools.product((0, 1), repeat=r):
        flat = np.zeros(lows[0].shape, dtype=np.int64)
        wt = np.ones(lows[0].shape, dtype=np.float64)
        ok = np.ones(lows[0].shape, dtype=bool)
        for d, c in enumerate(corner):
            at = lows[d] + c
            wt = wt * (fracs[d] if c else 1 - fracs[d])
            ok &= (at >= 0) & (at < geo.spatial[d])
            flat += at * steps[d]
        ok &= wt != 0
        index.append(np.where(ok, flat, pixels))
        weight.append(np.where(ok, wt, 0.0))
    return index, weight, nan


def bind(**attrs: Any) -> Any:
    """``deform_conv`` with its attributes fixed (the ONNX Runtime hook)."""

    def bound(X: Any, W: Any, offset: Any, B: Any = None, mask: Any = None) -> np.ndarray:
        return deform_conv(X, W, offset, B, mask, **attrs)

    return bound
