"""Tests for customops.kernels.quantized.dynamic_quantize_linear (ONNX DynamicQuantizeLinear-11)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from customops.errors import KernelError
from customops.kernels.quantized.dynamic_quantize_linear import dynamic_quantize_linear
from tests.kernels.quantized.oracles import cases, ort_session

BACKEND = cases("test_dynamicquantizelinear", "dynamicquantizelinear")


def test_backend_cases_found() -> None:
    assert {c.name for c in BACKEND} >= {
        "test_dynamicquantizelinear",
        "test_dynamicquantizelinear_min_adjusted",
    }


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    for inputs, outputs in case.data_sets:
        got = dynamic_quantize_linear(*inputs)
        for g, e in zip(got, outputs, strict=True):
            assert g.dtype == e.dtype and g.shape == np.shape(e) and np.array_equal(g, e)


def _function_body() -> ReferenceEvaluator:
    """The operator's function body (the spec's own definition: float32 ops, then QuantizeLinear),
    evaluated op by op by onnx.reference."""
    schema = onnx.defs.get_schema("DynamicQuantizeLinear", max_inclusive_version=11, domain="")
    body = schema.function_body
    graph = helper.make_graph(
        list(body.node),
        "body",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(body.output, (2, 1, 2), strict=True)],
    )
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]))


BODY = _function_body()


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), size=st.integers(1, 300), offset=st.sampled_from([0.0, 1.0, -3.0, 100.0])
)
def test_equals_the_function_body(seed, size, offset) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(size) * 10.0 ** rng.integers(-4, 5) + offset).astype(np.float32)
    got = dynamic_quantize_linear(x)
    expected = BODY.run(None, {"x": x})
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and np.array_equal(g, e)


def test_matches_onnxruntime_on_ranges_that_are_not_zero() -> None:
    session = ort_session("DynamicQuantizeLinear", 11, [("x", 1)], [("y", 2), ("s", 1), ("z", 2)])
    rng = np.random.default_rng(11)
    for _ in range(50):
        x = (
            rng.standard_normal(rng.integers(1, 200)) * 10.0 ** rng.integers(-3, 4) + rng.choice([0, 2, -2])
        ).astype(np.float32)
        for g, e in zip(dynamic_quantize_linear(x), session.run(None, {"x": x}), strict=True):
            assert np.array_equal(g, e)


def test_zero_range_gives_the_formula_scale_and_zero_point_0() -> None:
    """x all zeros or empty: y_scale = (0 - 0) / 255 = 0 (ONNX Runtime and onnx.reference give 1); the
    zero point and y, 0 / 0 in the spec's arithmetic, are 0."""
    for x in (np.zeros((2, 3), np.float32), np.zeros(0, np.float32), np.array([-0.0], np.float32)):
        y, scale, zero = dynamic_quantize_linear(x)
        assert y.shape == x.shape and not y.any() and y.dtype == np.uint8
        assert scale.dtype == np.float32 and scale.shape == () and scale == 0
        assert zero.dtype == np.uint8 and zero == 0


def test_what_has_no_uint8_value_is_refused() -> None:
    with pytest.raises(KernelError, match=r"x is NaN at index \(1,\)"):
        dynamic_quantize_linear(np.array([1, np.nan], np.float32))
    with pytest.raises(KernelError, match=r"x / y_scale is NaN at index \(1,\)"):
        dynamic_quantize_linear(np.array([1, np.inf], np.float32))  # inf / inf
    with pytest.raises(KernelError, match="y_zero_point is NaN"):
        dynamic_quantize_linear(np.array([1, -np.inf], np.float32))
    with pytest.raises(KernelError, match="divided by 255 is 0 in float32"):
        dynamic_quantize_linear(np.array([1e-45], np.float32))
    with pytest.raises(KernelError, match="x has element type 'float16'"):
        dynamic_quantize_linear(np.ones(2, np.float16))


def test_a_range_beyond_float32_gives_an_infinite_scale_and_zeros() -> None:
    y, scale, zero = dynamic_quantize_linear(np.array([3e38, -3e38, 1.0], np.float32))
    assert np.isinf(scale) and zero == 0 and not y.any()
