"""ONNX Resize (versions 10 to 19) as a numpy kernel.

One function, :func:`resize`, accepts the union of every version's attributes; the translator rejects
attributes that a given opset version does not have. docs/semantics.md records where
the spec text, onnx.reference and ONNX Runtime disagree and what this kernel does.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from customops.accel import jit, parallel, resize_loops
from customops.accel.plans import Uncacheable, flat_key, planned, tracked
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import choice, flag, normalize_axes
from customops.kernels.rounding import finisher, saturate

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["bind", "resize"]

_MODES = ("nearest", "linear", "cubic")
_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")

# How many output positions share one dense block of the banded matrix (measured with numpy's
# bundled OpenBLAS on a 2-core x86-64 machine): along the last axis, the fewest whose band of inputs
# is at least _BAND_WIDTH wide (narrower products run far below peak); along other axes, a fixed
# _MIDDLE_BLOCK (the product then spans whole rows, so narrow bands cost little).
_BLOCK_LENGTHS = (8, 16, 32, 64, 128, 256, 512)
_BAND_WIDTH = 16
_MIDDLE_BLOCK = 16
_WIDE_BAND = 256
_GEMM_LIMIT = 1 << 18  # multiply-adds per matmul call: OpenBLAS runs calls this small on one thread
_TILE_BYTES = 4 << 20  # intermediate results are computed in slabs of about this size
_MAX_LENGTH = 2**53  # output lengths beyond this would lose integer exactness in the float64 coordinates


_Block = tuple[int, int, int, int, np.ndarray]
"""A dense piece of an axis' (out x in) interpolation matrix: (o0, o1, lo, hi, matrix[o1 - o0, hi - lo])."""


@dataclass(frozen=True)
class _Axis:
    """How one resized axis maps: lengths, the exact scale, and the roi (start, end)."""

    axis: int
    in_len: int
    out_len: int
    scale: Fraction
    roi: tuple[float, float]


# ---------------------------------------------------------------------------------------------
# Argument checking


def _number(name: str, value: Any, finite: bool) -> float:
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise KernelError(f"{name} {value!r} is not a number") from None
    if finite and not math.isfinite(result):
        raise KernelError(f"{name} {value!r} is not finite")
    return result


def _optional_input(name: str, value: Any) -> np.ndarray | None:
    """None or an empty array mean absent; otherwise a 1-D array."""
    if value is None:
        return None
    array = np.asarray(value)
    if array.size == 0:
        return None
    if array.ndim != 1:
        raise KernelError(f"{name} must be 1-D, got shape {array.shape!r}")
    return array


def _plan(
    shape: tuple[int, ...],
    roi: np.ndarray | None,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
    axes: list[int],
    policy: str,
    uses_roi: bool,
) -> list[_Axis]:
    """Each resized axis' lengths, exact scale and roi, from the optional inputs (None: absent)."""
    count = len(axes)
    if scales is not None and sizes is not None:
        raise KernelError("scales and sizes are both given; give exactly one")
    if scales is None and sizes is None:
        if count == 0:
            return []
        raise KernelError("neither scales nor sizes is given; give exactly one")
    given = scales if scales is not None else sizes
    label = "scales" if scales is not None else "sizes"
    assert given is not None
    if given.size != count:
        raise KernelError(f"{label} has {given.size} entries, expected {count} (one per resized axis)")
    starts, ends = [0.0] * count, [1.0] * count
    if uses_roi and roi is not None:
        starts, ends = _roi_bounds(roi, count)
    in_lens = [shape[a] for a in axes]
    if scales is not None:
        out_lens, fractions = _lengths_from_scales(scales, in_lens)
    else:
        assert sizes is not None
        out_lens, fractions = _lengths_from_sizes(sizes, in_lens, policy)
    return [
        _Axis(a, n, m, f, (s, e))
        for a, n, m, f, s, e in zip(axes, in_lens, out_lens, fractions, starts, ends, strict=True)
    ]


def _roi_bounds(roi: np.ndarray, count: int) -> tuple[list[float], list[float]]:
    """The roi's starts and ends, one per resized axis."""
    if roi.size != 2 * count:
        raise KernelError(
            f"roi has {roi.size} entries, expected {2 * count} (start and end per resized axis)"
        )
    try:
        values = roi.astype(np.float64)
    except (TypeError, ValueError):
        raise KernelError(f"roi {roi!r} is not numeric") from None
    if not np.isfinite(values).all():
        raise KernelError(f"roi {roi.tolist()!r} is not finite")
    return values[:count].tolist(), values[count:].tolist()


def _lengths_from_scales(scales: np.ndarray, in_lens: list[int]) -> tuple[list[int], list[Fraction]]:
    """Output lengths floor(scale * length), and the scales as exact fractions."""
    if scales.dtype.kind not in "fiu":
        raise KernelError(f"scales have dtype {scales.dtype}, expected float")
    fractions = []
    for value in scales.tolist():
        if not (math.isfinite(value) and value > 0):
            raise KernelError(f"scale {value!r} is not a positive finite number")
        fractions.append(Fraction(value))
    out_lens = [math.floor(f * n) for f, n in zip(fractions, in_lens, strict=True)]
    for f, m in zip(fractions, out_lens, strict=True):
        if m > _MAX_LENGTH:
            raise KernelError(f"scale {float(f)!r} asks for an output length of {m}, more than {_MAX_LENGTH}")
    return out_lens, fractions


def _lengths_from_sizes(
    sizes: np.ndarray, in_lens: list[int], policy: str
) -> tuple[list[int], list[Fraction]]:
    """Output lengths and exact scales from sizes under keep_aspect_ratio_policy ``policy``."""
    if sizes.dtype.kind not in "iu":
        raise KernelError(f"sizes have dtype {sizes.dtype}, expected int64")
    wanted = [int(v) for v in sizes.tolist()]
    for v in wanted:
        if v < 0:
            raise KernelError(f"size {v!r} is negative")
    if policy == "stretch":
        fractions = [Fraction(m, n) if n else Fraction(1) for m, n in zip(wanted, in_lens, strict=True)]
        return wanted, fractions
    # The policy's single scale is the smallest (not_larger) or largest (not_smaller) of
    # sizes[i] / in_size[d]; axes of length 0 cannot constrain it.
    ratios = [Fraction(m, n) for m, n in zip(wanted, in_lens, strict=True) if n]
    pick = min if policy == "not_larger" else max
    scale = pick(ratios) if ratios else Fraction(1)
    # round_int rounds halfway cases up.
    return [math.floor(scale * n + Fraction(1, 2)) for n in in_lens], [scale] * len(in_lens)


# ---------------------------------------------------------------------------------------------
# Coordinates and filter tables (1-D, float64)


