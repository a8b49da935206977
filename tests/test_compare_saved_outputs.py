"""``compare --save-outputs`` writes every compared tensor; ``compare --load-outputs`` compares our side
against saved outputs (Polygraphy's JSON, our .npz) in place of running the built-in side."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest

from customops.cli.main import main
from tests.helpers import DEVIATION, one_error_line, run_cli, strict_json


def _encoded(array: np.ndarray, allow_pickle: bool = False) -> dict:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return {"array": base64.b64encode(buffer.getvalue()).decode(), "polygraphy_class": "ndarray"}


def _polygraphy_results(outputs: dict, runners: int = 1) -> dict:
    """A file as ``polygraphy run --save-outputs`` writes it (arrays wrapped as its lazy arrays)."""
    iteration = {
        "outputs": {
            name: {"values": value, "polygraphy_class": "LazyNumpyArray"} for name, value in outputs.items()
        },
        "runtime": 0.01,
        "runner_name": "trt-runner-N0",
        "polygraphy_class": "IterationResult",
    }
    lst = [[f"runner-{i}", [iteration]] for i in range(runners)]
    return {"lst": lst, "polygraphy_class": "RunResults"}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """One compare of the bundled deviation model with --save-outputs, its arrays by key."""
    path = tmp_path_factory.mktemp("saved") / "out.npz"
    proc = run_cli("compare", DEVIATION, "--save-outputs", str(path), "--quiet")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with np.load(path, allow_pickle=False) as data:
        return {"path": path, "arrays": {k: data[k] for k in data.files}}


def test_save_outputs_writes_every_compared_tensor_of_both_sides(saved):
    arrays = saved["arrays"]
    # the graph output and the swapped Resize's output ('resized'), each side's
    assert set(arrays) == {"builtin/output", "custom/output", "builtin/resized", "custom/resized"}
    # the Resize is where ORT departs from the spec: its two sides differ, in the last column
    a, b = arrays["builtin/resized"], arrays["custom/resized"]
    assert a.shape == b.shape == (1, 3, 19, 28) and not np.allclose(a, b)


def test_load_outputs_polygraphy_json_of_the_spec_answer_agrees(saved, tmp_path):
    arrays = saved["arrays"]
    spec = {name: _encoded(arrays[f"custom/{name}"]) for name in ("output", "resized")}
    path = tmp_path / "trt.json"
    path.write_text(json.dumps(_polygraphy_results(spec)))
    report = tmp_path / "r.json"
    proc = run_cli("compare", DEVIATION, "--load-outputs", str(path), "--json", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outputs loaded from" in proc.stderr and "running the model with ORT's built-in" not in proc.stderr
    doc = strict_json(report.read_text())
    assert doc["verdict"] == "agree"
    assert doc["sides"]["builtin"]["loaded_from"] == str(path)
    assert [n["node"] for n in doc["nodes"]] == ["downsample_align_corners"]


def test_load_outputs_of_our_npz_is_the_built_in_side_again(saved, tmp_path):
    report = tmp_path / "r.json"
    proc = run_cli("compare", DEVIATION, "--load-outputs", str(saved["path"]), "--json", str(report), "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "differ from the outputs loaded from" in proc.stdout
    doc = strict_json(report.read_text())
    (out,) = doc["outputs"]
    a, b = saved["arrays"]["builtin/output"], saved["arrays"]["custom/output"]
    assert out["verdict"] == "disagree" and out["metrics"]["max_abs"] == pytest.approx(
        float(np.abs(a - b).max())
    )
    assert doc["nodes"][0]["verdict"] == "disagree" and doc["nodes"][0]["output"] == "resized"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"output": "fine", "nosuch": "fine"}, "'nosuch' is not a value the model's main graph computes"),
        ({"resized": "fine"}, "lacks graph output 'output'"),
        ({"output": "pickled"}, "output 'output'"),
        ({"output": "fine", "runners": 2}, "holds 2 runners"),
        ({"output": "not base64"}, "output 'output'"),
    ],
)
def test_load_outputs_refuses_bad_files_in_one_line(tmp_path, capsys, content, message):
    runners = content.pop("runners", 1)
    value = {
        "fine": _encoded(np.zeros((1, 3, 19, 28), np.float32)),
        "pickled": _encoded(np.array([{"a": 1}], dtype=object), allow_pickle=True),
        "not base64": {"array": "%%%", "polygraphy_class": "ndarray"},
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_polygraphy_results({k: value[v] for k, v in content.items()}, runners)))
    before = path.read_bytes()
    assert main(["compare", DEVIATION, "--load-outputs", str(path)]) == 2
    assert message in one_error_line(capsys)
    assert path.read_bytes() == before


def test_load_outputs_refuses_providers_and_an_npz_of_other_names(tmp_path, capsys):
    path = tmp_path / "o.npz"
    np.savez(path, other=np.zeros(3, np.float32))
    assert main(["compare", DEVIATION, "--load-outputs", str(path)]) == 2
    assert "'other' is not a value" in one_error_line(capsys)
    np.savez(path, output=np.zeros((1, 3, 19, 28), np.float32))
    assert main(["compare", DEVIATION, "--load-outputs", str(path), "--providers", "cpu"]) == 2
    assert "--load-outputs replaces" in one_error_line(capsys)
