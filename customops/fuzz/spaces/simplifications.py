"""Simplifications of a case's main input that several spaces offer the shrinker: drop or cut one axis,
and make the values simpler (float, no special values, 1, 2, 3, ..., zeros)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case
from customops.fuzz.spaces.base import Candidate, convert_case


def drop_main_axis(x: np.ndarray, k: int, elem: str) -> np.ndarray:
    """``x`` without axis ``k``: its first slice, or simple values of element type ``elem`` when the axis
    is empty."""
    if x.shape[k] > 0:
        return np.take(x, 0, axis=k)
    shape = tuple(d for i, d in enumerate(x.shape) if i != k)
    return V.simple(shape, elem)


def cut_main_axis(x: np.ndarray, k: int, length: int) -> np.ndarray:
    """``x`` with axis ``k`` cut to its first ``length`` entries (a view)."""
    index = [slice(None)] * x.ndim
    index[k] = slice(0, length)
    return x[tuple(index)]


def value_simplifications(case: Case) -> Iterator[Candidate]:
    """The main input made simpler: T made float, special values made ordinary (all, then one at a time),
    values made 1, 2, 3, ..., then zeros (special values kept)."""
    if case.dtype != "float":
        simpler = convert_case(case, "float")
        if simpler is not None:
            yield "dtype float", simpler
    main = case.opv.inputs[0].name
    x = case.main
    mask = V.special_mask(x, case.dtype)
    if mask.any():
        yield "no special values", case.with_input(main, V.replace_specials(x, case.dtype))
        if mask.sum() > 1:
            flat = mask.ravel()
            for pos in np.flatnonzero(flat):
                one = x.copy().reshape(-1)
                one[pos] = V.replace_specials(one[pos : pos + 1], case.dtype)[0]
                yield f"one special value fewer (at {pos})", case.with_input(main, one.reshape(x.shape))
    simple = V.simple(x.shape, case.dtype)
    simple[mask] = x[mask]
    yield "simple values", case.with_input(main, simple)
    if x.size:
        zeros = (
            V.cast(np.zeros(x.shape), case.dtype)
            if case.dtype != "string"
            else np.full(x.shape, "", dtype=object)
        )
        zeros[mask] = x[mask]
        yield "zero values", case.with_input(main, zeros)
