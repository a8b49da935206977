"""customops: spec-exact ONNX operators as ONNX Runtime custom ops, to find where runtimes disagree.

Public API: :data:`DOMAIN`, :func:`session_options`, :class:`InferenceSession`, :func:`rewrite`,
:func:`rewrite_model`, :func:`restore`, :func:`compare`, and the exception types :class:`CustomOpsError` /
:class:`KernelError`. The ONNX Runtime layer is imported on first use, so the kernels stay importable
without it; so is the operator table (:data:`DOMAIN` comes from customops.registry), so that importing the
package, as ``customops -h`` and ``--version`` do, stays cheap.
"""

from __future__ import annotations

from typing import Any

from customops.errors import CustomOpsError, KernelError

__version__ = "0.1.0"

_LAZY = {
    "DOMAIN": "customops.registry",
    "session_options": "customops.bridge.session",
    "InferenceSession": "customops.bridge.session",
    "pop_errors": "customops.bridge.routing",
    "rewrite": "customops.model.rewriter",
    "rewrite_model": "customops.model.rewriter",
    "restore": "customops.model.rewriter",
    "compare": "customops.comparison.api",
}

__all__ = [
    "DOMAIN",
    "CustomOpsError",
    "InferenceSession",
    "KernelError",
    "__version__",
    *sorted(set(_LAZY) - {"DOMAIN", "InferenceSession"}),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'customops' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
