"""customops.eval.judging.metrics where no other test holds it: --check-error-stat's relative
error near zero and its dtype check, and the ULP distance of float16."""

from __future__ import annotations

import numpy as np
import pytest

from customops.eval.judging.metrics import STATS, compare_arrays

STATISTICS = [s for s in STATS if s != "elemwise"]


@pytest.mark.parametrize("stat", ["mean", "median"])
def test_the_statistic_s_relative_error_is_guarded_near_zero_by_atol(stat):
    """A reference of 1e-9 with an error of 1e-6 is a relative error of 0.1 at atol 1e-5 (against atol,
    as elementwise), not 1000: the mean (and median) relative error of [0.1, 0.05] is 0.075, within rtol
    0.1, though the absolute one (0.025) is not within atol."""
    b = np.array([1e-9, 1.0], np.float64)
    a = b + np.array([1e-6, 0.05])
    m = compare_arrays(a, b, 0.1, 1e-5, stat)
    assert m.stat_rel == pytest.approx(0.075)
    assert m.stat_abs > 1e-5 and m.passed
    assert m.max_rel == pytest.approx(0.1)  # the elementwise figure agrees on the guard


@pytest.mark.parametrize("stat", STATISTICS)
def test_a_dtype_mismatch_fails_under_every_statistic(stat):
    """Equal values of two element types: no statistic lets that pass, whatever the tolerances."""
    a, b = np.array([1.5, 2.0], np.float32), np.array([1.5, 2.0], np.float64)
    m = compare_arrays(a, b, 1.0, 1.0, stat)
    assert m.stat_abs == 0.0 and not m.dtype_match and not m.passed
    assert compare_arrays(b.copy(), b, 0.0, 0.0, stat).passed  # the same values, same type: passes


def test_ulp_distance_is_counted_on_float16_too():
    """float16 outputs (a bridged type) get their ULP distance like float32 and float64 ones."""
    one = np.array([1.0, -2.0], np.float16)
    three_up = one.copy()
    for _ in range(3):
        three_up = np.nextafter(three_up, np.float16(np.inf))
    m = compare_arrays(three_up, one, 0.0, 0.0)
    assert m.max_ulp == 3
    assert compare_arrays(one, one.copy(), 0.0, 0.0).max_ulp == 0
