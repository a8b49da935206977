"""compare takes ``polygraphy run``'s spellings where they mean what its own options mean, refuses the
others saying why, and names the option meant when one is misspelt (docs/compare.md, Polygraphy's
options). The options are the real ``polygraphy run -h``'s, read in the test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from customops.cli.compare import POLYGRAPHY_ONLY
from customops.cli.main import build_parser, main
from tests.helpers import DEVIATION, ROOT, one_error_line, polygraphy, run_cli, strict_json

SPELLINGS = {
    # Polygraphy's spelling and a value: compare's own spelling
    ("--input-shapes", "image:[1,3,32,48]"): "--input-shape",
    ("--load-inputs", "in.json"): "--inputs",
    ("--load-input-data", "in.json"): "--inputs",
    ("--save-input-data", "in.json"): "--save-inputs",
    ("--save-results", "out.json"): "--save-outputs",
    ("--load-results", "out.json"): "--load-outputs",
    ("--rel-tol", "1e-4"): "--rtol",
    ("--abs-tol", "1e-4"): "--atol",
    ("--execution-providers", "cpu"): "--providers",
}
SAME = [
    "--rtol",
    "--atol",
    "--check-error-stat",
    "--error-quantile",
    "--infinities-compare-equal",
    "--validate",
    "--fail-fast",
    "--seed",
    "--val-range",
    "--save-inputs",
    "--save-outputs",
    "--load-outputs",
    "--load-inputs",
    "--input-shapes",
    "--providers",
    "--graph-optimization-level",
]
"""Polygraphy's options compare takes under the same name."""


@pytest.fixture(scope="module")
def help_text(tmp_path_factory) -> str:
    return polygraphy("run", "-h", cwd=tmp_path_factory.mktemp("help")).stdout


def _sections(text: str) -> dict[str, set[str]]:
    """The options of each group of ``polygraphy run -h`` (a group: a line ending in ':' at column 0)."""
    found: dict[str, set[str]] = {}
    group = ""
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            group = line.rstrip(":")
            continue
        if re.match(r"  -", line):
            found.setdefault(group, set()).update(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line))
    return found


def _parsed(*args: str) -> dict:
    return vars(build_parser().parse_args(["compare", "m.onnx", *args]))


def test_polygraphy_s_spellings_mean_compare_s_options(help_text):
    polygraphy_options = set().union(*_sections(help_text).values())
    assert set(SAME) | {option for option, _ in SPELLINGS} <= polygraphy_options
    for (option, value), ours in SPELLINGS.items():
        assert _parsed(option, value) == _parsed(ours, value), option
    # several values after one option, as Polygraphy takes them
    assert _parsed("--atol", "1e-5", "y:1e-4", "--val-range", "[0,1]", "x:[2,50]") == _parsed(
        "--atol", "1e-5", "--atol", "y:1e-4", "--val-range", "[0,1]", "--val-range", "x:[2,50]"
    )
    assert (
        _parsed("--providers", "cpu", "cuda")["providers"] == _parsed("--providers", "cpu,cuda")["providers"]
    )
    level = _parsed("--graph-optimization-level", "ORT_ENABLE_BASIC")["graph_optimization_level"]
    assert level == "basic"


