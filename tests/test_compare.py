"""customops compare: known deviations of ORT's CPU kernels are flagged, attributed, and our side gives
the spec answer; the reference is not trusted blindly; the command's inputs, outputs and exit statuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from customops.comparison import inputs as compare_inputs
from customops.comparison.inputs import generate_inputs
from customops.comparison.pipeline import compare_model
from customops.errors import CustomOpsError
from customops.eval.judging.metrics import compare_arrays
from customops.eval.running.worker import KERNEL_TIME_RUNS
from tests.helpers import Deviation, check_deviation, one_node_model, run_cli, strict_json

F32 = np.float32


DEVIATIONS = [
    Deviation(
        "R-ALIGN-CORNERS-INT-LENGTH",
        "Resize",
        {
            "X": np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], F32),
            "roi": None,
            "scales": np.array([1, 1, 0.6, 0.6], F32),
        },
        19,
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        ("scales",),
        spec=[[[[1, 3.142857]]]],
    ),
    Deviation(
        "R-SAME-SHAPE-NO-OP",
        "Resize",
        {"X": np.array([[0, 10, 20]], F32), "roi": None, "scales": np.array([1, 1.25], F32)},
        19,
        {"mode": "linear"},
        ("scales",),
        spec=[[0, 7, 15]],
    ),
    Deviation(
        "R-TFCROP-SAME-LENGTH-NO-ROI",
        "Resize",
        {
            "X": np.array([[1, 2, 3, 4]], F32),
            "roi": np.array([0, 0, 1, 0.5], F32),
            "scales": None,
            "sizes": np.array([1, 4], np.int64),
        },
        19,
        {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
        ("roi", "sizes"),
        spec=[[1, 1.5, 2, 2.5]],
    ),
    Deviation(
        "R-CUBIC-INT-RUNTIME-ERROR",
        "Resize",
        {"X": np.array([[[[0, 255]]]], np.uint8), "roi": None, "scales": np.array([1, 1, 1, 2], F32)},
        19,
        {"mode": "cubic"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=[[[[0, 58, 197, 255]]]],
    ),
    Deviation(
        "R-AA-INT8-CLAMP",
        "Resize",
        {"X": np.array([[[[-3, 0]]]], np.int8), "roi": None, "scales": np.array([1, 1, 1, 2], F32)},
        19,
        {"mode": "linear", "antialias": 1},
        ("scales",),
        spec=[[[[-3, -2, -1, 0]]]],
    ),
    Deviation(
        "R-INT-TRUNCATION",
        "Resize",
        {"X": np.array([[[[0, 3]]]], np.uint8), "roi": None, "scales": np.array([1, 1, 1, 2], F32)},
        19,
        {"mode": "linear"},
        ("scales",),
        spec=[[[[0, 1, 2, 3]]]],
    ),
    Deviation(
        "R-HPS-FLOAT-ROUNDING",
        "Resize",
        {
            "X": np.array([[0, 1, 2, 3, 4]], F32),
            "roi": None,
            "scales": None,
            "sizes": np.array([1, 3], np.int64),
        },
        19,
        {
            "mode": "nearest",
            "coordinate_transformation_mode": "half_pixel_symmetric",
            "nearest_mode": "floor",
        },
        ("sizes",),
        spec=[[0, 2, 3]],
    ),
    Deviation(
        "R-LINEAR-RANK",
        "Resize",
        {"X": np.array([0, 10, 20], F32), "roi": None, "scales": np.array([2], F32)},
        19,
        {"mode": "linear"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=[0, 2.5, 7.5, 12.5, 17.5, 20],
    ),
    Deviation(
        "R-LINEAR-OUTER-AXIS",
        "Resize",
        {"X": np.array([0, 10], F32).reshape(2, 1, 1, 1), "roi": None, "scales": np.array([2, 1, 1, 1], F32)},
        19,
        {"mode": "linear"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=np.array([0, 2.5, 7.5, 10], F32).reshape(4, 1, 1, 1),
    ),
    Deviation(
        "R-CUBIC-RANK",
        "Resize",
        {"X": np.array([[[0, 10, 20]]], F32), "roi": None, "scales": np.array([1, 1, 2], F32)},
        19,
        {"mode": "cubic"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=[[[-1.0546875, 1.9140625, 6.6796875, 13.3203125, 18.0859375, 21.0546875]]],
    ),
    Deviation(
        "R-CUBIC-NHWC-DOWN",
        "Resize",
        {
            "X": np.arange(16, dtype=F32).reshape(1, 4, 4, 1),
            "roi": None,
            "scales": np.array([1, 0.5, 0.5, 1], F32),
        },
        19,
        {"mode": "cubic"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=np.array([[2.03125, 4.21875], [10.78125, 12.96875]], F32).reshape(1, 2, 2, 1),
    ),
    Deviation(
        "U-LINEAR-RANK",
        "Upsample",
        {"X": np.array([0, 10, 20], F32), "scales": np.array([2], F32)},
        9,
        {"mode": "linear"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=[0, 5, 10, 15, 20, 20],
    ),
    Deviation(
        "P-REFLECT-PAD-GE-DIM",
        "Pad",
        {
            "data": np.array([[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]], F32),
            "pads": np.array([0, 2, 0, 0], np.int64),
        },
        19,
        {"mode": "reflect"},
        ("pads",),
        ("builtin-cannot-run",),
        spec=[[1.0, 1.2, 1.0, 1.2], [2.3, 3.4, 2.3, 3.4], [4.5, 5.7, 4.5, 5.7]],
    ),
    Deviation(
        "P-CROP-TO-EMPTY",
        "Pad",
        {"data": np.array([1, 2], F32), "pads": np.array([-1, -1], np.int64)},
        19,
        {"mode": "edge"},
        ("pads",),
        ("builtin-cannot-run",),
        spec=np.zeros(0, F32),
    ),
    Deviation(
        "P-WRAP-EMPTY-TENSOR",
        "Pad",
        {"data": np.zeros((0, 3), F32), "pads": np.array([0, 1, 0, 1], np.int64)},
        19,
        {"mode": "wrap"},
        ("pads",),
        ("builtin-cannot-run",),
        spec=np.zeros((0, 5), F32),
    ),
    Deviation(
        "P-AXES-INT32-INIT",
        "Pad",
        {
            "data": np.array([[1, 2]], F32),
            "pads": np.array([1, 1], np.int64),
            "constant_value": None,
            "axes": np.array([-1], np.int32),
        },
        19,
        {"mode": "constant"},
        ("pads", "axes"),
        ("builtin-cannot-run",),
        spec=[[0, 1, 2, 0]],
    ),
    Deviation(
        "C-3D-DILATION",
        "Col2Im",
        {
            "input": np.array([1, 2, 3, 4], F32).reshape(1, 4, 1),
            "image_shape": np.array([1, 3, 3], np.int64),
            "block_shape": np.array([1, 2, 2], np.int64),
        },
        18,
        {"dilations": [1, 2, 2]},
        ("image_shape", "block_shape"),
        spec=np.array([1, 0, 2, 0, 0, 0, 3, 0, 4], F32).reshape(1, 1, 1, 3, 3),
    ),
    Deviation(
        "CCP-INT32-SHAPE",
        "CenterCropPad",
        {"input_data": np.arange(1, 16, dtype=F32).reshape(3, 5), "shape": np.array([2, 4], np.int32)},
        18,
        {},
        ("shape",),
        ("builtin-cannot-run",),
        spec=[[1, 2, 3, 4], [6, 7, 8, 9]],
    ),
    Deviation(
        "T-RESIZE-UINT16",
        "Resize",
        {"X": np.array([[0, 100], [200, 300]], np.uint16), "roi": None, "scales": np.array([1, 2], F32)},
        19,
        {"mode": "nearest"},
        ("scales",),
        ("builtin-cannot-run",),
        spec=[[0, 0, 100, 100], [200, 200, 300, 300]],
    ),
    Deviation(
        "T-COL2IM-DOUBLE",
        "Col2Im",
        {
            "input": np.arange(4, dtype=np.float64).reshape(1, 4, 1),
            "image_shape": np.array([2, 2], np.int64),
            "block_shape": np.array([2, 2], np.int64),
        },
        18,
        {},
        ("image_shape", "block_shape"),
        ("builtin-cannot-run",),
        spec=np.arange(4, dtype=np.float64).reshape(1, 1, 2, 2),
    ),
    Deviation(
        "T-PAD-STRING",
        "Pad",
        {"data": np.array(["a", "b"], dtype=object), "pads": np.array([1, 0], np.int64)},
        19,
        {"mode": "edge"},
        ("pads",),
        ("builtin-cannot-run",),
        spec=np.array(["a", "a", "b"], dtype=object),
    ),
]


@pytest.mark.parametrize("dev", DEVIATIONS, ids=lambda d: d.id)
def test_known_ort_deviation_is_flagged_attributed_and_ours_gives_the_spec_answer(dev):
    check_deviation(dev)


def test_reference_that_leaves_the_spec_is_not_blamed_on_ort():
    # pytorch_half_pixel with an output length of 1: the spec says x_original = 0, so cubic returns X[0];
    # onnx.reference uses -0.5 and gets 0.906. ORT and ours agree: the reference is the odd one out.
    x = np.array([[1, 2, 4, 3]], F32)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": None, "sizes": np.array([1, 1], np.int64)},
        19,
        initializers=("sizes",),
        mode="cubic",
        coordinate_transformation_mode="pytorch_half_pixel",
    )
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    assert node.attribution == "reference-odd-one-out"
    assert node.known == ["semantics: `pytorch_half_pixel`, output length 1"], node.known
    assert node.verdict == "agree" and comparison.exit_status == 0
    iso = comparison.isolated[node.node]
    assert iso.outputs["custom"].tolist() == [[1.0]] and iso.outputs["builtin"].tolist() == [[1.0]]
    assert abs(float(iso.outputs["reference"][0, 0]) - 1.0) > 0.05


def _chain():
    """x -> Mul -> Resize(align_corners, fractional scales) -> Pad(reflect) -> Add -> y."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["m"], name="mul"),
        helper.make_node(
            "Resize",
            ["m", "", "scales"],
            ["r"],
            name="resize",
            mode="linear",
            coordinate_transformation_mode="align_corners",
        ),
        helper.make_node("Pad", ["r", "pads"], ["p"], name="pad", mode="reflect"),
        helper.make_node("Add", ["p", "two"], ["y"], name="add"),
    ]
    inits = [
        onnx.numpy_helper.from_array(np.array(2, F32), "two"),
        onnx.numpy_helper.from_array(np.array([1, 1, 0.6, 0.6], F32), "scales"),
        onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 6, 6])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def test_difference_carried_in_from_upstream_is_told_apart_from_one_that_starts_here():
    model = _chain()
    feed = generate_inputs(model, seed=3, dims={"N": 1})
    report = compare_model(model, feed).report
    by_node = {n.node: n for n in report.nodes}
    assert (
        by_node["resize"].origin == "starts-here" and by_node["resize"].attribution == "builtin-leaves-spec"
    )
    # the Pad itself agrees on A's own inputs, but its output in the model differs: carried in
    assert by_node["pad"].origin == "carried-in" and by_node["pad"].attribution == "agree"
    assert by_node["pad"].in_model.passed is False
    assert report.outputs[0].verdict == "disagree"
    assert report.summary.startswith("DISAGREE") and "'resize'" in report.summary


