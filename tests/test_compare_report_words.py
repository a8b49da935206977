"""The numbers and words compare prints, on real runs: which side a relative error divides by, ulps only
where they mean something, how many swapped nodes were compared, a --save-repro that writes nothing, a
reproducer's known id, the wall time; and a -v run that leaves the user's log whole."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.eval.judging.metrics import compare_arrays
from tests.helpers import DEVIATION, NEVER, ROOT, run_cli, run_python, strict_json

F32 = np.float32


def _pad_model(path) -> str:
    """A one-node reflect Pad on which both sides agree (opset 19)."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect")
    graph = helper.make_graph(
        [node],
        "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])],
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


@pytest.fixture(scope="module")
def deviation_run(tmp_path_factory):
    """compare on the bundled deviation model (the README's quickstart) with every output written, timed
    from outside: (process, report, saved outputs, the --save-repro directory, wall seconds)."""
    out = tmp_path_factory.mktemp("deviation")
    began = time.monotonic()
    proc = run_cli(
        "compare",
        DEVIATION,
        "--json",
        str(out / "r.json"),
        "--save-outputs",
        str(out / "o.npz"),
        "--save-repro",
        str(out / "repro"),
    )
    wall = time.monotonic() - began
    assert proc.returncode == 1, proc.stderr
    report = strict_json((out / "r.json").read_text())
    return proc, report, dict(np.load(out / "o.npz")), out / "repro", wall


def test_the_relative_error_divides_by_our_side_and_the_header_says_so(deviation_run):
    """The report's max rel of a graph output is |A - B| / max(|B|, atol), B being ours (the spec side),
    as docs/compare.md says; the table's column names the denominator."""
    proc, report, saved, _, _ = deviation_run
    (out,) = report["outputs"]
    m = out["metrics"]
    a = saved[f"builtin/{out['name']}"].astype(np.float64)
    b = saved[f"custom/{out['name']}"].astype(np.float64)
    by_ours = float((np.abs(a - b) / np.maximum(np.abs(b), m["atol"])).max())
    by_builtin = float((np.abs(a - b) / np.maximum(np.abs(a), m["atol"])).max())
    assert abs(by_ours - by_builtin) > 1e-3 * by_ours  # the two readings differ on this model
    assert m["max_rel"] == pytest.approx(by_ours, rel=1e-9), (m["max_rel"], by_ours, by_builtin)
    assert m["dtype_a"] == str(saved[f"builtin/{out['name']}"].dtype)
    header = proc.stdout.splitlines()[2]
    assert "max rel /|B|" in header, proc.stdout


def test_ulps_across_a_sign_change_are_not_counted_and_the_report_says_why(deviation_run):
    """On the deviation model values change sign between the sides: a ulp count there measures the
    exponent range (2 billion next to a max abs of 1.3), so the JSON has null with the reason and the
    table n/a with the reason below it."""
    proc, report, saved, _, _ = deviation_run
    (out,) = report["outputs"]
    a, b = saved[f"builtin/{out['name']}"], saved[f"custom/{out['name']}"]
    crossing = int(np.count_nonzero((a != b) & (np.signbit(a) != np.signbit(b))))
    assert crossing > 0
    m = out["metrics"]
    assert m["max_ulp"] is None and f"{crossing} differing element(s) change sign" in m["ulp_note"], m
    row = next(line for line in proc.stdout.splitlines() if line.startswith(out["name"] + " "))
    assert " n/a " in row, proc.stdout
    assert f"  {out['name']}: ulp not counted: {crossing} differing element(s) change sign" in proc.stdout


def test_ulps_of_a_zero_against_a_tiny_value_are_not_counted():
    """0 against 1.5e-7 is 874 million float32 steps: not a distance worth printing; where both values
    are normal and of one sign the count stays."""
    m = compare_arrays(np.array([0.0, 1.0], F32), np.array([1.5e-7, 1.0], F32), 1e-5, 1e-5)
    assert m.passed and m.max_ulp is None and "1 differing element(s) hold a zero or subnormal" in m.ulp_note
    up = np.nextafter(F32(-2), F32(-3))
    m = compare_arrays(np.array([up, 0.0], F32), np.array([-2.0, 0.0], F32), 0.0, 0.0)
    assert m.max_ulp == 1 and m.ulp_note is None


def test_a_reproducer_readme_names_its_known_id(deviation_run):
    _, report, _, repro, _ = deviation_run
    (node,) = report["nodes"]
    assert node["known"] == ["R-ALIGN-CORNERS-INT-LENGTH"]
    first = (repro / node["node"] / "README.txt").read_text().splitlines()[0]
    assert "(known: R-ALIGN-CORNERS-INT-LENGTH)" in first, first


def test_compare_reports_the_wall_time_of_the_command_from_its_start(deviation_run):
    """ "compare took X s" counts from the process's start (Python, imports, reading the model), and the
    report's phases begin with that start, so they add up to the command's time up to the report."""
    proc, report, _, _, wall = deviation_run
    phases = report["phase_seconds"]
    assert next(iter(phases)) == "start" and phases["start"] > 0, phases
    took = float(re.search(r"compare took ([\d.]+) s", proc.stderr).group(1))
    # one clock from one start: the phases telescope (each rounded to 1 ms), the line is rounded to 0.1 s
    assert took >= sum(phases.values()) - 0.06, (took, phases)
    assert took <= wall + 0.07, (took, wall)  # the process started after `began` (to a 10 ms tick)


def test_the_start_counts_the_interpreter_s_own_work_before_the_command():
    """process_started() is the interpreter's start, not the moment it is asked: the CPU work done
    before asking (Python's start and the imports are such work; here half a second of it) is in it."""
    script = (
        "import time\nwhile time.process_time() < 0.5: pass\n"
        "from customops.cli.main import process_started\n"
        "print(time.perf_counter() - process_started())"
    )
    proc = run_python("-c", script)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) >= 0.48, proc.stdout  # the process's creation is read to a 10 ms tick


