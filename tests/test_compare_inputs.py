"""The inputs users already have: Polygraphy's inputs JSON, --input-shape, --val-range, --save-inputs and
--save-outputs (so that a run can be replayed and shared)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from polygraphy.json import load_json

from customops.comparison import inputs as gen
from customops.errors import CustomOpsError
from tests.helpers import polygraphy, run_cli


def _model(path: Path, dims: list, elem: int = TensorProto.FLOAT) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest", name="up")],
        "g",
        [helper.make_tensor_value_info("x", elem, dims)],
        [helper.make_tensor_value_info("y", elem, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def test_polygraphy_inputs_are_read_and_what_compare_saves_reads_back(tmp_path):
    """The inputs ``polygraphy run --save-inputs`` wrote are the ones compared, and the .json compare
    saves is one ``polygraphy run --load-inputs`` reads (both by the real polygraphy)."""
    model = _model(tmp_path / "m.onnx", [1, 1, 3, 3])
    polygraphy("run", str(model), "--onnxrt", "--save-inputs", "in.json", cwd=tmp_path)
    x = load_json(str(tmp_path / "in.json"))[0]["x"]
    saved = tmp_path / "saved.json"
    outputs = tmp_path / "out.npz"
    proc = run_cli(
        "compare",
        str(model),
        "--inputs",
        str(tmp_path / "in.json"),
        "--save-inputs",
        str(saved),
        "--save-outputs",
        str(outputs),
    )
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(gen.read_polygraphy_json(saved)["x"], x)  # Polygraphy's format, written back
    with np.load(outputs, allow_pickle=False) as got:
        assert sorted(got.files) == ["builtin/y", "custom/y"]
        assert got["builtin/y"].shape == (1, 1, 6, 6) and np.array_equal(got["builtin/y"], got["custom/y"])
    polygraphy(
        "run",
        str(model),
        "--onnxrt",
        "--load-inputs",
        "saved.json",
        "--save-inputs",
        "again.json",
        cwd=tmp_path,
    )
    assert np.array_equal(load_json(str(tmp_path / "again.json"))[0]["x"], x)


def test_a_polygraphy_file_holding_pickled_objects_is_refused(tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    bad = tmp_path / "in.json"
    bad.write_text(json.dumps([{"x": {"array": base64.b64encode(buffer.getvalue()).decode()}}]))
    with pytest.raises(CustomOpsError, match="not a Polygraphy inputs file"):
        gen.read_polygraphy_json(bad)
    for text in ("{}", "[]", '[{"x": 3}]'):
        bad.write_text(text)
        with pytest.raises(CustomOpsError, match="not a Polygraphy inputs file"):
            gen.read_polygraphy_json(bad)
    bad.write_text("not json")  # read as --load-outputs' files are (customops.safeio.read_json)
    with pytest.raises(CustomOpsError, match="is not valid JSON"):
        gen.read_polygraphy_json(bad)


def test_input_shape_and_val_range_shape_the_generated_inputs(tmp_path):
    model = onnx.load(_model(tmp_path / "m.onnx", ["p2o.DynamicDimension.0", 1, "H", "W"], TensorProto.UINT8))
    feed = gen.generate_inputs(
        model, shapes=gen.parse_input_shapes(["x:2x1x5x7"]), ranges=gen.parse_val_ranges(["200,255"])
    )
    assert feed["x"].shape == (2, 1, 5, 7) and feed["x"].dtype == np.uint8
    assert feed["x"].min() >= 200 and feed["x"].max() <= 255 and feed["x"].max() > 16  # reaches saturation
    floats = onnx.load(_model(tmp_path / "f.onnx", [1, 1, "H", "W"]))
    drawn = gen.generate_inputs(
        floats, shapes=gen.parse_input_shapes(["x:[1,1,8,8]"]), ranges={"x": (-3.0, -2.0)}
    )
    assert drawn["x"].shape == (1, 1, 8, 8) and drawn["x"].min() >= -3.0 and drawn["x"].max() < -2.0
    assert np.array_equal(gen.generate_inputs(floats)["x"], gen.generate_inputs(floats, ranges={})["x"])


def test_a_val_range_wider_than_float16_keeps_to_its_finite_values(tmp_path):
    """As integers keep to their type, a float16 input drawn in -1e30,1e30 stays within +-65504: no inf,
    no numpy overflow warning; a range past every finite float16 is refused in one line."""
    import warnings

    model = onnx.load(_model(tmp_path / "h.onnx", [1, 1, 64, 64], TensorProto.FLOAT16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        feed = gen.generate_inputs(model, ranges=gen.parse_val_ranges(["-1e30,1e30"]))
    assert feed["x"].dtype == np.float16 and np.isfinite(feed["x"]).all()
    assert np.abs(feed["x"]).max() > 1000  # the whole finite range, not a clipped corner
    with pytest.raises(CustomOpsError, match="holds no finite float16 value"):
        gen.generate_inputs(model, ranges=gen.parse_val_ranges(["1e30,1e31"]))


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--input-shape", "x:1x1"], "has rank 2, the model declares 4"),
        (["--input-shape", "x:2x1x3x3"], "gives 2 on axis 0, the model declares 1"),
        (["--input-shape", "nosuch:1x1x3x3"], "names no graph input"),
        (["--input-shape", "x=1x1x3x3"], "is not NAME:DIMS"),
        (["--val-range", "5,1"], "finite LO <= HI"),
        (["--val-range", "nosuch:0,1"], "names no graph input"),
        (["--save-inputs", "in.txt"], "must end in .npz or .json"),
        (["--save-outputs", "out.txt"], "must end in .npz or .json"),
    ],
)
def test_bad_input_options_exit_2_with_one_line(tmp_path, args, needle):
    model = _model(tmp_path / "m.onnx", [1, 1, 3, 3])
    proc = run_cli("compare", str(model), *args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], lines


def test_a_dim_that_an_input_shape_contradicts_is_refused(tmp_path):
    """``--input-shape x:1x1x3x3 --dim N=2``: x's whole shape is given, so N=2 would be silently ignored
    for it (and would give N two sizes with another input using N): bad input naming both. A --dim that
    agrees with the shape is accepted."""
    model = _model(tmp_path / "m.onnx", ["N", 1, "H", "W"])
    proc = run_cli("compare", str(model), "--input-shape", "x:1x1x3x3", "--dim", "N=2", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--dim N=2 contradicts --input-shape x:1x1x3x3" in lines[0], lines
    assert "'N' (axis 0) the size 1" in lines[0], lines
    loaded = onnx.load(model)
    plan = gen.InputPlan(loaded, 0, {"N": 1, "H": 3}, {"x": [1, 1, 3, 3]})
    assert plan.generate()["x"].shape == (1, 1, 3, 3)
    with pytest.raises(CustomOpsError, match="--dim H=4 contradicts --input-shape x:1x1x3x3"):
        gen.InputPlan(loaded, 0, {"H": 4}, {"x": [1, 1, 3, 3]})


def test_the_sizes_of_defaulted_dims_are_said_before_the_runs_and_not_under_quiet(tmp_path):
    """Symbolic dimensions left to the default 4 (batch included) are named on stderr before any run,
    with how to set them; one given by --dim is not among them; -q says nothing of it."""
    model = _model(tmp_path / "m.onnx", ["N", 1, "H", "W"])
    proc = run_cli("compare", str(model), "--dim", "N=1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    note = (
        "generated inputs: symbolic dims H=4, W=4 (default 4; set with --dim NAME=VALUE or "
        "--input-shape NAME:DIMS)"
    )
    lines = proc.stderr.splitlines()
    assert note in lines, lines
    assert lines.index(note) < lines.index("running the model with ORT's built-in kernels"), lines
    assert "symbolic dims N=1, H=4, W=4" in proc.stdout  # the report's inputs line: the sizes used
    quiet = run_cli("compare", str(model), "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    given = gen.InputPlan(onnx.load(model), 0, {"N": 1}, {"x": [1, 1, 2, 2]})
    assert given.defaults_note() is None  # every symbolic dimension has its size from the user


def test_generation_options_with_inputs_are_refused(tmp_path):
    model = _model(tmp_path / "m.onnx", [1, 1, 3, 3])
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 1, 3, 3), np.float32))
    proc = run_cli("compare", str(model), "--inputs", str(tmp_path / "in.npz"), "--val-range", "0,1")
    assert proc.returncode == 2 and "--val-range draws generated inputs" in proc.stderr


def test_inputs_saved_big_endian_are_the_same_values(tmp_path):
    """Inputs saved on a big-endian machine (dtype >f4) hold the values a little-endian file does: the
    model's float32 input takes them, as --load-outputs takes such outputs (they were refused as
    another dtype)."""
    model = onnx.load(_model(tmp_path / "m.onnx", [1, 1, 3, 3]))
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    np.savez(tmp_path / "be.npz", x=x.astype(">f4"))
    feed = gen.check_inputs(model, gen.load_inputs(tmp_path / "be.npz", model))
    assert feed["x"].dtype == np.float32 and np.array_equal(feed["x"], x)
