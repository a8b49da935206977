"""compare survives a side that dies, keeps ONNX Runtime's log out of its one line, compares an
already-rewritten model in its restored form, and stops cleanly on Ctrl-C and SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.eval.running.sides import INJECT_ENV
from tests.helpers import NEVER, run_cli, run_python

ROOT = Path(__file__).resolve().parents[2]
DEVIATION = ROOT / "customops" / "examples" / "ort_deviation.onnx"


def test_a_custom_side_that_aborts_is_reported_and_compare_lives_on(tmp_path):
    report = tmp_path / "r.json"
    proc = run_cli("compare", str(DEVIATION), "--json", str(report), env={INJECT_ENV: "abort:custom"})
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("FAILED: the model does not run on the custom side: the custom side crashed")
    assert "SIGABRT" in summary
    data = json.loads(report.read_text())
    assert data["verdict"] == "failed"
    assert data["sides"]["builtin"]["ok"] and "crashed" in data["sides"]["custom"]["error"]


def test_a_builtin_side_that_aborts_is_reported_too(tmp_path):
    proc = run_cli("compare", str(DEVIATION), env={INJECT_ENV: "abort:builtin"})
    assert proc.returncode == 1, proc.stderr
    assert "the built-in side crashed (killed by SIGABRT)" in proc.stdout


def _string_model_through_identity(path: Path) -> Path:
    """A string constant that is not UTF-8 reaches our Resize through an Identity: no check before the run
    can see it, and onnxruntime-extensions' layer aborts on it (in the custom side's child)."""
    text = helper.make_tensor("s", TensorProto.STRING, [1, 1, 1, 2], [b"\xffa", b"b"])
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["s"], ["si"]),
            helper.make_node("Resize", ["si", "", "scales"], ["y"], mode="nearest", name="r"),
        ],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)],
        [text, scales],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def test_a_real_abort_in_the_layer_takes_down_only_the_child(tmp_path):
    model = _string_model_through_identity(tmp_path / "s.onnx")
    proc = run_cli("compare", str(model))
    assert proc.returncode == 2, proc.stderr  # neither side runs it: ORT's CPU Resize has no string kernel
    lines = [line for line in proc.stderr.splitlines() if line.startswith("customops compare: error")]
    assert len(lines) == 1 and "the custom side crashed (killed by SIGABRT)" in lines[0]
    assert "not valid UTF-8" in lines[0] or "UnicodeDecodeError" in lines[0]
    assert "Traceback" not in proc.stderr


def test_ort_log_lines_stay_out_unless_verbose(tmp_path):
    # a Pad of ours first, so that the model is run (a model with no node of ours is not)
    pad = helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad")
    node = helper.make_node("Foo", ["padded"], ["y"], domain="some.vendor")
    graph = helper.make_graph(
        [pad, node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1], np.int64), "pads")],
    )
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("some.vendor", 1)]
    path = tmp_path / "vendor.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    proc = run_cli("compare", str(path))
    assert proc.returncode == 2
    assert "\x1b[" not in proc.stderr and "[E:onnxruntime" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("customops compare: error") and "some.vendor:Foo" in last  # ORT's own message


def test_an_already_rewritten_model_is_compared_in_its_restored_form(tmp_path):
    rewritten = tmp_path / "rw.onnx"
    onnx.save(customops.rewrite(onnx.load(DEVIATION)), rewritten)
    proc = run_cli("compare", str(rewritten))
    assert proc.returncode == 1, proc.stderr
    assert "already rewritten (1 node(s) in the customops domain): comparing its restored form" in proc.stderr
    assert "builtin-leaves-spec" in proc.stdout.strip().splitlines()[-1]
    proc = run_cli("rewrite", str(rewritten), str(tmp_path / "again.onnx"))
    assert proc.returncode == 2 and "customops restore" in proc.stderr
    assert not (tmp_path / "again.onnx").exists()


def _slow_model(path: Path) -> Path:
    """Eight linear Resize x2-then-/2 pairs over a 1x3x1024x1024 image: a second or more on either side."""
    nodes, last = [], "x"
    up = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up")
    down = onnx.numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "down")
    for i in range(8):
        nodes.append(helper.make_node("Resize", [last, "", "up"], [f"u{i}"], mode="linear", name=f"up{i}"))
        nodes.append(
            helper.make_node("Resize", [f"u{i}", "", "down"], [f"d{i}"], mode="linear", name=f"down{i}")
        )
        last = f"d{i}"
    graph = helper.make_graph(
        nodes,
        "slow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1024, 1024])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)],
        [up, down],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def _signal_when(proc: subprocess.Popen, stream_line: str, sig: int) -> str:
    """Read ``proc``'s stderr until a line containing ``stream_line``, then send ``sig`` to its group;
    return the rest of stderr."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if stream_line in line:
            break
    else:
        pytest.fail("".join(seen))
    os.killpg(proc.pid, sig)
    return "".join(seen) + proc.stderr.read()


