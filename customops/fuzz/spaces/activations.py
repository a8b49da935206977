"""Case space of the activation family (Sigmoid, Tanh, Erf, Gelu, Softplus, Mish, Swish, HardSigmoid,
HardSwish, Elu, Selu, Celu): one element-wise input whose values crowd where results are hard to get
right and where ORT's approximations switch branches (Sigmoid's zeroed tail below -18, Tanh's clamp near
9, Gelu's tails, Softplus near 20, HardSigmoid's and HardSwish's corners), with subnormals, huge
magnitudes, +-inf, NaN and -0; float attributes drawn at random (Celu's alpha never 0, every attribute
finite: the kernels refuse the rest, docs/semantics.md)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    Candidate,
    Space,
    Verdict,
    attr_value,
    draw_rank,
    draw_shape,
    enum_reason,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

SWITCHES: dict[str, tuple[float, ...]] = {
    "Sigmoid": (-18.0, -16.6, -20.0, -87.3, -88.7, -103.3, -104.0, 16.6, 18.0, 36.7, 88.7),
    "Tanh": (-9.0, 9.0, -8.0, 8.0, 0.0004, -0.0004, 0.55, -0.55, 10.0, 19.1),
    "Erf": (0.84375, -0.84375, 1.25, 2.857, -2.857, 3.92, -3.92, 6.0, -6.0),
    "Gelu": (-5.5, -6.0, -8.0, -10.0, -13.2, -26.0, -40.0, 3.0, 5.5, -0.01),
    "Softplus": (-20.0, 20.0, 15.9, -15.9, -87.3, -103.3, 88.7, 0.0001, -0.0001),
    "Mish": (-20.0, 20.0, -8.0, 8.0, -88.0, -103.0, -1.19, 0.0001),
    "Swish": (-18.0, -20.0, -88.7, -103.3, -104.0, 18.0, 1.0, -1.0),
    "HardSigmoid": (),
    "HardSwish": (-3.0, 3.0, -2.9999998, 2.9999998, -1.5, 0.0),
    "Elu": (-17.0, -20.0, -88.0, -104.0, -0.0001, 1.0),
    "Selu": (-17.0, -20.0, -88.0, -104.0, -0.0001, 1.0),
    "Celu": (-17.0, -20.0, -88.0, -104.0, -0.0001, 1.0),
}
"""Inputs near which each op's results are hard (or where ORT's approximations change branch), before
the attributes move them (:func:`switches`)."""

NEAR_SHARE = 0.6
"""Share of a case's elements drawn near the op's switch points."""


def switches(op: str, attrs: Mapping[str, Any]) -> list[float]:
    """The switch points of ``op`` with the case's attributes: Swish's and Celu's scale with alpha,
    HardSigmoid's corners are where alpha x + beta is 0 and 1."""
    alpha = float(attrs.get("alpha", 1.0))
    points = list(SWITCHES[op])
    if op == "Swish" and alpha:
        points = [p / alpha for p in points]
    if op == "Celu":
        points = [p * alpha for p in points]
    if op == "HardSigmoid" and alpha:
        beta = float(attrs.get("beta", 0.5))
        points = [-beta / alpha, (1.0 - beta) / alpha]
    return points or [0.0]


def near(rng: np.random.Generator, points: list[float], size: int) -> np.ndarray:
    """``size`` float64 values each a few ulps (of float32, or of float16) from one of ``points``, or the
    point itself."""
    picked = np.asarray(points, np.float64)[rng.integers(0, len(points), size)]
    steps = rng.integers(-6, 7, size).astype(np.float64)
    eps = np.where(rng.random(size) < 0.5, 2.0**-23, 2.0**-10)
    return picked * (1.0 + steps * eps)


def draw_attributes(rng: np.random.Generator, opv: OpVersion) -> dict[str, object]:
    """The op's attributes: each left out a third of the time (its default); a float one a short decimal
    or a wide float32 value, never 0 for Celu's alpha; Gelu's approximate either value."""
    attrs: dict[str, object] = {}
    for a in opv.attributes:
        if rng.random() < 0.33:
            continue
        if a.allowed is not None:
            attrs[a.name] = str(rng.choice(a.allowed))
            continue
        u = rng.random()
        if u < 0.6:
            value = round(float(rng.uniform(-3.0, 3.0)), int(rng.integers(0, 4)))
        elif u < 0.85:
            value = float(rng.choice([1e-6, -1e-6, 1e-30, 50.0, -50.0, 1e6]))
        else:
            value = float(a.default)  # type: ignore[arg-type]
        if opv.op == "Celu" and value == 0:
            value = 1.0
        attrs[a.name] = float(np.float32(value))
    return attrs


def draw_inputs(
    rng: np.random.Generator, op: str, dtype: str, shape: tuple[int, ...], attrs: Mapping[str, Any]
) -> np.ndarray:
    """Ordinary values, most replaced by values near the switch points, and in some cases special ones."""
    values = V.ordinary(rng, dtype, shape).astype(np.float64).reshape(-1)
    where = rng.random(values.size) < NEAR_SHARE
    values[where] = near(rng, switches(op, attrs), int(where.sum()))
    out = V.cast(values.reshape(shape), dtype)
    if rng.random() < 0.4:
        out = V.with_specials(rng, out, dtype)
    return out


class ActivationSpace(Space):
    """Every version of one activation."""

    def __init__(self, op: str) -> None:
        self.op = op

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        shape = draw_shape(rng, draw_rank(rng, 1, 4), limit)
        attrs = draw_attributes(rng, opv)
        x = draw_inputs(rng, opv.op, dtype, shape, attrs)
        return Case(opv.op, opv.version, dtype, {opv.inputs[0].name: Tensor(x)}, attrs)

    def validate(self, case: Case) -> Verdict:
        reason = enum_reason(case)
        if reason:
            return Verdict(reason)
        for a in case.opv.attributes:
            if a.kind == "float" and not np.isfinite(float(attr_value(case, a.name))):
                return Verdict(f"attr-not-finite:{a.name}")
        if case.op == "Celu" and float(attr_value(case, "alpha")) == 0:
            return Verdict("celu-alpha-zero")
        return Verdict(None, tuple(case.main.shape))

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        main = case.opv.inputs[0].name
        if x.size > 1:
            flat = x.reshape(-1)
            half = flat.size // 2
            yield "first half", case.with_input(main, flat[:half].copy())
            yield "second half", case.with_input(main, flat[half:].copy())
            if x.ndim > 1:
                yield "flattened", case.with_input(main, flat.copy())
        yield from value_simplifications(case)
