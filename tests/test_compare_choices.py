"""compare's options that Polygraphy users reach for: --validate (NaN and inf in any compared tensor),
error statistics beside the maxima (JSON, text, HTML histogram), --nodes / --exclude, --fail-fast.
Every test runs real ORT sessions on models built here."""

from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import TensorProto, helper

import customops
import customops.eval.judging.metrics
from tests.helpers import run_cli, strict_json
from tests.test_compare import _chain

F32 = np.float32


def _nan_model() -> onnx.ModelProto:
    """x -> Pad(constant NaN) -> p -> Log -> y: the swapped Pad's output holds NaN on both sides, and y
    holds NaN (from p) and -inf (log of the zeros in x) on both sides."""
    nodes = [
        helper.make_node("Pad", ["x", "pads", "nan"], ["p"], name="pad", mode="constant"),
        helper.make_node("Log", ["p"], ["y"], name="log"),
    ]
    inits = [
        onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
        onnx.numpy_helper.from_array(np.array(np.nan, F32), "nan"),
    ]
    graph = helper.make_graph(
        nodes,
        "nan",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 5, 5])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def _save(tmp_path, model: onnx.ModelProto, name: str) -> str:
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def test_validate_fails_an_agreement_whose_tensors_hold_nan_or_inf_and_names_tensor_and_side(tmp_path):
    model = _save(tmp_path, _nan_model(), "nan.onnx")
    x = np.array([[[[0, 1, 2], [3, 4, 5], [6, 7, 8]]]], F32)
    np.savez(tmp_path / "x.npz", x=x)
    plain = run_cli("compare", model, "--inputs", str(tmp_path / "x.npz"), "--json", str(tmp_path / "a.json"))
    assert plain.returncode == 0, plain.stderr  # NaN and inf at the same places: the sides agree
    assert strict_json((tmp_path / "a.json").read_text())["validation"] is None
    args = (
        "compare",
        model,
        "--inputs",
        str(tmp_path / "x.npz"),
        "--validate",
        "--json",
        str(tmp_path / "b.json"),
    )
    checked = run_cli(*args)
    assert checked.returncode == 1, checked.stderr
    report = strict_json((tmp_path / "b.json").read_text())
    assert report["verdict"] == "invalid"
    found = {(v["tensor"], v["side"]): v for v in report["validation"]}
    assert set(found) == {(t, s) for t in ("y", "p") for s in ("builtin", "custom")}
    assert found["y", "custom"]["nan"] == 16 and found["y", "custom"]["neginf"] == 1
    assert found["p", "builtin"]["node"] == "pad" and found["p", "builtin"]["nan"] == 16
    first = checked.stdout.splitlines()[0]
    assert first.startswith(
        "INVALID (--validate): 'y' holds 16 NaN, 1 -inf on the built-in side (and 3 more)"
    )
    assert "  --validate: p (output of pad): 16 NaN on the custom side" in checked.stdout


def test_validate_through_the_api_finds_nothing_in_finite_tensors():
    report = customops.compare(_chain(), seed=3, dims={"N": 1}, validate=True, nodes=["pad"])
    assert report.validation == [] and report.verdict == "agree"
    assert [n.node for n in report.nodes] == ["pad"]  # only the chosen node was swapped


