"""customops.eval.judging.metrics: every figure a comparison reports, on the cases that make tools hide a
difference: strings, dtypes, NaN and inf placement, empty tensors, shapes."""

from __future__ import annotations

import numpy as np
import pytest

from customops.eval.judging.metrics import bitwise_equal, compare_arrays, tolerance_for

F32 = np.float32


def test_string_mismatches_are_counted_and_fail():
    a = np.array(["a", "b", "c"], dtype=object)
    b = np.array(["a", "x", "c"], dtype=object)
    m = compare_arrays(a, b, 0.0, 0.0)
    assert m.mismatches == 1 and not m.passed
    assert compare_arrays(a, a.copy(), 0.0, 0.0).passed
    same_text = compare_arrays(np.array(["a", "b"]), np.array(["a", "b"], dtype=object), 0.0, 0.0)
    assert same_text.mismatches == 0 and not same_text.passed  # equal text, different dtypes


def test_a_dtype_mismatch_fails_even_with_equal_values():
    m = compare_arrays(np.array([1, 2], np.int32), np.array([1, 2], np.int64), 0.0, 0.0)
    assert m.mismatches == 0 and not m.dtype_match and not m.passed
    m = compare_arrays(np.array([1.5], np.float32), np.array([1.5], np.float64), 1.0, 1.0)
    assert not m.dtype_match and not m.passed


def test_a_shape_mismatch_fails_before_any_value_is_read():
    m = compare_arrays(np.zeros((2, 3), F32), np.zeros((3, 2), F32), 1.0, 1.0)
    assert not m.shape_match and not m.passed and m.mismatches is None


@pytest.mark.parametrize(
    ("a", "b", "nan_match", "inf_match", "passes"),
    [
        ([np.nan, 1.0], [np.nan, 1.0], True, True, True),
        ([np.nan, 1.0], [1.0, np.nan], False, True, False),
        ([np.nan, 1.0], [0.0, 1.0], False, True, False),
        ([np.inf, 1.0], [np.inf, 1.0], True, True, True),
        ([np.inf, 1.0], [-np.inf, 1.0], True, False, False),
        ([np.inf, 1.0], [1.0, 1.0], True, False, False),
        ([-0.0, 1.0], [0.0, 1.0], True, True, True),
    ],
)
def test_nan_and_inf_must_sit_in_the_same_places(a, b, nan_match, inf_match, passes):
    m = compare_arrays(np.array(a, F32), np.array(b, F32), 1e-5, 1e-5)
    assert (m.nan_match, m.inf_match, m.passed) == (nan_match, inf_match, passes)
    if not passes:
        assert m.mismatches >= 1


def test_empty_tensors_agree_and_report_zero_error():
    m = compare_arrays(np.zeros((0, 3), F32), np.zeros((0, 3), F32), 0.0, 0.0)
    assert m.passed and m.mismatches == 0 and m.max_abs == 0.0 and m.count == 0
    m = compare_arrays(np.zeros((0,), F32), np.zeros((1,), F32), 0.0, 0.0)
    assert not m.passed


def test_error_figures_and_the_tolerances_that_would_pass():
    a = np.array([1.0, 2.0, 4.0], F32)
    b = np.array([1.0, 2.5, 4.0], F32)
    m = compare_arrays(a, b, 0.0, 0.1)
    assert m.mismatches == 1 and not m.passed
    assert m.max_abs == pytest.approx(0.5) and m.max_rel == pytest.approx(0.2)
    assert compare_arrays(a, b, 0.0, m.needed_atol).passed
    assert compare_arrays(a, b, m.needed_rtol * (1 + 1e-12), 0.1).passed
    assert m.max_ulp == int(np.array(2.5, F32).view(np.int32) - np.array(2.0, F32).view(np.int32))


def test_a_reference_of_zero_makes_the_relative_error_infinite_not_a_warning():
    with np.errstate(all="raise"):
        m = compare_arrays(np.array([1.0], F32), np.array([0.0], F32), 0.0, 0.0)
    assert m.max_rel == float("inf") and not m.passed