def _source_coordinates(ax: _Axis, mode: str) -> np.ndarray:
    """x_original for every output index, computed from the exact scale with as few roundings as possible."""
    n, length = ax.in_len, ax.out_len
    a, b = float(ax.scale.numerator), float(ax.scale.denominator)  # scale = a / b
    o = np.arange(length, dtype=np.float64)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and length <= 1:
            return np.zeros(length)
        return ((2 * o + 1) * b - a) / (2 * a)
    if mode == "half_pixel_symmetric":
        # offset + (x + 0.5) / scale - 0.5 with offset = n / 2 * (1 - length / (scale * n))
        return (a * (n - 1) + b * (2 * o + 1 - length)) / (2 * a)
    if mode == "asymmetric":
        return o * b / a
    if mode == "tf_half_pixel_for_nn":
        return (2 * o + 1) * b / (2 * a)
    width = ax.scale * n  # length_resized: the exact scale times the input length
    if mode == "align_corners":
        if length <= 1:
            return np.zeros(length)
        ratio = (n - 1) / (width - 1)
        return o * float(ratio.numerator) / float(ratio.denominator)
    # tf_crop_and_resize: x = (start (n-1) (width-1) + o (end-start) (n-1)) / (width-1), one rounding
    start, end = ax.roi
    if length <= 1:
        return np.full(length, 0.5 * (start + end) * (n - 1))
    terms = [Fraction(start) * (n - 1) * (width - 1), (Fraction(end) - Fraction(start)) * (n - 1), width - 1]
    common = math.lcm(*(t.denominator for t in terms))
    p, q, r = (int(t * common) for t in terms)
    if max(abs(p) + (length - 1) * abs(q), abs(r)) < 2**53:
        return (p + o * q) / r  # the numerator is exact in float64
    return start * (n - 1) + o * ((end - start) * (n - 1) / float(width - 1))


def _nearest_indices(x: np.ndarray, nearest_mode: str, n: int) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        r = np.ceil(x - 0.5)
    elif nearest_mode == "round_prefer_ceil":
        r = np.floor(x + 0.5)
    elif nearest_mode == "floor":
        r = np.floor(x)
    else:
        r = np.ceil(x)
    return np.clip(r, 0, max(n - 1, 0)).astype(np.intp)


def _cubic_kernel(u: np.ndarray, a: float) -> np.ndarray:
    inner = ((a + 2) * u - (a + 3)) * u * u + 1
    outer = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    return np.where(u <= 1, inner, np.where(u < 2, outer, 0.0))