def test_fail_fast_stops_at_the_first_origin_with_statistics_and_a_histogram(tmp_path):
    model = _save(tmp_path, _chain(), "chain.onnx")
    out = run_cli(
        "compare", model, "--dim", "N=1", "--seed", "3", "--fail-fast",
        "--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"),
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    report = strict_json((tmp_path / "r.json").read_text())
    assert [n["node"] for n in report["nodes"]] == ["resize"]  # the Pad after it was not judged
    assert report["fail_fast"] == {
        "stopped_at": "resize",
        "op": "Resize-19",
        "not_judged": [{"node": "pad", "op": "Pad-19"}],
    }
    assert "node 2/2" not in out.stderr and "one swap at a time" not in out.stderr
    assert report["summary"].endswith("--fail-fast stopped at 'resize': 1 swapped node(s) not judged")
    assert "  --fail-fast: stopped at resize; not judged: pad [Pad-19]" in out.stdout
    # the error statistics beside the maxima, of the output and of the node alone
    y = report["outputs"][0]["metrics"]
    stats = y["error_stats"]
    assert 0 < stats["abs"]["median"] <= stats["abs"]["p99"] <= y["max_abs"]
    assert 0 < stats["abs"]["mean"] <= y["max_abs"] and stats["rel"]["p99"] <= y["max_rel"]
    alone = report["nodes"][0]["isolated"]["builtin_vs_custom"]["error_stats"]
    line = f"  y: |A-B| mean {stats['abs']['mean']:.3g}, median {stats['abs']['median']:.3g}, p99 {stats['abs']['p99']:.3g}"
    assert line in out.stdout and alone["abs"]["p99"] > 0
    # the HTML histograms of |A - B| (the output y, 1x1x6x6; the Resize, 1x1x4x4) count every element once
    page = (tmp_path / "r.html").read_text()
    svgs = re.findall(r"<svg .*?</svg>", page)
    sums = [sum(int(c) for c in re.findall(r"<title>[^<]*: (\d+)</title></rect>", svg)) for svg in svgs]
    assert sums == [36, 16] and page.count("|A − B| by decade") == 2


def test_error_statistics_are_the_numpy_figures_of_the_tensors():
    from customops.eval.judging.metrics import error_histogram

    a = np.arange(200, dtype=F32) / 10
    b = a + np.where(np.arange(200) % 4 == 0, F32(0.5), F32(0))
    m = customops.eval.judging.metrics.compare_arrays(a, b, 1e-5, 1e-5)
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    assert m.errors.abs == {"mean": diff.mean(), "median": np.median(diff), "p99": np.percentile(diff, 99)}
    rel = diff / np.maximum(np.abs(b.astype(np.float64)), 1e-5)
    assert m.errors.rel["p99"] == np.percentile(rel, 99)
    assert [c for _, _, c in error_histogram(a, b)] == [150, 50]


def test_nodes_and_exclude_choose_the_nodes_compare_swaps(tmp_path):
    report = customops.compare(_chain(), seed=3, dims={"N": 1}, exclude=["resize"])
    assert [n.node for n in report.nodes] == ["pad"] and report.verdict == "agree"
    model = _save(tmp_path, _chain(), "chain.onnx")
    for option in ("--nodes", "--exclude"):
        bad = run_cli("compare", model, "--dim", "N=1", option, "pad,ghost")
        assert bad.returncode == 2
        assert bad.stderr.strip().splitlines() == [
            "customops compare: error: no node named 'ghost' in the model (--nodes and --exclude take node "
            "names, or the first output of a node without a name)"
        ]


def test_fail_fast_stops_where_a_side_cannot_run_the_node_alone():
    """x (uint16) -> Resize -> Pad -> y: ORT has no uint16 Resize kernel, ours runs it."""
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"], name="resize", mode="linear"),
        helper.make_node("Pad", ["r", "pads"], ["y"], name="pad", mode="edge"),
    ]
    inits = [
        onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales"),
        onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    graph = helper.make_graph(
        nodes,
        "u16",
        [helper.make_tensor_value_info("x", TensorProto.UINT16, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.UINT16, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = {"x": np.array([[[[0, 100], [200, 300]]]], np.uint16)}
    full = customops.compare(model, x)
    assert [n.node for n in full.nodes] == ["resize", "pad"] and full.nodes[0].verdict == "side-failed"
    assert full.stopped is None
    report = customops.compare(model, x, fail_fast=True)
    assert [(n.node, n.attribution) for n in report.nodes] == [("resize", "builtin-cannot-run")]
    assert report.stopped is not None and report.stopped.not_judged == [{"node": "pad", "op": "Pad-19"}]
