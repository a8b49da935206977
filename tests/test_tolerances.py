"""compare's per-tensor tolerances (--rtol/--atol NAME:VALUE) on a tensor that is a swapped node's output
but not a graph output, and on names that hold a colon (as TensorFlow exports name tensors: 'x:0')."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from customops.comparison.command import tolerances
from customops.comparison.inputs import generate_inputs
from customops.comparison.pipeline import compare_model

INNER = "small:0"
"""The Resize's output: read by the Pad, not a graph output; named as a TensorFlow export would."""


def _inner_deviation_model() -> onnx.ModelProto:
    """A Resize where ORT leaves the spec (R-ALIGN-CORNERS-INT-LENGTH) whose output only feeds a Pad."""
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 0.6, 0.6], np.float32), "s")
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p")
    graph = helper.make_graph(
        [
            helper.make_node(
                "Resize",
                ["x", "", "s"],
                [INNER],
                name="down",
                mode="linear",
                coordinate_transformation_mode="align_corners",
            ),
            helper.make_node("Pad", [INNER, "p"], ["y"], name="pad", mode="edge"),
        ],
        "inner",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [scales, pads],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def test_a_swapped_node_s_own_output_takes_its_own_tolerance(tmp_path):
    """The Resize differs (its output and, through the Pad, the graph output): a tolerance loose enough
    for both, given by name, makes compare agree and is recorded under the inner tensor's name; loose for
    the graph output alone, the Resize still differs."""
    model = _inner_deviation_model()
    feed = generate_inputs(model)
    plain = compare_model(model, feed).report
    assert plain.verdict == "disagree"
    (node,) = [n for n in plain.nodes if n.node == "down"]
    assert node.output == INNER and node.verdict == "disagree"
    loose = 2 * node.in_model.needed_atol
    both = compare_model(model, feed, tolerances={INNER: (None, loose), "y": (None, loose)}).report
    assert both.verdict == "agree", both.summary
    assert both.tolerances[f"tensor {INNER}"] == {"rtol": None, "atol": loose}
    output_only = compare_model(model, feed, tolerances={"y": (None, loose)}).report
    assert [n.verdict for n in output_only.nodes if n.node == "down"] == ["disagree"]


def test_a_tensor_name_may_hold_colons():
    """NAME:VALUE splits at the last colon: 'small:0:0.5' is 0.5 for the tensor 'small:0'."""
    assert tolerances([f"{INNER}:0.25"], [f"{INNER}:0.5", "1e-3"]) == (None, 1e-3, {INNER: (0.25, 0.5)})
