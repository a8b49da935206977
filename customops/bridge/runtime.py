"""The onnxruntime-extensions layer: one registration per (custom op, element type), the invocation hook,
attribute decoding, and sessions whose ``run`` raises a failing kernel's own message.

Why a hook: the stock invocation path of onnxruntime-extensions returns outputs through ``tolist()``
(hundreds of times slower than handing back the array) and lets any Python exception abort the process.
Our hook returns C-contiguous arrays of the declared dtype, never lets an exception escape, and hands
calls for ops we did not register back to the stock handler.

What happens when one of our kernels fails:

* in a run of :class:`InferenceSession` (``run``, ``run_with_ort_values``, ``run_with_iobinding``,
  ``run_with_ortvaluevector``): the hook records the error in the context of the run in progress on the
  calling thread and sets ``terminate`` on that run's ``RunOptions``, which are always ours (a copy of the
  caller's settings when the caller gives some: threads may share one, and only the failing run must
  stop); ONNX Runtime stops after the node and the run raises :class:`~customops.KernelError` with the
  kernel's message. Errors are routed by
  thread identity alone: with sequential execution ONNX Runtime calls our kernels on the thread that
  called run, and :class:`InferenceSession` always executes sequentially, so an error reaches exactly
  the run that caused it and never another one.
* in a plain ``onnxruntime.InferenceSession`` (no handle on the run), or on a thread that runs no session
  of ours: the hook cannot stop the run, so it returns an *empty* output (shape ``(0,)``) for the failing
  node, prints the error on stderr and records it (see :func:`pop_errors`). Nodes downstream may still
  turn that empty tensor into plausible values (a ReduceMean of it is 0): a plain session's results mean
  nothing unless :func:`pop_errors` comes back empty.

KeyboardInterrupt and SystemExit are never taken for kernel failures and never let into the layer
(anything escaping the hook aborts the process): the run in progress stops after the node and raises
the same exception once ONNX Runtime has returned. Ctrl-C goes through :func:`_on_sigint` (installed in
place of Python's default handler), which raises KeyboardInterrupt only where the hook catches it.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import importlib
import math
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from customops import safeio
from customops.bridge import attrs as attr_codec
from customops.bridge import domain
from customops.dtypes import numpy_dtype
from customops.errors import CustomOpsError, KernelError, brief
from customops.extensions import PyCustomOpDef, get_library_path, ocos, onnx_op
from customops.graphs import model_tensors, refuse_external
from customops.kernels import limits
from customops.registry import (
    CUSTOM_OPS,
    DOMAIN,
    MARKER_ATTRS,
    NATIVE_TYPES,
    CustomOp,
    layer_string_refusal,
)

_PYOP_TYPES: dict[str, int] = {
    "float": PyCustomOpDef.dt_float,
    "double": PyCustomOpDef.dt_double,
    "int8": PyCustomOpDef.dt_int8,
    "int16": PyCustomOpDef.dt_int16,
    "int32": PyCustomOpDef.dt_int32,
    "int64": PyCustomOpDef.dt_int64,
    "uint8": PyCustomOpDef.dt_uint8,
    "uint16": PyCustomOpDef.dt_uint16,
    "uint32": PyCustomOpDef.dt_uint32,
    "uint64": PyCustomOpDef.dt_uint64,
    "bool": PyCustomOpDef.dt_bool,
    "string": PyCustomOpDef.dt_string,
}

NUMPY_TYPES: dict[str, np.dtype] = {t: numpy_dtype(t) for t in NATIVE_TYPES}
"""The numpy dtype of each element type the layer carries."""


@dataclass
class _Binding:
    """What the hook needs to serve one registration."""

    op: CustomOp
    elem_type: str
    out_dtype: np.dtype
    kernel: Callable[..., Any]
    bind: Callable[..., Callable[..., Any]] | None
    """The kernel module's ``bind``: ``bind(**kwargs)`` is the kernel with those attributes fixed, which
    keeps its tables per input shape; None for a kernel put in its place (called through a partial)."""
    attr_cache: dict[tuple[str, ...], tuple[dict[str, Any], str, Callable[..., Any]]] = field(
        default_factory=dict
    )
    """Raw attribute values (in the order onnxruntime-extensions passes them) -> (kwargs, label, the kernel
    with those attributes bound: ``bind(**kwargs)``, or a partial of ``kernel`` without ``bind``)."""


_BINDINGS: dict[int, _Binding] = {}
_STOCK_HOOK = ocos._on_pyop_invocation
_lock = threading.Lock()
_declared = False


class _RunContext:
    """The run in progress on one thread: its RunOptions (always ours, never the caller's: the hook sets
    ``terminate`` on them), the caller's RunOptions if any (``caller``), the kernel errors it met, and a
    KeyboardInterrupt or SystemExit met in it (``stop``)."""

    __slots__ = ("caller", "errors", "run_options", "stop")

    def __init__(self, run_options: ort.RunOptions, caller: ort.RunOptions | None = None) -> None:
        self.run_options = run_options
        self.caller = caller
        self.errors: list[str] = []
        self.stop: BaseException | None = None


_ACTIVE: dict[int, _RunContext] = {}
_WATCHED: set[int] = set()
"""Threads whose run of ours was given RunOptions by its caller: our kernels pass a ``terminate`` the
caller sets on them on to the run's own options (:func:`_forward_terminate`)."""
_CHECKED = limits.CHECKED
_get_ident = threading.get_ident
_THREAD = threading.local()
_UNCLAIMED: list[str] = []


