"""The README's examples run and its command block is complete, docs/support.md's table matches the
registry, CI runs the README's test line, and the docs' links lead somewhere."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from customops.cli.ops import markdown_table
from customops.support import support_table
from tests.helpers import NEVER

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SUPPORT = ROOT / "docs" / "support.md"


def _columns(table: str, upto: int) -> list[list[str]]:
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| op ")]
    return [[c.strip() for c in line.strip("|").split("|")][:upto] for line in rows]


def _support_page_tool():
    spec = importlib.util.spec_from_file_location("support_page", ROOT / "tools" / "support_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_support_page_table_matches_the_registry():
    """The customops columns and notes of docs/support.md are the generator's (the built-in column is
    the installed ORT's, probed when the page is written): on a difference, run tools/support_page.py."""
    page = SUPPORT.read_text()
    block = page.split("<!-- support-table -->")[1].split("<!-- /support-table -->")[0]
    generated = markdown_table(support_table(probe=False), probed=False)
    assert _columns(block, 4) == _columns(generated, 4), "run python tools/support_page.py"
    notes = [line for line in block.splitlines() if line.startswith("(")]
    assert notes == [line for line in generated.splitlines() if line.startswith("(")]


def test_support_page_names_its_generator_which_rewrites_only_the_table():
    page = SUPPORT.read_text()
    assert "`python tools/support_page.py`" in page.split("<!-- support-table -->")[0]
    tool = _support_page_tool()
    block = page.split("<!-- support-table -->")[1].split("<!-- /support-table -->")[0]
    assert tool.with_table(page, block) == page
    rewritten = tool.with_table(page, "| new |")
    assert rewritten.split("<!-- support-table -->") == [
        page.split("<!-- support-table -->")[0],
        "\n| new |\n<!-- /support-table -->" + page.split("<!-- /support-table -->")[1],
    ]
    assert "(docs/support.md)" in README


