"""The example models installed with the package (customops/examples/): reproducible from
tools/make_models.py, valid, reached by ``customops examples``, and showing what they claim (the pipeline
agrees between ORT and customops; on ort_deviation ORT leaves the spec and we do not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import customops

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "customops" / "examples"
NAMES = ("preprocess_pipeline.onnx", "ort_deviation.onnx")

# The deviation model, restated here so that the spec values below do not come from the script.
GAIN = np.float32(0.5)
SCALE = np.float32(0.6)
BIAS = np.array([0.1, -0.2, 0.3], np.float32).reshape(1, 3, 1, 1)


def load(name: str) -> onnx.ModelProto:
    return onnx.load(str(MODELS / name))


def run_builtin(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def run_custom(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    result = customops.rewrite_model(model)
    assert not result.skipped, [r.line() for r in result.skipped]
    return customops.InferenceSession(result.model).run(None, feed)


def test_script_reproduces_the_committed_models_byte_for_byte(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_models.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(NAMES)
    for name in NAMES:
        committed = (MODELS / name).read_bytes()
        assert (tmp_path / name).read_bytes() == committed, f"{name}: run tools/make_models.py and commit"
        assert len(committed) < 1_000_000


def test_customops_examples_lists_every_model_and_prints_the_path_of_one():
    """``customops examples``: each model of customops/examples/ by name with its path;
    ``customops examples NAME``: that path alone, for
    ``$(...)``; a name that is no example is bad input, one line naming the examples."""
    from tests.helpers import run_cli

    assert sorted(p.name for p in MODELS.glob("*.onnx")) == sorted(NAMES)
    assert not (ROOT / "models").exists()  # their old place: one copy, in the package
    listed = run_cli("examples")
    assert listed.returncode == 0, listed.stderr
    for name in NAMES:
        assert f"{name.removesuffix('.onnx')}  " in listed.stdout and str(MODELS / name) in listed.stdout
    one = run_cli("examples", "ort_deviation")
    assert one.returncode == 0 and one.stdout == f"{MODELS / 'ort_deviation.onnx'}\n", one
    bad = run_cli("examples", "resnet")
    assert bad.returncode == 2 and bad.stdout == "", bad
    assert bad.stderr.splitlines() == [
        "customops examples: error: no example model 'resnet' (examples: ort_deviation, preprocess_pipeline)"
    ]


@pytest.mark.parametrize("name", NAMES)
def test_models_are_valid_with_fixed_shapes_and_initializer_parameters(name: str):
    model = load(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.producer_name == "customops tools/make_models.py"
    inits = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        assert value.name not in inits
        tensor = value.type.tensor_type
        assert tensor.elem_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.UINT8)
        assert all(d.HasField("dim_value") for d in tensor.shape.dim)
    for node in model.graph.node:
        if node.op_type in ("Resize", "Pad", "CenterCropPad"):  # scales, sizes, pads, shape: initializers
            assert all(p == "" or p in inits for p in node.input[1:]), node.name


def pipeline_feed(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "image": rng.integers(0, 256, (1, 3, 60, 80), dtype=np.uint8),
        "waveform": rng.standard_normal((1, 1600)).astype(np.float32),
        "p5": rng.standard_normal((1, 16, 10, 12)).astype(np.float32),
        "p4": rng.standard_normal((1, 8, 20, 24)).astype(np.float32),
    }


@pytest.mark.parametrize("seed", [0, 1])
def test_preprocess_pipeline_agrees_between_ort_and_customops(seed: int):
    model = load("preprocess_pipeline.onnx")
    ops = {n.op_type for n in model.graph.node}
    assert {"Resize", "Pad", "CenterCropPad"} <= ops
    feed = pipeline_feed(seed)
    builtin, custom = run_builtin(model, feed), run_custom(model, feed)
    assert [a.shape for a in builtin] == [(1, 3, 120, 128), (1, 2000), (1, 24, 20, 24)]
    for a, b in zip(builtin, custom, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    # the audio branch is an exact reflection, the neck an exact repetition
    wave = feed["waveform"][0]
    np.testing.assert_array_equal(custom[1][0], np.pad(wave, 200, mode="reflect"))
    up = feed["p5"].repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_array_equal(custom[2], np.concatenate([up, feed["p4"]], axis=1))


def align_corners_linear(x: np.ndarray, scale: float, *, integer_length: bool) -> np.ndarray:
    """Linear Resize with align_corners on the last two axes, in float64: x_original =
    x_resized * (length_original - 1) / (length_resized - 1), where length_resized is input length x
    scale (the spec) or the integer output length (what ORT 1.32 uses)."""
    out = np.asarray(x, np.float64)
    for axis in (2, 3):
        n = out.shape[axis]
        exact = n * float(scale)
        length = int(np.floor(exact))
        denominator = (length if integer_length else exact) - 1
        coord = np.clip(np.arange(length) * (n - 1) / denominator, 0, n - 1)
        lo = np.floor(coord).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        shape = [1] * out.ndim
        shape[axis] = length
        w = (coord - lo).reshape(shape)
        out = np.take(out, lo, axis=axis) * (1 - w) + np.take(out, hi, axis=axis) * w
    return out


def deviation_expected(image: np.ndarray, *, integer_length: bool = False) -> np.ndarray:
    scaled = image * GAIN  # the Mul node, in float32
    resized = align_corners_linear(scaled, SCALE, integer_length=integer_length).astype(np.float32)
    return resized + BIAS


def test_ort_deviation_model_holds_the_restated_parameters():
    model = load("ort_deviation.onnx")
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert [n.op_type for n in model.graph.node] == ["Mul", "Resize", "Add"]
    resize = model.graph.node[1]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in resize.attribute}
    assert attrs == {"mode": b"linear", "coordinate_transformation_mode": b"align_corners"}
    assert inits["gain"] == GAIN
    np.testing.assert_array_equal(inits["scales"], np.array([1, 1, SCALE, SCALE], np.float32))
    np.testing.assert_array_equal(inits["bias"], BIAS)


def test_ort_deviation_disagrees_and_customops_gives_the_spec_value():
    model = load("ort_deviation.onnx")
    image = np.random.default_rng(0).standard_normal((1, 3, 32, 48)).astype(np.float32)
    (builtin,) = run_builtin(model, {"image": image})
    (custom,) = run_custom(model, {"image": image})
    (reference,) = ReferenceEvaluator(model).run(None, {"image": image})
    spec = deviation_expected(image)
    assert builtin.shape == custom.shape == spec.shape == (1, 3, 19, 28)
    np.testing.assert_allclose(custom, spec, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(custom, reference, rtol=1e-6, atol=1e-6)  # onnx.reference agrees
    assert np.abs(builtin - spec).max() > 0.1  # far outside float32 tolerance
    # ORT's values are the same formula with the integer output length in the denominator
    np.testing.assert_allclose(builtin, deviation_expected(image, integer_length=True), rtol=1e-5, atol=1e-5)


def test_ort_deviation_on_a_ramp_by_hand():
    """A ramp 0..47 along the width: ORT maps the last output column onto input column 47, the spec onto
    27 * 47 / (48 * 0.6 - 1) = 45.647 (with gain 0.5 and channel 0's bias 0.1: 23.6 against 22.92)."""
    model = load("ort_deviation.onnx")
    image = np.broadcast_to(np.arange(48, dtype=np.float32), (1, 3, 32, 48)).copy()
    (builtin,) = run_builtin(model, {"image": image})
    (custom,) = run_custom(model, {"image": image})
    spec_last = 0.5 * 27 * 47 / (48 * float(SCALE) - 1) + 0.1
    assert builtin[0, 0, 0, -1] == pytest.approx(0.5 * 47 + 0.1, abs=1e-5)
    assert custom[0, 0, 0, -1] == pytest.approx(spec_last, abs=1e-5)
    assert spec_last == pytest.approx(22.9237, abs=1e-4)
