"""Tests for customops.kernels.quantized.quantize_linear (ONNX QuantizeLinear 10 to 25)."""

from __future__ import annotations

import math
import warnings
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
from customops.kernels.quantized.quantize_linear import SCHEMAS, VERSIONS, quantize_linear
from tests.kernels.quantized.oracles import (
    FLOAT8,
    FLOATS,
    INTS,
    as_array,
    attributes,
    cases,
    int_rounded,
    ort_session,
    reference_run,
    round_float,
    round_narrow,
)

BACKEND = cases("test_quantizelinear", "quantizelinear")


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND}
    assert {
        "test_quantizelinear",
        "test_quantizelinear_blocked_symmetric",
        "test_quantizelinear_e4m3fn",
    } <= names
    assert {"test_quantizelinear_int4", "test_quantizelinear_int2", "test_quantizelinear_float4e2m1"} <= names


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    version = case.model.opset_import[0].version
    for inputs, outputs in case.data_sets:
        got = quantize_linear(*(as_array(i) for i in inputs), **attributes(case), version=min(version, 25))
        expected = as_array(outputs[0])
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()  # the same bits, signs of zero included
        assert got.flags.c_contiguous


def _onnx_types(op: str, version: int, name: str) -> tuple[str, ...]:
    schema = onnx.defs.get_schema(op, max_inclusive_version=version, domain="")
    assert schema.since_version == version
    formal = next(i for i in [*schema.inputs, *schema.outputs] if i.name == name)
    allowed = next(
        (c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == formal.type_str), None
    )
    strings = allowed if allowed is not None else [formal.type_str]
    # version 28's float6 types have no numpy type: the kernels hold 25's list there (the rewriter refuses
    # a float6 tensor before it reaches them)
    return tuple(sorted(s[len("tensor(") : -1] for s in strings if not s.startswith("tensor(float6")))


@pytest.mark.parametrize("version", VERSIONS)
def test_schemas_match_onnx(version) -> None:
    schema = SCHEMAS[version]
    assert tuple(sorted(schema.x)) == _onnx_types("QuantizeLinear", version, "x")
    assert tuple(sorted(schema.scale)) == _onnx_types("QuantizeLinear", version, "y_scale")
    assert tuple(sorted(schema.out)) == _onnx_types("QuantizeLinear", version, "y")
    onnx_schema = onnx.defs.get_schema("QuantizeLinear", max_inclusive_version=version, domain="")
    assert set(schema.attributes) == set(onnx_schema.attributes)
    assert schema.shared == (onnx_schema.inputs[0].type_str == onnx_schema.inputs[1].type_str)


# ---------------------------------------------------------------------------------------------
# against an exact oracle


def _expected(x: float, scale: float, zero: float, precision: str, out: str, saturate: bool = True) -> float:
    """The spec's value by exact rationals: the quotient rounded once in ``precision``, then the output."""
    exact = Fraction(x) / Fraction(scale)
    if precision == "int32":
        quotient: Fraction | None = Fraction(round(exact))
    else:
        quotient = round_float(exact, precision)
    if out in INTS:
        if quotient is None:
            return float(INTS[out][2] if exact > 0 else INTS[out][1])
        return float(int_rounded(quotient, int(zero), out))
    total = (quotient if quotient is not None else Fraction(10**40) * (1 if exact > 0 else -1)) + Fraction(
        zero
    )
    value, over = round_narrow(total, out)
    if over:
        return math.copysign(ELEMENTS[out].high, total) if saturate or out == "float4e2m1" else math.nan
    return float(value)


