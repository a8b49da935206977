"""The rewriter learns from ONNX Runtime the element types that onnx's inference leaves unknown
(customops.model.ort_types): a QOperator model written by the real onnxruntime.quantization.quantize_static
holds com.microsoft contrib ops (QLinearAdd, QLinearMul, QLinearConcat, QLinearLeakyRelu,
QLinearGlobalAveragePool) that onnx types nothing of, and the uint8 Resize nodes after them are swapped
all the same, and compared."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import customops
from customops.model import ort_types
from customops.model.rewriter import infer_types, unknown_inputs, value_types
from tests.helpers import run_cli, run_python

quantization = pytest.importorskip("onnxruntime.quantization")

F32 = np.float32
SHAPE = (1, 16, 8, 8)
UNKNOWN = "is unknown (no type information reaches it)"
CONTRIB = {"QLinearAdd", "QLinearMul", "QLinearConcat", "QLinearLeakyRelu", "QLinearGlobalAveragePool"}


def _float_model(rng) -> onnx.ModelProto:
    """Two Convs, then Add, Mul, LeakyRelu, Concat and GlobalAveragePool, each followed by a Resize."""
    nodes = [
        helper.make_node("Conv", ["x", "c1", "b1"], ["a1"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "c2", "b2"], ["a2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["a1", "a2"], ["s"]),
        helper.make_node("Mul", ["s", "a2"], ["m"]),
        helper.make_node("LeakyRelu", ["m"], ["l"], alpha=0.1),
        helper.make_node("Concat", ["l", "a1"], ["cat"], axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["g"]),
        helper.make_node("Resize", ["cat", "", "scales"], ["y"], mode="nearest"),
        helper.make_node("Resize", ["g", "", "scales"], ["y2"], mode="nearest"),
    ]
    weights = {"c1": (32, 16, 3, 3), "b1": (32,), "c2": (32, 16, 3, 3), "b2": (32,)}
    inits = [
        numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(F32), n) for n, s in weights.items()
    ]
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales"))
    graph = helper.make_graph(
        nodes,
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y2")],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class _Calibration(quantization.CalibrationDataReader):
    def __init__(self, rng) -> None:
        self.feeds = iter([{"x": rng.standard_normal(SHAPE).astype(F32)} for _ in range(4)])

    def get_next(self):
        return next(self.feeds, None)


@pytest.fixture(scope="module")
def qoperator(tmp_path_factory):
    """The float model quantized by quantize_static in the QOperator format, uint8 throughout."""
    directory = tmp_path_factory.mktemp("qoperator")
    rng = np.random.default_rng(0)
    source, path = directory / "float.onnx", directory / "qoperator.onnx"
    onnx.save(_float_model(rng), source)
    quantization.quantize_static(
        source,
        path,
        _Calibration(rng),
        quant_format=quantization.QuantFormat.QOperator,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QUInt8,
    )
    return path


def _resizes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == "Resize" and n.domain == ""]


def test_the_model_holds_contrib_ops_that_leave_the_resize_inputs_untyped(qoperator):
    model = onnx.load(qoperator)
    assert {n.op_type for n in model.graph.node if n.domain == "com.microsoft"} == CONTRIB
    types: dict[str, int] = {}
    value_types(infer_types(model).graph, types)
    value_types(model.graph, types)
    assert len(_resizes(model)) == 2
    assert all(n.input[0] not in types for n in _resizes(model))
    assert set(unknown_inputs(model, types)) >= {n.input[0] for n in _resizes(model)}


def test_rewrite_swaps_the_uint8_resize_nodes_after_contrib_ops(qoperator):
    result = customops.rewrite_model(qoperator)
    resizes = [r for r in result.nodes if r.op.startswith("Resize")]
    assert len(resizes) == 2 and all(r.status == "swapped" for r in resizes), [r.line() for r in result.nodes]
    assert not result.skipped, [r.line() for r in result.skipped]
    assert onnx.load(qoperator) == customops.restore(result.model)


def test_without_ort_types_the_resize_nodes_keep_the_unknown_type_reason(qoperator):
    result = customops.rewrite_model(qoperator, ort_types=False)
    resizes = [r for r in result.nodes if r.op.startswith("Resize")]
    assert len(resizes) == 2 and all(r.status == "skipped" and UNKNOWN in r.reason for r in resizes)


def test_ort_gives_the_types_of_the_values_asked_without_the_large_weights(qoperator):
    model = onnx.load(qoperator)
    names = [n.input[0] for n in _resizes(model)]
    probe = ort_types.probe(model, names)
    assert [o.name for o in probe.graph.output] == names
    assert all(math.prod(t.dims) <= ort_types.KEPT_ELEMENTS for t in probe.graph.initializer)
    big = [t for t in model.graph.initializer if math.prod(t.dims) > ort_types.KEPT_ELEMENTS]
    assert big, "the test model has no initializer over the kept size"
    inputs = {v.name: v.type.tensor_type for v in probe.graph.input}
    for t in big:
        assert inputs[t.name].elem_type == t.data_type
        assert [d.dim_value for d in inputs[t.name].shape.dim] == list(t.dims)
    assert ort_types.learn(model, names) == dict.fromkeys(names, TensorProto.UINT8)


def test_a_model_with_external_data_is_rewritten_from_its_path(qoperator, tmp_path):
    model = onnx.load(qoperator)
    path = tmp_path / "external.onnx"
    onnx.save(model, path, save_as_external_data=True, location="weights.bin", size_threshold=0)
    result = customops.rewrite_model(str(path))
    assert sum(r.status == "swapped" for r in result.nodes if r.op.startswith("Resize")) == 2


def test_the_command_rewrites_and_compares_the_resize_nodes(qoperator, tmp_path):
    out = tmp_path / "rewritten.onnx"
    run = run_cli("rewrite", str(qoperator), str(out))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert sum(line.startswith("swapped ") and "[Resize-13]" in line for line in lines) == 2, run.stdout
    assert ", 0 skipped;" in lines[-1], run.stdout
    assert sum(n.domain == customops.DOMAIN and n.op_type == "Resize" for n in onnx.load(out).graph.node) == 2
    run = run_cli("inspect", str(qoperator), "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert {"op": "Resize-13", "scope": "graph", "count": 2} in summary["swaps"], summary
    assert summary["not_swapped"] == [], summary
    report = tmp_path / "report.json"
    run = run_cli("compare", str(qoperator), "--json", str(report))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    nodes = json.loads(report.read_text())["nodes"]
    resizes = [n for n in nodes if n["op"] == "Resize-13"]
    assert len(resizes) == 2 and all(n["verdict"] == "agree" for n in resizes), resizes


def _after_qlinear_add(nodes: list[onnx.NodeProto], **kwargs) -> onnx.ModelProto:
    """A uint8 image through com.microsoft's QLinearAdd into 'cat', then ``nodes``."""
    add = helper.make_node(
        "QLinearAdd", ["x", "s", "z", "x", "s", "z", "s", "z"], ["cat"], domain="com.microsoft"
    )
    inits = [
        numpy_helper.from_array(np.array(0.5, F32), "s"),
        numpy_helper.from_array(np.array(3, np.uint8), "z"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 2, 2]),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.UINT8, None)]
    graph = helper.make_graph([add, *nodes], "g", inputs, outputs, inits)
    opsets = [helper.make_opsetid(d, v) for d, v in (("", 19), ("com.microsoft", 1), ("local", 1))]
    return helper.make_model(graph, opset_imports=opsets, **kwargs)


