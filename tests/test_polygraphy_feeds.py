"""A Polygraphy inputs file may hold several feeds (one per iteration of ``polygraphy run``): compare runs
the first, as its help says. The file is the real ``polygraphy run --iterations 2 --save-inputs``'s."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper
from polygraphy.json import load_json

from tests.helpers import polygraphy, run_cli


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
    polygraphy(
        "run", str(model), "--onnxrt", "--iterations", "2", "--save-inputs", "feeds.json", cwd=tmp_path
    )
    feeds = load_json(str(tmp_path / "feeds.json"))
    first, second = (feed["x"] for feed in feeds)
    assert not np.array_equal(first, second)
    outputs = tmp_path / "out.npz"
    proc = run_cli(
        "compare", str(model), "--inputs", str(tmp_path / "feeds.json"), "--save-outputs", str(outputs), "-q"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with np.load(outputs, allow_pickle=False) as got:
        for side in ("builtin", "custom"):
            assert np.array_equal(got[f"{side}/y"], np.pad(first, [(0, 0), (1, 1)], mode="edge")), side
