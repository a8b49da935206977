"""One side in a process of its own: what the child does (customops.eval.running.runner starts and watches it).

A side is ORT's built-in kernels (``builtin``), ours (``custom``: the model rewritten into our domain and
run in customops.InferenceSession) or onnx.reference (``reference``). compare and the fuzzer send the same
:class:`Request` and get the same :class:`Reply`: a model run whole (every output by name, per-node times
when profiled) or a one-node case (its first output). Whatever the model does to ONNX Runtime or to the
Python-op layer (an abort in a callback, a segmentation fault) takes down only this process.

The child is ``python -m customops.eval.running.child SIDE PARENT FD [NOTE_FD]``; it talks to the parent over a socket
pair with ``multiprocessing.connection`` (pickles between our own two processes only). Its stdout and
stderr are the parent's log of it, emptied before each request, so a crash leaves its last words there
(with ``-v`` its stderr is the user's, which is written to and never emptied).

The reference side's child may map at most :data:`REFERENCE_MEMORY` bytes more than it holds once started
(``RLIMIT_AS``): onnx.reference runs in Python whatever a node asks for, and past that bound an
allocation fails as a MemoryError, the side's error, rather than the machine's OOM killer ending a
process (ORT's sides are not bound so: their kernels check what they allocate).

Test hooks (environment): ``CUSTOMOPS_SIDE_INJECT=ACTION:SIDE`` (ACTION ``abort`` or ``hang``) acts so in
the child of SIDE on every request;
``CUSTOMOPS_FUZZ_INJECT`` holds comma-separated ``ACTION:SIDE:INDEX`` items (ACTION ``abort``, ``exit`` or
``hang``) acted on when the child of SIDE is asked for campaign case INDEX (not for triage reruns).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from customops.eval.running.messages import described, message

if TYPE_CHECKING:
    from onnx import ModelProto

SIDES = ("builtin", "custom", "reference")
"""The three sides, each a child process of its own, in the order reports list them."""

SIDE_INJECT_ENV = "CUSTOMOPS_SIDE_INJECT"
FUZZ_INJECT_ENV = "CUSTOMOPS_FUZZ_INJECT"

VERBOSE_ENV = "CUSTOMOPS_ORT_LOG"
"""Set to ``1`` (the CLI's ``-v``) to keep ONNX Runtime's own log at warning level in the children."""

OPTIMIZATION_LEVELS = ("disable", "basic", "extended", "all")
"""ONNX Runtime's graph optimization levels by the names ORT's and Polygraphy's users know (compare's
``--graph-optimization-level``): ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED, ORT_ENABLE_ALL
(ORT's default)."""

KERNEL_TIME_RUNS = 2
"""Runs of a whole model timed for per-node kernel times (compare's ``--kernel-times``), after the
untimed run that gives the outputs and warms the kernels up."""

CASE_OUTPUT_LIMIT = 64 << 20
"""Largest output of a one-node case sent back. A campaign's valid cases have at most 720 output elements
(customops.fuzz.spaces.base.OUT_LIMIT); a replayed case comes from a file and could ask a side for any
size, which would then be copied into the parent: past this it is an error of that side instead."""


@dataclass
class Request:
    """What a side runs: a serialized model and its feed.

    ``whole``: every output by name, ``repeats`` runs timed for per-node times after the run that gives the
    outputs, which warms the kernels up (compare's model runs);
    else the first output alone, on one thread (a fuzz case; ``index`` and ``tag`` name it for the test
    hook: tag 'case' for a campaign run, 'triage' for reruns). ``limit``: most bytes of outputs sent back."""

    model: bytes
    feed: dict[str, Any]
    whole: bool = False
    repeats: int = 0
    limit: int = CASE_OUTPUT_LIMIT
    index: int = -1
    tag: str = "triage"
    providers: list[str] | None = None
    """The built-in side's execution providers (None: CPU); other sides ignore it."""
    optimization: str = "all"
    """ONNX Runtime's graph optimization level (:data:`OPTIMIZATION_LEVELS`) of the built-in and custom
    sides' sessions; onnx.reference has none."""
    profile: bool = False
    """Profile the run even with no ``repeats``, for the execution provider of each node (its times then
    include the first run's warm-up: not kernel times)."""


@dataclass
class Reply:
    """A side's answer. ``status``: 'ok', 'error' (the side refused the model or failed running it),
    'crash' (the process died) or 'hang' (no answer in time; the last two are made by the parent).
    ``value``: the first output (a case) or the outputs by name (whole). ``error``: ``stage: Class:
    message`` (stage load, rewrite or run); ``message``: the message alone (customops.eval.running.messages);
    for a crash or hang, ``message`` is the reason and ``tail`` the child's last lines."""

    status: str
    value: Any = None
    error: str = ""
    message: str = ""
    seconds: float = 0.0
    times: dict[str, float] = field(default_factory=dict)
    tail: str = ""
    placement: dict[str, str] = field(default_factory=dict)
    """The execution provider that ran each node (profiled runs), by node name."""
    timed_runs: int = 0
    """The runs ``times`` come from: the profiled runs after the first, untimed one."""


class Failed(Exception):
    """A side's error at one stage: load, rewrite or run."""

    def __init__(self, stage: str, exc: BaseException) -> None:
        super().__init__(f"{stage}: {described(exc)}")
        self.text = message(exc)


def staged(stage: str, call: Any, *args: Any) -> Any:
    """``call(*args)``, any exception raised as :class:`Failed` at ``stage``."""
    try:
        return call(*args)
    except Exception as exc:
        raise Failed(stage, exc) from None


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV) == "1"


