"""Running a compiled loop over parts of its output on several threads.

The compiled loops (customops.accel.jit) release the GIL and take a range ``[start, stop)`` of the
units they compute (output rows, blocks of rows, planes) as their last two arguments; every output
element is computed by the same arithmetic whichever part it falls in, so results do not depend on the
number of threads.

Threads: ``CUSTOMOPS_THREADS`` in the environment (read once; default: the cores this process may run
on, at most 8). ``CUSTOMOPS_THREADS=1`` runs every loop on the calling thread. A loop is split only when
it has at least ``_MIN_WORK`` elements of work per thread, so tiny tensors never pay for a hand-over.
A split loop is cut into pieces, up to ``_PIECES_PER_THREAD`` per thread, which the calling thread and
``threads - 1`` pool workers take one at a time until none is left: a thread slowed down by other work
on its core (ONNX Runtime's intra-op threads spin for some 50 ms after a run that used them) takes fewer
pieces instead of holding up the call. The pool is made on first use and made again in a forked child
(a pool's threads do not survive ``fork``).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

# Elements of work (outputs times taps, roughly) below which a part is not worth a thread: a hand-over
# to a pool thread costs some tens of microseconds on the machine measured (docs/performance.md).
_MIN_WORK = 1 << 18
_MAX_DEFAULT = 8
# Pieces of a split loop per thread, and the least work in a piece: each piece costs a call through
# numba's dispatcher and the GIL (a few microseconds). Measured in sessions on the 2-core machine with
# ORT's spinning intra-op pool: 8 pieces a thread took 18-25% off the filtering Resize loops against one
# part a thread (the part on the shared core finished last); copies were unchanged (docs/performance.md).
_PIECES_PER_THREAD = 8
_MIN_PIECE_WORK = 1 << 15

_lock = threading.Lock()
_state: dict[str, Any] = {"threads": None, "pool": None, "source": None}


def threads() -> int:
    """How many threads a large loop is split over (``CUSTOMOPS_THREADS``, default: usable cores, max 8)."""
    count = _state["threads"]
    if count is None:
        raw = os.environ.get("CUSTOMOPS_THREADS", "").strip()
        note = ""
        try:
            count = int(raw) if raw else 0
        except ValueError:
            count = 0
        if count < 1:
            if raw:
                note = f" (CUSTOMOPS_THREADS={raw!r} is not a positive integer)"
            try:
                count = len(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                count = os.cpu_count() or 1
            count = max(1, min(count, _MAX_DEFAULT))
            _state["source"] = f"default: the usable cores, at most {_MAX_DEFAULT}{note}"
        else:
            _state["source"] = "CUSTOMOPS_THREADS"
        _state["threads"] = count
    return count


def describe() -> str:
    """For reports: the thread count and where it comes from."""
    count = threads()
    return f"{count} ({_state['source'] or 'set in this process'})"


def _pool() -> ThreadPoolExecutor:
    pool = _state["pool"]
    if pool is None:
        with _lock:
            pool = _state["pool"]
            if pool is None:
                pool = ThreadPoolExecutor(max_workers=threads() - 1, thread_name_prefix="customops")
                _state["pool"] = pool
    return pool


def _forget_pool() -> None:
    _state["pool"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def parts(length: int, work: int) -> int:
    """How many threads share a loop over ``length`` rows with ``work`` elements of work in all."""
    count = threads()
    if count <= 1 or length < 2:
        return 1
    return max(1, min(count, length, work // _MIN_WORK))


def serial(work: int) -> bool:
    """Whether :func:`run` calls a loop with ``work`` elements of work once, on the calling thread,
    whatever the thread count. Callers that know their work when they plan may then call the loop
    themselves (``loop(*args, 0, length)``), which saves about a microsecond per call."""
    return work < 2 * _MIN_WORK


def pieces(length: int, work: int, count: int) -> list[tuple[int, int]]:
    """The ``[start, stop)`` pieces :func:`run` cuts ``[0, length)`` into for ``count`` threads, in order:
    at most ``_PIECES_PER_THREAD`` per thread and none with less than ``_MIN_PIECE_WORK`` of the
    ``work`` (one piece when ``count`` is 1)."""
    wanted = 1 if count <= 1 else max(count, min(count * _PIECES_PER_THREAD, work // _MIN_PIECE_WORK))
    step = max(1, -(-length // max(1, wanted)))
    return [(start, min(start + step, length)) for start in range(0, length, step)] or [(0, length)]


def run(loop: Callable[..., Any], length: int, work: int, *args: Any) -> None:
    """Call ``loop(*args, start, stop)`` over ``[0, length)``: once when the work is small, else for each
    of :func:`pieces`, taken one at a time by the calling thread and the pool's workers."""
    if serial(work):  # the common case for small tensors, decided first
        loop(*args, 0, length)
        return
    count = parts(length, work)
    bounds = pieces(length, work, count)
    if len(bounds) == 1:
        loop(*args, 0, length)
        return
    taken = itertools.count()  # next() on it is atomic under the GIL
    total = len(bounds)

    def share() -> None:
        while (i := next(taken)) < total:
            loop(*args, *bounds[i])

    pool = _pool()
    futures: list[Future[Any]] = [pool.submit(share) for _ in range(min(count, total) - 1)]
    try:
        share()
    finally:
        for future in futures:
            future.result()
