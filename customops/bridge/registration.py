"""Our custom ops declared with onnxruntime-extensions: one registration per (custom op, element type),
each served by the invocation hook (customops.bridge.hook), which :func:`declare` installs together with
our SIGINT handler (customops.bridge.interrupts)."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from customops.bridge import interrupts
from customops.bridge.hook import BINDINGS, Binding, invoke
from customops.dtypes import numpy_dtype
from customops.extensions import PyCustomOpDef, onnx_op
from customops.registry import CUSTOM_OPS, DOMAIN, MARKER_ATTRS, NATIVE_TYPES

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

_lock = threading.Lock()
_declared = False


def _load_kernel(path: str) -> tuple[Callable[..., Any], Callable[..., Callable[..., Any]]]:
    """The kernel the registry names ``module:function``, and its module's ``bind``."""
    name, _, function = path.partition(":")
    module = importlib.import_module(name)
    return getattr(module, function), module.bind


def declare() -> None:
    """Declare every (custom op, element type) with onnxruntime-extensions, install the hook and then our
    SIGINT handler (:func:`interrupts.install_sigint`), once."""
    global _declared
    with _lock:
        if _declared:
            return
        for op in CUSTOM_OPS.values():
            kernel, bind = _load_kernel(op.kernel)
            attr_types = {name: PyCustomOpDef.dt_string for name, _ in op.attributes}
            attr_types.update({name: PyCustomOpDef.dt_string for name in MARKER_ATTRS})
            for registration in op.registrations():
                inputs, outputs = op.typed(registration)
                opdef = onnx_op(
                    op_type=f"{DOMAIN}::{op.name}",
                    inputs=[_PYOP_TYPES[t] for t in inputs],
                    outputs=[_PYOP_TYPES[t] for t in outputs],
                    attrs=attr_types,
                )(kernel)
                more = tuple(NUMPY_TYPES[t] for t in outputs[1:])
                BINDINGS[opdef._id] = Binding(
                    op, outputs[0], NUMPY_TYPES[outputs[0]], kernel, bind, more=more
                )
        PyCustomOpDef.install_hooker(invoke)
        _declared = True
    interrupts.install_sigint()
