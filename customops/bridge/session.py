"""Sessions with our custom ops: :func:`session_options` for any ``onnxruntime.InferenceSession``, and
:class:`InferenceSession`, whose ``run`` raises a failing kernel's own message.

What happens when one of our kernels fails:

* in a run of :class:`InferenceSession` (``run``, ``run_with_ort_values``, ``run_with_iobinding``,
  ``run_with_ortvaluevector``): the hook records the error in the context of the run in progress on the
  calling thread (customops.bridge.routing) and sets ``terminate`` on that run's ``RunOptions``, which
  are always ours (a copy of the caller's settings when the caller gives some: threads may share one,
  and only the failing run must stop); ONNX Runtime stops after the node and the run raises
  :class:`~customops.KernelError` with the kernel's message.
* in a plain ``onnxruntime.InferenceSession`` (no handle on the run), or on a thread that runs no session
  of ours: the hook cannot stop the run, so it returns an *empty* output (shape ``(0,)``) for the failing
  node, prints the error on stderr and records it (see :func:`routing.pop_errors`). Nodes downstream may
  still turn that empty tensor into plausible values (a ReduceMean of it is 0): a plain session's
  results mean nothing unless :func:`routing.pop_errors` comes back empty.

A KeyboardInterrupt or SystemExit met in a kernel stops the run in progress after the node and is raised
once ONNX Runtime has returned (customops.bridge.interrupts). Models and string feeds the layer cannot
take are refused before ONNX Runtime sees them.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from customops import safeio
from customops.bridge import domain, routing
from customops.bridge.registration import declare
from customops.errors import CustomOpsError, KernelError
from customops.extensions import get_library_path
from customops.graphs import model_tensors, refuse_external
from customops.registry import layer_string_refusal

_THREAD = threading.local()

_CONFIG_KEY = "customops.registered"


def session_options(options: ort.SessionOptions | None = None) -> ort.SessionOptions:
    """Return ``options`` (a new ``SessionOptions`` by default) with our custom ops registered.

    Safe to call any number of times, on the same options too.
    """
    declare()
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
        nested = routing.current_context() is not None  # a run in another on this thread (a kernel's)
        ctx = routing.RunContext(_run_options_for(run_options, nested=nested), run_options)
        outer, watched = routing.enter(ctx)
        try:
            outputs = call(ctx.run_options)
        except Exception:
            if not ctx.errors and ctx.stop is None:
                raise
            outputs = None
        finally:
            routing.leave(outer, watched)
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
