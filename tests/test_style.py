"""The code base stays ruff-clean (lint rules and formatting configured in pyproject.toml), every
package it imports is declared there, no module of customops imports another's private names, the
modules of customops import one another without a cycle, and every import follows the layer order of
docs/architecture.md."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
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


# Underscore-prefixed *modules* that other customops modules still import: the kernels' compiled loops,
# allocation, threads and plan caches, until they move to the planned public ``accel/`` package (issue
# 18). Nothing else private may cross a module boundary: no underscore-prefixed function, class or
# constant is imported from another module, and no other underscore-prefixed module is imported.
def _modules() -> dict[str, Path]:
    """Every module of customops by dotted name (a package by the name of the package)."""
    found = {}
    for path in (ROOT / "customops").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _source(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` (maybe relative) in ``module`` reads."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(
    modules: dict[str, Path], module: str, nodes: Iterator[ast.AST]
) -> Iterator[tuple[str, str | None]]:
    """(module imported, name imported from it or None) for every import statement among ``nodes`` of
    ``module``; a submodule imported by ``from package import submodule`` counts as the module imported."""
    path = modules[module]
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _source(module, path, node)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield (sub, None) if sub in modules else (source, alias.name)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_private_names_of_another():
    bad = []
    modules = _modules()
    for module, path in modules.items():
        for source, name in _imports(modules, module, ast.walk(ast.parse(path.read_text(), str(path)))):
            if not source.startswith("customops"):
                continue
            if any(_private(part) for part in source.split(".")):
                bad.append(f"{module} imports the private module {source}")
            if name is not None and _private(name):
                bad.append(f"{module} imports the private name {name} from {source}")
    assert not bad, "private names imported across modules (make them public, or move them):\n" + "\n".join(
        bad
    )


def test_tests_and_tools_import_no_private_names_of_customops():
    """The tests and tools import what the package makes public (a test reaching a module's private state
    through the module object, as monkeypatch does, is not an import)."""
    bad = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "tools").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("customops"):
                names = [a.name for a in node.names if _private(a.name)]
                parts = [p for p in (node.module or "").split(".") if _private(p)]
                bad.extend(f"{path.relative_to(ROOT)} imports {n} from {node.module}" for n in names + parts)
    assert not bad, "private names imported from customops (make them public):\n" + "\n".join(bad)


def _module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of ``tree`` outside function bodies (what runs when the module is imported)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _import_graph() -> dict[str, set[str]]:
    """Each module of customops -> the customops modules its module-level code imports."""
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        nodes = _module_level(ast.parse(path.read_text(), str(path)))
        graph[module] = {s for s, _ in _imports(modules, module, nodes) if s in modules and s != module}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as [a, b, ..., a], or None (depth-first search, white/grey/black)."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "grey"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "grey":
                return [*path[path.index(nxt) :], nxt]
            found = None if nxt in state else visit(nxt)
            if found:
                return found
        state[node] = "black"
        path.pop()
        return None

    for start in sorted(graph):
        found = None if start in state else visit(start)
        if found:
            return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_customops_imports_have_no_cycle():
    graph = _import_graph()
    assert "customops.fuzz.spaces.base" in graph["customops.fuzz.spaces.pad"]  # the graph is read at all
    cycle = _cycle(graph)
    assert cycle is None, "import cycle among customops modules (module-level imports): " + " -> ".join(cycle)


# The layer order of docs/architecture.md ("The import rule"), every import counted: module level,
# inside functions and under TYPE_CHECKING alike. A module imports its own layer and the layers below;
# the base modules import only one another; the tools do not import one another; only __main__.py
# imports cli/.
BASE = (
    "errors",
    "registry",
    "dtypes",
    "signals",
    "safeio",
    "jsonfields",
    "jsonout",
    "support",
    "graphs",
    "extensions",
)
LAYERS = ("base", "accel", "kernels", "bridge", "model", "eval", "tools", "cli")
"""The layers from the bottom up (accel/ sits below kernels/: the kernels call its loops)."""
TOOLS = ("comparison", "fuzz", "bench", "conformance")
LAZY_LOADS = {
    "customops.registry",
    "customops.bridge.session",
    "customops.bridge.routing",
    "customops.model.rewriter",
    "customops.comparison.api",
}
"""What customops/__init__.py loads on first use (docs/architecture.md): a name imported from the package
counts as an import of the module that defines it."""


def _layer(module: str) -> tuple[str, str]:
    """(layer, unit) of a customops module: the unit is the tool for the tools, else the layer."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top in ("", *BASE):
        return "base", "base"
    if top in TOOLS:
        return "tools", top
    if top == "__main__":
        return "cli", "cli"
    assert top in LAYERS, f"{module} is in no layer of docs/architecture.md: add it to the picture and here"
    return top, top


