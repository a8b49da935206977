"""compare's runs of a whole model on one side, ORT's built-in kernels or ours, each in a child process
(customops.eval.runner.SideProcess, the one the fuzzer uses too).

Whatever a model does to ONNX Runtime or to onnxruntime-extensions' layer (an abort inside a custom-op
callback, a segmentation fault in a kernel), it takes down only the child: the side's run then reports
"the custom side crashed: ..." with the child's last words, and a fresh child serves the next run. Each
side keeps one child per process, reused; compare starts all three at once before its own work (:func:`start_all`),
and any other caller gets one on first use (starting one imports onnxruntime).
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field

import numpy as np

from customops.eval.runner import SideProcess, WorkerDied
from customops.eval.worker import SIDE_INJECT_ENV, VERBOSE_ENV, Reply, Request, ort_log_level

__all__ = [
    "INJECT_ENV",
    "OUTPUT_LIMIT",
    "REFERENCE_TIMEOUT",
    "VERBOSE_ENV",
    "SideRun",
    "close_all",
    "quiet_ort_log",
    "run_reference",
    "run_side",
    "run_sides",
    "start_all",
    "whole_request",
]

INJECT_ENV = SIDE_INJECT_ENV
"""Test hook: ``abort:SIDE`` makes the child of SIDE call ``os.abort()`` on every run it is asked for, as a
crash inside ORT or the layer would."""

OUTPUT_LIMIT = 2 * 2**30
"""Most bytes a side's run may hand back (all its outputs together): compare holds four such runs and
their metrics at once; a model whose outputs exceed this is reported as the side's error, not read."""


@dataclass
class SideRun:
    """Outputs of one run by name, or the error that stopped it; ``times`` per node name in µs."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None
    times: dict[str, float] = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)
    """The execution provider that ran each node (profiled runs only)."""
    timed_runs: int = 0
    """The runs ``times`` come from (the first run of a session, which warms the kernels up, is not one)."""


def quiet_ort_log() -> None:
    """Keep ONNX Runtime's default logger below errors in this process (it prints coloured warnings and,
    for a model it refuses, several lines before ours), unless :data:`VERBOSE_ENV` asks for it."""
    import onnxruntime as ort

    ort.set_default_logger_severity(ort_log_level())


def _crash_text(side: str, reason: str, tail: str) -> str:
    name = "built-in" if side == "builtin" else side
    return f"the {name} side crashed ({reason})" + (f": {tail}" if tail else "")


def side_run(side: str, reply: Reply) -> SideRun:
    """compare's view of a reply: the outputs, or the error (its message alone, or the crash)."""
    if reply.status == "ok":
        return SideRun(reply.value, None, reply.times, reply.placement, reply.timed_runs)
    if reply.status == "crash":
        return SideRun(error=_crash_text(side, reply.message, reply.tail))
    return SideRun(error=reply.message)


_CHILDREN: dict[str, SideProcess] = {}
_LOCK = threading.Lock()
"""One run at a time per process: a side's child answers one request at a time over one connection, and
customops.compare may be called from several threads."""


_NOTES = {"builtin": True, "custom": True, "reference": False}
"""Whether each side's child gets this process's stderr for the note of a first compilation."""


def _child(side: str) -> SideProcess:
    """The child of ``side`` (made, not started, on first use); call with :data:`_LOCK` held."""
    child = _CHILDREN.get(side)
    if child is None:
        child = _CHILDREN[side] = SideProcess(side, note=_NOTES[side])
    return child


def start_all() -> None:
    """Start the children of the three sides now without waiting for them: each imports onnxruntime (the
    reference's onnx.reference too), about a second, which then overlaps with this process's own work
    and with each other's instead of coming one after another on first use."""
    with _LOCK:
        for side in _NOTES:
            child = _child(side)
            if child.proc is None:
                child.start()


def run_side(
    model: bytes,
    feed: dict[str, np.ndarray],
    custom: bool,
    repeats: int = 0,
    providers: list[str] | None = None,
    optimization: str = "all",
) -> SideRun:
    """Run the serialized ``model`` on one side in that side's child process (see the module docstring);
    with ``repeats`` > 0 also time that many runs after the first (which warms the kernels up) for
    per-node times and placements; ``providers``:
    the built-in side's execution providers (None: CPU); ``optimization``: ORT's graph optimization
    level (customops.eval.worker.OPTIMIZATION_LEVELS)."""
    return run_sides([whole_request(model, feed, custom, repeats, providers, optimization)])[0]


def whole_request(
    model: bytes,
    feed: dict[str, np.ndarray],
    custom: bool,
    repeats: int = 0,
    providers: list[str] | None = None,
    optimization: str = "all",
) -> tuple[str, Request]:
    """The side and the request of a whole-model run (:func:`run_side`'s arguments)."""
    request = Request(model, feed, whole=True, repeats=repeats, limit=OUTPUT_LIMIT, providers=providers)
    request.optimization = optimization
    return ("custom" if custom else "builtin"), request


def run_sides(jobs: list[tuple[str, Request]]) -> list[SideRun]:
    """Each ``(side, request)`` of ``jobs`` (each side at most once) sent to its side's child before any
    answer is awaited, so that the sides run at once; their answers in the order of ``jobs``."""
    sent: list[int | WorkerDied] = []
    with _LOCK:
        for side, request in jobs:
            try:
                sent.append(_child(side).submit(request))
            except WorkerDied as exc:
                _child(side).close()
                sent.append(exc)
        runs = []
        for (side, _), job in zip(jobs, sent, strict=True):
            try:
                if isinstance(job, WorkerDied):
                    raise job
                runs.append(side_run(side, _child(side).result(job)))
            except WorkerDied as exc:
                _child(side).close()
                runs.append(SideRun(error=_crash_text(side, exc.reason, exc.tail)))
        return runs


REFERENCE_TIMEOUT = 120.0
"""Seconds onnx.reference may take for one node (compare's ``--reference-timeout``): the work limit keeps
it near 5 s on the machines it was measured on; past the timeout its child is killed and the node has no
third vote."""


def run_reference(
    model: bytes, feed: dict[str, np.ndarray], timeout: float
) -> tuple[np.ndarray | None, str | None]:
    """The first output of the one-node ``model`` on onnx.reference, in the reference side's child (the
    fuzzer's mechanism, customops.eval.runner; its memory bound: customops.eval.worker.REFERENCE_MEMORY),
    with no answer in ``timeout`` seconds a hang (the child is killed): (output, None) or (None, why)."""
    import time

    request = Request(model, feed, limit=OUTPUT_LIMIT)
    with _LOCK:
        child = _child("reference")
        try:
            job = child.submit(request)
            reply = child.result(job, time.perf_counter() + timeout)
        except WorkerDied as exc:
            child.close()
            return None, f"the reference side crashed while starting ({exc.reason})"
    if reply.status == "ok":
        return reply.value, None
    if reply.status == "hang":
        return None, f"not run: no answer within {timeout:g} s (--reference-timeout)"
    return None, side_run("reference", reply).error


@atexit.register
def close_all() -> None:
    """End every side's child (at exit, and after an interrupted command)."""
    for child in _CHILDREN.values():
        child.close()
