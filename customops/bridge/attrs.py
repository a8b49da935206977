"""Lossless encoding of attribute values as strings, the only form the Python op layer passes intact.

onnxruntime-extensions hands every attribute to Python as a string and prints floats with 6 significant
digits, and it has no list attributes. Every kernel attribute is therefore declared as a string and written
here: ints as decimal, floats as the shortest repr that round-trips the float32 value, lists and absence
as JSON. :func:`decode` is the exact inverse given the attribute's kind.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from customops.errors import CustomOpsError

KINDS = ("int", "float", "string", "ints", "floats")


def _float32(x: float) -> float:
    return float(np.float32(x))


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(_float32(x))


def encode(kind: str, value: object) -> str:
    """Encode ``value`` of ONNX attribute kind ``kind``; ``None`` (absent) encodes as ``"null"`` for lists."""
    if kind == "int":
        return str(int(value))  # type: ignore[call-overload]
    if kind == "float":
        return _float_text(float(value))  # type: ignore[arg-type]
    if kind == "string":
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return str(value)
    if kind == "ints":
        return "null" if value is None else json.dumps([int(v) for v in value])  # type: ignore[union-attr]
    if kind == "floats":
        if value is None:
            return "null"
        return "[" + ",".join(_float_text(float(v)) for v in value) + "]"  # type: ignore[union-attr]
    raise CustomOpsError(f"attribute kind {kind!r} is not one of {', '.join(KINDS)}")


INT64 = (-(2**63), 2**63 - 1)
"""The range of an ONNX int attribute (``AttributeProto.i`` and ``ints`` are int64)."""

_INT_TEXT = re.compile(r"-?[0-9]+\Z")


def decode(kind: str, text: str) -> object:
    """Decode a string written by :func:`encode` for attribute kind ``kind``; raises CustomOpsError for
    text that :func:`encode` would not write for that kind (an int outside int64 included): the text comes
    from the model, which anyone may have written."""
    try:
        return _decode(kind, text)
    except (ValueError, TypeError, RecursionError):
        raise CustomOpsError(
            f"{text[:40]!r} is not {_KIND_TEXT.get(kind, kind)} as customops writes it"
        ) from None


_KIND_TEXT = {
    "int": "an integer within int64",
    "float": "a float",
    "ints": "null or a JSON list of integers within int64",
    "floats": "null or a bracketed list of floats",
}


def _int64(value: object) -> int:
    if type(value) is not int or not INT64[0] <= value <= INT64[1]:
        raise ValueError(value)
    return value


def _decode(kind: str, text: str) -> object:
    if kind == "int":
        if not _INT_TEXT.match(text):
            raise ValueError(text)
        return _int64(int(text))
    if kind == "float":
        return float(text)
    if kind == "string":
        return text
    if kind == "ints":
        values = json.loads(text)
        if values is None:
            return None
        if type(values) is not list:
            raise ValueError(text)
        return [_int64(v) for v in values]
    if kind == "floats":
        if text == "null":
            return None
        if not (text.startswith("[") and text.endswith("]")):
            raise ValueError(text)
        body = text[1:-1]
        return [float(v) for v in body.split(",")] if body.strip() else []
    raise CustomOpsError(f"attribute kind {kind!r} is not one of {', '.join(KINDS)}")
