"""compare with no node swapped (a model without a node of our ops, or --ops, --nodes and --exclude that
leave none): the verdict says that nothing was compared and why, neither side is run, the command exits 2
(never a silent pass) and writes the report with its own verdict; ``customops.compare`` returns it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.registry import OP_TYPES
from tests.helpers import DEVIATION, run_cli, strict_json

NOTHING = "NOTHING TO COMPARE: no node is swapped, so neither side was run"


def _relu_model(path: Path) -> Path:
    """A Relu on a symbolic batch: no node of an op customops implements."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def test_a_model_without_a_node_of_our_ops_is_nothing_to_compare_and_is_not_run(tmp_path):
    model = _relu_model(tmp_path / "relu.onnx")
    report_path, page = tmp_path / "r.json", tmp_path / "r.html"
    proc = run_cli("compare", str(model), "--json", str(report_path), "--html", str(page))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith(NOTHING) and "no node of an op customops implements" in line, line
    assert all(op in line for op in OP_TYPES) and "customops ops" in line, line
    assert "running the model" not in proc.stderr and "generated inputs:" not in proc.stderr, proc.stderr
    report = strict_json(report_path.read_text())
    assert report["verdict"] == "nothing-to-compare" and report["summary"] == line
    assert report["outputs"] == [] and report["nodes"] == [] and report["skipped"] == []
    assert "whole runs" not in report["phase_seconds"], report["phase_seconds"]
    assert report["sides"]["builtin"]["ok"] is None and report["sides"]["custom"]["ok"] is None
    assert "nothing-to-compare" in page.read_text()


@pytest.mark.parametrize(
    "choice, reason",
    [
        (["--ops", "Pad"], "op type not selected (selected: Pad)"),
        (["--nodes", "scale_input,add_bias"], "node not selected"),
        (["--exclude", "downsample_align_corners"], "excluded"),
    ],
)
def test_choices_that_leave_no_node_swapped_are_nothing_to_compare(tmp_path, choice, reason):
    """The bundled deviation model's one Resize, left out by each option: its line names the node and
    why, and -q prints that line alone."""
    report_path = tmp_path / "r.json"
    proc = run_cli("compare", DEVIATION, *choice, "-q", "--json", str(report_path))
    assert proc.returncode == 2 and proc.stderr == "", proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith(NOTHING), line
    assert f"('downsample_align_corners' [Resize-13]: {reason})" in line, line
    report = strict_json(report_path.read_text())
    assert report["verdict"] == "nothing-to-compare"
    assert [s["node"] for s in report["skipped"]] == ["downsample_align_corners"]


def test_the_api_returns_a_report_whose_verdict_is_nothing_to_compare(tmp_path):
    model = _relu_model(tmp_path / "relu.onnx")
    report = customops.compare(str(model), {"x": np.ones((1, 3, 8, 8), np.float32)})
    assert report.verdict == "nothing-to-compare" and report.summary.startswith(NOTHING)
    assert report.outputs == [] and report.nodes == []
    excluded = customops.compare(DEVIATION, exclude=["downsample_align_corners"])
    assert excluded.verdict == "nothing-to-compare" and "excluded" in excluded.summary
