"""ONNX ConvInteger (version 10): Conv of ``x - x_zero_point`` and ``w - w_zero_point``, in int32.

The shifted input is padded with zeros (a padded position contributes nothing, as the real value 0 it
stands for), any number of spatial axes. Products and sums are exact; as MatMulInteger, a sum beyond int32
is returned modulo 2**32 (the spec's "the accumulation may overflow if and only if in 32 bits": what an
int32 accumulator gives, whatever its order). :func:`integer_conv` is the exact sum, shared with
QLinearConv.

The convolution is one matrix product per image and group of the weights and the im2col matrix of the
input positions each output reads (0 where a position is padding), exact in float32 BLAS for 8-bit
operands (arithmetic.exact_matmul). A convolution whose im2col matrix would exceed :data:`COLUMNS`
elements adds, for each kernel position, one matrix product per group of the weights at that position
and the input positions it reads (a strided view of x, outside the padding only) instead: no padded
copy of x and no column matrix larger than x are made.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import choice, int_values, integer, ints, is_absent
from customops.kernels.quantized.arithmetic import (
    FLOAT_EXACT,
    element_of,
    exact_matmul,
    magnitude,
    shifted,
    single,
    version_of,
)
from customops.kernels.quantized.binding import binder

__all__ = ["AUTO_PADS", "Geometry", "bind", "conv_integer", "geometry", "integer_conv"]

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
EIGHT_BITS = ("int8", "uint8")


def conv_integer(
    x: np.ndarray,
    w: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    w_zero_point: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Any = None,
    group: int = 1,
    kernel_shape: Any = None,
    pads: Any = None,
    strides: Any = None,
    version: int = 10,
) -> np.ndarray:
    """Conv of int8 or uint8 ``x`` [N, C, D1..Dr] and ``w`` [M, C/group, k1..kr] less their zero points
    (x_zero_point one value; w_zero_point one value or one per output channel [M]; absent or empty: 0),
    as a new C-contiguous int32 array [N, M, o1..or]: the exact sum, modulo 2**32 where it leaves int32.
    Attributes as ONNX Conv's. Raises KernelError for every invalid input."""
    version_of("ConvInteger", version, (10,))
    x, w = np.asarray(x), np.asarray(w)
    x_type = element_of(x, "x", EIGHT_BITS)
    w_type = element_of(w, "w", EIGHT_BITS)
    geo = geometry(x.shape, w.shape, auto_pad, dilations, group, kernel_shape, pads, strides)
    x_zero = _zero(x_zero_point, "x_zero_point", x_type.name, None, 0)
    w_zero = _zero(w_zero_point, "w_zero_point", w_type.name, w.shape[0], w.ndim - 1)
    limits.check_output(geo.out_shape, np.float64)
    acc = integer_conv(shifted(x, x_zero), shifted(w, w_zero), geo)
    return acc.astype(np.int32, order="C")


def _zero(value: Any, name: str, type_name: str, channels: int | None, trailing: int) -> np.ndarray:
    """A zero point as int64, shaped to broadcast against x (one value) or w (one value, or one per
    output channel when ``channels`` is given)."""
    if value is None or is_absent(value):
        return np.zeros((), dtype=np.int64)
    value = np.asarray(value)
    element_of(value, name, (type_name,))
    return channel_values(value, name, channels, trailing).astype(np.int64)


def channel_values(value: np.ndarray, name: str, channels: int | None, trailing: int) -> np.ndarray:
    """A scale or zero point that is one value, or (``channels`` given) one per output channel, shaped
    to broadcast as the first of 1 + ``trailing`` axes (w [M, C/group, k...], or the output's channel
    axis and those after it); raises KernelError for another shape."""
    if single(value.shape):
        return value.reshape(())
    if channels is not None and value.shape == (channels,):
        return value.reshape((channels,) + (1,) * trailing)
    allowed = "one value" + (f" or one per output channel ({channels},)" if channels is not None else "")
    raise KernelError(f"{name} has shape {value.shape!r}; it must be {allowed}")


@dataclass(frozen=True)
class Geometry:
    """A validated convolution: sizes along the spatial axes and the channel groups."""

    batch: int
    channels: int
    out_channels: int
    group: int
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    dilations: tuple[int, ...]
    strides: tuple[int, ...]
    begin: tuple[int, ...]
    out: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.batch, self.out_channels, *self.out)


