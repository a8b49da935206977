"""Tests for customops.kernels.resampling.upsample (Upsample-7/9 and Resize-10 semantics)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from customops.errors import KernelError
from customops.kernels.resampling.upsample import upsample
from tests.helpers import backend_cases

BACKEND_CASES = backend_cases("test_upsample", generator="upsample")


def test_backend_cases_found() -> None:
    assert "test_upsample_nearest" in {c.name for c in BACKEND_CASES}


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    mode = attrs.get("mode", b"nearest")
    for inputs, outputs in case.data_sets:
        got = upsample(inputs[0], inputs[1], mode=mode.decode() if isinstance(mode, bytes) else mode)
        assert got.dtype == outputs[0].dtype and got.shape == outputs[0].shape
        np.testing.assert_allclose(got, outputs[0], rtol=case.rtol, atol=case.atol)


def test_nearest_is_asymmetric_with_floor() -> None:
    X = np.arange(4)
    # x = o / 1.5 = 0, .67, 1.33, 2, 2.67, 3.33 -> floor
    assert upsample(X, np.array([1.5], np.float32)).tolist() == [0, 0, 1, 2, 2, 3]
    # Resize-10 allows shrinking: floor(4 * 0.6) = 2 outputs at x = 0, 1.67; shrinking axes round up,
    # as ONNX 1.5's test_resize_downsample_nearest expects ([[1, 2, 3, 4], [5, 6, 7, 8]] -> [[1, 3]])
    assert upsample(X, np.array([0.6], np.float32)).tolist() == [0, 2]
    assert upsample(np.arange(5), np.array([0.6], np.float32)).tolist() == [0, 2, 4]
    onnx_1_5 = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], np.float32)
    assert upsample(onnx_1_5, np.array([1, 1, 0.6, 0.6], np.float32)).tolist() == [[[[1, 3]]]]
    # mixed: one axis grows (floor), the other shrinks (ceil)
    assert upsample(np.arange(10).reshape(2, 5), np.array([1.5, 0.6], np.float32)).tolist() == [
        [0, 2, 4],
        [0, 2, 4],
        [5, 7, 9],
    ]
    # Upsample-7 passes its attribute as a list of floats
    assert upsample(np.arange(6).reshape(2, 3), [1.0, 2.0]).tolist() == [
        [0, 0, 1, 1, 2, 2],
        [3, 3, 4, 4, 5, 5],
    ]


def test_linear_is_asymmetric_and_clamps() -> None:
    X = np.array([[0.0, 1.0, 4.0, 9.0]])
    got = upsample(X, np.array([1, 2.5], np.float32), mode="linear")
    x = np.arange(10) / 2.5
    np.testing.assert_allclose(got[0], np.interp(x, np.arange(4), X[0]), rtol=1e-12)
    assert got[0, -1] == 9.0  # x = 3.6 clamps to the last element


def test_linear_agrees_with_onnxruntime_resize_10() -> None:
    import onnxruntime as ort

    X = np.random.default_rng(0).normal(size=(1, 2, 5, 7)).astype(np.float32)
    scales = np.array([1, 1, 2.5, 1.7], np.float32)
    node = helper.make_node("Resize", ["X", "scales"], ["Y"], mode="linear")
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("scales", TensorProto.FLOAT, None),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, {"X": X, "scales": scales})[0]
    got = upsample(X, scales, mode="linear")
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    factors=st.lists(st.integers(1, 3), min_size=4, max_size=4),
    dtype=st.sampled_from([np.float32, np.int64, np.bool_, object]),
)
def test_integer_factors_repeat(shape, factors, dtype) -> None:
    codes = np.arange(int(np.prod(shape))).reshape(shape)
    X = (
        np.array([f"v{c}" for c in codes.ravel()], dtype=object).reshape(shape)
        if dtype is object
        else (codes % 7).astype(dtype)
    )
    factors = factors[: len(shape)]
    got = upsample(X, np.array(factors, np.float32))
    expected = X
    for axis, k in enumerate(factors):
        expected = np.repeat(expected, k, axis=axis)
    assert got.dtype == X.dtype
    assert got.tolist() == expected.tolist()


def test_integer_linear_rounds_half_to_even() -> None:
    got = upsample(np.array([0, 1, 2, 3], np.int16), np.array([2], np.float32), mode="linear")
    assert got.dtype == np.int16
    assert got.tolist() == [0, 0, 1, 2, 2, 2, 3, 3]  # 0, .5, 1, 1.5, 2, 2.5, 3, 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "cubic"}, "mode 'cubic' is not one of 'nearest', 'linear'"),
        ({"scales": None}, "scales is required"),
        ({"scales": np.array([2], np.float32)}, r"scales has shape \(1,\), expected \(2,\)"),
        ({"scales": np.array([2, 0], np.float32)}, "scale 0.0 is not a positive finite number"),
        ({"scales": ["a", "b"]}, "are not numbers"),
    ],
)
def test_invalid_configurations(kwargs, message) -> None:
    args = {"scales": np.array([2, 2], np.float32)} | kwargs
    with pytest.raises(KernelError, match=message):
        upsample(np.zeros((2, 3), np.float32), **args)
