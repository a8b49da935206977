"""Functions of the kernels and their compiled loops read at once: none is longer than 60 lines unless
its docstring says why ("Longer than 60 lines ...")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60


def test_no_kernel_function_is_longer_than_60_lines_without_a_reason() -> None:
    long = []
    for folder in ("customops/kernels", "customops/accel"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                length = node.end_lineno - node.lineno + 1
                reason = "longer than 60 lines" in (ast.get_docstring(node) or "").lower()
                if length > LIMIT and not reason:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, "split these, or say in the docstring why they are longer:\n" + "\n".join(long)