def test_readme_python_example_runs():
    code = re.search(r"## Python API\n\n```python\n(.*?)```", README, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["result"].changed
    assert namespace["original"].SerializeToString() == namespace["model"].SerializeToString()


def test_readme_quickstart_runs_from_an_installed_wheel_and_finds_what_it_says(tmp_path):
    """The wheel holds the example models, and the README's first command, run where the wheel is
    installed and away from any checkout, compares the example and prints the verdict the README shows."""
    import shlex
    import shutil
    import subprocess
    import sys
    import zipfile

    quick = README.split("## Quickstart")[1].split("<!-- test-command -->")[0]
    line = quick.split("```")[1].strip()
    assert line.count("\n") == 0 and "/pip install -q . && " in line, line
    command = line.split(" && ")[-1]
    assert command.startswith(".venv/bin/customops compare ") and "examples ort_deviation" in command
    src = tmp_path / "src"  # the wheel is built from a copy: the checkout gets no build/ or egg-info
    shutil.copytree(ROOT / "customops", src / "customops", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "-q"]
    wheels = tmp_path / "dist"
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(wheels), str(src)],
        capture_output=True,
        text=True,
        timeout=NEVER,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("customops-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("ort_deviation.onnx", "preprocess_pipeline.onnx", "README.md"):
        assert f"customops/examples/{name}" in names, sorted(names)
    site = tmp_path / "site"  # installed into a directory of its own; its dependencies are this Python's
    installed = subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=NEVER,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    # CUSTOMOPS_JIT=0: the numpy kernels (the same verdict) spare compiling the fresh copy's loops
    env = {**os.environ, "PYTHONPATH": str(site), "CUSTOMOPS_JIT": "0"}
    bin_dir = f"{shlex.quote(str(site))}/bin/"
    (tmp_path / "elsewhere").mkdir()
    run = {"capture_output": True, "text": True, "timeout": NEVER, "env": env, "cwd": tmp_path / "elsewhere"}
    where = subprocess.run([f"{site}/bin/customops", "examples", "ort_deviation"], **run)
    assert where.stdout.strip() == str(site / "customops" / "examples" / "ort_deviation.onnx"), where
    proc = subprocess.run(["bash", "-c", command.replace(".venv/bin/", bin_dir)], **run)
    assert proc.returncode == 1, proc.stderr
    verdict = proc.stdout.strip().splitlines()[-1]
    assert verdict in README and "builtin-leaves-spec" in verdict


def test_ci_runs_the_readme_test_line():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in ci and "<!-- test-command -->" in README
    line = README.split("<!-- test-command -->")[1].split("```")[1].strip()
    assert "pip install" in line and "pytest" in line


def _commands(parser, words=("customops",)):
    """(words of a command, its long options and positional metavars) for every (sub)command; of an
    option spelt several ways, its first long spelling (the others are other tools' spellings of it,
    listed in the docs of the command: docs/compare.md for compare's Polygraphy spellings)."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    longs = [[o for o in a.option_strings if o.startswith("--")] for a in parser._actions]
    options = [spellings[0] for spellings in longs if spellings and spellings[0] != "--help"]
    positionals = [
        a.metavar or a.dest
        for a in parser._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]
    found = [(words, options, positionals)]
    for action in subs:
        for name, sub in action.choices.items():
            found += _commands(sub, (*words, name))
    return found


def test_readme_command_line_block_lists_every_command_and_option():
    from customops.cli.main import build_parser

    block = README.split("## Command line\n")[1].split("```")[1]
    lines = block.splitlines()
    missing = []
    for words, options, positionals in _commands(build_parser())[1:]:
        head = " ".join(words)
        # the command's own lines: from the one starting with its words up to the next command
        start = [i for i, line in enumerate(lines) if re.match(re.escape(head) + r"( |$)", line)]
        if not start:
            missing.append(head)
            continue
        i = start[0] + 1
        while i < len(lines) and not lines[i].startswith("customops "):
            i += 1
        text = "\n".join(lines[start[0] : i])
        for word in options + positionals:
            if not re.search(re.escape(word) + r"\b", text):
                missing.append(f"{head} {word}")
    assert not missing, f"README's command block lacks {missing}"


def test_readme_fuzz_example_prints_the_row_it_shows(tmp_path):
    import shlex
    import subprocess
    import sys

    section = README.split("## Finding disagreements by themselves: fuzz")[1].split("\n## ")[0]
    command, row = (block.strip() for block in section.split("```")[1:4:2])
    words = shlex.split(command.split("#")[0])
    assert words[:2] == ["customops", "fuzz"] and "--out" in words
    words[words.index("--out") + 1] = str(tmp_path / "fz")
    proc = subprocess.run(
        [sys.executable, "-m", "customops.cli.main", *words[1:]],
        capture_output=True,
        text=True,
        timeout=NEVER,
    )
    assert proc.returncode == 1, proc.stderr  # findings
    group, *_, label = row.split()
    printed = [line for line in proc.stdout.splitlines() if line.startswith(group + " ")]
    assert printed and printed[0].split()[-1] == label, proc.stdout
    assert (tmp_path / "fz" / group / "model.onnx").exists()


def _relative_links() -> list[tuple[str, str]]:
    """(document, target) for every Markdown link of README.md and docs/ that is not a URL or an anchor."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    links = []
    for doc in docs:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if not re.match(r"^[a-z]+:", target) and not target.startswith("#"):
                links.append((str(doc.relative_to(ROOT)), target))
    return links


def test_every_relative_link_in_the_docs_leads_somewhere():
    links = _relative_links()
    assert len(links) > 20  # the README and docs link to each other and to findings/
    dead = [(doc, t) for doc, t in links if not ((ROOT / doc).parent / t.split("#")[0]).exists()]
    assert not dead, f"links to nothing: {dead}"


def test_every_docs_path_named_in_the_code_exists():
    named = set()
    for source in [*ROOT.glob("customops/**/*.py"), *ROOT.glob("tests/**/*.py")]:
        named.update(re.findall(r"\bdocs/[\w./-]+\.md\b", source.read_text()))
    assert named and not [p for p in sorted(named) if not (ROOT / p).exists()]


def test_readme_gives_customops_compare_with_every_parameter_it_has():
    import inspect
    import re

    import customops

    text = " ".join(README.split())
    shown = re.search(r"`customops\.compare\((.*?)\)` is", text)
    assert shown is not None
    params = inspect.signature(customops.compare).parameters.values()
    expected = ", ".join(
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}".replace("'", '"')
        for p in params
    )
    assert shown.group(1).replace("*, ", "") == expected