def _load_kernel(path: str) -> tuple[Callable[..., Any], Callable[..., Callable[..., Any]]]:
    """The kernel the registry names ``module:function``, and its module's ``bind``."""
    name, _, function = path.partition(":")
    module = importlib.import_module(name)
    return getattr(module, function), module.bind


def _declare() -> None:
    """Declare every (custom op, element type) with onnxruntime-extensions and install the hook, once."""
    global _declared
    with _lock:
        if _declared:
            return
        for op in CUSTOM_OPS.values():
            kernel, bind = _load_kernel(op.kernel)
            attr_types = {name: PyCustomOpDef.dt_string for name, _ in op.attributes}
            attr_types.update({name: PyCustomOpDef.dt_string for name in MARKER_ATTRS})
            for t in op.types:
                inputs = [_PYOP_TYPES[t if ty == "T" else ty] for _, ty in op.inputs]
                opdef = onnx_op(
                    op_type=f"{DOMAIN}::{op.name}",
                    inputs=inputs,
                    outputs=[_PYOP_TYPES[t]],
                    attrs=attr_types,
                )(kernel)
                _BINDINGS[opdef._id] = _Binding(op, t, NUMPY_TYPES[t], kernel, bind)
        PyCustomOpDef.install_hooker(_invoke)
        _declared = True
    _install_sigint()


def _decode_attributes(
    binding: _Binding, raw: dict[str, str]
) -> tuple[dict[str, Any], str, Callable[..., Any]]:
    # onnxruntime-extensions passes every declared attribute of the registration, from a sorted map: the
    # names and their order are the same on every call, so the values alone are the key
    key = tuple(raw.values())
    hit = binding.attr_cache.get(key)
    if hit is not None:
        return hit
    kwargs = {name: attr_codec.decode(kind, raw[name]) for name, kind in binding.op.attributes}
    label = f"{raw.get('customops_origin') or binding.op.name} node {raw.get('customops_node', '')!r}"
    bind = binding.bind
    call = bind(**kwargs) if bind is not None else functools.partial(binding.kernel, **kwargs)
    binding.attr_cache[key] = (kwargs, label, call)
    return kwargs, label, call


def _as_output(binding: _Binding, value: Any) -> tuple[tuple[int, ...], Any]:
    """(shape, data) to hand back for a kernel's result: strings as a list, arrays C-contiguous of the
    declared dtype (the hook hands such an array back itself, without calling this)."""
    arr = np.asarray(value)
    if binding.elem_type == "string":
        if arr.dtype != object and arr.dtype.kind not in "US":
            raise KernelError(f"kernel returned dtype {arr.dtype} for a string output")
        limits.check_output(arr.shape, arr.dtype, allocated=True)
        return arr.shape, [_layer_text(s) for s in arr.ravel().tolist()]
    if arr.dtype != binding.out_dtype:
        raise KernelError(f"kernel returned dtype {arr.dtype}, expected {binding.out_dtype}")
    if arr.nbytes >= _CHECKED:
        limits.check_output(arr.shape, arr.dtype, allocated=True)
    return arr.shape, np.ascontiguousarray(arr)


