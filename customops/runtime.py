"""The onnxruntime-extensions layer: one registration per (custom op, element type), the invocation hook,
attribute decoding, and sessions whose ``run`` raises a failing kernel's own message.

Why a hook: the stock invocation path of onnxruntime-extensions returns outputs through ``tolist()``
(hundreds of times slower than handing back the array) and lets any Python exception abort the process.
Our hook returns C-contiguous arrays of the declared dtype, never lets an exception escape, and hands
calls for ops we did not register back to the stock handler.

What happens when one of our kernels fails:

* in :class:`InferenceSession` ``run``: the hook records the error and sets ``terminate`` on that run's
  ``RunOptions``; ONNX Runtime stops after the node and ``run`` raises :class:`~customops.KernelError`
  with the kernel's message.
* in a plain ``onnxruntime.InferenceSession`` (no handle on the run): the hook cannot stop the run, so it
  returns *empty* outputs (shape ``(0,)``) for the failing node, never plausible numbers, prints the error
  on stderr and records it (see :func:`pop_errors`).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime_extensions import PyCustomOpDef, _ocos, get_library_path, onnx_op

from customops import allocator
from customops import attrs as attr_codec
from customops.errors import CustomOpsError, KernelError
from customops.kernels import _alloc
from customops.registry import CUSTOM_OPS, DOMAIN, MARKER_ATTRS, NATIVE_TYPES, CustomOp

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

NUMPY_TYPES: dict[str, np.dtype] = {
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
    "string": np.dtype(object),
}


@dataclass
class _Binding:
    """What the hook needs to serve one registration."""

    op: CustomOp
    elem_type: str
    out_dtype: np.dtype
    kernel: Callable[..., Any]
    attr_cache: dict[tuple[str, ...], tuple[dict[str, Any], str, Callable[..., Any]]] = field(
        default_factory=dict
    )
    """Raw attribute values (in the order onnxruntime-extensions passes them) -> (kwargs, label, the kernel
    with those attributes bound: ``kernel.bind(**kwargs)`` where the kernel offers one, which keeps its
    tables per input shape, else a partial)."""


_BINDINGS: dict[int, _Binding] = {}
_STOCK_HOOK = _ocos._on_pyop_invocation
_lock = threading.Lock()
_declared = False

allocator.apply_from_environment()  # CUSTOMOPS_MALLOC: see customops.allocator


class _RunContext:
    """The run in progress on one thread: its RunOptions, the kernel errors it met, and whether one of
    our nodes met a large tensor (an input or output of kernels._alloc.LARGE bytes or more)."""

    __slots__ = ("errors", "large", "run_options")

    def __init__(self, run_options: ort.RunOptions) -> None:
        self.run_options = run_options
        self.errors: list[str] = []
        self.large = False


_ACTIVE: dict[int, _RunContext] = {}
_LARGE = _alloc.LARGE
_get_ident = threading.get_ident
_THREAD = threading.local()
_UNCLAIMED: list[str] = []


def _load_kernel(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _declare() -> None:
    """Declare every (custom op, element type) with onnxruntime-extensions and install the hook, once."""
    global _declared
    with _lock:
        if _declared:
            return
        for op in CUSTOM_OPS.values():
            kernel = _load_kernel(op.kernel)
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
                _BINDINGS[opdef._id] = _Binding(op, t, NUMPY_TYPES[t], kernel)
        PyCustomOpDef.install_hooker(_invoke)
        _declared = True


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
    bind = getattr(binding.kernel, "bind", None)
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
        return arr.shape, [str(s) for s in arr.ravel().tolist()]
    if arr.dtype != binding.out_dtype:
        raise KernelError(f"kernel returned dtype {arr.dtype}, expected {binding.out_dtype}")
    return arr.shape, np.ascontiguousarray(arr)


def _current_context() -> _RunContext | None:
    ctx = _ACTIVE.get(threading.get_ident())
    if ctx is None and len(_ACTIVE) == 1:
        ctx = next(iter(_ACTIVE.values()))
    return ctx


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
        if (
            type(result) is np.ndarray
            and result.dtype is binding.out_dtype
            and result.flags.c_contiguous
            and binding.elem_type != "string"
        ):
            if result.nbytes >= _LARGE or feed[0].nbytes >= _LARGE:
                _met_large()
            return (k_id, result.shape, result)  # the common case; _as_output has the general rules
        shape, data = _as_output(binding, result)
        return (k_id, shape, data)
    except BaseException as exc:
        message = (
            f"{label}: {exc}" if isinstance(exc, CustomOpsError) else f"{label}: {type(exc).__name__}: {exc}"
        )
        _report(message)
        empty: Any = [] if binding.elem_type == "string" else np.zeros(0, binding.out_dtype)
        return (k_id, (0,), empty)


def _met_large() -> None:
    """Record that the current run of ours met a large tensor: the session recycles from its next run
    on (InferenceSession.run), and the kernels' own recycling of this thread steps aside for good."""
    ctx = _current_context()
    if ctx is not None and not ctx.large:
        ctx.large = True
        _alloc.release()


