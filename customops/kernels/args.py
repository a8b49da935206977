"""The checks of attributes and integer inputs every kernel shares, under one rule: an integer is a Python or
numpy integer, never a bool or a float (:func:`integer`, :func:`flag`, :func:`ints`); a string attribute is
one of a fixed set (:func:`choice`); a 1-D integer tensor becomes a list of ints (:func:`int_list`); and
ONNX's ``axes`` convention (negative axes count from the back, no repeats: :func:`normalize_axes`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from customops.errors import KernelError


def is_absent(value: Any) -> bool:
    """True for an optional input that was not given: None or an empty array."""
    return value is None or np.asarray(value).size == 0


def int_list(value: Any, name: str) -> list[int]:
    """A 1-D integer tensor (or sequence of ints) as a list of Python ints; raises KernelError naming
    ``name`` otherwise."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise KernelError(f"{name} must be a 1-D tensor, got shape {arr.shape!r}")
    if arr.size and arr.dtype.kind not in "iu":
        raise KernelError(f"{name} must hold integers, got dtype {str(arr.dtype)!r}")
    return [int(v) for v in arr.tolist()]


def int_values(value: Any, name: str) -> list[int]:
    """An INTS attribute or a 1-D integer tensor as a list of Python ints: a list or tuple entry by entry
    as :func:`integer` takes it (a bool or a float refused), anything else as :func:`int_list` does."""
    if isinstance(value, list | tuple):
        return [integer(v, f"{name} entry") for v in value]
    return int_list(value, name)


def normalize_axes(axes: Any, rank: int, name: str = "axes", *, empty_is_all: bool = True) -> list[int]:
    """Axes in [-rank, rank-1] as non-negative ints; None means every axis, and so does an empty list
    unless ``empty_is_all`` is False (then it means none). Raises KernelError for an axis that is not an
    integer, is out of range or is given twice."""
    if axes is None or (empty_is_all and is_absent(axes)):
        return list(range(rank))
    raw = int_values(axes, name)
    out = []
    for a in raw:
        if not -rank <= a < rank:
            raise KernelError(f"{name} value {a!r} is out of range [{-rank}, {rank - 1}] for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise KernelError(f"{name} {raw!r} refer to the same axis more than once")
    return out


def integer(value: Any, name: str, minimum: int | None = None) -> int:
    """An INT attribute as a Python int: a Python or numpy integer (never a bool, never a float, even
    2.0: the bridge hands every int attribute over as a Python int), at least ``minimum`` when given;
    raises KernelError naming ``name`` and what is allowed otherwise."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise KernelError(f"{name} {value!r} is not an integer")
    result = int(value)
    if minimum is not None and result < minimum:
        raise KernelError(f"{name} is {result}; it must be >= {minimum}")
    return result


def flag(value: Any, name: str) -> bool:
    """An INT attribute that is 0 or 1 (an integer as :func:`integer` takes it) as a bool."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer) or value not in (0, 1):
        raise KernelError(f"{name} {value!r} is not the integer 0 or 1")
    return bool(value)


def choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    """A STRING attribute that is one of ``allowed``: a str, or bytes (ONNX's form of a string attribute)
    read as UTF-8; raises KernelError naming ``name`` and the allowed values otherwise."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or value not in allowed:
        raise KernelError(f"{name} {value!r} is not one of {', '.join(repr(a) for a in allowed)}")
    return value


def ints(value: Any, name: str, count: int, default: int, minimum: int) -> list[int]:
    """An INTS attribute with ``count`` entries, each an integer (as :func:`integer` takes it) >=
    ``minimum``; absent (None or empty) means ``default`` for every entry. Raises KernelError."""
    if is_absent(value):
        return [default] * count
    values = int_values(value, name)
    if len(values) != count:
        raise KernelError(f"{name} {values!r} has {len(values)} entries; expected {count}")
    for v in values:
        if v < minimum:
            what = "positive" if minimum == 1 else f">= {minimum}"
            raise KernelError(f"{name} {values!r} contains {v!r}; every value must be {what}")
    return values
