"""What every operator's case space shares: shapes, attributes drawn from the registry, the interface of
a space (generate, validate, mutate into an invalid configuration, simplify). The spaces themselves are
in ``spaces_*``, and :mod:`customops.fuzz.dispatch` finds an operator's space and draws its cases.

A space never decides what a runtime does; its oracle (:meth:`Space.validate`) says whether a case is a
valid configuration of the spec (as docs/semantics.md reads it) and, if not, names the rule it breaks.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.dtypes import numpy_dtype
from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.registry import OPS, Attr, OpVersion

IN_LIMIT = 240
"""Largest number of elements of a generated main input."""

OUT_LIMIT = 720
"""Largest number of elements of a valid case's output (larger draws are redrawn)."""

INVALID_SHARE = 0.10
"""Share of cases mutated on purpose into an invalid configuration."""

FLOAT_SHARE = 0.35
"""Share of cases on float (the type most models use); the rest draw T uniformly from the spec's types."""

SPECIAL_SHARE = 0.3
"""Share of cases whose main input holds special values (NaN, ±Inf, extremes, -0.0)."""


@dataclass(frozen=True)
class Verdict:
    """The oracle's answer: ``reason`` is None for a valid case, else the rule it breaks (a short tag);
    ``out_shape`` is the spec's output shape of a valid case."""

    reason: str | None
    out_shape: tuple[int, ...] | None = None

    @property
    def valid(self) -> bool:
        return self.reason is None


Candidate = tuple[str, Case]
"""A simplification the shrinker may try: (what it does, the simpler case)."""


