"""compare says, for each swapped integer node, whether its result depends on the CPU (issue 36): how many of
its outputs ORT's saturating uint8 x int8 kernel of x86 CPUs without VNNI would change on the run's very
inputs, by how much, even where this machine's ORT is exact (docs/compare.md, CPU-dependent integer
nodes). On real ORT sessions: hand-built one-node models with 255 x -128 pairs, and models written by the
real onnxruntime.quantization.quantize_dynamic. Each count asserted is computed here independently: the
numpy model's single-path functions (customops.eval.judging.ort_gemm, checked against ORT under qemu
Haswell) against the exact product in int64. This machine's ORT path is never assumed: the verdict is
checked against what ORT gives here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.comparison.pipeline import compare_model
from customops.comparison.table import format_table
from customops.eval.judging import cpu_dependence as cpu
from customops.eval.judging import ort_gemm
from customops.eval.judging.cpu_dependence import CpuDependence, MacBudget
from tests.helpers import one_node_model, run_builtin, run_cli, strict_json

U8, S8, F32 = np.uint8, np.int8, np.float32
SATURATION = "Q-U8S8-PAIR-SATURATION"


def _wrapped(values: np.ndarray) -> np.ndarray:
    """int64 values modulo 2**32, as int32 arithmetic keeps them."""
    return ((values.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def _exact_product(a, b, a_zp, b_zp) -> np.ndarray:
    """(A - a_zp) @ (B - b_zp) in int64, wrapped to int32: the exact kernel's MatMulInteger."""
    left = a.astype(np.int64) - np.int64(a_zp)
    right = b.astype(np.int64) - np.asarray(b_zp, np.int64)
    return _wrapped(left @ right)


def _pairs_inputs(rng) -> tuple[np.ndarray, np.ndarray]:
    """uint8 A and int8 B where some adjacent pairs hold 255 x -128 or 255 x 127 and others small values:
    some outputs saturate, others do not."""
    a = rng.integers(0, 256, (5, 12)).astype(U8)
    a[:2] = 255
    b = rng.integers(-40, 40, (12, 4)).astype(S8)
    b[:4, 0], b[4:8, 1] = -128, 127
    return a, b


def _verdict_follows_ort(comparison, model, feed, exact: np.ndarray) -> None:
    """The CPU note is information only: the exit status is what ORT gives here decides, 0 where its
    GEMM is exact (VNNI), 1 with the deviation named where it saturates."""
    builtin = run_builtin(model, feed)[0]
    if np.array_equal(builtin, exact):
        assert comparison.exit_status == 0, comparison.report.summary
    else:
        assert comparison.exit_status == 1 and comparison.report.nodes[0].known == [SATURATION]


def test_matmul_integer_counts_the_outputs_the_saturating_kernel_changes_on_these_inputs():
    a, b = _pairs_inputs(np.random.default_rng(0))
    a_zp, b_zp = U8(3), S8(-2)
    inputs = {"A": a, "B": b, "a_zero_point": a_zp, "b_zero_point": b_zp}
    model, feed = one_node_model(
        "MatMulInteger", inputs, 10, TensorProto.INT32, ("B", "a_zero_point", "b_zero_point")
    )
    comparison = compare_model(model, feed)
    saturated = ort_gemm.ort_u8s8_matmul_integer(a, b, a_zp, b_zp).astype(np.int64)
    exact = _exact_product(a, b, a_zp, b_zp)
    changed = saturated != exact
    assert 0 < changed.sum() < changed.size  # some outputs change, some do not
    found = comparison.report.nodes[0].cpu_dependence
    assert (found.status, found.unit, found.outputs) == ("checked", "int32", exact.size)
    assert found.changed == int(changed.sum())
    assert found.max_change == int(np.abs(saturated - exact).max())
    assert found.clamped_pairs > 0 and found.macs == 5 * 12 * 4
    _verdict_follows_ort(comparison, model, feed, exact)
    summary = comparison.report.summary
    assert (
        f"1 integer node(s) would give other numbers on x86 CPUs without VNNI (AVX2): {found.changed} output(s)"
        in summary
    )
    assert "uint8 weights, 7-bit weights (reduce_range=True) or a CPU with VNNI avoid it" in summary


