"""A float attribute written as an integer too large for any float in a finding.json (strict JSON
allows any number of digits below the parser's limit): replay exits 2 with one line, no traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli

FINDING = Path(__file__).resolve().parents[2] / "findings" / "Celu-12-builtin-value-884275"
"""A group directory written by a real campaign (its case holds the float attribute alpha)."""


@pytest.mark.parametrize("alpha", [10**400, -(10**309)], ids=["1e400", "-1e309"])
def test_an_integer_beyond_the_floats_as_a_float_attribute_is_refused(tmp_path, alpha):
    group = tmp_path / FINDING.name
    shutil.copytree(FINDING, group)
    record = json.loads((group / "finding.json").read_text())
    record["case"]["attrs"]["alpha"] = alpha
    (group / "finding.json").write_text(json.dumps(record))
    run = run_cli("fuzz", "replay", str(group))
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-2000:]
    assert "attribute 'alpha' of Celu-12 must be of kind float" in lines[0]
