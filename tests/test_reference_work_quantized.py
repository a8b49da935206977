"""The work onnx.reference does for the quantized integer family (customops.kernels.work), as compare
estimates it from the node in our domain: numpy throughout, its int32 matmuls counted in multiply-adds and
the arrays it makes (each pass over x, the im2col's index arrays and columns, the output's passes) at
ARRAY_ELEMENT each; the registry's limits keep a node at the limit within a few seconds and its arrays
near 50 to 200 million elements."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from customops.comparison.isolate import reference_work_of
from customops.kernels.work import ARRAY_ELEMENT, reference_work
from customops.model.rewriter import rewrite_model
from customops.registry import CUSTOM_OPS
from tests.helpers import one_node_model

U8, S8, F32 = np.uint8, np.int8, np.float32


def _work(op: str, inputs: dict, opset: int, **kw: object) -> float:
    """The estimate compare makes for a one-node model of ``op`` (constants: every input but the first)."""
    model, feed = one_node_model(op, inputs, opset, initializers=tuple(inputs)[1:], **kw)
    rewritten = rewrite_model(model)
    assert not rewritten.skipped, rewritten.skipped
    return reference_work_of(rewritten.model, feed)


def test_an_integer_matmul_counts_its_multiply_adds_and_its_arrays():
    a, b = np.zeros((2, 1, 30, 40), U8), np.zeros((3, 40, 50), S8)
    found = _work("MatMulInteger", {"A": a, "B": b}, 10, out_type=TensorProto.INT32)
    out = 2 * 3 * 30 * 50
    assert found == out * 40 + ARRAY_ELEMENT * (2 * a.size + 2 * b.size + out)
    q = {"sa": F32(1), "za": U8(0), "b": b, "sb": F32(1), "zb": S8(0), "sy": F32(1), "zy": U8(0)}
    qlinear = _work("QLinearMatMul", {"a": a, **q}, 10)
    assert qlinear == found + ARRAY_ELEMENT * 5 * out  # five more passes over the output, in float64


def test_a_conv_counts_its_im2col_by_output_pixels_and_its_grouped_multiply_adds():
    x, w = np.zeros((2, 8, 20, 20), U8), np.zeros((16, 2, 3, 3), S8)
    attrs = {"group": 4, "strides": [2, 1], "pads": [1, 0, 1, 0]}
    found = _work("ConvInteger", {"x": x, "w": w}, 10, out_type=TensorProto.INT32, **attrs)
    pixels = 10 * 18  # (20 + 2 - 3) // 2 + 1 rows, 20 - 3 + 1 columns
    columns = 8 * 9 * pixels
    macs = 16 * 2 * 9 * 2 * pixels
    assert found == macs + ARRAY_ELEMENT * (
        2 * x.size + 2 * w.size + (2 + 2 * 2) * columns + 3 * 2 * 16 * pixels
    )
    same = reference_work("ConvInteger", [x, w, None, None], {"auto_pad": "SAME_UPPER", "strides": [2, 2]})
    assert same == reference_work(
        "ConvInteger", [x, w, None, None], {"pads": [1, 1, 1, 1], "strides": [2, 2]}
    )


def test_the_elementwise_ops_count_their_passes_over_x():
    x = np.zeros((4, 100), F32)
    assert (
        _work("QuantizeLinear", {"x": x, "s": F32(1), "z": U8(0)}, 13, out_type=TensorProto.UINT8)
        == 8 * 10 * 400
    )
    q = np.zeros((4, 100), U8)
    assert (
        _work("DequantizeLinear", {"x": q, "s": F32(1), "z": U8(0)}, 13, out_type=TensorProto.FLOAT)
        == 6 * 10 * 400
    )
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in "ysz"]
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 100])], outputs
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    assert reference_work_of(rewrite_model(model).model, {"x": x}) == 7 * 10 * 400


def _shaped(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """An array of ``shape`` that takes no memory (the estimates read shapes only)."""
    return np.broadcast_to(np.zeros((), dtype), shape)


LARGE = {
    # op: (inputs just over the limit, just under it)
    "MatMulInteger": ([(1300, 1300), (1300, 1300)], [(1200, 1200), (1200, 1200)]),
    "ConvInteger": ([(1, 1, 1024, 1024), (1, 1, 5, 5)], [(1, 1, 900, 900), (1, 1, 5, 5)]),
    "QuantizeLinear": ([(50_000_001,)], [(50_000_000,)]),
    "DequantizeLinear": ([(50_000_001,)], [(50_000_000,)]),
    "DynamicQuantizeLinear": ([(42_857_143,)], [(42_857_142,)]),
}


@pytest.mark.parametrize("op", list(LARGE))
def test_the_registry_s_limits_keep_large_nodes_from_the_reference(op):
    limit = CUSTOM_OPS[op].reference_limit
    over, under = ([_shaped(s, U8) for s in shapes] for shapes in LARGE[op])
    assert reference_work(op, [*over, None, None], {}) > limit >= reference_work(op, [*under, None, None], {})