def _qlinear_matmul_inputs(a, b) -> dict[str, np.ndarray]:
    return {
        "a": a,
        "a_scale": F32(0.02),
        "a_zero_point": U8(0),
        "b": b,
        "b_scale": np.linspace(0.01, 0.02, b.shape[1]).astype(F32),
        "b_zero_point": np.zeros(b.shape[1], S8),
        "y_scale": F32(40.0),
        "y_zero_point": U8(128),
    }


def test_qlinear_matmul_counts_changed_outputs_in_levels_of_y():
    a, b = _pairs_inputs(np.random.default_rng(1))
    inputs = _qlinear_matmul_inputs(a, b)
    model, feed = one_node_model("QLinearMatMul", inputs, 10, initializers=tuple(inputs)[1:])
    comparison = compare_model(model, feed)
    saturated = ort_gemm.qlinear_matmul(*inputs.values()).astype(np.int64)
    exact_path = ort_gemm.qlinear_matmul(*inputs.values(), saturating=False).astype(np.int64)
    changed = saturated != exact_path
    assert changed.any()
    found = comparison.report.nodes[0].cpu_dependence
    assert (found.status, found.unit, found.outputs) == ("checked", "level", a.shape[0] * b.shape[1])
    assert (found.changed, found.max_change) == (
        int(changed.sum()),
        int(np.abs(saturated - exact_path).max()),
    )
    assert f"{found.changed} of {found.outputs} output(s) differ, by up to {found.max_change} level(s)" in (
        found.text()
    )


def _conv_inputs(w: np.ndarray, group: int = 1) -> dict[str, np.ndarray]:
    x = np.full((1, w.shape[1] * group, 5, 5), 255, U8)
    x[0, :, 0, :] = 7
    return {
        "x": x,
        "x_scale": F32(0.02),
        "x_zero_point": U8(0),
        "w": w,
        "w_scale": F32(0.01),
        "w_zero_point": S8(0),
        "y_scale": F32(30.0),
        "y_zero_point": U8(100),
    }


def test_qlinear_conv_counts_with_its_attributes_and_a_depthwise_one_is_not_affected():
    w = np.full((3, 2, 3, 3), -128, S8)
    w[1] = 5
    inputs = _conv_inputs(w)
    attrs = {"pads": [1, 0, 1, 1], "strides": [1, 2]}
    model, feed = one_node_model("QLinearConv", inputs, 10, initializers=tuple(inputs)[1:], **attrs)
    comparison = compare_model(model, feed)
    geometry = ort_gemm.ConvGeometry.of_attributes(attrs, (5, 5), (3, 3))
    x_q, w_q, y_q = (
        ort_gemm.QuantParams(inputs[f"{n}_scale"], inputs[f"{n}_zero_point"]) for n in ("x", "w", "y")
    )
    saturated = ort_gemm.qlinear_conv(inputs["x"], x_q, w, w_q, y_q, None, geometry).astype(np.int64)
    exact = ort_gemm.qlinear_conv(inputs["x"], x_q, w, w_q, y_q, None, geometry, saturating=False)
    changed = saturated != exact
    assert 0 < changed.sum() < changed.size
    found = comparison.report.nodes[0].cpu_dependence
    assert (found.status, found.outputs, found.changed) == ("checked", saturated.size, int(changed.sum()))
    assert found.max_change == int(np.abs(saturated - exact.astype(np.int64)).max())
    depthwise = _conv_inputs(np.full((2, 1, 3, 3), -128, S8), group=2)
    model, feed = one_node_model("QLinearConv", depthwise, 10, initializers=tuple(depthwise)[1:], group=2)
    found = compare_model(model, feed).report.nodes[0].cpu_dependence
    assert (found.status, found.changed) == ("not-affected", 0) and "depthwise" in found.reason


