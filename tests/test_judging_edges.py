"""Edges of the judging code that no other test holds: the tolerance boundaries,
a negative reference, the smallest rtol that passes, a zero tolerance, and the attribution when one
reference comparison is missing."""

from __future__ import annotations

import numpy as np
import pytest

from customops.comparison.settings import check_settings
from customops.eval.judging.attribution import attribution
from customops.eval.judging.metrics import compare_arrays

F64 = np.float64


@pytest.mark.parametrize("stat", ["max", "mean", "median"])
def test_a_statistic_exactly_at_atol_passes(stat):
    """|a - b| = 0.5 exactly (representable) at atol 0.5: 'at most atol' passes, as elementwise does."""
    a, b = np.array([1.5], F64), np.array([1.0], F64)
    assert compare_arrays(a, b, 0.0, 0.5, stat).passed
    assert compare_arrays(a, b, 0.0, 0.5).passed
    assert not compare_arrays(a, b, 0.0, 0.25, stat).passed


def test_a_negative_reference_counts_by_its_magnitude():
    """rtol is relative to |b|: -1.05 against -1.0 is within rtol 0.1 (a negative b must not make the
    allowance negative)."""
    m = compare_arrays(np.array([-1.05, 2.0], F64), np.array([-1.0, 2.0], F64), 0.1, 0.0)
    assert m.passed and m.mismatches == 0
    assert m.max_rel == pytest.approx(0.05)


def test_needed_rtol_is_the_smallest_that_passes_at_the_given_atol():
    """Error 0.5 on a reference of 1 at atol 0.25: rtol 0.25 is needed (the atol covers the rest), and
    a hair less fails."""
    a, b = np.array([1.5, 3.0], F64), np.array([1.0, 3.0], F64)
    m = compare_arrays(a, b, 0.0, 0.25)
    assert m.needed_rtol == pytest.approx(0.25)
    assert compare_arrays(a, b, m.needed_rtol * (1 + 1e-9), 0.25).passed
    assert not compare_arrays(a, b, m.needed_rtol * (1 - 1e-9), 0.25).passed


def test_a_zero_tolerance_is_allowed():
    check_settings(rtol=0.0, atol=0.0)  # exact comparison: valid, not refused
    for bad in (-1e-9, float("nan"), float("inf")):
        with pytest.raises(Exception, match="must be a finite number at least 0"):
            check_settings(atol=bad)


def test_one_missing_reference_comparison_is_no_third_vote():
    """Built-in and custom differ and the reference has no output to compare with one of them: there is
    no third vote (not 'undecided', which says the reference agreed with both)."""
    ran = {"builtin": False, "custom": False}
    assert attribution(ran, False, None, True) == "no-third-vote"
    assert attribution(ran, False, True, None) == "no-third-vote"
    assert attribution(ran, False, None, None) == "no-third-vote"
    assert attribution(ran, False, True, True) == "undecided"