def _filter_table(
    x: np.ndarray, ax: _Axis, mode: str, a: float, antialias: bool, exclude_outside: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Taps of every output position: (positions, clamped indices, normalized weights), each (out, taps)."""
    support = 1.0 if mode == "linear" else 2.0
    stretch = min(float(ax.scale), 1.0) if antialias else 1.0
    half = max(1, math.ceil(support / stretch))
    floor = np.floor(x)
    offsets = np.arange(1 - half, half + 1, dtype=np.float64)
    positions = floor[:, None] + offsets
    u = np.abs(offsets - (x - floor)[:, None])
    if stretch != 1.0:
        u *= stretch
    weights = np.maximum(1.0 - u, 0.0) if mode == "linear" else _cubic_kernel(u, a)
    n = ax.in_len
    if exclude_outside:
        weights[(positions < 0) | (positions > n - 1)] = 0.0
    total = weights.sum(axis=1, keepdims=True)
    weights /= np.where(total == 0, 1.0, total)
    indices = np.clip(positions, 0, n - 1).astype(np.intp)
    return positions, indices, weights


def _single_tap(positions: np.ndarray, indices: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
    """The gather indices if every output copies exactly one input (weight 1), else None."""
    nonzero = weights != 0
    if not (nonzero.sum(axis=1) == 1).all():
        return None
    if not (weights[nonzero] == 1.0).all():
        return None
    return indices[nonzero]


# ---------------------------------------------------------------------------------------------
# Gathers (nearest, and filters that reduce to copying one input per output)


def _take(y: np.ndarray, axis: int, idx: np.ndarray) -> np.ndarray:
    n = y.shape[axis]
    length = idx.size
    if length == n and (idx == np.arange(n)).all():
        return y
    if length > 1:
        step = int(idx[1] - idx[0])
        if step > 0 and (np.diff(idx) == step).all():
            sl = [slice(None)] * y.ndim
            sl[axis] = slice(int(idx[0]), int(idx[-1]) + 1, step)
            return y[tuple(sl)]
    elif length == 1:
        sl = [slice(None)] * y.ndim
        sl[axis] = slice(int(idx[0]), int(idx[0]) + 1)
        return y[tuple(sl)]
    return np.take(y, idx, axis=axis)


def _repeat_factor(idx: np.ndarray, n: int) -> int:
    """k if idx == [0]*k + [1]*k + ... + [n-1]*k with k > 1, else 0."""
    length = idx.size
    if n == 0 or length % n or length == n:
        return 0
    k = length // n
    return k if (idx == np.arange(length) // k).all() else 0


def _gather(y: np.ndarray, tables: dict[int, np.ndarray]) -> np.ndarray:
    """Apply index tables (axis -> indices); the result is a new C-contiguous array."""
    repeats: dict[int, int] = {}
    for ax in sorted(tables, key=lambda ax: tables[ax].size / max(y.shape[ax], 1)):
        idx = tables[ax]
        k = _repeat_factor(idx, y.shape[ax])
        if k:
            repeats[ax] = k
        else:
            y = _take(y, ax, idx)
    # Many slots on the last axis would make each strided write below touch every cache line.
    last = y.ndim - 1
    if repeats.get(last, 0) > 8:
        y = np.repeat(y, repeats.pop(last), axis=last)
    out_shape = list(y.shape)
    for ax, k in repeats.items():
        out_shape[ax] *= k
    out = np.empty(out_shape, dtype=y.dtype)
    if out.size == 0:
        return out
    if not repeats:
        out[...] = y
        return out
    # View the output with a (length, k) pair per repeated axis. One write per slot of the innermost
    # repeated axis, broadcasting the input over the slots of the others.
    view_shape: list[int] = []
    source_shape: list[int] = []
    inner = max(repeats)
    inner_dim = 0
    for ax, length in enumerate(y.shape):
        view_shape.append(length)
        source_shape.append(length)
        if ax in repeats:
            if ax == inner:
                inner_dim = len(view_shape)
            else:
                source_shape.append(1)
            view_shape.append(repeats[ax])
    view = out.reshape(view_shape)
    source = y.reshape(source_shape)
    index: list[Any] = [slice(None)] * len(view_shape)
    for j in range(repeats[inner]):
        index[inner_dim] = j
        view[tuple(index)] = source
    return out


# ---------------------------------------------------------------------------------------------
# Filter passes: a banded matrix product along one axis


def _row_spans(indices: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per output row, the first and one-past-last input index with a nonzero weight."""
    nonzero = weights != 0
    big = np.iinfo(np.intp).max
    lo = np.where(nonzero, indices, big).min(axis=1)
    hi = np.where(nonzero, indices + 1, -1).max(axis=1)
    empty = lo == big
    lo[empty] = 0
    hi[empty] = 0
    return lo, hi


def _block_length(lo: np.ndarray, hi: np.ndarray, rows_last: bool) -> int:
    """Output positions per block (see _BLOCK_LENGTHS)."""
    length = lo.size

    def band(c: int) -> int:
        starts = np.arange(0, length, c)
        return int((np.maximum.reduceat(hi, starts) - np.minimum.reduceat(lo, starts)).max())

    if band(1) > _WIDE_BAND:
        return 1  # a very wide filter: blocks of one output keep the dense pieces small
    if not rows_last:
        return min(_MIDDLE_BLOCK, length)
    for c in _BLOCK_LENGTHS:
        if c >= length:
            return length
        if band(c) >= _BAND_WIDTH:
            return c
    return _BLOCK_LENGTHS[-1]


def _blocks(indices: np.ndarray, weights: np.ndarray, rows_last: bool, dtype: np.dtype) -> list[_Block]:
    """Split the (out x in) interpolation matrix into dense blocks of consecutive output rows."""
    lo_row, hi_row = _row_spans(indices, weights)
    length, taps = indices.shape
    c = _block_length(lo_row, hi_row, rows_last)
    starts = np.arange(0, length, c)
    lo = np.minimum.reduceat(lo_row, starts)
    span = np.maximum(np.maximum.reduceat(hi_row, starts) - lo, 0)
    width = max(int(span.max()), 1)
    # Scatter every nonzero tap into its block; duplicates (clamped taps) add up.
    rows = np.repeat(np.arange(length), taps)
    flat_w = weights.reshape(-1)
    used = flat_w != 0
    rows = rows[used]
    block = rows // c
    cols = indices.reshape(-1)[used] - lo[block]
    dense = np.bincount(rows * width + cols, weights=flat_w[used], minlength=length * width)
    dense = dense.reshape(length, width).astype(dtype)
    return [
        (int(o0), min(int(o0) + c, length), int(b_lo), int(b_lo + b_span), dense[o0 : o0 + c, :b_span])
        for o0, b_lo, b_span in zip(starts.tolist(), lo.tolist(), span.tolist(), strict=True)
    ]


def _layout(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


def _rows_last(pre: int, post: int) -> bool:
    """Whether a pass runs as (signals x axis) @ band.T: the axis is last, or few values follow it."""
    return post == 1 or (pre > 1 and post < 32)


def _plan_blocks(
    indices: np.ndarray, weights: np.ndarray, shape: tuple[int, ...], axis: int, compute: np.dtype
) -> list[_Block]:
    pre, _, post = _layout(shape, axis)
    return _blocks(indices, weights, _rows_last(pre, post), compute)


def _store(target: np.ndarray, values: np.ndarray, finish: Callable[[np.ndarray], np.ndarray] | None) -> None:
    target[...] = values if finish is None else finish(values)


def _apply(
    y: np.ndarray,
    axis: int,
    blocks: list[_Block],
    shift: int,
    compute: np.dtype,
    out: np.ndarray,
    finish: Callable[[np.ndarray], np.ndarray] | None,
) -> None:
    """For every block, out[..., o0:o1, ...] = matrix @ y[..., lo - shift:hi - shift, ...] along ``axis``.

    ``y`` is C-contiguous; bands of another type are converted to ``compute`` piece by piece and
    results go through ``finish`` (or a plain cast) piece by piece. Each matrix product is kept under
    _GEMM_LIMIT multiply-adds.
    """
    pre, n, post = _layout(y.shape, axis)
    y3 = y.reshape(pre, n, post)
    out3 = out.reshape(pre, out.shape[axis], post)
    direct = finish is None and out.dtype == compute
    if _rows_last(pre, post):
        y2 = y3[:, :, 0] if post == 1 else np.ascontiguousarray(y3.transpose(0, 2, 1)).reshape(pre * post, n)
        rows = y2.shape[0]
        for o0, o1, lo, hi, matrix in blocks:
            if hi == lo:
                out3[:, o0:o1, :] = 0
                continue
            step = max(1, _GEMM_LIMIT // ((hi - lo) * (o1 - o0)))
            if post > 1:
                step = max(post, step - step % post)  # whole (pre) rows of the transposed layout
            for r0 in range(0, rows, step):
                band = y2[r0 : r0 + step, lo - shift : hi - shift]
                if band.dtype != compute:
                    band = band.astype(compute)
                if direct and post == 1:
                    np.matmul(band, matrix.T, out=out3[r0 : r0 + step, o0:o1, 0])
                else:
                    p0 = r0 // post
                    result = (band @ matrix.T).reshape(-1, post, o1 - o0).transpose(0, 2, 1)
                    _store(out3[p0 : p0 + result.shape[0], o0:o1, :], result, finish)
    else:
        for o0, o1, lo, hi, matrix in blocks:
            if hi == lo:
                out3[:, o0:o1, :] = 0
                continue
            step = max(1, _GEMM_LIMIT // ((hi - lo) * (o1 - o0)))
            for c0 in range(0, post, step):
                band = y3[:, lo - shift : hi - shift, c0 : c0 + step]
                if band.dtype != compute:
                    band = band.astype(compute)
                if direct:
                    np.matmul(matrix, band, out=out3[:, o0:o1, c0 : c0 + step])
                else:
                    _store(out3[:, o0:o1, c0 : c0 + step], matrix @ band, finish)


def _gather_filter(
    y: np.ndarray, axis: int, indices: np.ndarray, weights: np.ndarray, compute: np.dtype
) -> np.ndarray:
    """Tap by tap; taps with weight 0 contribute nothing even where the input is inf or NaN."""
    pre, n, post = _layout(y.shape, axis)
    y3 = y.reshape(pre, n, post)
    length = indices.shape[0]
    acc = np.zeros((pre, length, post), dtype=compute)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, as the spec's sum gives
        for t in range(indices.shape[1]):
            w = weights[:, t]
            rows = np.flatnonzero(w != 0)
            if rows.size:
                term = np.take(y3, indices[rows, t], axis=1).astype(compute)
                term *= w[rows][None, :, None]
                acc[:, rows, :] += term
    return acc.reshape((*y.shape[:axis], length, *y.shape[axis + 1 :]))


def _filter(
    y: np.ndarray,
    passes: list[tuple[int, np.ndarray, np.ndarray]],
    compute: np.dtype,
    out_dtype: np.dtype,
    finish: Callable[[np.ndarray], np.ndarray] | None,
    finite: bool,
) -> np.ndarray:
    """Run the filter passes in order over real, C-contiguous ``y``; a new array of ``out_dtype``.

    The last pass is split into tiles along its axis: the earlier passes run on the slab of input a
    tile needs, so the converted input and the intermediate results stay near _TILE_BYTES.
    """
    shapes = [y.shape]
    for axis, indices, _ in passes:
        shape = list(shapes[-1])
        shape[axis] = indices.shape[0]
        shapes.append(tuple(shape))
    out = np.empty(shapes[-1], dtype=out_dtype)
    if out.size == 0:
        return out
    if not finite:
        for axis, indices, weights in passes:
            y = _gather_filter(y, axis, indices, weights, compute)
        _store(out, y, finish)
        return out

    axis, indices, weights = passes[-1]
    final_blocks = _plan_blocks(indices, weights, shapes[-2], axis, compute)
    if len(passes) == 1:
        _apply(y, axis, final_blocks, 0, compute, out, finish)
        return out
    row_bytes = max(math.prod(shape) // max(shape[axis], 1) for shape in shapes[:-1]) * compute.itemsize
    budget = max(1, _TILE_BYTES // max(row_bytes, 1))
    tiles = _tiles(final_blocks, budget)
    earlier: list[list[_Block]] = []
    for i, (pass_axis, pass_indices, pass_weights) in enumerate(passes[:-1]):
        shape = list(shapes[i])
        shape[axis] = min(shape[axis], budget + final_blocks[0][3] - final_blocks[0][2])
        earlier.append(_plan_blocks(pass_indices, pass_weights, tuple(shape), pass_axis, compute))
    cut: list[Any] = [slice(None)] * y.ndim
    for group in tiles:
        lo = min(b[2] for b in group)
        hi = max(max(b[3] for b in group), lo + 1)
        cut[axis] = slice(lo, hi)
        slab = np.ascontiguousarray(y[tuple(cut)], dtype=compute)
        for (pass_axis, pass_indices, _), blocks in zip(passes[:-1], earlier, strict=True):
            shape = list(slab.shape)
            shape[pass_axis] = pass_indices.shape[0]
            result = np.empty(shape, dtype=compute)
            _apply(slab, pass_axis, blocks, 0, compute, result, None)
            slab = result
        _apply(slab, axis, group, lo, compute, out, finish)
    return out


def _tiles(blocks: list[_Block], budget: int) -> list[list[_Block]]:
    """Group consecutive blocks of the last pass into tiles whose input slab (from the first block's
    first input to the furthest one read) spans at most ``budget`` inputs, or is one block."""
    tiles: list[list[_Block]] = [[]]
    for block in blocks:
        group = tiles[-1]
        if group and max(block[3], group[-1][3]) - group[0][2] > budget:
            tiles.append([block])
        else:
            group.append(block)
    return tiles


def _all_finite(y: np.ndarray) -> bool:
    return y.dtype.kind != "f" or y.size == 0 or bool(np.isfinite(y.max()) and np.isfinite(y.min()))


# ---------------------------------------------------------------------------------------------
# Element types


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """Interpolation arithmetic is float64 for every type (long double keeps its width)."""
    if dtype.kind in "fc" and dtype.itemsize > (16 if dtype.kind == "c" else 8):
        return np.dtype(np.longdouble)
    return np.dtype(np.float64)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    """The type of X's real components: complex64 -> float32, complex128 -> float64, others unchanged."""
    return np.empty(0, dtype).real.dtype if dtype.kind == "c" else dtype


def _real_view(y: np.ndarray) -> np.ndarray:
    """A C-contiguous real array: complex gains a trailing (real, imag) axis; bool becomes uint8."""
    y = np.ascontiguousarray(y)
    if y.dtype.kind == "c":
        return y.view(_real_dtype(y.dtype)).reshape(*y.shape, 2)
    if y.dtype.kind == "b":
        return y.view(np.uint8)
    return y


def _complex_view(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Undo :func:`_real_view` for complex ``dtype``."""
    return y.view(dtype).reshape(y.shape[:-1]) if dtype.kind == "c" else y


def _extrapolation_scalar(value: float, dtype: np.dtype) -> Any:
    if dtype.kind in "fc":
        return value
    if dtype.kind in "OSU":
        raise KernelError(
            f"extrapolation_value {value!r} cannot fill a {dtype} tensor; "
            "tf_crop_and_resize with strings needs the roi inside the input"
        )
    if math.isnan(value):
        raise KernelError(f"extrapolation_value {value!r} cannot fill an integer or bool tensor")
    if dtype.kind == "b":
        return bool(np.rint(value) >= 1)
    return saturate(np.rint(np.array([value])), dtype)[0]


# ---------------------------------------------------------------------------------------------


@dataclass
class _Prepared:
    """Everything about one resize that does not depend on the values of X: validated once, reused."""

    shape: tuple[int, ...]
    dtype: np.dtype
    out_shape: tuple[int, ...]
    gathers: dict[int, np.ndarray]
    filters: list[tuple[int, np.ndarray, np.ndarray]]
    outside: dict[int, np.ndarray]
    fill: Any
    fast: Callable[[np.ndarray], np.ndarray] | None = None
    direct: Callable[[np.ndarray], np.ndarray] | None = None
    """``fast`` when it alone makes the whole result (no empty output, no extrapolated positions): the
    bound kernel calls it on a C-contiguous X without going through :func:`_execute`."""


class _Options(NamedTuple):
    """Resize's attributes, checked."""

    mode: str
    coordinate_mode: str
    nearest_mode: str
    policy: str
    antialias: bool
    exclude_outside: bool
    cubic_coeff_a: float
    extrapolation: float


def _options(
    dtype: np.dtype,
    antialias: Any,
    coordinate_transformation_mode: Any,
    cubic_coeff_a: Any,
    exclude_outside: Any,
    extrapolation_value: Any,
    keep_aspect_ratio_policy: Any,
    mode: Any,
    nearest_mode: Any,
) -> _Options:
    """Check the attributes, and the mode against X's element type ``dtype``; raises KernelError."""
    mode = choice(mode, "mode", _MODES)
    coordinate_mode = choice(
        coordinate_transformation_mode, "coordinate_transformation_mode", _COORDINATE_MODES
    )
    nearest_mode = choice(nearest_mode, "nearest_mode", _NEAREST_MODES)
    policy = choice(keep_aspect_ratio_policy, "keep_aspect_ratio_policy", _POLICIES)
    use_antialias = flag(antialias, "antialias")
    exclude = flag(exclude_outside, "exclude_outside")
    # cubic_coeff_a "is valid only if mode is cubic": other modes ignore it, whatever its value
    a = _number("cubic_coeff_a", cubic_coeff_a, finite=mode == "cubic")
    extrapolation = _number("extrapolation_value", extrapolation_value, finite=False)
    if dtype.kind in "OSUV" and mode != "nearest":
        raise KernelError(f"mode {mode!r} needs a numeric tensor, got {dtype}; strings allow only 'nearest'")
    if dtype.kind not in "biufcOSU":
        raise KernelError(f"element type {dtype} is not supported")
    return _Options(mode, coordinate_mode, nearest_mode, policy, use_antialias, exclude, a, extrapolation)


def _prepare(
    shape: tuple[int, ...],
    dtype: np.dtype,
    roi: Any,
    scales: Any,
    sizes: Any,
    antialias: Any,
    axes: Any,
    coordinate_transformation_mode: Any,
    cubic_coeff_a: Any,
    exclude_outside: Any,
    extrapolation_value: Any,
    keep_aspect_ratio_policy: Any,
    mode: Any,
    nearest_mode: Any,
) -> _Prepared:
    """Check the arguments and compute the index and weight tables; raises KernelError."""
    options = _options(
        dtype,
        antialias,
        coordinate_transformation_mode,
        cubic_coeff_a,
        exclude_outside,
        extrapolation_value,
        keep_aspect_ratio_policy,
        mode,
        nearest_mode,
    )
    cropping = options.coordinate_mode == "tf_crop_and_resize"
    plan = _plan(
        shape,
        _optional_input("roi", roi) if cropping else None,
        _optional_input("scales", scales),
        _optional_input("sizes", sizes),
        normalize_axes(axes, len(shape), empty_is_all=False),
        options.policy,
        cropping,
    )
    out_shape = list(shape)
    for ax in plan:
        out_shape[ax.axis] = ax.out_len
    limits.check_output(tuple(out_shape), dtype)
    prepared = _Prepared(tuple(shape), dtype, tuple(out_shape), {}, [], {}, None)
    if math.prod(out_shape) == 0:
        return prepared
    for ax in plan:
        if ax.in_len == 0:
            raise KernelError(f"axis {ax.axis} has length 0 and cannot be resized to {ax.out_len}")
    _axis_tables(prepared, plan, options)
    prepared.fill = _extrapolation_scalar(options.extrapolation, dtype) if prepared.outside else None
    prepared.fast = _fast_path(prepared)
    if not prepared.outside and math.prod(prepared.out_shape):
        prepared.direct = prepared.fast
    return prepared


def _axis_tables(prepared: _Prepared, plan: list[_Axis], options: _Options) -> None:
    """Fill ``prepared``'s tables for each resized axis: its gather (nearest, or a filter that copies one
    input per output) or its filter, and for tf_crop_and_resize the mask of outputs outside the input."""
    mode = options.mode
    for ax in plan:
        x = _source_coordinates(ax, options.coordinate_mode)
        if options.coordinate_mode == "tf_crop_and_resize":
            mask = (x < 0) | (x > ax.in_len - 1)
            if mask.any():
                prepared.outside[ax.axis] = mask
        if mode == "nearest":
            prepared.gathers[ax.axis] = _nearest_indices(x, options.nearest_mode, ax.in_len)
            continue
        a, antialias, exclude = options.cubic_coeff_a, options.antialias, options.exclude_outside
        positions, indices, weights = _filter_table(x, ax, mode, a, antialias, exclude)
        single = _single_tap(positions, indices, weights)
        if single is not None:
            prepared.gathers[ax.axis] = single
        else:
            prepared.filters.append((ax.axis, indices, weights))


def _execute(prepared: _Prepared, X: np.ndarray) -> np.ndarray:
    """Resize X (of the prepared shape and dtype) with the prepared tables."""
    dtype = prepared.dtype
    if math.prod(prepared.out_shape) == 0:
        return np.empty(prepared.out_shape, dtype=dtype)
    gathers, filters = prepared.gathers, prepared.filters
    if prepared.fast is not None:
        y = prepared.fast(X if X.flags.c_contiguous else np.ascontiguousarray(X))
    elif not filters:
        y = _gather(X, gathers)
    else:
        # Gathers that shrink go first, the ones that grow last; filter passes in between, the axis
        # that shrinks most first.
        shrink = {ax: t for ax, t in gathers.items() if t.size <= X.shape[ax]}
        grow = {ax: t for ax, t in gathers.items() if ax not in shrink}
        y = X
        for ax, idx in sorted(shrink.items(), key=lambda item: item[1].size / X.shape[item[0]]):
            y = _take(y, ax, idx)
        compute = _compute_dtype(dtype)
        y = _real_view(y)
        finite = _all_finite(y)
        passes = sorted(filters, key=lambda f: (f[1].shape[0] / y.shape[f[0]], -f[0]))
        if finite and y.dtype == np.float64 and y.size and max(-y.min(), y.max()) > 1e300:
            # float64 arithmetic could overflow between passes: run them one by one, checking
            for ax, indices, weights in passes[:-1]:
                y = _filter(y, [(ax, indices, weights)], compute, compute, None, finite)
                finite = _all_finite(y)
            passes = passes[-1:]
        y = _filter(y, passes, compute, _real_dtype(dtype), finisher(dtype), finite)
        y = _complex_view(y, dtype)
        y = _gather(y, grow) if grow else np.ascontiguousarray(y)

    if prepared.outside:
        for ax, mask in prepared.outside.items():
            sl: list[Any] = [slice(None)] * y.ndim
            sl[ax] = mask
            y[tuple(sl)] = prepared.fill
    return y


# ---------------------------------------------------------------------------------------------
# Compiled fast paths (customops.accel.jit): float32 / float64 filters, numeric nearest gathers.

_SCRATCH_BYTES = 1 << 19  # filtered input rows kept per block of output rows (about an L2 cache)
_TINY_GATHER = 1024  # output elements up to which a nearest gather is one ndarray.take (measured)
# Input rows x output width up to which rows first takes the short loop. A 3-plane x2 bound call, linear
# / cubic: 8x8 2.9 / 4.1 us against 4.5 / 5.5, 16x16 5.2 / 9.1 against 8.6 / 12.3; at 32x32 cubic is
# faster in the general loop (its x2 pairs vectorize).
_SMALL_SCRATCH = 1 << 10


def _is_identity(idx: np.ndarray, n: int) -> bool:
    return idx.size == n and bool((idx == np.arange(n)).all())


def _tap_tables(indices: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (2T + 1, L) index table [indices | compacted indices | nonzero count] and the (2T, L) weight
    table [weights | compacted weights], tap-major; compacted: the nonzero taps first, in table order."""
    nonzero = weights != 0
    order = np.argsort(~nonzero, axis=1, kind="stable")
    ti = np.concatenate(
        [indices, np.take_along_axis(indices, order, axis=1), nonzero.sum(axis=1, keepdims=True)], axis=1
    )
    tw = np.concatenate([weights, np.take_along_axis(weights, order, axis=1)], axis=1)
    return np.ascontiguousarray(ti.T, dtype=np.uintp), np.ascontiguousarray(tw.T, dtype=np.float64)


def _block_rows(iy: np.ndarray, width: int) -> tuple[int, int]:
    """(output rows per block, input rows a block needs) keeping the scratch near _SCRATCH_BYTES."""
    length = iy.shape[0]
    low, high = iy.min(axis=1), iy.max(axis=1) + 1
    rows = 1
    for block in (64, 32, 16, 8, 4, 2, 1):
        starts = np.arange(0, length, block)
        rows = int((np.maximum.reduceat(high, starts) - np.minimum.reduceat(low, starts)).max())
        if rows * width * 8 <= _SCRATCH_BYTES or block == 1:
            return block, rows
    return 1, rows  # pragma: no cover


_MIN_RUN = 8  # outputs (x2: pairs of outputs) from which a periodic run of a table is used


def _middle_run(same: np.ndarray) -> tuple[int, int]:
    """[lo, hi): the longest run of True in ``same`` that holds its middle element (empty if that is
    False)."""
    mid = same.size // 2
    if not same[mid]:
        return mid, mid
    lo = 0 if same[: mid + 1].all() else mid - int(np.argmin(same[mid::-1])) + 1
    hi = same.size if same[mid:].all() else mid + int(np.argmin(same[mid:]))
    return lo, hi


def _constant_rows(*keys: np.ndarray) -> np.ndarray:
    """For each row of the (N, T) ``keys``, whether it equals the middle row in all of them."""
    same = np.ones(keys[0].shape[0], dtype=bool)
    for key in keys:
        same &= (key == key[key.shape[0] // 2]).all(axis=1)
    return same


def _weight_bits(weights: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(weights, dtype=np.float64).view(np.int64)  # equal bits, not just equal


def _x2_run(indices: np.ndarray, weights: np.ndarray, width: int) -> np.ndarray:
    """(lo, hi) for resize_loops._h_row_x2: the longest run of m around the middle where outputs 2m and 2m + 1 of
    a 2- or 4-tap table (L, T) over an axis of ``width`` upsampled to 2 * width read the same taps
    relative to m with the same weights; (0, 0) when there is none worth it."""
    length, taps = indices.shape
    if taps not in (2, 4) or length != 2 * width or width < _MIN_RUN:
        return np.zeros(2, dtype=np.int64)
    m = np.arange(width)[:, None]
    bits = _weight_bits(weights)
    lo, hi = _middle_run(
        _constant_rows(
            indices[0::2].astype(np.int64) - m, indices[1::2].astype(np.int64) - m, bits[0::2], bits[1::2]
        )
    )
    return np.array([lo, hi] if hi - lo >= _MIN_RUN else [0, 0], dtype=np.int64)


def _down_run(indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(k, lo, hi) for resize_loops._h_row_down: the longest run of outputs j around the middle of a table (L, T)
    that read taps k * j + c_t with weights w_t, for one k > 1 (a downsampled axis); (0, 0, 0) when there
    is none worth it. Splitting a row into its phases reads all of it once, so it pays only when the
    gathers would read each element twice or more (T >= 2k: the antialiased filters, cubic /2; measured,
    two-tap linear /2 and /4 were 5-40% slower with it)."""
    length, taps = indices.shape
    none = np.zeros(3, dtype=np.int64)
    if length < 2 * _MIN_RUN:
        return none
    mid = length // 2
    k = int(indices[mid + 1, 0]) - int(indices[mid, 0])
    if k < 2 or taps < 2 * k:
        return none
    lo, hi = _middle_run(
        _constant_rows(indices.astype(np.int64) - k * np.arange(length)[:, None], _weight_bits(weights))
    )
    return np.array([k, lo, hi], dtype=np.int64) if hi - lo >= _MIN_RUN else none


@dataclass
class _Job:
    """A resize as the compiled paths see it: each axis that changes, as a tap table.

    ``ops`` maps an axis to its (indices, weights), both (output length, taps); a gather is one tap of
    weight 1. ``copies``: no axis filters (nearest, or filters that reduce to copies).
    """

    shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    dtype: np.dtype
    ops: dict[int, tuple[np.ndarray, np.ndarray]]
    copies: bool

    @functools.cached_property
    def gather_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """(iy, ix): the input row and column each output row and column copies, as np.uintp (for a
        job that copies along the last two axes; computed once, for the checks and the gathers)."""
        last = len(self.shape) - 1
        iy = self.ops[last - 1][0][:, 0] if last - 1 in self.ops else np.arange(self.shape[last - 1])
        ix = self.ops[last][0][:, 0] if last in self.ops else np.arange(self.shape[last])
        return np.ascontiguousarray(iy, dtype=np.uintp), np.ascontiguousarray(ix, dtype=np.uintp)


def _job(prepared: _Prepared) -> _Job | None:
    """The prepared resize as a :class:`_Job`, or None when no compiled path can run it (no numba, a
    0-d input, or nothing to do: every gather an identity)."""
    shape = prepared.shape
    if not shape or not jit.enabled():
        return None
    ops: dict[int, tuple[np.ndarray, ...]] = {}
    for ax, idx in prepared.gathers.items():
        if not _is_identity(idx, shape[ax]):
            ops[ax] = (idx.reshape(-1, 1), np.ones((idx.size, 1)))
    for ax, indices, weights in prepared.filters:
        ops[ax] = (indices, weights)
    if not ops:
        return None
    return _Job(shape, prepared.out_shape, prepared.dtype, ops, not prepared.filters)


def _planes(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``shape`` seen as (planes, rows, columns): the last two axes and the product of the others."""
    return (math.prod(shape[:-2]), shape[-2], shape[-1])


def _family(job: _Job) -> str | None:
    """Which compiled loops can run the job: "copies" (it only copies elements of a numeric type, along
    the last two axes), "last2" (it filters float32 or float64 along both of the last two axes; a gather
    of one of them is a filter of one tap), "axes" (it filters float32 or float64 along other axes), or
    None (none can: the numpy passes run)."""
    rank, last = len(job.shape), len(job.shape) - 1
    if job.copies:
        numeric = _copy_view(job.dtype) is not None
        return "copies" if numeric and rank >= 2 and set(job.ops) <= {last - 1, last} else None
    if job.dtype not in (np.float32, np.float64):
        return None
    return "last2" if rank >= 2 and set(job.ops) == {last - 1, last} else "axes"


def _copy_view(dtype: np.dtype) -> np.dtype | None:
    """The unsigned type whose bits the compiled gathers copy for ``dtype`` (None: not a numeric type)."""
    return jit.BITS.get(dtype.itemsize) if dtype.kind in "biufc" else None


# Cost models: about how many elements of work a path does (parallel.run splits a loop over threads
# from its work; the last-two-axes loops choose their order from it).


def _gather_work(job: _Job) -> int:
    """The gathers' work: one copy per output element."""
    return math.prod(job.out_shape)


def _rows_first_cost(job: _Job) -> int:
    """Per plane, the work of filtering the last axis first (height x out_w outputs of the horizontal
    taps), then down the columns (out_h x out_w outputs of the vertical taps). The pass along the last
    axis gathers and counts twice; the one down the columns streams whole rows."""
    (ty, _), (tx, _) = job.ops[len(job.shape) - 2], job.ops[len(job.shape) - 1]
    height, out_h, out_w = job.shape[-2], job.out_shape[-2], job.out_shape[-1]
    return 2 * height * out_w * tx.shape[1] + out_h * out_w * ty.shape[1]


def _columns_first_cost(job: _Job) -> int:
    """Per plane, the work of filtering down the columns first (out_h x width outputs of the vertical
    taps), then along the last axis (out_h x out_w outputs of the horizontal taps, counting twice)."""
    (ty, _), (tx, _) = job.ops[len(job.shape) - 2], job.ops[len(job.shape) - 1]
    width, out_h, out_w = job.shape[-1], job.out_shape[-2], job.out_shape[-1]
    return out_h * width * ty.shape[1] + 2 * out_h * out_w * tx.shape[1]


def _columns_first(job: _Job) -> bool:
    """Whether the last-two-axes loop filters down the columns first: when that makes the gathering pass
    (along the last axis) the smaller one."""
    return _columns_first_cost(job) < _rows_first_cost(job)


def _last2_work(job: _Job) -> int:
    """The last-two-axes loops' work: the cheaper order's cost, times the planes."""
    return min(_rows_first_cost(job), _columns_first_cost(job)) * _planes(job.shape)[0]


# When each compiled path applies, within its family (the cost models decide).


def _always(job: _Job) -> bool:
    """The last candidate of a family: it runs whatever the ones before it did not take."""
    return True


def _tiny_applies(job: _Job) -> bool:
    """A gather of at most _TINY_GATHER elements."""
    return _gather_work(job) <= _TINY_GATHER


def _gather2_applies(job: _Job) -> bool:
    """A gather that copies every element twice along the last axis (nearest x2), where an unsigned
    type twice as wide can store both copies at once."""
    width = job.shape[-1]
    return (
        jit.BITS.get(2 * job.dtype.itemsize) is not None
        and job.out_shape[-1] == 2 * width
        and _repeat_factor(job.gather_indices[1], width) == 2
    )


def _short_loop_applies(job: _Job) -> bool:
    """The short loop (resize_loops.resize_small_rows_first) of last2_small and last2_small_any: rows first, a
    scratch of input rows x output width up to _SMALL_SCRATCH, and work for one call on this thread."""
    return (
        not _columns_first(job)
        and job.shape[-2] * job.out_shape[-1] <= _SMALL_SCRATCH
        and parallel.serial(_last2_work(job))
    )


def _last2_small_applies(job: _Job) -> bool:
    """The short loop on a 4-D X."""
    return len(job.shape) == 4 and _short_loop_applies(job)


def _last2_small_any_applies(job: _Job) -> bool:
    """The short loop on X of another rank."""
    return len(job.shape) != 4 and _short_loop_applies(job)


def _last2_serial_applies(job: _Job) -> bool:
    """A last-two-axes loop that parallel.run would not split."""
    return parallel.serial(_last2_work(job))


# ---------------------------------------------------------------------------------------------
# The compiled paths. Each builds its tables once and returns a closure of its name over them.


def _build_tiny(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """One ndarray.take through a table of flat indices shaped like the output: about 3 us instead of 6
    for an 8x8 -> 16x16 image of 3 channels (numba's dispatch and views cost more)."""
    iy, ix = job.gather_indices
    in3 = _planes(job.shape)
    planes = np.arange(in3[0], dtype=np.intp)[:, None, None] * (in3[1] * in3[2])
    rows = iy.astype(np.intp)[None, :, None] * in3[2]
    flat = (planes + rows + ix.astype(np.intp)[None, None, :]).reshape(job.out_shape)

    def tiny(X: np.ndarray) -> np.ndarray:
        return X.take(flat)  # the output's shape: take() reads X flattened

    return tiny


def _build_gather2(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """resize_loops.repeat2_last2: every element twice along the last axis, both copies in one store."""
    iy, _ = job.gather_indices
    dtype, out_shape = job.dtype, job.out_shape
    view, wide = _copy_view(dtype), jit.BITS[2 * dtype.itemsize]
    in3, out3 = _planes(job.shape), _planes(out_shape)
    work = _gather_work(job)
    repeat2 = jit.get("repeat2_last2", resize_loops)
    pair = np.uint64(1 + (1 << (8 * dtype.itemsize)))

    def gather2(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        args = (X.view(view).reshape(in3), out.view(view).reshape(out3).view(wide), iy, pair)
        parallel.run(repeat2, out3[0] * out3[1], work, *args)
        return out

    return gather2


def _build_gather(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """resize_loops.gather_last2: a gather of the last two axes, the elements copied as unsigned integers."""
    iy, ix = job.gather_indices
    dtype, out_shape = job.dtype, job.out_shape
    view = _copy_view(dtype)
    in3, out3 = _planes(job.shape), _planes(out_shape)
    work = _gather_work(job)
    kernel = jit.get("gather_last2", resize_loops)

    def gather(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        args = (X.view(view).reshape(in3), out.view(view).reshape(out3), iy, ix)
        parallel.run(kernel, out3[0] * out3[1], work, *args)
        return out

    return gather


class _Last2(NamedTuple):
    """The arguments of a last-two-axes loop (resize_loops.resize_rows_first or resize_columns_first): X and the
    output viewed as ``in3`` and ``out3`` (planes, rows, columns), the ``tables`` after them, and the
    ``units`` (output rows or blocks of rows, across planes) the loop's range covers."""

    kernel: Callable[..., Any]
    in3: tuple[int, int, int]
    out3: tuple[int, int, int]
    tables: tuple[Any, ...]
    units: int
    work: int


def _last2_loop(job: _Job) -> _Last2:
    """Plan the last-two-axes loop in the order of :func:`_columns_first`."""
    (ty, wy), (tx, wx) = job.ops[len(job.shape) - 2], job.ops[len(job.shape) - 1]
    in3, out3 = _planes(job.shape), _planes(job.out_shape)
    (tyi, tyw), (txi, txw) = _tap_tables(ty, wy), _tap_tables(tx, wx)
    if _columns_first(job):
        kernel = jit.get("resize_columns_first", resize_loops)
        tables: tuple[Any, ...] = (tyi, tyw, txi, txw, _down_run(tx, wx))
        units = in3[0] * out3[1]
    else:
        kernel = jit.get("resize_rows_first", resize_loops)
        block, rows = _block_rows(ty, out3[2])
        tables = (tyi, tyw, txi, txw, block, rows, _x2_run(tx, wx, in3[2]))
        units = in3[0] * -(-out3[1] // block)
    return _Last2(kernel, in3, out3, tables, units, _last2_work(job))


def _short_loop(plan: _Last2) -> tuple[Callable[..., bool], np.ndarray, np.ndarray, Callable[..., None]]:
    """resize_loops.resize_small_rows_first with its two packed tables (ints, weights), and ``redo(X, out)``: the
    rows-first loop over the whole image, for when the short loop meets a row that is not finite."""
    kernel, in3, out3, tables, units, _ = plan
    tyi, tyw, txi, txw = tables[:4]
    ty, tx = tyw.shape[0] // 2, txw.shape[0] // 2
    ints = np.concatenate([[ty, tx], tyi[:ty].ravel(), txi[:tx].ravel()]).astype(np.uintp)
    weights = np.concatenate([tyw[:ty].ravel(), txw[:tx].ravel()])

    def redo(X: np.ndarray, out: np.ndarray) -> None:
        kernel(X.reshape(in3), out.reshape(out3), *tables, 0, units)  # a row that is not finite

    return jit.get("resize_small_rows_first", resize_loops), ints, weights, redo


def _build_last2_small(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """The short loop on a 4-D (NCHW) X, as it comes."""
    small, ints, weights, redo = _short_loop(_last2_loop(job))
    dtype, out_shape = job.dtype, job.out_shape

    def last2_small(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        if not small(X, out, ints, weights):
            redo(X, out)
        return out

    return last2_small


def _build_last2_small_any(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """The short loop on X of another rank, through a 4-D view (1, planes, rows, columns)."""
    plan = _last2_loop(job)
    small, ints, weights, redo = _short_loop(plan)
    dtype, out_shape = job.dtype, job.out_shape
    in4, out4 = (1, *plan.in3), (1, *plan.out3)

    def last2_small_any(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        if not small(X.reshape(in4), out.reshape(out4), ints, weights):
            redo(X, out)
        return out

    return last2_small_any


def _build_last2_serial(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """The last-two-axes loop called once on this thread (parallel.run would not split it)."""
    kernel, in3, out3, tables, units, _ = _last2_loop(job)
    dtype, out_shape = job.dtype, job.out_shape

    def last2_serial(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        kernel(X.reshape(in3), out.reshape(out3), *tables, 0, units)
        return out

    return last2_serial


def _build_last2(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """The last-two-axes loop through parallel.run, split over threads."""
    kernel, in3, out3, tables, units, work = _last2_loop(job)
    dtype, out_shape = job.dtype, job.out_shape

    def last2(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        parallel.run(kernel, units, work, X.reshape(in3), out.reshape(out3), *tables)
        return out

    return last2


def _build_passes(job: _Job) -> Callable[[np.ndarray], np.ndarray]:
    """One pass per axis, in the numpy order (the axis that shrinks most first); float64 in between.
    The last axis takes resize_loops.resize_rows (with its x2 and downsampling runs), others resize_loops.resize_middle."""
    ops, shape = job.ops, job.shape
    order = sorted(ops, key=lambda ax: (ops[ax][0].shape[0] / shape[ax], -ax))
    steps = []
    current = list(shape)
    for i, ax in enumerate(order):
        pre, n, post = math.prod(current[:ax]), current[ax], math.prod(current[ax + 1 :])
        current[ax] = job.out_shape[ax]
        step_dtype = job.dtype if i == len(order) - 1 else np.dtype(np.float64)
        runs = (_x2_run(*ops[ax], n), _down_run(*ops[ax])) if post == 1 else ()
        steps.append((ax, pre, n, post, tuple(current), step_dtype, *_tap_tables(*ops[ax]), runs))
    rows_kernel = jit.get("resize_rows", resize_loops)
    middle_kernel = jit.get("resize_middle", resize_loops)

    def passes(X: np.ndarray) -> np.ndarray:
        y = X
        for ax, pre, n, post, step_shape, step_dtype, ti, tw, runs in steps:
            out = np.empty(step_shape, dtype=step_dtype)
            length = step_shape[ax]
            work = out.size * ti.shape[0]  # this pass's work: outputs times rows of the tap table
            if post == 1:
                args = (y.reshape(pre, n), out.reshape(pre, length), ti, tw, *runs)
                parallel.run(rows_kernel, pre, work, *args)
            else:
                args = (y.reshape(pre, n, post), out.reshape(pre, length, post), ti, tw)
                parallel.run(middle_kernel, pre * length, work, *args)
            y = out
        return y

    return passes


class _Candidate(NamedTuple):
    """A compiled path: the name of the function ``build(job)`` returns, used when ``applies(job)``."""

    name: str
    applies: Callable[[_Job], bool]
    build: Callable[[_Job], Callable[[np.ndarray], np.ndarray]]


_FAST_PATHS: dict[str, tuple[_Candidate, ...]] = {
    # nearest (or filters that reduce to copies) of the last two axes, any numeric type
    "copies": (
        _Candidate("tiny", _tiny_applies, _build_tiny),
        _Candidate("gather2", _gather2_applies, _build_gather2),
        _Candidate("gather", _always, _build_gather),
    ),
    # float32 / float64 filters of both last axes: one loop over both
    "last2": (
        _Candidate("last2_small", _last2_small_applies, _build_last2_small),
        _Candidate("last2_small_any", _last2_small_any_applies, _build_last2_small_any),
        _Candidate("last2_serial", _last2_serial_applies, _build_last2_serial),
        _Candidate("last2", _always, _build_last2),
    ),
    # float32 / float64 filters of other axes: one loop per axis
    "axes": (_Candidate("passes", _always, _build_passes),),
}
"""The compiled paths of each :func:`_family`, in order of preference: the first that applies runs."""


def _choose(job: _Job) -> _Candidate | None:
    """The compiled path for the job: the first of its family's that applies (None: no family)."""
    for candidate in _FAST_PATHS.get(_family(job) or "", ()):
        if candidate.applies(job):
            return candidate
    return None


def _fast_path(prepared: _Prepared) -> Callable[[np.ndarray], np.ndarray] | None:
    """A compiled implementation of this resize (see _FAST_PATHS), or None (the numpy passes run)."""
    job = _job(prepared)
    if job is None:
        return None
    candidate = _choose(job)
    return None if candidate is None else candidate.build(job)


# ---------------------------------------------------------------------------------------------


def _input_key(value: Any) -> Any:
    """A hashable key for a small optional input (None or a numeric ndarray), else Uncacheable."""
    if value is None:
        return None
    if type(value) is np.ndarray and value.dtype.kind in "biuf":
        size = value.size
        if size == 0:
            return (value.dtype, value.shape)
        if size <= 4096:
            return (value.dtype, value.shape, value.tobytes())
    raise Uncacheable


def bind(**attributes: Any) -> Callable[..., np.ndarray]:
    """``resize`` with its attributes fixed, for repeated calls (the ONNX Runtime hook).

    Equivalent to ``lambda X, roi=None, scales=None, sizes=None: resize(X, roi, scales, sizes,
    **attributes)``; the tables of each input shape, dtype and roi/scales/sizes are kept (at most
    PLAN_CACHE_SIZE of them, customops.accel.plans). Errors are raised on every call, as ``resize``
    raises them.
    """
    unknown = set(attributes) - set(_ATTRIBUTE_DEFAULTS)
    if unknown:
        raise TypeError(f"resize() got unexpected keyword arguments {sorted(unknown)!r}")
    values = {**_ATTRIBUTE_DEFAULTS, **attributes}
    ordered = tuple(values[name] for name in _ATTRIBUTE_DEFAULTS)
    plans: dict[Any, _Prepared] = {}

    @tracked(plans)
    def bound(X: Any, roi: Any = None, scales: Any = None, sizes: Any = None) -> np.ndarray:
        if type(X) is not np.ndarray:
            X = np.asarray(X)
        key = flat_key(X, roi, scales, sizes)
        prepared = plans.get(key)
        if prepared is None:
            prepared = planned(
                plans,
                key,
                (roi, scales, sizes),
                lambda: (X.shape, X.dtype, _input_key(roi), _input_key(scales), _input_key(sizes)),
                lambda: _prepare(X.shape, X.dtype, roi, scales, sizes, *ordered),
            )
        direct = prepared.direct
        if direct is not None and X.flags.c_contiguous:
            return direct(X)
        return _execute(prepared, X)

    return bound


_ATTRIBUTE_DEFAULTS: dict[str, Any] = {
    "antialias": 0,
    "axes": None,
    "coordinate_transformation_mode": "half_pixel",
    "cubic_coeff_a": -0.75,
    "exclude_outside": 0,
    "extrapolation_value": 0.0,
    "keep_aspect_ratio_policy": "stretch",
    "mode": "nearest",
    "nearest_mode": "round_prefer_floor",
}


def resize(
    X: np.ndarray,
    roi: np.ndarray | None = None,
    scales: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
    *,
    antialias: int = 0,
    axes: list[int] | None = None,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    keep_aspect_ratio_policy: str = "stretch",
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> np.ndarray:
    """Resize ``X`` as ONNX Resize does (the union of versions 10 to 19).

    ``roi``, ``scales`` and ``sizes`` are the optional inputs (None or empty means absent); exactly one of
    ``scales`` and ``sizes`` must be given. ``roi`` is read only by ``tf_crop_and_resize`` (absent: the
    whole input). The keyword arguments are the ONNX attributes with their spec defaults: antialias=0,
    axes=None (all axes), coordinate_transformation_mode='half_pixel', cubic_coeff_a=-0.75,
    exclude_outside=0, extrapolation_value=0.0, keep_aspect_ratio_policy='stretch', mode='nearest',
    nearest_mode='round_prefer_floor'. antialias has no effect on 'nearest'.

    ``X`` may have any rank and any element type ONNX allows, including bool, complex and strings
    (numpy object arrays; 'nearest' only). The result has ``X``'s dtype and is a new C-contiguous
    array. Integer and bool results of 'linear' and 'cubic' are rounded half to even and clamped to the
    type's range (bool as 0/1). Invalid configurations raise :class:`KernelError`.
    """
    X = np.asarray(X)
    prepared = _prepare(
        X.shape,
        X.dtype,
        roi,
        scales,
        sizes,
        antialias,
        axes,
        coordinate_transformation_mode,
        cubic_coeff_a,
        exclude_outside,
        extrapolation_value,
        keep_aspect_ratio_policy,
        mode,
        nearest_mode,
    )
    return _execute(prepared, X)
