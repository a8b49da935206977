"""compare on the activation family, on real ORT sessions: our kernels are correctly rounded, so the
yardstick is our output (a bound of 0); a node alone is compared with no absolute tolerance (a zeroed tail
is a relative error of 1), a hundred Sigmoid nodes a rounding apart agree without a row, ORT's zeroed
Sigmoid tail under a Log is named with A-SIGMOID-ZERO-TAIL, and the deviations of the family are recognized
by their values (customops.eval.judging.facts), as compare and the fuzzer describe them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import customops
from customops.eval.judging.deviations import known_labels
from customops.eval.judging.facts import Given, Observed, facts
from customops.eval.judging.rounding_bound import TERMS, exact
from customops.eval.judging.signature import Signature, Subject
from customops.eval.judging.yardstick_table import ACTIVATION_SOURCE, YARDSTICKS, alone_atol
from customops.kernels.activations.sigmoid import sigmoid
from customops.registry import ACTIVATION_OPS
from tests.helpers import run_cli, strict_json

F32 = np.float32
FAMILY = tuple(op.name for op in ACTIVATION_OPS)


def _chain(count: int = 100) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """``count`` rounds of Sigmoid, Mul, Add on random data; every Sigmoid's input stays within [-4, 4]
    (weights in [-2, 2], biases in [-2, 2]), where ORT's Sigmoid is a few roundings from the exact value."""
    rng = np.random.default_rng(0)
    nodes, inits, value = [], [], "x"
    for i in range(count):
        nodes += [
            helper.make_node("Sigmoid", [value], [f"s{i}"], name=f"sig{i}"),
            helper.make_node("Mul", [f"s{i}", f"w{i}"], [f"m{i}"], name=f"mul{i}"),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"),
        ]
        inits += [
            numpy_helper.from_array(rng.uniform(-2, 2, (4, 64)).astype(F32), f"w{i}"),
            numpy_helper.from_array(rng.uniform(-2, 2, (4, 64)).astype(F32), f"b{i}"),
        ]
        value = f"a{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info(value, TensorProto.FLOAT, [4, 64])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, {"x": rng.uniform(-4, 4, (4, 64)).astype(F32)}


