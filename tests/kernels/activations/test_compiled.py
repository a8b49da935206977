"""The activations' compiled float32 loops (customops.accel.activations.activation_loops): the numpy path's bits,
their own bounds, the elements they leave in doubt, and the per-module error model of customops.accel.jit
that lets them be vectorized."""

from __future__ import annotations

import types
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from customops.accel import jit
from customops.accel.activations import activation_loops
from customops.kernels.activations import erfmath, gaussian, logistic, piecewise
from customops.kernels.activations.evaluate import CHUNK
from tests.kernels.activations.cases import BY_NAME, CASES, Case
from tests.kernels.activations.oracle import round_exact
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
    assert sum(compiled_calls.values()) >= 1  # its own loop, or the rounding loop of the numpy path
    with jit.numpy_only():
        plain = case(x)
    assert compiled.tobytes() == plain.tobytes()


def _loop(name: str):
    loop = jit.get(name, activation_loops)
    if loop is None:
        pytest.skip("no numba")
    return loop


def _sigmoid_loop(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty_like(x)
    marks = np.zeros(-(-x.size // activation_loops.BLOCK), dtype=np.int64)
    _loop("sigmoid_float32")(x, out, marks, 0, marks.size)
    return out, marks


def _exact_sigmoid(value: float) -> mpmath.mpf:
    return 1 / (1 + mpmath.exp(-mpmath.mpf(value)))


def _dense_sigmoid_points() -> np.ndarray:
    """Every float32 around the points where the reduction's k changes (r near +-ln2/2, where the Padé
    approximant and its evaluation err most), around the clamp and where the result leaves the float32
    normal range, a dense grid over the whole range, subnormal and huge inputs."""
    switches = (np.arange(0, 160) + 0.5) * np.log(2.0)
    near = (switches.astype(np.float32).view(np.int32)[:, None] + np.arange(-2048, 2049)).view(np.float32)
    edges = np.array([110.0, 104.0, 103.28, 87.34, 16.6, 0.0]).astype(np.float32).view(np.int32)
    around = (edges[:, None] + np.arange(-4096, 4097)).view(np.float32)
    grid = np.linspace(-112, 112, 1 << 22, dtype=np.float32)
    rng = np.random.default_rng(21)
    subnormal = rng.integers(1, 1 << 23, 4096).astype(np.uint32).view(np.float32)
    x = np.concatenate([near.ravel(), around.ravel(), grid, subnormal, [1e-30, 3e38]]).astype(np.float32)
    return np.concatenate([x, -x])


def test_sigmoid_values_are_within_the_documented_bound() -> None:
    """The float64 values the loop rounds, against 1 / (1 + exp(-x)) in long double (64-bit significand,
    within 2**-62) on a dense sample, and against mpmath at the worst of them: within ERROR (5.33u) up to
    the clamp (beyond it the float32 value is 0 or 1, test_compiled_sigmoid_gives_the_numpy_paths_bits)."""
    loop = _loop("sigmoid_float64")
    x = _dense_sigmoid_points()
    x = x[np.abs(x) <= activation_loops.LIMIT]
    y = np.empty(x.size)
    loop(x, y)
    reference = 1 / (1 + np.exp(-x.astype(np.longdouble)))
    error = np.abs((y.astype(np.longdouble) - reference) / reference).astype(np.float64)
    worst = np.argsort(error)[-64:]
    assert error.max() <= activation_loops.ERROR - 2.0**-61, (x[worst[-1]], error.max() / 2.0**-53)
    assert error.max() > activation_loops.ERROR / 4  # the sample reaches where the bound is spent
    with mpmath.workprec(200):
        for i in worst:
            exact = _exact_sigmoid(float(x[i]))
            assert abs((mpmath.mpf(float(y[i])) - exact) / exact) <= activation_loops.ERROR


@pytest.mark.parametrize("case", ["erf", "gelu"])
def test_compiled_erf_and_gelu_give_the_numpy_paths_bits(case: str, compiled_calls) -> None:
    x = np.concatenate([_dense_sigmoid_points()[::3], np.linspace(-30, 30, 1 << 20, dtype=np.float32)])
    x = np.concatenate([x, [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 27.5, 10.48, 14.84, -14.84]])
    x = np.concatenate([x, float32_points(seed=12)[::5]]).astype(np.float32)
    kernel = gaussian.erf if case == "erf" else gaussian.gelu
    compiled = kernel(x)
    assert compiled_calls[f"{case}_float32"] >= 1
    with jit.numpy_only():
        plain = kernel(x)
    assert compiled.tobytes() == plain.tobytes()


def _series_points() -> np.ndarray:
    """Every float32 around |x| = 1 and sqrt(2) (where the series switch), a grid up to 15 (beyond, the
    tail's exp is 0) and the ends, both signs."""
    switches = np.array([1.0, np.sqrt(2.0)], dtype=np.float32).view(np.int32)
    x = np.concatenate(
        [
            (switches[:, None] + np.arange(-2000, 2001)).view(np.float32).ravel(),
            np.linspace(0, 15, 12_000, dtype=np.float32),
            np.array([2.0**-20, 1e-30, 0.5, 10.48, 14.8], dtype=np.float32),
        ]
    )
    return np.concatenate([x, -x])


@pytest.mark.parametrize(("case", "bound"), [("erf", 2.0**-48), ("gelu", 2.0**-43)], ids=["erf", "gelu"])
def test_erf_and_gelu_values_are_within_their_bounds(case: str, bound: float) -> None:
    """The float64 values the loops round, against mpmath: Erf within 2**-48 (erfmath's bound for its
    fast evaluation, with an exp better than the one it assumes), Gelu within its kernel's 2**-43."""
    loop = _loop("series_float64")
    x = _series_points()
    y = np.empty(x.size)
    gelu = case == "gelu"
    loop(x, y, erfmath.fast_table(), float(np.sqrt(0.5)) if gelu else 1.0, gelu)
    with mpmath.workprec(120):
        for value, got in zip(x.tolist(), y.tolist(), strict=True):
            v = mpmath.mpf(value)
            exact = v / 2 * mpmath.erfc(-v / mpmath.sqrt(2)) if gelu else mpmath.erf(v)
            if got == 0 and exact != 0:  # Gelu's tail beyond x**2 / 2 = LIMIT: far below float32's range
                assert (
                    gelu
                    and value * value / 2 >= activation_loops.LIMIT
                    and abs(exact) < mpmath.mpf(2) ** -150
                )
            elif exact != 0:
                assert abs((mpmath.mpf(got) - exact) / exact) <= bound, value
            else:
                assert got == 0


def test_hard_sigmoids_exact_midpoints_round_to_even(compiled_calls) -> None:
    """0.75 x of a float32 x with an odd significand lies exactly between two float32 values: the loop
    leaves every such element in doubt and the exact path rounds it to even, as the numpy path does."""
    x = (np.float32(1).view(np.int32) + np.arange(1, 20_001, 2)).view(np.float32)
    x = np.concatenate([x, np.random.default_rng(4).standard_normal(9000).astype(np.float32)])
    got = piecewise.hard_sigmoid(x, alpha=0.75, beta=0.0)
    assert compiled_calls["hard_sigmoid_float32"] >= 1
    exact = [min(Fraction(1), Fraction(3, 4) * Fraction(float(v))) for v in x[:10_000]]
    want = np.array([round_exact(value, False, np.dtype(np.float32)) for value in exact], dtype=np.float32)
    assert got[:10_000].tobytes() == want.tobytes()
    with jit.numpy_only():
        assert got.tobytes() == piecewise.hard_sigmoid(x, alpha=0.75, beta=0.0).tobytes()


def test_expm1_is_within_its_documented_bound() -> None:
    """expm1(-a) as Elu, Selu and Celu's loop computes it, against mpmath: within 10.4u, on every float32
    around the switch of the reduction's k from 0 to 1 (the 2 O / Q form against the other), a dense grid
    up to the clamp, tiny and subnormal arguments, and quotients x / alpha (Celu: not float32 values)."""
    loop = _loop("expm1_float64")
    edge = np.float32(np.log(2.0) / 2).view(np.int32)
    rng = np.random.default_rng(31)
    a = np.concatenate(
        [
            (edge + np.arange(-3000, 3001)).view(np.float32).astype(np.float64),
            np.linspace(0, 110, 20_000, dtype=np.float32).astype(np.float64),
            rng.uniform(0, 3, 5000) / np.float32(0.4),
            [2.0**-30, 1e-30, 1e-45, 0.0, 109.99],
        ]
    )
    y = np.empty(a.size)
    loop(a, y)
    with mpmath.workprec(120):
        for value, got in zip(a.tolist(), y.tolist(), strict=True):
            exact = mpmath.expm1(-mpmath.mpf(value))
            if exact == 0:
                assert got == 0
            else:
                assert abs((mpmath.mpf(got) - exact) / exact) <= 10.4 * 2.0**-53, value


def test_tanh_values_are_within_their_bound(compiled_calls) -> None:
    """Tanh's float64 values against tanh in long double (within 2**-62) on every float32 around the
    switch of its two forms (2|x| = ln2 / 2) and the reduction's next steps, a dense grid and tiny inputs,
    against mpmath at the worst: within 12.9u; and the kernel gives the numpy path's bits there."""
    loop = _loop("tanh_float64")
    switches = ((np.arange(0, 12) + 0.5) * np.log(2.0) / 2).astype(np.float32).view(np.int32)
    x = np.concatenate(
        [
            (switches[:, None] + np.arange(-3000, 3001)).view(np.float32).ravel(),
            np.linspace(0, 60, 1 << 21, dtype=np.float32),
            np.array([1e-30, 1e-45, 2.0**-20, 0.0], dtype=np.float32),
        ]
    )
    x = np.concatenate([x, -x])
    y = np.empty(x.size)
    loop(x, y)
    reference = np.tanh(x.astype(np.longdouble))
    nonzero = reference != 0
    error = np.abs((y[nonzero] - reference[nonzero]) / reference[nonzero]).astype(np.float64)
    assert error.max() <= 12.9 * 2.0**-53 - 2.0**-61
    assert np.all(y[~nonzero] == 0)
    with mpmath.workprec(200):
        for i in np.argsort(error)[-32:]:
            exact = mpmath.tanh(float(x[nonzero][i]))
            assert abs((mpmath.mpf(float(y[nonzero][i])) - exact) / exact) <= 12.9 * 2.0**-53
    got = logistic.tanh(x)
    assert compiled_calls["tanh_float32"] >= 1
    with jit.numpy_only():
        assert got.tobytes() == logistic.tanh(x).tobytes()


def test_swish_beyond_the_clamp_is_evaluated_again(compiled_calls) -> None:
    """With a tiny alpha, x e**(alpha x) is far from 0 where alpha x < -110 (-9e-15 at x = -1.2e38 for
    alpha = 1e-36): the loop leaves those elements to the numpy path, which gives the correctly rounded
    value; where alpha x > 110 the value is x."""
    alpha = float(np.float32(1e-36))
    x = np.array([-1.2e38, -1.5e38, -1.1e38, 1.2e38, 3e38, -5e37, 0.5, -0.0], dtype=np.float32)
    got = logistic.swish(x, alpha=alpha)
    assert compiled_calls["swish_float32"] >= 1
    with mpmath.workprec(200):
        for value, result in zip(x.tolist(), got.tolist(), strict=True):
            v = mpmath.mpf(value)
            exact = v / (1 + mpmath.exp(-mpmath.mpf(alpha) * v))
            assert np.float32(result) == np.float32(float(exact)) or (exact == 0 and result == 0)
    assert got[0] != 0 and got[3] == x[3]
    with jit.numpy_only():
        assert got.tobytes() == logistic.swish(x, alpha=alpha).tobytes()


def test_mish_values_are_within_their_bound(compiled_calls) -> None:
    """Mish's float64 values against x tanh(log1p(exp(x))) in long double on a dense grid up to the
    clamp, every float32 around 0 and the clamp, tiny inputs: within 10.1u (and 0 beyond the clamp, where
    the value is below 2**-150); the kernel gives the numpy path's bits there."""
    loop = _loop("mish_float64")
    edges = np.array([0.3466, 1.0, 109.99], dtype=np.float32).view(np.int32)
    x = np.concatenate(
        [
            np.linspace(-110, 110, 1 << 21, dtype=np.float32),
            (edges[:, None] + np.arange(-2000, 2001)).view(np.float32).ravel(),
            np.array([1e-30, 1e-45, 2.0**-20], dtype=np.float32),
        ]
    )
    x = np.concatenate([x, -x])
    y = np.empty(x.size)
    loop(x, y)
    xl = x.astype(np.longdouble)
    reference = xl * np.tanh(np.log1p(np.exp(xl)))
    inside = (np.abs(x) < activation_loops.LIMIT) & (reference != 0)
    assert np.all(y[reference == 0] == 0)
    error = np.abs((y[inside] - reference[inside]) / reference[inside]).astype(np.float64)
    assert error.max() <= 10.1 * 2.0**-53 - 2.0**-60
    beyond = np.abs(x) >= activation_loops.LIMIT
    assert np.all(np.abs(reference[beyond & (x < 0)]) < 2.0**-150) and np.all(y[beyond & (x < 0)] == 0)
    got = logistic.mish(x)
    assert compiled_calls["mish_float32"] >= 1
    with jit.numpy_only():
        assert got.tobytes() == logistic.mish(x).tobytes()


@pytest.mark.parametrize("case", ["gelu", "elu", "hard_swish", "mish"])
def test_many_elements_in_doubt_are_evaluated_again_in_chunks(case: str, compiled_calls) -> None:
    """Infinite values leave their elements in doubt (their margin is not finite): a tensor of more than
    three chunks of them, among other values, gives the numpy path's bits."""
    x = np.random.default_rng(6).standard_normal(3 * CHUNK + 1000).astype(np.float32)
    x[::2] = np.inf
    x[1::4] = -np.inf
    got = BY_NAME[case](x)
    assert sum(compiled_calls.values()) >= 1
    with jit.numpy_only():
        assert got.tobytes() == BY_NAME[case](x).tobytes()


def test_reduction_constants() -> None:
    """ln 2 in two pieces: the first of at most 29 significant bits (k times it is exact), their sum
    within 2**-85 of ln 2."""
    high = activation_loops.LN2_HI
    mantissa, _ = np.frexp(high)
    assert float(np.ldexp(mantissa, 29)).is_integer()
    with mpmath.workprec(200):
        gap = mpmath.mpf(high) + mpmath.mpf(activation_loops.LN2_LO) - mpmath.log(2)
        assert abs(gap) < mpmath.mpf(2) ** -85


def test_loop_marks_only_what_its_bound_leaves_in_doubt() -> None:
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(2_000_000) * 20).astype(np.float32)
    x[::1000] = np.nan
    out, marks = _sigmoid_loop(x)
    doubt = np.isnan(out) & ~np.isnan(x)
    # each block counts its elements in doubt, NaN inputs (NaN outputs) not among them
    assert np.array_equal(marks, np.add.reduceat(doubt, np.arange(0, x.size, activation_loops.BLOCK)))
    assert np.isnan(out[np.isnan(x)]).all()
    assert doubt.mean() < 1e-5  # about 2**-25.5 for a bound of 2**-50
    # every value it settles is the rounding of 1 / (1 + exp(-x)) in long double (64-bit significand)
    settled = ~np.isnan(out)
    exact = (1 / (1 + np.exp(-x[settled].astype(np.longdouble)))).astype(np.float32)
    assert out[settled].tobytes() == exact.tobytes()


# the float32 inputs whose Sigmoid lies within 2**-50 of a float32 midpoint, found by running the loop over
# every float32 of magnitude 2**-7 to 20 and of -87 to -104 (the results below float32's normal range):
# the loop leaves these three in doubt
_IN_DOUBT = np.array([0x3D21BC81, 0xBE104170, 0xBF1964D0], dtype=np.uint32).view(np.float32)


def test_elements_in_doubt_are_evaluated_again(compiled_calls) -> None:
    out, _ = _sigmoid_loop(_IN_DOUBT)
    assert np.isnan(out).all()
    # among other values, in the first and the last (partial) block of a larger tensor
    x = np.random.default_rng(3).standard_normal(3 * activation_loops.BLOCK + 77).astype(np.float32)
    x[5 : 5 + _IN_DOUBT.size] = _IN_DOUBT
    x[-_IN_DOUBT.size :] = _IN_DOUBT
    got = logistic.sigmoid(x)
    assert compiled_calls["sigmoid_float32"] >= 1
    with jit.numpy_only():
        plain = logistic.sigmoid(x)
    assert got.tobytes() == plain.tobytes()
    with mpmath.workprec(200):
        want = [np.float32(float(_exact_sigmoid(float(v)))) for v in _IN_DOUBT]  # float64 then float32:
    # exact here, as each value is within 2**-50 of a midpoint but not on one (checked below)
    with mpmath.workprec(200):
        for v, w in zip(_IN_DOUBT, want, strict=True):
            exact = _exact_sigmoid(float(v))
            below, above = np.nextafter(w, np.float32(-1)), np.nextafter(w, np.float32(2))
            assert abs(exact - mpmath.mpf(float(w))) < abs(exact - mpmath.mpf(float(below)))
            assert abs(exact - mpmath.mpf(float(w))) < abs(exact - mpmath.mpf(float(above)))
    assert got[5 : 5 + _IN_DOUBT.size].tobytes() == np.array(want, dtype=np.float32).tobytes()
    assert got[-_IN_DOUBT.size :].tobytes() == np.array(want, dtype=np.float32).tobytes()


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
