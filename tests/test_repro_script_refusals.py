"""repro.py (customops.eval.cases.repro_script, the program beside every test case) where ONNX Runtime refuses
the case: it exits 1 while the spec answers the case (output_0.pb present), 0 when the spec rejects it
too. Run on a committed finding of ORT rejecting a valid case, with the script as it is now."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx

from customops.eval.cases.testcase import read_inputs, tensor_value, write_test_case
from tests.helpers import NEVER, ROOT


def _rejecting_finding() -> Path:
    """The first committed reproducer of ORT refusing a case the spec answers."""
    for case in sorted((Path(ROOT) / "findings").iterdir()):
        finding = case / "finding.json"
        if finding.is_file():
            sig = json.loads(finding.read_text())["signature"]
            if (sig["side"], sig["kind"]) == ("builtin", "rejects-valid"):
                return case
    raise AssertionError("findings/ holds no builtin rejects-valid group")


def _repro(case: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "repro.py"], cwd=case, capture_output=True, text=True, timeout=NEVER
    )


def test_repro_py_fails_while_ort_refuses_what_the_spec_answers(tmp_path):
    source = _rejecting_finding()
    model = onnx.load(source / "model.onnx")
    constants = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in constants]
    feed = read_inputs(source / "test_data_set_0", names, 1 << 26)
    answer = onnx.TensorProto()
    answer.ParseFromString((source / "test_data_set_0" / "output_0.pb").read_bytes())
    expected = tensor_value(answer, "output_0.pb")

    answered = tmp_path / "answered"
    answered.mkdir()
    write_test_case(answered, model, feed, expected)
    proc = _repro(answered)
    assert proc.returncode == 1, source.name + "\n" + proc.stdout + proc.stderr
    assert "ONNX Runtime refuses the case" in proc.stdout and "DISAGREE" in proc.stdout

    rejected = tmp_path / "rejected"  # the same case without the spec's answer: both refuse it
    rejected.mkdir()
    write_test_case(rejected, model, feed, None)
    proc = _repro(rejected)
    assert proc.returncode == 0 and "AGREE" in proc.stdout, proc.stdout + proc.stderr