def test_every_comparison_option_of_polygraphy_run_is_in_the_docs_table(help_text):
    """Each option of ``polygraphy run``'s data-loading, inference and comparison groups is a row of
    docs/compare.md's table, taken or not; every one compare refuses is a real option of it, refused
    with its reason in the one line (exit status 2)."""
    groups = _sections(help_text)
    wanted = set()
    for group, options in groups.items():
        if group in (
            "Data Loader",
            "Comparator Inference",
            "Comparator Postprocessing",
            "Comparator Comparisons",
        ) or group.startswith("Comparison Function"):
            wanted |= options
    assert {"--check-error-stat", "--error-quantile", "--load-inputs", "--iterations"} <= wanted
    table = (
        (Path(ROOT) / "docs" / "compare.md").read_text().split("## Polygraphy's options")[1].split("\n## ")[0]
    )
    rows = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `")]
    listed = {o for row in rows for o in re.findall(r"--[a-z][a-z0-9-]*", row)}
    assert wanted - {"--help"} <= listed, sorted(wanted - listed)
    assert set(POLYGRAPHY_ONLY) <= set().union(*groups.values())
    assert set(POLYGRAPHY_ONLY) <= listed


@pytest.mark.parametrize("option", ["--onnx-outputs", "--iterations", "--compare", "--no-shape-check"])
def test_a_polygraphy_option_compare_does_not_take_says_why_in_one_line(capsys, option):
    with pytest.raises(SystemExit) as info:
        main(["compare", DEVIATION, option, "x"])
    assert info.value.code == 2
    line = one_error_line(capsys)
    assert f"unrecognized arguments: {option} x ({option}: {POLYGRAPHY_ONLY[option]})" in line


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("--atoll", "--atol"),
        ("--rtoll", "--rtol"),
        ("--check-error-stats", "--check-error-stat"),
        ("--valdate", "--validate"),
    ],
)
def test_a_misspelt_option_names_the_one_meant_in_one_line(capsys, typed, meant):
    with pytest.raises(SystemExit) as info:
        main(["compare", DEVIATION, typed, "1e-3"])
    assert info.value.code == 2
    assert f"unrecognized arguments: {typed} 1e-3 (did you mean {meant}?)" in one_error_line(capsys)


def test_an_option_far_from_every_one_gets_no_guess(capsys):
    with pytest.raises(SystemExit):
        main(["compare", DEVIATION, "--frobnicate"])
    line = one_error_line(capsys)
    assert "unrecognized arguments: --frobnicate" in line and "did you mean" not in line


def test_polygraphy_s_inputs_option_given_a_shape_names_input_shapes(capsys):
    assert main(["compare", DEVIATION, "--inputs", "image:[1,3,32,48]"]) == 2
    assert "goes to --input-shapes" in one_error_line(capsys)


def test_a_polygraphy_command_line_runs_as_compare(tmp_path):
    """Files the real polygraphy wrote, and its spellings: its inputs, its outputs in place of the
    built-in side, a tolerance per output with several values after one option."""
    polygraphy(
        "run", DEVIATION, "--onnxrt", "--save-inputs", "i.json", "--save-outputs", "o.json", cwd=tmp_path
    )
    report = tmp_path / "r.json"
    proc = run_cli(
        "compare",
        DEVIATION,
        "--load-inputs",
        "i.json",
        "--load-results",
        "o.json",
        "--abs-tol",
        "1e-5",
        "output:2",
        "--rel-tol",
        "0",
        "--check-error-stat",
        "output:max",
        "--json",
        str(report),
        "-q",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = strict_json(report.read_text())
    assert doc["tolerances"]["tensor output"] == {"rtol": None, "atol": 2.0}
    (out,) = doc["outputs"]
    assert out["metrics"]["stat"] == "max" and out["metrics"]["pass"]


def test_compare_s_json_outputs_are_a_run_polygraphy_compares(tmp_path):
    """``--save-outputs PATH.json`` writes Polygraphy's RunResults, a runner per side: ``polygraphy run
    --load-outputs`` reads it and compares the two (ORT's built-in Resize leaves the spec: they fail),
    and ``compare --load-outputs`` takes its built-in runner."""
    from polygraphy.comparator import RunResults

    proc = run_cli("compare", DEVIATION, "--save-outputs", "ours.json", "-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    runs = dict(RunResults.load(str(tmp_path / "ours.json")).items())
    assert set(runs) == {"customops builtin", "customops custom"}
    assert set(runs["customops builtin"][0].keys()) == {"output", "resized"}
    checked = polygraphy("run", "--load-outputs", "ours.json", cwd=tmp_path, check=False)
    assert checked.returncode == 1 and "FAILED | Output: 'output'" in checked.stdout + checked.stderr
    again = run_cli(
        "compare", DEVIATION, "--load-outputs", "ours.json", "--json", "r.json", "-q", cwd=tmp_path
    )
    assert again.returncode == 1, again.stdout + again.stderr
    assert "customops builtin" in strict_json((tmp_path / "r.json").read_text())["sides"]["builtin"]["source"]