def geometry(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    auto_pad: Any,
    dilations: Any,
    group: Any,
    kernel_shape: Any,
    pads: Any,
    strides: Any,
) -> Geometry:
    """The checked geometry of a Conv of x and w; raises KernelError naming the rule broken."""
    if len(x_shape) < 3 or len(w_shape) != len(x_shape):
        raise KernelError(
            f"x {x_shape!r} must be [N, C, D1, ...] (at least one spatial axis) and w {w_shape!r} "
            "[M, C/group, k1, ...] of the same rank"
        )
    r = len(x_shape) - 2
    kernel = tuple(int(k) for k in w_shape[2:])
    if not is_absent(kernel_shape) and tuple(int_values(kernel_shape, "kernel_shape")) != kernel:
        raise KernelError(
            f"kernel_shape {list(int_values(kernel_shape, 'kernel_shape'))} is not w's {list(kernel)}"
        )
    dil = tuple(ints(dilations, "dilations", r, 1, 1))
    stride = tuple(ints(strides, "strides", r, 1, 1))
    groups = integer(group, "group", 1)
    channels, out_channels = int(x_shape[1]), int(w_shape[0])
    if w_shape[1] * groups != channels:
        raise KernelError(
            f"w's dimension 1 ({w_shape[1]}) times group ({groups}) must equal x's channels ({channels})"
        )
    if out_channels % groups:
        raise KernelError(f"w's output channels ({out_channels}) are not divisible by group ({groups})")
    spatial = tuple(int(d) for d in x_shape[2:])
    mode = choice(auto_pad, "auto_pad", AUTO_PADS)
    begin, end = _padding(mode, pads, spatial, kernel, dil, stride)
    out = []
    for i in range(r):
        extent = dil[i] * (kernel[i] - 1) + 1
        size = (spatial[i] + begin[i] + end[i] - extent) // stride[i] + 1
        if mode.startswith("SAME"):
            size = -(-spatial[i] // stride[i])  # the same as above wherever the axis is not empty
        elif size < 1:
            raise KernelError(
                f"kernel of extent {extent} (size {kernel[i]}, dilation {dil[i]}) does not fit in spatial "
                f"axis {i} of x (size {spatial[i]}, padded by {begin[i]} and {end[i]})"
            )
        out.append(size)
    return Geometry(
        int(x_shape[0]), channels, out_channels, groups, spatial, kernel, dil, stride, begin, tuple(out)
    )


def _padding(
    mode: str,
    pads: Any,
    spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    dil: tuple[int, ...],
    stride: tuple[int, ...],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The begin and end pads of each spatial axis: ``pads`` (NOTSET), none (VALID), or SAME_UPPER /
    SAME_LOWER's, which give ceil(D / stride) outputs with the odd pad at the end / beginning."""
    r = len(spatial)
    if mode == "NOTSET":
        values = ints(pads, "pads", 2 * r, 0, 0)
        return tuple(values[:r]), tuple(values[r:])
    if not is_absent(pads):
        raise KernelError(f"pads cannot be given with auto_pad {mode!r}")
    if mode == "VALID":
        return (0,) * r, (0,) * r
    begin, end = [], []
    for d, k, di, s in zip(spatial, kernel, dil, stride, strict=True):
        total = max(0, (-(-d // s) - 1) * s + (k - 1) * di + 1 - d)
        first = total // 2 if mode == "SAME_UPPER" else total - total // 2
        begin.append(first)
        end.append(total - first)
    return tuple(begin), tuple(end)


def _reach(start: int, step: int, count: int, size: int) -> tuple[int, int]:
    """The output indices [lo, hi) whose input index start + o * step lies in [0, size)."""
    lo = max(0, -(start // step))  # ceil(-start / step)
    hi = min(count, (size - 1 - start) // step + 1) if size - 1 - start >= 0 else 0
    return lo, max(lo, hi)


COLUMNS = 1 << 23
"""The most elements of an im2col matrix (one image, one group: 32 MiB of float32 operands)
:func:`integer_conv` makes; a larger convolution adds one product per kernel position instead, with no
matrix larger than x."""


def integer_conv(xs: np.ndarray, ws: np.ndarray, geo: Geometry, *, blas: bool = True) -> np.ndarray:
    """The convolution of integer-valued arrays ``xs`` [N, C, D...] and ``ws`` [M, C/group, k...] (integers,
    or floats below 2**53) by ``geo``, as exact int64 sums [N, M, o...]: one exact matrix product per
    image and group over an im2col matrix (:func:`customops.kernels.quantized.arithmetic.exact_matmul`:
    float32 BLAS for 8-bit operands) when that matrix has at most :data:`COLUMNS` elements; else one
    product per kernel position, in float64 when every partial sum, bounded by C/group * prod(k) * max|xs|
    * max|ws|, stays below 2**53, else in int64. ``blas=False`` chooses the int64 products per kernel
    position, the path the others are tested against."""
    terms = (geo.channels // geo.group) * math.prod(geo.kernel)
    if math.prod(geo.out_shape) == 0 or terms == 0:
        return np.zeros(geo.out_shape, dtype=np.int64)
    if blas and terms * math.prod(geo.out) <= COLUMNS:
        return _im2col_conv(xs, ws, geo)
    exact_float = blas and terms * magnitude(xs) * magnitude(ws) < FLOAT_EXACT
    kind = np.float64 if exact_float else np.int64
    acc = np.zeros(geo.out_shape, dtype=kind)
    xs, ws = xs.astype(kind, copy=False), ws.astype(kind, copy=False)
    per, oc = geo.channels // geo.group, geo.out_channels // geo.group
    for offset in itertools.product(*(range(k) for k in geo.kernel)):
        reach = _window(geo, offset)
        if reach is None:
            continue
        out_index, in_index, shape = reach
        for g in range(geo.group):
            taps = xs[(slice(None), slice(g * per, (g + 1) * per), *in_index)].reshape(geo.batch, per, -1)
            weights = ws[(slice(g * oc, (g + 1) * oc), slice(None), *offset)]
            part = np.matmul(weights, taps).reshape(geo.batch, oc, *shape)
            acc[(slice(None), slice(g * oc, (g + 1) * oc), *out_index)] += part
    return acc.astype(np.int64)


def _im2col_conv(xs: np.ndarray, ws: np.ndarray, geo: Geometry) -> np.ndarray:
    """:func:`integer_conv` as exact matrix products over im2col matrices: per image, a block of groups at
    a time (as many as :data:`COLUMNS` elements hold, so a depthwise convolution is one batched product,
    not one per channel), each group's weights [M/group, C/group * prod(k)] times the input positions
    each output reads ([C/group * prod(k), prod(o)], 0 where the position is padding)."""
    per, oc = geo.channels // geo.group, geo.out_channels // geo.group
    offsets = list(itertools.product(*(range(k) for k in geo.kernel)))
    windows = [_window(geo, offset) for offset in offsets]
    terms, positions = per * len(offsets), math.prod(geo.out)
    weights = ws.reshape(geo.group, oc, terms)
    acc = np.empty((geo.batch, geo.group, oc, positions), dtype=np.int64)
    largest = magnitude(xs) * magnitude(ws)  # the im2col matrices hold xs's values and zeros
    step = max(1, COLUMNS // (terms * positions))
    for n, first in itertools.product(range(geo.batch), range(0, geo.group, step)):
        last = min(geo.group, first + step)
        columns = _columns(xs[n, first * per : last * per], windows, geo)
        product = exact_matmul(
            weights[first:last], columns.reshape(last - first, terms, positions), largest=largest
        )
        acc[n, first:last] = product
    return acc.reshape(geo.out_shape)


def _columns(image: np.ndarray, windows: list, geo: Geometry) -> np.ndarray:
    """The im2col matrix of ``image`` [C', D...]: [C', kernel positions, o...], each position's taps of
    each output, 0 where the tap is padding."""
    columns = np.empty((image.shape[0], len(windows), *geo.out), dtype=image.dtype)
    for i, reach in enumerate(windows):
        if reach is None:
            columns[:, i] = 0
            continue
        columns[(slice(None), i, *reach[0])] = image[(slice(None), *reach[1])]
        _zero_outside(columns[:, i], reach[0])
    return columns


def _zero_outside(plane: np.ndarray, window: tuple[slice, ...]) -> None:
    """Set ``plane`` [C, o...] to 0 outside ``window`` (one slice per spatial axis): for each axis, the
    parts before and after its slice, within the slices of the axes before it."""
    inside: list[slice] = [slice(None)]
    for part in window:
        plane[(*inside, slice(0, part.start))] = 0
        plane[(*inside, slice(part.stop, None))] = 0
        inside.append(part)


def _window(
    geo: Geometry, offset: tuple[int, ...]
) -> tuple[tuple[slice, ...], tuple[slice, ...], tuple[int, ...]] | None:
    """For kernel position ``offset``: the output positions whose tap lands inside x, the x positions
    they read (strided slices) and their shape; None when no tap lands inside."""
    out_index, in_index, shape = [], [], []
    for i, k in enumerate(offset):
        start = k * geo.dilations[i] - geo.begin[i]
        lo, hi = _reach(start, geo.strides[i], geo.out[i], geo.spatial[i])
        if hi == lo:
            return None
        first = start + lo * geo.strides[i]
        out_index.append(slice(lo, hi))
        in_index.append(slice(first, first + (hi - lo - 1) * geo.strides[i] + 1, geo.strides[i]))
        shape.append(hi - lo)
    return tuple(out_index), tuple(in_index), tuple(shape)


bind = binder(conv_integer)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