def _report(message: str) -> None:
    ctx = _current_context()
    if ctx is not None:
        ctx.errors.append(message)
        ctx.run_options.terminate = True
        return
    _UNCLAIMED.append(message)
    print(f"customops: kernel failed, its output is empty: {message}", file=sys.stderr, flush=True)


def pop_errors() -> list[str]:
    """Return and forget the kernel errors raised in runs of plain ``onnxruntime`` sessions."""
    errors = list(_UNCLAIMED)
    _UNCLAIMED.clear()
    return errors


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

    ``model`` is a path, serialized bytes or an ``onnx.ModelProto``. ``providers`` defaults to the CPU.
    ``run`` raises :class:`~customops.KernelError` with the kernel's own message when one of our kernels
    fails, and the process lives on.
    """

    def __init__(
        self,
        model: Any,
        sess_options: ort.SessionOptions | None = None,
        providers: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if hasattr(model, "SerializeToString"):
            model = model.SerializeToString()
        elif isinstance(model, os.PathLike):
            model = os.fspath(model)
        super().__init__(
            model,
            sess_options=session_options(sess_options),
            providers=list(providers) if providers is not None else ["CPUExecutionProvider"],
            **kwargs,
        )
        # numpy's memory handler for our runs: large blocks recycled (customops.allocator), in runs
        # whose inputs hold a large array and in every run after one in which one of our nodes met a
        # large tensor (setting and resetting numpy's variable costs 1-2 us a run, more than a tiny
        # node's kernel saves from it)
        self._recycler = allocator.recycler()
        self._recycling = False

    def run(self, output_names, input_feed, run_options=None):  # type: ignore[override]
        """Run like ``onnxruntime.InferenceSession.run``; a failing custom kernel raises its message."""
        tid = _get_ident()
        outer = _ACTIVE.get(tid)  # a run nested in another on the same thread (a kernel running a model)
        if run_options is None:
            # one RunOptions per thread, reused (creating one costs about as much as our whole hook on a
            # tiny tensor); a nested run gets its own
            run_options = _THREAD.__dict__.get("run_options") if outer is None else None
            if run_options is None:
                run_options = ort.RunOptions()
                if outer is None:
                    _THREAD.run_options = run_options
        ctx = _RunContext(run_options)
        _ACTIVE[tid] = ctx
        recycler = self._recycler
        token = None
        if (
            recycler is not None
            and (self._recycling or _large_feed(input_feed))
            and recycler.var.get() is recycler.delegate
        ):
            token = recycler.var.set(recycler.handler)
        try:
            outputs = super().run(output_names, input_feed, run_options)
        except Exception:
            if ctx.errors:
                raise KernelError(ctx.errors[0]) from None
            raise
        finally:
            if token is not None:
                recycler.var.reset(token)  # type: ignore[union-attr]
            if outer is None:
                del _ACTIVE[tid]
            else:
                _ACTIVE[tid] = outer
            if ctx.large:
                self._recycling = True
            if ctx.errors:
                run_options.terminate = False  # set by _report to stop the run
        if ctx.errors:
            raise KernelError(ctx.errors[0])
        return outputs


def _large_feed(feed: Any) -> bool:
    """Whether a run's inputs hold an array of kernels._alloc.LARGE bytes or more (a run that recycles from
    its start, so that its nodes reuse the blocks its earlier nodes freed)."""
    try:
        values = feed.values()
    except AttributeError:  # not a dict: onnxruntime's own run says what is wrong with it
        return False
    for value in values:  # noqa: SIM110 - a loop, not any(): this runs on every run, tiny ones included
        if getattr(value, "nbytes", 0) >= _LARGE:
            return True
    return False


def registered_types() -> dict[str, tuple[str, ...]]:
    """Element types registered for each custom op."""
    return {name: tuple(t for t in op.types if t in NATIVE_TYPES) for name, op in CUSTOM_OPS.items()}
