"""Running a compiled loop over parts of its output on several threads.

The compiled loops (customops.kernels._jit) release the GIL and take a range ``[start, stop)`` of the
rows (or planes) they compute as their last two arguments; every output element is computed by the
same arithmetic whichever part it falls in, so results do not depend on the number of threads.

Threads: ``CUSTOMOPS_THREADS`` in the environment (read once; default: the cores this process may run
on, at most 8). ``CUSTOMOPS_THREADS=1`` runs every loop on the calling thread. A loop is split only when
it has at least ``_MIN_WORK`` elements of work per thread, so tiny tensors never pay for a hand-over.
The caller's thread computes the first part; the others go to a pool of ``threads - 1`` workers, made
on first use and made again in a forked child (a pool's threads do not survive ``fork``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

# Elements of work (outputs times taps, roughly) below which a part is not worth a thread: a hand-over
# to a pool thread costs some tens of microseconds on the machine measured (docs/performance.md).
_MIN_WORK = 1 << 18
_MAX_DEFAULT = 8

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
    """How many parts a loop over ``length`` rows with ``work`` elements of work in all is split into."""
    count = threads()
    if count <= 1 or length < 2:
        return 1
    return max(1, min(count, length, work // _MIN_WORK))


def serial(work: int) -> bool:
    """Whether :func:`run` calls a loop with ``work`` elements of work once, on the calling thread,
    whatever the thread count. Callers that know their work when they plan may then call the loop
    themselves (``loop(*args, 0, length)``), which saves about a microsecond per call."""
    return work < 2 * _MIN_WORK


def run(loop: Callable[..., Any], length: int, work: int, *args: Any, align: int = 1) -> None:
    """Call ``loop(*args, start, stop)`` over ``[0, length)``, split into parts (see :func:`parts`)
    whose boundaries are multiples of ``align``; the calling thread computes the first part."""
    if serial(work):  # the common case for small tensors, decided first
        loop(*args, 0, length)
        return
    count = parts(length, work)
    if count > 1:
        step = -(-length // count)
        step = -(-step // align) * align
        bounds = [(start, min(start + step, length)) for start in range(0, length, step)]
    else:
        bounds = [(0, length)]
    if len(bounds) == 1:
        loop(*args, 0, length)
        return
    pool = _pool()
    futures: list[Future[Any]] = [pool.submit(loop, *args, start, stop) for start, stop in bounds[1:]]
    try:
        loop(*args, *bounds[0])
    finally:
        for future in futures:
            future.result()
