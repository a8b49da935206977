"""Tests for customops.kernels.padding.center_crop_pad (ONNX CenterCropPad-18)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx.reference import ReferenceEvaluator

from customops.errors import KernelError
from customops.kernels.padding.center_crop_pad import center_crop_pad
from tests.helpers import ALL_DTYPES, backend_cases

DTYPES = ALL_DTYPES


BACKEND_CASES = backend_cases("test_center_crop_pad", generator="center_crop_pad")


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND_CASES}
    assert {
        "test_center_crop_pad_crop",
        "test_center_crop_pad_pad",
        "test_center_crop_pad_crop_and_pad",
    } <= names
    assert len(names) >= 6


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for inputs, outputs in case.data_sets:
        got = center_crop_pad(inputs[0], inputs[1], axes=attrs.get("axes"))
        expected = outputs[0]
        assert got.dtype == expected.dtype
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)


def make(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 100, size=shape)
    if dtype is object:
        return np.array([f"s{v}" for v in values.ravel()] or [], dtype=object).reshape(shape)
    if dtype is np.bool_:
        return np.ones(shape, dtype=bool)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values).astype(dtype)
    return values.astype(dtype)


def zero_of(dtype):
    return "" if dtype is object else np.zeros((), dtype=dtype).item()


def check(got, expected):
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtypes_crop_and_pad_hand_computed(dtype) -> None:
    data = make((5, 4, 3), dtype)
    # axis 0: crop 5 -> 2 (excess 3: start 1); axis 1: pad 4 -> 7 (1 before, 2 after); axis 2 kept
    got = center_crop_pad(data, np.array([2, 7, 3], dtype=np.int64))
    expected = np.full((2, 7, 3), zero_of(dtype), dtype=data.dtype)
    expected[:, 1:5, :] = data[1:3, :, :]
    check(got, expected)


@pytest.mark.parametrize(
    ("size", "target", "expected"),
    [
        (7, 4, [2, 3, 4, 5]),  # excess 3: the window starts at 1 (rounded down)
        (7, 3, [3, 4, 5]),  # excess 4: starts at 2
        (7, 6, [1, 2, 3, 4, 5, 6]),  # excess 1: starts at 0, the odd element dropped on the right
        (7, 7, [1, 2, 3, 4, 5, 6, 7]),
        (7, 0, []),
        (3, 6, [0, 1, 2, 3, 0, 0]),  # missing 3: 1 before, the odd one after
        (3, 4, [1, 2, 3, 0]),  # missing 1: goes to the right
        (3, 7, [0, 0, 1, 2, 3, 0, 0]),
    ],
)
def test_odd_differences(size, target, expected) -> None:
    data = np.arange(1, size + 1, dtype=np.int64)
    assert center_crop_pad(data, np.array([target])).tolist() == expected


def test_axes_subsets_and_negative_axes() -> None:
    data = make((3, 20, 8), np.float32)
    a = center_crop_pad(data, np.array([10, 9]), axes=[1, 2])
    b = center_crop_pad(data, np.array([9, 10]), axes=[-1, -2])
    expected = np.zeros((3, 10, 9), dtype=np.float32)
    expected[:, :, 0:8] = data[:, 5:15, :]
    check(a, expected)
    check(b, expected)
    # absent axes: None or empty list mean every axis
    check(center_crop_pad(data, np.array([3, 10, 9]), axes=[]), expected)


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name
)
def test_against_onnx_reference(dtype) -> None:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    data = make((6, 7, 5), dtype, seed=2)
    for target, axes in [([3, 10, 5], None), ([9, 2], [0, 2]), ([8], [-2]), ([1, 1, 1], None)]:
        kwargs = {} if axes is None else {"axes": axes}
        node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **kwargs)
        graph = helper.make_graph(
            [node],
            "g",
            [
                helper.make_tensor_value_info("x", elem, None),
                helper.make_tensor_value_info("shape", onnx.TensorProto.INT64, None),
            ],
            [helper.make_tensor_value_info("y", elem, None)],
        )
        ref = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
        shape = np.array(target, dtype=np.int64)
        check(center_crop_pad(data, shape, axes=axes), ref.run(None, {"x": data, "shape": shape})[0])


def test_strings_pad_with_empty_string() -> None:
    got = center_crop_pad(np.array(["a", "b"], dtype=object), np.array([5]))
    assert got.dtype == object
    assert got.tolist() == ["", "a", "b", "", ""]


def test_empty_tensors() -> None:
    data = np.zeros((0, 4), dtype=np.float32)
    assert center_crop_pad(data, np.array([0, 2])).shape == (0, 2)
    out = center_crop_pad(data, np.array([3, 2]))
    assert out.shape == (3, 2) and not out.any()
    assert center_crop_pad(make((4, 4), np.int8), np.array([0]), axes=[1]).shape == (4, 0)


def test_int32_shape_and_result_is_new() -> None:
    data = make((4, 4), np.float64)
    out = center_crop_pad(data, np.array([4, 4], dtype=np.int32))
    check(out, data)
    out[0, 0] = -1
    assert data[0, 0] != -1


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=3),
    st.lists(st.integers(0, 6), min_size=3, max_size=3),
)
def test_property_pad_then_crop_back(shape, grow) -> None:
    data = make(tuple(shape), np.int32, seed=1)
    bigger = [s + g for s, g in zip(shape, grow, strict=False)]
    padded = center_crop_pad(data, np.array(bigger))
    assert padded.shape == tuple(bigger)
    assert padded.sum() == data.sum()
    check(center_crop_pad(padded, np.array(shape)), data)


@pytest.mark.parametrize(
    ("shape", "axes", "message"),
    [
        ([2], None, r"shape \[2\] has 1 entries but there are 2 axes \[0, 1\]"),
        ([2, 2], [0], r"shape \[2, 2\] has 2 entries but there are 1 axes \[0\]"),
        ([-1, 2], None, "shape value -1 for axis 0 is negative"),
        ([2], [2], r"axes value 2 is out of range \[-2, 1\]"),
        ([2, 2], [1, -1], r"axes \[1, -1\] refer to the same axis"),
        ([2.0, 2.0], None, "shape must hold integers"),
    ],
)
def test_invalid_configurations(shape, axes, message) -> None:
    with pytest.raises(KernelError, match=message):
        center_crop_pad(np.zeros((3, 4), dtype=np.float32), np.array(shape), axes=axes)
