"""compare's safety net: who is blamed for a difference, for every outcome of the
three votes; a deliberately wrong custom kernel is blamed on us, end to end, and its reproducer holds the
reference's answer; node verdicts count in the overall verdict even when a difference is masked
downstream; the isolated node is fed the built-in side's own upstream values (the custom side's when the
built-in side cannot run the model); nodes inside If/Loop bodies and model-local functions are listed as
inner nodes and compared through the graph outputs.

The wrong custom kernel reaches the custom side's child process (customops.eval.running.sides) through a
``sitecustomize.py`` on PYTHONPATH (tests.helpers.wrong_kernel_dir): an in-process monkeypatch would not.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.comparison.inputs import generate_inputs
from customops.comparison.isolate import Isolated, attribute
from customops.comparison.pipeline import compare_model
from tests.helpers import (
    one_node_model,
    run_builtin,
    run_cli,
    strict_json,
)

F32 = np.float32
MODELS = Path(__file__).resolve().parent.parent / "customops" / "examples"

# ---------------------------------------------------------------------------------------------------------
# attribute(): every (built-in, custom, reference) outcome

V0 = np.array([1.0, 2.0, 3.0, 4.0], F32)
VALUES = {
    "v0": V0,  # the value every agreeing side gives
    "v0~": V0 * F32(1 + 2e-7),  # ok and agreeing with v0 within the float32 tolerance, not bitwise
    "v1": V0 + F32(0.5),  # ok and differing from v0
    "v2": V0 - F32(0.5),  # ok and differing from v0 and v1
    "short": V0[:3],  # ok, and differing from every other value in shape
    "v0-": V0 * F32(1 - 8e-6),  # within tolerance of v0, not of v0+ (agreement is not transitive)
    "v0+": V0 * F32(1 + 8e-6),
}
NEAR = {"v0", "v0~", "v0-", "v0+"}


def _agree(x: str, y: str) -> bool:
    return x == y or ({x, y} <= NEAR and {x, y} != {"v0-", "v0+"})


FAILURES = {
    "error": "Resize: deliberately failed",
    "not-run": "not run: the inputs have 4 elements, over the reference limit 0",
}

# (built-in, custom, reference) -> attribution, for every outcome in which both kernels ran
BOTH_RAN = [
    ("v0", "v0", "v0", "agree"),
    ("v0", "v0", "v0~", "agree"),
    ("v0", "v0~", "v0", "agree"),
    ("v0", "v0", "v1", "reference-odd-one-out"),
    ("v0", "v0~", "v1", "reference-odd-one-out"),
    ("v0", "v0", "short", "reference-odd-one-out"),
    ("v0", "v0", "error", "agree"),
    ("v0", "v0", "not-run", "agree"),
    ("v0", "v1", "v1", "builtin-leaves-spec"),
    ("v0", "short", "short", "builtin-leaves-spec"),
    ("v0", "v1", "v0", "custom-leaves-spec"),
    ("v0", "v1", "v0~", "custom-leaves-spec"),
    ("v0", "short", "v0", "custom-leaves-spec"),
    ("v0", "v1", "v2", "three-way"),
    ("v0", "v1", "short", "three-way"),
    ("v0", "v1", "error", "no-third-vote"),
    ("v0", "v1", "not-run", "no-third-vote"),
    ("v0", "short", "not-run", "no-third-vote"),
    ("v0-", "v0+", "v0", "undecided"),
]

# every outcome in which a kernel did not run: that side is blamed, whatever the others say
ANY_REFERENCE = ["v0", "v1", "error", "not-run"]
A_SIDE_FAILED = (
    [(b, c, r, "both-cannot-run") for b in FAILURES for c in FAILURES for r in ANY_REFERENCE]
    + [(b, c, r, "builtin-cannot-run") for b in FAILURES for c in ("v0", "v1") for r in ANY_REFERENCE]
    + [(b, c, r, "custom-cannot-run") for b in ("v0", "v1") for c in FAILURES for r in ANY_REFERENCE]
)


def _isolated(builtin: str, custom: str, reference: str) -> Isolated:
    outputs = {}
    errors = {}
    for side, outcome in (("builtin", builtin), ("custom", custom), ("reference", reference)):
        outputs[side] = VALUES[outcome].copy() if outcome in VALUES else None
        errors[side] = FAILURES.get(outcome)
    return Isolated(onnx.ModelProto(), {}, outputs, errors)


@pytest.mark.parametrize(("builtin", "custom", "reference", "expected"), BOTH_RAN + A_SIDE_FAILED)
def test_attribution_of_every_outcome_of_the_three_votes(builtin, custom, reference, expected):
    attribution, pairs = attribute(_isolated(builtin, custom, reference), None, None)
    assert attribution == expected
    # a pair is measured exactly when both of its sides gave a value, and passes when they agree
    for pair, (x, y) in {
        "builtin_vs_custom": (builtin, custom),
        "builtin_vs_reference": (builtin, reference),
        "custom_vs_reference": (custom, reference),
    }.items():
        if x in VALUES and y in VALUES:
            assert pairs[pair].passed == _agree(x, y), pair
        else:
            assert pairs[pair] is None, pair


def test_all_four_outcomes_of_each_vote_are_in_the_table():
    rows = BOTH_RAN + A_SIDE_FAILED
    outcomes = {"agreeing": {"v0", "v0~"}, "differing": {"v1", "v2", "short"}, "error": {"error"}}
    outcomes["not-run"] = {"not-run"}
    for position in range(3):
        seen = {row[position] for row in rows}
        for kind, members in outcomes.items():
            assert seen & members, (position, kind)
    assert {row[3] for row in rows} == {
        "agree",
        "reference-odd-one-out",
        "builtin-leaves-spec",
        "custom-leaves-spec",
        "three-way",
        "no-third-vote",
        "undecided",
        "builtin-cannot-run",
        "custom-cannot-run",
        "both-cannot-run",
    }


def test_attribution_follows_the_given_tolerances():
    iso = _isolated("v0", "v1", "v0")
    assert attribute(iso, 0.0, 0.0)[0] == "custom-leaves-spec"
    assert attribute(iso, 0.0, 0.5)[0] == "agree"  # |v1 - v0| = 0.5 <= atol
    assert attribute(_isolated("v0", "v0~", "v0"), 0.0, 0.0)[0] == "custom-leaves-spec"


# ---------------------------------------------------------------------------------------------------------
# a deliberately wrong custom kernel, end to end


def _pb(path: Path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def _edge_pad_model(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    x = np.arange(12, dtype=F32).reshape(1, 1, 3, 4) / F32(4)
    model, feed = one_node_model(
        "Pad",
        {"data": x, "pads": np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64)},
        19,
        initializers=("pads",),
        mode="edge",
    )
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feed)
    spec = np.pad(x, [(0, 0), (0, 0), (1, 0), (2, 1)], mode="edge")
    return tmp_path / "m.onnx", tmp_path / "in.npz", x, spec


def _compare_saving(model: Path, inputs: Path, report: Path, repro: Path) -> subprocess.CompletedProcess:
    """``customops compare MODEL --inputs INPUTS --json REPORT --save-repro REPRO``."""
    args = ("--inputs", str(inputs), "--json", str(report), "--save-repro", str(repro))
    return run_cli("compare", str(model), *args)


def test_wrong_custom_kernel_is_blamed_on_us_and_its_reproducer_holds_the_reference_answer(
    tmp_path, wrong_kernel
):
    path, inputs, _, spec = _edge_pad_model(tmp_path)
    wrong_kernel("pad:add1")
    repro = tmp_path / "repro"
    proc = _compare_saving(path, inputs, tmp_path / "r.json", repro)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("DISAGREE"), proc.stdout
    report = strict_json((tmp_path / "r.json").read_text())
    (node,) = report["nodes"]
    assert node["attribution"] == "custom-leaves-spec", node
    assert node["origin"] == "starts-here" and node["verdict"] == "disagree"
    assert report["verdict"] == "disagree"
    assert node["isolated"]["builtin_vs_reference"]["pass"] is True
    assert node["isolated"]["custom_vs_reference"]["pass"] is False
    # the reproducer's expected output is the spec answer (the reference's and the built-in kernel's)
    case = repro / "Pad_node"
    expected = _pb(case / "test_data_set_0" / "output_0.pb")
    assert expected.dtype == spec.dtype and expected.shape == spec.shape
    np.testing.assert_array_equal(expected, spec)
    assert "reference side's output" in (case / "README.txt").read_text()


def test_wrong_custom_kernel_alone_against_the_known_builtin_deviation_is_three_way(wrong_kernel):
    # ORT's align_corners downsampling leaves the spec (R-ALIGN-CORNERS-INT-LENGTH) and ours adds 1
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], F32)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 0.6, 0.6], F32)},
        19,
        initializers=("scales",),
        mode="linear",
        coordinate_transformation_mode="align_corners",
    )
    wrong_kernel("resize:add1")
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    assert node.attribution == "three-way" and node.verdict == "disagree"
    assert comparison.exit_status == 1
    iso = comparison.isolated[node.node]
    np.testing.assert_allclose(iso.outputs["reference"], [[[[1, 3.142857]]]], rtol=1e-6)
    np.testing.assert_allclose(iso.outputs["custom"], [[[[2, 4.142857]]]], rtol=1e-6)


def test_failing_custom_kernel_is_custom_cannot_run_and_the_reproducer_holds_the_reference_answer(
    tmp_path, wrong_kernel
):
    path, inputs, _, spec = _edge_pad_model(tmp_path)
    wrong_kernel("pad:raise")
    repro = tmp_path / "repro"
    proc = _compare_saving(path, inputs, tmp_path / "r.json", repro)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        proc.stdout.strip().splitlines()[-1].startswith("FAILED: the model does not run on the custom side")
    )
    report = strict_json((tmp_path / "r.json").read_text())
    (node,) = report["nodes"]
    assert node["attribution"] == "custom-cannot-run" and node["verdict"] == "side-failed", node
    assert "deliberately wrong" in node["isolated"]["errors"]["custom"]
    assert report["sides"]["custom"]["ok"] is False and report["sides"]["builtin"]["ok"] is True
    np.testing.assert_array_equal(_pb(repro / "Pad_node" / "test_data_set_0" / "output_0.pb"), spec)


def test_without_a_third_vote_the_yardstick_names_the_side_beyond_its_bound(tmp_path):
    # linear Resize rounds: ORT's value is beyond its rounding bound of the float64 formula, ours within
    proc = run_cli(
        "compare",
        str(MODELS / "ort_deviation.onnx"),
        "--reference-limit",
        "0",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert proc.returncode == 1, proc.stderr
    report = strict_json((tmp_path / "r.json").read_text())
    (node,) = report["nodes"]
    assert node["attribution"] == "builtin-leaves-spec" and node["verdict"] == "disagree"
    assert node["isolated"]["errors"]["reference"].startswith("not run")
    assert node["isolated"]["yardstick"]["within"] == {"builtin": False, "custom": True, "reference": None}
    assert report["summary"].endswith("builtin-leaves-spec (known: R-ALIGN-CORNERS-INT-LENGTH)")


def test_no_third_vote_on_a_node_without_rounding_is_not_blamed_on_either_side(wrong_kernel):
    # nearest Resize copies pixels: no yardstick; ours adds 1, and with no reference run nobody is outvoted
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], F32)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 1, 1.5], F32)},
        19,
        initializers=("scales",),
        mode="nearest",
    )
    wrong_kernel("resize:add1")
    comparison = compare_model(model, feed, reference_limit=0)
    (node,) = comparison.report.nodes
    assert node.attribution == "no-third-vote" and node.verdict == "disagree", node
    assert "yardstick" not in node.isolated


# ---------------------------------------------------------------------------------------------------------
# multi-node verdicts


def _masked_deviation() -> onnx.ModelProto:
    """The example ort_deviation.onnx (its align_corners Resize is builtin-leaves-spec) with its output
    multiplied by 0: the difference never reaches the graph output."""
    model = onnx.load(MODELS / "ort_deviation.onnx")
    (out,) = model.graph.output
    model.graph.initializer.append(numpy_helper.from_array(np.array(0, F32), "zero"))
    model.graph.node.append(helper.make_node("Mul", [out.name, "zero"], ["masked"], name="mask"))
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("masked", TensorProto.FLOAT, [1, 3, "h", "w"]))
    onnx.checker.check_model(model, full_check=True)
    return model


def test_difference_masked_downstream_still_makes_the_verdict_disagree():
    model = _masked_deviation()
    comparison = compare_model(model, generate_inputs(model))
    report = comparison.report
    assert [o.verdict for o in report.outputs] == ["agree"]  # Mul(0) hides it from the output
    (node,) = report.nodes
    assert node.node == "downsample_align_corners"
    assert node.attribution == "builtin-leaves-spec" and node.verdict == "disagree"
    assert report.verdict == "disagree" and comparison.exit_status == 1
    assert report.summary.startswith("DISAGREE: 1 node(s), 0 output(s) differ"), report.summary


def _chain_of_two() -> onnx.ModelProto:
    """x -> Resize(align_corners, fractional scales: the sides differ) -> r -> Pad(edge) -> y."""
    nodes = [
        helper.make_node(
            "Resize",
            ["x", "", "scales"],
            ["r"],
            name="resize",
            mode="linear",
            coordinate_transformation_mode="align_corners",
        ),
        helper.make_node("Pad", ["r", "pads"], ["y"], name="pad", mode="edge"),
    ]
    inits = [
        numpy_helper.from_array(np.array([1, 1, 0.6, 0.6], F32), "scales"),
        numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 6, 6])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def test_isolated_node_is_fed_the_builtin_sides_own_upstream_values():
    model = _chain_of_two()
    feed = generate_inputs(model, seed=5)
    comparison = compare_model(model, feed)
    by_node = {n.node: n for n in comparison.report.nodes}
    assert by_node["resize"].attribution == "builtin-leaves-spec"
    assert by_node["pad"].fed_from == "builtin"
    # the built-in side's value of r, from ORT itself with r exposed as an output
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    exposed.graph.output.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, None))
    builtin_r = run_builtin(exposed, feed)[1]
    custom_r = comparison.isolated["resize"].outputs["custom"]
    assert np.abs(builtin_r - custom_r).max() > 1e-3  # the two sides' r differ
    fed = comparison.isolated["pad"].feed["r"]
    assert fed.dtype == builtin_r.dtype
    np.testing.assert_array_equal(fed, builtin_r)
    # and the Pad alone on those values agrees, so the difference in its output is carried in
    assert by_node["pad"].origin == "carried-in" and by_node["pad"].attribution == "agree"


def test_node_the_builtin_side_cannot_run_after_upstream_nodes_is_fed_the_custom_sides_values(tmp_path):
    # ORT's CPU Resize has no uint16 kernel: the built-in side cannot run the model at all
    x = np.array([[[[0.2, 3.7], [100.9, 7.0]]]], F32)
    nodes = [
        helper.make_node("Cast", ["x"], ["x16"], name="cast", to=TensorProto.UINT16),
        helper.make_node("Resize", ["x16", "", "scales"], ["y"], name="resize16", mode="nearest"),
    ]
    graph = helper.make_graph(
        nodes,
        "uint16",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.UINT16, [1, 1, 4, 4])],
        [numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    comparison = compare_model(model, {"x": x})
    report = comparison.report
    assert report.verdict == "failed" and comparison.exit_status == 1
    assert report.sides["builtin"]["ok"] is False and report.sides["custom"]["ok"] is True
    assert report.summary.startswith("FAILED: the model does not run on the built-in side")
    (node,) = report.nodes
    assert node.node == "resize16" and node.fed_from == "custom"
    assert node.attribution == "builtin-cannot-run" and node.verdict == "side-failed"
    assert node.origin == "starts-here"
    x16 = np.array([[[[0, 3], [100, 7]]]], np.uint16)
    iso = comparison.isolated["resize16"]
    assert iso.feed["x16"].dtype == np.uint16
    np.testing.assert_array_equal(iso.feed["x16"], x16)
    spec = x16.repeat(2, axis=2).repeat(2, axis=3)
    assert iso.outputs["custom"].dtype == np.uint16
    np.testing.assert_array_equal(iso.outputs["custom"], spec)
    np.testing.assert_array_equal(iso.outputs["reference"], spec)
    assert comparison.tensors["y"][0] is None
    np.testing.assert_array_equal(comparison.tensors["y"][1], spec)


# ---------------------------------------------------------------------------------------------------------
# inner nodes: If/Loop bodies and model-local functions


def _vi(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def _const(name, array):
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name + "_t")
    )


def _nested_model() -> onnx.ModelProto:
    """A main-graph Pad, an If whose then-branch holds the align_corners Resize (builtin-leaves-spec) and
    whose else-branch holds a Loop with a Pad in its body, and a call of a model-local function holding a
    Resize."""
    body = helper.make_graph(
        [
            _const("loop_pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
            helper.make_node("Pad", ["p", "loop_pads"], ["padded"], name="pad_in_loop", mode="edge"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [_vi("iter", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, [])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("padded", shape=[1, 1, 9, 9])],
    )
    then_branch = helper.make_graph(
        [
            _const("then_scales", np.array([1, 1, 0.6, 0.6], F32)),
            helper.make_node(
                "Resize",
                ["p", "", "then_scales"],
                ["then_out"],
                name="resize_in_then",
                mode="linear",
                coordinate_transformation_mode="align_corners",
            ),
        ],
        "then",
        [],
        [_vi("then_out", shape=[1, 1, 4, 4])],
    )
    else_branch = helper.make_graph(
        [
            _const("trip", np.array(1, np.int64)),
            _const("cond0", np.array(True)),
            helper.make_node("Loop", ["trip", "cond0"], ["stacked"], body=body, name="loop"),
            _const("flat", np.array([1, 1, 9, 9], np.int64)),
            helper.make_node("Reshape", ["stacked", "flat"], ["else_out"]),
        ],
        "else",
        [],
        [_vi("else_out", shape=[1, 1, 9, 9])],
    )
    fn = helper.make_function(
        "local.fns",
        "Upscale",
        ["X", "S"],
        ["Y"],
        [helper.make_node("Resize", ["X", "", "S"], ["Y"], mode="nearest", name="resize_in_fn")],
        [helper.make_opsetid("", 19)],
    )
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="main_pad", mode="reflect"),
        helper.make_node(
            "If", ["flag"], ["branch"], then_branch=then_branch, else_branch=else_branch, name="if"
        ),
        helper.make_node("Upscale", ["x", "up"], ["up_out"], domain="local.fns", name="call"),
    ]
    graph = helper.make_graph(
        nodes,
        "nested",
        [_vi("x", shape=[1, 1, 5, 5]), _vi("flag", TensorProto.BOOL, [])],
        [_vi("branch", shape=[1, 1, None, None]), _vi("up_out", shape=[1, 1, 10, 10])],
        [
            numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
            numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "up"),
        ],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("local.fns", 1)],
        functions=[fn],
    )
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model


INNER = {
    ("resize_in_then", "Resize-19", "graph/if.then_branch"),
    ("pad_in_loop", "Pad-19", "graph/if.else_branch/loop.body"),
    ("resize_in_fn", "Resize-19", "function Upscale"),
}


@pytest.mark.parametrize("flag", [True, False])
def test_nodes_in_subgraphs_and_functions_are_reported_as_inner_nodes(flag):
    model = _nested_model()
    x = np.arange(25, dtype=F32).reshape(1, 1, 5, 5) / F32(7)
    comparison = compare_model(model, {"x": x, "flag": np.array(flag)})
    report = comparison.report
    assert [n.node for n in report.nodes] == ["main_pad"]
    assert set(comparison.isolated) == {"main_pad"}
    assert {(n["node"], n["op"], n["scope"]) for n in report.inner_nodes} == INNER
    assert all("compared through the graph outputs only" in n["note"] for n in report.inner_nodes)
    assert report.skipped == []
    verdicts = {o.name: o.verdict for o in report.outputs}
    # the then-branch's align_corners Resize leaves the spec on ORT: seen only through the graph output
    assert verdicts == {"branch": "disagree" if flag else "agree", "up_out": "agree"}
    assert report.verdict == ("disagree" if flag else "agree")
    assert comparison.exit_status == (1 if flag else 0)
    # the inner nodes' values, directly: the function's nearest 2x Resize, the loop body's edge Pad
    p = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    a, b = comparison.tensors["up_out"]
    np.testing.assert_array_equal(b, x.repeat(2, axis=2).repeat(2, axis=3))
    np.testing.assert_array_equal(a, b)
    a, b = comparison.tensors["branch"]
    if not flag:
        np.testing.assert_array_equal(b, np.pad(p, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="edge"))
        np.testing.assert_array_equal(a, b)
    else:
        assert b.shape == (1, 1, 4, 4) and np.abs(a - b).max() > 1e-3
