"""The plan caches of the bound kernels (each kernel module's ``bind(**attributes)``, what the ONNX Runtime hook calls).

A bound kernel keeps its validated plan per input shape, dtype and small inputs (scales, pads, ...) in a
cache made by :func:`plan_cache`, the one prologue of every bound kernel that plans: a hit is one
``dict.get`` on the hot path; a miss makes the plan and stores it with :func:`remember`. Inputs that
cannot be part of a key raise :class:`Uncacheable` (:func:`input_key`), and the call is then planned
afresh.

The hook always passes every input as an ndarray of a fixed numeric type, so a cache first looks up a
*flat* key (:func:`flat_key`): the data's shape and dtype, then each small input's dtype, shape and
bytes, written out in one tuple (about half the cost of a key built input by input). Bytes identify an
input only for numbers and bools, so on a miss :func:`planned` stores the plan under the flat key only
when :func:`flat_key_ok` says so; other inputs (None, strings, lists) take the general key (the data's
shape and dtype, then :func:`input_key` of each small input). A kernel whose plans depend on shapes
alone gives :func:`plan_cache` its own key.

A plan may hold a compiled loop or its absence, decided when it was made: every cache of
:func:`plan_cache` is registered, and :func:`forget_all` (called when
:func:`customops.accel.jit.numpy_only` switches the compiled paths) empties them all; a plan made while
the switch flipped is not kept.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

PLAN_CACHE_SIZE = 64
"""Plans kept per bound kernel; the cache is emptied when it is full (a model has few shapes per node)."""

P = TypeVar("P")

_lock = threading.Lock()
_tracked: weakref.WeakKeyDictionary[Callable[..., Any], dict[Any, Any]] = weakref.WeakKeyDictionary()
"""Every cache of :func:`plan_cache`, by the lookup that owns it (kept for as long as that lives)."""
_epoch = [0]
"""How many times :func:`forget_all` has run: a plan made across a change is not kept."""


def forget_all() -> None:
    """Empty every cache of :func:`plan_cache` (the compiled paths were switched on or off)."""
    with _lock:
        _epoch[0] += 1
        for plans in list(_tracked.values()):
            plans.clear()


class Uncacheable(Exception):
    """An input that cannot be part of a plan key (too large, or of an unhashable kind)."""


def remember(plans: dict[Any, P], key: Any, plan: P, made: int) -> P:
    """Store ``plan`` under ``key`` in ``plans`` (emptied first when it holds PLAN_CACHE_SIZE plans),
    unless :func:`forget_all` has run since the epoch was ``made`` (the plan may then hold the other
    decision: it serves the call that made it only)."""
    with _lock:
        if made == _epoch[0]:
            if len(plans) >= PLAN_CACHE_SIZE:
                plans.clear()
            plans[key] = plan
    return plan


FLAT_KEY_LIMIT = 4096
"""Elements up to which a small input is part of a flat key."""

_ABSENT: Any = object()


def flat_key(data: Any, a: Any, b: Any = _ABSENT, c: Any = _ABSENT) -> tuple[Any, ...] | None:
    """The flat key of a call with the data array ``data`` and one to three small inputs, or None when
    one of them is not an ndarray (None, a list). Whether it may be stored is :func:`flat_key_ok`'s."""
    try:
        if c is not _ABSENT:
            return (
                data.shape, data.dtype, a.dtype, a.shape, b.dtype, b.shape, c.dtype, c.shape, a.tobytes(),
                b.tobytes(), c.tobytes(),
            )  # fmt: skip
        if b is not _ABSENT:
            return (data.shape, data.dtype, a.dtype, a.shape, b.dtype, b.shape, a.tobytes(), b.tobytes())
        return (data.shape, data.dtype, a.dtype, a.shape, a.tobytes())
    except AttributeError:
        return None


def flat_key_ok(*values: Any) -> bool:
    """Whether a flat key (dtype, shape and bytes of each value) identifies these inputs: ndarrays of
    numbers or bools of at most FLAT_KEY_LIMIT elements each. Checked on a miss only."""
    return all(type(v) is np.ndarray and v.dtype.kind in "biuf" and v.size <= FLAT_KEY_LIMIT for v in values)


def planned(
    plans: dict[Any, P],
    key: tuple[Any, ...] | None,
    values: tuple[Any, ...],
    general_key: Callable[[], Any],
    make: Callable[[], P],
) -> P:
    """The plan of a call whose flat ``key`` (:func:`flat_key` of the data and ``values``) missed: kept
    under that key when the values allow it, else under ``general_key()`` (which may already hold it);
    made with ``make()`` and not kept when ``general_key`` raises Uncacheable (nor when the compiled
    paths were switched meanwhile: :func:`remember`)."""
    made = _epoch[0]
    if key is None or not flat_key_ok(*values):
        try:
            key = general_key()
        except Uncacheable:
            return make()
        plan = plans.get(key)
        if plan is not None:
            return plan
    return remember(plans, key, make(), made)


def input_key(value: Any) -> Any:
    """The general key of a small input: None, or an ndarray of at most FLAT_KEY_LIMIT elements of a
    fixed-size type or of strings; raises Uncacheable for anything else."""
    if value is None:
        return None
    if type(value) is np.ndarray and value.size <= FLAT_KEY_LIMIT:
        if value.dtype.kind != "O":
            return (value.dtype, value.shape, value.tobytes())
        items = tuple(value.flat)
        if all(type(v) is str for v in items):
            return (value.dtype, value.shape, items)
    raise Uncacheable


def plan_cache(make: Callable[..., Any], key: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A bound kernel's plan lookup: ``plan(data, *small)`` is the plan ``make(data, *small)`` made for
    the data array and its one to three small inputs, kept under their flat key (the general key when
    the flat one cannot tell them apart; not kept when they are Uncacheable). With ``key``,
    ``plan(*arrays)`` keeps it under ``key(*arrays)`` instead, and a plan of None (nothing to keep) is
    made again on every call. The cache is registered for :func:`forget_all` as long as ``plan`` lives."""
    plans: dict[Any, Any] = {}

    def plan(data: np.ndarray, *small: Any) -> Any:
        flat = flat_key(data, *small)
        found = plans.get(flat)
        if found is None:
            found = planned(
                plans,
                flat,
                small,
                lambda: (data.shape, data.dtype, *map(input_key, small)),
                lambda: make(data, *small),
            )
        return found

    def keyed(*arrays: Any) -> Any:
        at = key(*arrays)  # type: ignore[misc]
        found = plans.get(at)
        if found is None:
            made = _epoch[0]
            found = make(*arrays)
            if found is not None:
                remember(plans, at, found, made)
        return found

    lookup = plan if key is None else keyed
    with _lock:
        _tracked[lookup] = plans
    return lookup
