"""ONNX HardSigmoid (6, 22), HardSwish (14, 22), Elu (6, 22), Selu (6, 22) and Celu (12), correctly
rounded, with the attributes' float32 values.

HardSigmoid and HardSwish are rational: their float64 value is within a few roundings of the exact one,
and an element whose rounding stays in doubt after the double-double evaluation takes the exact value
(fractions), so that a midpoint rounds to even. HardSwish's alpha is 1/6 exactly, as its spec text
says (its function body's HardSigmoid has 1/6 rounded to float32). Elu, Selu and Celu are the identity
or a product of the attributes and x above 0 (rounded once), ``alpha * expm1(...)`` below.
docs/semantics.md ("Activations") records the decisions, the signed zeros among them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels.activations import ddmath
from customops.kernels.activations.ddmath import DD
from customops.kernels.activations.evaluate import Activation, apply, attribute

__all__ = ["celu", "elu", "hard_sigmoid", "hard_swish", "selu"]

_ROUNDINGS = 2.0**-50
"""A few float64 roundings of an exact product, sum or quotient."""
_EXPM1_BOUND = 2.0**-46
"""numpy's float64 expm1 (taken as within 2**-48, as exp in logistic.py) and one product."""


def _clip(value: DD) -> DD:
    """max(0, min(1, value)) of a double-double (normalized: its sign against 0 or 1 is hi's, or lo's
    when hi is exactly 0 or 1)."""
    above = (value.hi > 1.0) | ((value.hi == 1.0) & (value.lo >= 0))
    below = (value.hi < 0.0) | ((value.hi == 0.0) & (value.lo <= 0))
    hi = np.where(above, 1.0, np.where(below, 0.0, value.hi))
    return DD(hi, np.where(above | below, 0.0, value.lo))


def _hard_sigmoid(alpha: float, beta: float) -> Activation:
    def fast(x: np.ndarray) -> np.ndarray:
        return np.clip(alpha * x + beta, 0.0, 1.0)  # alpha * x exact: one rounding

    def precise(x: np.ndarray) -> DD:
        reach = (abs(beta) + 2.0) / abs(alpha) if alpha else 1.0  # beyond, the clip decides alone
        xc = np.clip(x, -reach, reach)
        return _clip(ddmath.add_float(ddmath.two_prod(np.full_like(xc, alpha), xc), beta))

    def exact(x: Fraction) -> Fraction:
        return min(Fraction(1), max(Fraction(0), Fraction(alpha) * x + Fraction(beta)))

    flat = min(1.0, max(0.0, beta))  # alpha 0: beta clipped everywhere
    ends = (flat, flat) if alpha == 0 else ((1.0, 0.0) if alpha > 0 else (0.0, 1.0))
    return Activation(
        "HardSigmoid",
        fast,
        _ROUNDINGS,
        precise,
        ends,
        exact,
        loop="hard_sigmoid_float32",
        loop_args=lambda: (alpha, beta, _ROUNDINGS),
    )


def hard_sigmoid(X: Any, alpha: Any = 0.2, beta: Any = 0.5) -> np.ndarray:
    """ONNX HardSigmoid: ``max(0, min(1, alpha * x + beta))``, correctly rounded."""
    return apply(
        X, _hard_sigmoid(attribute(alpha, "alpha", "HardSigmoid"), attribute(beta, "beta", "HardSigmoid"))
    )


def _hard_swish_fast(x: np.ndarray) -> np.ndarray:
    """``x * clip(x + 3, 0, 6) / 6``: x itself from 3 up (x * 6 / 6 is exact), x * 0 (-0) up to -3,
    three roundings between."""
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


def _hard_swish_precise(x: np.ndarray) -> DD:
    xc = np.clip(x, -4.0, 4.0)
    inside = ddmath.div(
        ddmath.add(ddmath.two_prod(xc, xc), ddmath.two_prod(np.full_like(xc, 3.0), xc)), ddmath.dd(6.0)
    )
    middle = (x > -3.0) & (x < 3.0)
    outside = np.where(x >= 3.0, x, x * 0.0)
    return DD(np.where(middle, inside.hi, outside), np.where(middle, inside.lo, 0.0))


def _hard_swish_exact(x: Fraction) -> Fraction:
    return x * min(Fraction(6), max(Fraction(0), x + 3)) / 6


_HARD_SWISH = Activation(
    "HardSwish",
    _hard_swish_fast,
    _ROUNDINGS,
    _hard_swish_precise,
    (np.inf, -0.0),
    _hard_swish_exact,
    loop="hard_swish_float32",
    loop_args=lambda: (_ROUNDINGS,),
)


def hard_swish(X: Any) -> np.ndarray:
    """ONNX HardSwish: ``x * max(0, min(1, x / 6 + 1 / 2))`` with 1/6 exact, correctly rounded."""
    return apply(X, _HARD_SWISH)


