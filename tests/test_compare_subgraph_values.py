"""The values of swapped nodes inside If and Loop bodies are compared, not only listed: on an input with no
symmetry, our side's graph output is the spec's (onnx.reference), and a deliberately wrong kernel of ours
inside a body turns the verdict and is blamed on that inner node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from customops.comparison.pipeline import compare_model

F32 = np.float32
X = (np.arange(12, dtype=F32).reshape(1, 1, 3, 4) ** 2) / F32(7)
"""No symmetry along any axis: a flipped or shifted value changes the output."""


def _const(name: str, array: np.ndarray) -> onnx.NodeProto:
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name + "_t")
    )


def _vi(name: str, elem: int = TensorProto.FLOAT, shape: list | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _bodies_model() -> onnx.ModelProto:
    """If(flag): then a linear Resize by (2, 3) of x; else a Loop (one trip) whose body pads x by
    reflection, unevenly (1 row before, 2 columns before and 1 after)."""
    body = helper.make_graph(
        [
            _const("pads", np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64)),
            helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad_in_loop", mode="reflect"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [_vi("iter", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, [])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("padded", shape=[1, 1, 4, 7])],
    )
    then_branch = helper.make_graph(
        [
            _const("scales", np.array([1, 1, 2, 3], F32)),
            helper.make_node(
                "Resize", ["x", "", "scales"], ["then_out"], name="resize_in_then", mode="linear"
            ),
        ],
        "then",
        [],
        [_vi("then_out", shape=[1, 1, 6, 12])],
    )
    else_branch = helper.make_graph(
        [
            _const("trip", np.array(1, np.int64)),
            _const("cond0", np.array(True)),
            helper.make_node("Loop", ["trip", "cond0"], ["stacked"], body=body, name="loop"),
            _const("flat", np.array([1, 1, 4, 7], np.int64)),
            helper.make_node("Reshape", ["stacked", "flat"], ["else_out"]),
        ],
        "else",
        [],
        [_vi("else_out", shape=[1, 1, 4, 7])],
    )
    graph = helper.make_graph(
        [
            helper.make_node(
                "If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch, name="if"
            )
        ],
        "bodies",
        [_vi("x", shape=[1, 1, 3, 4]), _vi("flag", TensorProto.BOOL, [])],
        [_vi("y", shape=[1, 1, None, None])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


INNER = {True: ("resize_in_then", "resize"), False: ("pad_in_loop", "pad")}
"""flag -> the swapped node that runs, and its kernel module."""


@pytest.mark.parametrize("flag", [True, False])
def test_an_inner_node_s_values_are_the_spec_s(flag):
    model = _bodies_model()
    feed = {"x": X, "flag": np.array(flag)}
    comparison = compare_model(model, feed)
    report = comparison.report
    assert report.nodes == [] and {n["node"] for n in report.inner_nodes} == {v[0] for v in INNER.values()}
    assert report.verdict == "agree", report.summary
    (spec,) = ReferenceEvaluator(model).run(None, feed)
    builtin, ours = comparison.tensors["y"]
    assert ours.shape == spec.shape == ((1, 1, 6, 12) if flag else (1, 1, 4, 7))
    np.testing.assert_allclose(ours, spec, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(builtin, spec, rtol=1e-5, atol=1e-5)
    for axis in (2, 3):  # the case tells a flipped axis apart
        assert not np.allclose(spec, np.flip(spec, axis)), axis


@pytest.mark.parametrize("flag", [True, False])
def test_a_wrong_value_inside_a_body_turns_the_verdict_and_is_blamed_on_that_node(flag, wrong_kernel):
    node, module = INNER[flag]
    wrong_kernel(f"{module}:add1")
    comparison = compare_model(_bodies_model(), {"x": X, "flag": np.array(flag)})
    report = comparison.report
    assert report.verdict == "disagree" and comparison.exit_status == 1, report.summary
    builtin, ours = comparison.tensors["y"]
    np.testing.assert_allclose(ours - builtin, 1.0, rtol=0, atol=1e-5)
    assert [e.nodes for e in report.amplified] == [[node]], report.amplified
    assert f"with only {node!r}" in report.summary, report.summary