def _group_gone(pgid: int, seconds: float = NEVER) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(
    ("sig", "status", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_and_sigterm_stop_compare_and_its_children(tmp_path, sig, status, word):
    model = _slow_model(tmp_path / "slow.onnx")
    proc = subprocess.Popen(
        [sys.executable, "-m", "customops", "compare", str(model)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job is
    )
    err = _signal_when(proc, "running the model with customops kernels", sig)
    assert proc.wait(timeout=NEVER) == status, err
    assert err.strip().splitlines()[-1] == f"customops compare: {word}", err
    assert "Traceback" not in err
    assert _group_gone(proc.pid), "a child process outlived the command"


def test_sigterm_during_a_rewrite_leaves_nothing_behind(tmp_path):
    big = onnx.numpy_helper.from_array(np.zeros((64, 1024, 1024), np.float32), "big")  # 256 MiB to save
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    graph = helper.make_graph(
        [
            helper.make_node("Pad", ["x", "pads"], ["p"], mode="edge", name="pad"),
            helper.make_node("Add", ["big", "big"], ["b"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [
            helper.make_tensor_value_info("p", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, None),
        ],
        [big, pads],
    )
    source = tmp_path / "in" / "big.onnx"
    source.parent.mkdir()
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), source)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "customops", "rewrite", str(source), str(out_dir / "big.onnx")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + NEVER
    while not any(out_dir.iterdir()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    if proc.poll() is not None:
        pytest.skip("the rewrite finished before the signal could be sent")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=NEVER)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "customops rewrite: terminated"
    assert list(out_dir.iterdir()) == [], "a partial or temporary file was left behind"


def _big_output_model(path: Path, elements: int) -> Path:
    """A tiny file whose graph output is ``elements`` float32 values (ConstantOfShape), beside one Resize."""
    shape = onnx.numpy_helper.from_array(np.array([elements], np.int64), "shape")
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])
    graph = helper.make_graph(
        [
            helper.make_node("ConstantOfShape", ["shape"], ["big"], value=value),
            helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest", name="r"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [
            helper.make_tensor_value_info("big", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        ],
        [shape, scales],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def test_memory_stays_a_small_multiple_of_a_large_output(tmp_path):
    """A 64 MiB graph output from a 200-byte model: compare's processes peak at a few times the output,
    not at dozens (metrics go chunk by chunk; the largest process is measured from a wrapper)."""
    model = _big_output_model(tmp_path / "big.onnx", 16 << 20)
    wrapper = (
        "import resource, subprocess, sys;"
        "p = subprocess.run([sys.executable, '-m', 'customops', 'compare', sys.argv[1]], capture_output=True);"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", wrapper, str(model)], capture_output=True, text=True, timeout=NEVER
    )
    status, peak_kib = map(int, proc.stdout.split())
    assert status == 0, proc.stderr
    assert peak_kib < 1024 * 1024, (
        f"a process of compare peaked at {peak_kib / 1024:.0f} MiB for a 64 MiB output"
    )


def test_a_side_whose_outputs_exceed_the_limit_reports_it_instead_of_sending_them():
    from customops.eval.running.worker import Reply, bounded

    small = Reply("ok", {"y": np.zeros(10, np.float32)})
    assert bounded(small, 1000) is small
    big = bounded(Reply("ok", {"y": np.zeros(1000, np.float32)}), 1000)
    assert big.status == "error" and big.value is None and "4000 bytes, over the 1000" in big.message
    case = bounded(Reply("ok", np.zeros(1000, np.float32)), 1000)  # a fuzz case's one output
    assert case.status == "error" and case.error.startswith("run: MemoryError: ")


def test_compare_s_side_applies_its_output_limit_in_the_child(monkeypatch):
    """The limit travels with the request: the child refuses to send back more, on a real run."""
    from customops.eval.running import sides

    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1000])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1000])],
        ),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    monkeypatch.setattr(sides, "OUTPUT_LIMIT", 1000)
    run = sides.run_side(model.SerializeToString(), {"x": np.zeros(1000, np.float32)}, custom=False)
    assert run.values == {} and "4000 bytes, over the 1000" in (run.error or "")


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_metrics_chunk_by_chunk_are_those_of_one_pass(monkeypatch, chunk):
    from customops.eval.judging import metrics

    rng = np.random.default_rng(chunk)
    a = rng.standard_normal((3, 50)).astype(np.float32)
    b = (a + rng.standard_normal((3, 50)).astype(np.float32) * 1e-5).astype(np.float32)
    a[0, 3], b[0, 3], a[1, 7], b[2, 9] = np.nan, np.nan, np.inf, 0.0
    b[1, 1], b[2, 5] = 0.0, np.nan
    monkeypatch.setattr(metrics, "CHUNK", 1 << 30)
    whole = metrics.compare_arrays(a, b, 1e-5, 1e-6)
    monkeypatch.setattr(metrics, "CHUNK", chunk)
    assert metrics.compare_arrays(a, b, 1e-5, 1e-6) == whole
    # zeros against non-zeros: the skipped elements are counted across chunks, no ulp distance is given
    assert whole.mismatches > 0 and whole.max_ulp is None and "zero or subnormal" in whole.ulp_note
    assert not whole.nan_match
    clean = np.where(np.isfinite(a) & (a != 0), a, 1).astype(np.float32)
    near = np.nextafter(clean, np.float32(np.inf) * np.sign(clean)).astype(np.float32)
    monkeypatch.setattr(metrics, "CHUNK", 1 << 30)
    one_pass = metrics.compare_arrays(clean, near, 1e-5, 1e-6)
    monkeypatch.setattr(metrics, "CHUNK", chunk)
    assert metrics.compare_arrays(clean, near, 1e-5, 1e-6) == one_pass and one_pass.max_ulp == 1


HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interrupt_import.py")

START_POINTS = ["onnxruntime", "customops.model.rewriter", "customops.kernels.work"]
"""Modules whose first import marks a point of compare's start: the last native package its own process
imports (the sides' children are starting), the rewrite of the model, the work estimate of a node
isolated on three sides."""


@pytest.mark.parametrize("point", START_POINTS)
def test_ctrl_c_at_each_point_of_the_start_gives_one_line(point):
    """Synchronised on the point, not on a delay: the signal is sent once the command has reached it
    (tests/hostile/interrupt_import.py), so the test means the same on a loaded machine."""
    proc = run_python(HARNESS, point, "0", "SIGINT", "compare", str(DEVIATION))
    if proc.returncode == 1 and "DISAGREE" in proc.stdout and "Traceback" not in proc.stderr:
        pytest.skip("the comparison finished before the signal")  # a killer process starved of CPU
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == "customops compare: interrupted"  # after progress lines


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (keep the working directory off sys.path)")
def test_a_customops_directory_where_compare_runs_is_never_imported_by_its_children(tmp_path):
    """The sides' children are ``python -m customops.eval.running.child``: started in the user's directory, a
    ``customops`` package there (a downloaded model repository, say) would be imported instead of ours."""
    shadow = tmp_path / "customops"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('the shadow customops package was imported')\n")
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "customops.cli.main", "compare", str(DEVIATION)],
        capture_output=True,
        text=True,
        timeout=NEVER,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1, proc.stderr  # the deviation model disagrees: both sides ran
    assert "shadow" not in proc.stdout + proc.stderr
    assert "DISAGREE" in proc.stdout


@pytest.mark.parametrize(
    ("signum", "expected"), [(signal.SIGINT, "KeyboardInterrupt"), (signal.SIGTERM, "WorkerDied")]
)
def test_a_child_killed_by_ctrl_c_while_starting_is_the_users_interrupt(
    tmp_path, monkeypatch, signum, expected
):
    """A side's child ignores Ctrl-C from its first line; a Ctrl-C to the command that reaches a child
    still starting kills it, and the command stops as interrupted (it reported a dead worker, exit 2)."""
    from customops.eval.running.runner import SideProcess, WorkerDied
    from customops.eval.running.worker import Request

    (tmp_path / "sitecustomize.py").write_text(
        f"import os, signal\nsignal.signal({int(signum)}, signal.SIG_DFL)\nos.kill(os.getpid(), {int(signum)})\n"
    )
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", str(ROOT))])
    )
    side = SideProcess("builtin")
    try:
        with pytest.raises((KeyboardInterrupt, WorkerDied)) as info:
            side.submit(Request(b"", {}))
    finally:
        side.close()
    assert type(info.value).__name__ == expected


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
        return [int(p) for p in f.read().split()]


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie left to init counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads children from /proc (Linux)")
def test_sides_whose_command_is_killed_outright_end_on_their_own():
    """The command is SIGKILLed once the node alone is being run, while the reference side's child sleeps
    in an injected hang: the other two children see their connection close and end. Each child holds only
    its own end: a forked child keeping a copy of another's would keep that one waiting for ever."""
    env = {**os.environ, INJECT_ENV: "hang:reference"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "customops.cli.main", "compare", str(DEVIATION)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    children: list[int] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the three sides are asked for the node alone right after this line
            if "alone on three sides" in line:
                break
        children = _children(proc.pid)
        assert len(children) == 3, children
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + NEVER
        while time.monotonic() < deadline and sum(map(_gone, children)) < 2:
            time.sleep(0.05)
        assert sum(map(_gone, children)) >= 2  # the reference's child may still sleep in its hang
    finally:
        proc.kill()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
