"""Where a failing kernel's error, or a stop met in one, goes: the run of ours in progress on the calling
thread, or, when there is none, stderr and :func:`pop_errors`.

A run of :class:`customops.bridge.session.InferenceSession` enters a :class:`RunContext` for its thread
(:func:`enter`) and leaves it when ONNX Runtime returns (:func:`leave`). Errors are routed by thread
identity alone: with sequential execution ONNX Runtime calls our kernels on the thread that called run,
and our sessions always execute sequentially, so an error reaches exactly the run that caused it and
never another one. The hook (customops.bridge.hook) records into the context through :func:`report` and
:func:`stop_run`; a run with no context of ours (a plain ``onnxruntime.InferenceSession``, or another
thread) cannot be stopped, so :func:`report` prints the error and keeps it for :func:`pop_errors`.
"""

from __future__ import annotations

import sys
import threading

import onnxruntime as ort


class RunContext:
    """The run in progress on one thread: its RunOptions (always ours, never the caller's: the hook sets
    ``terminate`` on them), the caller's RunOptions if any (``caller``), the kernel errors it met, and a
    KeyboardInterrupt or SystemExit met in it (``stop``)."""

    __slots__ = ("caller", "errors", "run_options", "stop")

    def __init__(self, run_options: ort.RunOptions, caller: ort.RunOptions | None = None) -> None:
        self.run_options = run_options
        self.caller = caller
        self.errors: list[str] = []
        self.stop: BaseException | None = None


_ACTIVE: dict[int, RunContext] = {}
WATCHED: set[int] = set()
"""Threads whose run of ours was given RunOptions by its caller: our kernels pass a ``terminate`` the
caller sets on them on to the run's own options (:func:`forward_terminate`). Filled and emptied in place
by :func:`enter` and :func:`leave` (never rebound), so the hook may test it directly on every call."""
_get_ident = threading.get_ident
_UNCLAIMED: list[str] = []


def current_context() -> RunContext | None:
    """The run of ours in progress on this thread (its kernels run here: runs are sequential), if any."""
    return _ACTIVE.get(_get_ident())


def enter(ctx: RunContext) -> tuple[RunContext | None, bool]:
    """Make ``ctx`` the run in progress on this thread. Returns what :func:`leave` needs: the run it
    nests in on this thread (a kernel running a model), if any, and whether this thread is newly in
    :data:`WATCHED` (the caller gave RunOptions)."""
    tid = _get_ident()
    outer = _ACTIVE.get(tid)
    _ACTIVE[tid] = ctx
    watched = ctx.caller is not None and tid not in WATCHED
    if watched:
        WATCHED.add(tid)
    return outer, watched


def leave(outer: RunContext | None, watched: bool) -> None:
    """End the run :func:`enter` began on this thread (``outer`` and ``watched`` as it returned them):
    the run it nested in, if any, is the one in progress again."""
    tid = _get_ident()
    if watched:
        WATCHED.discard(tid)
    if outer is None:
        del _ACTIVE[tid]
    else:
        _ACTIVE[tid] = outer


def forward_terminate() -> None:
    """A ``terminate`` the caller set on the RunOptions of the run of ours in progress on this thread (to
    cancel it from another thread), put on the options the run actually uses (ours), after each of our
    kernels: the run stops after the node. The hook calls it only while :data:`WATCHED` holds a thread."""
    ctx = current_context()
    if ctx is not None and ctx.caller is not None and ctx.caller.terminate:
        ctx.run_options.terminate = True


def report(message: str) -> None:
    """A kernel's error: recorded in the run of ours in progress on this thread, which stops after the
    node; with no such run, printed on stderr and kept for :func:`pop_errors`."""
    ctx = current_context()
    if ctx is not None:
        ctx.errors.append(message)
        ctx.run_options.terminate = True
        return
    _UNCLAIMED.append(message)
    print(
        "customops: a kernel failed in a run customops cannot stop; its output is empty and no result "
        f"of this run means anything (customops.pop_errors()): {message}",
        file=sys.stderr,
        flush=True,
    )


def stop_run(exc: BaseException) -> bool:
    """A KeyboardInterrupt or SystemExit met in a kernel: the run of ours in progress on this thread stops
    after the node and raises the first one met once ONNX Runtime returns. Returns False when this thread
    runs no run of ours (nothing is done then)."""
    ctx = current_context()
    if ctx is None:
        return False
    if ctx.stop is None:
        ctx.stop = exc
    ctx.run_options.terminate = True
    return True


def pop_errors() -> list[str]:
    """Return and forget the kernel errors raised in runs of plain ``onnxruntime`` sessions."""
    errors = list(_UNCLAIMED)
    _UNCLAIMED.clear()
    return errors
