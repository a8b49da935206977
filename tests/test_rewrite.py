"""Rewriting standard nodes into our domain and restoring them exactly."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.registry import DOMAIN, RESTORE_ATTR
from tests.helpers import one_node_model, run_builtin

F32 = np.float32


def _pipeline(opset: int = 18) -> onnx.ModelProto:
    """x -> Pad(reflect) -> Resize(linear) -> CenterCropPad -> y, with constants from initializers and nodes."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 12, 12])
    inits = [
        onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
        onnx.numpy_helper.from_array(np.array([1, 3, 12, 12], np.int64), "crop"),
    ]
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad", mode="reflect"),
        helper.make_node(
            "Constant",
            [],
            ["scales"],
            value=helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 1.5, 1.5]),
        ),
        helper.make_node(
            "Resize",
            ["padded", "", "scales"],
            ["resized"],
            name="resize",
            mode="linear",
            doc_string="keep me",
        ),
        helper.make_node("Relu", ["resized"], ["act"], name="relu"),
        helper.make_node("CenterCropPad", ["act", "crop"], ["y"], name="crop"),
    ]
    graph = helper.make_graph(nodes, "pipeline", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="test")
    model.ir_version = 8
    helper.set_model_props(model, {"origin": "unit test"})
    return model


def test_rewrite_swaps_every_supported_node_and_keeps_the_rest():
    model = _pipeline()
    result = customops.rewrite_model(model)
    assert [(r.node, r.status) for r in result.nodes] == [
        ("pad", "swapped"),
        ("resize", "swapped"),
        ("crop", "swapped"),
    ]
    out = result.model
    ops = [
        (n.domain, n.op_type, n.name) for n in out.graph.node if n.doc_string != "added by customops.rewrite"
    ]
    assert ops == [
        (DOMAIN, "Pad", "pad"),
        ("", "Constant", ""),
        (DOMAIN, "Resize", "resize"),
        ("", "Relu", "relu"),
        (DOMAIN, "CenterCropPad", "crop"),
    ]
    assert any(o.domain == DOMAIN for o in out.opset_import)
    resize = next(n for n in out.graph.node if n.name == "resize")
    assert resize.doc_string == "keep me"
    assert {a.name: a.s.decode() for a in resize.attribute}["customops_origin"] == "Resize-18"
    assert out.metadata_props == model.metadata_props and out.producer_name == "test"
    onnx.checker.check_model(out, full_check=True)
    # the input model is untouched
    assert all(n.domain == "" for n in model.graph.node)


def test_rewritten_model_computes_what_the_original_does():
    model = _pipeline()
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(F32)
    (expected,) = run_builtin(model, {"x": x})
    (got,) = customops.InferenceSession(customops.rewrite(model)).run(None, {"x": x})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_restore_is_exact_and_rewrite_refuses_a_rewritten_model():
    model = _pipeline()
    rewritten = customops.rewrite(model)
    with pytest.raises(customops.CustomOpsError, match=r"already rewritten \(3 node\(s\) in the customops"):
        customops.rewrite(rewritten)
    restored = customops.restore(rewritten)
    assert restored.SerializeToString() == model.SerializeToString()


def test_selection_by_op_type_and_node_name():
    model = _pipeline()
    only_resize = customops.rewrite_model(model, ops=["Resize"])
    assert [(r.node, r.status) for r in only_resize.nodes if r.status == "swapped"] == [("resize", "swapped")]
    assert "not selected" in next(r.reason for r in only_resize.nodes if r.node == "pad")
    by_name = customops.rewrite_model(model, nodes=["pad", "crop"], exclude=["crop"])
    assert [r.node for r in by_name.swapped] == ["pad"]
    with pytest.raises(customops.CustomOpsError, match="unknown op 'Conv'"):
        customops.rewrite(model, ops=["Conv"])
    with pytest.raises(customops.CustomOpsError, match="no node named 'nope'"):
        customops.rewrite(model, nodes=["nope"])


def test_invalid_attribute_for_the_version_is_skipped_with_the_reason():
    x = np.ones((1, 1, 2, 2), F32)
    model, _ = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], F32)},
        18,
        coordinate_transformation_mode="half_pixel_symmetric",
    )
    result = customops.rewrite_model(model)
    assert not result.changed
    assert "half_pixel_symmetric" in result.skipped[0].reason and "Resize-18" in result.skipped[0].reason
    model, _ = one_node_model("Resize", {"X": x, "scales": np.array([1, 1, 2, 2], F32)}, 10, mode="cubic")
    assert "cubic" in customops.rewrite_model(model).skipped[0].reason


def test_upsample_7_scales_attribute_becomes_an_input():
    x = np.arange(4, dtype=F32).reshape(1, 1, 2, 2)
    node = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0], mode="nearest")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    model.ir_version = 8
    rewritten = customops.rewrite(model)
    (y,) = customops.InferenceSession(rewritten).run(None, {"x": x})
    np.testing.assert_array_equal(y, np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))
    assert customops.restore(rewritten).SerializeToString() == model.SerializeToString()


def test_upsample_7_scales_below_one_are_invalid():
    node = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 0.5])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    (report,) = customops.rewrite_model(model).nodes
    assert report.status == "skipped" and "must be >= 1" in report.reason


def test_pad_2_attributes_become_inputs():
    x = np.arange(6, dtype=F32).reshape(2, 3)
    node = helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 1, 0], value=1.5, mode="constant")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    model.ir_version = 8
    (y,) = customops.InferenceSession(customops.rewrite(model)).run(None, {"x": x})
    np.testing.assert_array_equal(y, np.pad(x, [(0, 1), (1, 0)], constant_values=1.5))


def test_restore_info_is_stored_on_the_custom_node():
    rewritten = customops.rewrite(_pipeline())
    node = next(n for n in rewritten.graph.node if n.name == "resize")
    assert RESTORE_ATTR in {a.name for a in node.attribute}


def test_rewrite_and_restore_take_a_model_bytes_or_a_path(tmp_path):
    """As InferenceSession does; what is not a model is a CustomOpsError naming it."""
    model = _pipeline()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    expected = customops.rewrite(model).SerializeToString()
    for given in (model.SerializeToString(), str(path), path):
        assert customops.rewrite(given).SerializeToString() == expected
    rewritten = tmp_path / "r.onnx"
    onnx.save(customops.rewrite(model), rewritten)
    assert customops.restore(rewritten).SerializeToString() == customops.restore(expected).SerializeToString()
    assert customops.restore(rewritten).SerializeToString() == model.SerializeToString()
    for bad, needle in (
        (None, "'NoneType' is not an onnx.ModelProto"),
        (b"\xff\xff not a model", "not a serialized ONNX model"),
        (tmp_path / "missing.onnx", "does not exist"),
    ):
        with pytest.raises(customops.CustomOpsError, match=needle):
            customops.rewrite(bad)
