"""The numbers and words compare prints, on real runs: which side a relative error divides by, ulps only
where they mean something, how many swapped nodes were compared, a --save-repro that writes nothing, a
reproducer's known id, the wall time; and a -v run that leaves the user's log whole."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import NEVER

F32 = TensorProto.FLOAT


def _pad_model(path) -> str:
    """A one-node reflect Pad on which both sides agree (opset 19)."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect")
    graph = helper.make_graph(
        [node],
        "pad",
        [helper.make_tensor_value_info("x", F32, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", F32, [1, 2, 8, 8])],
        [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return str(path)


def test_verbose_compare_appending_to_a_log_keeps_every_earlier_line_and_the_progress(tmp_path):
    """``customops compare MODEL -v >> build.log 2>&1``: the side processes share the user's stderr and
    must never truncate it; the earlier lines, the progress lines and the verdict all end up there."""
    model = _pad_model(tmp_path / "pad.onnx")
    log = tmp_path / "build.log"
    earlier = [f"earlier build step {i}" for i in range(5)]
    log.write_text("".join(f"{line}\n" for line in earlier))
    command = [sys.executable, "-m", "customops.cli.main", "compare", model, "-v"]
    with open(log, "a") as out:  # >> build.log 2>&1
        proc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=NEVER)
    text = log.read_text()
    assert proc.returncode == 0, text
    lines = text.splitlines()
    assert lines[: len(earlier)] == earlier, text
    assert "running the model with ORT's built-in kernels" in text, text
    assert "node 1/1: pad [Pad-19] alone on three sides" in text, text
    assert "compare took" in text and "AGREE" in text, text
    assert "\0" not in text  # no hole left by a truncation under a writer's offset
