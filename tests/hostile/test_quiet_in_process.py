"""-q in a process that runs several commands (customops.cli.main.main called in-process, as a library
user or a test does): the sides' children of compare outlive a command and serve the next one, and a
child started by a command without -q holds that command's stderr for the note of a first compilation."""

from __future__ import annotations

import textwrap

from tests.helpers import DEVIATION, run_python

SCRIPT = """
import sys
import numpy as np
import onnx
from customops.cli.main import main
from tests.helpers import one_node_model

x = np.arange(16, dtype=np.int32).reshape(4, 4)
model, _ = one_node_model(
    "CenterCropPad", {{"input_data": x, "shape": np.array([2, 6], np.int64)}}, 18, initializers=("shape",)
)
onnx.save(model, {crop!r})
status = main(["compare", {crop!r}])  # compiles nothing in the children, which stay up
print("=== quiet", file=sys.stderr, flush=True)
status = main(["compare", "-q", {deviation!r}])  # a Resize: the children compile its loops
print("status", status, file=sys.stderr, flush=True)
"""


def test_quiet_compare_after_a_loud_one_in_the_same_process_prints_no_progress(tmp_path):
    """The second command (-q) printed the note of the first compilation, written by the custom side's
    child that the first command started with its stderr."""
    code = SCRIPT.format(crop=str(tmp_path / "crop.onnx"), deviation=DEVIATION)
    proc = run_python("-c", textwrap.dedent(code), env={"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    quiet = proc.stderr.split("=== quiet\n", 1)[1]
    assert quiet == "status 1\n", quiet
