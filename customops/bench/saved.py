"""A run saved by ``customops bench --json``, read back for ``--from``: untrusted input.

The file is read only when it is a regular file of at most :data:`MAX_JSON_BYTES`, parsed as strict JSON
(no ``NaN`` or ``Infinity``; nesting too deep for the parser is refused), and every field the report uses
is checked for its type and range before a :class:`customops.bench.report.Report` is made of it. Fields
the report derives (summary, targets) and fields it does not know are ignored. Any breach is one
:class:`customops.errors.CustomOpsError` line naming the file and the field.
"""

from __future__ import annotations

import math
import os
from dataclasses import fields
from typing import Any

from customops.bench.report import HookResult, Report, Result, Settings
from customops.errors import CustomOpsError
from customops.safeio import printable, read_json

MAX_JSON_BYTES = 32 << 20
"""The largest file read (a full run's JSON is some tens of KB; one with --repeat 1000 about 2 MB)."""


def load(path: str | os.PathLike[str], what: str = "--from") -> Report:
    """The report saved at ``path``; CustomOpsError (one line) when it cannot be read or is not one."""
    return report_from(read_json(path, MAX_JSON_BYTES, what), f"{what} {str(path)!r}")


def report_from(value: Any, where: str) -> Report:
    """The report of a ``--json`` payload (its summary and targets are derived again, not read)."""
    data = _object(value, where)
    machine = _object(_field(data, "machine", where), f"{where}: machine")
    for key, item in machine.items():
        if item is not None and (isinstance(item, bool) or not isinstance(item, str | int | float)):
            raise _bad(f"{where}: machine.{printable(key)[:40]}", "a string or a number", item)
    results = _field(data, "results", where)
    if not isinstance(results, list) or not results:
        raise CustomOpsError(f"{where}: results must be a non-empty array")
    hook = _field(data, "hook", where)
    return Report(
        machine=machine,
        settings=_settings(_field(data, "settings", where), f"{where}: settings"),
        results=[_result(r, f"{where}: results[{i}]") for i, r in enumerate(results)],
        hook=None if hook is None else _hook(hook, f"{where}: hook"),
    )


def _result(value: Any, where: str) -> Result:
    data = _object(value, where)
    kinds = {
        "name": _text,
        "op": _text,
        "shape": _text,
        "small": _flag,
        "samples": _count,
        "inner": _count,
        "builtin_ms": _positive,
        "custom_ms": _positive,
        "ratio": _positive,
        "first_call_ms": _number,
        "output_mb": _number,
        "max_abs_diff": _difference,
    }
    for name in ("stock_ms", "peak_over_output", "floor_ms", "write_only_ms", "copy_ms"):
        kinds[name] = _optional_number
    for f in fields(Result):
        if f.name.endswith("_samples_ms"):
            kinds[f.name] = _numbers
    return Result(**{k: read(_field(data, k, where), f"{where}.{k}") for k, read in kinds.items()})


def _hook(value: Any, where: str) -> HookResult:
    data = _object(value, where)
    return HookResult(
        elements=_count(_field(data, "elements", where), f"{where}.elements"),
        **{k: _positive(_field(data, k, where), f"{where}.{k}") for k in ("hook_ms", "stock_ms", "speedup")},
    )


def _settings(value: Any, where: str) -> Settings:
    data = _object(value, where)
    chosen = _field(data, "filter", where)
    return Settings(
        quick=_flag(_field(data, "quick", where), f"{where}.quick"),
        samples=_count(_field(data, "samples", where), f"{where}.samples"),
        filter=None if chosen is None else _text(chosen, f"{where}.filter"),
    )


# ---------------------------------------------------------------------------------------------
# Field checks: each takes the value and where it is, and returns it checked or raises one line


def _bad(where: str, wants: str, value: Any) -> CustomOpsError:
    return CustomOpsError(f"{where} must be {wants}, not {type(value).__name__}")


def _float(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(where, "a number", value)
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        raise CustomOpsError(f"{where} must be a finite number") from None


def _number(value: Any, where: str) -> float:
    """A finite number of at least 0."""
    x = _float(value, where)
    if not math.isfinite(x):
        raise CustomOpsError(f"{where} must be a finite number")
    if x < 0:
        raise CustomOpsError(f"{where} must not be negative")
    return x


def _positive(value: Any, where: str) -> float:
    """A finite number above 0 (a time the report divides by, or takes the logarithm of)."""
    x = _float(value, where)
    if not (math.isfinite(x) and x > 0):
        raise CustomOpsError(f"{where} must be a finite number above 0")
    return x


def _optional_number(value: Any, where: str) -> float | None:
    return None if value is None else _number(value, where)


def _difference(value: Any, where: str) -> float | None:
    """The largest difference from the built-in output: any number, or jsonout's "inf" or "nan"."""
    if value is None:
        return None
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return _float(value, where)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(where, "an integer", value)
    if value < 1:
        raise CustomOpsError(f"{where} must be at least 1")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(where, "a string", value)
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(where, "true or false", value)
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, "an object", value)
    return value


def _numbers(value: Any, where: str) -> list[float]:
    if not isinstance(value, list):
        raise _bad(where, "an array", value)
    return [_number(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _field(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise CustomOpsError(f"{where} has no {key!r}")
    return data[key]
