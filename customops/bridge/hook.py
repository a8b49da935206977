"""The invocation hook onnxruntime-extensions calls for every Python custom op: it serves our
registrations (:data:`BINDINGS`, filled by customops.bridge.registration) and hands every other call
back to the stock handler.

Why a hook: the stock invocation path of onnxruntime-extensions returns outputs through ``tolist()``
(hundreds of times slower than handing back the array) and lets any Python exception abort the process.
Our hook decodes the node's attributes (cached per registration), calls the kernel, returns a
C-contiguous array of the declared dtype, and never lets an exception escape: a kernel's failure goes
to the run in progress (customops.bridge.routing), a KeyboardInterrupt or SystemExit stops that run
(customops.bridge.interrupts), and the node's output is then empty (shape ``(0,)``).
:func:`call_guarded` gives a hook of someone else's (the bench's) the same protection.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from customops.bridge import attrs as attr_codec
from customops.bridge import interrupts, routing
from customops.errors import CustomOpsError, KernelError, brief
from customops.extensions import ocos
from customops.kernels import limits
from customops.registry import CustomOp, layer_string_refusal

Hook = Callable[[int, Sequence[Any], dict[str, str]], tuple[Any, ...]]
"""An invocation hook of onnxruntime-extensions: (registration id, inputs, raw attribute strings) ->
(registration id, output shape, output data)."""


@dataclass
class Binding:
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
    more: tuple[np.dtype, ...] = ()
    """The dtypes of the outputs after the first, for an op with several (the kernel returns a tuple)."""


BINDINGS: dict[int, Binding] = {}
"""Our registrations by the id onnxruntime-extensions gives them (customops.bridge.registration)."""
STOCK_HOOK: Hook = ocos._on_pyop_invocation
"""onnxruntime-extensions' own hook, which serves every registration that is not ours."""
_CHECKED = limits.CHECKED
_WATCHED = routing.WATCHED


def decode_attributes(
    binding: Binding, raw: dict[str, str]
) -> tuple[dict[str, Any], str, Callable[..., Any]]:
    """(kwargs, label, the kernel bound to them) for the raw attribute strings of a call of ``binding``,
    from its cache after the first call with these values."""
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


def _as_output(binding: Binding, value: Any) -> tuple[tuple[int, ...], Any]:
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


def _several(binding: Binding, result: Any) -> list[Any]:
    """shape, data, shape, data, ... of the outputs of a kernel of several outputs (a tuple of arrays of
    the declared dtypes), as onnxruntime-extensions takes them."""
    dtypes = (binding.out_dtype, *binding.more)
    if not isinstance(result, tuple) or len(result) != len(dtypes):
        raise KernelError(
            f"kernel returned {type(result).__name__}, expected a tuple of {len(dtypes)} arrays"
        )
    answer: list[Any] = []
    for value, dtype in zip(result, dtypes, strict=True):
        arr = np.asarray(value)
        if arr.dtype != dtype:
            raise KernelError(f"kernel returned dtype {arr.dtype}, expected {dtype}")
        limits.check_output(arr.shape, arr.dtype, allocated=True)
        answer += [arr.shape, arr if arr.flags.c_contiguous else arr.copy(order="C")]  # 0-d stays 0-d
    return answer


def _layer_text(value: Any) -> str:
    """``value`` as the layer carries a string exactly (bytes as their UTF-8 text, anything else as its
    ``str``); raises KernelError for what it cannot carry (:func:`registry.layer_string_refusal`)."""
    text = value if isinstance(value, str | bytes) else str(value)
    reason = layer_string_refusal(text)
    if reason:
        raise KernelError(f"string output {text[:40]!r} {reason}")
    return text.decode("utf-8") if isinstance(text, bytes) else text


def invoke(k_id: int, feed: Sequence[Any], raw_attrs: dict[str, str]) -> tuple[Any, ...]:
    """Our hook: the kernel of registration ``k_id`` called on ``feed``, its answer as
    (``k_id``, shape, data); a call of another registration goes to :data:`STOCK_HOOK`."""
    binding = BINDINGS.get(k_id)
    if binding is None:
        return STOCK_HOOK(k_id, feed, raw_attrs)
    label = binding.op.name
    try:
        # the hit path of decode_attributes, written out: this runs once per node per run
        hit = binding.attr_cache.get(tuple(raw_attrs.values()))
        if hit is None:
            hit = decode_attributes(binding, raw_attrs)
        label = hit[1]
        result = hit[2](*feed)
        if _WATCHED:
            routing.forward_terminate()
        if binding.more:
            return (k_id, *_several(binding, result))
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


def _failed(binding: Binding, k_id: int, label: str, exc: BaseException) -> tuple[Any, ...]:
    """Record ``exc`` for the run in progress and return the node's empty output. Everything the hook
    does after its kernel failed happens in here (see customops.bridge.interrupts)."""
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        interrupts.stop(exc)
    elif isinstance(exc, CustomOpsError):
        routing.report(brief(f"{label}: {exc}"))
    else:
        routing.report(brief(f"{label}: {type(exc).__name__}: {exc}"))
    empty: Any = [] if binding.elem_type == "string" else np.zeros(0, binding.out_dtype)
    return (k_id, (0,), empty, *[part for dtype in binding.more for part in ((0,), np.zeros(0, dtype))])


def call_guarded(hook: Hook, k_id: int, feed: Sequence[Any], raw_attrs: dict[str, str]) -> tuple[Any, ...]:
    """``hook`` for our registrations, its exceptions handled as :func:`invoke` handles a kernel's and its
    answer checked (:func:`_fit_answer`); a call of another registration goes to :data:`STOCK_HOOK`."""
    binding = BINDINGS.get(k_id)
    if binding is None:
        return STOCK_HOOK(k_id, feed, raw_attrs)
    try:
        answer = hook(k_id, feed, raw_attrs)
        if _WATCHED:
            routing.forward_terminate()
        return _fit_answer(binding, k_id, answer)
    except BaseException as exc:
        return _failed(binding, k_id, binding.op.name, exc)


def _fit_answer(binding: Binding, k_id: int, answer: Any) -> tuple[Any, ...]:
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


interrupts.watch_hooks(hooks=(invoke, call_guarded), unguarded=(_failed, STOCK_HOOK))