@pytest.mark.parametrize(
    ("weights", "status"),
    [
        (np.full((12, 4), 200, U8), "not-affected"),  # uint8 weights: the u8 x u8 kernel
        (np.where(np.arange(48).reshape(12, 4) % 2, 63, -64).astype(S8), "checked"),  # 7-bit int8 weights
    ],
    ids=["u8-weights", "7-bit-weights"],
)
def test_uint8_or_seven_bit_weights_change_nothing(weights, status):
    a = np.full((3, 12), 255, U8)
    model, feed = one_node_model("MatMulInteger", {"A": a, "B": weights}, 10, TensorProto.INT32, ("B",))
    comparison = compare_model(model, feed)
    found = comparison.report.nodes[0].cpu_dependence
    assert (found.status, found.changed, found.clamped_pairs) == (status, 0, 0)
    assert "integer node" not in comparison.report.summary
    assert comparison.exit_status == 0  # no kernel saturates these, on any CPU


def test_a_node_ort_refuses_is_unknown():
    """uint8 x int8 into an int8 Y: ORT has no QLinearMatMul kernel for it (T-QLINEARMATMUL), so no CPU
    computes it with the saturating kernel; ours runs it."""
    a, b = _pairs_inputs(np.random.default_rng(6))
    inputs = {**_qlinear_matmul_inputs(a, b), "y_zero_point": S8(0)}
    model, feed = one_node_model("QLinearMatMul", inputs, 21, TensorProto.INT8, tuple(inputs)[1:])
    node = compare_model(model, feed).report.nodes[0]
    assert node.attribution == "builtin-cannot-run"
    assert (node.cpu_dependence.status, node.cpu_dependence.reason) == (
        "unknown",
        "ORT's built-in kernel does not run it here",
    )


def test_conv_integer_with_int8_weights_is_not_affected():
    """ORT 1.32 passes ConvInteger's int8 weights as the GEMM's signed A: MLAS's exact s8 x u8 GEMM (under
    qemu Haswell ORT gives the exact sums where QLinearConv's GEMM saturates)."""
    inputs = {"x": np.full((1, 2, 3, 3), 255, U8), "w": np.full((2, 2, 2, 2), -128, S8)}
    model, feed = one_node_model("ConvInteger", inputs, 10, TensorProto.INT32, ("w",))
    found = compare_model(model, feed).report.nodes[0].cpu_dependence
    assert (found.status, found.changed) == ("not-affected", 0) and "int8 x uint8 GEMM" in found.reason


def test_other_ops_have_none_and_a_node_too_large_is_not_checked(monkeypatch):
    a, b = _pairs_inputs(np.random.default_rng(2))
    model, feed = one_node_model("MatMulInteger", {"A": a, "B": b}, 10, TensorProto.INT32, ("B",))
    monkeypatch.setattr(cpu, "NODE_LIMIT", 100)
    comparison = compare_model(model, feed)
    found = comparison.report.nodes[0].cpu_dependence
    assert (found.status, found.macs, found.limit) == ("too-large", 240, 100)
    assert (
        found.text()
        == "not checked for x86 CPUs without VNNI (AVX2): too large (240 MACs, limit 100 per node)"
    )
    assert comparison.report.summary.endswith(
        "; 1 integer node(s) not checked for x86 CPUs without VNNI (AVX2): too large"
    )
    table = format_table(comparison.report.to_json(), all_rows=False)
    assert f"  MatMulInteger_node [MatMulInteger-10]: {found.text()}" in table.splitlines()
    monkeypatch.setattr(cpu, "ELEMENT_LIMIT", 50)  # A holds 60 elements
    found = compare_model(model, feed).report.nodes[0].cpu_dependence
    assert (found.status, found.limit) == ("too-large", 50)
    assert found.reason == "the GEMM's A of 60 elements, limit 50"
    x = np.zeros((1, 1, 2, 2), F32)
    pad, pad_feed = one_node_model("Pad", {"x": x, "pads": np.ones(8, np.int64)}, 19, initializers=("pads",))
    assert compare_model(pad, pad_feed).report.nodes[0].cpu_dependence is None


