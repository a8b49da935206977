"""ONNX Col2Im (opset 18): rearrange column blocks into an N-dimensional image, summing overlaps."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.accel import jit, parallel
from customops.accel.padding import col2im_loops
from customops.accel.plans import plan_cache
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import int_list, ints

__all__ = ["bind", "col2im"]


def _overlap_range(start: int, step: int, count: int, size: int) -> tuple[int, int]:
    """Indices [lo, hi) of k in range(count) with 0 <= start + k*step < size (step > 0)."""
    lo = max(0, -(start // step))  # ceil(-start / step)
    hi = min(count, (size - 1 - start) // step + 1) if size - 1 - start >= 0 else 0
    return lo, max(lo, hi)


def col2im(
    input: np.ndarray,
    image_shape: np.ndarray | Sequence[int],
    block_shape: np.ndarray | Sequence[int],
    *,
    dilations: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """Rearrange ``input`` of shape [N, C * prod(block_shape), L] into an image [N, C, *image_shape].

    Block ``l`` (blocks enumerated in lexicographic order of their position) of channel ``c`` is
    placed at its position on the image padded by ``pads`` (all begins, then all ends; default 0),
    with ``strides`` between blocks and ``dilations`` between block elements (both default 1);
    elements landing in the padding are dropped and overlapping elements are summed. Any number of
    spatial axes is accepted. Integer sums wrap around; for bool the sum is logical OR; for strings it
    is concatenation in block order, with the empty string where no block lands. Returns a new
    C-contiguous array of the input's dtype.
    """
    x = np.asarray(input)
    return execute(prepare(x, image_shape, block_shape, dilations, pads, strides), x)


def prepare(
    x: np.ndarray,
    image_shape: Any,
    block_shape: Any,
    dilations: Any,
    pads: Any,
    strides: Any,
) -> PreparedCol2Im:
    """Check the arguments against x's shape; raises KernelError."""
    if x.ndim != 3:
        raise KernelError(f"input must be 3-D [N, C * prod(block_shape), L], got shape {x.shape!r}")
    image, block = _image_and_block(image_shape, block_shape)
    rank = len(image)
    dil = ints(dilations, "dilations", rank, 1, 1)
    stride = ints(strides, "strides", rank, 1, 1)
    pad = ints(pads, "pads", 2 * rank, 0, 0)
    begin, end = pad[:rank], pad[rank:]

    n, ck, length = x.shape
    kernel = math.prod(block)
    if ck % kernel:
        raise KernelError(
            f"input dimension 1 ({ck}) is not a multiple of prod(block_shape {block!r}) = {kernel}"
        )
    channels = ck // kernel
    blocks = _block_counts(image, block, dil, stride, begin, end)
    if length != math.prod(blocks):
        raise KernelError(
            f"input dimension 2 ({length}) does not match the number of blocks {blocks!r} = "
            f"{math.prod(blocks)} for image_shape {image!r}, block_shape {block!r}, pads {pad!r}, "
            f"strides {stride!r}, dilations {dil!r}"
        )

    out_shape = (n, channels, *image)
    limits.check_output(out_shape, x.dtype)
    geometry = _geometry(x.dtype, block, blocks, dil, stride, begin)
    return PreparedCol2Im(
        x.shape,
        x.dtype,
        out_shape,
        (n, channels, *block, *blocks),
        _operations(block, blocks, image, dil, stride, begin, x.dtype.kind in "OUS"),
        geometry,
        _direct(out_shape, x.dtype, geometry, x.size),
    )


def _image_and_block(image_shape: Any, block_shape: Any) -> tuple[list[int], list[int]]:
    """image_shape and block_shape as lists, one entry per spatial axis; raises KernelError."""
    image = int_list(image_shape, "image_shape")
    block = int_list(block_shape, "block_shape")
    rank = len(image)
    if rank == 0:
        raise KernelError("image_shape is empty; it needs one entry per spatial axis")
    if len(block) != rank:
        raise KernelError(
            f"block_shape {block!r} has {len(block)} entries but image_shape {image!r} has {rank}"
        )
    for v in image:
        if v < 0:
            raise KernelError(f"image_shape {image!r} contains {v!r}; sizes must be >= 0")
    for v in block:
        if v < 1:
            raise KernelError(f"block_shape {block!r} contains {v!r}; sizes must be positive")
    return image, block


def _block_counts(
    image: list[int], block: list[int], dil: list[int], stride: list[int], begin: list[int], end: list[int]
) -> list[int]:
    """How many block positions fit along each spatial axis of the padded image; raises KernelError
    where none does."""
    blocks = []
    for i in range(len(image)):
        extent = dil[i] * (block[i] - 1) + 1
        count = (image[i] + begin[i] + end[i] - extent) // stride[i] + 1
        if count < 1:
            raise KernelError(
                f"block of extent {extent} (block_shape {block[i]}, dilation {dil[i]}) does not fit in "
                f"spatial axis {i} of size {image[i]} padded by {begin[i]} and {end[i]}"
            )
        blocks.append(count)
    return blocks