def _layer_text(value: Any) -> str:
    """``value`` as the layer carries a string exactly (bytes as their UTF-8 text, anything else as its
    ``str``); raises KernelError for what it cannot carry (:func:`registry.layer_string_refusal`)."""
    text = value if isinstance(value, str | bytes) else str(value)
    reason = layer_string_refusal(text)
    if reason:
        raise KernelError(f"string output {text[:40]!r} {reason}")
    return text.decode("utf-8") if isinstance(text, bytes) else text


def _current_context() -> _RunContext | None:
    """The run of ours in progress on this thread (its kernels run here: runs are sequential), if any."""
    return _ACTIVE.get(_get_ident())


def _invoke(k_id: int, feed: Sequence[Any], raw_attrs: dict[str, str]) -> tuple[Any, ...]:
    binding = _BINDINGS.get(k_id)
    if binding is None:
        return _STOCK_HOOK(k_id, feed, raw_attrs)
    label = binding.op.name
    try:
        # the hit path of _decode_attributes, written out: this runs once per node per run
        hit = binding.attr_cache.get(tuple(raw_attrs.values()))
        if hit is None:
            hit = _decode_attributes(binding, raw_attrs)
        label = hit[1]
        result = hit[2](*feed)
        if _WATCHED:
            _forward_terminate()
        if (
            type(result) is np.ndarray
            and result.dtype is binding.out_dtype
            and result.flags.c_contiguous
            and binding.elem_type != "string"
        ):
            if result.nbytes >= _CHECKED:
                # again now, whatever the kernel checked: its plan may be older than the memory left
                limits.check_output(result.shape, result.dtype, allocated=True)
            return (k_id, result.shape, result)  # the common case; _as_output has the general rules
        shape, data = _as_output(binding, result)
        return (k_id, shape, data)
    except BaseException as exc:
        return _failed(binding, k_id, label, exc)


def _forward_terminate() -> None:
    """A ``terminate`` the caller set on the RunOptions of the run of ours in progress on this thread (to
    cancel it from another thread), put on the options the run actually uses (ours), after each of our
    kernels: the run stops after the node. Costs one test of :data:`_WATCHED` on runs without options."""
    ctx = _current_context()
    if ctx is not None and ctx.caller is not None and ctx.caller.terminate:
        ctx.run_options.terminate = True


def _failed(binding: _Binding, k_id: int, label: str, exc: BaseException) -> tuple[Any, ...]:
    """Record ``exc`` for the run in progress and return the node's empty output. Everything the hook
    does after its kernel failed happens in here (see :func:`_on_sigint`)."""
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        _stop(exc)
    elif isinstance(exc, CustomOpsError):
        _report(brief(f"{label}: {exc}"))
    else:
        _report(brief(f"{label}: {type(exc).__name__}: {exc}"))
    empty: Any = [] if binding.elem_type == "string" else np.zeros(0, binding.out_dtype)
    return (k_id, (0,), empty)


def _report(message: str) -> None:
    ctx = _current_context()
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


def pop_errors() -> list[str]:
    """Return and forget the kernel errors raised in runs of plain ``onnxruntime`` sessions."""
    errors = list(_UNCLAIMED)
    _UNCLAIMED.clear()
    return errors


def _stop(exc: BaseException) -> None:
    """A KeyboardInterrupt or SystemExit met in the hook: the run of ours in progress on this thread stops
    after the node and raises it once ONNX Runtime returns. A run we have no handle on goes on; a
    KeyboardInterrupt is raised in the main thread again once it has left the hook (:func:`_redeliver`),
    a SystemExit is reported as the node's failure."""
    ctx = _current_context()
    if ctx is not None:
        if ctx.stop is None:
            ctx.stop = exc
        ctx.run_options.terminate = True
    elif isinstance(exc, KeyboardInterrupt) and signal.getsignal(signal.SIGINT) is _on_sigint:
        _redeliver()
    else:
        _report(f"{type(exc).__name__} raised in a kernel: {exc}")


def _call_guarded(hook: Hook, k_id: int, feed: Sequence[Any], raw_attrs: dict[str, str]) -> tuple[Any, ...]:
    """The body of :func:`guarded`: ``hook`` for our registrations, its exceptions handled as
    :func:`_invoke` handles a kernel's."""
    binding = _BINDINGS.get(k_id)
    if binding is None:
        return _STOCK_HOOK(k_id, feed, raw_attrs)
    try:
        answer = hook(k_id, feed, raw_attrs)
        if _WATCHED:
            _forward_terminate()
        return _fit_answer(binding, k_id, answer)
    except BaseException as exc:
        return _failed(binding, k_id, binding.op.name, exc)


