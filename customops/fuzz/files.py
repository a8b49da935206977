"""Reading what a campaign left behind: ``summary.json`` and each group's ``finding.json``.

Campaign directories are untrusted data (they are shared, committed, downloaded), so every read of these
files goes through this module, which bounds the read (:data:`MAX_SUMMARY_BYTES`,
:data:`MAX_FINDING_BYTES`), checks the type of every field the fuzzer uses, checks that every group
directory name is one safe path component (:func:`customops.safeio.is_safe_component`), drops fields it
does not know, and turns any breach into a one-line CustomOpsError naming the field and what is allowed.
The arrays of a case are decoded by :func:`customops.fuzz.case.case_from_json`, bounded there.
"""

from __future__ import annotations

import math
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from customops.errors import CustomOpsError
from customops.eval.judging.signature import Signature
from customops.fuzz.case import MAX_ARRAY_BYTES, MAX_RANK, Case, case_from_json, known_elem
from customops.fuzz.summary import VERSION_KEYS, CampaignSummary
from customops.jsonfields import (
    BadField,
    Spec,
    any_json,
    checked,
    flag,
    integer,
    list_of,
    map_of,
    maybe,
    real,
    record,
    text,
)
from customops.safeio import MAX_COMPONENT, is_safe_component, read_json

SUMMARY = "summary.json"
FINDING = "finding.json"

MAX_SUMMARY_BYTES = 8 << 20
"""Largest summary.json read. The committed merge of five campaigns of 30,000 cases (320 groups) is
0.6 MB; 8 MiB leaves room for about 4,000 groups, and as JSON parses into at most about 25 times its size
in Python objects, reading one never takes more than about 200 MB."""

MAX_FINDING_BYTES = 1 << 20
"""Largest finding.json read. A shrunk reproducer's record is a few kB (the largest committed one is
4 kB: its case holds a few hundred elements at most); 1 MiB is 250 times that, and parses into 25 MB
at most."""

MAX_DEPTH = 16
"""Deepest nesting of arrays and objects accepted; the fuzzer writes 5 levels."""

SAFE_NAME = (
    f"a safe directory name (one path component of A-Z a-z 0-9 _ . -, not starting with a dot, "
    f"at most {MAX_COMPONENT} characters)"
)


def command(value: Any, where: str) -> str:
    """A ``customops fuzz ...`` command line, its words quoted anew (``shlex.join``): pasted into a shell
    (it is shown on the findings page), it runs customops fuzz with those words and nothing else."""
    try:
        words = shlex.split(value) if isinstance(value, str) else []
    except ValueError:  # an unclosed quote
        words = []
    if words[:2] != ["customops", "fuzz"]:
        raise BadField(where, "a command line 'customops fuzz ...'", value)
    return shlex.join(words)


def name(value: Any, where: str) -> str:
    if not is_safe_component(value):
        raise BadField(where, SAFE_NAME, value)
    return value


# ---------------------------------------------------------------------------------------------
# the two files


COUNTS = map_of(integer())
SIGNATURE = record(
    {
        "op": name,
        "version": integer(1, 10_000),
        "side": text,
        "kind": text,
        "detail": text,
        "features": list_of(text),
    }
)
EXAMPLES = list_of(integer())
GROUP_FIELDS: dict[str, Spec] = {
    "id": text,
    "dir": maybe(name),
    "signature": SIGNATURE,
    "text": text,
    "counts": flag,
    "count": integer(),
    "examples": EXAMPLES,
    "dtypes": COUNTS,
    "ranks": list_of(integer()),
    "seed": maybe(integer()),
    "rerun": list_of(text),
    "known": list_of(text),
    "facts": record({}, {"needs": list_of(text), "attrs": map_of(any_json)}, rest=any_json),
    "representative": map_of(any_json),
}
GROUP = record({k: GROUP_FIELDS[k] for k in ("id", "dir", "signature", "count", "examples")}, GROUP_FIELDS)
NOTE = record(
    {"signature": SIGNATURE, "count": integer(), "examples": EXAMPLES},
    {"id": text, "text": text, "dtypes": COUNTS, "ranks": list_of(integer())},
)
SECONDS = real(0, 1e12)
"""A campaign's time (no run lasts 30,000 years; the report formats and adds them as floats)."""
CAMPAIGN = record(
    {
        "command": command,
        "targets": list_of(text),
        "seed": integer(),
        "cases": integer(),
        "run": integer(),
        "skipped": integer(),
        "seconds": SECONDS,
        "groups": integer(),
        "findings": integer(),
    },
    {
        "shard": text,
        "indices": maybe(list_of(integer())),
        "skipped_reasons": COUNTS,
        "not_run": integer(),
        "seconds_cases": SECONDS,
        "jobs": integer(1),
    },
)
CASE_COUNTS = record(
    {k: integer() for k in ("total", "run", "valid", "invalid", "not_run")} | {"skipped": COUNTS},
    {"invalid_reasons": COUNTS, "by_target": map_of(COUNTS)},
)
SUMMARY_SCHEMA = record(
    {"ort_version": text, "campaigns": list_of(CAMPAIGN), "cases": CASE_COUNTS, "groups": list_of(GROUP)},
    {**{k: text for k in VERSION_KEYS}, "reference_notes": list_of(NOTE)},
)


