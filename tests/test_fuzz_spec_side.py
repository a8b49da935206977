"""The fuzzer's reproducer of a group where OUR side is the odd one out: its output_0.pb (what repro.py
and every reader take as the spec's answer) is the reference's output, never ours. The committed
findings hold only groups of the built-in side, so a deliberately wrong kernel of ours makes one here
(tests.helpers.wrong_kernel_dir)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from customops.eval.cases.testcase import read_inputs
from tests.helpers import NEVER, ROOT, WRONG_KERNEL_ENV, run_cli, strict_json, wrong_kernel_dir


def _pb(path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def test_a_group_of_our_side_keeps_the_reference_answer_and_repro_py_says_ort_agrees(tmp_path):
    site = wrong_kernel_dir(tmp_path / "site")
    env = {"PYTHONPATH": f"{site}:{ROOT}", WRONG_KERNEL_ENV: "pad:add1"}  # our Pad adds 1
    out = tmp_path / "camp"
    args = ["--op", "Pad", "--opset", "19", "--cases", "8", "--seed", "0", "--shrink-budget", "4"]
    proc = run_cli("fuzz", *args, "--out", str(out), "-q", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    groups = strict_json((out / "summary.json").read_text())["groups"]
    ours = [g for g in groups if g["signature"]["side"] == "custom" and g["signature"]["kind"] == "value"]
    assert ours, [g["text"] for g in groups]
    for g in ours:
        case = out / g["dir"]
        finding = json.loads((case / "finding.json").read_text())
        assert finding["spec_side"] in ("reference", "builtin"), finding["spec_side"]
        model = onnx.load(case / "model.onnx")
        names = [i.name for i in model.graph.input]
        feed = read_inputs(case / "test_data_set_0", names, 1 << 26)
        (spec,) = ReferenceEvaluator(model).run(None, feed)
        expected = _pb(case / "test_data_set_0" / "output_0.pb")
        assert expected.dtype == spec.dtype and np.array_equal(expected, spec, equal_nan=True), g["dir"]
        # ORT's built-in Pad follows the spec here: the reproducer, run as users run it, says so
        repro = subprocess.run(
            [sys.executable, "repro.py"],
            cwd=case,
            capture_output=True,
            text=True,
            timeout=NEVER,
            env={k: v for k, v in os.environ.items() if k != WRONG_KERNEL_ENV},
        )
        assert repro.returncode == 0 and "AGREE" in repro.stdout, repro.stdout + repro.stderr
