"""compare's exit status follows docs/compare.md's rule: 1 where a graph output differs beyond tolerance,
or a swapped node run alone differs beyond tolerance (or a side fails on it); values that differ inside
the model only, carried in from upstream while every kernel agrees alone or within rounding, are reported
and do not make it 1. Each model here reproduces a class of real exports that broke the rule (HRNet: ORT's
optimizer; SSDlite and RetinaNet: downstream of a Resize within rounding; RAFT: a difference within
tolerance grown downstream). Real ORT sessions."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.comparison.pipeline import compare_model
from customops.comparison.results import NodeResult
from tests.helpers import run_cli, sides_differ_at_level_all, strict_json
from tests.test_compare_carried import CHANNELS, SIZE
from tests.test_compare_carried import _model as layout_model
from tests.test_yardstick import _roi_align_model

F32 = np.float32


def _thresholded(graph: onnx.GraphProto, value: str, opset: int) -> onnx.ModelProto:
    """``graph`` whose outputs are replaced by one: ``value`` > 1e9, a bool the same on both sides (a
    detector's score threshold, where a small difference of the scores changes no box)."""
    graph.initializer.append(numpy_helper.from_array(np.array(1e9, F32), "threshold"))
    graph.node.append(helper.make_node("Greater", [value, "threshold"], ["kept"], name="keep"))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("kept", TensorProto.BOOL, None))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _padded(graph: onnx.GraphProto, value: str) -> str:
    """A Pad node 'pad' (a copy: both kernels give the same bits alone) appended to ``graph`` after
    ``value``; returns its output."""
    graph.initializer.append(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"))
    graph.node.append(helper.make_node("Pad", [value, "pads"], ["padded"], name="pad"))
    return "padded"


def _nodes(report) -> dict[str, NodeResult]:
    return {n.node: n for n in report.nodes}


def test_downstream_of_a_node_within_rounding_carried_values_do_not_make_a_disagreement():
    # SSDlite / RetinaNet: RoiAlign differs alone within rounding (ORT sums in float32); the Pad after it
    # copies that difference inside the model, beyond tolerance, and agrees alone; the output is equal
    model, feed, _ = _roi_align_model(sampling_ratio=2)
    model.graph.node[0].output[0] = "pooled"
    model = _thresholded(model.graph, _padded(model.graph, "pooled"), 16)
    comparison = compare_model(model, feed)
    report, nodes = comparison.report, _nodes(comparison.report)
    assert nodes["roi"].verdict == "within-rounding"
    pad = nodes["pad"]
    assert pad.verdict == "disagree" and pad.origin == "carried-in" and pad.attribution == "agree"
    assert pad.carried_from == "swapped-nodes" and not pad.breaks_agreement
    assert report.verdict == "agree" and comparison.exit_status == 0, report.summary
    assert report.summary.startswith("AGREE: 1 output(s) and 1 swapped node(s) match")
    assert "'pad' [Pad-13] differs inside the model only" in report.summary
    assert "within-rounding" in report.summary and "leaves-spec" not in report.summary


def test_a_difference_within_tolerance_grown_downstream_does_not_make_a_disagreement():
    # RAFT: AffineGrid's two kernels differ alone by an ulp (within tolerance); ORT's nodes after it
    # cancel and scale that past the tolerance, and the Pad that copies it differs inside the model only
    rng = np.random.default_rng(3)
    theta = rng.uniform(-1, 1, (1, 2, 3)).astype(F32)
    graph = helper.make_graph(
        [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine")],
        "raft",
        [helper.make_tensor_value_info("theta", TensorProto.FLOAT, [1, 2, 3])],
        [],
        [numpy_helper.from_array(np.array([1, 2, 16, 16], np.int64), "size")],
    )
    ours = compare_model(
        helper.make_model(
            helper.make_graph(
                graph.node,
                "g",
                graph.input,
                [helper.make_tensor_value_info("grid", 1, None)],
                graph.initializer,
            ),
            opset_imports=[helper.make_opsetid("", 20)],
        ),
        {"theta": theta},
    ).tensors["grid"][1]  # our grid: the cancellation leaves ORT's ulp differences alone
    graph.initializer.extend(
        [numpy_helper.from_array(ours, "ours"), numpy_helper.from_array(np.array(1e3, F32), "gain")]
    )
    graph.node.extend(
        [
            helper.make_node("Sub", ["grid", "ours"], ["residual"], name="cancel"),
            helper.make_node("Mul", ["residual", "gain"], ["scaled"], name="gain"),
        ]
    )
    model = _thresholded(graph, _padded(graph, "scaled"), 20)
    comparison = compare_model(model, {"theta": theta})
    report, nodes = comparison.report, _nodes(comparison.report)
    affine = nodes["affine"]
    assert affine.attribution == "agree" and affine.in_model.max_abs > 0  # the premise: an ulp apart
    pad = nodes["pad"]
    assert pad.verdict == "disagree" and pad.origin == "carried-in" and pad.carried_from == "swapped-nodes"
    assert report.verdict == "agree" and comparison.exit_status == 0, report.summary
    assert "'pad' [Pad-19] differs inside the model only" in report.summary
    assert "grows from swapped nodes upstream" in report.summary


@pytest.fixture(scope="module")
def ort_layout_model() -> onnx.ModelProto:
    """tests.test_compare_carried's chain (ORT's NCHWc layout around our opaque Resize makes 'pool' differ
    by a few ulp at level all) with 'up2' feeding a Relu, the graph output: 'up2' copies the difference."""
    model = layout_model(far_grid=False)
    up2 = next(n for n in model.graph.node if n.name == "up2")
    up2.output[0] = "up2_out"
    model.graph.node.append(helper.make_node("Relu", ["up2_out"], ["y"], name="relu"))
    feed = {"x": np.random.default_rng(1).standard_normal((1, CHANNELS, SIZE, SIZE)).astype(F32)}
    if not sides_differ_at_level_all(model, feed):
        pytest.skip(
            "ORT's optimizer makes no difference between the sides here (NCHWc needs AVX2 or AVX-512)"
        )
    return model


def test_values_ort_s_optimizer_makes_differ_are_rerun_though_every_output_passes(ort_layout_model, tmp_path):
    # HRNet: the graph output passes, 'up2' differs inside the model at its (strict) tolerance, carried
    # in from ORT's own nodes: the values are rerun at the lower levels, and the verdict is an agreement
    path = tmp_path / "m.onnx"
    onnx.save(ort_layout_model, path)
    proc = run_cli(
        "compare", str(path), "--rtol", "up2_out:0", "--atol", "up2_out:0", "--json", str(tmp_path / "r.json")
    )
    report = strict_json((tmp_path / "r.json").read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["verdict"] == "agree" and report["outputs"][0]["verdict"] == "agree"
    up2 = next(n for n in report["nodes"] if n["node"] == "up2")
    assert up2["verdict"] == "disagree" and up2["carried_from"] == "ort-nodes"
    carried = report["carried_in"]
    assert [r["level"] for r in carried["reruns"]] == ["basic"] and carried["vanishes_at"] == "basic"
    summary = report["summary"]
    assert summary.startswith("AGREE: 1 output(s) and 1 swapped node(s) match; 'up2' [Resize-19] differs")
    assert "at --graph-optimization-level basic they match bit for bit" in summary
    assert proc.stdout.strip().splitlines()[-1] == summary


def test_an_output_beyond_tolerance_still_makes_a_disagreement(ort_layout_model):
    # the same carried-in difference reaching a graph output whose tolerance is zero: exit 1
    feed = {"x": np.random.default_rng(1).standard_normal((1, CHANNELS, SIZE, SIZE)).astype(F32)}
    comparison = compare_model(ort_layout_model, feed, rtol=0.0, atol=0.0)
    assert comparison.report.verdict == "disagree" and comparison.exit_status == 1
    assert comparison.report.summary.startswith("DISAGREE: 1 node(s), 1 output(s) differ")


@pytest.mark.parametrize(
    ("verdict", "origin", "breaks"),
    [
        ("disagree", "starts-here", True),
        ("disagree", "carried-in", False),
        ("disagree", "unknown", True),  # never run alone: nothing shows the difference is carried in
        ("side-failed", "starts-here", True),
        ("side-failed", "unknown", True),
        ("within-rounding", "rounding", False),
        ("agree", "starts-here", False),  # both-cannot-run: the two sides agree
        ("agree", "none", False),
    ],
)
def test_which_node_results_break_an_agreement(verdict, origin, breaks):
    node = NodeResult("n", "Pad-19", "y", "main", None, {}, "builtin", origin=origin, verdict=verdict)
    assert node.breaks_agreement is breaks
