"""Numbers in a saved bench run (``customops bench --from``) that each pass as a finite time but whose
quotients, which the summary takes the logarithm of, leave the floats (0 or inf): one line, exit 2,
never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

SAVED = Path(__file__).resolve().parents[2] / "docs" / "bench.json"
"""A run saved by the real ``customops bench --json``."""


def _times(result: dict, custom: float, copy: float, builtin: float) -> None:
    result.update(builtin_ms=builtin, custom_ms=custom, copy_ms=copy, ratio=custom / builtin)


@pytest.mark.parametrize(
    ("custom", "copy", "builtin", "field"),
    [(5e-324, 2.0, 1.0, "custom_ms"), (1.0, 1e-320, 1e10, "copy_ms"), (1e300, 1.0, 1.0, "custom_ms")],
)
def test_times_whose_quotients_leave_the_floats_are_refused(tmp_path, custom, copy, builtin, field):
    payload = json.loads(SAVED.read_text())
    for result in payload["results"]:
        _times(result, custom, copy, builtin)
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(payload))
    run = run_cli("bench", "--from", str(path))
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1, run.stderr[-2000:]
    assert lines[0].startswith("customops bench: error: --from ") and f"results[0].{field}" in lines[0]


def test_times_within_the_bounds_still_read_back(tmp_path):
    payload = json.loads(SAVED.read_text())
    for result in payload["results"]:
        _times(result, 1e-90, 1e90, 1.0)
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(payload))
    run = run_cli("bench", "--from", str(path))
    assert run.returncode == 0 and run.stderr == "", run.stderr[-2000:]