def test_the_budget_is_spent_across_nodes():
    a, b = _pairs_inputs(np.random.default_rng(3))
    budget = MacBudget(left=300)
    first = cpu.cpu_dependence("MatMulInteger", {"A": a, "B": b}, {}, budget)
    assert first.status == "checked" and budget.left == 300 - 240
    second = cpu.cpu_dependence("MatMulInteger", {"A": a, "B": b}, {}, budget)
    assert (second.status, second.macs, second.limit) == ("too-large", 240, 60)
    assert "240 MACs, 60 left of the comparison's" in second.text()
    assert budget.left == 60
    w = np.full((4, 3, 3, 3), -128, S8)
    conv = cpu.cpu_dependence(
        "QLinearConv", {**_conv_inputs(w), "x": np.full((1, 3, 5, 5), 255, U8)}, {}, budget
    )
    assert (conv.status, conv.macs) == ("too-large", 9 * 4 * 27)  # 9 pixels x 4 channels x 27 taps
    padded = {**_conv_inputs(w), "x": np.full((1, 3, 5, 5), 255, U8)}
    attrs = {"pads": [0, 10**6, 0, 10**6], "strides": [1, 10**6]}  # 3 x 3 outputs of X padded to 5 x 2000005
    conv = cpu.cpu_dependence("QLinearConv", padded, attrs, MacBudget())
    assert (
        conv.status == "too-large" and conv.reason == "the GEMM's A of 30,000,075 elements, limit 8,388,608"
    )
    missing = cpu.cpu_dependence("QLinearMatMul", {"a": a, "b": b}, {}, budget)
    assert missing.status == "unknown" and "a_scale" in missing.reason
    assert CpuDependence.from_json(first.to_json()) == first