def ort_log_level() -> int:
    """ONNX Runtime's severity: warnings (2) with :data:`VERBOSE_ENV`, else errors only (3)."""
    return 2 if verbose() else 3


class Runner:
    """Runs requests for one side (imports happen once, in the child)."""

    def __init__(self, side: str) -> None:
        import warnings

        import numpy as np

        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        self.side = side
        self.ort: Any = None
        if side == "reference":
            # imported before the child's memory is bound (customops.eval.running.worker docs)
            import onnx.reference  # noqa: F401

            return
        import onnxruntime as ort

        ort.set_default_logger_severity(ort_log_level())
        self.ort = ort
        if side == "custom":  # what its first request needs (onnx, the kernels), imported while the
            import customops.bridge.session  # noqa: F401 - parent prepares the model, not then

    def options(self, request: Request, profile_dir: str | None) -> Any:
        opts = self.ort.SessionOptions()
        opts.log_severity_level = ort_log_level() if request.whole else 4
        opts.graph_optimization_level = optimization_level(self.ort, request.optimization)
        if not request.whole:
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
        if profile_dir is not None:
            opts.enable_profiling = True
            opts.profile_file_prefix = os.path.join(profile_dir, self.side)
        return opts

    def session(self, request: Request, profile_dir: str | None) -> Any:
        """A session (or onnx.reference's evaluator) of the request's model on this side. The built-in
        side never imports onnx (ORT reads the model's bytes itself): onnx's import takes longer than
        ORT's."""
        if self.side == "reference":
            import onnx
            from onnx.reference import ReferenceEvaluator

            return staged(
                "load", ReferenceEvaluator, reference_model(onnx.ModelProto.FromString(request.model))
            )
        opts = self.options(request, profile_dir)
        if self.side == "builtin":
            providers = request.providers or ["CPUExecutionProvider"]
            return staged("load", self.ort.InferenceSession, request.model, opts, providers)
        import onnx

        from customops.bridge.session import InferenceSession

        model = request.model
        if not request.whole:  # a case holds the standard node: rewrite it here
            import customops

            result = customops.rewrite_model(onnx.ModelProto.FromString(model))
            if result.skipped or not result.swapped:
                reason = result.skipped[0].reason if result.skipped else "no node to swap"
                raise Failed("rewrite", RuntimeError(f"not swapped: {reason}"))
            model = result.model
        return staged("load", InferenceSession, model, opts)

    def run(self, request: Request) -> Reply:
        """Run ``request``; :class:`Failed` for an error of the side."""

        profiled = bool(request.repeats or request.profile)
        with tempfile.TemporaryDirectory(prefix="customops-profile-") as tmp:
            sess = self.session(request, tmp if profiled else None)
            values = staged("run", sess.run, None, request.feed)
            names = output_names(sess)[: None if request.whole else 1]
            values = staged("run", tensors, names, values)
            if not request.whole:
                return Reply("ok", values[0])
            for _ in range(request.repeats):  # the first run above warmed the kernels up: untimed
                staged("run", sess.run, None, request.feed)
            reply = Reply("ok", dict(zip(names, values, strict=True)))
            if profiled:
                reply.times, reply.placement, reply.timed_runs = kernel_times(sess)
        return reply