class Space:
    """The case space of one operator (every version of it)."""

    op: str = ""
    exact: bool = False
    """Whether every output is its formula rounded once, so that the sides are compared exactly rather
    than at the tolerance of the output's type (the quantized family)."""

    def generate(self, rng: np.random.Generator, opv: OpVersion, dtype: str) -> Case:
        """A valid case whose output fits OUT_LIMIT, drawn with input budgets that shrink every four
        attempts; after 40 misses, :meth:`_fallback` of the last draw."""
        case = None
        for attempt in range(40):
            case = self._draw(rng, opv, dtype, IN_LIMIT >> min(attempt // 4, 4))
            verdict = self.validate(case)
            if verdict.valid and math.prod(verdict.out_shape or ()) <= OUT_LIMIT:
                return case
        assert case is not None
        return self._fallback(case)

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        """One case whose main input has at most ``limit`` elements (valid or not)."""
        raise NotImplementedError

    def _fallback(self, case: Case) -> Case:
        """What :meth:`generate` returns when no draw fitted: the last draw."""
        return case

    def validate(self, case: Case) -> Verdict:
        raise NotImplementedError

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        """Ways to turn a valid case into an invalid one (each may return None when it does not apply)."""
        return [mutate_enum_attr]

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        """Simpler variants of ``case`` (the shrinker keeps those that keep the finding's signature)."""
        yield from ()

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        """(feature label, the case with that feature at its simplest) for each non-trivial feature of
        ``case``: the triage finds which of them a finding needs."""
        yield from generic_features(case)


# ---------------------------------------------------------------------------------------------
# drawing


def case_rng(seed: int, index: int, op: str, version: int) -> np.random.Generator:
    """The generator of case ``index``: it depends on (seed, index, op, version) only."""
    return np.random.default_rng([seed, index, zlib.crc32(op.encode()), version])


def draw_rank(rng: np.random.Generator, low: int = 1, high: int = 6) -> int:
    """A rank in [low, high], favouring 2 to 4."""
    weights = np.array([0.14, 0.22, 0.2, 0.24, 0.12, 0.08])[low - 1 : high]
    return int(rng.choice(np.arange(low, high + 1), p=weights / weights.sum()))


def draw_dim(rng: np.random.Generator, high: int = 6, zero: float = 0.04, one: float = 0.24) -> int:
    """An axis length: 0 with probability ``zero``, 1 with probability ``one``, else 2..high."""
    u = rng.random()
    if u < zero:
        return 0
    if u < zero + one:
        return 1
    return int(rng.integers(2, high + 1))


def draw_shape(rng: np.random.Generator, rank: int, limit: int = IN_LIMIT) -> tuple[int, ...]:
    """A shape of ``rank`` with at most ``limit`` elements (size-0 and size-1 axes included)."""
    dims = [draw_dim(rng) for _ in range(rank)]
    while math.prod(dims) > limit:
        i = int(np.argmax(dims))
        dims[i] = max(1, dims[i] // 2)
    return tuple(dims)


def draw_values(rng: np.random.Generator, elem: str, shape: tuple[int, ...]) -> np.ndarray:
    """Ordinary values, with special ones in :data:`SPECIAL_SHARE` of the cases."""
    values = V.ordinary(rng, elem, shape)
    if rng.random() < SPECIAL_SHARE:
        values = V.with_specials(rng, values, elem)
    return values


def draw_float_attr(rng: np.random.Generator, attr: Attr) -> float:
    """A float attribute value: the default, a short decimal in [-2, 2], or rarely a non-finite one."""
    u = rng.random()
    if u < 0.3 and attr.default is not None:
        value = float(attr.default)
    elif u < 0.97:
        value = round(float(rng.uniform(-2.0, 2.0)), int(rng.integers(0, 3)))
    else:
        value = float(rng.choice([math.nan, math.inf, -math.inf]))
    return float(np.float32(value))


def draw_registry_attrs(
    rng: np.random.Generator, opv: OpVersion, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The scalar attributes of ``opv`` drawn from their registry domains; each is left out (spec default)
    a third of the time. 'ints'/'floats' attributes and those in ``skip`` are the space's business."""
    attrs: dict[str, Any] = {}
    for a in opv.attributes:
        if a.name in skip or a.kind in ("ints", "floats"):
            continue
        if not a.required and rng.random() < 0.33:
            continue
        if a.allowed is not None:
            attrs[a.name] = str(rng.choice(a.allowed))
        elif a.kind == "int":
            attrs[a.name] = int(rng.integers(0, 2))  # the spec's int attributes here are 0/1 flags
        elif a.kind == "float":
            attrs[a.name] = draw_float_attr(rng, a)
        elif a.kind == "string":
            attrs[a.name] = "x"
    return attrs


def draw_axes(rng: np.random.Generator, rank: int) -> list[int]:
    """A non-empty subset of range(rank) in random order, each axis negative with probability 0.4."""
    count = int(rng.integers(1, rank + 1))
    picked = [int(a) for a in rng.permutation(rank)[:count]]
    return [a - rank if rng.random() < 0.4 else a for a in picked]


def index_array(values: list[int], elem: str = "int64") -> np.ndarray:
    return np.array(values, dtype=numpy_dtype(elem)).reshape(len(values))


# ---------------------------------------------------------------------------------------------
# validity helpers


def attr_value(case: Case, name: str) -> Any:
    """The attribute's value on the node, else its spec default."""
    if name in case.attrs:
        return case.attrs[name]
    return case.opv.attr(name).default


def enum_reason(case: Case) -> str | None:
    """'attr-value:NAME' for a string attribute outside its version's allowed values, or None."""
    for a in case.opv.attributes:
        if a.allowed is not None and a.name in case.attrs and case.attrs[a.name] not in a.allowed:
            return f"attr-value:{a.name}"
        if a.kind == "int" and a.name in case.attrs and case.attrs[a.name] not in (0, 1):
            return f"attr-value:{a.name}"
    return None


def present(case: Case, name: str) -> np.ndarray | None:
    """An optional input's value, None when absent or empty (the project reads both as absent)."""
    t = case.inputs.get(name)
    if t is None or t.value.size == 0:
        return None
    return t.value


def norm_axes(axes: list[int] | np.ndarray | None, rank: int) -> tuple[list[int] | None, str | None]:
    """(axes in [0, rank), None) or (None, reason); None/empty axes mean every axis."""
    if axes is None or len(axes) == 0:
        return list(range(rank)), None
    out = []
    for a in [int(x) for x in np.asarray(axes).ravel().tolist()]:
        if not -rank <= a < rank:
            return None, "axis-out-of-range"
        out.append(a % rank)
    if len(set(out)) != len(out):
        return None, "axes-repeated"
    return out, None


# ---------------------------------------------------------------------------------------------
# mutations and features shared by every space


def mutate_enum_attr(rng: np.random.Generator, case: Case) -> Case | None:
    """A string attribute set to a value this version does not allow: one another version of the op
    allows, or a made-up one."""
    enums = [a for a in case.opv.attributes if a.allowed is not None]
    if not enums:
        return None
    a = enums[int(rng.integers(0, len(enums)))]
    others = sorted(
        {
            v
            for o in OPS
            if o.op == case.op
            for b in o.attributes
            if b.name == a.name
            for v in (b.allowed or ())
        }
        - set(a.allowed or ())
    )
    value = str(rng.choice(others)) if others and rng.random() < 0.7 else "not_a_" + a.name
    return case.with_attrs(**{a.name: value})


def convert_case(case: Case, to: str) -> Case | None:
    """``case`` with T changed to ``to`` (every input of the main input's type variable converted: T, or
    the first input's variable of an op of several), or None if impossible."""
    if to not in case.opv.types or to == case.dtype:
        return None
    out = case.clone(dtype=to)
    main = case.opv.inputs[0].types
    for inp in case.opv.inputs:
        t = case.inputs.get(inp.name)
        if t is None or inp.types != main:
            continue
        converted = V.convert(t.value, case.dtype, to)
        if converted is None:
            return None
        out.inputs[inp.name] = Tensor(converted, t.const)
    return out


def generic_features(case: Case) -> Iterator[tuple[str, Case]]:
    """Attributes not at their default (removed), T other than float (made float), special values
    (replaced by ordinary ones) and optional inputs given (removed)."""
    for name, value in case.attrs.items():
        a = case.opv.attr(name)
        if a.required:
            continue
        label = name if a.kind in ("ints", "floats", "float") else f"{name}={value}"
        yield label, case.with_attrs(**{name: None})
    if case.dtype != "float":
        simpler = convert_case(case, "float")
        if simpler is not None:
            yield f"dtype={case.dtype}", simpler
    main = case.opv.inputs[0].name
    mask = V.special_mask(case.main, case.dtype)
    if mask.any():
        yield "special-values", case.with_input(main, V.replace_specials(case.main, case.dtype))


def drop_input_features(case: Case, names: tuple[str, ...]) -> Iterator[tuple[str, Case]]:
    """Features for optional inputs that can simply be removed."""
    for name in names:
        if case.inputs.get(name) is not None and case.inputs[name].value.size:  # type: ignore[union-attr]
            yield name, case.with_input(name, None)
