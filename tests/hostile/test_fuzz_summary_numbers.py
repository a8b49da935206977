"""A campaign's seconds in a summary.json that no run can take (beyond every float, negative, infinite):
``fuzz merge`` exits 2 with one line naming the field, and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

SUMMARY = Path(__file__).resolve().parents[2] / "findings" / "summary.json"
"""The summary written by real campaigns (merged by the real ``customops fuzz merge``)."""


@pytest.mark.parametrize(
    ("field", "value"),
    [("seconds", "1" + "0" * 400), ("seconds", "-1.0"), ("seconds_cases", "1e999")],
    ids=["1e400", "negative", "infinite"],
)
def test_seconds_no_run_takes_are_refused_and_nothing_is_written(tmp_path, field, value):
    record = json.loads(SUMMARY.read_text())
    record["campaigns"][0][field] = "@"
    shard = tmp_path / "shard"
    shard.mkdir()
    (shard / "summary.json").write_text(json.dumps(record).replace('"@"', value))
    out, markdown = tmp_path / "out", tmp_path / "summary.md"
    run = run_cli("fuzz", "merge", str(shard), "--out", str(out), "--markdown", str(markdown))
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-2000:]
    assert f"campaigns[0].{field} must be" in lines[0]
    assert not out.exists() and not markdown.exists()
