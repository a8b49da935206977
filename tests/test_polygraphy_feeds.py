"""A Polygraphy inputs file may hold several feeds (one per iteration of ``polygraphy run``): compare runs
the first, as its help says."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.helpers import run_cli


def _encoded(value: np.ndarray) -> dict[str, str]:
    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=False)
    return {"array": base64.b64encode(buffer.getvalue()).decode(), "polygraphy_class": "ndarray"}


def test_of_two_feeds_the_first_is_compared(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge", name="pad")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")],
    )
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), model)
    first = np.array([[1, 2, 3]], np.float32)
    second = np.array([[7, 8, 9]], np.float32)
    feeds = tmp_path / "feeds.json"
    feeds.write_text(json.dumps([{"x": _encoded(first)}, {"x": _encoded(second)}]))
    outputs = tmp_path / "out.npz"
    proc = run_cli("compare", str(model), "--inputs", str(feeds), "--save-outputs", str(outputs), "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with np.load(outputs, allow_pickle=False) as got:
        for side in ("builtin", "custom"):
            assert np.array_equal(got[f"{side}/y"], np.pad(first, [(0, 0), (1, 1)], mode="edge")), side