EXEC_WAIT = 8.0
"""Seconds a parent waits between its fork and its ``exec`` of compare: far longer than the comparison of
a one-node model takes, even on a loaded machine."""


def test_compare_s_time_leaves_out_a_wait_before_it_was_exec_d(tmp_path):
    """A process keeps its creation time through ``exec``: a parent that forks, waits and then ``exec``s
    compare (a shell's ``sleep 8; exec customops ...``, a launcher that prepares first) made compare count
    the wait ("compare took 222.9 s" for a 64 s run). Counted from the interpreter's start, neither
    "compare took X s" nor the phase ``start`` holds the wait."""
    model = _pad_model(tmp_path / "pad.onnx")
    report_path = tmp_path / "report.json"
    command = [sys.executable, "-m", "customops.cli.main", "compare", model, "--json", str(report_path)]
    launcher = (
        "import os, sys, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        f"    time.sleep({EXEC_WAIT})\n"
        "    os.execv(sys.executable, sys.argv[1:])\n"
        "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))"
    )
    proc = run_python("-c", launcher, *command)
    assert proc.returncode == 0, proc.stderr
    took = float(re.search(r"compare took ([\d.]+) s", proc.stderr).group(1))
    phases = strict_json(report_path.read_text())["phase_seconds"]
    assert took < EXEC_WAIT and phases["start"] < EXEC_WAIT, (took, phases)


def _if_model(path) -> str:
    """Both branches of an If upsample by nearest x2 (ORT and ours agree): the two swapped nodes sit
    inside the bodies, none in the main graph."""

    def branch(name: str) -> onnx.GraphProto:
        node = helper.make_node(
            "Resize", ["x", "", f"{name}_scales"], [f"{name}_y"], name=name, mode="nearest"
        )
        scales = numpy_helper.from_array(np.array([1, 1, 2, 2], F32), f"{name}_scales")
        out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)
        return helper.make_graph([node], f"{name}_body", [], [out], [scales])

    node = helper.make_node(
        "If", ["cond"], ["y"], name="branch", then_branch=branch("then_up"), else_branch=branch("else_up")
    )
    graph = helper.make_graph(
        [node],
        "if_body",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return str(path)


def test_an_agreement_says_how_many_swapped_nodes_were_compared_and_why_not_the_rest(tmp_path):
    """Swapped nodes inside If bodies are compared through the graph outputs only: the verdict says so,
    never "0 swapped node(s) match"; with --save-repro nothing is written, the directory is not made,
    and one line on stderr says why."""
    model = _if_model(tmp_path / "if.onnx")
    repro = tmp_path / "repro"
    proc = run_cli("compare", model, "--save-repro", str(repro))
    assert proc.returncode == 0, proc.stderr
    summary = proc.stdout.splitlines()[0]
    assert summary.startswith("AGREE: 1 output(s) match; 2 more swapped node(s) sit inside subgraphs"), (
        summary
    )
    assert "0 swapped node(s)" not in summary and "through the graph outputs" in summary, summary
    assert not repro.exists()
    lines = [line for line in proc.stderr.splitlines() if "--save-repro" in line]
    assert lines == [
        "--save-repro wrote nothing: the two sides agree; reproducers are of nodes where a "
        "difference starts or a side fails"
    ], proc.stderr


def test_a_save_repro_with_nothing_to_write_leaves_an_existing_directory_as_it_was(tmp_path):
    model = _pad_model(tmp_path / "pad.onnx")
    repro = tmp_path / "repro"
    repro.mkdir()
    (repro / "mine.txt").write_text("kept")
    proc = run_cli("compare", model, "-q", "--save-repro", str(repro))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in repro.iterdir()) == ["mine.txt"]
    assert proc.stderr.startswith("--save-repro wrote nothing: the two sides agree"), proc.stderr


@pytest.mark.skipif(os.environ.get("CUSTOMOPS_JIT", "1") == "0", reason="the compiled loops are off")
def test_the_compile_note_comes_with_each_new_kernel_configuration_as_the_readme_says(tmp_path):
    """numba compiles a loop per type signature: on a cache that holds the float32 Pad's loops, a float64
    Pad compiles again and the note says so again. README says when the note appears, truthfully."""
    from customops.accel.jit import COMPILING

    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}  # a cold cache of our own
    notes = []
    for elem, dtype in ((TensorProto.FLOAT, "f32"), (TensorProto.DOUBLE, "f64")):
        node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect")
        graph = helper.make_graph(
            [node],
            "pad",
            [helper.make_tensor_value_info("x", elem, [1, 2, 40, 40])],
            [helper.make_tensor_value_info("y", elem, [1, 2, 42, 42])],
            [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")],
        )
        path = tmp_path / f"pad_{dtype}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
        proc = run_cli("compare", str(path), env=env)
        assert proc.returncode == 0, proc.stderr
        notes.append(proc.stderr.count(COMPILING))
    assert notes == [1, 1], notes
    readme = " ".join((Path(ROOT) / "README.md").read_text().split())
    assert "The first run on a machine also compiles" not in readme
    assert "a later run that meets a configuration for the first time" in readme
