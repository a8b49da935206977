"""compare when both sides fail on the whole model: where each side stops, whether that is a finding (the
sides stop at different nodes) or the inputs' fault (both stop at one node), and generated inputs drawn
again at sizes that fit a strided model (docs/compare.md, Inputs; Outputs and exit status)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import customops
from customops.errors import CustomOpsError
from customops.eval.running.messages import failing_node
from tests.helpers import run_cli, strict_json

F32 = np.float32


def _pad_then_conv(tmp_path) -> str:
    """x -> Relu -> Pad reflect with pads of 4 on an axis of 3 (valid for the spec, refused by ORT:
    P-REFLECT-PAD-GE-DIM) -> Conv whose 12-wide kernel fits no output but a 12-wide one: the built-in
    side stops at the Pad, ours runs it (width 11) and the custom side stops at the Conv."""
    pads = numpy_helper.from_array(np.array([0, 0, 0, 4, 0, 0, 0, 4], np.int64), "pads")
    w = numpy_helper.from_array(np.ones((1, 1, 1, 12), F32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="pre"),
            helper.make_node("Pad", ["r", "pads"], ["p"], name="pad_reflect", mode="reflect"),
            helper.make_node("Conv", ["p", "w"], ["y"], name="conv_after"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads, w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    path = tmp_path / "pad_conv.onnx"
    onnx.save(model, path)
    return str(path)


def test_the_built_in_side_failing_first_at_a_swapped_node_is_a_finding_named_with_its_known_id(tmp_path):
    model = _pad_then_conv(tmp_path)
    repro, report_path = tmp_path / "repro", tmp_path / "r.json"
    proc = run_cli("compare", model, "--json", str(report_path), "--save-repro", str(repro), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdict = proc.stdout.strip().splitlines()[-1]
    assert verdict.startswith("FAILED: the built-in side stops at 'pad_reflect' [Pad-13]"), verdict
    assert "builtin-cannot-run (known: P-REFLECT-PAD-GE-DIM)" in verdict
    assert "the custom side stops at 'conv_after' [Conv]" in verdict  # ORT names it y_nchwc
    report = strict_json(report_path.read_text())
    assert report["sides"]["builtin"]["failed_at"]["node"] == "pad_reflect"
    assert report["sides"]["custom"]["failed_at"] == {
        "node": "conv_after",
        "reported": "y_nchwc",
        "op": "Conv",
        "swapped": False,
    }
    (pad,) = [n for n in report["nodes"] if n["node"] == "pad_reflect"]
    assert pad["attribution"] == "builtin-cannot-run" and pad["known"] == ["P-REFLECT-PAD-GE-DIM"]
    assert pad["fed_from"] == "custom" and pad["origin"] == "starts-here"
    assert report["inputs"]["shapes"] == {"x": [1, 1, 3, 3]} and report["inputs"]["generated"] is True
    assert "inputs (generated): x 1x1x3x3 float32" in proc.stdout
    readme = (repro / "pad_reflect" / "README.txt").read_text()
    assert "builtin-cannot-run" in readme and "P-REFLECT-PAD-GE-DIM" in readme


def test_both_sides_failing_at_one_node_not_swapped_stays_bad_input_naming_the_node(tmp_path):
    """A Conv whose kernel is wider than its input fails on both sides alike, after a swapped Pad that
    both run: the model (or its inputs) is at fault."""
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    w = numpy_helper.from_array(np.ones((1, 1, 9, 9), F32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="edge"),
            helper.make_node("Conv", ["p", "w"], ["y"], name="too_wide"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads, w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, tmp_path / "m.onnx")
    proc = run_cli("compare", str(tmp_path / "m.onnx"), "--save-inputs", str(tmp_path / "in.npz"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("customops compare: error")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "runs on neither side: both sides stop at 'too_wide' [Conv]" in lines[0]
    assert "--dim" not in lines[0]  # nothing symbolic: no size to change
    assert not (tmp_path / "in.npz").exists()


def _strided(levels: int) -> onnx.ModelProto:
    """x [batch, 3, height, width] -> ``levels`` 2x2 max pools (ceil mode) -> Resize x 2**levels (a swap) ->
    Concat with x: the two branches match only when height and width are multiples of 2**levels."""
    nodes, prev = [], "x"
    for i in range(levels):
        nodes.append(
            helper.make_node(
                "MaxPool",
                [prev],
                [f"p{i}"],
                name=f"pool{i}",
                kernel_shape=[2, 2],
                strides=[2, 2],
                ceil_mode=1,
            )
        )
        prev = f"p{i}"
    factor = float(2**levels)
    scales = numpy_helper.from_array(np.array([1, 1, factor, factor], F32), "scales")
    nodes.append(helper.make_node("Resize", [prev, "", "scales"], ["up"], name="up", mode="nearest"))
    nodes.append(helper.make_node("Concat", ["x", "up"], ["y"], name="concat", axis=1))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [scales],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def test_generated_inputs_that_break_a_stride_32_concat_are_drawn_again_at_sizes_that_fit(tmp_path):
    onnx.save(_strided(5), tmp_path / "s32.onnx")
    saved, report_path = tmp_path / "in.npz", tmp_path / "r.json"
    proc = run_cli(
        "compare", str(tmp_path / "s32.onnx"), "--json", str(report_path), "--save-inputs", str(saved)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "both sides fail on the generated inputs with batch=4, height=4, width=4" in proc.stderr
    assert "uses the generated inputs with batch=1, height=32, width=32" in proc.stderr
    assert "x 1x3x32x32 float32; symbolic dims batch=1, height=32, width=32" in proc.stdout
    report = strict_json(report_path.read_text())
    assert report["verdict"] == "agree" and "height=32" in report["summary"]
    assert report["inputs"]["dims"] == {"batch": 1, "height": 32, "width": 32}
    assert report["inputs"]["tried"] == [{"batch": 4, "height": 4, "width": 4}]
    with np.load(saved) as inputs:
        assert inputs["x"].shape == (1, 3, 32, 32)  # the inputs compared, not the first ones drawn


def test_the_ladder_exhausted_is_bad_input_naming_the_dims_and_every_size_tried(tmp_path):
    onnx.save(_strided(7), tmp_path / "s128.onnx")  # 128 divides none of 4, 32, 64, 320
    proc = run_cli("compare", str(tmp_path / "s128.onnx"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("customops compare: error")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    line = lines[0]
    assert "symbolic dims are batch=4, height=4, width=4, then batch=1, height=32, width=32" in line
    assert "then batch=1, height=320, width=320" in line and "both sides stop at 'concat' [Concat]" in line
    assert "--dim NAME=VALUE or --input-shape NAME:DIMS" in line


def test_sizes_given_by_the_user_are_not_changed_by_the_ladder():
    with pytest.raises(CustomOpsError) as err:
        customops.compare(_strided(5), dims={"batch": 1, "height": 40, "width": 40})
    text = str(err.value)  # no other size tried: the sizes given are named, then the node
    assert (
        "whose symbolic dims are batch=1, height=40, width=40: both sides stop at 'concat' [Concat]" in text
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Non-zero status code returned while running Pad node. Name:'a b' Status Message: Pad reflect: x",
            ("a b", "Pad"),
        ),
        ("Node (r) Op (Resize) [ShapeInferenceError] Number of elements", ("r", "Resize")),
        ("Resize-19 node 'up': scales has 3 entries, expected 2", ("up", "Resize-19")),
        ("Could not find an implementation for Resize(19) node with name 'u16'", ("u16", "Resize")),
        ("Invalid rank for input: x Got: 3 Expected: 4", None),
    ],
)
def test_the_node_a_side_s_error_names(text, expected):
    assert failing_node(text) == expected
