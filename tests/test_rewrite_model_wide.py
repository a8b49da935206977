"""The rewriter on realistic model structure: subgraphs, functions, constants, old opsets, float16,
external data, name collisions. Each case: rewrite, full check, run both ways, restore node for node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import customops
from customops.model.rewriter import all_nodes
from customops.registry import DOMAIN
from tests.helpers import run_builtin

F32 = np.float32
RNG = np.random.default_rng(7)


def _model(nodes, inputs, outputs, inits=(), opset=18, functions=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", opset),
            *[helper.make_opsetid(f.domain, 1) for f in functions],
        ],
        functions=list(functions),
    )
    model.ir_version = 8
    return model


def _vi(name, elem=TensorProto.FLOAT, shape=None, rank=4):
    """A typed value; without ``shape``, ``rank`` symbolic dimensions (the full checker wants a shape)."""
    return helper.make_tensor_value_info(
        name, elem, shape if shape is not None else [f"{name}_{i}" for i in range(rank)]
    )


def _const(name, array):
    return helper.make_node(
        "Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(array), name + "_t")
    )


def _check_round_trip(model, feed, expect_swapped, rtol=1e-5, atol=1e-6, expected=None):
    result = customops.rewrite_model(model)
    assert len(result.swapped) == expect_swapped, [r.line() for r in result.nodes]
    onnx.checker.check_model(result.model, full_check=True)
    if expected is None:
        expected = run_builtin(model, feed)
    got = customops.InferenceSession(result.model).run(None, feed)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol)
    restored = customops.restore(result.model)
    assert restored.SerializeToString() == model.SerializeToString()
    with pytest.raises(customops.CustomOpsError, match="already rewritten"):
        customops.rewrite(result.model)  # restore first: rewriting twice is refused
    return result


def _branch(name, op_nodes, out):
    return helper.make_graph(op_nodes, name, [], [_vi(out, shape=[1])])


def test_nodes_inside_if_branches_and_loop_bodies_two_deep():
    # outer If: then-branch holds a Loop whose body pads the outer x (each iteration's Pad output is a
    # scan output, so the values themselves reach y); else-branch resizes x into y (one more axis in front)
    pads = np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)
    body = helper.make_graph(
        [
            _const("loop_pads", pads),
            helper.make_node("Pad", ["x", "loop_pads"], ["padded"], name="pad_in_loop", mode="edge"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [_vi("iter", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, [])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("padded", shape=[1, 1, 5, 5])],
    )
    then_branch = helper.make_graph(
        [
            _const("trip", np.array(2, np.int64)),
            _const("cond0", np.array(True)),
            helper.make_node("Loop", ["trip", "cond0"], ["then_out"], body=body, name="loop"),
        ],
        "then",
        [],
        [_vi("then_out", rank=5)],
    )
    else_branch = _branch(
        "else",
        [
            _const("scales", np.array([1, 1, 2, 2], F32)),
            helper.make_node(
                "Resize", ["x", "", "scales"], ["resized"], name="resize_in_else", mode="linear"
            ),
            _const("axis0", np.array([0], np.int64)),
            helper.make_node("Unsqueeze", ["resized", "axis0"], ["else_out"]),
        ],
        "else_out",
    )
    else_branch.output[0].CopyFrom(_vi("else_out", shape=[1, 1, 1, 6, 6]))
    node = helper.make_node(
        "If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch, name="if"
    )
    model = _model(
        [node],
        [_vi("x", shape=[1, 1, 3, 3]), _vi("flag", TensorProto.BOOL, [])],
        [_vi("y", rank=5)],
    )
    x = RNG.standard_normal((1, 1, 3, 3)).astype(F32)
    # the values themselves, element by element (a sum of them would pass a permuted output)
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="edge")
    _check_round_trip(
        model, {"x": x, "flag": np.array(True)}, expect_swapped=2, expected=[np.stack([padded, padded])]
    )
    (resized,) = run_builtin(model, {"x": x, "flag": np.array(False)})
    assert resized.shape == (1, 1, 1, 6, 6)
    # half_pixel linear 2x: the corners keep x's corners
    assert resized[0, 0, 0, 0, 0] == x[0, 0, 0, 0] and resized[0, 0, 0, -1, -1] == x[0, 0, -1, -1]
    result = _check_round_trip(model, {"x": x, "flag": np.array(False)}, expect_swapped=2, rtol=1e-6)
    scopes = {r.node: r.scope for r in result.nodes}
    assert "loop" in scopes["pad_in_loop"] and "then_branch" in scopes["pad_in_loop"]
    assert "else_branch" in scopes["resize_in_else"]


def test_model_local_function_containing_resize():
    fn = helper.make_function(
        "local.fns",
        "Upscale",
        ["X", "S"],
        ["Y"],
        [helper.make_node("Resize", ["X", "", "S"], ["Y"], mode="cubic", name="resize_in_fn")],
        [helper.make_opsetid("", 18)],
    )
    nodes = [
        _const("scales", np.array([1, 1, 2, 2], F32)),
        helper.make_node("Upscale", ["x", "scales"], ["y"], domain="local.fns", name="call"),
    ]
    model = _model(nodes, [_vi("x", shape=[1, 2, 3, 3])], [_vi("y")], functions=[fn])
    x = RNG.standard_normal((1, 2, 3, 3)).astype(F32)
    result = _check_round_trip(model, {"x": x}, expect_swapped=1, rtol=1e-4, atol=1e-5)
    fn_out = result.model.functions[0]
    assert any(o.domain == DOMAIN for o in fn_out.opset_import)
    assert result.nodes[0].scope == "function Upscale"


def test_resize_fed_by_graph_inputs_and_upsample_9():
    model = _model(
        [helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="nearest", name="r")],
        [_vi("x", shape=[1, 1, 2, 3]), _vi("roi", shape=[0]), _vi("scales", shape=[4])],
        [_vi("y")],
        opset=11,
    )
    feed = {
        "x": RNG.standard_normal((1, 1, 2, 3)).astype(F32),
        "roi": np.zeros(0, F32),
        "scales": np.array([1, 1, 2, 2], F32),
    }
    _check_round_trip(model, feed, expect_swapped=1)

    up = _model(
        [
            _const("s", np.array([1, 1, 2, 3], F32)),
            helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest", name="up"),
        ],
        [_vi("x", shape=[1, 1, 2, 2])],
        [_vi("y")],
        opset=9,
    )
    _check_round_trip(up, {"x": RNG.standard_normal((1, 1, 2, 2)).astype(F32)}, expect_swapped=1)


def test_pad_with_omitted_constant_value_and_with_axes_input():
    model = _model(
        [
            helper.make_node("Pad", ["x", "pads"], ["a"], name="pad_default_value"),
            helper.make_node("Pad", ["a", "pads2", "cv", "axes"], ["y"], name="pad_axes", mode="constant"),
        ],
        [_vi("x", TensorProto.INT32, [2, 3])],
        [_vi("y", TensorProto.INT32, rank=2)],
        inits=[
            onnx.numpy_helper.from_array(np.array([1, 0, 0, 1], np.int64), "pads"),
            onnx.numpy_helper.from_array(np.array([2, 1], np.int64), "pads2"),
            onnx.numpy_helper.from_array(np.array(9, np.int32), "cv"),
            onnx.numpy_helper.from_array(np.array([-1], np.int32), "axes"),
        ],
    )
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    # ORT 1.32's built-in Pad rejects a constant int32 `axes` (valid since Pad-18): numpy gives the answer
    a = np.pad(x, [(1, 0), (0, 1)])
    y = np.pad(a, [(0, 0), (2, 1)], constant_values=9)
    _check_round_trip(model, {"x": x}, expect_swapped=2, expected=[y])


def test_float16_model_runs_bridged_and_restores():
    model = _model(
        [
            _const("scales", np.array([1, 1, 2, 2], F32)),
            helper.make_node("Resize", ["x", "", "scales"], ["r"], mode="linear", name="resize16"),
            helper.make_node("Pad", ["r", "pads", "cv"], ["y"], mode="constant", name="pad16"),
        ],
        [_vi("x", TensorProto.FLOAT16, [1, 1, 2, 2])],
        [_vi("y", TensorProto.FLOAT16)],
        inits=[
            onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
            onnx.numpy_helper.from_array(np.array(0.5, np.float16), "cv"),
        ],
    )
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float16)
    result = _check_round_trip(model, {"x": x}, expect_swapped=2, rtol=1e-3, atol=1e-3)
    casts = [n for n in result.model.graph.node if n.op_type == "Cast"]
    assert len(casts) >= 4  # x in / out for each node, plus the constant value


def test_external_data_is_read_and_kept_external(tmp_path):
    big = np.arange(4096, dtype=F32).reshape(1, 1, 64, 64)
    model = _model(
        [
            helper.make_node("Add", ["x", "w"], ["s"]),
            helper.make_node("Resize", ["s", "", "scales"], ["y"], name="r"),
        ],
        [_vi("x", shape=[1, 1, 64, 64])],
        [_vi("y")],
        inits=[
            onnx.numpy_helper.from_array(big, "w"),
            onnx.numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], F32), "scales"),
        ],
    )
    src = tmp_path / "in" / "model.onnx"
    src.parent.mkdir()
    on_disk = onnx.ModelProto()
    on_disk.CopyFrom(model)  # save_model turns the tensors it writes out into references
    onnx.save_model(
        on_disk,
        src,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=1024,
    )
    from customops.cli.main import main

    out = tmp_path / "out" / "rewritten.onnx"
    out.parent.mkdir()
    assert main(["rewrite", str(src), str(out)]) == 0
    assert (out.parent / "rewritten.onnx.data").exists()
    assert out.stat().st_size < big.nbytes  # weights are not inlined
    loaded = onnx.load(out)
    x = RNG.standard_normal((1, 1, 64, 64)).astype(F32)
    (expected,) = run_builtin(model, {"x": x})
    (got,) = customops.InferenceSession(str(out)).run(None, {"x": x})
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert any(n.domain == DOMAIN for n in loaded.graph.node)


def test_helper_names_never_collide_with_existing_names():
    # The model already uses the names the rewriter would pick for its fillers.
    taken = ["r/customops_roi", "r/customops_sizes", "r/customops_roi_1"]
    nodes = [
        _const(taken[0], np.array([1.0], F32)),
        _const(taken[1], np.array([2.0], F32)),
        _const(taken[2], np.array([3.0], F32)),
        helper.make_node("Sum", taken, ["t"]),
        helper.make_node("Resize", ["x", "", "scales"], ["r0"], name="r"),
        helper.make_node("Add", ["r0", "t"], ["y"]),
    ]
    model = _model(
        nodes,
        [_vi("x", shape=[1, 1, 2, 2])],
        [_vi("y")],
        inits=[onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales")],
    )
    result = _check_round_trip(model, {"x": RNG.standard_normal((1, 1, 2, 2)).astype(F32)}, expect_swapped=1)
    outputs = [o for n in result.model.graph.node for o in n.output]
    assert len(outputs) == len(set(outputs))


@st.composite
def _pipelines(draw):
    """A random chain of our ops with random attributes, interleaved with unrelated nodes."""
    nodes, inits = [], []
    current = "x"
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["resize", "pad", "relu", "ccp"]))
        out = f"v{i}"
        if kind == "resize":
            scales = draw(st.sampled_from([[1, 1, 2, 2], [1, 1, 0.5, 0.5], [1, 1, 1.5, 1]]))
            inits.append(onnx.numpy_helper.from_array(np.array(scales, F32), f"s{i}"))
            mode = draw(st.sampled_from(["nearest", "linear", "cubic"]))
            nodes.append(
                helper.make_node("Resize", [current, "", f"s{i}"], [out], mode=mode, name=f"resize{i}")
            )
        elif kind == "pad":
            inits.append(onnx.numpy_helper.from_array(np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64), f"p{i}"))
            mode = draw(st.sampled_from(["constant", "reflect", "edge", "wrap"]))
            nodes.append(helper.make_node("Pad", [current, f"p{i}"], [out], mode=mode, name=f"pad{i}"))
        elif kind == "ccp":
            inits.append(onnx.numpy_helper.from_array(np.array([3, 5], np.int64), f"c{i}"))
            nodes.append(helper.make_node("CenterCropPad", [current, f"c{i}"], [out], axes=[2, 3]))
        else:
            nodes.append(helper.make_node("Relu", [current], [out]))
        current = out
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    return _model(nodes, [_vi("x", shape=[1, 2, 4, 4])], [_vi("y")], inits=inits, opset=19)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pipelines())
def test_restore_of_rewrite_is_the_identity_on_generated_models(model):
    result = customops.rewrite_model(model)
    assert all(r.status == "swapped" for r in result.nodes), [r.line() for r in result.nodes]
    onnx.checker.check_model(result.model, full_check=True)
    assert customops.restore(result.model).SerializeToString() == model.SerializeToString()
    assert sum(1 for n in all_nodes(result.model) if n.domain == DOMAIN) == len(result.nodes)


@pytest.mark.parametrize("opset", [13, 18])
def test_untyped_values_are_skipped_with_a_reason(opset):
    fn = helper.make_function(
        "local.fns",
        "Padder",
        ["X", "P"],
        ["Y"],
        [helper.make_node("Pad", ["X", "P"], ["Y"], name="pad_in_fn")],
        [helper.make_opsetid("", opset)],
    )
    model = _model([], [], [], opset=opset, functions=[fn])  # never called: no types reach the function
    result = customops.rewrite_model(model)
    assert result.skipped and "unknown" in result.skipped[0].reason


def test_type_inference_ignores_large_tensor_data():
    # the weights' data is dropped for inference, their type still reaches the Resize behind them
    from customops.model.rewriter import without_big_data

    big = np.ones((1, 1, 600, 600), F32)  # 1.4 MB
    model = _model(
        [
            helper.make_node("Add", ["x", "w"], ["s"]),
            helper.make_node("Resize", ["s", "", "scales"], ["y"], name="r"),
        ],
        [_vi("x", shape=[1, 1, 600, 600])],
        [_vi("y")],
        inits=[
            onnx.numpy_helper.from_array(big, "w"),
            onnx.numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], F32), "scales"),
        ],
    )
    assert without_big_data(model).ByteSize() < 10_000
    assert [r.status for r in customops.rewrite_model(model).nodes] == ["swapped"]