def elem(value: Any, where: str) -> str:
    if not isinstance(value, str) or not known_elem(value):
        raise BadField(where, "an ONNX element type name (e.g. 'float', 'int64')", value)
    return value


def shape(value: Any, where: str) -> list[int]:
    dims = list_of(integer(0, MAX_ARRAY_BYTES))(value, where)
    if len(dims) > MAX_RANK or math.prod(max(d, 1) for d in dims) > MAX_ARRAY_BYTES:
        raise BadField(
            where, f"a shape of rank {MAX_RANK} at most and {MAX_ARRAY_BYTES} elements at most", value
        )
    return dims


def array_data(value: Any, where: str) -> str | list[str]:
    if isinstance(value, list):
        return list_of(text)(value, where)
    return text(value, where)


TENSOR = record({"const": flag, "elem": elem, "shape": shape, "data": array_data})
CASE = record(
    {
        "op": name,
        "version": integer(1, 10_000),
        "dtype": elem,
        "attrs": map_of(any_json),
        "inputs": map_of(maybe(TENSOR)),
    },
    {"seed": maybe(integer()), "index": maybe(integer())},
)
FINDING_SCHEMA = record(
    {"signature": SIGNATURE, "case": CASE},
    {
        **GROUP_FIELDS,
        "spec_side": maybe(text),
        "valid": flag,
        "invalid_reason": maybe(text),
        "outcomes": map_of(any_json),
    },
)


# ---------------------------------------------------------------------------------------------
# readers


@dataclass
class Reproducer:
    """A group directory's finding.json, checked: its signature, its case (ready to run) and the record."""

    directory: Path
    signature: Signature
    case: Case
    record: dict[str, Any]


def read_summary(directory: Path) -> CampaignSummary:
    """The checked summary.json of the campaign directory ``directory``, as typed data (fields the
    schema does not know are dropped); it may not be a symbolic link."""
    path = directory / SUMMARY
    if not os.path.lexists(path):
        raise CustomOpsError(f"{str(directory)!r} holds no {SUMMARY} (not a fuzz campaign directory)")
    raw = read_json(path, MAX_SUMMARY_BYTES, SUMMARY, MAX_DEPTH, below=directory)
    summary = checked(raw, SUMMARY_SCHEMA, path, SUMMARY)
    return CampaignSummary.from_json(summary)


def read_finding(directory: Path, root: Path | None = None) -> Reproducer:
    """The checked finding.json of the group directory ``directory``, its case decoded (bounded), read
    through no symbolic link below ``root`` (the directory the user named: ``directory`` itself, or the
    campaign directory holding it)."""
    path = directory / FINDING
    if not os.path.lexists(path):
        raise CustomOpsError(
            f"{str(directory)!r} holds no {FINDING} (not a reproducer written by customops fuzz)"
        )
    raw = read_json(path, MAX_FINDING_BYTES, FINDING, MAX_DEPTH, below=root or directory)
    data = checked(raw, FINDING_SCHEMA, path, FINDING)
    case = case_from_json(data["case"], f"{FINDING} {str(path)!r}: case")
    return Reproducer(directory, Signature.from_json(data["signature"]), case, data)


def group_dir(root: Path, dirname: str) -> Path:
    """``root / dirname`` for a name read from data: refused unless it is one safe component and the
    directory (if there) is no symbolic link, so that it stays inside ``root``."""
    if not is_safe_component(dirname):
        raise CustomOpsError(f"group directory {dirname!r} in {str(root)!r} is not {SAFE_NAME}")
    path = root / dirname
    if path.is_symlink():
        raise CustomOpsError(
            f"group directory {str(path)!r} is a symbolic link; only real directories are read"
        )
    return path
