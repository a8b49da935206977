"""The arithmetic under the activations, against independent answers: the double-double functions and
the float64 erf within their documented bounds (mpmath), and numpy's float64 exp, expm1, log1p and tanh
within the 2**-48 the fast evaluations take them to be (long double, the C library's other functions)."""

from __future__ import annotations

from decimal import Decimal

import mpmath
import numpy as np
import pytest

from customops.kernels.activations import ddmath, erfmath, evaluate
from customops.kernels.activations.ddmath import DD


def _log2_error(got: DD | np.ndarray, exact: list) -> float:
    worst = mpmath.mpf(0)
    with mpmath.workprec(300):
        for i, e in enumerate(exact):
            if isinstance(got, DD):
                value = mpmath.mpf(float(got.hi[i])) + mpmath.mpf(float(got.lo[i]))
            else:
                value = mpmath.mpf(float(got[i]))
            if e != 0:
                worst = max(worst, abs((value - e) / e))
    return float(mpmath.log(worst, 2)) if worst else float("-inf")


def _points(seed: int, low: float, high: float, count: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.uniform(-1, 1, 100) * 10.0 ** rng.uniform(-200, 0, 100)
    return np.concatenate([rng.uniform(low, high, count), np.clip(small, low, high), [low, high]])


def _exact(function, xs: np.ndarray) -> list:
    with mpmath.workprec(300):
        return [function(mpmath.mpf(float(x))) for x in xs]


@pytest.mark.parametrize(
    ("name", "function", "reference", "low", "high"),
    [
        # down to -650: below, the low part of exp's double-double leaves the normal range
        ("exp", lambda x: ddmath.exp(ddmath.dd(x)), mpmath.exp, -650.0, 709.0),
        ("expm1", lambda x: ddmath.expm1(ddmath.dd(x)), mpmath.expm1, -700.0, 709.0),
        ("tanh", lambda x: ddmath.tanh(ddmath.dd(x)), mpmath.tanh, -30.0, 30.0),
        (
            "log1p",
            lambda x: ddmath.log1p_small(ddmath.dd(np.abs(x))),
            lambda x: mpmath.log1p(abs(x)),
            -1.0,
            1.0,
        ),
        ("erf", lambda x: erfmath.erf(ddmath.dd(x)), mpmath.erf, -7.0, 7.0),
    ],
)
def test_double_double_functions_are_within_their_bound(name, function, reference, low, high) -> None:
    xs = _points(11, low, high)
    assert _log2_error(function(xs), _exact(reference, xs)) < np.log2(evaluate.PRECISE_BOUND), name


def test_erfc_keeps_its_relative_accuracy_in_the_tail() -> None:
    z = np.abs(_points(12, 0.0, 26.0))
    k, m = erfmath.erfc_parts(ddmath.dd(z), ddmath.two_prod(z, z))
    with mpmath.workprec(300):
        exact = [
            mpmath.erfc(mpmath.mpf(float(v))) / mpmath.mpf(2) ** int(e) for v, e in zip(z, k, strict=True)
        ]
    assert _log2_error(m, exact) < np.log2(evaluate.PRECISE_BOUND)


def test_float64_erf_and_erfc_are_within_their_bound() -> None:
    x = _points(13, -6.0, 6.0).astype(np.float32).astype(np.float64)  # squares exact, as the kernels use
    assert _log2_error(erfmath.erf_fast(x, x * x), _exact(mpmath.erf, x)) < -48
    z = np.abs(_points(14, 0.0, 14.0)).astype(np.float32).astype(np.float64)
    assert _log2_error(erfmath.erfc_fast(z, z * z), _exact(mpmath.erfc, z)) < -46  # 1 - erf below z = 1


def test_erf_tables_agree_with_mpmath() -> None:
    erf_table, g_table = erfmath.tables()
    with mpmath.workprec(300):
        for i in (0, 5, 16):
            value = mpmath.mpf(float(erf_table.hi[i, 0])) + mpmath.mpf(float(erf_table.lo[i, 0]))
            assert abs(value - mpmath.erf(mpmath.mpf(i) / 16)) < 2.0**-100
        for row, z in ((0, 1), (100, 116 / 16), (424, 27.5)):
            g = mpmath.erfc(mpmath.mpf(z)) * mpmath.exp(mpmath.mpf(z) ** 2)
            value = mpmath.mpf(float(g_table.hi[row, 0])) + mpmath.mpf(float(g_table.lo[row, 0]))
            assert abs((value - g) / g) < 2.0**-100


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [("exp", -700.0, 700.0), ("expm1", -40.0, 40.0), ("log1p", 0.0, 1.0), ("tanh", -20.0, 20.0)],
)
def test_numpy_float64_functions_are_within_the_bound_the_fast_paths_take(name, low, high) -> None:
    rng = np.random.default_rng(15)
    x = np.concatenate(
        [rng.uniform(low, high, 200_000), rng.uniform(0, 1, 1000) * 10.0 ** -rng.uniform(0, 30, 1000)]
    )
    x = np.clip(x, low, high)
    got = getattr(np, name)(x)
    exact = getattr(np, name)(x.astype(np.longdouble))  # the C library's long double function
    nonzero = exact != 0
    error = np.abs((got[nonzero] - exact[nonzero]) / exact[nonzero]).astype(np.float64)
    assert error.max() < 2.0**-48, (name, np.log2(error.max()))


def test_exp_constants_reduce_exactly() -> None:
    c1, c2, c3, _, hi, lo, _ = ddmath.exp_constants()
    assert abs(Decimal(c1) + Decimal(c2) + Decimal(c3) - Decimal(2).ln() / 64) < Decimal(2) ** -120
    for c in (c1, c2):  # 35 significant bits: n * c exact for |n| < 2**18
        mantissa, _ = np.frexp(c)
        assert float(mantissa * 2**35) == int(mantissa * 2**35)
    assert hi.shape == lo.shape == (64,)
