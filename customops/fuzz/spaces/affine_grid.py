"""Case space of AffineGrid (20): 2-D and 3-D grids, sizes of 0 and 1, N and C of 0, both align_corners."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    OUT_LIMIT,
    Candidate,
    Space,
    Verdict,
    draw_dim,
    draw_registry_attrs,
    draw_values,
    enum_reason,
    generic_features,
    index_array,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion


def _size(case: Case) -> list[int]:
    return [int(v) for v in case.inputs["size"].value.tolist()]  # type: ignore[union-attr]


class AffineGridSpace(Space):
    """AffineGrid-20."""

    op = "AffineGrid"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        spatial = 2 if rng.random() < 0.65 else 3
        n = int(rng.choice([0, 1, 1, 2, 3])) if limit > 8 else 1
        c = int(rng.choice([0, 1, 1, 3]))
        dims = [draw_dim(rng, 7) for _ in range(spatial)]
        while n * math.prod(dims) * spatial > min(OUT_LIMIT, 3 * limit) and max(dims) > 1:
            i = int(np.argmax(dims))
            dims[i] = max(1, dims[i] // 2)
        inputs: dict[str, Tensor | None] = {
            "theta": Tensor(draw_values(rng, dtype, (n, spatial, spatial + 1))),
            "size": Tensor(index_array([n, c, *dims]), bool(rng.random() < 0.6)),
        }
        return Case(opv.op, opv.version, dtype, inputs, draw_registry_attrs(rng, opv))

    def validate(self, case: Case) -> Verdict:
        theta = case.main
        reason = enum_reason(case)
        if reason:
            return Verdict(reason)
        size = _size(case)
        if len(size) not in (4, 5):
            return Verdict("size-length")
        if any(v < 0 for v in size):
            return Verdict("size-negative")
        spatial = len(size) - 2
        if theta.ndim != 3 or theta.shape[1:] != (spatial, spatial + 1):
            return Verdict("theta-shape")
        if theta.shape[0] != size[0]:
            return Verdict("batch-mismatch")
        return Verdict(None, (size[0], *size[2:], spatial))

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [_mutate_size_length, _mutate_size_negative, _mutate_theta_shape, _mutate_batch, _mutate_flag]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        size = _size(case)
        if len(size) in (4, 5) and any(v == 1 for v in size[2:]):
            bigger = [v if i < 2 or v != 1 else 2 for i, v in enumerate(size)]
            yield "size-1-axis", case.with_input("size", index_array(bigger))

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        theta = case.main
        size = _size(case)
        if len(size) in (4, 5) and theta.ndim == 3 and theta.shape[0] == size[0]:
            if size[0] > 1:
                simpler = case.with_input("theta", theta[:1]).with_input("size", index_array([1, *size[1:]]))
                yield "N=1", simpler
            if size[1] != 1:
                yield "C=1", case.with_input("size", index_array([size[0], 1, *size[2:]]))
            for i in range(2, len(size)):
                for target in sorted({1, 2, size[i] // 2, size[i] - 1}):
                    if 0 < target < size[i]:
                        new = list(size)
                        new[i] = target
                        yield f"size[{i}]={target}", case.with_input("size", index_array(new))
        yield from value_simplifications(case)
        t = case.inputs["size"]
        if t is not None and t.const:
            yield "size as input", case.with_input("size", t.value, const=False)


def _mutate_size_length(rng: np.random.Generator, case: Case) -> Case | None:
    size = _size(case)
    changed = [*size, 2] if len(size) == 5 or (len(size) == 4 and rng.random() < 0.3) else size[:3]
    if len(size) == 4 and len(changed) == 5:
        changed = [*size, 2, 2]
    return case.with_input("size", index_array(changed))


def _mutate_size_negative(rng: np.random.Generator, case: Case) -> Case | None:
    size = _size(case)
    size[int(rng.integers(1, len(size)))] = -int(rng.integers(1, 3))
    return case.with_input("size", index_array(size))


def _mutate_theta_shape(rng: np.random.Generator, case: Case) -> Case | None:
    theta = case.main
    spatial = theta.shape[1]
    other = 5 - spatial  # the other layout: (N, 3, 4) for a 2-D size and the reverse
    return case.with_input("theta", V.simple((theta.shape[0], other, other + 1), case.dtype))


def _mutate_batch(rng: np.random.Generator, case: Case) -> Case | None:
    size = _size(case)
    size[0] += 1
    return case.with_input("size", index_array(size))


def _mutate_flag(rng: np.random.Generator, case: Case) -> Case | None:
    return case.with_attrs(align_corners=int(rng.choice([2, -1])))
