"""Correct rounding of every activation against the oracle (mpmath, through a long double first answer):
every float16 and bfloat16 value, a dense float32 grid with its tails, subnormals, huge magnitudes and
random bit patterns, and a float64 sample within 1 ulp."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kernels.activations.cases import CASES, Case
from tests.kernels.activations.oracle import TYPES, all_values, exact_rounded, expected, ulp_distance


def _report(case: Case, x: np.ndarray, got: np.ndarray, want: np.ndarray) -> str:
    distance = ulp_distance(got, want)
    wrong = np.flatnonzero(distance)
    share = 100.0 * (1 - wrong.size / x.size)
    shown = ", ".join(f"x={x[i]!r}: got {got[i]!r}, want {want[i]!r}" for i in wrong[:5])
    return f"{case.name}: {share:.5f} % correctly rounded, max {distance.max()} ulp; {shown}"


def _check(case: Case, x: np.ndarray) -> None:
    got = case(x)
    assert got.dtype == x.dtype and got.shape == x.shape and got.flags.c_contiguous
    want, _ = expected(case.formula, x, x.dtype)
    distance = ulp_distance(got, want)
    assert not distance.any(), _report(case, x, got, want)


@pytest.mark.parametrize("type_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_16_bit_value_is_correctly_rounded(case: Case, type_name: str) -> None:
    _check(case, all_values(TYPES[type_name]))


def float32_points(seed: int = 5) -> np.ndarray:
    """A dense grid over [-120, 120] (step 2.3e-4), the tails to +-1e4, subnormals, the largest
    magnitudes, the points around ORT's branch switches, and random bit patterns."""
    rng = np.random.default_rng(seed)
    grid = np.linspace(-120, 120, 1 << 20, dtype=np.float32)
    tails = np.geomspace(120, 1e4, 4096, dtype=np.float32)
    subnormal = rng.integers(1, 1 << 23, 4096).astype(np.uint32).view(np.float32)
    huge = rng.integers(0x7E000000, 0x7F800000, 2048).astype(np.uint32).view(np.float32)
    # around where ORT's float32 approximations switch (Sigmoid/Tanh clamps near +-9 and +-18, Erf's
    # and Gelu's breaks, HardSwish's +-3, exp's under/overflow): each with the 64 floats either side
    switches = np.array([3, 9, 9.01, 16.6, 18, 20, 0.9, 0.921875, 2.5, 3.92, 5.9, 87.3, 88.7, 103.97])
    around = (switches.astype(np.float32).view(np.int32)[:, None] + np.arange(-64, 65)).view(np.float32)
    bits = rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32)
    parts = [grid, tails, subnormal, huge, around.ravel(), bits[np.isfinite(bits)]]
    return np.concatenate([p for part in parts for p in (part, -part)])


_F32 = float32_points()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_float32_grid_is_correctly_rounded(case: Case) -> None:
    _check(case, _F32)


def _double_points(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [
            rng.uniform(-40, 40, 300),
            rng.uniform(-1, 1, 100) * 10.0 ** rng.uniform(-300, 0, 100),
            rng.uniform(-760, 720, 60),
            [1e-310, -1e-310, 5e-324, 1e300, -1e300, 27.0, -38.0, 3.0, -3.0],
        ]
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_double_is_within_one_ulp(case: Case) -> None:
    x = _double_points(17)
    got = case(x)
    want = np.array([exact_rounded(case.formula, float(v), np.dtype(np.float64)) for v in x])
    distance = ulp_distance(got, want)
    # the correctly rounded neighbour is within 1 ulp of the exact value; ours must be that value or
    # the other side of it, never further
    assert distance.max() <= 1, _report(case, x, got, want)
    assert (distance == 0).mean() >= 0.99, _report(case, x, got, want)