def test_the_command_prints_it_writes_it_typed_and_the_page_shows_it(tmp_path):
    a, b = _pairs_inputs(np.random.default_rng(4))
    model, feed = one_node_model("MatMulInteger", {"A": a, "B": b}, 10, TensorProto.INT32, ("B",))
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "x.npz", **feed)
    files = ("--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "p.html"))
    proc = run_cli("compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "x.npz"), *files)
    exact = _exact_product(a, b, 0, 0)
    builtin = run_builtin(model, feed)[0]
    assert proc.returncode == (0 if np.array_equal(builtin, exact) else 1), proc.stdout + proc.stderr
    doc = strict_json((tmp_path / "r.json").read_text())
    found = doc["nodes"][0]["cpu_dependence"]
    changed = int((ort_gemm.ort_u8s8_matmul_integer(a, b).astype(np.int64) != exact).sum())
    assert found["status"] == "checked" and found["changed"] == changed
    assert set(found) == {
        "status",
        "reason",
        "outputs",
        "changed",
        "max_change",
        "unit",
        "clamped_pairs",
        "macs",
        "limit",
    }
    line = f"  MatMulInteger_node [MatMulInteger-10]: {CpuDependence.from_json(found).text()}"
    assert line in proc.stdout.splitlines()
    assert f"would give other numbers on x86 CPUs without VNNI (AVX2): {changed} output(s)" in proc.stdout
    assert "CPU: other numbers on x86 CPUs without VNNI (AVX2)" in (tmp_path / "p.html").read_text()


# ---------------------------------------------------------------------------------------------------------
# models written by onnxruntime.quantization.quantize_dynamic


def _float_model(rng) -> onnx.ModelProto:
    """Conv, Relu, Flatten, MatMul, Relu, MatMul; the MatMul weights of one magnitude, so that int8
    quantization gives them all +-127 (and 7-bit quantization +-63 or -64)."""
    nodes = [
        helper.make_node("Conv", ["x", "c"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("MatMul", ["f", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["y"]),
    ]
    inits = {
        "c": (rng.standard_normal((4, 2, 3, 3)) * 0.3).astype(F32),
        "w1": (np.sign(rng.standard_normal((4 * 6 * 6, 32))) * 0.05).astype(F32),
        "w2": (np.sign(rng.standard_normal((32, 8))) * 0.05).astype(F32),
    }
    graph = helper.make_graph(
        nodes,
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _values(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every value of ``model`` on ``feed`` by name, from ORT's built-in kernels (each node's outputs made
    graph outputs), with the initializers."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    names = [o for n in model.graph.node for o in n.output if o]
    del exposed.graph.output[:]
    exposed.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names)
    found = dict(zip(names, run_builtin(exposed, feed), strict=True))
    found.update({t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
    return {**found, **feed}


def _expected(node: onnx.NodeProto, values: dict[str, np.ndarray]) -> tuple[int, int]:
    """A quantized MatMulInteger's outputs that the saturating kernel changes, and its outputs."""
    a, b = values[node.input[0]], values[node.input[1]]
    names = list(node.input[2:4])
    zeros = [values[n] if n else 0 for n in names] + [0] * (2 - len(names))
    saturated = ort_gemm.ort_u8s8_matmul_integer(a, b, *zeros).astype(np.int64)
    exact = _exact_product(a, b, *zeros)
    return int((saturated != exact).sum()), exact.size


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory) -> dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    """The float model quantized dynamically: int8 weights, int8 weights with reduce_range, uint8 weights."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    directory: Path = tmp_path_factory.mktemp("dynamic")
    rng = np.random.default_rng(5)
    onnx.save(_float_model(rng), directory / "float.onnx")
    feed = {"x": rng.uniform(0, 1, (3, 2, 6, 6)).astype(F32)}
    found = {}
    for name, weight_type, reduce_range in (
        ("s8", quantization.QuantType.QInt8, False),
        ("s8_rr", quantization.QuantType.QInt8, True),
        ("u8", quantization.QuantType.QUInt8, False),
    ):
        path = directory / f"{name}.onnx"
        quantization.quantize_dynamic(
            directory / "float.onnx", path, weight_type=weight_type, reduce_range=reduce_range
        )
        found[name] = (onnx.load(path), feed)
    return found


def test_a_dynamically_quantized_model_counts_each_matmul_integer_and_not_its_conv_integer(dynamic):
    model, feed = dynamic["s8"]
    values = _values(model, feed)
    comparison = compare_model(model, feed)
    by_name = {n.node: n for n in comparison.report.nodes}
    gemms = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    assert len(gemms) == 2 and any(n.op_type == "ConvInteger" for n in model.graph.node)
    total = 0
    for node in gemms:
        changed, outputs = _expected(node, values)
        found = by_name[node.name or node.output[0]].cpu_dependence
        assert (found.status, found.changed, found.outputs) == ("checked", changed, outputs), node.name
        total += changed
    assert total > 0  # the weights are all +-127: pairs of activations near 255 leave int16
    conv = next(n for n in comparison.report.nodes if n.op.startswith("ConvInteger"))
    assert conv.cpu_dependence.status == "not-affected"
    differing = sum(1 for n in comparison.report.nodes if n.cpu_dependence and n.cpu_dependence.differs)
    assert f"{differing} integer node(s) would give other numbers" in comparison.report.summary
    assert f": {total:,} output(s) in all" in comparison.report.summary


@pytest.mark.parametrize("name", ["s8_rr", "u8"])
def test_reduce_range_and_uint8_weights_show_zero(dynamic, name):
    model, feed = dynamic[name]
    comparison = compare_model(model, feed)
    gemms = [n.cpu_dependence for n in comparison.report.nodes if n.op.startswith("MatMulInteger")]
    assert len(gemms) == 2
    expected = "checked" if name == "s8_rr" else "not-affected"
    assert all((d.status, d.changed, d.clamped_pairs) == (expected, 0, 0) for d in gemms), gemms
    assert "integer node" not in comparison.report.summary
