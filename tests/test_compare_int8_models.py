"""compare on int8 models written by the real onnxruntime.quantization, from small float models built here
(MatMul, Gemm and Conv layers): quantize_dynamic (DynamicQuantizeLinear, MatMulInteger, ConvInteger) and
quantize_static in the QDQ format (QuantizeLinear and DequantizeLinear around float ops) and the
QOperator format (QLinearConv, QLinearMatMul), per_channel and reduce_range on and off. Our kernels are
exact, so every verdict is what the exactness says: agreement, or a difference that a documented row or
id explains. What differs here and why:

- ORT fuses DequantizeLinear -> Conv -> QuantizeLinear of a QDQ model into QLinearConv at levels extended
  and all (its float32 multiplier, its own rounding). Our DequantizeLinear and QuantizeLinear are opaque
  to ORT, so the rewritten model keeps the float Conv between them: a graph output can differ by a
  quantum though no node differs alone; at level basic the outputs match bit for bit (the graph
  optimizer's, docs/compare.md).
- QLinearConv rounds the multiplier x_scale * w_scale / y_scale, and its product with the sum, to float32
  in ORT, once in ours (docs/semantics.md, "QLinearMatMul, QLinearConv: requantization").
- On an x86 CPU without VNNI, ORT's uint8 x int8 GEMM saturates pairs of products
  (Q-U8S8-PAIR-SATURATION). This machine's path is not assumed: the test accepts that id wherever
  ORT's GEMM runs uint8 x int8."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.comparison.pipeline import compare_model

quantization = pytest.importorskip("onnxruntime.quantization")

F32 = np.float32
REQUANTIZATION = "semantics: QLinearMatMul, QLinearConv: requantization"
SATURATION = "Q-U8S8-PAIR-SATURATION"


def _weights(rng, shapes: dict[str, tuple[int, ...]]) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(F32), n) for n, s in shapes.items()]


def _mlp(rng) -> tuple[onnx.ModelProto, tuple[int, ...]]:
    """MatMul + Add, Relu, Gemm (transB), Relu, MatMul."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h1b"]),
        helper.make_node("Relu", ["h1b"], ["r1"]),
        helper.make_node("Gemm", ["r1", "w2", "b2"], ["h2"], transB=1),
        helper.make_node("Relu", ["h2"], ["r2"]),
        helper.make_node("MatMul", ["r2", "w3"], ["y"]),
    ]
    shapes = {"w1": (128, 256), "b1": (256,), "w2": (192, 256), "b2": (192,), "w3": (192, 64)}
    return _model(nodes, (64, 128), _weights(rng, shapes)), (64, 128)


def _cnn(rng) -> tuple[onnx.ModelProto, tuple[int, ...]]:
    """Conv (padded), Relu, Conv (stride 2), Relu, grouped Conv, Flatten, Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "c1", "cb1"], ["a1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Conv", ["r1", "c2", "cb2"], ["a2"], strides=[2, 2]),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("Conv", ["r2", "c3"], ["a3"], group=4),
        helper.make_node("Flatten", ["a3"], ["f"]),
        helper.make_node("Gemm", ["f", "w", "b"], ["y"]),
    ]
    shapes = {
        "c1": (32, 8, 3, 3),
        "cb1": (32,),
        "c2": (32, 32, 3, 3),
        "cb2": (32,),
        "c3": (32, 8, 1, 1),
        "w": (32 * 16 * 16, 5),
        "b": (5,),
    }
    return _model(nodes, (2, 8, 33, 33), _weights(rng, shapes)), (2, 8, 33, 33)


def _convs(rng) -> tuple[onnx.ModelProto, tuple[int, ...]]:
    """Two padded Convs, the second's output the graph's (150k elements): a quantum of difference inside
    shows outside."""
    nodes = [
        helper.make_node("Conv", ["x", "c1", "cb1"], ["a1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Conv", ["r1", "c2", "cb2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    shapes = {"c1": (48, 16, 3, 3), "cb1": (48,), "c2": (48, 48, 3, 3), "cb2": (48,)}
    return _model(nodes, (2, 16, 40, 40), _weights(rng, shapes)), (2, 16, 40, 40)


def _model(nodes: list, shape: tuple[int, ...], inits: list) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class _Calibration(quantization.CalibrationDataReader):
    def __init__(self, rng, shape: tuple[int, ...]) -> None:
        self.feeds = iter([{"x": rng.standard_normal(shape).astype(F32)} for _ in range(4)])

    def get_next(self):
        return next(self.feeds, None)


FORMATS = ("dynamic", "QDQ", "QOperator")


def _quantized(directory: Path, name: str, builder) -> dict[str, tuple[Path, dict[str, np.ndarray]]]:
    """``builder``'s float model quantized every way, by ``name_format_pcP_rrR``, with its inputs."""
    rng = np.random.default_rng(0)
    model, shape = builder(rng)
    source = directory / f"{name}.onnx"
    onnx.save(model, source)
    feed = {"x": rng.standard_normal(shape).astype(F32)}
    found = {}
    for fmt, per_channel, reduce_range in itertools.product(FORMATS, (False, True), (False, True)):
        path = directory / f"{name}_{fmt}_pc{int(per_channel)}_rr{int(reduce_range)}.onnx"
        options = {"per_channel": per_channel, "reduce_range": reduce_range}
        if fmt == "dynamic":
            quantization.quantize_dynamic(source, path, weight_type=quantization.QuantType.QInt8, **options)
        else:
            quantization.quantize_static(
                source, path, _Calibration(rng, shape), quant_format=quantization.QuantFormat[fmt], **options
            )
        found[path.stem] = (path, feed)
    return found


