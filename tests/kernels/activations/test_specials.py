"""Special values, signed zeros, attributes, shapes and errors of the activation kernels."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from customops.accel import parallel
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.activations import evaluate, gaussian, logistic, piecewise
from tests.kernels.activations.cases import BY_NAME, CASES, SELU, Case

TYPES = (np.float16, ml_dtypes.bfloat16, np.float32, np.float64)

# f(+inf), f(-inf), f(+0), f(-0): the formula's limits at the infinities (where it reads inf * 0, the limit
# of x * g(x), a zero of x's sign) and its value at the zeros
SPECIALS = {
    "sigmoid": (1.0, 0.0, 0.5, 0.5),
    "tanh": (1.0, -1.0, 0.0, -0.0),
    "softplus": (math.inf, 0.0, None, None),
    "mish": (math.inf, -0.0, 0.0, -0.0),
    "swish": (math.inf, -0.0, 0.0, -0.0),
    "swish_0.3": (math.inf, -0.0, 0.0, -0.0),
    "swish_-2": (0.0, -math.inf, 0.0, -0.0),
    "erf": (1.0, -1.0, 0.0, -0.0),
    "gelu": (math.inf, -0.0, 0.0, -0.0),
    "gelu_tanh": (math.inf, -0.0, 0.0, -0.0),
    "hard_sigmoid": (1.0, 0.0, 0.5, 0.5),
    "hard_sigmoid_0.7_-0.1": (1.0, 0.0, 0.0, 0.0),
    "hard_swish": (math.inf, -0.0, 0.0, -0.0),
    "elu": (math.inf, -1.0, 0.0, -0.0),
    "elu_0.3": (math.inf, -float(np.float32(0.3)), 0.0, -0.0),
    "selu": (math.inf, -SELU["alpha"] * SELU["gamma"], 0.0, 0.0),
    "celu": (math.inf, -1.0, 0.0, 0.0),
    "celu_0.4": (math.inf, -float(np.float32(0.4)), 0.0, 0.0),
    "celu_-1.5": (math.inf, -math.inf, 0.0, 0.0),
}


def test_every_case_has_its_special_values() -> None:
    assert set(SPECIALS) == {c.name for c in CASES}


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_special_values(case: Case, dtype) -> None:
    x = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan], dtype=dtype)
    got = case(x).astype(np.float64)
    assert np.isnan(got[4])
    for value, want in zip(got[:4], SPECIALS[case.name], strict=True):
        if want is None:
            continue
        want = float(np.asarray(want).astype(dtype))  # -alpha in the type
        assert value == want and math.copysign(1, value) == math.copysign(1, want), (got, SPECIALS[case.name])


def test_softplus_at_zero_is_ln2_rounded() -> None:
    for dtype in TYPES:
        assert (
            logistic.softplus(np.array([0.0, -0.0], dtype=dtype)).tolist()
            == [np.array(math.log(2)).astype(dtype)] * 2
        )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_shapes_and_layout(case: Case) -> None:
    base = np.linspace(-5, 5, 60, dtype=np.float32).reshape(3, 4, 5)
    strided = base.transpose(2, 0, 1)[:, ::2]
    got = case(strided)
    assert got.shape == strided.shape and got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, case(np.ascontiguousarray(strided)))
    scalar = case(np.float32(1.5))
    assert scalar.shape == () and scalar == case(np.array([1.5], dtype=np.float32))[0]
    assert case(np.zeros((2, 0), dtype=np.float64)).shape == (2, 0)
    x = np.array([0.25], dtype=np.float64)
    assert case(x) is not x and x[0] == 0.25


def test_chunks_and_threads_do_not_change_a_bit() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(5 * evaluate.CHUNK + 17) * 30).astype(np.float32)
    assert parallel.threads() >= 1
    for case in (BY_NAME["sigmoid"], BY_NAME["gelu"], BY_NAME["hard_swish"]):
        whole = case(x)
        pieces = np.concatenate([case(x[i : i + 1000]) for i in range(0, x.size, 1000)])
        assert whole.tobytes() == pieces.tobytes()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_, np.complex64, object])
def test_non_float_x_is_refused(case: Case, dtype) -> None:
    with pytest.raises(KernelError, match="element type"):
        case(np.zeros(3, dtype=dtype))


def test_attributes_are_their_float32_values() -> None:
    x = np.linspace(-3, 3, 4001, dtype=np.float64)
    assert logistic.swish(x, alpha=0.1).tobytes() == logistic.swish(x, alpha=float(np.float32(0.1))).tobytes()
    assert logistic.swish(x, alpha=np.float32(0.1)).tobytes() == logistic.swish(x, alpha=0.1).tobytes()
    # HardSigmoid's default alpha is float32(0.2) = 0.20000000298...: at x = -2.49999999 the value
    # 0.2 x + 0.5 is 2e-9 with 0.2 itself but -5.5e-9 with float32's, which clips to 0
    assert piecewise.hard_sigmoid(np.array([-2.49999999])).item() == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: logistic.swish(x, alpha=math.inf), "finite"),
        (lambda x: logistic.swish(x, alpha=math.nan), "finite"),
        (lambda x: logistic.swish(x, alpha=1e39), "finite"),  # inf as a float32
        (lambda x: logistic.swish(x, alpha="1"), "must be a float"),
        (lambda x: piecewise.elu(x, alpha=True), "must be a float"),
        (lambda x: piecewise.celu(x, alpha=0.0), "alpha is 0"),
        (lambda x: piecewise.celu(x, alpha=1e-50), "alpha is 0"),  # 0 as a float32
        (lambda x: piecewise.hard_sigmoid(x, beta=-math.inf), "finite"),
        (lambda x: piecewise.selu(x, gamma=math.nan), "finite"),
        (lambda x: gaussian.gelu(x, approximate="fast"), "approximate"),
        (lambda x: gaussian.gelu(x, approximate=b"tanh "), "approximate"),
    ],
)
def test_invalid_attributes_are_refused(call, message) -> None:
    with pytest.raises(KernelError, match=message):
        call(np.zeros(2, dtype=np.float32))


def test_gelu_takes_bytes_attribute() -> None:
    x = np.linspace(-4, 4, 101, dtype=np.float32)
    assert gaussian.gelu(x, approximate=b"tanh").tobytes() == gaussian.gelu(x, approximate="tanh").tobytes()


def test_hard_swish_alpha_is_one_sixth_exactly() -> None:
    # with 1/6 exactly, HardSwish(3) = 3 * min(1, 3/6 + 1/2) = 3 and HardSwish(-3) = -0; the function
    # body's float32 alpha (0.1666666716) would reach 1 just below 3 and 0 just above -3
    x = np.array(
        [3.0, -3.0, np.nextafter(np.float32(3), 0), np.nextafter(np.float32(-3), 0)], dtype=np.float32
    )
    got = piecewise.hard_swish(x)
    assert got[0] == 3 and got[1] == 0 and np.signbit(got[1])
    assert got[2] == x[2]  # x - 2**-23 + 2**-44 / 6: above the midpoint below x
    assert got[3] < 0  # x (x + 3) / 6 with x + 3 = 2**-22: a tiny negative value


def test_midpoints_of_rational_activations_round_to_even() -> None:
    # HardSwish(x) = x (x + 3) / 6: at x = 2**-12 * 3 the value 2**-12 * 3 * (3 + 3 * 2**-12) / 6 is
    # dyadic; exhaustively, every float16 input whose exact value is a float16 midpoint rounds to even
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    got = piecewise.hard_swish(x)
    from fractions import Fraction

    ties = 0
    for xi, gi in zip(x.tolist(), got.tolist(), strict=True):
        if not -3 < xi < 3:
            continue
        value = Fraction(xi) * (Fraction(xi) + 3) / 6
        below = float(np.float16(float(value)))
        if Fraction(below) == value:
            continue
        step = np.spacing(np.float16(abs(below))) if below else np.float16(2**-24)
        low = Fraction(below) if Fraction(below) < value else Fraction(below) - Fraction(float(step))
        if value - low == Fraction(float(step)) / 2:  # an exact midpoint
            ties += 1
            assert (np.float16(gi).view(np.uint16) & 1) == 0, xi
    assert ties > 0


def test_output_is_checked_against_the_memory_left(monkeypatch) -> None:
    monkeypatch.setattr(limits, "headroom", lambda: (1000, "a machine under test"))
    with pytest.raises(KernelError, match="a machine under test"):
        logistic.sigmoid(np.zeros(1 << 18, dtype=np.float32))
    assert logistic.sigmoid(np.zeros(1000, dtype=np.float32)).shape == (1000,)  # small: not asked


def test_the_largest_double_warns_of_nothing() -> None:
    """HardSwish of the largest double: the double-double value overflows to inf on the way (x * 6), so
    its rounding check met np.spacing(inf); the kernel returns x and numpy prints no warning."""
    import warnings

    from customops.kernels.activations.piecewise import hard_swish

    big = np.finfo(np.float64).max
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = hard_swish(np.array([big, 9e307], np.float64))
    np.testing.assert_array_equal(y, [big, 9e307])