def _resize(x: str, y: str, name: str, scales: str = "scales") -> onnx.NodeProto:
    return helper.make_node("Resize", [x, "", scales], [y], name=name, mode="nearest")


def _same_outputs(model: onnx.ModelProto, rewritten: onnx.ModelProto) -> None:
    x = np.arange(4, dtype=np.uint8).reshape(1, 1, 2, 2)
    for c in (True, False):
        feed = {"x": x, "c": np.array(c)}
        ours = customops.InferenceSession(rewritten).run(None, feed)[0]
        assert np.array_equal(ours, customops.InferenceSession(model).run(None, feed)[0])


def test_a_subgraph_reading_a_contrib_op_s_output_from_the_outer_scope_is_swapped():
    branches = {
        f"{b}_branch": helper.make_graph(
            [_resize("cat", b, f"inner_{b}")],
            b,
            [],
            [helper.make_tensor_value_info(b, TensorProto.UINT8, None)],
        )
        for b in ("then", "else")
    }
    model = _after_qlinear_add([helper.make_node("If", ["c"], ["y"], **branches)])
    result = customops.rewrite_model(model)
    assert {(r.node, r.status) for r in result.nodes} == {
        ("inner_then", "swapped"),
        ("inner_else", "swapped"),
    }
    _same_outputs(model, result.model)


def test_a_local_function_called_with_a_contrib_op_s_output_is_swapped():
    body = [_resize("a", "b", "inner", scales="sc")]
    fn = helper.make_function("local", "Up", ["a", "sc"], ["b"], body, [helper.make_opsetid("", 19)])
    model = _after_qlinear_add(
        [helper.make_node("Up", ["cat", "scales"], ["y"], domain="local")], functions=[fn]
    )
    assert [r.status for r in customops.rewrite_model(model, ort_types=False).nodes] == ["skipped"]
    result = customops.rewrite_model(model)
    assert [(r.node, r.status) for r in result.nodes] == [("inner", "swapped")]
    _same_outputs(model, result.model)


def test_ort_is_asked_once_per_model(monkeypatch):
    """A second question about the same model is answered from the first (compare's culprit search
    rewrites the model once per swap it tries): with the child made to abort, it still has its answer,
    while a question about another model gets none."""
    model = _after_qlinear_add([_resize("cat", "y", "r")])
    assert ort_types.learn(model, ["cat"]) == {"cat": TensorProto.UINT8}
    monkeypatch.setenv(ort_types.INJECT_ENV, "abort")
    assert ort_types.learn(model, ["cat"]) == {"cat": TensorProto.UINT8}
    model.graph.node[1].name = "another"
    assert ort_types.learn(model, ["cat"]) == {}


AUDIT = """
import sys
started = []
sys.addaudithook(lambda event, args: started.append(args[1]) if event == "subprocess.Popen" else None)
import customops
result = customops.rewrite_model(sys.argv[1])
print(sum(r.status == "swapped" for r in result.nodes), [a[-1] for a in started])
"""


def test_ort_is_asked_only_for_a_model_with_unknown_types(qoperator, tmp_path):
    """No child is started for a model whose types onnx's inference gives (every process this one starts
    is seen by an audit hook), one for the QOperator model."""
    plain = tmp_path / "float.onnx"
    onnx.save(_float_model(np.random.default_rng(0)), plain)
    runs = {path: run_python("-c", AUDIT, str(path)) for path in (plain, qoperator)}
    assert [run.returncode for run in runs.values()] == [0, 0], [run.stderr for run in runs.values()]
    assert runs[plain].stdout.split() == ["2", "[]"], runs[plain].stdout
    assert runs[qoperator].stdout.split() == ["7", "['customops.model.ort_types']"], runs[qoperator].stdout
