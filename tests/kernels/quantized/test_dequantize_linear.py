"""Tests for customops.kernels.quantized.dequantize_linear (ONNX DequantizeLinear 10 to 25)."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto

from customops.errors import KernelError
from customops.kernels.quantized.arithmetic import ELEMENTS
from customops.kernels.quantized.dequantize_linear import SCHEMAS, VERSIONS, dequantize_linear
from tests.kernels.quantized.oracles import (
    FLOAT8,
    FLOATS,
    INTS,
    as_array,
    attributes,
    cases,
    ort_session,
    reference_run,
    round_float,
)
from tests.kernels.quantized.test_quantize_linear import _onnx_types

BACKEND = cases("test_dequantizelinear", "dequantizelinear")


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND}
    assert {
        "test_dequantizelinear",
        "test_dequantizelinear_blocked",
        "test_dequantizelinear_e4m3fn_float16",
    } <= names
    assert {
        "test_dequantizelinear_int4",
        "test_dequantizelinear_uint2",
        "test_dequantizelinear_float4e2m1",
    } <= names


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    version = case.model.opset_import[0].version
    for inputs, outputs in case.data_sets:
        got = dequantize_linear(*(as_array(i) for i in inputs), **attributes(case), version=min(version, 25))
        expected = as_array(outputs[0])
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()
        assert got.flags.c_contiguous


@pytest.mark.parametrize("version", VERSIONS)
def test_schemas_match_onnx(version) -> None:
    schema = SCHEMAS[version]
    assert tuple(sorted(schema.x)) == _onnx_types("DequantizeLinear", version, "x")
    assert tuple(sorted(schema.scale)) == _onnx_types("DequantizeLinear", version, "x_scale")
    outputs = _onnx_types("DequantizeLinear", version, "y")
    assert tuple(sorted(schema.out or schema.scale)) == outputs or (
        not schema.out and outputs == tuple(sorted(schema.scale))
    )
    onnx_schema = onnx.defs.get_schema("DequantizeLinear", max_inclusive_version=version, domain="")
    assert set(schema.attributes) == set(onnx_schema.attributes)


_X_TYPES = {
    **{name: INTS[name][0] for name in INTS},
    "int32": np.int32,
    **FLOAT8,
    "float4e2m1": ml_dtypes.float4_e2m1fn,
}


def _values(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of element type ``name``: any bit pattern of the narrow floats but NaN."""
    dtype = _X_TYPES[name]
    if name in INTS:
        return rng.integers(INTS[name][1], INTS[name][2] + 1, shape).astype(dtype)
    if name == "int32":
        return rng.integers(-(2**31), 2**31, shape).astype(dtype)
    codes = rng.integers(0, 16 if name == "float4e2m1" else 256, shape).astype(np.uint8).view(dtype)
    return np.where(np.isnan(codes.astype(np.float64)), np.zeros((), dtype), codes).astype(dtype)


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    x_type=st.sampled_from(sorted(_X_TYPES)),
    scale_type=st.sampled_from(["float", "float16", "bfloat16", "float8e8m0"]),
    out=st.sampled_from([None, "float", "float16", "bfloat16"]),
)
def test_product_is_rounded_once_to_the_output_type(seed, x_type, scale_type, out) -> None:
    rng = np.random.default_rng(seed)
    if scale_type == "float8e8m0" and out is None:
        out = "float"
    x = _values(rng, x_type, (3, 7))
    zero = _values(rng, x_type, (3, 1))
    if scale_type == "float8e8m0":
        scale = (2.0 ** rng.integers(-20, 20, (3, 1))).astype(ml_dtypes.float8_e8m0fnu)
    else:
        scale = (rng.random((3, 1)) * 10.0 ** rng.integers(-3, 3)).astype(FLOATS[scale_type])
    code = 0 if out is None else ELEMENTS[out].code
    got = dequantize_linear(x, scale, zero, axis=1, block_size=7, output_dtype=code)
    used = out or scale_type
    for i, j in np.ndindex(x.shape):
        with np.errstate(invalid="ignore"):
            difference = float(x[i, j].astype(np.float64)) - float(zero[i, 0].astype(np.float64))
        value = got[i, j].astype(np.float64)
        if not math.isfinite(difference):
            assert not math.isfinite(value) or math.isnan(difference)
            continue
        expected = round_float(Fraction(difference) * Fraction(float(scale[i, 0].astype(np.float64))), used)
        if expected is None:
            assert math.isinf(value)
        else:
            assert Fraction(float(value)) == expected, (x[i, j], zero[i, 0], scale[i, 0], value)