@pytest.fixture(scope="module")
def quantized(tmp_path_factory) -> dict[str, tuple[Path, dict[str, np.ndarray]]]:
    """Every quantized model and its inputs, by name."""
    directory = tmp_path_factory.mktemp("int8")
    models = {}
    for name, builder in (("mlp", _mlp), ("cnn", _cnn), ("convs", _convs)):
        models.update(_quantized(directory, name, builder))
    return models


@pytest.fixture(scope="module")
def reports(quantized) -> dict[str, object]:
    """Each quantized model compared on its inputs, by name."""
    return {name: compare_model(onnx.load(path), feed).report for name, (path, feed) in quantized.items()}


SWAPPED = {
    "dynamic": {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"},
    "QDQ": {"QuantizeLinear", "DequantizeLinear"},
    "QOperator": {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul"},
}


def _format(name: str) -> str:
    return name.split("_")[1]


def test_every_model_swaps_the_family_s_nodes(reports):
    assert len(reports) == 36
    for name, report in reports.items():
        ops = {n.op.rsplit("-", 1)[0] for n in report.nodes}
        assert ops and ops <= SWAPPED[_format(name)], (name, ops)
    assert {n.op for r in reports.values() for n in r.nodes} >= {
        "DynamicQuantizeLinear-11",
        "MatMulInteger-10",
        "ConvInteger-10",
        "QuantizeLinear-13",
        "DequantizeLinear-13",
        "QLinearConv-10",
        "QLinearMatMul-10",
    }


def _starting(report) -> list:
    return [n for n in report.nodes if n.origin == "starts-here" or n.verdict == "side-failed"]


def test_dynamically_quantized_models_agree_but_where_ort_s_gemm_saturates(reports):
    for name, report in reports.items():
        if _format(name) != "dynamic":
            continue
        starting = _starting(report)
        assert all(n.known == [SATURATION] for n in starting), (name, report.summary)
        assert report.verdict == ("disagree" if starting else "agree"), (name, report.summary)


def test_qdq_models_differ_only_where_ort_fuses_what_our_opaque_nodes_keep_apart(reports):
    """No node of a QDQ model differs alone; where a graph output differs at level all, the outputs match
    at a lower level: ORT's fusion of DequantizeLinear -> Conv -> QuantizeLinear into QLinearConv."""
    fused = []
    for name, report in reports.items():
        if _format(name) != "QDQ":
            continue
        assert not _starting(report) and not report.amplified, (name, report.summary)
        if report.verdict == "disagree":
            assert report.graph_optimization.vanishes_at in ("basic", "disable"), (name, report.summary)
            assert "ORT's graph optimizations (level all)" in report.summary
            fused.append(name)
        else:
            assert report.verdict == "agree", (name, report.summary)
    assert fused  # the Convs' output shows a quantum of difference or a few (150k elements)


def test_qoperator_models_differ_where_ort_requantizes_in_float32(reports):
    """A QLinearConv or QLinearMatMul that starts a difference is labelled: ORT's float32 multiplier and
    product (docs/semantics.md), or on a CPU without VNNI, the saturating GEMM. Never is ours blamed."""
    labelled = []
    for name, report in reports.items():
        if _format(name) != "QOperator":
            continue
        for node in _starting(report):
            assert node.op in ("QLinearConv-10", "QLinearMatMul-10"), (name, node.node)
            assert node.attribution in ("builtin-leaves-spec", "undecided"), (name, node.attribution)
            assert node.known and set(node.known) <= {REQUANTIZATION, SATURATION}, (name, node.known)
            labelled.append(name)
        assert report.verdict == ("disagree" if _starting(report) else "agree"), (name, report.summary)
    assert labelled  # the float32 requantization shows in these models (a quantum, here and there)


def test_at_level_basic_the_qdq_models_agree_exactly(quantized, reports):
    """Without ORT's QDQ fusion both sides run the same float ops between our exact QuantizeLinear and
    DequantizeLinear, on any CPU: the outputs that differed at level all match bit for bit."""
    fused = [name for name, r in reports.items() if _format(name) == "QDQ" and r.verdict == "disagree"]
    for name in fused:
        path, feed = quantized[name]
        report = compare_model(onnx.load(path), feed, graph_optimization_level="basic").report
        assert report.verdict == "agree", (name, report.summary)
        assert all(o.metrics.max_abs == 0 for o in report.outputs), name
