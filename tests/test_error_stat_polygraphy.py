"""``--check-error-stat`` (per tensor too), ``--error-quantile`` and ``--infinities-compare-equal`` decide
as Polygraphy decides: the same pass or fail as Polygraphy's own comparator (``SimpleCompareFunc``) and
``polygraphy run --load-outputs`` on arrays made to sit on either side of the line.

Where the two definitions part on purpose (docs/compare.md, Polygraphy's options), the arrays stay clear
of it: every |B| is at least 1, above atol (Polygraphy's relative error divides by |B|, ours by
max(|B|, atol)), and there is no NaN (Polygraphy fails any NaN; compare wants NaN at the same places)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from polygraphy.comparator import IterationResult, RunResults, SimpleCompareFunc
from polygraphy.json import save_json

from customops.cli.main import main
from customops.eval.judging.metrics import Criterion, compare_arrays
from tests.helpers import DEVIATION, one_error_line, polygraphy, run_cli, strict_json

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered:RuntimeWarning"  # Polygraphy's inf - inf and inf / inf
)

N = 1000
B = np.linspace(1.0, 2.0, N, dtype=np.float32)
ERRORS = np.linspace(0.0, 1.5e-3, N, dtype=np.float32)
"""Errors from 0 to 1.5e-3, evenly: max 1.5e-3, mean and median 0.75e-3, quantile q about q * 1.5e-3."""


def _polygraphy_passes(a: np.ndarray, b: np.ndarray, atol: float, criterion: Criterion) -> bool:
    """Polygraphy's decision on ``a`` against ``b`` (rtol 0: the absolute statistic decides)."""
    compare = SimpleCompareFunc(
        atol=atol,
        rtol=0.0,
        check_error_stat=criterion.stat,
        error_quantile=criterion.quantile,
        infinities_compare_equal=criterion.infinities_equal,
    )
    found = compare(IterationResult({"y": a}, runner_name="a"), IterationResult({"y": b}, runner_name="b"))
    return bool(found["y"])


def _statistic(errors: np.ndarray, criterion: Criterion) -> float:
    if criterion.stat == "quantile":
        return float(np.quantile(errors, criterion.quantile))
    return float({"max": np.max, "mean": np.mean, "median": np.median}[criterion.stat](errors))


@pytest.mark.parametrize(
    "criterion",
    [
        Criterion("max"),
        Criterion("mean"),
        Criterion("median"),
        Criterion("quantile"),  # Polygraphy's default quantile, 0.99
        Criterion("quantile", 0.9),
        Criterion("quantile", 0.25),
    ],
    ids=lambda c: f"{c.stat}-{c.quantile}",
)
@pytest.mark.parametrize("side", [0.98, 1.02], ids=["atol-below-the-statistic", "atol-above-it"])
def test_each_statistic_passes_and_fails_where_polygraphy_s_does(criterion, side):
    a = B + ERRORS
    atol = _statistic(np.abs(a.astype(np.float64) - B), criterion) * side
    ours = compare_arrays(a, B, 0.0, atol, criterion)
    assert ours.passed == _polygraphy_passes(a, B, atol, criterion) == (side > 1)
    if criterion.stat == "quantile":
        assert ours.to_json()["quantile"] == criterion.quantile


def _with_infinities(sign_b: float) -> tuple[np.ndarray, np.ndarray]:
    """Every element off by 1.5e-3, except the first 600, +inf in ``a`` and ``sign_b`` * inf in ``b``."""
    a, b = B + np.float32(1.5e-3), B.copy()
    a[:600], b[:600] = np.inf, sign_b * np.inf
    return a, b


@pytest.mark.parametrize("stat", ["median", "mean", "quantile"])
def test_matching_infinities_count_as_errors_of_0_with_infinities_compare_equal(stat):
    """600 matching +inf and 400 finite errors of 1.5e-3, at atol 1e-3: counted as errors of 0 the
    infinities bring the median, mean and 0.5 quantile under atol (both tools pass); without the flag
    Polygraphy fails any infinity and compare leaves them out of the statistic (still 1.5e-3): both
    fail."""
    a, b = _with_infinities(1.0)
    for equal in (True, False):
        criterion = Criterion(stat, 0.5, equal)
        ours = compare_arrays(a, b, 0.0, 1e-3, criterion)
        assert ours.passed == _polygraphy_passes(a, b, 1e-3, criterion) == equal, (stat, equal)
        assert ours.to_json()["infinities_equal"] is equal


def test_infinities_of_opposite_signs_fail_with_or_without_the_flag():
    a, b = _with_infinities(-1.0)
    for equal in (True, False):
        criterion = Criterion("median", infinities_equal=equal)
        assert not compare_arrays(a, b, 0.0, 1.0, criterion).passed
        assert not _polygraphy_passes(a, b, 1.0, criterion)


OUTPUTS = ("y1", "y2", "y3")


