"""compare and ONNX Runtime's graph optimizer: ``--graph-optimization-level`` reaches every ORT session of
both sides, and a difference that ORT's optimizations around a swapped node make (no kernel differs) is
named as the optimizer's, with the level at which it vanishes, never blamed on a kernel; no tolerance is
ever suggested as inf. Real ORT sessions throughout (customops.comparison.optimizer)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import customops
from customops.errors import CustomOpsError
from tests.helpers import one_node_model, run_cli, sides_differ_at_level_all, strict_json

F32 = np.float32
CHANNELS, SIZE = 16, 8


def _layout_model() -> onnx.ModelProto:
    """A nearest x2 Resize (ours and ORT's agree exactly on it), a 3x3 Conv and a GlobalAveragePool.

    At ORT's default level (all) the built-in model runs Conv and GlobalAveragePool in ORT's blocked
    NCHWc layout. In the rewritten model our Resize is opaque to ORT (it cannot tell the shape of its
    output), and the GlobalAveragePool after the Conv stays in NCHW: its sum of 256 values runs in another
    order, and the outputs differ by a few ulp although no kernel differs. At basic neither model changes
    layout and the two give the same bits."""
    rng = np.random.default_rng(0)
    weights = (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) / np.sqrt(CHANNELS * 9)).astype(F32)
    inits = [
        numpy_helper.from_array(weights, "w"),
        numpy_helper.from_array(rng.standard_normal(CHANNELS).astype(F32), "b"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales"),
    ]
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["up"], name="up", mode="nearest"),
        helper.make_node("Conv", ["up", "w", "b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["conv"], ["y"], name="pool"),
    ]
    graph = helper.make_graph(
        nodes,
        "layout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, SIZE, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.fixture(scope="module")
def layout_differs() -> None:
    """The premise of the tests that take it: at level all the two sides give other bits for this model
    on this machine (tests.helpers.sides_differ_at_level_all); else they are skipped, saying why."""
    feed = {"x": np.random.default_rng(1).standard_normal((1, CHANNELS, SIZE, SIZE)).astype(F32)}
    if not sides_differ_at_level_all(_layout_model(), feed):
        pytest.skip(
            "ORT's optimizer makes no difference between the sides here (NCHWc needs AVX2 or AVX-512)"
        )


@pytest.fixture(scope="module")
def layout_model(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("optimizer") / "layout.onnx"
    onnx.save(_layout_model(), path)
    return str(path)


def _compare(model: str, tmp_path, *extra: str) -> tuple[int, str, dict]:
    proc = run_cli("compare", model, "--json", str(tmp_path / "r.json"), *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, proc.stdout, strict_json((tmp_path / "r.json").read_text())


def test_the_level_reaches_both_sides_at_basic_they_give_the_same_bits(layout_model, tmp_path):
    """At basic both sessions skip the layout change, and with zero tolerances the two sides agree: only
    if the level reaches both sides (either side left at all gives other bits than the other at basic)."""
    status, out, report = _compare(
        layout_model, tmp_path, "--graph-optimization-level", "basic", "--rtol", "0"
    )
    assert status == 0 and report["verdict"] == "agree", out
    assert report["outputs"][0]["metrics"]["max_abs"] == 0.0
    assert report["graph_optimization"] == {"level": "basic", "reruns": [], "vanishes_at": None}
    assert "ORT graph optimization level: basic" in out


def test_a_difference_the_optimizer_makes_is_named_with_its_level_and_no_kernel_is_blamed(
    layout_model, tmp_path, layout_differs
):
    status, out, report = _compare(layout_model, tmp_path, "--rtol", "0", "--atol", "0")
    assert status == 1, out  # zero tolerances do not allow the outputs at the level asked (all)
    assert report["verdict"] == "disagree" and report["outputs"][0]["verdict"] == "disagree"
    summary = report["summary"]
    assert "ORT's graph optimizations (level all)" in summary and "not from a kernel" in summary
    assert "--graph-optimization-level basic the outputs match bit for bit" in summary
    # no kernel is blamed: the Resize agrees alone, nothing is searched for nor said to be amplified
    (node,) = report["nodes"]
    assert node["origin"] != "starts-here" and node["attribution"] == "agree"
    assert report["amplified"] == [] and "'up'" not in summary and "amplified" not in summary
    optimization = report["graph_optimization"]
    assert optimization["level"] == "all" and optimization["vanishes_at"] == "basic"
    (rerun,) = optimization["reruns"]
    assert rerun["level"] == "basic" and rerun["passes"] and rerun["identical"] and rerun["error"] is None
    assert rerun["max_abs"] == {"y": 0.0}
    assert "graph optimization" in report["phase_seconds"]
    assert out.startswith(summary) and "rerun at level basic: the outputs match bit for bit" in out
    assert "inf" not in out.replace("info", "")


@pytest.mark.parametrize(("atol", "verdict"), [(0.0, "disagree"), (1e-5, "agree")])
def test_the_exit_status_follows_the_tolerances_at_the_level_asked(atol, verdict, layout_differs):
    """The API, at the level asked explicitly: zero tolerances fail the outputs (the optimizer is named,
    and the verdict stays a disagreement); a tolerance the few ulp fit in passes them, with no rerun."""
    report = customops.compare(_layout_model(), rtol=0.0, atol=atol, graph_optimization_level="all")
    assert report.verdict == verdict, report.summary
    reruns = report.graph_optimization.reruns
    if verdict == "agree":
        assert reruns == [] and report.summary.startswith("AGREE")
    else:
        assert [r.level for r in reruns] == ["basic"] and report.graph_optimization.vanishes_at == "basic"
        assert "graph optimizations" in report.summary


def test_an_unknown_level_is_bad_input_naming_the_levels(tmp_path, layout_model):
    proc = run_cli("compare", layout_model, "--graph-optimization-level", "fast")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert all(level in lines[0] for level in ("'disable'", "'basic'", "'extended'", "'all'")), lines[0]
    with pytest.raises(
        CustomOpsError, match="--graph-optimization-level 'fast' is not one of disable, basic"
    ):
        customops.compare(_layout_model(), graph_optimization_level="fast")


def test_no_tolerance_is_suggested_as_inf(tmp_path):
    """ORT's AffineGrid with align_corners=1 and a spatial size of 1 (AG-ALIGN-CORNERS-SIZE-1) gives +1
    where the spec, and ours, give 0: no rtol lets that pass at atol 0 (the relative error divides by our
    side's 0, so the rtol it would need is infinite). The text report says so in words and suggests only
    the finite atol; the HTML report's 'needed' cell says none is."""
    model, feed = one_node_model(
        "AffineGrid",
        {"theta": np.array([[[1, 0, 0], [0, 1, 0]]], F32), "size": np.array([1, 1, 1, 3], np.int64)},
        20,
        initializers=("size",),
        out_rank=4,
        align_corners=1,
    )
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feed)
    proc = run_cli(
        "compare",
        str(tmp_path / "m.onnx"),
        "--inputs",
        str(tmp_path / "in.npz"),
        "--rtol",
        "0",
        "--atol",
        "0",
        "--html",
        str(tmp_path / "r.html"),
    )
    assert proc.returncode == 1, proc.stderr
    needed = [line for line in proc.stdout.splitlines() if "passes at" in line or "no --rtol" in line]
    assert needed and not any("inf" in line for line in needed), needed
    assert any("--atol" in line and "no --rtol does at atol 0" in line for line in needed), needed
    html = (tmp_path / "r.html").read_text()
    assert "none finite" in html and " / inf<" not in html