_SCALE_TYPES = {"float": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "int32": np.int32}


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    x_type=st.sampled_from(["float", "float16", "bfloat16", "int32"]),
    scale_type=st.sampled_from(["float", "float16", "bfloat16", "int32"]),
    precision=st.sampled_from([None, "float", "float16", "bfloat16", "int32"]),
    out=st.sampled_from(
        ["int8", "uint8", "int16", "uint16", "int4", "uint2", "float8e4m3fn", "float8e5m2", "float4e2m1"]
    ),
)
def test_quotient_is_rounded_once_in_its_precision(seed, x_type, scale_type, precision, out) -> None:
    rng = np.random.default_rng(seed)
    magnitude = 10.0 ** rng.integers(-3, 6)
    raw = rng.standard_normal(40) * magnitude
    raw[:8] = rng.integers(-40, 40, 8) + 0.5  # ties when the scale is 1
    raw = np.clip(raw, -60000, 60000)  # finite in float16
    x = raw.astype(_SCALE_TYPES[x_type]) if x_type != "int32" else np.round(raw).astype(np.int32)
    scale_value = rng.choice([1, 0.5, 3, 0.1, 7.3]) if scale_type != "int32" else rng.choice([1, 2, 3, 7])
    scale = np.array(scale_value).astype(_SCALE_TYPES[scale_type])
    if out in FLOAT8 or out == "float4e2m1":
        zero = np.array(rng.choice([0.0, 0.5, -2.0])).astype(FLOAT8.get(out, ml_dtypes.float4_e2m1fn))
    else:
        _, low, high = INTS[out]
        zero = np.array(rng.integers(low, high + 1)).astype(INTS[out][0])
    code = 0 if precision is None else ELEMENTS[precision].code
    got = quantize_linear(x, scale, zero, precision=code, version=25)
    used = precision or scale_type
    for xv, gv in zip(x.astype(np.float64).tolist(), got.astype(np.float64).tolist(), strict=True):
        expected = _expected(xv, float(scale.astype(np.float64)), float(zero.astype(np.float64)), used, out)
        assert gv == expected or (math.isnan(gv) and math.isnan(expected)), (xv, gv, expected)


def test_precision_is_the_exact_quotient_rounded_once() -> None:
    # 70000 / 4 = 17500 is 17504 in float16; the quotient is not computed from x rounded to float16 (inf)
    x = np.array([70000.0, 17500.0], dtype=np.float32)
    got = quantize_linear(x, np.array(4, np.float16), np.array(0, np.int16), version=23)
    assert got.tolist() == [17504, 4376]
    # precision float: the same scale, the float32 quotient
    got = quantize_linear(
        x, np.array(4, np.float16), np.array(0, np.int16), precision=TensorProto.FLOAT, version=23
    )
    assert got.tolist() == [17500, 4375]
    # int32 x and scale (19, 21): the exact quotient rounded half to even
    got = quantize_linear(
        np.array([5, 7, -5, 16777217], np.int32), np.array(2, np.int32), np.array(0, np.int16), version=21
    )
    assert got.tolist() == [2, 4, -2, 32767]


def test_rounding_ties_saturation_and_extreme_zero_points() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000.0, -1000.0, np.inf, -np.inf], dtype=np.float32)
    got = quantize_linear(x, np.array(1, np.float32), np.array(-128, np.int8), version=13)
    assert got.tolist() == [-128, -126, -126, -128, -128, -128, 127, -128, 127, -128]
    got = quantize_linear(x, np.array(1, np.float32), np.array(255, np.uint8), version=10)
    assert got.tolist() == [255, 255, 255, 255, 253, 253, 255, 0, 255, 0]
    got = quantize_linear(x, np.array(1, np.float32), np.array(-8, ml_dtypes.int4), version=21)
    assert got.astype(int).tolist() == [-8, -6, -6, -8, -8, -8, 7, -8, 7, -8]


def test_nan_into_an_integer_type_is_refused() -> None:
    with pytest.raises(KernelError, match=r"x / y_scale is NaN at index \(1,\): uint8 has no NaN"):
        quantize_linear(np.array([1, np.nan], np.float32), np.array(1, np.float32))
    with pytest.raises(KernelError, match="NaN"):
        quantize_linear(np.array([0], np.float32), np.array(0, np.float32))  # 0 / 0
    assert quantize_linear(np.array([3, -3], np.float32), np.array(0, np.float32)).tolist() == [255, 0]


def test_float8_outputs_add_the_zero_point_and_follow_saturate() -> None:
    x = np.array([-0.0, 1.0, 1e6, -np.inf, np.nan], dtype=np.float32)
    one = np.array(1, ml_dtypes.float8_e4m3fn)
    got = quantize_linear(x, np.array(1, np.float32), one, version=21).astype(np.float64)
    assert got[:4].tolist() == [1.0, 2.0, 448.0, -448.0] and np.isnan(got[4])
    zero = np.array(0, ml_dtypes.float8_e4m3fn)
    bits = quantize_linear(x, np.array(1, np.float32), zero, saturate=0, version=21).view(np.uint8)
    assert bits.tolist()[:4] == [0x00, 0x38, 0x7F, 0xFF]  # -0 + 0 is +0; overflow is NaN, keeping the sign
    e5m2 = quantize_linear(
        x, np.array(1, np.float32), np.array(0, ml_dtypes.float8_e5m2), saturate=0, version=21
    )
    assert e5m2.astype(np.float64)[2:4].tolist() == [math.inf, -math.inf]


