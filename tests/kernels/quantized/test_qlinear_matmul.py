"""Tests for customops.kernels.quantized.qlinear_matmul (ONNX QLinearMatMul 10 and 21)."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto

from customops.errors import KernelError
from customops.kernels.quantized.arithmetic import ELEMENTS
from customops.kernels.quantized.qlinear_matmul import SCALES, TYPES, qlinear_matmul
from tests.kernels.quantized.oracles import (
    FLOAT8,
    FLOATS,
    INTS,
    cases,
    int_rounded,
    ort_session,
    reference_run,
    round_narrow,
)
from tests.kernels.quantized.test_quantize_linear import _onnx_types

BACKEND = cases("test_qlinearmatmul", "qlinearmatmul")
_TYPES = {"int8": np.int8, "uint8": np.uint8, **FLOAT8}


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    assert len(BACKEND) == 8
    for inputs, outputs in case.data_sets:
        got = qlinear_matmul(*inputs, version=case.model.opset_import[0].version)
        assert got.dtype == outputs[0].dtype and np.array_equal(got, outputs[0])


@pytest.mark.parametrize("version", [10, 21])
def test_types_match_onnx(version) -> None:
    for name in ("a", "b", "y"):
        assert _onnx_types("QLinearMatMul", version, name) == tuple(sorted(TYPES[version]))
    assert _onnx_types("QLinearMatMul", version, "a_scale") == tuple(sorted(SCALES[version]))


def _values(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name in ("int8", "uint8"):
        info = np.iinfo(_TYPES[name])
        return rng.integers(info.min, info.max + 1, shape).astype(_TYPES[name])
    codes = rng.integers(0, 256, shape).astype(np.uint8).view(_TYPES[name])
    finite = np.isfinite(codes.astype(np.float64))
    return np.where(finite, codes, np.zeros((), _TYPES[name])).astype(_TYPES[name])


def _oracle(a, sa, za, b, sb, zb, sy, zy, out: str) -> np.ndarray:
    """The spec's formula with Python fractions, one output element at a time (2-D a and b)."""
    m = a.shape[0]
    n = b.shape[1]
    y = np.zeros((m, n), dtype=np.float64)
    frac = np.vectorize(lambda v: Fraction(float(v)), otypes=[object])
    fa = (frac(a.astype(np.float64)) - frac(za.astype(np.float64))) * frac(sa.astype(np.float64))
    fb = (frac(b.astype(np.float64)) - frac(zb.astype(np.float64))) * frac(sb.astype(np.float64))
    real = np.matmul(fa, fb)
    for i, j in np.ndindex(m, n):
        value = real[i, j] / Fraction(float(sy))
        if out in INTS:
            y[i, j] = int_rounded(value, int(zy), out)
        else:
            total = value + Fraction(float(zy.astype(np.float64)))
            rounded, over = round_narrow(total, out)
            y[i, j] = math.copysign(ELEMENTS[out].high, total) if over else float(rounded)
    return y


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    types=st.tuples(*[st.sampled_from(sorted(_TYPES))] * 3),
    scale_type=st.sampled_from(sorted(FLOATS)),
    rows=st.booleans(),
    cols=st.booleans(),
    k=st.integers(0, 9),
)
def test_rounds_the_real_value_once(seed, types, scale_type, rows, cols, k) -> None:
    rng = np.random.default_rng(seed)
    m, n = 3, 4
    a, b = _values(rng, types[0], (m, k)), _values(rng, types[1], (k, n))
    za, zb = _values(rng, types[0], (m, 1) if rows else ()), _values(rng, types[1], (1, n) if cols else ())
    scales = rng.choice([0.5, 0.25, 1.0, 0.1, 0.037, 2.0, 3.0], 3 + m + n)
    sa = np.asarray(scales[3 : 3 + m].reshape(m, 1) if rows else scales[0], dtype=FLOATS[scale_type])
    sb = np.asarray(scales[3 + m :].reshape(1, n) if cols else scales[1], dtype=FLOATS[scale_type])
    sy = np.asarray(
        scales[2] * (10.0 ** rng.integers(-2, 4) if types[2] in INTS else 1), dtype=FLOATS[scale_type]
    )
    zy = _values(rng, types[2], ())
    got = qlinear_matmul(a, sa, za, b, sb, zb, sy, zy, version=21)
    expected = _oracle(a, sa, za, b, sb, zb, sy, zy, types[2])
    assert got.dtype == np.dtype(_TYPES[types[2]]) and got.shape == (m, n)
    assert np.array_equal(got.astype(np.float64), expected)


