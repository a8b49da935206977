"""A run saved by ``customops bench --json``, read back for ``--from``: untrusted input.

The file is read only when it is a regular file of at most :data:`MAX_JSON_BYTES`, parsed as strict JSON
(no ``NaN`` or ``Infinity``; nesting too deep for the parser is refused), and every field the report uses
is checked for its type and range (customops.jsonfields, as every JSON file a user hands us) before a
:class:`customops.bench.report.Report` is made of it. Fields the report derives (summary, targets) and
fields it does not know are ignored. Any breach is one :class:`customops.errors.CustomOpsError` line
naming the file and the field.
"""

from __future__ import annotations

import math
import os
from dataclasses import fields
from typing import Any

from customops.bench.report import HookResult, Report, Result, Settings
from customops.jsonfields import BadField, Spec, checked, flag, list_of, map_of, maybe, record, text
from customops.safeio import read_json

MAX_JSON_BYTES = 32 << 20
"""The largest file read (a full run's JSON is some tens of KB; one with --repeat 1000 about 2 MB)."""

MAGNITUDE = 1e100
"""Times, sizes and ratios lie from 1 / MAGNITUDE to MAGNITUDE (or are 0 where 0 is allowed): the summary
divides them by one another and takes logarithms, which a quotient rounded to 0 or inf would break."""


def load(path: str | os.PathLike[str], what: str = "--from") -> Report:
    """The report saved at ``path``; CustomOpsError (one line) when it cannot be read or is not one."""
    return report_from(read_json(path, MAX_JSON_BYTES, what), path, what)


def report_from(value: Any, path: str | os.PathLike[str], what: str = "--from") -> Report:
    """The report of a ``--json`` payload (its summary and targets are derived again, not read)."""
    data = checked(value, REPORT, str(path), what)
    hook = data["hook"]
    return Report(
        machine=data["machine"],
        settings=Settings(**data["settings"]),
        results=[Result(**r) for r in data["results"]],
        hook=None if hook is None else HookResult(**hook),
    )


# ---------------------------------------------------------------------------------------------
# the fields a report holds, and what each may be


def _float(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadField(where, "a number", value)
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        raise BadField(where, "a finite number", value) from None


def _number(value: Any, where: str) -> float:
    """0, or a number from 1 / :data:`MAGNITUDE` to :data:`MAGNITUDE`."""
    x = _float(value, where)
    if not math.isfinite(x):
        raise BadField(where, "a finite number", value)
    if x < 0:
        raise BadField(where, "negative", rule="must not be")
    if x and not 1 / MAGNITUDE <= x <= MAGNITUDE:
        raise BadField(where, f"0 or a number from {1 / MAGNITUDE:g} to {MAGNITUDE:g}", value)
    return x


def _positive(value: Any, where: str) -> float:
    """A number from 1 / :data:`MAGNITUDE` to :data:`MAGNITUDE` (a time the report divides by, or takes
    the logarithm of)."""
    x = _float(value, where)
    if not (math.isfinite(x) and 1 / MAGNITUDE <= x <= MAGNITUDE):
        raise BadField(where, f"a number from {1 / MAGNITUDE:g} to {MAGNITUDE:g}", value)
    return x


def _difference(value: Any, where: str) -> float | None:
    """The largest difference from the built-in output: any number, or jsonout's "inf" or "nan"."""
    if value is None:
        return None
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return _float(value, where)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadField(where, "an integer", value)
    if value < 1:
        raise BadField(where, "at least 1", value)
    return value


def _machine_value(value: Any, where: str) -> str | int | float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int | float)):
        raise BadField(where, "a string or a number", value)
    return value


def _results(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise BadField(where, "a non-empty array", value)
    return list_of(RESULT)(value, where)


def _result_fields() -> dict[str, Spec]:
    kinds: dict[str, Spec] = {
        "name": text,
        "op": text,
        "shape": text,
        "small": flag,
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
        kinds[name] = maybe(_number)
    for f in fields(Result):
        if f.name.endswith("_samples_ms"):
            kinds[f.name] = list_of(_number)
    return kinds


RESULT = record(_result_fields())
HOOK = record({"elements": _count, **{k: _positive for k in ("hook_ms", "stock_ms", "speedup")}})
SETTINGS = record({"quick": flag, "samples": _count, "filter": maybe(text)})
REPORT = record(
    {"machine": map_of(_machine_value), "settings": SETTINGS, "results": _results, "hook": maybe(HOOK)}
)
