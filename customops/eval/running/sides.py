"""compare's runs of a whole model on one side, ORT's built-in kernels or ours, each in a child process
(customops.eval.running.runner.SideProcess, the one the fuzzer uses too).

Whatever a model does to ONNX Runtime or to onnxruntime-extensions' layer (an abort inside a custom-op
callback, a segmentation fault in a kernel), it takes down only the child: the side's run then reports "the
custom side crashed: ..." with the child's last words, and a fresh child serves the next run. Each side keeps
one child per process, reused; compare starts all three at once before its own work (:func:`start_all`), and
any other caller gets one on first use (starting one imports onnxruntime).
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from customops.eval.running.runner import SideProcess, WorkerDied
from customops.eval.running.worker import SIDE_INJECT_ENV, VERBOSE_ENV, Reply, Request, ort_log_level

if TYPE_CHECKING:
    from onnx import ModelProto

__all__ = [
    "INJECT_ENV",
    "OUTPUT_LIMIT",
    "REFERENCE_TIMEOUT",
    "VERBOSE_ENV",
    "SideRun",
    "close_all",
    "quiet_ort_log",
    "reference_answer",
    "reference_request",
    "reference_values",
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
    hung: bool = False
    """No answer came before the side's timeout (:func:`run_sides`); ``error`` is then :data:`HANG`."""


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


def start_all(fork: bool = False, without: tuple[str, ...] = ()) -> None:
    """Start the children of the three sides now without waiting for them: each imports onnxruntime (the
    reference's onnx.reference too), about a second, which then overlaps with this process's own work
    and with each other's instead of coming one after another on first use. With ``fork`` (the command
    line, customops.eval.running.forked), the built-in side's child starts first, then this process imports
    onnx and forks the custom and reference sides' children, which need it, from itself. ``without``:
    sides not started now (outputs loaded in place of the built-in side's: neither it nor a node alone
    runs; a side asked for later starts then)."""
    with _LOCK:
        for side in (s for s in _NOTES if s not in without):
            child = _child(side)
            if child.proc is not None:
                continue
            if fork and side != "builtin":
                import onnx  # noqa: F401 - imported once, here, for the children forked next

            child.start(fork=fork and side != "builtin")


def run_side(
    model: ModelProto | bytes,
    feed: dict[str, np.ndarray],
    custom: bool,
    repeats: int = 0,
    providers: list[str] | None = None,
    optimization: str = "all",
) -> SideRun:
    """Run ``model`` (or its serialized bytes) on one side in that side's child process (see the module
    docstring): a crash is the side's error; with ``repeats`` > 0 also time that many runs after the first
    (which warms the kernels up) for per-node times and placements; ``providers``: the built-in side's
    execution providers (None: CPU; ours runs on the CPU); ``optimization``: ORT's graph optimization
    level (customops.eval.running.worker.OPTIMIZATION_LEVELS)."""
    return run_sides([whole_request(model, feed, custom, repeats, providers, optimization)])[0]


def whole_request(
    model: ModelProto | bytes,
    feed: dict[str, np.ndarray],
    custom: bool,
    repeats: int = 0,
    providers: list[str] | None = None,
    optimization: str = "all",
) -> tuple[str, Request]:
    """The side and the request of a whole-model run (:func:`run_side`'s arguments)."""
    providers = None if custom else providers
    if not isinstance(model, bytes):
        model = model.SerializeToString()
    request = Request(model, feed, whole=True, repeats=repeats, limit=OUTPUT_LIMIT, providers=providers)
    request.optimization = optimization
    request.profile = providers not in (None, ["CPUExecutionProvider"])  # where ORT placed each node
    return ("custom" if custom else "builtin"), request


def run_sides(jobs: list[tuple[str, Request]], timeouts: dict[str, float] | None = None) -> list[SideRun]:
    """Each ``(side, request)`` of ``jobs`` (each side at most once) sent to its side's child before any
    answer is awaited, so that the sides run at once; their answers in the order of ``jobs``. A side
    named in ``timeouts`` has that many seconds from the moment its ready child was sent the request
    (its own start, or another side's, is not counted): past them its child is killed and its run is a
    hang (:data:`HANG`)."""
    sent: list[int | WorkerDied] = []
    deadlines: dict[str, float] = {}
    with _LOCK:
        for side, request in jobs:
            try:
                sent.append(_child(side).submit(request))
            except WorkerDied as exc:
                _child(side).close()
                sent.append(exc)
            if timeouts and side in timeouts:
                deadlines[side] = time.perf_counter() + timeouts[side]
        return [_answer(side, job, deadlines.get(side)) for (side, _), job in zip(jobs, sent, strict=True)]


def _answer(side: str, job: int | WorkerDied, deadline: float | None) -> SideRun:
    """The run of a job sent to ``side``'s child (:func:`run_sides`); call with :data:`_LOCK` held."""
    try:
        if isinstance(job, WorkerDied):
            raise job
        reply = _child(side).result(job, deadline)
    except WorkerDied as exc:
        _child(side).close()
        return SideRun(error=_crash_text(side, exc.reason, exc.tail))
    if reply.status == "hang":
        return SideRun(error=HANG, hung=True)
    return side_run(side, reply)


HANG = "no answer within the time limit"
"""The error of a run past its side's timeout (:func:`run_sides`)."""

REFERENCE_TIMEOUT = 120.0
"""Seconds onnx.reference may take for one node (compare's ``--reference-timeout``): the work limit keeps
it near 5 s on the machines it was measured on; past the timeout its child is killed and the node has no
third vote."""


def reference_request(model: bytes, feed: dict[str, np.ndarray]) -> tuple[str, Request]:
    """The side and request of a run of the one-node ``model`` on onnx.reference, in the reference side's
    child (the fuzzer's mechanism, customops.eval.running.runner; its memory bound:
    customops.eval.running.worker.REFERENCE_MEMORY): its outputs by name. Give it a timeout in
    :func:`run_sides`."""
    return "reference", Request(model, feed, whole=True, limit=OUTPUT_LIMIT)


def reference_values(run: SideRun, timeout: float) -> tuple[dict[str, np.ndarray], str | None]:
    """(its outputs by name, None) or ({}, why) of a reference run, a hang named by ``timeout`` (the
    option's)."""
    if run.hung:  # the status, not the text: a side's own error could read the same
        return {}, f"not run: no answer within {timeout:g} s (--reference-timeout)"
    if run.error is not None:
        return {}, run.error
    return run.values, None


def reference_answer(run: SideRun, timeout: float) -> tuple[np.ndarray | None, str | None]:
    """(first output, None) or (None, why) of a reference run (:func:`reference_values`)."""
    values, error = reference_values(run, timeout)
    return next(iter(values.values()), None), error


def run_reference(
    model: bytes, feed: dict[str, np.ndarray], timeout: float
) -> tuple[np.ndarray | None, str | None]:
    """The first output of the one-node ``model`` on onnx.reference (:func:`reference_request`), with no
    answer in ``timeout`` seconds a hang (the child is killed): (output, None) or (None, why)."""
    (run,) = run_sides([reference_request(model, feed)], {"reference": timeout})
    return reference_answer(run, timeout)


@atexit.register
def close_all() -> None:
    """End every side's child (at exit, and after an interrupted command)."""
    for child in _CHILDREN.values():
        child.close()