def test_a_hundred_sigmoids_a_rounding_apart_agree_with_no_row(tmp_path):
    model, feed = _chain()
    builtin = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours = customops.InferenceSession(customops.rewrite(model))
    b, c = builtin.run(None, feed)[0], ours.run(None, feed)[0]
    assert not np.array_equal(b, c)  # ORT's Sigmoid is not ours: the outputs differ, within tolerance
    path = tmp_path / "chain.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "x.npz", **feed)
    proc = run_cli(
        "compare", str(path), "--inputs", str(tmp_path / "x.npz"), "--json", str(tmp_path / "r.json")
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.startswith("AGREE: 1 output(s) and 100 swapped node(s) match")
    table = proc.stdout.split("\n\n")[1].splitlines()
    rows = [line for line in table[2:] if line and not line.startswith((" ", "AGREE"))]
    assert len(rows) == 1 and rows[0].split()[1] == "(graph" and rows[0].split()[-1] == "agree", rows
    report = strict_json((tmp_path / "r.json").read_text())
    assert {n["verdict"] for n in report["nodes"]} == {"agree"}


def _sigmoid_log() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
        helper.make_node("Log", ["s"], ["y"], name="log"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, {"x": np.linspace(-60, -19, 16, dtype=F32).reshape(2, 8)}


def test_sigmoid_s_zeroed_tail_under_a_log_is_named_at_the_sigmoid(tmp_path):
    model, feed = _sigmoid_log()
    builtin = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert (builtin.run(["y"], feed)[0] == -np.inf).all()  # ORT's Sigmoid is 0 below -18
    assert (np.log(sigmoid(feed["x"])) > -61).all()
    report = customops.compare(model, feed)
    assert report.verdict == "disagree"
    assert "first difference starts at 'sig' [Sigmoid-13]: builtin-leaves-spec" in report.summary
    (node,) = [n for n in report.to_json()["nodes"] if n["node"] == "sig"]
    assert node["attribution"] == "builtin-leaves-spec" and node["origin"] == "starts-here"
    assert node["known"] == ["A-SIGMOID-ZERO-TAIL"]
    yardstick = node["isolated"]["yardstick"]
    assert yardstick["source"] == ACTIVATION_SOURCE and yardstick["bound"] == 0.0
    assert yardstick["within"]["custom"] is True and yardstick["within"]["builtin"] is False
    path = tmp_path / "siglog.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "x.npz", **feed)
    proc = run_cli("compare", str(path), "--inputs", str(tmp_path / "x.npz"))
    assert proc.returncode == 1
    assert (
        "'sig' [Sigmoid-13]: builtin-leaves-spec (known: A-SIGMOID-ZERO-TAIL)" in proc.stdout.splitlines()[0]
    )


def test_an_absolute_tolerance_given_is_kept_for_the_node_alone():
    model, feed = _sigmoid_log()
    report = customops.compare(model, feed, atol=1e-5)
    (node,) = [n for n in report.to_json()["nodes"] if n["node"] == "sig"]
    assert node["attribution"] == "agree"  # 2e-9 against 0 is within the atol asked for
    assert alone_atol("Sigmoid", None) == 0.0 and alone_atol("Sigmoid", 1e-5) == 1e-5
    assert alone_atol("Resize", None) is None


def test_the_family_s_yardstick_is_our_output_with_a_bound_of_0():
    for op in FAMILY:
        row = YARDSTICKS[op]
        assert row.exact_kernel and row.source == ACTIVATION_SOURCE and not row.reference_vote
        assert TERMS[op] is exact


# ---------------------------------------------------------------------------------------------------------
# the deviations, by values


def _labels(op: str, x: np.ndarray, builtin: np.ndarray, side: str = "builtin", **attrs: object) -> list[str]:
    """The known ids of ``op``'s value difference where ORT's output is ``builtin``."""
    seen = Observed(op, x, str(x.dtype), dict(attrs), {"X": Given(x, str(x.dtype), False)}, x.shape, builtin)
    return known_labels(Subject(Signature(op, 13, side, "value"), facts(seen)))


def test_a_zeroed_sigmoid_tail_is_recognized_by_values():
    x = np.array([-40.0, -20.0, -10.0, 0.5], F32)
    ours = sigmoid(x)
    zeroed = np.where(x < -18, F32(0), ours)
    assert _labels("Sigmoid", x, zeroed) == ["A-SIGMOID-ZERO-TAIL"]
    assert _labels("Swish", x, zeroed * x) == ["A-SIGMOID-ZERO-TAIL"]
    off = np.where(x == -10, ours * F32(1.001), ours)  # nonzero, off in its digits only: another class
    assert _labels("Sigmoid", x, off) == ["A-RELATIVE-ACCURACY"]
    assert _labels("Sigmoid", x, ours + F32(0.01)) == []  # off beyond the absolute tolerance: not named
    below = np.array([-104.0], F32)  # the exact value is below half float32's smallest subnormal: 0 is right
    assert sigmoid(below)[0] == 0 and "A-SIGMOID-ZERO-TAIL" not in _labels("Sigmoid", below, np.zeros(1, F32))


def test_nan_at_minus_infinity_is_the_recorded_decision():
    x = np.array([-np.inf, 1.0], F32)
    from customops.kernels.activations.mish import mish

    ours = mish(x)
    assert ours[0] == 0 and np.signbit(ours[0])
    builtin = np.array([np.nan, ours[1]], F32)
    assert _labels("Mish", x, builtin, side="unknown") == [
        "semantics: Mish, Swish (alpha > 0), Gelu (both forms), HardSwish at -inf"
    ]


def test_hard_sigmoid_with_alpha_0_at_infinity_is_the_recorded_decision():
    x = np.array([np.inf, -np.inf, 1.0], F32)
    builtin = np.array([np.nan, np.nan, 0.0], F32)
    assert _labels("HardSigmoid", x, builtin, side="unknown", alpha=0.0, beta=-50.0) == [
        "semantics: HardSigmoid with alpha = 0 at ±inf"
    ]


@pytest.mark.parametrize("op", ["Elu", "Selu", "Celu"])
def test_the_elu_family_s_cancellation_is_named(op):
    x = np.array([-1e-4, 2.0], F32)
    import importlib

    kernel = getattr(importlib.import_module(f"customops.kernels.activations.{op.lower()}"), op.lower())
    ours = kernel(x)
    builtin = ours.copy()
    builtin[0] = F32(ours[0] * 1.0001)  # exp(x) - 1 as written: its digits cancel
    assert _labels(op, x, builtin) == ["A-ELU-FAMILY-ACCURACY"]


def test_ort_s_missing_kernels_of_the_family_are_named():
    seen = Observed("Erf", np.zeros(2, np.float64), "double", {})
    detail = "Could not find an implementation for Erf(#) node with name 'Erf_node'"
    assert known_labels(Subject(Signature("Erf", 13, "builtin", "rejects-valid", detail), facts(seen))) == [
        "T-ACTIVATIONS"
    ]


def test_the_family_s_ids_are_catalogued():
    text = Path(__file__).resolve().parent.parent.joinpath("docs", "ort-deviations.md").read_text()
    for ident in (
        "T-ACTIVATIONS",
        "A-SIGMOID-ZERO-TAIL",
        "A-GELU-ZERO-TAIL",
        "A-ELU-FAMILY-ACCURACY",
        "A-HARDSIGMOID-ROUNDING",
        "A-RELATIVE-ACCURACY",
    ):
        assert f"#### {ident}" in text and f"| {ident} |" in text, ident