def test_the_relative_error_is_guarded_near_zero_by_atol():
    """Near a reference of 0 the relative error is taken against atol: a 1e-6 error on a reference of
    1e-9 is 0.1 at atol 1e-5, not 1000; away from zero it is against |b| as before."""
    m = compare_arrays(np.array([1e-9 + 1e-6, 2.2], np.float64), np.array([1e-9, 2.0], np.float64), 0.0, 1e-5)
    assert m.max_rel == pytest.approx(0.1)
    assert compare_arrays(
        np.array([1e-9 + 1e-6], np.float64), np.array([1e-9], np.float64), 0.0, 1e-5
    ).max_rel == pytest.approx(0.1)


def test_integers_and_bools_compare_exactly_by_default():
    assert tolerance_for(np.dtype(np.int64), None, None) == (0.0, 0.0)
    assert tolerance_for(np.dtype(np.float32), None, None) == (1e-5, 1e-5)
    r, t = tolerance_for(np.dtype(np.int32))
    assert compare_arrays(np.array([1, 2], np.int32), np.array([1, 3], np.int32), r, t).mismatches == 1
    assert not compare_arrays(np.array([True]), np.array([False]), 0.0, 0.0).passed


def test_narrow_floats_take_the_documented_default_tolerance():
    """docs/compare.md's table: bfloat16 at 1e-2 (it was exact: ml_dtypes' kind is V, not f), the float8
    types at their epsilon; a bfloat16 one rounding apart passes."""
    import ml_dtypes

    assert tolerance_for(np.dtype(ml_dtypes.bfloat16)) == (1e-2, 1e-2)
    eps = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).eps)
    assert tolerance_for(np.dtype(ml_dtypes.float8_e4m3fn)) == (eps, eps)
    a = np.array([1.0, 3.0], ml_dtypes.bfloat16)
    b = np.array([1.0078125, 3.0], ml_dtypes.bfloat16)  # one bfloat16 ulp above 1
    assert compare_arrays(a, b, *tolerance_for(a.dtype)).passed


def test_ulp_distance_is_not_counted_across_a_sign_change_and_the_two_zeros_are_one():
    tiny = np.nextafter(F32(0), F32(1))
    m = compare_arrays(np.array([-tiny], F32), np.array([tiny], F32), 0.0, 0.0)
    assert m.max_ulp is None and "zero or subnormal" in m.ulp_note  # subnormal: no ulp count
    m = compare_arrays(np.array([-1.0, 2.0], F32), np.array([1.0, 2.0], F32), 0.0, 0.0)
    assert m.max_ulp is None and "1 differing element(s) change sign" in m.ulp_note
    assert m.to_json()["max_ulp"] is None and m.to_json()["ulp_note"] == m.ulp_note
    assert compare_arrays(np.array([-0.0], F32), np.array([0.0], F32), 0.0, 0.0).max_ulp == 0


@pytest.mark.parametrize(
    ("stat", "passes"),
    [("elemwise", False), ("max", False), ("mean", True), ("median", True)],
)
def test_an_error_statistic_decides_instead_of_each_element(stat, passes):
    """One large error among many exact values: elementwise and max fail at atol 0.1, mean (0.1 / 10
    below the limit) and median (0) pass; NaN must still sit at the same places."""
    b = np.arange(10, dtype=F32)
    a = b.copy()
    a[3] += 0.5
    m = compare_arrays(a, b, 0.0, 0.1, stat)
    assert m.passed is passes and m.stat == stat
    if stat != "elemwise":
        expected = {"max": 0.5, "mean": 0.05, "median": 0.0}[stat]
        assert m.stat_abs == pytest.approx(expected) and m.to_json()["stat"] == stat
    else:
        assert "stat" not in m.to_json()  # the default report keeps its keys
    a[5], b[6] = np.nan, np.nan
    assert not compare_arrays(a, b, 1.0, 1.0, stat).passed


