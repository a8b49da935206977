"""ONNX Resize (versions 10 to 19) as a numpy kernel: the planner and the numpy passes.

One function, :func:`resize`, accepts the union of every version's attributes; the translator rejects
attributes that a given opset version does not have. What the spec says of one axis (the attributes,
the output lengths, the coordinate transformations, the filters' tap tables) is
customops.kernels.resampling.resize_spec's; here :func:`prepare` makes a resize's plan from it
(:class:`PreparedResize`: per resized axis a gather or a filter's tables, and the compiled path that
customops.accel.resampling.resize_plans chooses from them), :func:`execute` runs it (the numpy passes:
gathers, and banded matrix products in float64 rounded once), and :func:`bind` keeps plans for the ONNX
Runtime hook. docs/semantics.md records where the spec text, onnx.reference and ONNX Runtime disagree
and what this kernel does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from customops.accel.plans import plan_cache
from customops.accel.resampling import resize_plans
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import normalize_axes
from customops.kernels.resampling.resize_spec import (
    Axis,
    Options,
    checked_options,
    extrapolation_scalar,
    filter_table,
    nearest_indices,
    optional_input,
    resized_axes,
    single_tap,
    source_coordinates,
)
from customops.kernels.rounding import finisher

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["bind", "resize"]

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


_Block = tuple[int, int, int, int, np.ndarray]
"""A dense piece of an axis' (out x in) interpolation matrix: (o0, o1, lo, hi, matrix[o1 - o0, hi - lo])."""


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


# ---------------------------------------------------------------------------------------------
# The plan of a resize, and its run


@dataclass
class PreparedResize:
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
    bound kernel calls it on a C-contiguous X without going through :func:`execute`."""


def prepare(
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
) -> PreparedResize:
    """Check the arguments and compute the index and weight tables; raises KernelError."""
    options = checked_options(
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
    resized = resized_axes(
        shape,
        optional_input("roi", roi) if cropping else None,
        optional_input("scales", scales),
        optional_input("sizes", sizes),
        normalize_axes(axes, len(shape), empty_is_all=False),
        options.policy,
        cropping,
    )
    out_shape = list(shape)
    for ax in resized:
        out_shape[ax.axis] = ax.out_len
    limits.check_output(tuple(out_shape), dtype)
    prepared = PreparedResize(tuple(shape), dtype, tuple(out_shape), {}, [], {}, None)
    if math.prod(out_shape) == 0:
        return prepared
    for ax in resized:
        if ax.in_len == 0:
            raise KernelError(f"axis {ax.axis} has length 0 and cannot be resized to {ax.out_len}")
    _axis_tables(prepared, resized, options)
    prepared.fill = extrapolation_scalar(options.extrapolation, dtype) if prepared.outside else None
    prepared.fast = resize_plans.fast_path(
        prepared.shape, prepared.out_shape, dtype, prepared.gathers, prepared.filters
    )
    if not prepared.outside and math.prod(prepared.out_shape):
        prepared.direct = prepared.fast
    return prepared


def _axis_tables(prepared: PreparedResize, resized: list[Axis], options: Options) -> None:
    """Fill ``prepared``'s tables for each resized axis: its gather (nearest, or a filter that copies one
    input per output) or its filter, and for tf_crop_and_resize the mask of outputs outside the input."""
    mode = options.mode
    for ax in resized:
        x = source_coordinates(ax, options.coordinate_mode)
        if options.coordinate_mode == "tf_crop_and_resize":
            mask = (x < 0) | (x > ax.in_len - 1)
            if mask.any():
                prepared.outside[ax.axis] = mask
        if mode == "nearest":
            prepared.gathers[ax.axis] = nearest_indices(x, options.nearest_mode, ax.in_len)
            continue
        a, antialias, exclude = options.cubic_coeff_a, options.antialias, options.exclude_outside
        positions, indices, weights = filter_table(x, ax, mode, a, antialias, exclude)
        single = single_tap(positions, indices, weights)
        if single is not None:
            prepared.gathers[ax.axis] = single
        else:
            prepared.filters.append((ax.axis, indices, weights))


def execute(prepared: PreparedResize, X: np.ndarray) -> np.ndarray:
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
    plan = plan_cache(lambda X, *small: prepare(X.shape, X.dtype, *small, *ordered))

    def bound(X: Any, roi: Any = None, scales: Any = None, sizes: Any = None) -> np.ndarray:
        if type(X) is not np.ndarray:
            X = np.asarray(X)
        prepared: PreparedResize = plan(X, roi, scales, sizes)
        direct = prepared.direct
        if direct is not None and X.flags.c_contiguous:
            return direct(X)
        return execute(prepared, X)

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
    prepared = prepare(
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
    return execute(prepared, X)
