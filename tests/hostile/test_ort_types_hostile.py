"""The rewriter's question to ONNX Runtime about element types onnx's inference leaves unknown
(customops.model.ort_types) is asked in a child: a model ORT cannot load, or a child that dies, leaves
those values unknown and the nodes they feed skipped with the usual reason; the rest is still swapped,
and nothing aborts or prints a traceback."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import customops
from customops.graphs import all_graphs
from customops.model import ort_types
from tests.helpers import run_cli

UNKNOWN = "element type of input 'cat' is unknown (no type information reaches it)"


def _model(contrib: str) -> onnx.ModelProto:
    """A uint8 image through the com.microsoft op ``contrib`` (QLinearAdd's inputs) into Resize 'after',
    and straight into Resize 'direct'."""
    scale, zero = "scale", "zero"
    nodes = [
        helper.make_node(
            contrib, ["x", scale, zero, "x", scale, zero, scale, zero], ["cat"], domain="com.microsoft"
        ),
        helper.make_node("Resize", ["cat", "", "scales"], ["y"], name="after", mode="nearest"),
        helper.make_node("Resize", ["x", "", "scales"], ["z"], name="direct", mode="nearest"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0.5, np.float32), scale),
        numpy_helper.from_array(np.array(3, np.uint8), zero),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
    ]
    graph = helper.make_graph(
        nodes,
        "contrib",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 2, 2])],
        [helper.make_tensor_value_info(n, TensorProto.UINT8, None) for n in ("y", "z")],
        inits,
    )
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def _status(result) -> dict[str, tuple[str, str]]:
    return {r.node: (r.status, r.reason) for r in result.nodes}


def test_a_real_contrib_op_is_typed_by_ort():
    model = _model("QLinearAdd")
    assert _status(customops.rewrite_model(model)) == {"after": ("swapped", ""), "direct": ("swapped", "")}
    x = np.arange(4, dtype=np.uint8).reshape(1, 1, 2, 2)
    ours = customops.InferenceSession(customops.rewrite(model)).run(None, {"x": x})
    theirs = customops.InferenceSession(model).run(None, {"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_a_model_ort_cannot_load_keeps_the_unknown_type_reason():
    model = _model("NoSuchContribOp")
    assert ort_types.learn(model, ["cat"]) == {}
    status = _status(customops.rewrite_model(model))
    assert status == {"after": ("skipped", UNKNOWN), "direct": ("swapped", "")}


def test_the_command_survives_a_model_ort_refuses_and_a_child_that_aborts(tmp_path):
    refused, real = tmp_path / "refused.onnx", tmp_path / "real.onnx"
    onnx.save(_model("NoSuchContribOp"), refused)
    onnx.save(_model("QLinearAdd"), real)
    for path, env in ((refused, {}), (real, {ort_types.INJECT_ENV: "abort"})):
        run = run_cli("rewrite", "--dry-run", str(path), str(tmp_path / "out.onnx"), env=env)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        lines = run.stdout.splitlines()
        assert f"skipped  after [Resize-19] ({UNKNOWN})" in lines, run.stdout
        assert "swapped  direct [Resize-19]" in lines, run.stdout
    run = run_cli("rewrite", "--dry-run", str(real), str(tmp_path / "out.onnx"))
    assert "swapped  after [Resize-19]" in run.stdout.splitlines(), run.stdout + run.stderr


def test_a_child_that_hangs_is_killed_and_nothing_is_learned(monkeypatch):
    model = _model("QLinearAdd")
    model.graph.name = "hangs"  # another question than the other tests' (answers are kept by model)
    monkeypatch.setattr(ort_types, "TIMEOUT", 5.0)
    monkeypatch.setenv(ort_types.INJECT_ENV, "hang")
    assert ort_types.learn(model, ["cat"]) == {}
    monkeypatch.delenv(ort_types.INJECT_ENV)
    model.graph.name = "answers"
    assert ort_types.learn(model, ["cat"]) == {"cat": TensorProto.UINT8}


def test_a_huge_sparse_initializer_is_not_made_dense_in_the_child():
    """A few bytes of sparse initializer declare 2**40 floats; ORT makes every sparse initializer dense
    when it loads a model, so the probe must hold it as a typed input, never as the tensor."""
    model = _model("QLinearAdd")
    model.graph.name = "sparse"
    values = numpy_helper.from_array(np.array([1.0], np.float32), "huge")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([7], np.int64), ""), [2**40])
    model.graph.sparse_initializer.append(sparse)
    model.graph.node.append(helper.make_node("Identity", ["huge"], ["huge_out"]))
    model.graph.output.append(helper.make_tensor_value_info("huge_out", TensorProto.FLOAT, None))
    assert ort_types.learn(model, ["cat"]) == {"cat": TensorProto.UINT8}
    asked = ort_types.probe(model, ["cat"]).graph
    assert len(asked.sparse_initializer) == 0
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in asked.input}
    assert shapes["huge"] == [2**40]


def _sparse(name: str, dims: list[int]) -> onnx.SparseTensorProto:
    values = numpy_helper.from_array(np.array([1.0], np.float32), name)
    return helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([7], np.int64), ""), dims)


def test_sparse_constants_anywhere_are_not_made_dense_in_the_child():
    """A Constant node holding a sparse tensor, and a subgraph's sparse initializer, are made dense by ORT
    too: in the probe the main graph's constant is a typed input and nothing sparse is left anywhere."""
    model = _model("QLinearAdd")
    model.graph.name = "sparse constants"
    branch = helper.make_graph(
        [helper.make_node("Constant", [], ["inner"], sparse_value=_sparse("v", [2**40]))],
        "branch",
        [],
        [helper.make_tensor_value_info("inner", TensorProto.FLOAT, None)],
    )
    branch.sparse_initializer.append(_sparse("unused", [2**40]))
    model.graph.node.extend(
        [
            helper.make_node("Constant", [], ["huge"], sparse_value=_sparse("v", [2**40])),
            helper.make_node("Identity", ["huge"], ["huge_out"]),
        ]
    )
    model.graph.output.append(helper.make_tensor_value_info("huge_out", TensorProto.FLOAT, None))
    assert ort_types.learn(model, ["cat"]) == {"cat": TensorProto.UINT8}
    model.graph.input.append(helper.make_tensor_value_info("flag", TensorProto.BOOL, []))
    model.graph.node.append(
        helper.make_node("If", ["flag"], ["chosen"], then_branch=branch, else_branch=branch)
    )
    asked = ort_types.probe(model, ["cat"])
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in asked.graph.input}
    assert shapes["huge"] == [2**40]
    for g in all_graphs(asked):
        assert len(g.sparse_initializer) == 0
        assert not [a for n in g.node for a in n.attribute if a.name == "sparse_value"]
