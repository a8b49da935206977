"""customops.bridge.seams.guarded: a hook installed through it must never take the process down,
whatever it does. What it returns reaches the layer as is: a value that is no (id, shape, data) triple
aborts the process (``terminate called after throwing an instance of 'pybind11::error_already_set'``),
and data shorter than its shape is read past its end. Runs in a child process (an abort)."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import run_python

CODE = """
import numpy as np
import customops
from customops.bench.hooks import Hooks
from tests.helpers import one_node_model

x = np.ones((1, 1, 2, 2), np.float32)
scales = np.array([1, 1, 2, 2], np.float32)
model, feed = one_node_model("Resize", {{"X": x, "roi": None, "scales": scales}}, 13)
sess = customops.InferenceSession(customops.rewrite(model))
Hooks().install(lambda k_id, feed, raw: {answer})
try:
    print("returned", sess.run(None, feed)[0].shape, flush=True)
except Exception as exc:
    print("raised", type(exc).__name__, flush=True)
"""


@pytest.mark.parametrize(
    "answer",
    ["None", "(k_id, (1, 1, 4, 4), np.zeros(3, np.float32))"],
    ids=["not-a-triple", "data-shorter-than-shape"],
)
def test_a_malformed_answer_of_a_guarded_hook_is_a_failed_run_not_an_abort(answer):
    """call_guarded handed the hook's answer to the layer unchecked."""
    proc = run_python("-c", textwrap.dedent(CODE.format(answer=answer)))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == "raised KernelError\n", proc.stdout
