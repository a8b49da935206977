"""Error messages of the sides, cleaned once for every report: one line, ONNX Runtime's status prefix
(``[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : ``) removed, at most :data:`MESSAGE_LIMIT` characters.
The exception's class says what the status code said (``InvalidArgument``, ``NotImplemented``, ``Fail``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


_WHERE = (
    # ORT, running: "Non-zero status code returned while running Pad node. Name:'pad' Status Message: ..."
    re.compile(r"while running (?P<op>[^\s.]+) node\. Name:'(?P<name>.*?)' Status Message:"),
    # ORT, loading (shape inference): "Node (pad) Op (Pad) [ShapeInferenceError] ..."
    re.compile(r"\bNode \((?P<name>.*?)\) Op \((?P<op>[^)\s]*)\)"),
    # ORT, loading (no kernel): "Could not find an implementation for Resize(19) node with name 'r'"
    re.compile(r"implementation for (?P<op>[^\s(]+)\(\d+\) node with name '(?P<name>.*?)'"),
    # one of our kernels (customops.bridge.hook): "Pad-18 node 'pad': ..."
    re.compile(r"^(?P<op>[A-Za-z][\w.]*-\d+) node (?P<q>['\"])(?P<name>.*?)(?P=q): "),
)


def failing_node(text: str | None, names: Iterable[str] = ()) -> tuple[str, str] | None:
    """(node name, op) of the node a side's error names (ORT's run and load errors, our kernels' own):
    the name as the runtime gives it (ORT's layout passes rename the nodes they replace, e.g.
    ``<output>_nchwc``); None when the error names no node (the model or the inputs refused).

    A name is text of the model, and may hold what ends it in the error (``' Status Message:``): the
    earliest place any pattern matches is the runtime's own (a name comes after it), and of ``names``
    (the names the model can give, as :func:`message` writes them) the longest that the pattern's end
    follows is the name."""
    text = text or ""
    found = [m for m in (p.search(text) for p in _WHERE) if m]
    if not found:
        return None
    first = min(found, key=lambda m: m.start())
    fits = [n for n in names if n and _ends_there(first, text, n)]
    return (max(fits, key=len) if fits else first["name"]), first["op"]


def _ends_there(found: re.Match[str], text: str, name: str) -> bool:
    """Whether ``name`` stands where ``found`` read a name, followed by what ends a name there."""
    at = found.start("name")
    if not text.startswith(name, at):
        return False
    probe = f"{text[:at]}\0{text[at + len(name) :]}"
    again = found.re.search(probe, found.start())
    return again is not None and again.start("name") == at and again["name"] == "\0"