def _fit_answer(binding: _Binding, k_id: int, answer: Any) -> tuple[Any, ...]:
    """``answer``, if the layer can take it: (``k_id``, shape, data), the data a C-contiguous array of the
    output's dtype or a list, with as many elements as the shape says; raises KernelError otherwise (the
    layer aborts on anything else, or reads past short data)."""
    if not (isinstance(answer, tuple) and len(answer) == 3 and answer[0] == k_id):
        raise KernelError(f"the hook answered {type(answer).__name__}, not ({k_id}, shape, data)")
    _, shape, data = answer
    usual = type(data) is np.ndarray and data.shape == shape and data.dtype == binding.out_dtype
    if usual and data.flags.c_contiguous:  # checked without walking the shape
        return answer
    if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
        raise KernelError(f"the hook answered the shape {shape!r}, not a tuple of sizes")
    count = math.prod(shape)
    if isinstance(data, np.ndarray):
        fits = data.dtype == binding.out_dtype and data.flags.c_contiguous and data.size == count
    else:
        fits = isinstance(data, list) and len(data) == count
    if not fits:
        raise KernelError(f"the hook's data does not fit shape {shape} of {binding.out_dtype}")
    return answer


_HOOK_CODES = frozenset({_invoke.__code__, _call_guarded.__code__})
"""The code of the hooks the layer calls (ours, and others through :func:`guarded`)."""
_UNGUARDED = frozenset({_failed.__code__, getattr(_STOCK_HOOK, "__code__", None)})
"""Code run by the hook outside its ``try``: an exception raised in it would reach the layer."""


def _unguarded(frame: Any) -> bool:
    """Whether an exception raised in ``frame`` could escape our hook into the layer: ``frame`` is the
    innermost hook itself, or runs under it outside its ``try``."""
    child = None
    while frame is not None:
        if frame.f_code in _HOOK_CODES:
            return child is None or child.f_code in _UNGUARDED
        child, frame = frame, frame.f_back
    return False


def _in_hook(frame: Any) -> bool:
    """Whether ``frame`` runs under our hook."""
    while frame is not None:
        if frame.f_code in _HOOK_CODES:
            return True
        frame = frame.f_back
    return False


def _on_sigint(signum: int, frame: Any) -> None:
    """SIGINT, in place of Python's default handler: KeyboardInterrupt, except where it could escape our
    hook into the layer (which aborts the process); there it stops the run in progress instead
    (:func:`_stop`). Interrupted inside a kernel, the kernel stops at once (the hook catches it)."""
    if _unguarded(frame):
        _stop(KeyboardInterrupt())
        return
    raise KeyboardInterrupt


