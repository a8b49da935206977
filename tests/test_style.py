"""The code base stays ruff-clean (lint rules and formatting configured in pyproject.toml), and every
package it imports is declared there."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_and_format_are_clean():
    for args in (
        ["check", "customops", "tests", "tools"],
        ["format", "--check", "customops", "tests", "tools"],
    ):
        proc = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def _imported(folder: str) -> set[str]:
    """Top-level names of every absolute import in the .py files under ``folder``."""
    names = set()
    for path in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def _distributions(names: set[str]) -> dict[str, set[str]]:
    """Third-party modules among ``names`` -> the normalized names of the distributions that provide them."""
    provided = packages_distributions()
    local = {"customops", "tests", "tools"}
    found = {}
    for name in sorted(names - local - set(sys.stdlib_module_names)):
        found[name] = {_normalize(d) for d in provided.get(name, [name])}
    return found


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(requirements: list[str]) -> set[str]:
    return {_normalize(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in requirements}


def _array(toml: str, key: str) -> list[str]:
    """The strings of the array ``key = [...]`` in pyproject.toml (tomllib is Python 3.11+; we run on 3.10)."""
    body = re.search(rf"^{key} = \[(.*?)^\]", toml, re.M | re.S)
    assert body, f"pyproject.toml has no {key} array"
    return re.findall(r'^\s*"([^"]+)"', body.group(1), re.M)


def test_every_imported_package_is_declared_in_pyproject():
    toml = (ROOT / "pyproject.toml").read_text()
    runtime = _declared(_array(toml, "dependencies"))
    test = runtime | _declared(_array(toml, "test"))
    assert {"numpy", "onnxruntime", "pytest"} <= test
    missing = [
        f"{folder}: {module}"
        for folder, declared in (("customops", runtime), ("tests", test), ("tools", runtime))
        for module, dists in _distributions(_imported(folder)).items()
        if not dists & declared
    ]
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