def test_exact_ties_go_to_even_and_no_sum_wraps() -> None:
    a = np.array([[1, 3, 5, -1, -3, 7]], np.int8).T  # [6, 1]
    b = np.array([[1]], np.int8)
    half = np.array(0.5, np.float32)
    one = np.array(1, np.float32)
    zero = np.array(0, np.int8)
    got = qlinear_matmul(a, half, zero, b, one, zero, one, zero, version=10)
    assert got.ravel().tolist() == [0, 2, 2, 0, -2, 4]
    # 33100 * 255 * 255 leaves int32; the real value does not wrap
    k = 33100
    big = qlinear_matmul(
        np.full((1, k), 255, np.uint8),
        one,
        np.array(0, np.uint8),
        np.full((k, 1), 255, np.uint8),
        one,
        np.array(0, np.uint8),
        np.array(2**24, np.float32),
        np.array(0, np.uint8),
    )
    assert big.tolist() == [[round(Fraction(k * 65025, 2**24))]]


def test_batches_per_row_and_per_column_parameters_and_vectors() -> None:
    rng = np.random.default_rng(8)
    a = _values(rng, "uint8", (2, 3, 5))
    b = _values(rng, "int8", (2, 5, 4))
    sa = np.asarray(rng.random((2, 3, 1)) + 0.1, np.float32)
    za = _values(rng, "uint8", (2, 3, 1))
    sb = np.asarray(rng.random(4) + 0.1, np.float32)
    zb = _values(rng, "int8", (4,))
    sy, zy = np.array(0.7, np.float32), np.array(3, np.int8)
    got = qlinear_matmul(a, sa, za, b, sb, zb, sy, zy)
    for i in range(2):
        expected = _oracle(a[i], sa[i], za[i], b[i], sb.reshape(1, 4), zb.reshape(1, 4), sy, zy, "int8")
        assert np.array_equal(got[i], expected)
    vector = qlinear_matmul(a[0, 0], sa[0, 0, 0], za[0, 0, 0], b[0], sb, zb, sy, zy)
    assert vector.shape == (4,) and np.array_equal(vector, got[0, 0])


def test_float8_special_values() -> None:
    nan = np.array([[np.nan, 1]], ml_dtypes.float8_e4m3fn)
    one = np.array([[1], [1]], ml_dtypes.float8_e4m3fn)
    s = np.array(1, np.float32)
    f8zero = np.array(0, ml_dtypes.float8_e4m3fn)
    got = qlinear_matmul(nan, s, f8zero, one, s, f8zero, s, f8zero)
    assert np.isnan(got.astype(np.float64)).all()
    with pytest.raises(KernelError, match="NaN"):
        qlinear_matmul(nan, s, f8zero, one, s, f8zero, s, np.array(0, np.int8))
    inf = np.array([[np.inf, 1]], ml_dtypes.float8_e5m2)
    e5 = np.array([[1], [1]], ml_dtypes.float8_e5m2)
    e5zero = np.array(0, ml_dtypes.float8_e5m2)
    assert qlinear_matmul(inf, s, e5zero, e5, s, e5zero, s, np.array(0, np.uint8)).tolist() == [[255]]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"y_scale": np.ones(2, np.float32), "y_zero_point": np.zeros(2, np.uint8)},
            "must be one value each",
        ),
        ({"b_scale": np.array(1, np.float16)}, "b_scale has element type 'float16'; allowed: float"),
        (
            {"a_zero_point": np.zeros(3, np.uint8)},
            "a_scale and its zero point must have the same shape|a_zero_point has shape",
        ),
        ({"a_zero_point": np.array(0, np.int8)}, "a_zero_point has element type 'int8'"),
        (
            {"version": 10, "a": np.zeros((2, 3), ml_dtypes.float8_e4m3fn)},
            "a has element type 'float8e4m3fn'",
        ),
    ],
)
def test_invalid_inputs_are_refused(change, message) -> None:
    inputs = {
        "a": np.zeros((2, 3), np.uint8),
        "a_scale": np.array(1, np.float32),
        "a_zero_point": np.array(0, np.uint8),
        "b": np.zeros((3, 2), np.uint8),
        "b_scale": np.array(1, np.float32),
        "b_zero_point": np.array(0, np.uint8),
        "y_scale": np.array(1, np.float32),
        "y_zero_point": np.array(0, np.uint8),
        "version": 21,
    }
    inputs.update(change)
    version = inputs.pop("version")
    with pytest.raises(KernelError, match=message):
        qlinear_matmul(**inputs, version=version)