def test_metrics_report_ulps_nan_placement_and_the_tolerance_needed():
    a = np.array([1.0, np.nan, 3.0, np.inf], F32)
    b = np.array([np.nextafter(F32(1), F32(2)), np.nan, 3.5, np.inf], F32)
    m = compare_arrays(a, b, rtol=0.0, atol=0.0)
    assert m.nan_match and m.inf_match and m.mismatches == 2
    assert m.max_abs == pytest.approx(0.5) and m.needed_atol == pytest.approx(0.5)
    assert m.needed_rtol == pytest.approx(0.5 / 3.5)
    assert compare_arrays(a, b, rtol=0.0, atol=m.needed_atol).passed
    assert m.max_ulp == (1 << 21)  # 3.0 and 3.5 are 2**21 float32 steps apart
    moved = compare_arrays(np.array([np.nan, 1], F32), np.array([1, np.nan], F32), 1e-3, 1e-3)
    assert not moved.nan_match and not moved.passed
    assert compare_arrays(np.array([1, 2]), np.array([1, 3]), 0, 0).mismatches == 1


def test_cli_writes_json_html_and_reproducers_that_reproduce(tmp_path):
    path = tmp_path / "chain.onnx"
    onnx.save(_chain(), path)
    proc = run_cli(
        "compare",
        str(path),
        "--dim",
        "N=2",
        "--json",
        str(tmp_path / "r.json"),
        "--html",
        str(tmp_path / "r.html"),
        "--save-repro",
        str(tmp_path / "repro"),
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("DISAGREE")
    report = strict_json((tmp_path / "r.json").read_text())
    assert {n["node"] for n in report["nodes"]} == {"resize", "pad"}
    assert "<img" in (tmp_path / "r.html").read_text()
    case = tmp_path / "repro" / "resize"
    assert (case / "model.onnx").exists() and (case / "test_data_set_0" / "output_0.pb").exists()
    onnx.checker.check_model(onnx.load(case / "model.onnx"), full_check=True)
    again = run_cli("compare", str(case / "model.onnx"), "--inputs", str(case))
    assert again.returncode == 1 and "builtin-leaves-spec" in again.stdout, again.stderr
    assert not (tmp_path / "repro" / "pad").exists()  # the pad agrees when isolated: no reproducer


def test_cli_agreeing_model_exits_0_and_accepts_npz_inputs(tmp_path):
    x = np.arange(12, dtype=F32).reshape(1, 1, 3, 4)
    model, feed = one_node_model(
        "Pad",
        {"data": x, "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)},
        19,
        initializers=("pads",),
        mode="edge",
    )
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feed)
    proc = run_cli("compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("AGREE")


@pytest.mark.parametrize(
    ("setup", "extra", "needle"),
    [
        ("wrong_name", [], "is not a graph input"),
        ("initializer", [], "'pads' has a value in the model (an initializer of that name)"),
        ("wrong_shape", [], "declares 3 on axis 2"),
        ("wrong_dtype", [], "has dtype float64"),
        (None, ["--dim", "N"], "--dim 'N' is not NAME=VALUE"),
        (None, ["--ops", "Conv"], "unknown op 'Conv'"),
        (None, ["--json", "nowhere/r.json"], "/nowhere' does not exist"),
        (None, ["--json", "m.onnx"], "is the input model"),
        (None, ["--html", "./m.onnx"], "is the input model"),
        ("wrong_name", ["--json", "in.npz"], "is also an input"),
        (None, ["--dim", "N=3", "--dim", "N=4"], "--dim 'N' is given twice"),
        (None, ["--dim", "batch=2"], "--dim 'batch' names no symbolic dimension of the graph inputs"),
        ("wrong_name", ["--dim", "N=2"], "--dim sizes generated inputs; it has no effect with --inputs"),
        (None, ["--seed", "-1"], "--seed -1 must be at least 0"),
        (None, ["--rtol", "nan"], "--rtol nan must be a finite number at least 0"),
        (None, ["--atol", "-0.5"], "--atol -0.5 must be a finite number at least 0"),
        (None, ["--rtol", "1e400"], "--rtol inf must be"),
        (None, ["--reference-limit", "-5"], "--reference-limit -5 must be at least 0"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path, setup, extra, needle):
    x = np.zeros((1, 1, 3, 4), F32)
    model, _ = one_node_model("Pad", {"data": x, "pads": np.zeros(8, np.int64)}, 19, initializers=("pads",))
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 3
    onnx.save(model, tmp_path / "m.onnx")
    args = ["compare", str(tmp_path / "m.onnx"), *extra]
    if setup:
        values = {
            "wrong_name": {"nope": x},
            "initializer": {"data": x, "pads": np.ones(8, np.int64)},
            "wrong_shape": {"data": np.zeros((1, 1, 4, 4), F32)},
            "wrong_dtype": {"data": x.astype(np.float64)},
        }[setup]
        np.savez(tmp_path / "in.npz", **values)
        args += ["--inputs", str(tmp_path / "in.npz")]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_model_invalid_for_both_sides_is_bad_input(tmp_path):
    x = np.zeros((1, 2), F32)
    model, _ = one_node_model(
        "Resize", {"X": x, "roi": None, "scales": np.array([1, 2, 3], F32)}, 19, initializers=("scales",)
    )
    onnx.save(model, tmp_path / "m.onnx")
    proc = run_cli("compare", str(tmp_path / "m.onnx"))
    assert proc.returncode == 2 and "runs on neither side" in proc.stderr, proc.stderr


def test_conformance_command_passes_every_custom_result():
    proc = run_cli("conformance", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = strict_json(proc.stdout)
    assert rows and all(r["custom"] == "pass" for r in rows if r["custom"] != "unsupported")
    assert any(r["builtin"] != "pass" for r in rows)  # ORT fails the align_corners downsampling tests
    # only a type the custom-op layer cannot carry (ORT has no Cast for float4e2m1) is left unrun
    unsupported = [r for r in rows if r["custom"] == "unsupported"]
    assert unsupported and all("float4e2m1" in r["test"] for r in unsupported)


def test_api_rejects_negative_or_non_finite_settings():
    model, feed = one_node_model(
        "Pad", {"data": np.ones((2, 3), F32), "pads": np.array([1, 1, 1, 1], np.int64)}, 18
    )
    with pytest.raises(CustomOpsError, match=r"--atol -1\.0"):
        compare_model(model, feed, atol=-1.0)
    with pytest.raises(CustomOpsError, match="--seed -3"):
        generate_inputs(model, seed=-3)
    # zero tolerances and a zero reference limit are allowed
    assert compare_model(model, feed, rtol=0.0, atol=0.0, reference_limit=0).exit_status == 0


def test_metrics_against_a_zero_or_subnormal_reference_are_infinite_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = compare_arrays(np.array([1.0, 1.0]), np.array([0.0, 1e-310]), rtol=0.0, atol=0.0)
    assert m.max_rel == np.inf and m.needed_rtol == np.inf and not m.passed


def test_cli_json_report_is_strict_json_with_infinite_values_as_strings(tmp_path):
    # ORT's Col2Im with dilation and blocks in the end padding (docs/ort-deviations.md C-3D-DILATION)
    # gives 0 where the spec has 5: relative to ours (the spec side) the error is 1; against the
    # built-in side's 0 it would be infinite (the rtol needed against a reference of 0 is: its strings
    # are checked in test_jsonout.py)
    model, feed = one_node_model(
        "Col2Im",
        {
            "input": np.arange(1, 7, dtype=np.float32).reshape(1, 6, 1),
            "image_shape": np.array([2], np.int64),
            "block_shape": np.array([3], np.int64),
        },
        18,
        initializers=("image_shape", "block_shape"),
        dilations=[2],
        pads=[1, 2],
    )
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feed)
    proc = run_cli(
        "compare",
        str(tmp_path / "m.onnx"),
        "--inputs",
        str(tmp_path / "in.npz"),
        "--json",
        str(tmp_path / "r.json"),
    )
    assert proc.returncode == 1, proc.stderr
    report = strict_json((tmp_path / "r.json").read_text())
    metrics = report["nodes"][0]["in_model"]
    assert metrics["max_rel"] == 1.0 and metrics["needed_rtol"] < 1.0, metrics
    assert isinstance(metrics["max_abs"], float)


def test_reference_warnings_neither_reach_the_user_nor_cost_the_third_vote():
    import warnings

    from customops.eval.running.sides import run_reference

    x = np.array([[[[np.inf, 1.0], [np.nan, -np.inf]]]], np.float32)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], np.float32)},
        19,
        initializers=("scales",),
        mode="cubic",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, error = run_reference(model.SerializeToString(), feed, 120.0)  # its child ignores them
    assert error is None and y is not None
    assert y.shape == (1, 1, 4, 4) and np.isnan(y).any()


def test_cli_defaults_are_the_pipelines():
    """The parser keeps its own copies of two defaults (so that ``customops -h`` need not import onnx)."""
    from customops.cli import compare as cli_compare

    assert cli_compare.DEFAULT_DIM == compare_inputs.DEFAULT_DIM


def _amplifying_model(pads: int) -> onnx.ModelProto:
    """A tiny linear Resize (ORT and we differ by a few ulp, within tolerance) feeding a gain of 3e4 and
    a sin, so the outputs differ by far more, then ``pads`` Pads that agree exactly (like a TTS export)."""
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"], name="upsample", mode="linear"),
        helper.make_node("Mul", ["r", "gain"], ["phase"], name="gain"),
        helper.make_node("Sin", ["phase"], ["p0"], name="sin"),
    ]
    for i in range(pads):
        nodes.append(helper.make_node("Pad", [f"p{i}", "pads"], [f"p{i + 1}"], name=f"pad{i}", mode="edge"))
    inits = [
        onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        onnx.numpy_helper.from_array(np.array([3e4], np.float32), "gain"),
        onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    graph = helper.make_graph(
        nodes,
        "amplify",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16, 16])],
        [helper.make_tensor_value_info(f"p{pads}", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("single_limit", [8, 1])
def test_an_amplified_difference_is_blamed_on_the_swap_that_moves_the_output(monkeypatch, single_limit):
    """No swapped node differs alone, yet the output does: the summary never names a node that agrees
    alone (the Pads carry the difference in), and the search (one swap at a time, or bisecting groups)
    finds the Resize whose few-ulp difference the sin amplifies."""
    from customops.comparison import amplify

    monkeypatch.setattr(amplify, "SINGLE_LIMIT", single_limit)
    model = _amplifying_model(pads=4)
    comparison = compare_model(model, generate_inputs(model))
    report = comparison.report
    assert report.verdict == "disagree"
    assert all(n.origin != "starts-here" for n in report.nodes)
    assert "starts at" not in report.summary
    assert "amplified downstream" in report.summary and "'upsample' [Resize-19]" in report.summary
    assert [e.nodes for e in report.amplified] == [["upsample"]]
    assert not report.amplified[0].passes


def test_no_search_when_a_node_starts_the_difference_and_the_quickstart_names_its_deviation():
    model = onnx.load(
        Path(__file__).resolve().parent.parent / "customops" / "examples" / "ort_deviation.onnx"
    )
    report = compare_model(model, generate_inputs(model)).report
    assert "starts at" in report.summary and report.amplified == []
    assert report.summary.endswith("builtin-leaves-spec (known: R-ALIGN-CORNERS-INT-LENGTH)")
    assert [n.known for n in report.nodes] == [["R-ALIGN-CORNERS-INT-LENGTH"]]


def test_the_reference_limit_is_per_op_unless_one_is_given():
    """Defaults measured per op, each in its own unit (docs/compare.md): a 720p image resized x2 gets its
    third vote."""
    from customops.comparison.isolate import reference_limit_of, run_isolated
    from customops.kernels.work import reference_work
    from customops.registry import CUSTOM_OPS

    image = [np.zeros((1, 3, 720, 1280), F32), None, np.array([1, 1, 2, 2], F32), None]
    for mode in ("nearest", "linear", "cubic"):
        assert reference_work("Resize", image, {"mode": mode}) <= reference_limit_of("Resize", None)
    assert all(reference_limit_of(op, None) == c.reference_limit for op, c in CUSTOM_OPS.items())
    assert reference_limit_of("Col2Im", 7) == 7
    model, feed = one_node_model(
        "Pad", {"data": np.zeros((1, 1, 4, 4), F32), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}, 19
    )
    node = model.graph.node[0]
    assert run_isolated(node, feed, model).outputs["reference"] is not None
    skipped = run_isolated(node, feed, model, reference_limit=10)
    assert (
        skipped.outputs["reference"] is None and "over the reference limit 10" in skipped.errors["reference"]
    )


def test_the_text_report_leads_with_the_verdict_and_shows_where_differences_start(tmp_path):
    """A long model's table holds the graph outputs and the nodes where a difference starts (all with
    --all-rows); -q prints the verdict line alone and no progress."""
    model_path = tmp_path / "amp.onnx"
    onnx.save(_amplifying_model(pads=3), model_path)
    proc = run_cli("compare", str(model_path))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == lines[-1] and lines[0].startswith("DISAGREE")  # the verdict first and last
    rows = [
        line.split()[0] for line in lines if line.split() and line.split()[0].startswith(("pad", "upsample"))
    ]
    assert rows == ["upsample"]  # the swap that moves the output; the Pads only carry it
    assert "3 more swapped node(s)" in proc.stdout
    needed = next(line for line in lines if line.strip().startswith("p3: passes at --atol "))
    atol = needed.split("--atol ")[1].split()[0]  # the tolerance the table says would pass does pass
    assert run_cli("compare", str(model_path), "--atol", str(float(atol) * 1.01), "-q").returncode == 0
    every = run_cli("compare", str(model_path), "--all-rows")
    shown = [line.split()[0] for line in every.stdout.splitlines() if line.startswith(("pad", "upsample"))]
    assert shown == ["upsample", "pad0", "pad1", "pad2"] and "more swapped node" not in every.stdout
    quiet = run_cli("compare", str(model_path), "-q")
    assert quiet.returncode == 1 and quiet.stdout.strip() == lines[0] and quiet.stderr == ""


def test_kernel_times_follow_a_node_that_ort_s_layout_pass_renames():
    """ORT's NCHWc pass replaces a Resize after a Conv by an Upsample named '<output>_nchwc': its time
    and provider are still the Resize's."""
    from customops.comparison.pipeline import profiled

    node = helper.make_node("Resize", ["x", "", "s"], ["up_out"], name="up")
    assert profiled({"up_out_nchwc": 4.0, "other": 1.0}, node) == 4.0
    assert profiled({"up": 2.0, "up_out_nchwc": 4.0}, node) == 2.0
    assert profiled({"other": 1.0}, node) is None
    weights = onnx.numpy_helper.from_array(np.full((16, 8, 3, 3), 0.01, F32), "w")
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "s")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Resize", ["c", "", "s"], ["y"], name="up", mode="nearest"),
        ],
        "nchwc",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weights, scales],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (node,) = compare_model(model, generate_inputs(model), repeats=KERNEL_TIME_RUNS).report.nodes
    assert node.time_us["builtin"] is not None


