"""Functions of customops read at once: none, anywhere in the package (methods and nested functions
too), is longer than 60 lines unless its docstring says why ("Longer than 60 lines ...")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 60
REASON = "longer than 60 lines"


def too_long(source: str, filename: str) -> list[tuple[int, str, int]]:
    """(first line, name, length in lines) of every function of ``source`` longer than :data:`LIMIT`
    lines whose docstring does not say why."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        if length > LIMIT and REASON not in (ast.get_docstring(node) or "").lower():
            found.append((node.lineno, node.name, length))
    return found


def _function(name: str, length: int, indent: str = "", doc: str = "", kind: str = "def") -> list[str]:
    """The lines of a function ``name`` ``length`` lines long (its ``def`` line included)."""
    head = [f"{indent}{kind} {name}():"] + ([f'{indent}    """{doc}"""'] if doc else [])
    return head + [f"{indent}    x = {i}" for i in range(length - len(head))]


def test_too_long_finds_functions_methods_and_nested_functions_without_a_reason():
    source = "\n".join(
        [
            *_function("fits", LIMIT),
            *_function("over", LIMIT + 1, kind="async def"),
            *_function("explained", LIMIT + 5, doc="Longer than 60 lines: one table of cases."),
            "class C:",
            "    def method(self):",
            *_function("inner", LIMIT + 1, indent="        "),
        ]
    )
    found = {(name, length) for _, name, length in too_long(source, "<test>")}
    assert found == {("over", LIMIT + 1), ("method", LIMIT + 2), ("inner", LIMIT + 1)}


def test_no_function_of_customops_is_longer_than_60_lines_without_a_reason():
    paths = sorted((ROOT / "customops").rglob("*.py"))
    assert ROOT / "customops/kernels/resampling/resize.py" in paths  # the whole package, subpackages too
    assert ROOT / "customops" / "fuzz" / "spaces" / "col2im.py" in paths
    long = [
        f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)"
        for path in paths
        for line, name, length in too_long(path.read_text(), str(path))
    ]
    assert not long, "split these, or say in the docstring why they are longer:\n" + "\n".join(long)