def _negative_branch(x: np.ndarray, scale: float, positive: DD, zero: float) -> DD:
    """``scale * expm1(x)`` for x < 0, ``positive`` for x > 0 and ``zero`` at +-0."""
    below = ddmath.mul_float(ddmath.expm1(ddmath.dd(np.minimum(x, 0.0))), scale)
    hi = np.where(x < 0, below.hi, np.where(x > 0, positive.hi, zero))
    return DD(hi, np.where(x < 0, below.lo, np.where(x > 0, positive.lo, 0.0)))


def _elu(alpha: float) -> Activation:
    def fast(x: np.ndarray) -> np.ndarray:
        return np.where(x < 0, alpha * np.expm1(np.minimum(x, 0.0)), x)

    def precise(x: np.ndarray) -> DD:
        below = _negative_branch(x, alpha, ddmath.dd(x), 0.0)
        return DD(np.where(x == 0, x, below.hi), below.lo)  # x >= 0 gives x: -0 stays -0

    return Activation(
        "Elu",
        fast,
        _EXPM1_BOUND,
        precise,
        (np.inf, -alpha),
        loop="elu_float32",
        loop_args=lambda: (alpha, 0.0, 0.0, 0),
    )


def elu(X: Any, alpha: Any = 1.0) -> np.ndarray:
    """ONNX Elu: ``alpha * (exp(x) - 1)`` for x < 0, x for x >= 0 (-0 gives -0), correctly rounded."""
    return apply(X, _elu(attribute(alpha, "alpha", "Elu")))


_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875


def _selu(alpha: float, gamma: float) -> Activation:
    product = alpha * gamma  # exact: two float32 values
    zero = 0.0 * gamma  # gamma * (alpha * e**0 - alpha): +0 times gamma

    def fast(x: np.ndarray) -> np.ndarray:
        below = product * np.expm1(np.minimum(x, 0.0))
        return np.where(x > 0, gamma * x, np.where(x < 0, below, zero))

    def precise(x: np.ndarray) -> DD:
        return _negative_branch(x, product, ddmath.two_prod(np.full_like(x, gamma), x), zero)

    up = np.inf if gamma > 0 else (-np.inf if gamma < 0 else 0.0)
    return Activation(
        "Selu",
        fast,
        _EXPM1_BOUND,
        precise,
        (up, -product),
        loop="elu_float32",
        loop_args=lambda: (product, gamma, zero, 1),
    )


def selu(X: Any, alpha: Any = _SELU_ALPHA, gamma: Any = _SELU_GAMMA) -> np.ndarray:
    """ONNX Selu: ``gamma * (alpha * exp(x) - alpha)`` for x <= 0 (so +0 at -0 and +0 for gamma > 0),
    ``gamma * x`` for x > 0, correctly rounded."""
    return apply(X, _selu(attribute(alpha, "alpha", "Selu"), attribute(gamma, "gamma", "Selu")))


_CELU_BOUND = 2.0**-43
"""x / alpha's rounding moves expm1(u) by up to |u| 2**-53 of itself (|u| <= 100 where a float32 result
is finite), then expm1's bound."""


def _celu(alpha: float) -> Activation:
    if alpha == 0:
        raise KernelError("Celu: attribute alpha is 0; x / alpha has no value")

    def fast(x: np.ndarray) -> np.ndarray:
        below = alpha * np.expm1(np.minimum(x, 0.0) / alpha)
        return np.where(x > 0, x, np.where(x < 0, below, 0.0))

    def precise(x: np.ndarray) -> DD:
        u = ddmath.div(ddmath.dd(np.minimum(x, 0.0)), ddmath.dd(alpha))
        below = ddmath.mul_float(ddmath.expm1(u), alpha)
        # x itself where |x| < 2**-600: alpha expm1(x / alpha) = x (1 + x / (2 alpha) + ...), and the
        # correction is below 2**-450 of x (|alpha| >= 2**-149), where x / alpha could be subnormal
        keep = (x > 0) | (np.abs(x) < 2.0**-600)
        hi = np.where(keep, x, np.where(x < 0, below.hi, 0.0))
        return DD(hi, np.where(keep, 0.0, np.where(x < 0, below.lo, 0.0)))

    return Activation(
        "Celu",
        fast,
        _CELU_BOUND,
        precise,
        (np.inf, -alpha if alpha > 0 else -np.inf),
        loop="elu_float32" if alpha > 0 else None,  # the loop's expm1 takes arguments <= 0
        loop_args=lambda: (alpha, 0.0, 0.0, 2),
    )


def celu(X: Any, alpha: Any = 1.0) -> np.ndarray:
    """ONNX Celu: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``, correctly rounded (+0 at -0:
    the sum of two zeros, one of them +0)."""
    return apply(X, _celu(attribute(alpha, "alpha", "Celu")))
