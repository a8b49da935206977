"""Node names are text of the model: one that holds what ends a name in a runtime's error (``' Status
Message:``, ``': ``) or starts another error's pattern must not move where compare says a side stops
(a bad input then read as the sides parting ways: a finding, exit 1, blaming another node)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.eval.running.messages import failing_node
from tests.helpers import run_cli

SPOOF = "pre' Status Message: x"
"""A name whose start is the name of another node ('pre'), followed by what ends a name in ORT's text."""


def _crop_too_far(tmp_path, name: str) -> str:
    """x -> Relu 'pre' -> Pad ``name`` cropping 5 rows off an axis of 3: both sides refuse the Pad (ORT in
    its words, ours in its own), so the inputs are at fault."""
    pads = numpy_helper.from_array(np.array([0, 0, -5, 0, 0, 0, 0, 0], np.int64), "pads")
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="pre"),
            helper.make_node("Pad", ["r", "pads"], ["y"], name=name, mode="constant"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return str(path)


def test_a_name_holding_the_end_of_ort_s_name_field_is_still_one_failing_node(tmp_path):
    proc = run_cli("compare", _crop_too_far(tmp_path, SPOOF), "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("customops compare: error")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert f"both sides stop at {SPOOF!r} [Pad-18]" in lines[0]
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Non-zero status code returned while running Pad node. Name:'{SPOOF}' Status Message: no", SPOOF),
        (f"Pad-18 node {SPOOF!r}: pads -5 (begin)", SPOOF),
        # a name that is a whole ORT error of another node: the earliest match is the runtime's own
        ("Pad-18 node \"while running Relu node. Name:'pre' Status Message: z\": pads", None),
        ("Node (a) Op (Pad) b) Op (Pad) [ShapeInferenceError] pads", "a) Op (Pad) b"),
    ],
)
def test_the_name_is_the_longest_known_name_the_pattern_s_end_follows(text, expected):
    names = ["pre", "a", SPOOF, "a) Op (Pad) b", "while running Relu node. Name:'pre' Status Message: z"]
    found = failing_node(text, names)
    assert found is not None
    assert found[0] == (expected or names[-1])


def test_a_name_our_kernel_quotes_with_escapes_is_placed_on_its_node():
    from onnx import helper as h

    from customops.comparison.failures import fail_point

    name = "a\tb'\""
    nodes = {name: h.make_node("Pad", ["x", "p"], ["y"], name=name), "a": h.make_node("Relu", ["x"], ["r"])}
    text = f"Pad-18 node {name!r}: pads -5 (begin)"
    point = fail_point(text, nodes, {name: "Pad-18"})
    assert point is not None and point.node == name and point.op == "Pad-18"
