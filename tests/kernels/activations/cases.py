"""The activations under test: each kernel with the attributes it is called with and the oracle's
formula for them (the attributes' float32 values)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.kernels.activations import gaussian, logistic, piecewise
from tests.kernels.activations.oracle import Formula, formulas


@dataclass(frozen=True)
class Case:
    """One activation as the tests call it."""

    name: str
    kernel: Callable[..., np.ndarray]
    attributes: dict[str, Any]
    formula: Formula
    types: tuple[str, ...] = ("float16", "bfloat16", "float", "double")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.kernel(x, **self.attributes)


def _f32(value: float) -> float:
    return float(np.float32(value))


SELU = {"alpha": _f32(1.6732632423543772), "gamma": _f32(1.0507009873554805)}

CASES: list[Case] = [
    Case("sigmoid", logistic.sigmoid, {}, formulas()["sigmoid"]),
    Case("tanh", logistic.tanh, {}, formulas()["tanh"]),
    Case("softplus", logistic.softplus, {}, formulas()["softplus"]),
    Case("mish", logistic.mish, {}, formulas()["mish"]),
    Case("swish", logistic.swish, {}, formulas()["swish"]),
    Case("swish_0.3", logistic.swish, {"alpha": 0.3}, formulas(alpha=_f32(0.3))["swish"]),
    Case("swish_-2", logistic.swish, {"alpha": -2.0}, formulas(alpha=-2.0)["swish"]),
    Case("erf", gaussian.erf, {}, formulas()["erf"]),
    Case("gelu", gaussian.gelu, {}, formulas()["gelu"]),
    Case("gelu_tanh", gaussian.gelu, {"approximate": "tanh"}, formulas()["gelu_tanh"]),
    Case("hard_sigmoid", piecewise.hard_sigmoid, {}, formulas(alpha=_f32(0.2), beta=0.5)["hard_sigmoid"]),
    Case(
        "hard_sigmoid_0.7_-0.1",
        piecewise.hard_sigmoid,
        {"alpha": 0.7, "beta": -0.1},
        formulas(alpha=_f32(0.7), beta=_f32(-0.1))["hard_sigmoid"],
    ),
    Case("hard_swish", piecewise.hard_swish, {}, formulas()["hard_swish"]),
    Case("elu", piecewise.elu, {}, formulas()["elu"]),
    Case("elu_0.3", piecewise.elu, {"alpha": 0.3}, formulas(alpha=_f32(0.3))["elu"]),
    Case("selu", piecewise.selu, {}, formulas(**SELU)["selu"]),
    Case("celu", piecewise.celu, {}, formulas()["celu"]),
    Case("celu_0.4", piecewise.celu, {"alpha": 0.4}, formulas(alpha=_f32(0.4))["celu"]),
    Case("celu_-1.5", piecewise.celu, {"alpha": -1.5}, formulas(alpha=-1.5)["celu"]),
]
"""Every activation, with the default attributes and with others."""

BY_NAME = {c.name: c for c in CASES}