def _int8_session(types: tuple[int, int, int]):
    a, b, y = types
    inputs = [("a", a), ("sa", 1), ("za", a), ("b", b), ("sb", 1), ("zb", b), ("sy", 1), ("zy", y)]
    return ort_session("QLinearMatMul", 10, inputs, [("y", y)])


def test_reference_and_onnxruntime_round_a_float32_multiplier_first() -> None:
    """docs/semantics.md: a_scale * b_scale / y_scale rounded to float32 before it meets the sum. With
    a_scale = float32(1/3), b_scale = 3, y_scale = 2 the real values of sums 1, 3, 5 lie just above 0.5,
    1.5 and 2.5 (the float32 multiplier is exactly 0.5): they round to 1, 2, 3, not to the even 0, 2, 2."""
    a = np.array([[1, 3, 5]], np.int8).T
    b = np.array([[1]], np.int8)
    sa, sb, sy = np.array(1 / 3, np.float32), np.array(3, np.float32), np.array(2, np.float32)
    zero = np.array(0, np.int8)
    feed = {"a": a, "sa": sa, "za": zero, "b": b, "sb": sb, "zb": zero, "sy": sy, "zy": zero}
    assert qlinear_matmul(a, sa, zero, b, sb, zero, sy, zero).ravel().tolist() == [1, 2, 3]
    assert [round(Fraction(s) * Fraction(float(sa)) * 3 / 2) for s in (1, 3, 5)] == [1, 2, 3]
    (reference,) = reference_run("QLinearMatMul", 10, feed)
    (builtin,) = _int8_session((TensorProto.INT8,) * 3).run(None, feed)  # s8s8: its integer sum is exact
    assert reference.ravel().tolist() == builtin.ravel().tolist() == [0, 2, 2]


def test_reference_and_onnxruntime_wrap_sums_beyond_int32() -> None:
    k = 33100
    a, b = np.full((1, k), 255, np.uint8), np.full((k, 1), 255, np.uint8)
    one, zero, sy = np.array(1, np.float32), np.array(0, np.uint8), np.array(2**24, np.float32)
    feed = {"a": a, "sa": one, "za": zero, "b": b, "sb": one, "zb": zero, "sy": sy, "zy": zero}
    assert qlinear_matmul(a, one, zero, b, one, zero, sy, zero).tolist() == [[128]]  # 128.29
    (reference,) = reference_run("QLinearMatMul", 10, feed)
    (builtin,) = _int8_session((TensorProto.UINT8,) * 3).run(None, feed)  # u8u8: exact but for the wrap
    assert reference.tolist() == builtin.tolist() == [[0]]  # the wrapped sum is negative


def test_every_input_is_required() -> None:
    one, zero = np.array(1, np.float32), np.array(0, np.uint8)
    a = np.zeros((2, 2), np.uint8)
    with pytest.raises(KernelError, match="QLinearMatMul requires input b_zero_point, which is missing"):
        qlinear_matmul(a, one, zero, a, one, None, one, zero)
