"""The code base stays ruff-clean (lint rules and formatting configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_and_format_are_clean():
    for args in (
        ["check", "customops", "tests", "tools"],
        ["format", "--check", "customops", "tests", "tools"],
    ):
        proc = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
