"""The compiled paths of Resize (customops.kernels.resampling.resize): which loop of
:mod:`customops.accel.resampling.resize_loops` runs a resize, planned once from its tap tables, and the
closure that runs it.

A resize comes in as the kernel's tables (per resized axis, a gather or a filter of (output length,
taps) indices and weights) and becomes a :class:`Job`; its family (copies, filters of the last two
axes, filters of other axes) and the cost models choose one of the candidates of :data:`FAST_PATHS`,
whose builder makes the tables the loop needs (tap-major, unsigned, with their compacted forms and the
periodic runs of x2 and downsampled axes) and returns a closure of the candidate's name over them.
Float32 and float64 filters, numeric nearest gathers; everything else takes the kernel's numpy passes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from customops.accel import jit, parallel
from customops.accel.resampling import resize_loops

_SCRATCH_BYTES = 1 << 19  # filtered input rows kept per block of output rows (about an L2 cache)
_TINY_GATHER = 1024  # output elements up to which a nearest gather is one ndarray.take (measured)
# Input rows x output width up to which rows first takes the short loop. A 3-plane x2 bound call, linear
# / cubic: 8x8 2.9 / 4.1 us against 4.5 / 5.5, 16x16 5.2 / 9.1 against 8.6 / 12.3; at 32x32 cubic is
# faster in the general loop (its x2 pairs vectorize).
SMALL_SCRATCH = 1 << 10


def _doubles(idx: np.ndarray, width: int) -> bool:
    """Whether idx == [0, 0, 1, 1, ..., width - 1, width - 1]."""
    return width > 0 and idx.size == 2 * width and bool((idx == np.arange(2 * width) // 2).all())


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


def x2_run(indices: np.ndarray, weights: np.ndarray, width: int) -> np.ndarray:
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


def down_run(indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
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
class Job:
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


def plan_job(
    shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    dtype: np.dtype,
    gathers: dict[int, np.ndarray],
    filters: list[tuple[int, np.ndarray, np.ndarray]],
) -> Job | None:
    """A resize of X (``shape``, ``dtype``) into ``out_shape`` as a :class:`Job`, or None when no compiled
    path can run it (no numba, a 0-d input, or nothing to do: every gather an identity). ``gathers`` maps
    an axis to the input index of each output (nearest, or a filter that copies one input per output),
    ``filters`` holds (axis, indices, weights) of the other resized axes, both (output length, taps)."""
    if not shape or not jit.enabled():
        return None
    ops: dict[int, tuple[np.ndarray, ...]] = {}
    for ax, idx in gathers.items():
        if not _is_identity(idx, shape[ax]):
            ops[ax] = (idx.reshape(-1, 1), np.ones((idx.size, 1)))
    for ax, indices, weights in filters:
        ops[ax] = (indices, weights)
    if not ops:
        return None
    return Job(shape, out_shape, dtype, ops, not filters)


def _planes(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``shape`` seen as (planes, rows, columns): the last two axes and the product of the others."""
    return (math.prod(shape[:-2]), shape[-2], shape[-1])


def _family(job: Job) -> str | None:
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


def _gather_work(job: Job) -> int:
    """The gathers' work: one copy per output element."""
    return math.prod(job.out_shape)


def _rows_first_cost(job: Job) -> int:
    """Per plane, the work of filtering the last axis first (height x out_w outputs of the horizontal
    taps), then down the columns (out_h x out_w outputs of the vertical taps). The pass along the last
    axis gathers and counts twice; the one down the columns streams whole rows."""
    (ty, _), (tx, _) = job.ops[len(job.shape) - 2], job.ops[len(job.shape) - 1]
    height, out_h, out_w = job.shape[-2], job.out_shape[-2], job.out_shape[-1]
    return 2 * height * out_w * tx.shape[1] + out_h * out_w * ty.shape[1]


def _columns_first_cost(job: Job) -> int:
    """Per plane, the work of filtering down the columns first (out_h x width outputs of the vertical
    taps), then along the last axis (out_h x out_w outputs of the horizontal taps, counting twice)."""
    (ty, _), (tx, _) = job.ops[len(job.shape) - 2], job.ops[len(job.shape) - 1]
    width, out_h, out_w = job.shape[-1], job.out_shape[-2], job.out_shape[-1]
    return out_h * width * ty.shape[1] + 2 * out_h * out_w * tx.shape[1]


def _columns_first(job: Job) -> bool:
    """Whether the last-two-axes loop filters down the columns first: when that makes the gathering pass
    (along the last axis) the smaller one."""
    return _columns_first_cost(job) < _rows_first_cost(job)


def _last2_work(job: Job) -> int:
    """The last-two-axes loops' work: the cheaper order's cost, times the planes."""
    return min(_rows_first_cost(job), _columns_first_cost(job)) * _planes(job.shape)[0]


# When each compiled path applies, within its family (the cost models decide).


def _always(job: Job) -> bool:
    """The last candidate of a family: it runs whatever the ones before it did not take."""
    return True


def _tiny_applies(job: Job) -> bool:
    """A gather of at most _TINY_GATHER elements."""
    return _gather_work(job) <= _TINY_GATHER


def _gather2_applies(job: Job) -> bool:
    """A gather that copies every element twice along the last axis (nearest x2), where an unsigned
    type twice as wide can store both copies at once."""
    width = job.shape[-1]
    return (
        jit.BITS.get(2 * job.dtype.itemsize) is not None
        and job.out_shape[-1] == 2 * width
        and _doubles(job.gather_indices[1], width)
    )


def _short_loop_applies(job: Job) -> bool:
    """The short loop (resize_loops.resize_small_rows_first) of last2_small and last2_small_any: rows first, a
    scratch of input rows x output width up to SMALL_SCRATCH, and work for one call on this thread."""
    return (
        not _columns_first(job)
        and job.shape[-2] * job.out_shape[-1] <= SMALL_SCRATCH
        and parallel.serial(_last2_work(job))
    )