def test_per_tensor_tolerances_decide_that_tensor_only(tmp_path):
    """--rtol/--atol NAME:VALUE set one tensor's tolerance (a graph output or a swapped node's output);
    the report records them; a name that is neither is bad input."""
    model_path = tmp_path / "amp.onnx"
    onnx.save(_amplifying_model(pads=1), model_path)  # output p1: the Pad's output and the graph output
    loose = run_cli(
        "compare", str(model_path), "--atol", "p1:2", "--rtol", "p1:0", "--json", str(tmp_path / "r")
    )
    assert loose.returncode == 0, loose.stdout + loose.stderr
    report = strict_json((tmp_path / "r").read_text())
    assert report["tolerances"]["tensor p1"] == {"rtol": 0.0, "atol": 2.0}
    assert report["tolerances"]["float32"] == {"rtol": 1e-5, "atol": 1e-5}  # the others keep theirs
    strict = run_cli("compare", str(model_path), "--atol", "2", "--atol", "p1:0", "--rtol", "p1:0")
    assert strict.returncode == 1  # the tensor's own tolerance wins over the global one
    for args, needle in (
        (["--atol", "nosuch:1"], "neither a graph output nor a swapped node's output"),
        (["--atol", "p1:x"], "is not a number or NAME:NUMBER"),
        (["--atol", "1", "--atol", "2"], "is given twice"),
        (["--rtol", "p1:-1"], "must be a finite number at least 0"),
    ):
        proc = run_cli("compare", str(model_path), *args)
        assert proc.returncode == 2 and needle in proc.stderr, (args, proc.stderr)


