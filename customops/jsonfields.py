"""Checking JSON read from a user's file, field by field: the one way every tool does it.

A :data:`Spec` checks the value found at a JSON path and returns it (possibly normalized), or raises
:class:`BadField`, whose text names the path and what is allowed there (``results[0].ratio must be a
number, not str 'x'``). Specs compose: :func:`record` (an object's fields), :func:`list_of`,
:func:`map_of`, :func:`maybe`; :func:`checked` turns a breach into the one-line CustomOpsError of a file.
The fuzzer's campaign files (customops.fuzz.files) and bench's saved runs (customops.bench.saved) are read
through it; the files themselves are read by customops.safeio.read_json (bounded, strict).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from customops.errors import CustomOpsError
from customops.safeio import is_safe_component

__all__ = [
    "MAX_NUMBER",
    "BadField",
    "Spec",
    "any_json",
    "at",
    "checked",
    "flag",
    "integer",
    "list_of",
    "map_of",
    "maybe",
    "number",
    "real",
    "record",
    "text",
]

MAX_NUMBER = 2**63 - 1
"""The largest integer :func:`integer` takes by default."""


class BadField(Exception):
    """A field that breaks the schema: where it is (a JSON path) and what is allowed there."""

    def __init__(self, where: str, allowed: str, value: Any = ..., *, rule: str = "must be") -> None:
        shown = "" if value is ... else f", not {_show(value)}"
        super().__init__(f"{where or 'the top level'} {rule} {allowed}{shown}")


class MissingField(BadField):
    """A required field that is not there."""

    def __init__(self, where: str, key: str) -> None:
        Exception.__init__(
            self, f"{at(where, key)} must be present ({where or 'the top level'} has no {key!r})"
        )


def _show(value: Any) -> str:
    """What was found instead: its JSON type, and a short scalar's value."""
    kind = type(value).__name__
    if isinstance(value, str | int | float | bool):
        shown = repr(value)
        return f"{kind} {shown if len(shown) <= 40 else shown[:37] + '...'}"
    return kind


Spec = Callable[[Any, str], Any]
"""Checks a value found at a JSON path and returns it (possibly normalized), or raises BadField."""


def any_json(value: Any, where: str) -> Any:
    return value


def text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise BadField(where, "a string", value)
    return value


def flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadField(where, "true or false", value)
    return value


def number(value: Any, where: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadField(where, "a number", value)
    return value


def real(low: float, high: float) -> Spec:
    """A number from ``low`` to ``high`` (finite bounds), as a float: never inf (``1e999`` parses as it)
    nor an integer beyond every float."""

    def check(value: Any, where: str) -> float:
        ok = not isinstance(value, bool) and isinstance(value, int | float) and low <= value <= high
        if not ok:
            raise BadField(where, f"a number from {low:g} to {high:g}", value)
        return float(value)

    return check


def integer(low: int = 0, high: int = MAX_NUMBER) -> Spec:
    def check(value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise BadField(where, f"an integer from {low} to {high}", value)
        return value

    return check


def maybe(spec: Spec) -> Spec:
    """``spec``, or null."""
    return lambda value, where: None if value is None else spec(value, where)


def list_of(item: Spec) -> Spec:
    def check(value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise BadField(where, "a list", value)
        return [item(v, f"{where}[{i}]") for i, v in enumerate(value)]

    return check


def map_of(item: Spec) -> Spec:
    def check(value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise BadField(where, "an object", value)
        return {k: item(v, at(where, k)) for k, v in value.items()}

    return check


def record(
    required: dict[str, Spec], optional: dict[str, Spec] | None = None, rest: Spec | None = None
) -> Spec:
    """An object with these fields; other fields are checked by ``rest``, or dropped without it."""

    def check(value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise BadField(where, "an object", value)
        missing = [key for key in required if key not in value]
        if missing:
            raise MissingField(where, missing[0])
        out = {}
        for key, v in value.items():
            spec = required.get(key) or (optional or {}).get(key) or rest
            if spec is not None:
                out[key] = spec(v, at(where, key))
        return out

    return check


def at(where: str, key: str) -> str:
    """The JSON path of ``key`` in ``where``: a key from the file that is not a plain name is quoted
    (and cut), so that the message stays one short line."""
    part = key if is_safe_component(key) else repr(key[:40])
    return f"{where}.{part}" if where else part


def checked(value: Any, schema: Spec, path: str | Path, what: str) -> Any:
    """``value`` checked by ``schema``; a breach is a CustomOpsError naming ``what`` at ``path``."""
    try:
        return schema(value, "")
    except BadField as exc:
        raise CustomOpsError(f"{what} {str(path)!r}: {exc}") from None
