"""Tests for customops.kernels.quantized.arithmetic: exact operations rounded once, the float8 table,
integer saturation, scale layouts and exact integer products, each against an independent oracle."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from customops.errors import KernelError
from customops.kernels.quantized import arithmetic as ar
from tests.kernels.quantized.oracles import FLOAT8, FLOATS, round_float, round_narrow


def test_element_table_matches_onnx() -> None:
    for name, elem in ar.ELEMENTS.items():
        code = getattr(TensorProto, name.upper())
        assert elem.code == code
        assert elem.dtype == np.dtype(helper.tensor_dtype_to_np_dtype(code))
    assert ar.ELEMENTS["int4"].low == -8 and ar.ELEMENTS["uint2"].high == 3
    assert ar.ELEMENTS["float8e4m3fn"].high == 448 and ar.ELEMENTS["float8e5m2fnuz"].shift == 17


# ---------------------------------------------------------------------------------------------
# rounding to odd

_VALUES = st.one_of(
    st.floats(width=32, allow_nan=False, allow_infinity=False),
    st.integers(-(2**31), 2**31 - 1).map(float),
    st.integers(0, 255).map(lambda c: float(np.uint8(c).view(ml_dtypes.float8_e5m2))).filter(math.isfinite),
    st.integers(-(2**33), 2**33).map(float),
    st.builds(lambda m, e: m * 2.0**e, st.integers(-(2**24), 2**24), st.integers(-160, 130)),
)


def _odd_oracle(exact: Fraction) -> float:
    nearest = float(exact)
    if Fraction(nearest) == exact:
        return nearest
    other = np.nextafter(nearest, math.inf if Fraction(nearest) < exact else -math.inf)
    return nearest if np.array(nearest).view(np.uint64) & 1 else float(other)


@settings(max_examples=600, deadline=None)
@given(a=_VALUES, b=_VALUES, op=st.sampled_from(["sum", "product", "quotient"]))
def test_odd_operations_are_exact_rounded_to_odd_and_round_once_to_narrower_types(a, b, op) -> None:
    if op == "quotient" and b == 0:
        return
    fa, fb = Fraction(a), Fraction(b)
    exact = {"sum": fa + fb, "product": fa * fb, "quotient": fa / fb if b else None}[op]
    function = {"sum": ar.odd_sum, "product": ar.odd_product, "quotient": ar.odd_quotient}[op]
    got = float(function(np.array([a]), np.array([b]))[0])
    assert got == _odd_oracle(exact)
    for name, dtype in FLOATS.items():
        expected = round_float(exact, name)
        with np.errstate(over="ignore"):
            rounded = float(np.array([got]).astype(dtype).astype(np.float64)[0])
        if expected is None:
            assert math.isinf(rounded)
        else:
            assert Fraction(rounded) == expected, (name, a, b, op)


def test_odd_operations_keep_ieee_special_values() -> None:
    inf, nan = math.inf, math.nan
    assert np.isnan(ar.odd_quotient(np.array([0.0]), np.array([0.0]))[0])
    assert ar.odd_quotient(np.array([3.0, -3.0]), np.array([0.0, 0.0])).tolist() == [inf, -inf]
    assert ar.odd_quotient(np.array([3.0]), np.array([inf]))[0] == 0
    assert np.isnan(ar.odd_product(np.array([inf]), np.array([0.0]))[0])
    assert ar.odd_sum(np.array([-0.0]), np.array([0.0]))[0].tobytes() == np.float64(0.0).tobytes()
    assert np.isnan(ar.odd_sum(np.array([nan]), np.array([1.0]))[0])


def test_odd_fraction_matches_the_array_operations() -> None:
    value = Fraction(1, 3) + Fraction(2**-60)
    assert ar.odd_fraction(value) == _odd_oracle(value)
    assert ar.odd_fraction(Fraction(5, 4)) == 1.25


# ---------------------------------------------------------------------------------------------
# the last rounding


def _float8_probes(dtype: type) -> np.ndarray:
    """Every finite value of a float8 type, the midpoints between neighbours and a hair either side,
    the overflow threshold, infinities, NaN and signed zeros."""
    values = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mids = (finite[1:] + finite[:-1]) / 2
    top = finite[-1]
    step = top - finite[-2]
    edge = np.array([top + step / 2, 2 * top, 1e300])
    probes = np.concatenate([finite, mids, edge, -edge])
    probes = np.concatenate([probes, np.nextafter(probes, np.inf), np.nextafter(probes, -np.inf)])
    return np.concatenate([probes, [math.inf, -math.inf, math.nan, -0.0, 0.0]])


@pytest.mark.parametrize("name", sorted(FLOAT8))
@pytest.mark.parametrize("saturate", [True, False])
def test_to_floats_follows_the_cast_table_of_float8(name, saturate) -> None:
    elem = ar.ELEMENTS[name]
    probes = _float8_probes(FLOAT8[name])
    got = ar.to_floats(probes, elem, saturate, "v").astype(np.float64)
    fnuz = name.endswith("fnuz")
    for value, result in zip(probes.tolist(), got.tolist(), strict=True):
        if math.isnan(value):
            assert math.isnan(result)
            continue
        rounded, over = round_narrow(Fraction(value), name) if math.isfinite(value) else (None, True)
        if over and saturate:
            assert result == math.copysign(elem.high, value), (value, result)
        elif over:
            expected = math.copysign(math.inf, value) if name == "float8e5m2" else math.nan
            assert (math.isnan(result) and math.isnan(expected)) or result == expected, (value, result)
        else:
            assert Fraction(result) == rounded, (value, result)
            if result == 0:  # the sign of zero: kept, except by the types without -0
                assert math.copysign(1, result) == (1 if fnuz else math.copysign(1, value))


def test_to_floats_gives_float8_nan_the_sign_of_the_value_without_saturation() -> None:
    values = np.array([-math.inf, -1e9, math.inf])
    bits = ar.to_floats(values, ar.ELEMENTS["float8e4m3fn"], False, "v").view(np.uint8)
    assert bits.tolist() == [0xFF, 0xFF, 0x7F]


def test_to_floats_float4_saturates_and_refuses_nan() -> None:
    elem = ar.ELEMENTS["float4e2m1"]
    got = ar.to_floats(np.array([math.inf, -math.inf, 7.0, 5.0, 0.25, 0.75]), elem, False, "v")
    assert got.astype(np.float64).tolist() == [6, -6, 6, 4, 0, 1]
    with pytest.raises(KernelError, match=r"v is NaN at index \(1,\): float4e2m1 has no NaN"):
        ar.to_floats(np.array([1.0, math.nan]), elem, True, "v")


def test_to_integers_rounds_half_to_even_adds_the_zero_point_and_saturates() -> None:
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1e300, -math.inf, math.inf, 2.4999999999999996])
    got = ar.to_integers(values, np.array(3), ar.ELEMENTS["int8"], "v")
    assert got.dtype == np.int8
    assert got.tolist() == [3, 5, 5, 3, 1, 127, -128, 127, 5]
    got4 = ar.to_integers(np.array([7.5, -9.0]), np.array(1), ar.ELEMENTS["int4"], "v")
    assert got4.dtype == np.dtype(ml_dtypes.int4) and got4.astype(int).tolist() == [7, -8]
    with pytest.raises(KernelError, match=r"v is NaN at index \(1, 0\): uint8 has no NaN"):
        ar.to_integers(np.array([[1.0], [math.nan]]), None, ar.ELEMENTS["uint8"], "v")


# ---------------------------------------------------------------------------------------------
# requantization


def _requantize_oracle(acc: int, num: float, den: float, zero: float, name: str) -> float:
    real = Fraction(acc) * Fraction(num) / Fraction(den)
    if name in FLOAT8:
        value, over = round_narrow(real + Fraction(zero), name)
        return math.copysign(ar.ELEMENTS[name].high, real + Fraction(zero)) if over else float(value)
    low, high = ar.ELEMENTS[name].low, ar.ELEMENTS[name].high
    return float(min(max(round(real) + int(zero), low), high))


@settings(max_examples=150, deadline=None)
@given(
    acc=st.lists(st.integers(-(2**40), 2**40) | st.integers(-300, 300), min_size=1, max_size=20),
    scales=st.tuples(*[st.floats(2**-20, 2**10, width=32) | st.sampled_from([0.5, 0.25, 2.0, 0.1])] * 3),
    zero=st.integers(-128, 127),
    name=st.sampled_from(["int8", "uint8", "float8e4m3fn", "float8e5m2"]),
)
def test_requantize_rounds_the_real_value_once(acc, scales, zero, name) -> None:
    elem = ar.ELEMENTS[name]
    zero_value = np.array(zero if name != "uint8" else abs(zero))
    zero_value = zero_value.astype(np.float64) if elem.kind == "float8" else zero_value.astype(np.int64)
    if elem.kind == "float8":
        zero_value = zero_value.astype(elem.dtype).astype(np.float64)
    num = np.float64(scales[0]) * np.float64(scales[1])
    got = ar.requantize(np.array(acc, dtype=np.int64), num, np.float64(scales[2]), zero_value, elem, "v")
    expected = [_requantize_oracle(a, num, scales[2], float(zero_value), name) for a in acc]
    assert got.astype(np.float64).tolist() == expected


def test_requantize_resolves_exact_ties_and_values_beside_them() -> None:
    # acc * 1/2 / 1 lands exactly on .5 for odd acc: ties go to even; 3 * (1/3 rounded) misses the tie
    acc = np.array([1, 3, 5, -1, -3, 7], dtype=np.int64)
    got = ar.requantize(acc, np.float64(0.5), np.float64(1.0), np.array(0), ar.ELEMENTS["int8"], "v")
    assert got.tolist() == [0, 2, 2, 0, -2, 4]
    third = float(np.float32(1 / 3))
    got = ar.requantize(
        np.array([3, 9]), np.float64(third) * 0.5, np.float64(1.0), np.array(0), ar.ELEMENTS["int8"], "v"
    )
    expected = [round(Fraction(a) * Fraction(third) / 2) for a in (3, 9)]
    assert got.tolist() == expected


def test_requantize_accepts_python_int_sums_beyond_int64() -> None:
    acc = np.array([2**70 + 1, -(2**70)], dtype=object)
    got = ar.requantize(acc, np.float64(2.0**-70), np.float64(1.0), np.array(0), ar.ELEMENTS["int8"], "v")
    assert got.tolist() == [1, -1]


# ---------------------------------------------------------------------------------------------
# layouts


def test_layout_kinds_and_spread() -> None:
    assert ar.layout((2, 3), (), 1, 0, ("tensor",)).kind == "tensor"
    assert ar.layout((2, 3), (1,), 7, 0, ("tensor",)).kind == "tensor"  # axis ignored per tensor
    axis = ar.layout((2, 3, 4), (4,), -1, 0, ("tensor", "axis"))
    assert (axis.kind, axis.axis) == ("axis", 2)
    assert axis.spread(np.arange(4), (2, 3, 4)).shape == (1, 1, 4)
    blocked = ar.layout((2, 5), (2, 2), 1, 3, ("tensor", "axis", "blocked"))
    assert blocked.spread(np.array([[1, 2], [3, 4]]), (2, 5)).tolist() == [[1, 1, 1, 2, 2], [3, 3, 3, 4, 4]]
    assert ar.layout((0, 4), (0, 2), 1, 3, ("blocked",)).kind == "blocked"


@pytest.mark.parametrize(
    ("x_shape", "scale_shape", "axis", "block", "kinds", "message"),
    [
        ((2, 3), (3,), 1, 0, ("tensor",), "scalar scale only"),
        ((2, 3), (2,), 1, 0, ("tensor", "axis"), "axis 1 of the input"),
        ((2, 3), (3,), 2, 0, ("tensor", "axis"), r"axis 2 is out of range \[-2, 1\]"),
        ((2, 3), (2, 3), 1, 0, ("tensor", "axis", "blocked"), "must be a scalar or 1-D"),
        ((2, 3), (2, 2), 1, 2, ("tensor", "axis"), "no blocked quantization"),
        ((2, 6), (2, 2), 1, 2, ("blocked",), r"need \(2, 3\)"),
        ((2, 6), (2, 3), 1, 4, ("blocked",), r"need \(2, 2\)"),
        ((2, 6), (3,), 1, 2, ("blocked",), "the input's rank 2"),
        ((2, 6), (2, 3), 1, -1, ("blocked",), "block_size is -1"),
    ],
)
def test_layout_rejects_what_the_spec_does_not_allow(
    x_shape, scale_shape, axis, block, kinds, message
) -> None:
    with pytest.raises(KernelError, match=message):
        ar.layout(x_shape, scale_shape, axis, block, kinds)


def test_zero_point_must_have_the_scale_shape() -> None:
    ar.check_pair(np.zeros(()), np.zeros((1,)), ("s", "z"))
    with pytest.raises(KernelError, match="z has shape"):
        ar.check_pair(np.zeros((3,)), np.zeros((1,)), ("s", "z"))


# ---------------------------------------------------------------------------------------------
# exact integer products


def _brute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(object), b.astype(object))


@settings(max_examples=80, deadline=None)
@given(
    m=st.integers(1, 4),
    k=st.integers(0, 30),
    n=st.integers(1, 4),
    bits=st.sampled_from([8, 9, 20, 34]),
    seed=st.integers(0, 2**32 - 1),
)
def test_exact_matmul_paths_agree_with_python_ints(m, k, n, bits, seed) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2**bits), 2**bits, (2, m, k))
    b = rng.integers(-(2**bits), 2**bits, (k, n))
    expected = _brute(a, b)
    fast = ar.exact_matmul(a, b)
    assert (fast.astype(object) == expected).all()
    if k * 4**bits < 2**63:
        assert fast.dtype == np.int64
        assert np.array_equal(ar.exact_matmul(a, b, blas=False), fast)
    assert (ar.limb_matmul(a, b, 5) == expected).all()


def test_exact_matmul_float_path_is_taken_only_below_two_to_the_53() -> None:
    k = 64
    big = np.full((1, k), 2**23, dtype=np.int64)  # k * 2**23 * 2**23 = 2**52: float64 is exact
    assert ar.exact_matmul(big, big.T)[0, 0] == k * 2**46
    huge = np.full((1, 3), 2**26 + 1, dtype=np.int64)  # 3 * (2**26 + 1)**2 > 2**53: limbs
    exact = 3 * (2**26 + 1) ** 2
    assert ar.exact_matmul(huge, huge.T)[0, 0] == exact
    assert int(np.matmul(huge.astype(np.float64), huge.T.astype(np.float64))[0, 0]) != exact  # float64 is not


def test_chunked_results_and_error_positions_do_not_depend_on_the_chunk_size(monkeypatch) -> None:
    from customops.kernels.quantized.dequantize_linear import dequantize_linear
    from customops.kernels.quantized.qlinear_matmul import qlinear_matmul
    from customops.kernels.quantized.quantize_linear import quantize_linear

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5, 7)) * 50).astype(np.float32)
    scale = (rng.random(5) + 0.1).astype(np.float32)
    zero = rng.integers(-100, 100, 5).astype(np.int8)
    a = rng.integers(0, 256, (2, 6, 9)).astype(np.uint8)
    b = rng.integers(-128, 128, (9, 4)).astype(np.int8)
    one, half = np.array(1, np.float32), np.array(0.5, np.float32)

    def run() -> list[np.ndarray]:
        q = quantize_linear(x, scale, zero, axis=1)
        return [
            q,
            dequantize_linear(q, scale, zero, axis=1),
            qlinear_matmul(
                a, one, np.array(3, np.uint8), b, half, np.array(1, np.int8), half, np.array(2, np.int8)
            ),
        ]

    whole = run()
    monkeypatch.setattr(ar, "CHUNK", 7)
    for got, expected in zip(run(), whole, strict=True):
        assert got.tobytes() == expected.tobytes() and got.flags.c_contiguous
    x[2, 4, 5] = np.nan
    with pytest.raises(KernelError, match=r"at index \(2, 4, 5\)"):
        quantize_linear(x, scale, zero, axis=1)


def test_a_block_longer_than_its_axis_spreads_without_repeating_it_block_size_times() -> None:
    blocked = ar.layout((2, 3), (2, 1), 1, 2**60, ("blocked",))
    assert blocked.spread(np.array([[1], [2]]), (2, 3)).tolist() == [[1, 1, 1], [2, 2, 2]]