def _specimens() -> list[np.ndarray]:
    """Tensors of every kind compare meets, with the values that take special branches."""
    import ml_dtypes

    rng = np.random.default_rng(7)
    floats = rng.standard_normal((3, 5)).astype(np.float32)
    floats[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    floats[1, 0] = np.finfo(np.float32).tiny / 4  # subnormal
    with np.errstate(invalid="ignore"):  # inf x 1j: a NaN real part, wanted
        mixed = (floats + 1j * floats[::-1]).astype(np.complex64)
    return [
        floats,
        floats.astype(np.float64),
        floats.astype(np.float16),
        floats.astype(ml_dtypes.bfloat16),
        np.full((2, 3), np.nan, np.float32),  # no finite element
        np.zeros((0, 4), np.float32),
        np.array(2.5, np.float32),  # a scalar
        floats[:, ::2],  # not contiguous
        mixed,
        rng.integers(-5, 5, (4, 4)).astype(np.int8),
        rng.integers(0, 2**40, (4,), dtype=np.int64),
        np.array([True, False]),
        np.zeros((3,), np.uint16),
        np.full((2,), np.nan, ml_dtypes.bfloat16),  # ml_dtypes' kind is V: no finite element either
        np.array([np.inf, -np.inf], ml_dtypes.bfloat16),
        np.full((3,), np.nan, ml_dtypes.float8_e4m3fn),
        np.array([1.5, -2.0], ml_dtypes.float8_e5m2),
        np.array([1, -2], ml_dtypes.int4),
    ]


@pytest.mark.parametrize("stat", ["elemwise", "max", "mean", "median"])
@pytest.mark.parametrize("index", range(18))
def test_bitwise_equal_tensors_skip_the_pass_with_the_figures_the_pass_gives(index, stat):
    a = _specimens()[index]
    b = a.copy()
    for rtol, atol in ((0.0, 0.0), (1e-5, 1e-5)):
        fast = compare_arrays(a, b, rtol, atol, stat)
        slow = compare_arrays(a, b, rtol, atol, stat, shortcut=False)
        assert fast.to_json() == slow.to_json() and fast.passed, (fast.to_json(), slow.to_json())


@pytest.mark.parametrize(("rtol", "atol"), [(0.0, -1.0), (float("nan"), 0.0), (float("inf"), 0.0)])
def test_tolerances_outside_the_rules_take_the_element_pass(rtol, atol):
    # the command refuses them; a direct call gets what the pass says, equal bits or not
    a = np.zeros(3, np.float32)
    fast = compare_arrays(a, a.copy(), rtol, atol)
    slow = compare_arrays(a, a.copy(), rtol, atol, shortcut=False)
    assert repr(fast.to_json()) == repr(slow.to_json())  # repr: NaN figures compare as text


def test_dates_and_raw_bytes_are_never_taken_as_bit_equal_numbers():
    for a in (np.array(["2020-01-01", "NaT"], "datetime64[D]"), np.zeros(2, "V2")):
        assert not bitwise_equal(a, a.copy())


def test_a_complex_tensor_with_an_inf_and_a_nan_part_matches_itself():
    a = np.array([complex(np.inf, np.nan), 1 + 2j], np.complex64)
    m = compare_arrays(a, a.copy(), 0.0, 0.0, shortcut=False)
    assert m.inf_match and m.nan_match and m.passed
    b = np.array([1 + 2j], np.complex64)
    stats = compare_arrays(b + 1j, b, 0.0, 0.0).errors  # the imaginary part differs by 1: counted
    assert stats is not None and stats.abs["mean"] == 1.0


def test_tensors_equal_in_value_but_not_in_bits_take_the_pass():
    # -0 and +0, and two NaNs of other payloads, are equal for the comparison, not bit for bit
    a = np.array([0.0, np.nan, 1.0], np.float32)
    b = np.array([-0.0, np.nan, 1.0], np.float32)
    b.view(np.uint32)[1] |= 1
    m = compare_arrays(a, b, 0.0, 0.0)
    assert m.to_json() == compare_arrays(a, b, 0.0, 0.0, shortcut=False).to_json() and m.passed
    c = a.copy()
    c[2] = np.nextafter(np.float32(1), np.float32(2))  # one ulp off: found by the pass, not skipped
    assert compare_arrays(a, c, 0.0, 0.0).mismatches == 1 and compare_arrays(a, c, 0.0, 0.0).max_ulp == 1