def _install_sigint() -> None:
    """Put :func:`_on_sigint` in place of Python's default SIGINT handler: from the main thread only,
    and never over a handler someone else installed."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


_delivering = threading.Lock()


def _redeliver() -> None:
    """Raise KeyboardInterrupt in the main thread again once it has left our hook, from a new thread
    (at most one at a time): for runs we have no handle on. :func:`_on_sigint` takes it."""
    if _delivering.acquire(blocking=False):
        threading.Thread(target=_deliver, name="customops-interrupt", daemon=True).start()


def _deliver() -> None:
    try:
        main = threading.main_thread().ident
        while _in_hook(sys._current_frames().get(main)):
            time.sleep(0.001)
        _thread.interrupt_main()
    finally:
        _delivering.release()


_CONFIG_KEY = "customops.registered"


def session_options(options: ort.SessionOptions | None = None) -> ort.SessionOptions:
    """Return ``options`` (a new ``SessionOptions`` by default) with our custom ops registered.

    Safe to call any number of times, on the same options too.
    """
    _declare()
    if options is None:
        options = ort.SessionOptions()
    if _has_entry(options):
        return options
    options.register_custom_ops_library(get_library_path())
    options.add_session_config_entry(_CONFIG_KEY, "1")
    return options


def _has_entry(options: ort.SessionOptions) -> bool:
    try:
        return options.get_session_config_entry(_CONFIG_KEY) == "1"
    except Exception:
        return False


class InferenceSession(ort.InferenceSession):
    """An ``onnxruntime.InferenceSession`` with our custom ops registered.

    ``model`` is a path, serialized bytes or an ``onnx.ModelProto``; its nodes of our domain must pass
    :func:`customops.bridge.domain.check_model` (CustomOpsError otherwise), and ONNX Runtime gets the very
    bytes checked. ``providers`` defaults to the CPU. A ``RunOptions`` given to a run is never written: the
    run uses a copy of its settings (:func:`_run_options_for`).
    ``run`` (and ``run_with_ort_values``, ``run_with_iobinding``, ``run_with_ortvaluevector``) raises
    :class:`~customops.KernelError` with the kernel's own message when one of our kernels fails, and the
    process lives on; a KeyboardInterrupt or SystemExit met in a kernel stops the run after that node
    and is raised from it. String inputs the layer cannot carry exactly raise
    :class:`~customops.CustomOpsError` before the run (:func:`check_layer_strings`).

    The session always executes sequentially: it sets ``execution_mode`` to ``ORT_SEQUENTIAL`` on the
    options it is given (results are identical; ``ORT_PARALLEL`` would run our kernels on ONNX
    Runtime's threads, where an error cannot be told apart from another run's). ``run_async`` is
    refused for the same reason: call ``run`` from a thread of your own.
    """

    def __init__(
        self,
        model: Any,
        sess_options: ort.SessionOptions | None = None,
        providers: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        model = _checked_model(model)
        options = session_options(sess_options)
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        super().__init__(
            model,
            sess_options=options,
            providers=list(providers) if providers is not None else ["CPUExecutionProvider"],
            **kwargs,
        )

    def run(self, output_names, input_feed, run_options=None):  # type: ignore[override]
        """Run like ``onnxruntime.InferenceSession.run``; a failing custom kernel raises its message."""
        _checked_feed(input_feed)
        return self._routed(
            lambda options: ort.InferenceSession.run(self, output_names, input_feed, options),
            run_options,
        )

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):  # type: ignore[override]
        """``onnxruntime.InferenceSession.run_with_ort_values``, with kernel errors raised as by ``run``."""
        for name, value in input_dict_ort_values.items():
            _check_ort_value(name, value)
        return self._routed(
            lambda options: ort.InferenceSession.run_with_ort_values(
                self, output_names, input_dict_ort_values, options
            ),
            run_options,
        )

    def run_with_iobinding(self, iobinding, run_options=None):  # type: ignore[override]
        """``onnxruntime.InferenceSession.run_with_iobinding``, with kernel errors raised as by ``run``.
        String inputs bound to ``iobinding`` are not checked (an IOBinding does not show them)."""
        self._routed(
            lambda options: ort.InferenceSession.run_with_iobinding(self, iobinding, options),
            run_options,
        )

    def run_with_ortvaluevector(self, run_options, feed_names, feeds, fetch_names, fetches, fetch_devices):  # type: ignore[override]
        """``onnxruntime.InferenceSession.run_with_ortvaluevector``, with kernel errors raised as by ``run``."""
        for name, value in zip(feed_names, feeds, strict=False):
            _check_ort_value(name, value)
        self._routed(
            lambda options: ort.InferenceSession.run_with_ortvaluevector(
                self, options, feed_names, feeds, fetch_names, fetches, fetch_devices
            ),
            run_options,
        )

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):  # type: ignore[override]
        """Refused: ONNX Runtime would run our kernels on its own threads, where a kernel error could not
        reach this run. Call ``run`` from a thread of your own instead."""
        raise CustomOpsError(
            "customops.InferenceSession.run_async is not supported: ONNX Runtime would call our kernels on "
            "its own threads, where their errors cannot reach the run; call run from a thread of your own"
        )

    def _routed(self, call: Callable[[ort.RunOptions], Any], run_options: ort.RunOptions | None) -> Any:
        """``call(options)`` as a run of ours on this thread: the hook records the kernel errors and stops
        of the kernels this thread runs meanwhile in its context; raises the first KeyboardInterrupt or
        SystemExit, else the first kernel error, after ONNX Runtime returns. ``options`` are always ours
        (:func:`_run_options_for`): the hook stops a failing run by setting ``terminate`` on them, which
        on the caller's RunOptions would stop every other run using them too."""
        tid = _get_ident()
        outer = _ACTIVE.get(tid)  # a run nested in another on the same thread (a kernel running a model)
        ctx = _RunContext(_run_options_for(run_options, nested=outer is not None), run_options)
        _ACTIVE[tid] = ctx
        watched = run_options is not None and tid not in _WATCHED
        if watched:
            _WATCHED.add(tid)
        try:
            outputs = call(ctx.run_options)
        except Exception:
            if not ctx.errors and ctx.stop is None:
                raise
            outputs = None
        finally:
            if watched:
                _WATCHED.discard(tid)
            if outer is None:
                del _ACTIVE[tid]
            else:
                _ACTIVE[tid] = outer
            if ctx.errors or ctx.stop is not None:
                ctx.run_options.terminate = False  # ours, set by the hook to stop the run
        if ctx.stop is not None:
            raise ctx.stop
        if ctx.errors:
            raise KernelError(ctx.errors[0])
        return outputs


