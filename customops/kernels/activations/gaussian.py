"""ONNX Erf (9, 13) and Gelu (20, both ``approximate`` values), correctly rounded.

erf and erfc come from customops.kernels.activations.erfmath (Taylor tables; numpy has no erf). Gelu:

- ``none``: ``x / 2 * (1 + erf(x / sqrt(2)))``, evaluated as ``x / 2 * erfc(|x| / sqrt(2))`` for x < 0,
  whose relative accuracy holds in the far tail (``1 + erf`` would cancel), with ``exp(-x**2 / 2)``
  taken from the exact square (x**2 of a float32 fits a float64; a double-double for double inputs);
- ``tanh``: ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x**3)))`` with sqrt(2 / pi) and 0.044715 the
  exact reals of the spec's text, evaluated as ``x * sigmoid(v)``, ``v = 2 sqrt(2/pi) (x + 0.044715
  x**3)``, the same real number (1 + tanh(u) = 2 sigmoid(2u)) without cancellation for x < 0.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import numpy as np

from customops.kernels.activations import ddmath, erfmath
from customops.kernels.activations.ddmath import DD
from customops.kernels.activations.evaluate import Activation, apply
from customops.kernels.activations.logistic import sigmoid_parts
from customops.kernels.args import choice

__all__ = ["erf", "gelu"]

_ERF_BOUND = 2.0**-46
"""erfmath's float64 erf (2**-48) and the exp it calls."""

_ERF = Activation(
    "Erf",
    lambda x: erfmath.erf_fast(x, x * x),
    _ERF_BOUND,
    lambda x: erfmath.erf(ddmath.dd(x)),
    (1.0, -1.0),
    loop="erf_float32",
    loop_args=lambda: (erfmath.fast_table(), _ERF_BOUND),
)


def erf(X: Any) -> np.ndarray:
    """ONNX Erf, correctly rounded (float types; Erf-9's integer types are not taken)."""
    return apply(X, _ERF)


def _constants() -> tuple[DD, DD, DD]:
    """1 / sqrt(2), 2 sqrt(2 / pi) and 2 sqrt(2 / pi) 0.044715 as double-doubles."""
    with localcontext() as context:
        context.prec = 60
        root = (2 / erfmath.PI).sqrt()
        return (
            ddmath.from_decimal(1 / Decimal(2).sqrt()),
            ddmath.from_decimal(2 * root),
            ddmath.from_decimal(2 * root * Decimal("0.044715")),
        )


_INV_ROOT2, _C1, _C3 = _constants()

_GELU_BOUND = 2.0**-43
"""erfc below z = 1 is 1 - erf, which multiplies erf's error by up to 5.4 (2**-45.5); tanh form: v's
three roundings, times |v| <= 110 where a float32 result is not 0 (2**-44.6), and Sigmoid's bound."""


def _gelu_fast(x: np.ndarray) -> np.ndarray:
    """``x / 2 * (1 + erf(z))``, z = x / sqrt(2): with s the series of erfmath at |z| (erf(|z|) below 1,
    g(|z|) above) and e = exp(-x**2 / 2) s (erfc(|z|) above 1), the factor is 1 +- s below |z| = 1, e
    (x < 0) or 2 - e (x >= 0) above; x**2 / 2 is exact for float32 and narrower inputs."""
    z = np.abs(x) * _INV_ROOT2.hi
    s = erfmath.series_fast(z)
    with np.errstate(under="ignore"):
        e = np.exp(x * x * -0.5) * s
    negative = x < 0
    near = 1.0 + np.where(negative, -s, s)
    far = np.where(negative, e, 2.0 - e)
    return 0.5 * x * np.where(z < 1.0, near, far)


def _gelu_precise(x: np.ndarray) -> DD:
    xd = ddmath.dd(x)
    xc = np.clip(x, -64.0, 64.0)  # beyond, the factor below is 0 or 2
    z = ddmath.mul_float(_INV_ROOT2, np.abs(xc))
    half_square = ddmath.scaled(ddmath.two_prod(xc, xc), 0.5)
    k, below = erfmath.erfc_parts(z, half_square)
    above = ddmath.add_float(erfmath.erf(z), 1.0)
    negative = xc < 0
    factor = DD(np.where(negative, below.hi, above.hi), np.where(negative, below.lo, above.lo))
    return ddmath.ldexp(ddmath.mul(ddmath.scaled(factor, 0.5), xd), np.where(negative, k, 0))


def _gelu_tanh_fast(x: np.ndarray) -> np.ndarray:
    v = x * (_C1.hi + _C3.hi * (x * x))
    e = np.exp(-v)
    e += 1.0
    return x / e


def _gelu_tanh_precise(x: np.ndarray) -> DD:
    big = np.abs(x) > 2.0**300  # v passes the float64 range; sigmoid(v) is 0 or 1 long before
    xc = np.where(big, np.sign(x) * 2.0**300, x)
    square = ddmath.two_prod(xc, xc)
    v = ddmath.mul_float(ddmath.add(ddmath.mul(_C3, square), _C1), xc)
    k, s = sigmoid_parts(v)
    return ddmath.ldexp(ddmath.mul_float(s, x), k)


_GELU = {
    "none": Activation(
        "Gelu",
        _gelu_fast,
        _GELU_BOUND,
        _gelu_precise,
        (np.inf, -0.0),
        loop="gelu_float32",
        loop_args=lambda: (erfmath.fast_table(), _GELU_BOUND, float(_INV_ROOT2.hi)),
    ),
    "tanh": Activation(
        "Gelu",
        _gelu_tanh_fast,
        _GELU_BOUND,
        _gelu_tanh_precise,
        (np.inf, -0.0),
        loop="gelu_tanh_float32",
        loop_args=lambda: (float(_C1.hi), float(_C3.hi), _GELU_BOUND),
    ),
}


def gelu(X: Any, approximate: Any = "none") -> np.ndarray:
    """ONNX Gelu-20, correctly rounded; -0 at -inf (the limit; -inf * 0 is NaN)."""
    return apply(X, _GELU[choice(approximate, "approximate", ("none", "tanh"))])