@dataclass(frozen=True)
class PreparedCol2Im:
    """A validated Col2Im of one input shape and dtype: the slice-adds, or the compiled loop's geometry."""

    shape: tuple[int, ...]
    dtype: np.dtype
    out_shape: tuple[int, ...]
    cols_shape: tuple[int, ...]
    operations: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...]
    geometry: np.ndarray | None
    direct: Callable[[np.ndarray], np.ndarray] | None = None
    """The compiled path as one function of a C-contiguous input, everything else resolved when
    planned (:func:`_direct`), or None."""


def _operations(
    block: list[int],
    blocks: list[int],
    image: list[int],
    dil: list[int],
    stride: list[int],
    begin: list[int],
    strings: bool,
) -> tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...]:
    """(target, source) index pairs: one strided slice-add per kernel offset, covering every block.

    Numbers are accumulated in increasing kernel-offset order; strings in decreasing order, which puts
    the contributions to one pixel in increasing block order.
    """
    offsets = list(itertools.product(*(range(b) for b in block)))
    if strings:
        offsets.reverse()
    operations = []
    for offset in offsets:
        dest = []
        src = []
        for i, k in enumerate(offset):
            start = k * dil[i] - begin[i]
            lo, hi = _overlap_range(start, stride[i], blocks[i], image[i])
            if hi == lo:
                break
            first = start + lo * stride[i]
            dest.append(slice(first, first + (hi - lo - 1) * stride[i] + 1, stride[i]))
            src.append(slice(lo, hi))
        else:
            operations.append(((slice(None), slice(None), *dest), (slice(None), slice(None), *offset, *src)))
    return tuple(operations)


_JIT_TYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64))


def _geometry(
    dtype: np.dtype, block: list[int], blocks: list[int], dil: list[int], stride: list[int], begin: list[int]
) -> np.ndarray | None:
    """The compiled loop's parameters for 2-D images of a type it handles, else None."""
    if len(block) != 2 or dtype not in _JIT_TYPES or not jit.enabled():
        return None
    return np.array(
        [block[0], block[1], dil[0], dil[1], begin[0], begin[1], stride[0], stride[1], blocks[0], blocks[1]],
        dtype=np.int64,
    )


def _direct(
    out_shape: tuple[int, ...], dtype: np.dtype, geometry: np.ndarray | None, work: int
) -> Callable[[np.ndarray], np.ndarray] | None:
    """The compiled loop's result as a function of a C-contiguous x, or None without ``geometry`` or
    with no image: the loop zeroes and fills each image of the output, with x and the output as they
    are (no reshaped views to make). The loop and the thread split are chosen here, once: inside a
    session a tiny call spends several microseconds on each Python step it takes."""
    images = out_shape[0] * out_shape[1]
    if geometry is None or not images:
        return None
    loop = jit.get("col2im_2d", col2im_loops)
    if parallel.serial(work):

        def small(x: np.ndarray) -> np.ndarray:
            out = np.empty(out_shape, dtype=dtype)
            loop(x, out, geometry, 0, images)
            return out

        return small

    def split(x: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        parallel.run(loop, images, work, x, out, geometry)
        return out

    return split


def execute(prepared: PreparedCol2Im, x: np.ndarray) -> np.ndarray:
    """Col2Im of x (of the prepared shape and dtype) by the prepared geometry."""
    if prepared.direct is not None:
        return prepared.direct(np.ascontiguousarray(x))
    dtype = prepared.dtype
    strings = dtype.kind in "OUS"
    if strings:
        out = np.empty(prepared.out_shape, dtype=object)
        out[...] = ""
    else:
        out = np.zeros(prepared.out_shape, dtype=dtype)
    if out.size == 0:
        return out.astype(dtype.kind) if dtype.kind in "US" else out
    cols = x.reshape(prepared.cols_shape)
    if strings:
        cols = cols.astype(object)
    for target, source in prepared.operations:
        if strings:
            try:
                out[target] = out[target] + cols[source]
            except TypeError as exc:
                raise KernelError(f"string input holds a non-string element: {exc}") from None
        else:
            out[target] += cols[source]
    return out.astype(dtype.kind) if dtype.kind in "US" else out


def bind(
    dilations: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> Any:
    """``col2im`` with its attributes fixed, for repeated calls (the ONNX Runtime hook): the validated
    geometry is kept per input shape, dtype, image_shape and block_shape. Errors are raised on every call."""
    plan = plan_cache(lambda x, image, block: prepare(x, image, block, dilations, pads, strides))

    def bound(input: Any, image_shape: Any, block_shape: Any) -> np.ndarray:
        x = input if type(input) is np.ndarray else np.asarray(input)
        prepared: PreparedCol2Im = plan(x, image_shape, block_shape)
        direct = prepared.direct
        if direct is not None and x.flags.c_contiguous:
            return direct(x)
        return execute(prepared, x)

    return bound