def test_int32_and_wide_differences_are_exact_before_the_one_rounding() -> None:
    x = np.array([2**31 - 1, -(2**31), 16777217], dtype=np.int32)
    got = dequantize_linear(x, np.array(1, np.float32), np.array(-(2**31), np.int32), version=13)
    assert got.tolist() == [2.0**32, 0.0, 16777216.0 + 2**31]
    # uint16 65535 with a float16 output: the product is exact before its rounding (no float16 overflow)
    half = dequantize_linear(np.array([65535, 2049], np.uint16), np.array(0.5, np.float16), version=21)
    assert half.astype(np.float64).tolist() == [32768.0, 1024.0]


def test_zero_points_apply_to_every_type() -> None:
    e4m3 = np.array([1, 2, -3], ml_dtypes.float8_e4m3fn)
    got = dequantize_linear(e4m3, np.array(2, np.float32), np.array(1, ml_dtypes.float8_e4m3fn), version=19)
    assert got.tolist() == [0, 2, -8]
    int32 = dequantize_linear(
        np.array([1, 2, -3], np.int32), np.array(2, np.float32), np.array(1, np.int32), version=10
    )
    assert int32.tolist() == [0, 2, -8]  # what ONNX Runtime gives too


def test_special_float8_values_propagate() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 1], ml_dtypes.float8_e5m2)
    got = dequantize_linear(x, np.array(2, np.float32), version=19)
    assert got[:2].tolist() == [math.inf, -math.inf] and np.isnan(got[2]) and got[3] == 2
    assert np.isnan(dequantize_linear(np.array([1], np.int8), np.array(np.nan, np.float32), version=10)[0])


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            (np.ones(3, np.int8), np.array(1, np.float16)),
            {"version": 13},
            "x_scale has element type 'float16'",
        ),
        ((np.ones(3, np.int16), np.array(1, np.float32)), {"version": 19}, "x has element type 'int16'"),
        (
            (np.ones(3, np.int8), np.array(1, np.float32), np.array(0, np.uint8)),
            {},
            "x_zero_point has element type 'uint8'; allowed: int8",
        ),
        (
            (np.ones(3, np.int8), np.array(1, np.float32)),
            {"output_dtype": 1, "version": 21},
            "DequantizeLinear-21 has no attribute output_dtype",
        ),
        (
            (np.ones(3, np.int8), np.array(1, np.float32)),
            {"output_dtype": TensorProto.INT8},
            "output_dtype 3 is not one of",
        ),
        ((np.ones(3, np.int8), np.array(1, ml_dtypes.float8_e8m0fnu)), {}, "output_dtype is not given"),
        ((np.ones((2, 3), np.int8), np.ones(2, np.float32)), {}, "axis 1 of the input"),
        ((np.ones(3, np.int8), np.ones(3, np.float32)), {"version": 10}, "scalar scale only"),
    ],
)
def test_invalid_inputs_are_refused(args, kwargs, message) -> None:
    with pytest.raises(KernelError, match=message):
        dequantize_linear(*args, **kwargs)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    x_type=st.sampled_from(["int8", "uint8", "int16", "uint16", "int4", "uint4", "int2"]),
)
def test_matches_reference_for_float32(seed, x_type) -> None:
    """onnx.reference computes (x - zero point) * scale in float32: one rounding where the difference
    fits float32 exactly, as for every type but int32."""
    rng = np.random.default_rng(seed)
    x = _values(rng, x_type, (2, 5, 4))
    zero = _values(rng, x_type, (5,))
    scale = np.asarray(rng.random(5) * 10.0 ** rng.integers(-5, 5), dtype=np.float32)
    (expected,) = reference_run("DequantizeLinear", 25, {"x": x, "s": scale, "z": zero}, axis=1)
    assert dequantize_linear(x, scale, zero, axis=1).tobytes() == expected.tobytes()


@pytest.mark.parametrize(("name", "code"), [("int8", 3), ("uint8", 2), ("int16", 5), ("uint16", 4)])
def test_matches_onnxruntime_for_float32(name, code) -> None:
    rng = np.random.default_rng(3)
    x = _values(rng, name, (4, 6, 3))
    zero = _values(rng, name, (6,))
    scale = np.asarray(rng.random(6) * 3, dtype=np.float32)
    session = ort_session("DequantizeLinear", 21, [("x", code), ("s", 1), ("z", code)], [("y", 1)], axis=1)
    (expected,) = session.run(None, {"x": x, "s": scale, "z": zero})
    assert dequantize_linear(x, scale, zero, axis=1, version=21).tobytes() == expected.tobytes()
