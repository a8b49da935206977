"""Saved arrays as compare reads them (--load-outputs, --inputs): byte order is no difference, an array
of no tensor type is bad input in one line, and a JSON file's cost is bounded by its number of values
before it is parsed. Real CLI runs on a small model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import run_cli

F32 = np.float32


def _model(tmp_path: Path) -> tuple[Path, Path, np.ndarray]:
    """An edge Pad of a 1x2x3x3 input (a copy: ours gives numpy's bits), its inputs file and its output."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="edge")
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads],
    )
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), model)
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(F32)
    np.savez(tmp_path / "in.npz", x=x)
    return model, tmp_path / "in.npz", np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")


def _runner_file(path: Path, y: np.ndarray) -> Path:
    """A Polygraphy outputs file holding ``y``, written by Polygraphy's own writer (RunResults.save)."""
    from polygraphy.comparator import RunResults

    results = RunResults()
    results.add([{"y": y}], runner_name="other-runtime")
    results.save(str(path))
    return path


@pytest.mark.parametrize("form", ["npz", "json"])
def test_big_endian_saved_outputs_are_the_same_values(tmp_path, form):
    model, inputs, y = _model(tmp_path)
    swapped = y.astype(">f4")
    assert swapped.dtype.byteorder == ">" and np.array_equal(swapped, y)
    if form == "npz":
        saved = tmp_path / "be.npz"
        np.savez(saved, y=swapped)
    else:
        saved = _runner_file(tmp_path / "be.json", swapped)
    proc = run_cli("compare", str(model), "--inputs", str(inputs), "--load-outputs", str(saved), "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("AGREE")


def test_big_endian_inputs_are_read_in_the_machine_s_order(tmp_path):
    model, _, _ = _model(tmp_path)
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(">f4")
    np.savez(tmp_path / "be_in.npz", x=x)
    proc = run_cli("compare", str(model), "--inputs", str(tmp_path / "be_in.npz"), "-q")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "dtype", ["m8[s]", "M8[D]", [("a", "<f4")], "V4"], ids=["timedelta", "datetime", "structured", "void"]
)
@pytest.mark.parametrize("form", ["outputs-npz", "outputs-json", "inputs-npz"])
def test_an_array_of_no_tensor_type_is_one_line_of_bad_input(tmp_path, dtype, form):
    model, inputs, y = _model(tmp_path)
    odd = np.zeros(y.shape, dtype)
    if form == "outputs-npz":
        np.savez(tmp_path / "odd.npz", y=odd)
        args = ["--inputs", str(inputs), "--load-outputs", str(tmp_path / "odd.npz")]
    elif form == "outputs-json":
        args = ["--inputs", str(inputs), "--load-outputs", str(_runner_file(tmp_path / "odd.json", odd))]
    else:
        np.savez(tmp_path / "odd.npz", x=np.zeros((1, 2, 3, 3), dtype))
        args = ["--inputs", str(tmp_path / "odd.npz")]
    proc = run_cli("compare", str(model), *args, "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "has dtype" in lines[0], proc.stderr
    assert "which no ONNX tensor has" in lines[0] or "the model declares float32" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "r.json").exists()


_PEAK = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(proc.returncode, peak, proc.stderr.strip().replace(chr(10), ' | '))
"""


@pytest.mark.parametrize("option", ["--load-outputs", "--inputs"])
def test_a_json_file_of_many_small_values_is_refused_before_it_is_parsed(tmp_path, option):
    # 1.5 million empty objects (3 million values as counted): 4.5 MB on disk, about 250 MB once parsed
    model, inputs, _ = _model(tmp_path)
    many = tmp_path / "many.json"
    many.write_text("[" + ",".join(["{}"] * 1_500_000) + "]")
    args = (
        ["--inputs", str(inputs), "--load-outputs", str(many)]
        if option == "--load-outputs"
        else [
            "--inputs",
            str(many),
        ]
    )
    command = [sys.executable, "-m", "customops.cli.main", "compare", str(model), *args]
    out = subprocess.run([sys.executable, "-c", _PEAK, *command], capture_output=True, text=True, check=True)
    status, peak_kb, stderr = out.stdout.split(" ", 2)
    assert status == "2" and "JSON values" in stderr and "over the 2097152 allowed" in stderr, stderr
    assert " | " not in stderr.strip()  # one line
    parsed = subprocess.run(
        [
            sys.executable,
            "-c",
            _PEAK,
            sys.executable,
            "-c",
            f"import json; json.loads(open({str(many)!r}).read())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(peak_kb) < int(parsed.stdout.split(" ", 2)[1])  # the refusal costs less than the parse