def reference_model(model: ModelProto) -> ModelProto:
    """``model`` as onnx.reference can run it: onnx.reference (1.23) knows only GridSample-20's mode
    names, so in a model of default-domain opset 16 to 19 (GridSample-16) a GridSample node's mode
    ``bilinear`` / ``bicubic`` becomes ``linear`` / ``cubic`` (customops.registry's
    GRID_SAMPLE_16_MODES: the same math); at opset 20 and later those names are invalid and stay, so
    the reference rejects them as ORT does."""
    from customops.registry import GRID_SAMPLE_16_MODES

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if not 16 <= opset < 20:
        return model
    for node in model.graph.node:
        if node.op_type != "GridSample" or node.domain not in ("", "ai.onnx"):
            continue
        for a in node.attribute:
            if a.name == "mode" and a.s.decode(errors="replace") in GRID_SAMPLE_16_MODES:
                a.s = GRID_SAMPLE_16_MODES[a.s.decode()].encode()
    return model


def optimization_level(ort: Any, name: str) -> Any:
    """ORT's ``GraphOptimizationLevel`` for one of :data:`OPTIMIZATION_LEVELS`."""
    levels = ort.GraphOptimizationLevel
    return {
        "disable": levels.ORT_DISABLE_ALL,
        "basic": levels.ORT_ENABLE_BASIC,
        "extended": levels.ORT_ENABLE_EXTENDED,
        "all": levels.ORT_ENABLE_ALL,
    }[name]


NOT_TENSORS = {list: "a sequence", tuple: "a sequence", dict: "a map", type(None): "an absent optional value"}


def output_names(sess: Any) -> list[str]:
    """The output names of an ORT session or of onnx.reference's evaluator."""
    if hasattr(sess, "get_outputs"):
        return [o.name for o in sess.get_outputs()]
    return list(sess.output_names)


def tensors(names: list[str], values: list[Any]) -> list[Any]:
    """``values`` (one per name), each a numpy array: a sequence, a map or an absent optional value is
    refused (TypeError), as compare and the fuzzer compare tensors element by element (docs/compare.md)."""
    import numpy as np

    for name, value in zip(names, values, strict=False):
        if not isinstance(value, np.ndarray) and not np.isscalar(value):
            kind = NOT_TENSORS.get(type(value), f"a {type(value).__name__}")
            raise TypeError(f"output {name!r} is {kind}, not a tensor: only tensors are compared")
    return [np.asarray(v) for v in values[: len(names)]]


