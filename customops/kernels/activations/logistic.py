"""ONNX Sigmoid (6, 13), Tanh (6, 13), Softplus (1, 22), Mish (18, 22) and Swish (24), correctly rounded.

The float64 evaluations (for float32 and narrower outputs) lean on numpy's float64 ``exp``, ``log1p``
and ``tanh``, taken as within 2**-48 of the exact value (relative): libms and numpy's own SIMD loops are
documented and measured within a few ulps (2**-51); the activations' tests measure them against mpmath.
Each bound below adds the roundings of the formula's own operations to that. The double-double
evaluations (every double output, and the float32 elements in doubt) use
customops.kernels.activations.ddmath alone. docs/semantics.md ("Activations") records the decisions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from customops.kernels.activations import ddmath
from customops.kernels.activations.ddmath import DD
from customops.kernels.activations.evaluate import Activation, apply, attribute

__all__ = ["mish", "sigmoid", "sigmoid_parts", "softplus", "swish", "tanh"]

_LIBM_BOUND = 2.0**-46
"""The fast evaluations' bound: numpy's function (2**-48) and up to a dozen roundings (2**-53 each)."""


def _sigmoid_fast(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))``: exp's error, then two roundings (the sum, the reciprocal); where exp(-x)
    overflows (x < -709) the result 0 is the float32 rounding of a value below 2**-1000."""
    e = np.negative(x)
    np.exp(e, out=e)
    e += 1.0
    return np.reciprocal(e, out=e)


def sigmoid_parts(u: DD) -> tuple[np.ndarray, DD]:
    """``sigmoid(u) = s * 2**k``: (k, s), s a double-double: ``1 / (1 + exp(-u))`` for u >= 0 (k = 0),
    ``m / (1 + m 2**k)`` for ``exp(u) = m 2**k`` when u < 0, so that a result far below the float64
    range keeps its significand (Swish multiplies it by x before the scaling)."""
    negative = u.hi < 0
    k, m = ddmath.exp_parts(DD(-np.abs(u.hi), np.where(negative, u.lo, -u.lo)))
    with np.errstate(under="ignore"):
        small = ddmath.ldexp(m, k)  # exp(-|u|)
    denominator = ddmath.add_float(small, 1.0)
    numerator = DD(np.where(negative, m.hi, 1.0), np.where(negative, m.lo, 0.0))
    return np.where(negative, k, 0), ddmath.div(numerator, denominator)


def _sigmoid_precise(x: np.ndarray) -> DD:
    k, s = sigmoid_parts(ddmath.dd(x))
    return ddmath.ldexp(s, k)


_SIGMOID = Activation(
    "Sigmoid", _sigmoid_fast, _LIBM_BOUND, _sigmoid_precise, (1.0, 0.0), loop="sigmoid_float32"
)


def sigmoid(X: Any) -> np.ndarray:
    """ONNX Sigmoid: ``1 / (1 + exp(-x))``, correctly rounded."""
    return apply(X, _SIGMOID)


_TANH = Activation(
    "Tanh", np.tanh, _LIBM_BOUND, lambda x: ddmath.tanh(ddmath.dd(x)), (1.0, -1.0), loop="tanh_float32"
)


def tanh(X: Any) -> np.ndarray:
    """ONNX Tanh, correctly rounded."""
    return apply(X, _TANH)


def _softplus_fast(x: np.ndarray) -> np.ndarray:
    """``max(x, 0) + log1p(exp(-|x|))``: both terms positive; log1p(e) has at most e's relative error."""
    e = np.exp(-np.abs(x))
    np.log1p(e, out=e)
    return np.maximum(x, 0.0) + e


def _softplus_precise(x: np.ndarray) -> DD:
    e = ddmath.exp(ddmath.dd(-np.abs(x)))
    return ddmath.add_float(ddmath.log1p_small(e), np.maximum(x, 0.0))


_SOFTPLUS = Activation("Softplus", _softplus_fast, _LIBM_BOUND, _softplus_precise, (np.inf, 0.0))


def softplus(X: Any) -> np.ndarray:
    """ONNX Softplus: ``ln(exp(x) + 1)``, correctly rounded (``x + ln(1 + exp(-x))`` for x > 0, exactly
    the same value)."""
    return apply(X, _SOFTPLUS)


def _mish_fast(x: np.ndarray) -> np.ndarray:
    """``x tanh(softplus(x))`` as ``x * a / b`` without cancellation: with E = exp(-|x|),
    tanh(ln(1 + e**x)) = (1 + 2E) / (1 + 2E + 2E**2) for x >= 0 and E(E + 2) / (E(E + 2) + 2) for
    x < 0 (all terms positive)."""
    e = np.exp(-np.abs(x))
    positive = x >= 0
    a = np.where(positive, 1.0 + 2.0 * e, e * (e + 2.0))
    b = a + np.where(positive, 2.0 * e * e, 2.0)
    return x * (a / b)


def _mish_precise(x: np.ndarray) -> DD:
    e = ddmath.exp(ddmath.dd(-np.abs(x)))
    positive = x >= 0
    up = ddmath.add_float(ddmath.scaled(e, 2.0), 1.0)
    down = ddmath.mul(e, ddmath.add_float(e, 2.0))
    a = DD(np.where(positive, up.hi, down.hi), np.where(positive, up.lo, down.lo))
    square = ddmath.scaled(ddmath.mul(e, e), 2.0)
    b = ddmath.add(a, DD(np.where(positive, square.hi, 2.0), np.where(positive, square.lo, 0.0)))
    return ddmath.mul_float(ddmath.div(a, b), x)


_MISH = Activation("Mish", _mish_fast, _LIBM_BOUND, _mish_precise, (np.inf, -0.0), loop="mish_float32")


def mish(X: Any) -> np.ndarray:
    """ONNX Mish: ``x * tanh(softplus(x))``, correctly rounded; -0 at -inf (the limit; inf * 0 is NaN)."""
    return apply(X, _MISH)


def _swish(alpha: float) -> Activation:
    def fast(x: np.ndarray) -> np.ndarray:
        # alpha * x is exact (two float32 values); then Sigmoid's bound and one more rounding
        return x * _sigmoid_fast(alpha * x)

    def precise(x: np.ndarray) -> DD:
        big = np.abs(x) > 2.0**1000  # x * s may pass the float64 range before the scaling
        shift = np.where(big, 2, 0)
        k, s = sigmoid_parts(ddmath.two_prod(np.full_like(x, alpha), x))
        return ddmath.ldexp(ddmath.mul_float(s, np.ldexp(x, -shift)), k + shift)

    # the limits: x e**(alpha x) -> 0 on the side where alpha x -> -inf (with x's sign); x / 2 for alpha 0
    up = np.inf if alpha >= 0 else 0.0
    down = -0.0 if alpha > 0 else -np.inf
    return Activation(
        "Swish", fast, _LIBM_BOUND, precise, (up, down), loop="swish_float32", loop_args=lambda: (alpha,)
    )


def swish(X: Any, alpha: Any = 1.0) -> np.ndarray:
    """ONNX Swish: ``x * sigmoid(alpha * x)`` with alpha's float32 value, correctly rounded; at the
    infinite side where sigmoid vanishes, the limit (+-0), not inf * 0."""
    return apply(X, _swish(attribute(alpha, "alpha", "Swish")))
