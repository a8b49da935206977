"""``customops inspect``: a model's interface, opsets and size, and the rewriter's own decision per node,
without ONNX Runtime."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from customops.cli.main import main
from customops.model.inspect import inspect_model
from customops.model.rewriter import rewrite_model
from tests.helpers import ROOT, one_error_line, run_cli, run_python

PIPELINE = os.path.join(ROOT, "customops", "examples", "preprocess_pipeline.onnx")


def _mixed_model() -> onnx.ModelProto:
    """Symbolic dims; a Pad in the graph, a Resize in a local function, a Pad with mode wrap, which Pad-18 does not have (not swapped)."""
    fn = helper.make_function(
        "local",
        "Up",
        ["a"],
        ["b"],
        [helper.make_node("Resize", ["a", "", "s"], ["b"], mode="nearest")],
        [helper.make_opsetid("", 18)],
        [],
    )
    fn.node.insert(
        0, helper.make_node("Constant", [], ["s"], value=numpy_helper.from_array(np.ones(4, np.float32)))
    )
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad_x", mode="reflect"),
        helper.make_node("Up", ["p"], ["y"], name="call_up", domain="local"),
        helper.make_node("Pad", ["mask", "pads"], ["m"], name="pad_mask", mode="wrap"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", 8]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", 1, 4, 4]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("m", TensorProto.BOOL, ["batch", 1, 6, 6]),
        ],
        [pads],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)], functions=[fn]
    )
    model.ir_version = 8
    return model


def test_inspect_reports_interface_opsets_and_the_rewriters_decisions(tmp_path):
    path = tmp_path / "mixed.onnx"
    onnx.save(_mixed_model(), path)
    s = inspect_model(path)
    assert [(v.name, v.dtype, v.shape) for v in s.inputs] == [
        ("x", "float", ["batch", 3, "height", 8]),
        ("mask", "bool", ["batch", 1, 4, 4]),
    ]
    assert s.outputs[0].shape is None and s.outputs[1].shape == ["batch", 1, 6, 6]
    assert s.opset_imports == {"ai.onnx": 18, "local": 1}
    assert s.ir_version == 8 and s.file_bytes == path.stat().st_size
    assert s.node_count == 5  # three in the graph, two in the function
    # the same decisions, with the same reasons, as the rewriter's report
    report = rewrite_model(_mixed_model()).nodes
    assert [(g.op, g.scope, g.count) for g in s.swaps] == sorted(
        {(r.op, r.scope, 1) for r in report if r.status == "swapped"}
    )
    assert {g.scope for g in s.swaps} == {"graph", "function Up"}
    assert [(r.node, r.reason) for r in s.not_swapped] == [
        (r.node, r.reason) for r in report if r.status == "skipped"
    ]
    assert [r.node for r in s.not_swapped] == ["pad_mask"]
    assert "invalid mode 'wrap'" in s.not_swapped[0].reason


def test_inspect_counts_each_swapped_op_version_of_a_bundled_model(capsys):
    assert main(["inspect", PIPELINE, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {(g["op"], g["count"]) for g in out["swaps"]} == {
        ("Resize-19", 2),
        ("Pad-19", 2),
        ("CenterCropPad-18", 1),
    }
    assert out["not_swapped"] == [] and out["checker"] == "ok"
    assert out["inputs"][0] == {"name": "image", "dtype": "uint8", "shape": [1, 3, 60, 80]}
    assert main(["inspect", PIPELINE]) == 0
    text = capsys.readouterr().out
    assert "Pad-19 x2 in graph" in text and "would swap 5 node(s)" in text


def test_inspect_of_a_rewritten_model_says_so(tmp_path, capsys):
    path = tmp_path / "rewritten.onnx"
    onnx.save(rewrite_model(_mixed_model()).model, path)
    assert main(["inspect", str(path)]) == 0
    assert "already rewritten: 2 node(s)" in capsys.readouterr().out


def test_inspect_refuses_what_is_not_a_model_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07not a model at all")
    before = bad.read_bytes()
    assert main(["inspect", str(bad)]) == 2
    assert "is not a readable ONNX model" in one_error_line(capsys)
    assert bad.read_bytes() == before
    assert main(["inspect", str(tmp_path / "missing.onnx")]) == 2
    one_error_line(capsys)


def test_inspect_does_not_import_onnx_runtime():
    code = (
        "import sys\nfrom customops.cli.main import main\n"
        f"assert main(['inspect', {PIPELINE!r}]) == 0\n"
        "print(sorted(m for m in ('onnxruntime', 'onnxruntime_extensions', 'numba', 'onnx.reference') if m in sys.modules))"
    )
    run = run_python("-c", code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "[]"


def test_inspect_command_line_with_json():
    run = run_cli("inspect", PIPELINE, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["node_count"] == 10
