"""Sigmoid's compiled float32 loop (customops.accel.activation_loops): the numpy path's bits, its own
bound, and the per-module error model of customops.accel.jit that lets it be vectorized."""

from __future__ import annotations

import types

import mpmath
import numpy as np
import pytest

from customops.accel import activation_loops, jit
from customops.kernels.activations import logistic
from tests.kernels.activations.cases import CASES, Case
from tests.kernels.activations.test_accuracy import float32_points


def test_compiled_sigmoid_gives_the_numpy_paths_bits(compiled_calls) -> None:
    x = float32_points(seed=8)
    x = np.concatenate([x, [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]]).astype(np.float32)
    compiled = logistic.sigmoid(x)
    assert compiled_calls["sigmoid_float32"] >= 1
    with jit.numpy_only():
        plain = logistic.sigmoid(x)
    assert compiled.tobytes() == plain.tobytes()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_compiled_rounding_gives_the_numpy_paths_bits(case: Case, compiled_calls) -> None:
    x = float32_points(seed=10)[::7]
    x = np.concatenate([x, [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.0e38, -3.0e38]]).astype(np.float32)
    compiled = case(x)
    assert compiled_calls["round_float32"] + compiled_calls["sigmoid_float32"] >= 1
    with jit.numpy_only():
        plain = case(x)
    assert compiled.tobytes() == plain.tobytes()


def test_loop_marks_only_what_its_bound_leaves_in_doubt() -> None:
    loop = jit.get("sigmoid_float32", activation_loops)
    if loop is None:
        pytest.skip("no numba")
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(200_000) * 20).astype(np.float32)
    out = np.empty_like(x)
    loop(x, out, 0, x.size)
    marked = np.isnan(out)
    assert 0 < marked.mean() < 1e-3  # about 2 in 10,000 for a bound of 2**-37
    # every value it settles is the rounding of 1 / (1 + exp(-x)) in long double (64-bit significand)
    exact = (1 / (1 + np.exp(-x[~marked].astype(np.longdouble)))).astype(np.float32)
    assert out[~marked].tobytes() == exact.tobytes()
    # and a marked value is within the bound of a float32 midpoint (checked with mpmath on a few)
    for value in x[marked][:20]:
        with mpmath.workprec(200):
            y = 1 / (1 + mpmath.exp(-mpmath.mpf(float(value))))
            low = np.float32(float(y * (1 - mpmath.mpf(2) ** -36)))
            high = np.float32(float(y * (1 + mpmath.mpf(2) ** -36)))
        assert low != high


def _divide_numpy(a, b, out) -> None:
    for i in range(a.size):
        out[i] = a[i] / b[i]


def _divide_python(a, b, out) -> None:  # a function of its own: numba's disk cache keys on the function
    for i in range(a.size):
        out[i] = a[i] / b[i]


@pytest.mark.parametrize(("model", "raises"), [("numpy", False), ("python", True)])
def test_a_modules_error_model_applies_to_its_loops(model, raises) -> None:
    module = types.ModuleType(f"customops_test_loops_{model}")
    module.divide = _divide_numpy if model == "numpy" else _divide_python
    if model == "numpy":
        module.ERROR_MODEL = model
    loop = jit.get("divide", module)
    if loop is None:
        pytest.skip("no numba")
    out = np.empty(2)
    if raises:
        with pytest.raises(ZeroDivisionError):
            loop(np.ones(2), np.array([1.0, 0.0]), out)
    else:
        loop(np.ones(2), np.array([1.0, 0.0]), out)
        assert out.tolist() == [1.0, np.inf]