def _lazy(modules: dict[str, Path]) -> dict[str, str]:
    """customops/__init__.py's ``_LAZY``: public name -> the module it is loaded from."""
    tree = ast.parse(modules["customops"].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_LAZY" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("customops/__init__.py has no _LAZY table")


def _layer_violations(modules: dict[str, Path], sources: dict[str, str]) -> list[str]:
    """Every import among ``sources`` (module -> its text) that breaks the layer order."""
    lazy = _lazy(modules)
    bad = []
    for module, text in sorted(sources.items()):
        layer, unit = _layer(module)
        for source, name in _imports(modules, module, ast.walk(ast.parse(text, module))):
            if source == "customops" and name in lazy:
                source = lazy[name]
            if not source.startswith("customops.") or source.split(".")[1] == "__main__":
                continue
            to_layer, to_unit = _layer(source)
            if to_layer == "cli" and unit != "cli":
                bad.append(f"{module} imports {source}: only __main__.py imports cli/")
            elif LAYERS.index(to_layer) > LAYERS.index(layer):
                bad.append(f"{module} ({layer}) imports {source} ({to_layer}), a layer above it")
            elif layer == "tools" and to_layer == "tools" and unit != to_unit:
                bad.append(f"{module} imports {source}: the tools do not import one another")
    return bad


def test_layer_checker_finds_each_kind_of_violation():
    modules = _modules()
    sources = {
        "customops.errors": "from customops.kernels.resampling import resize\n",
        "customops.accel.jit": "def f():\n    from customops.kernels.padding.pad import pad\n",
        "customops.fuzz.case": "if True:\n    import customops.comparison.inputs\n",
        "customops.eval.running.sides": "from customops.cli import compare\n",
        "customops.kernels.padding.pad": "from customops import rewrite\n",
        "customops.cli.main": "from customops.fuzz import campaign\nfrom customops import compare\n",
    }
    bad = _layer_violations(modules, sources)
    assert len(bad) == 5, bad
    assert all(module in " ".join(bad) for module in sources if module != "customops.cli.main")


def test_customops_imports_follow_the_layer_order():
    modules = _modules()
    lazy = set(_lazy(modules).values())
    assert lazy <= LAZY_LOADS, (
        f"customops/__init__.py loads {lazy - LAZY_LOADS}: document it and list it here"
    )
    sources = {module: path.read_text() for module, path in modules.items()}
    bad = _layer_violations(modules, sources)
    assert not bad, "imports against the layer order (docs/architecture.md):\n" + "\n".join(bad)


EVAL_PARTS = {"running": set(), "judging": {"cases"}, "cases": set()}
"""What each part of eval/ may import of the others (docs/architecture.md, eval/): running the sides needs no
judging and judging no running, so either can change without the other."""


def test_eval_parts_import_only_what_the_architecture_allows():
    modules = _modules()
    bad = []
    for module, path in modules.items():
        part = module.split(".")[2] if module.startswith("customops.eval.") else None
        if part not in EVAL_PARTS:
            continue
        for source, _ in _imports(modules, module, ast.walk(ast.parse(path.read_text(), str(path)))):
            other = source.split(".")[2] if source.startswith("customops.eval.") else None
            if other in EVAL_PARTS and other != part and other not in EVAL_PARTS[part]:
                bad.append(f"{module} imports {source}")
    assert set(EVAL_PARTS) == {
        p.name for p in (ROOT / "customops" / "eval").iterdir() if p.is_dir() and p.name[0] != "_"
    }
    assert not bad, "eval/'s parts import one another against docs/architecture.md:\n" + "\n".join(bad)