def test_check_error_stat_decides_tensors_and_an_unknown_one_is_refused(tmp_path):
    model_path = tmp_path / "amp.onnx"
    onnx.save(_amplifying_model(pads=1), model_path)
    elemwise = run_cli("compare", str(model_path), "--atol", "0.001", "-q")
    mean = run_cli("compare", str(model_path), "--atol", "0.001", "--check-error-stat", "mean", "-q")
    assert elemwise.returncode == 1 and mean.returncode == 0, (elemwise.stdout, mean.stdout)
    bad = run_cli("compare", str(model_path), "--check-error-stat", "p99")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "p99" in bad.stderr


def test_nodes_without_a_name_get_stable_names_from_their_outputs(tmp_path):
    """Exporters leave nodes unnamed: each is compared under the name of its first output, the same on
    every run, and its reproducer directory is named after it."""
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 0.6, 0.6], F32), "s")
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p")
    graph = helper.make_graph(
        [
            helper.make_node(
                "Resize",
                ["x", "", "s"],
                ["small"],
                mode="linear",
                coordinate_transformation_mode="align_corners",
            ),
            helper.make_node("Pad", ["small", "p"], ["y"], mode="edge"),
        ],
        "unnamed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [scales, pads],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    first, again = (compare_model(model, generate_inputs(model)) for _ in range(2))
    assert [n.node for n in first.report.nodes] == ["small", "y"] == [n.node for n in again.report.nodes]
    assert first.report.nodes[0].origin == "starts-here"
    from customops.comparison.repro import save_repros

    assert [p.name for p in save_repros(first, tmp_path / "repro")] == ["small"]
