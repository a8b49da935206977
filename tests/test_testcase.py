"""The one ONNX test-case writer and reader (customops.eval.cases.testcase), used by compare's --save-repro
and the fuzzer's reproducers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from customops.errors import CustomOpsError
from customops.eval.cases.testcase import read_inputs, tensor_proto, tensor_value, write_test_case
from tests.helpers import NEVER


def _model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("s", TensorProto.STRING, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_written_case_reads_back_as_it_was(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    s = np.array(["a", b"\xff\xfe", "\u00e9"], dtype=object)
    write_test_case(tmp_path, _model(), {"x": x, "s": s}, s)
    assert onnx.load(tmp_path / "model.onnx") == _model()
    back = read_inputs(tmp_path / "test_data_set_0", ["x", "s"], 1 << 20)
    assert back["x"].tobytes() == x.tobytes() and back["x"].shape == (2, 3)
    assert list(back["s"]) == [b"a", b"\xff\xfe", "\u00e9".encode()]  # not all UTF-8: all kept as bytes
    out = TensorProto()
    out.ParseFromString((tmp_path / "test_data_set_0" / "output_0.pb").read_bytes())
    assert out.name == "y" and list(tensor_value(out, "out")) == list(back["s"])
    (tmp_path / "utf8").mkdir()
    write_test_case(tmp_path / "utf8", _model(), {"x": x, "s": np.array(["a", "\u00e9"], object)}, None)
    assert list(read_inputs(tmp_path / "utf8" / "test_data_set_0", ["x", "s"], 1 << 20)["s"]) == [
        "a",
        "\u00e9",
    ]


def test_no_expected_output_writes_no_output_file(tmp_path):
    write_test_case(
        tmp_path, _model(), {"x": np.zeros((2, 3), np.float32), "s": np.array(["z"], object)}, None
    )
    assert sorted(p.name for p in (tmp_path / "test_data_set_0").iterdir()) == ["input_0.pb", "input_1.pb"]


def test_reading_is_bounded_and_refuses_what_is_not_a_tensor(tmp_path):
    (tmp_path / "input_0.pb").write_bytes(tensor_proto(np.zeros(1000, np.float64), "x").SerializeToString())
    with pytest.raises(CustomOpsError):
        read_inputs(tmp_path, ["x"], 100)
    (tmp_path / "input_0.pb").write_bytes(b"\xff" * 10)
    with pytest.raises(CustomOpsError, match="not a TensorProto"):
        read_inputs(tmp_path, ["x"], 1 << 20)


def test_external_data_is_refused():
    t = tensor_proto(np.zeros(2, np.float32), "x")
    t.data_location = TensorProto.EXTERNAL
    with pytest.raises(CustomOpsError, match="external data"):
        tensor_value(t, "here")


LENT = ("numpy*", "onnx*", "google", "protobuf-*", "ml_dtypes*", "typing_extensions*")
"""What repro.py may import, lent to the bare environment: the packages and their metadata."""


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """A fresh virtual environment without customops: its Python, and an environment whose path holds
    only links to this one's onnx, onnxruntime, numpy (and what they import)."""
    import site
    import venv

    root = tmp_path_factory.mktemp("bare")
    venv.EnvBuilder(with_pip=False).create(root / "venv")
    lent = root / "lent"
    lent.mkdir()
    for directory in map(Path, site.getsitepackages()):
        for pattern in LENT:
            for entry in directory.glob(pattern):
                if not (lent / entry.name).exists():
                    (lent / entry.name).symlink_to(entry)
    python = str(root / "venv" / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(lent)
    probe = subprocess.run([python, "-c", "import customops"], capture_output=True, env=env, cwd=root)
    assert probe.returncode != 0, "customops is importable in the bare environment"
    return python, env


def _run_repro(case_dir: Path, bare: tuple[str, dict[str, str]]) -> subprocess.CompletedProcess:
    """``python repro.py`` in an environment without customops."""
    python, env = bare
    return subprocess.run(
        [python, "repro.py"], cwd=case_dir, capture_output=True, text=True, timeout=NEVER, env=env
    )


def _resize_case(tmp_path: Path, expected: np.ndarray | None, name: str) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])],
        [onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    case = tmp_path / name
    case.mkdir()
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    write_test_case(case, model, {"x": x}, expected)
    return case


def test_repro_py_runs_without_customops_and_says_whether_ort_agrees(tmp_path, bare_python):
    right = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2).repeat(2, axis=2).repeat(2, axis=3)
    agree = _run_repro(_resize_case(tmp_path, right, "agree"), bare_python)
    assert agree.returncode == 0 and "AGREE" in agree.stdout and "versions: onnx " in agree.stdout, (
        agree.stderr
    )
    wrong = right.copy()
    wrong[0, 0, 3, 1] = 7.0
    differ = _run_repro(_resize_case(tmp_path, wrong, "differ"), bare_python)
    assert differ.returncode == 1, differ.stderr
    assert "at [0, 0, 3, 1]: ONNX Runtime 2.0, specification 7.0" in differ.stdout
    assert "DISAGREE: 1 of 16 element(s) differ" in differ.stdout
    rejected = _run_repro(_resize_case(tmp_path, None, "spec-rejects"), bare_python)  # no output_0.pb
    assert rejected.returncode == 1 and "the specification rejects it" in rejected.stdout


def test_repro_py_imports_nothing_but_onnx_onnxruntime_numpy_and_the_standard_library(tmp_path):
    import ast

    write_test_case(
        tmp_path, _model(), {"x": np.zeros((2, 3), np.float32), "s": np.array(["z"], object)}, None
    )
    tree = ast.parse((tmp_path / "repro.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"os", "platform", "stat", "sys", "pathlib", "numpy", "onnx", "onnxruntime"}, imported


def test_every_committed_reproducer_carries_the_current_repro_py():
    """findings/ keeps copies of repro.py (each directory is attached to issues on its own): they must
    be the script as it is now (refresh with: cp customops/eval/cases/repro_script.py findings/*/repro.py)."""
    from customops.eval.cases.testcase import repro_script

    scripts = sorted((Path(__file__).resolve().parent.parent / "findings").glob("*/repro.py"))
    assert scripts and all(p.read_text() == repro_script() for p in scripts)
