"""Error messages of the sides, cleaned once for every report: one line, ONNX Runtime's status prefix
(``[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : ``) removed, at most :data:`MESSAGE_LIMIT` characters.
The exception's class says what the status code said (``InvalidArgument``, ``NotImplemented``, ``Fail``)."""

from __future__ import annotations

import re

MESSAGE_LIMIT = 600
"""Longest message kept in a report (ORT's messages carry C++ signatures and source paths)."""

_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ")


def message(exc: BaseException) -> str:
    """The message of ``exc`` on one line, ORT's status prefix removed."""
    text = " ".join(str(exc).split())
    return _ORT_PREFIX.sub("", text)[:MESSAGE_LIMIT]


def described(exc: BaseException) -> str:
    """``Class: message`` (:func:`message`), for reports that keep what kind of error it was."""
    return f"{type(exc).__name__}: {message(exc)}"[:MESSAGE_LIMIT]
