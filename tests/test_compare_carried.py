"""compare on a swapped node whose inputs already differ between the sides while no swapped node
upstream makes a difference of its own: ORT's own nodes made that difference (customops.comparison.carried). The node's
in-context figures say so, the verdict line says so, and those values are rerun at lower graph
optimization levels to name the level at which they match. Real ORT sessions on a model built here."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import run_cli, sides_differ_at_level_all, strict_json

F32 = np.float32
CHANNELS, SIZE = 16, 8


def _model(far_grid: bool) -> onnx.ModelProto:
    """x -> nearest x2 Resize 'up' (ours and ORT's give the same bits) -> Conv -> GlobalAveragePool
    'pool' -> nearest x2 Resize 'up2' -> y. At ORT's default level the built-in model runs Conv and the
    pool in ORT's NCHWc layout; our 'up' is opaque to ORT, so in the rewritten model the pool sums its
    256 values in another order: 'pool' differs by a few ulp, and 'up2', which agrees alone, carries
    that in from ORT's own nodes. With ``far_grid`` a GridSample beside it (G-GRID-FAR-OR-NAN: ORT's
    border padding of a location far outside) starts a difference of its own."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) / np.sqrt(CHANNELS * 9)).astype(F32)
    inits = [
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(rng.standard_normal(CHANNELS).astype(F32), "b"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales"),
    ]
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["up"], name="up", mode="nearest"),
        helper.make_node("Conv", ["up", "w", "b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["conv"], ["pool"], name="pool"),
        helper.make_node("Resize", ["pool", "", "scales"], ["y"], name="up2", mode="nearest"),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if far_grid:
        inits.append(numpy_helper.from_array(np.arange(16, dtype=F32).reshape(1, 1, 4, 4), "img"))
        inits.append(numpy_helper.from_array(np.array([[[[1e8, 0.0]]]], F32), "grid"))
        nodes.append(
            helper.make_node("GridSample", ["img", "grid"], ["g"], name="far", padding_mode="border")
        )
        outputs.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, None))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, SIZE, SIZE])
    graph = helper.make_graph(nodes, "carried", [x], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@pytest.fixture(scope="module")
def layout_differs() -> None:
    """The premise of the tests that take it: at level all the two sides give other bits for this model
    on this machine (tests.helpers.sides_differ_at_level_all); else they are skipped, saying why."""
    feed = {"x": np.random.default_rng(1).standard_normal((1, CHANNELS, SIZE, SIZE)).astype(F32)}
    if not sides_differ_at_level_all(_model(far_grid=False), feed):
        pytest.skip(
            "ORT's optimizer makes no difference between the sides here (NCHWc needs AVX2 or AVX-512)"
        )


def _compare(tmp_path, far_grid: bool) -> tuple[int, str, dict]:
    path = tmp_path / "m.onnx"
    onnx.save(_model(far_grid), path)
    proc = run_cli(
        "compare", str(path), "--rtol", "0", "--atol", "0", "--all-rows", "--json", str(tmp_path / "r.json")
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, proc.stdout, strict_json((tmp_path / "r.json").read_text())


def _nodes(report: dict) -> dict[str, dict]:
    return {n["node"]: n for n in report["nodes"]}


def test_inputs_made_differ_by_ort_nodes_are_said_so_and_rerun_where_a_kernel_explains_the_rest(
    tmp_path, layout_differs
):
    status, out, report = _compare(tmp_path, far_grid=True)
    assert status == 1, out  # 'far' starts a difference, and the tolerances are zero
    nodes = _nodes(report)
    up2 = nodes["up2"]
    assert up2["attribution"] == "agree" and up2["origin"] == "carried-in" and up2["verdict"] == "disagree"
    assert up2["carried_from"] == "ort-nodes"
    assert nodes["up"]["carried_from"] is None and nodes["far"]["carried_from"] is None
    carried = report["carried_in"]
    assert carried["nodes"] == ["up2"] and carried["values"] == ["pool"]
    (rerun,) = carried["reruns"]  # at basic neither model changes layout: the same bits
    assert rerun["level"] == "basic" and rerun["identical"] and carried["vanishes_at"] == "basic"
    summary = report["summary"]
    assert summary.startswith("DISAGREE") and "first difference starts at 'far'" in summary
    assert "the inputs of 'up2' [Resize-19] already differ, carried in from ORT's own nodes" in summary
    assert "at --graph-optimization-level basic they match bit for bit" in summary
    assert "(in context; carried in from ORT's own nodes)" in out
    assert "those inputs rerun at level basic: they match bit for bit" in out


def test_where_no_kernel_explains_the_outputs_the_graph_outputs_rerun_says_it_once(tmp_path, layout_differs):
    status, out, report = _compare(tmp_path, far_grid=False)
    assert status == 1, out
    assert _nodes(report)["up2"]["carried_from"] == "ort-nodes"
    assert report["carried_in"]["nodes"] == ["up2"] and report["carried_in"]["reruns"] == []
    assert report["graph_optimization"]["vanishes_at"] == "basic"  # the outputs' rerun, made anyway
    assert "carried in from ORT's own nodes" in report["summary"] and "not from a kernel" in report["summary"]


def test_a_node_downstream_of_a_node_that_differs_alone_is_not_said_to_be_ort_s(tmp_path):
    # the same chain with 'far' feeding 'up2' through an Add: a swapped node upstream differs alone
    model = _model(far_grid=True)
    add = helper.make_node("Add", ["pool", "g"], ["mixed"], name="mix")
    model.graph.node.insert(len(model.graph.node), add)
    up2 = next(n for n in model.graph.node if n.name == "up2")
    model.graph.node.remove(up2)
    up2.input[0] = "mixed"
    model.graph.node.append(up2)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    proc = run_cli("compare", str(path), "--rtol", "0", "--atol", "0", "--json", str(tmp_path / "r.json"))
    report = strict_json((tmp_path / "r.json").read_text())
    assert proc.returncode == 1, proc.stdout
    assert _nodes(report)["up2"]["carried_from"] == "swapped-nodes"
    assert report["carried_in"] is None and "ORT's own nodes" not in report["summary"]


def test_a_node_fed_by_a_swapped_node_that_differs_alone_within_tolerance_is_not_said_to_be_ort_s(tmp_path):
    # AffineGrid -> GridSample: ORT's AffineGrid and ours differ by a few ulp alone (within tolerance, so
    # the node agrees), and that is what reaches GridSample's grid: a difference of ours, not ORT's
    rng = np.random.default_rng(3)
    theta = numpy_helper.from_array(rng.uniform(-1, 1, (1, 2, 3)).astype(F32), "theta")
    size = numpy_helper.from_array(np.array([1, 2, 16, 16], np.int64), "size")
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine"),
        helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "stn", [x], [y], [theta, size])
    path = tmp_path / "stn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)
    proc = run_cli("compare", str(path), "--json", str(tmp_path / "r.json"))
    report = strict_json((tmp_path / "r.json").read_text())
    assert proc.returncode in (0, 1), proc.stderr
    affine = _nodes(report)["affine"]
    assert affine["attribution"] == "agree"  # within tolerance alone: it starts nothing
    assert affine["in_model"]["max_abs"] > 0  # the test needs ORT's grid to differ from ours
    assert _nodes(report)["sample"]["carried_from"] == "swapped-nodes"
    assert report["carried_in"] is None and "ORT's own nodes" not in report["summary"]


def _branch(name: str, node: onnx.NodeProto, out: str) -> onnx.GraphProto:
    return helper.make_graph([node], name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def test_a_subgraph_holding_no_swapped_node_passes_no_difference_of_ours_on(tmp_path, layout_differs):
    # 'pool' reaches 'up2' through an If whose branches hold no swapped node, while another If holds a
    # swapped Resize (compared through the graph outputs only): only that one may hide a difference of ours
    model = _model(far_grid=False)
    up2 = next(n for n in model.graph.node if n.name == "up2")
    model.graph.node.remove(up2)
    up2.input[0] = "routed"
    model.graph.initializer.append(numpy_helper.from_array(np.array(True), "cond"))
    same = _branch("same", helper.make_node("Identity", ["pool"], ["same_out"]), "same_out")
    model.graph.node.append(
        helper.make_node("If", ["cond"], ["routed"], name="route", then_branch=same, else_branch=same)
    )
    model.graph.node.append(up2)
    inner = helper.make_node("Resize", ["x", "", "scales"], ["inner_up"], name="inner_up", mode="nearest")
    held = _branch("held", inner, "inner_up")
    model.graph.node.append(
        helper.make_node("If", ["cond"], ["z"], name="holds", then_branch=held, else_branch=held)
    )
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    proc = run_cli("compare", str(path), "--rtol", "0", "--atol", "0", "--json", str(tmp_path / "r.json"))
    report = strict_json((tmp_path / "r.json").read_text())
    assert proc.returncode == 1, proc.stdout
    assert {n["node"] for n in report["inner_nodes"]} == {"inner_up"}  # in both branches
    assert _nodes(report)["up2"]["carried_from"] == "ort-nodes", report["summary"]