def test_output_type_from_output_dtype_and_empty_zero_points() -> None:
    x = np.array([[1.0, -2.0]], dtype=np.float32)
    got = quantize_linear(x, np.array(1, np.float32), output_dtype=TensorProto.INT4, version=21)
    assert got.dtype == np.dtype(ml_dtypes.int4)
    assert quantize_linear(x, np.array(1, np.float32), version=10).tolist() == [[1, 0]]  # uint8 by default
    # a zero point given as an empty tensor beside a scale of one value is absent: uint8
    assert quantize_linear(x, np.array(1, np.float32), np.zeros(0, np.int8)).dtype == np.uint8
    # per axis along an axis of length 0: the empty zero point is present and decides the type
    empty = quantize_linear(
        np.zeros((2, 0), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int8), axis=1
    )
    assert empty.shape == (2, 0) and empty.dtype == np.int8


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"version": 12}, "QuantizeLinear has no version 12"),
        ({"version": 10, "axis": 0}, "QuantizeLinear-10 has no attribute axis"),
        ({"version": 19, "block_size": 2}, "QuantizeLinear-19 has no attribute block_size"),
        ({"version": 21, "precision": 1}, "QuantizeLinear-21 has no attribute precision"),
        ({"output_dtype": TensorProto.UINT8}, "output_dtype is 2 but y_zero_point is int8"),
        ({"precision": TensorProto.DOUBLE}, "precision 11 is not one of"),
        ({"saturate": 2}, "saturate 2 is not the integer 0 or 1"),
    ],
)
def test_invalid_configurations_are_refused(kwargs, message) -> None:
    with pytest.raises(KernelError, match=message):
        quantize_linear(np.ones(3, np.float32), np.array(1, np.float32), np.array(0, np.int8), **kwargs)


def test_invalid_types_and_shapes_are_refused() -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(KernelError, match="x is float but y_scale is float16; in QuantizeLinear-21"):
        quantize_linear(x, np.array(1, np.float16), version=21)
    with pytest.raises(KernelError, match="y_zero_point has element type 'int16'; allowed: int8, uint8"):
        quantize_linear(x, np.array(1, np.float32), np.array(0, np.int16), version=19)
    with pytest.raises(KernelError, match="x has element type 'float64'"):
        quantize_linear(x.astype(np.float64), np.array(1, np.float32))
    with pytest.raises(KernelError, match="a scale and its zero point must have the same shape"):
        quantize_linear(x, np.ones(3, np.float32), np.zeros(2, np.int8))
    e8m0 = np.array(2, ml_dtypes.float8_e8m0fnu)
    with pytest.raises(KernelError, match="float8e8m0 and precision is not given"):
        quantize_linear(x, e8m0, version=24)
    assert quantize_linear(x * 3, e8m0, precision=TensorProto.FLOAT, version=24).tolist() == [[2, 2, 2]] * 2