_RUN_PROPERTIES = tuple(name for name, value in vars(ort.RunOptions).items() if isinstance(value, property))
"""Every setting of ONNX Runtime's RunOptions that Python can read and write (log_severity_level,
log_verbosity_level, logid, only_execute_path_to_fetches, terminate, and training_mode in training
builds)."""

RUN_CONFIG_KEYS = (
    "memory.enable_memory_arena_shrinkage",
    "disable_synchronize_execution_providers",
    "gpu_graph_id",
    "external_device_graph_capture",
    "qnn.htp_perf_mode",
    "qnn.htp_perf_mode_post_run",
    "qnn.rpc_control_latency",
    "qnn.lora_config",
)
"""The run config entries ONNX Runtime defines (onnxruntime_run_options_config_keys.h), which a run of
ours carries over from the caller's options: a RunOptions cannot list its entries."""

_CALLER_KEYS: weakref.WeakKeyDictionary[ort.RunOptions, tuple[str, ...]] = weakref.WeakKeyDictionary()
"""Which of :data:`RUN_CONFIG_KEYS` each caller's RunOptions held when a run of ours first met it: asking
a RunOptions for an entry it lacks costs about 0.17 ms (an exception inside ONNX Runtime), too much for
every run; entries present are read again on each run (1 us each)."""


def _run_options_for(caller: ort.RunOptions | None, *, nested: bool) -> ort.RunOptions:
    """The RunOptions a run of ours uses: without options from the caller, one per thread, reused
    (creating one costs about as much as our whole hook on a tiny tensor; a nested run gets its own); with
    them, a new copy of the caller's settings, so that ``terminate`` set by the hook stops this run alone
    and the caller's options are never written."""
    if caller is None:
        ours = None if nested else _THREAD.__dict__.get("run_options")
        if ours is None:
            ours = ort.RunOptions()
            if not nested:
                _THREAD.run_options = ours
        return ours
    if not isinstance(caller, ort.RunOptions):
        return caller  # not options at all: onnxruntime's own run says what is wrong with them
    ours = ort.RunOptions()
    for name in _RUN_PROPERTIES:
        setattr(ours, name, getattr(caller, name))
    keys = _CALLER_KEYS.get(caller)
    if keys is None:
        keys = _CALLER_KEYS[caller] = tuple(
            key for key in RUN_CONFIG_KEYS if _run_entry(caller, key) is not None
        )
    for key in keys:
        ours.add_run_config_entry(key, caller.get_run_config_entry(key))
    return ours


def _run_entry(options: ort.RunOptions, key: str) -> str | None:
    try:
        return options.get_run_config_entry(key)
    except RuntimeError:  # not set
        return None


_MODEL_LIMIT = 2**31 - 1
"""The largest model file read: protobuf's limit, ONNX Runtime's too."""


def _checked_model(model: Any) -> Any:
    """``model`` (a ModelProto, serialized bytes or a path) as handed to ONNX Runtime, once its text and
    its nodes of our domain have passed :func:`customops.bridge.domain.checked_bytes` (CustomOpsError
    otherwise). ONNX Runtime gets the very bytes checked. A model given without a file may not point at
    external data (it has no directory to find it in); a file is read once, except a model with external
    data, whose path ONNX Runtime needs to find that data (it reads the file again). Anything else is
    passed on for ONNX Runtime to refuse."""
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    if isinstance(model, bytes):  # no directory: it may point at no external data
        refuse_external(domain.checked_bytes(model, "the model"), "the model")
        return model
    if not isinstance(model, str | os.PathLike) or not isinstance(path := os.fspath(model), str):
        return model
    data = safeio.read_bounded(path, _MODEL_LIMIT, "model file")
    proto = domain.checked_bytes(data, f"model file {path!r}")
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model_tensors(proto)):
        return path
    return data


