"""The floor: every ONNX backend node test of our operators passes through rewrite + our kernels."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import customops
from customops.conformance import backend_cases, carried, to_carrier
from customops.registry import UNSUPPORTED_TYPES

CASES = backend_cases()


def test_all_our_backend_tests_are_collected():
    names = {c.name for c in CASES}
    for prefix in (
        "test_resize_",
        "test_col2im",
        "test_center_crop_pad_",
        "test_wrap_pad",
        "test_upsample_nearest",
        "test_basic_deform_conv",
        "test_deform_conv_with",
        "test_affine_grid_",
        "test_roialign_",
        "test_gridsample",
    ):
        assert any(n.startswith(prefix) for n in names), prefix
    assert len(CASES) >= 73


UNCARRIED = [c for c in CASES if "float4e2m1" in c.name]
"""Tests of a type ORT's custom-op layer cannot carry, even through a Cast (UNSUPPORTED_TYPES)."""


@pytest.mark.parametrize("case", [c for c in CASES if c not in UNCARRIED], ids=lambda c: c.name)
def test_backend_case_passes_with_our_kernels(case):
    # narrow types (float8, int4, ...) fed and fetched in their carriers: ORT's Python API takes none
    result = customops.rewrite_model(carried(case.model))
    assert result.changed and not result.skipped, [r.line() for r in result.nodes]
    sess = customops.InferenceSession(result.model, sess_options=ort.SessionOptions())
    input_names = [i.name for i in sess.get_inputs()]
    for inputs, expected in case.data_sets:
        expected = [to_carrier(e) for e in expected]
        got = sess.run(None, {n: to_carrier(v) for n, v in zip(input_names, inputs, strict=True)})
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
            np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case", UNCARRIED, ids=lambda c: c.name)
def test_a_backend_case_of_a_type_the_layer_cannot_carry_is_left_alone_saying_why(case):
    result = customops.rewrite_model(carried(case.model))
    assert not result.changed
    assert [r.reason for r in result.skipped] == [UNSUPPORTED_TYPES["float4e2m1"]]


def test_the_quantized_family_s_backend_tests_are_collected():
    names = {c.name for c in CASES}
    for prefix in (
        "test_matmulinteger",
        "test_convinteger_",
        "test_qlinearmatmul_",
        "test_qlinearconv",
        "test_quantizelinear",
        "test_dequantizelinear",
        "test_dynamicquantizelinear",
    ):
        assert any(n.startswith(prefix) for n in names), prefix


def test_the_activations_backend_tests_are_collected_without_their_function_expansions():
    names = {c.name for c in CASES}
    for op in ("sigmoid", "tanh", "erf", "gelu_tanh_1", "gelu_default_1", "softplus", "mish", "swish"):
        assert f"test_{op}" in names, op
    for name in (
        "test_hardsigmoid",
        "test_hardswish",
        "test_elu",
        "test_selu",
        "test_celu",
        "test_celu_float16",
    ):
        assert name in names, name
    # onnx names the function bodies of Elu, Selu, HardSigmoid, ... test_*_expanded_verN: not our nodes
    assert not [n for n in names if "_expanded" in n]