def _last2_small_applies(job: Job) -> bool:
    """The short loop on a 4-D X."""
    return len(job.shape) == 4 and _short_loop_applies(job)


def _last2_small_any_applies(job: Job) -> bool:
    """The short loop on X of another rank."""
    return len(job.shape) != 4 and _short_loop_applies(job)


def _last2_serial_applies(job: Job) -> bool:
    """A last-two-axes loop that parallel.run would not split."""
    return parallel.serial(_last2_work(job))


# ---------------------------------------------------------------------------------------------
# The compiled paths. Each builds its tables once and returns a closure of its name over them.


def _build_tiny(job: Job) -> Callable[[np.ndarray], np.ndarray]:
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


def _build_gather2(job: Job) -> Callable[[np.ndarray], np.ndarray]:
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


def _build_gather(job: Job) -> Callable[[np.ndarray], np.ndarray]:
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


def _last2_loop(job: Job) -> _Last2:
    """Plan the last-two-axes loop in the order of :func:`_columns_first`."""
    (ty, wy), (tx, wx) = job.ops[len(job.shape) - 2], job.ops[len(job.shape) - 1]
    in3, out3 = _planes(job.shape), _planes(job.out_shape)
    (tyi, tyw), (txi, txw) = _tap_tables(ty, wy), _tap_tables(tx, wx)
    if _columns_first(job):
        kernel = jit.get("resize_columns_first", resize_loops)
        tables: tuple[Any, ...] = (tyi, tyw, txi, txw, down_run(tx, wx))
        units = in3[0] * out3[1]
    else:
        kernel = jit.get("resize_rows_first", resize_loops)
        block, rows = _block_rows(ty, out3[2])
        tables = (tyi, tyw, txi, txw, block, rows, x2_run(tx, wx, in3[2]))
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


def _build_last2_small(job: Job, four_d: bool) -> Callable[[np.ndarray], np.ndarray]:
    """The short loop: on a 4-D (NCHW) X as it comes (``four_d``), else on X of another rank through a
    4-D view (1, planes, rows, columns)."""
    plan = _last2_loop(job)
    small, ints, weights, redo = _short_loop(plan)
    dtype, out_shape = job.dtype, job.out_shape
    in4, out4 = (1, *plan.in3), (1, *plan.out3)

    def last2_small(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        if not small(X, out, ints, weights):
            redo(X, out)
        return out

    def last2_small_any(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        if not small(X.reshape(in4), out.reshape(out4), ints, weights):
            redo(X, out)
        return out

    return last2_small if four_d else last2_small_any


def _build_last2(job: Job, serial: bool) -> Callable[[np.ndarray], np.ndarray]:
    """The last-two-axes loop: called once on this thread (``serial``: parallel.run would not split it),
    else through parallel.run, split over threads."""
    kernel, in3, out3, tables, units, work = _last2_loop(job)
    dtype, out_shape = job.dtype, job.out_shape

    def last2_serial(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        kernel(X.reshape(in3), out.reshape(out3), *tables, 0, units)
        return out

    def last2(X: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype=dtype)
        parallel.run(kernel, units, work, X.reshape(in3), out.reshape(out3), *tables)
        return out

    return last2_serial if serial else last2


def _build_passes(job: Job) -> Callable[[np.ndarray], np.ndarray]:
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
        runs = (x2_run(*ops[ax], n), down_run(*ops[ax])) if post == 1 else ()
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


class Candidate(NamedTuple):
    """A compiled path: the name of the function ``build(job)`` returns, used when ``applies(job)``."""

    name: str
    applies: Callable[[Job], bool]
    build: Callable[[Job], Callable[[np.ndarray], np.ndarray]]


FAST_PATHS: dict[str, tuple[Candidate, ...]] = {
    # nearest (or filters that reduce to copies) of the last two axes, any numeric type
    "copies": (
        Candidate("tiny", _tiny_applies, _build_tiny),
        Candidate("gather2", _gather2_applies, _build_gather2),
        Candidate("gather", _always, _build_gather),
    ),
    # float32 / float64 filters of both last axes: one loop over both
    "last2": (
        Candidate("last2_small", _last2_small_applies, functools.partial(_build_last2_small, four_d=True)),
        Candidate(
            "last2_small_any", _last2_small_any_applies, functools.partial(_build_last2_small, four_d=False)
        ),
        Candidate("last2_serial", _last2_serial_applies, functools.partial(_build_last2, serial=True)),
        Candidate("last2", _always, functools.partial(_build_last2, serial=False)),
    ),
    # float32 / float64 filters of other axes: one loop per axis
    "axes": (Candidate("passes", _always, _build_passes),),
}
"""The compiled paths of each :func:`_family`, in order of preference: the first that applies runs."""


def choose(job: Job) -> Candidate | None:
    """The compiled path for the job: the first of its family's that applies (None: no family)."""
    for candidate in FAST_PATHS.get(_family(job) or "", ()):
        if candidate.applies(job):
            return candidate
    return None


def fast_path(
    shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    dtype: np.dtype,
    gathers: dict[int, np.ndarray],
    filters: list[tuple[int, np.ndarray, np.ndarray]],
) -> Callable[[np.ndarray], np.ndarray] | None:
    """A compiled implementation of this resize (see FAST_PATHS; the arguments are
    :func:`plan_job`'s), or None (the kernel's numpy passes run). It takes a C-contiguous X."""
    job = plan_job(shape, out_shape, dtype, gathers, filters)
    if job is None:
        return None
    candidate = choose(job)
    return None if candidate is None else candidate.build(job)