def _checked_feed(feed: Any) -> None:
    """Check the string inputs of a run (:func:`check_layer_strings`)."""
    try:
        items = feed.items()
    except AttributeError:  # not a dict: onnxruntime's own run says what is wrong with it
        return
    for name, value in items:
        if type(value) is not np.ndarray or value.dtype.kind in "OSU":
            check_layer_strings(name, value)


def check_layer_strings(name: str, value: Any) -> None:
    """Raise CustomOpsError when ``value``, fed as input ``name``, holds a string that ONNX Runtime's
    Python-op layer cannot carry exactly: it hands strings to our kernels as NUL-terminated UTF-8 (a NUL
    cuts the string there) and decodes them as UTF-8 (invalid bytes abort the process). Values that are
    not strings (numbers, OrtValues of other types) pass."""
    if type(value) is np.ndarray:
        if value.dtype.kind not in "OSU":
            return
    elif isinstance(value, list | tuple):
        value = np.asarray(value, dtype=object)
    else:
        return
    for item in value.ravel().tolist():
        reason = _feed_refuses(item)
        if reason:
            raise CustomOpsError(f"input {name!r}: string {item[:40]!r} {reason}")


def _feed_refuses(item: Any) -> str:
    """Why the layer cannot carry the string ``item`` of a feed exactly ('' when it can, or when ONNX
    Runtime makes something else of it: numbers and other objects become their ``str``). onnxruntime
    passes the bytes of a numpy bytes array as they are (and a bytes object inside an object array as its
    repr, which is text)."""
    return layer_string_refusal(item) if isinstance(item, str | bytes) else ""


def _check_ort_value(name: str, value: Any) -> None:
    """:func:`check_layer_strings` for an OrtValue input (string tensors only)."""
    data_type = getattr(value, "data_type", None)
    if data_type is not None and data_type() == "tensor(string)":
        try:
            check_layer_strings(name, value.numpy())
        except UnicodeDecodeError:
            raise CustomOpsError(f"input {name!r}: a string is not UTF-8") from None


def registered_types() -> dict[str, tuple[str, ...]]:
    """Element types registered for each custom op."""
    return {name: tuple(t for t in op.types if t in NATIVE_TYPES) for name, op in CUSTOM_OPS.items()}


# ---------------------------------------------------------------------------------------------
# The seam of customops.bench.suite, which times our hook against the stock path and against stand-in
# kernels: our hook, others made safe to install, and our kernels swapped for others.

Hook = Callable[[int, Sequence[Any], dict[str, str]], tuple[Any, ...]]
"""An invocation hook of onnxruntime-extensions: (registration id, inputs, raw attribute strings) ->
(registration id, output shape, output data)."""


def our_hook() -> Hook:
    """The invocation hook this module installs (``PyCustomOpDef.install_hooker``) when it declares our
    ops: it serves our registrations and hands every other call to onnxruntime-extensions' own hook."""
    return _invoke


def guarded(hook: Hook) -> Hook:
    """``hook`` made fit to install in place of ours: called for our registrations only (others go to
    onnxruntime-extensions' own hook), and an exception in it, a Ctrl-C included, handled as one in our
    kernels is, never let into the layer (which would abort the process)."""
    return functools.partial(_call_guarded, hook)


def kernel_call(k_id: int, raw_attrs: dict[str, str]) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The kernel of our registration ``k_id`` and the keyword arguments ``raw_attrs`` decode to, as the
    stock path calls it: ``kernel(*inputs, **kwargs)``."""
    binding = _BINDINGS[k_id]
    return binding.kernel, _decode_attributes(binding, raw_attrs)[0]


@contextlib.contextmanager
def kernel_replaced(op: str, kernel: Callable[..., Any]) -> Iterator[None]:
    """Our registrations of custom op ``op`` call ``kernel`` instead of their own kernel inside the block
    (the attribute caches, which hold the kernel bound to its attributes, are emptied on entry and exit)."""
    saved = [
        (binding, binding.kernel, binding.bind) for binding in _BINDINGS.values() if binding.op.name == op
    ]
    for binding, _, _ in saved:
        binding.kernel, binding.bind = kernel, None
        binding.attr_cache.clear()
    try:
        yield
    finally:
        for binding, own, bind in saved:
            binding.kernel, binding.bind = own, bind
            binding.attr_cache.clear()