# ---------------------------------------------------------------------------------------------
# against onnx.reference and ONNX Runtime where they are exact


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    out=st.sampled_from(["int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2"]),
    granularity=st.sampled_from(["tensor", "axis", "blocked"]),
)
def test_matches_reference_on_finite_inputs(seed, out, granularity) -> None:
    """onnx.reference divides in float32 and rounds half to even, as we do: exact where the quotient is
    finite and fits its int32 cast."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((3, 4, 5)) * 10.0 ** rng.integers(0, 4)).astype(np.float32)
    shape, attrs = {
        "tensor": ((), {}),
        "axis": ((4,), {"axis": 1}),
        "blocked": ((3, 2, 5), {"axis": 1, "block_size": 3}),
    }[granularity]
    scale = np.asarray(rng.random(shape) * 3 + 0.01, dtype=np.float32)
    dtype, low, high = INTS[out]
    zero = np.asarray(rng.integers(low, high + 1, shape), dtype=dtype)
    got = quantize_linear(x, scale, zero, **attrs, version=25)
    (expected,) = reference_run("QuantizeLinear", 25, {"x": x, "s": scale, "z": zero}, **attrs)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()


def test_reference_differs_on_infinities_and_float8_zero_points() -> None:
    """Where we leave onnx.reference (docs/semantics.md): it maps +inf (and quotients beyond int32) to the
    minimum of every integer type, and ignores a float8 zero point."""
    x = np.array([np.inf, 3e9], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (reference,) = reference_run(
            "QuantizeLinear", 21, {"x": x, "s": np.array(1, np.float32), "z": np.array(0, ml_dtypes.int4)}
        )
    assert reference.astype(int).tolist() == [-8, -8]
    assert quantize_linear(x, np.array(1, np.float32), np.array(0, ml_dtypes.int4)).astype(int).tolist() == [
        7,
        7,
    ]
    one = np.array(1, ml_dtypes.float8_e4m3fn)
    (reference,) = reference_run(
        "QuantizeLinear", 21, {"x": np.array([1.0], np.float32), "s": np.array(1, np.float32), "z": one}
    )
    assert reference.astype(np.float64).tolist() == [1.0]
    assert quantize_linear(np.array([1.0], np.float32), np.array(1, np.float32), one).astype(
        np.float64
    ).tolist() == [2.0]


_ORT_TYPES = {
    "uint8": TensorProto.UINT8,
    "int8": TensorProto.INT8,
    "uint16": TensorProto.UINT16,
    "int16": TensorProto.INT16,
}


@pytest.mark.parametrize("out", sorted(_ORT_TYPES))
@pytest.mark.parametrize("granularity", ["tensor", "axis", "blocked"])
def test_matches_onnxruntime_for_float32_into_integers(out, granularity) -> None:
    """ORT divides in float32 and rounds half to even: exact, including infinities (NaN aside)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, 6, 5)) * 300).astype(np.float32)
    x.ravel()[:6] = [np.inf, -np.inf, 0.5, 1.5, -2.5, 1e30]
    shape, attrs = {
        "tensor": ((), {}),
        "axis": ((6,), {"axis": 1}),
        "blocked": ((4, 2, 5), {"axis": 1, "block_size": 4}),
    }[granularity]
    scale = np.asarray(rng.random(shape) + 0.05, dtype=np.float32)
    dtype, low, high = INTS[out]
    zero = np.asarray(rng.integers(low, high + 1, shape), dtype=dtype)
    session = ort_session(
        "QuantizeLinear", 21, [("x", 1), ("s", 1), ("z", _ORT_TYPES[out])], [("y", _ORT_TYPES[out])], **attrs
    )
    (expected,) = session.run(None, {"x": x, "s": scale, "z": zero})
    assert np.array_equal(quantize_linear(x, scale, zero, **attrs, version=21), expected)


def test_float_types_of_x_are_taken_exactly() -> None:
    x = np.array([1.5, 2.5, 300.0], dtype=ml_dtypes.bfloat16)
    got = quantize_linear(x, np.array(1, ml_dtypes.bfloat16), np.array(0, np.int8), version=19)
    assert got.tolist() == [2, 2, 127]
    half = quantize_linear(
        np.array([2049], np.float16), np.array(1, np.float16), np.array(0, np.uint16), version=21
    )
    assert half.tolist() == [2048]  # x is the float16 value 2048


def test_output_is_checked_before_allocation() -> None:
    huge = np.broadcast_to(np.zeros((), np.float32), (2**25, 2**25))
    with pytest.raises(KernelError, match="output"):
        quantize_linear(huge, np.array(1, np.float32))


for name, dtype in FLOATS.items():  # the oracle's tables hold every float type the kernel may use
    assert ELEMENTS[name].dtype == np.dtype(dtype)


def test_a_scalar_input_keeps_its_shape() -> None:
    from customops.kernels.quantized.dequantize_linear import dequantize_linear

    y = quantize_linear(
        np.array(2.5, np.float32), np.array(1, np.float32), np.array(0, ml_dtypes.float8_e4m3fn)
    )
    assert y.shape == () and y.astype(np.float64) == 2.5
    assert quantize_linear(np.array(2.5, np.float32), np.array(1, np.float32)).shape == ()
    assert dequantize_linear(np.array(3, np.uint8), np.array(2, np.float32)).shape == ()
