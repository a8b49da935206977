"""onnxruntime-extensions, imported without its side effect on the environment.

Importing the package sets ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` in ``os.environ`` (for its
converters, which customops does not use). Every process started afterwards inherits it: compare's and
the fuzzer's side children, and any command a user's program starts, would then parse models with
protobuf's pure-Python implementation, many times slower than its compiled one and with other rules for
text that is not UTF-8. Every import of the package in customops goes through this module, which puts
the environment back as it was."""

from __future__ import annotations

import os

_saved = dict(os.environ)
import onnxruntime_extensions  # noqa: E402
from onnxruntime_extensions import PyCustomOpDef, get_library_path, onnx_op  # noqa: E402
from onnxruntime_extensions import _ocos as ocos  # noqa: E402

for _key in set(os.environ) - set(_saved):
    del os.environ[_key]
for _key, _value in _saved.items():
    if os.environ.get(_key) != _value:
        os.environ[_key] = _value
del _saved

__all__ = ["PyCustomOpDef", "get_library_path", "ocos", "onnx_op", "onnxruntime_extensions"]
