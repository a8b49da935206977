"""onnx.reference, compare's third vote, runs in a child of its own with a time and a memory bound, and
only when the work a node asks of it (samples, taps, output elements) is within --reference-limit: a
RoiAlign roi of [-1e30, 0, 1e30, 4] is no third vote with a reason, not a runaway."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from customops.eval.running.sides import INJECT_ENV
from customops.kernels.work import reference_work
from tests.helpers import DEVIATION, run_cli

ROI_ATTRS = {"output_height": 1, "output_width": 1, "sampling_ratio": 0, "spatial_scale": 1.0}


def _roi_model(path: Path) -> Path:
    node = helper.make_node("RoiAlign", ["X", "rois", "bi"], ["Y"], sampling_ratio=0, name="ra")
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 4, 4]),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("bi", TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), path)
    return path


def _roi_inputs(path: Path, roi: list[float]) -> Path:
    np.savez(
        path, X=np.ones((1, 1, 4, 4), np.float32), rois=np.array([roi], np.float32), bi=np.zeros(1, np.int64)
    )
    return path


def test_roi_align_s_work_counts_samples_from_the_roi_s_own_size():
    x, bi = np.ones((1, 3, 4, 4), np.float32), np.zeros(1, np.int64)
    small = reference_work("RoiAlign", [x, np.array([[0, 0, 2, 2]], np.float32), bi], ROI_ATTRS)
    wide = reference_work("RoiAlign", [x, np.array([[0, 0, 2000, 2]], np.float32), bi], ROI_ATTRS)
    # 2 rows x 1998 extra samples, each 45 lines of the table, 21 per channel and 12 for its object
    assert wide - small == (45 + 21 * 3 + 12) * 2 * (2000 - 2)
    huge = reference_work("RoiAlign", [x, np.array([[-1e30, 0, 1e30, 4]], np.float32), bi], ROI_ATTRS)
    assert huge > 1e30
    for bad in (np.inf, np.nan):
        assert (
            reference_work("RoiAlign", [x, np.array([[0, 0, bad, 4]], np.float32), bi], ROI_ATTRS) == math.inf
        )
    fixed = dict(ROI_ATTRS, sampling_ratio=2)  # a fixed ratio does not read the roi's size
    assert reference_work("RoiAlign", [x, np.array([[-1e30, 0, 1e30, 4]], np.float32), bi], fixed) == (
        reference_work("RoiAlign", [x, np.array([[0, 0, 2, 2]], np.float32), bi], fixed)
    )


def test_grid_sample_s_work_counts_channels_times_grid_points_times_taps():
    x, grid = np.zeros((1, 500, 2, 2), np.float32), np.zeros((1, 30, 30, 2), np.float32)
    work = reference_work("GridSample", [x, grid], {"mode": "linear"})
    assert work >= 500 * 900 * 4 > 30 * (x.size + grid.size)  # far past what the inputs' elements say


def test_a_roi_whose_work_exceeds_the_limit_is_no_third_vote_with_a_reason(tmp_path):
    """Its inputs have 21 elements; the roi asks for 2 x 3000 samples: over a limit of 1000."""
    model = _roi_model(tmp_path / "m.onnx")
    inputs = _roi_inputs(tmp_path / "in.npz", [0, 0, 3000, 2])
    report = tmp_path / "r.json"
    proc = run_cli(
        "compare", str(model), "--inputs", str(inputs), "--reference-limit", "1000", "--json", str(report)
    )
    assert proc.returncode in (0, 1), proc.stderr
    (node,) = json.loads(report.read_text())["nodes"]
    error = node["isolated"]["errors"]["reference"]
    assert error.startswith("not run:") and "over the reference limit 1000" in error


def test_the_issue_s_roi_is_skipped_at_once_with_the_default_limits(tmp_path):
    model = _roi_model(tmp_path / "m.onnx")
    inputs = _roi_inputs(tmp_path / "in.npz", [-1e30, 0, 1e30, 4])
    report = tmp_path / "r.json"
    proc = run_cli("compare", str(model), "--inputs", str(inputs), "--json", str(report))
    assert proc.returncode == 1, proc.stderr  # our kernel refuses the roi too: that side failed
    (node,) = json.loads(report.read_text())["nodes"]
    assert "over the reference limit" in node["isolated"]["errors"]["reference"]


def test_a_reference_that_never_answers_is_stopped_and_is_no_third_vote(tmp_path):
    """The reference's child sleeps for an hour on every request: whatever the machine's speed, the
    timeout of 1 s is reached first, and the node is judged on two sides."""
    report = tmp_path / "r.json"
    proc = run_cli(
        "compare",
        str(DEVIATION),
        "--reference-timeout",
        "1",
        "--json",
        str(report),
        env={INJECT_ENV: "hang:reference"},
    )
    assert proc.returncode in (0, 1), proc.stderr
    nodes = json.loads(report.read_text())["nodes"]
    assert nodes and all(
        n["isolated"]["errors"]["reference"] == "not run: no answer within 1 s (--reference-timeout)"
        for n in nodes
    )


def test_a_reference_timeout_must_be_positive_and_finite(tmp_path):
    for value in ("0", "-1", "nan", "inf"):
        proc = run_cli("compare", str(DEVIATION), "--reference-timeout", value)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "--reference-timeout" in proc.stderr


def test_the_reference_child_runs_under_a_memory_bound(tmp_path):
    """The child of the reference side has an address-space limit (RLIMIT_AS), within what it maps
    plus REFERENCE_MEMORY: an allocation past it is a MemoryError of that side, not the OOM killer."""
    from customops.eval.running.runner import SideProcess
    from customops.eval.running.worker import REFERENCE_MEMORY, Request

    model = onnx.load(_roi_model(tmp_path / "m.onnx"))
    feed = {"X": np.ones((1, 1, 4, 4), np.float32), "rois": np.array([[0, 0, 2, 2]], np.float32)}
    feed["bi"] = np.zeros(1, np.int64)
    worker = SideProcess("reference")
    try:
        reply = worker.result(worker.submit(Request(model.SerializeToString(), feed)))
        assert reply.status == "ok", reply
        assert worker.proc is not None
        text = Path(f"/proc/{worker.proc.pid}/limits").read_text()
        pages = int(Path(f"/proc/{worker.proc.pid}/statm").read_text().split()[0])
    finally:
        worker.close()
    line = next(line for line in text.splitlines() if line.startswith("Max address space"))
    bound = line.split()[3]
    assert bound != "unlimited" and int(bound) <= pages * os.sysconf("SC_PAGE_SIZE") + REFERENCE_MEMORY


def test_the_reference_timeout_counts_from_its_request_not_from_the_children_starting(monkeypatch):
    """A fake clock jumps 1000 s whenever a side's child (re)starts, as a slow start on a loaded machine
    would: the reference's 60 s still hold for its run, so it answers. Its start, or another side's
    before it, is not its run's time (a timed-out reference restarts, and every later node would lose its
    vote the same way)."""
    import time

    from customops.eval.running import runner, sides
    from customops.eval.running.worker import Request

    real = time.perf_counter
    jumped = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + jumped[0])
    start = runner.SideProcess.start

    def slow_start(self, fork=False):
        jumped[0] += 1000.0
        start(self, fork)

    monkeypatch.setattr(runner.SideProcess, "start", slow_start)
    sides.close_all()  # every side's child must start again
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    feed = {"x": np.array([-1.0, 0.0, 2.0], np.float32)}
    jobs = [("builtin", Request(model, feed, whole=True)), sides.reference_request(model, feed)]
    builtin, reference = sides.run_sides(jobs, {"reference": 60.0})
    assert builtin.error is None and reference.error is None, reference.error
    assert sides.reference_answer(reference, 60.0)[0].tolist() == [0.0, 0.0, 2.0]