def kernel_times(sess: Any) -> tuple[dict[str, float], dict[str, str], int]:
    """Median steady-state kernel time (µs) and the execution provider per node name, from the session's
    profile, and the number of runs timed: every run but the first, whose calls compile and build plans
    (informative only: empty when the profile cannot be read)."""
    import numpy as np

    try:
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    except Exception:
        return {}, {}, 0
    ends = sorted(_end(e) for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    warm_up = ends[0] if len(ends) > 1 else -math.inf
    samples: dict[str, list[float]] = {}
    placement: dict[str, str] = {}
    for e in events:
        if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time") and _end(e) > warm_up:
            name = e["name"][: -len("_kernel_time")]
            samples.setdefault(name, []).append(float(e.get("dur", 0)))
            provider = (e.get("args") or {}).get("provider")
            if isinstance(provider, str):
                placement[name] = provider
    timed = len(ends) - 1 if len(ends) > 1 else len(ends)  # a single run is timed as it is
    return {k: float(np.median(v)) for k, v in samples.items()}, placement, timed


def _end(event: dict[str, Any]) -> float:
    """When a profile event ended (µs since the session started)."""
    try:
        return float(event.get("ts", 0)) + float(event.get("dur", 0))
    except (TypeError, ValueError):
        return 0.0


def bounded(reply: Reply, limit: int) -> Reply:
    """``reply``, or an error in its place when its outputs hold more than ``limit`` bytes (strings counted
    by their encoded bytes: customops.dtypes.real_nbytes)."""
    import numpy as np

    from customops.dtypes import real_nbytes

    values = reply.value.values() if isinstance(reply.value, dict) else [reply.value]
    size = sum(real_nbytes(np.asarray(v)) for v in values)
    if size <= limit:
        return reply
    text = f"the outputs of this run hold {size} bytes, over the {limit} bytes sent back"
    return Reply("error", error=f"run: MemoryError: {text}", message=text, seconds=reply.seconds)


def answer(runner: Runner, request: Request) -> Reply:
    """The reply to ``request``, errors of the side included."""
    started = time.perf_counter()
    try:
        reply = runner.run(request)
    except Failed as exc:
        return Reply("error", error=str(exc), message=exc.text, seconds=time.perf_counter() - started)
    except BaseException as exc:  # the side failed in a way that is not ORT's nor the kernel's
        text = f"run: {described(exc)}"
        return Reply("error", error=text, message=message(exc), seconds=time.perf_counter() - started)
    reply.seconds = time.perf_counter() - started
    return bounded(reply, request.limit)


def injections(side: str) -> tuple[str | None, dict[int, str]]:
    """The test hooks for ``side``: the action on every request (or None); actions by campaign case index."""
    action, _, which = os.environ.get(SIDE_INJECT_ENV, "").partition(":")
    always = action if which == side and action in ("abort", "hang") else None
    by_case: dict[int, str] = {}
    for item in os.environ.get(FUZZ_INJECT_ENV, "").split(","):
        parts = [p.strip() for p in item.split(":")]
        if len(parts) == 3 and parts[1] == side and parts[2].lstrip("-").isdigit():
            by_case[int(parts[2])] = parts[0]
    return always, by_case


def inject(action: str) -> None:
    if action == "abort":
        os.abort()
    if action == "exit":
        os._exit(3)
    if action == "hang":
        time.sleep(3600)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no such sysconf (macOS has no SC_PHYS_PAGES)
        return 16 << 30


REFERENCE_MEMORY = _physical_memory() // 2
"""Bytes of address space the reference side's child may add to what it maps once started: half of the
machine's memory."""


def limit_memory(extra: int) -> None:
    """Bound this process's address space (``RLIMIT_AS``) to what it maps now plus ``extra`` bytes, never
    above a limit already set; past it an allocation fails with MemoryError. Nothing where the process's
    size cannot be read (no /proc)."""
    import resource

    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = size + extra
    for given in (soft, hard):
        if given != resource.RLIM_INFINITY:
            want = min(want, given)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def empty_log() -> None:
    """Empty this child's log before a request, so that a crash leaves only its own last words. The log
    is its stdout, always the parent's temporary capture file; its stderr too unless ``-v`` gave it the
    user's stderr (a terminal, or a file the user appends to: never truncated nor moved)."""
    try:
        log = os.fstat(1)
    except OSError:
        return
    for fd in (1, 2):
        try:
            same = os.path.samestat(os.fstat(fd), log)
        except OSError:
            continue
        if same:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)


def serve(conn: Any, side: str, note_fd: int | None) -> None:
    """Answer ``(job, request)`` messages on ``conn`` with ``(job, reply)`` until it closes."""
    if note_fd is not None:  # the command's own stderr, for the note of a first compilation
        from customops.accel import jit

        jit.announce_compilation(os.fdopen(note_fd, "w"))
    runner = Runner(side)
    if side == "reference":
        limit_memory(REFERENCE_MEMORY)
    always, by_case = injections(side)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            received = conn.recv()
        except (EOFError, OSError):
            return
        if received is None:
            return
        job, request = received
        empty_log()
        action = always or (by_case.get(request.index) if request.tag == "case" else None)
        if action:
            inject(action)
        reply = answer(runner, request)
        try:
            conn.send((job, reply))
        except Exception as exc:  # an output pickle cannot carry
            text = f"output not transferable: {described(exc)}"
            conn.send((job, Reply("error", error=f"run: {text}", message=text)))