def _padding_model(path):
    """y1, y2, y3: x1, x2, x3 padded by copies of their edges (Pad is swapped: our kernel gives side B)."""
    pads = onnx.numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")
    graph = helper.make_graph(
        [
            helper.make_node("Pad", [f"x{i}", "pads"], [f"y{i}"], mode="edge", name=f"pad{i}")
            for i in (1, 2, 3)
        ],
        "pads",
        [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, N]) for i in (1, 2, 3)],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for y in OUTPUTS],
        [pads],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The model, its inputs (by Polygraphy's writer: values in [1, 2]; x3's first 600 +inf), the outputs
    ``polygraphy run --onnxrt`` computes from them (b.json) and those outputs off by errors (a.json, by
    Polygraphy's writer): y1's and y2's :data:`ERRORS`, y3's 1.5e-3 everywhere (its infinities stay)."""
    d = tmp_path_factory.mktemp("stats")
    _padding_model(d / "m.onnx")
    x3 = B.copy()
    x3[:600] = np.inf
    save_json([{"x1": B.reshape(1, N), "x2": B.reshape(1, N), "x3": x3.reshape(1, N)}], str(d / "i.json"))
    polygraphy("run", "m.onnx", "--onnxrt", "--load-inputs", "i.json", "--save-outputs", "b.json", cwd=d)
    ((_, (computed,)),) = RunResults.load(str(d / "b.json")).items()
    spread = np.pad(ERRORS, 1, mode="edge").reshape(1, N + 2)
    errors = {"y1": spread, "y2": spread, "y3": np.float32(1.5e-3)}
    loaded = RunResults()
    loaded.add([{y: computed[y] + errors[y] for y in OUTPUTS}], runner_name="other-runtime")
    loaded.save(str(d / "a.json"))
    return d


def _verdicts(files, *options: str) -> tuple[dict[str, bool], dict[str, bool]]:
    """Each output's pass or fail, by ``polygraphy run --load-outputs a.json b.json OPTIONS`` (its log) and
    by ``customops compare --load-outputs a.json OPTIONS`` (its report); both take a.json against the
    spec side B (Polygraphy divides by the second file's values, compare by its own side's)."""
    proc = polygraphy("run", "--load-outputs", "a.json", "b.json", *options, cwd=files, check=False)
    theirs = {
        m[1]: m[0] == "PASSED"
        for m in re.findall(r"(PASSED|FAILED) \| Output: '(\w+)'", proc.stdout + proc.stderr)
    }
    report = files / "r.json"
    args = ("--inputs", "i.json", "--load-outputs", "a.json", "--json", str(report), "-q", *options)
    ran = run_cli("compare", "m.onnx", *args, cwd=files)
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    ours = {o["name"]: o["metrics"]["pass"] for o in strict_json(report.read_text())["outputs"]}
    return theirs, ours


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--check-error-stat", "y1:max", "y2:median", "y3:median"), (False, True, False)),
        (("--check-error-stat", "median", "y1:max"), (False, True, False)),
        (("--check-error-stat", "quantile", "--error-quantile", "y1:0.9", "y2:0.25"), (False, True, False)),
        (
            ("--check-error-stat", "y2:quantile", "y1:mean", "y3:quantile", "--error-quantile", "0.5"),
            (True, True, False),
        ),
        (
            (
                "--check-error-stat",
                "y2:quantile",
                "y1:mean",
                "y3:quantile",
                "--error-quantile",
                "0.5",
                "--infinities-compare-equal",
            ),
            (True, True, True),
        ),
    ],
)
def test_per_tensor_statistics_decide_each_output_as_polygraphy_run_does(files, options, expected):
    """At atol 1e-3 and rtol 0: y1's and y2's errors run evenly from 0 to 1.5e-3 (the max and the 0.9
    quantile over atol; the median, the mean, the 0.5 and the 0.25 quantile under); y3 is off by 1.5e-3
    where finite, and most of it is +inf on both sides: Polygraphy fails it unless
    --infinities-compare-equal counts them as errors of 0, compare leaves them out of the statistic
    unless it does (then its median and 0.5 quantile are 0)."""
    theirs, ours = _verdicts(files, "--atol", "1e-3", "--rtol", "0", *options)
    assert theirs == ours == dict(zip(OUTPUTS, expected, strict=True))


def test_an_unknown_statistic_a_stray_quantile_and_a_misspelt_option_are_refused_in_one_line(capsys):
    model = DEVIATION
    for args, needle in (
        (["--check-error-stat", "p99"], "is not one of elemwise, max, mean, median, quantile"),
        (["--check-error-stat", "max", "--error-quantile", "0.5"], "has no effect: no tensor is decided"),
        (["--error-quantile", "output:0.5"], "has no effect: tensor 'output' is not decided by"),
        (["--check-error-stat", "quantile", "--error-quantile", "1.5"], "must be a number from 0 to 1"),
        (["--check-error-stat", "nosuch:max"], "'nosuch', which is neither a graph output"),
        (["--check-error-stat", "max", "--check-error-stat", "mean"], "given twice"),
    ):
        assert main(["compare", model, *args]) == 2
        assert needle in one_error_line(capsys), args
