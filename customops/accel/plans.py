"""The plan caches of the bound kernels (each kernel module's ``bind(**attributes)``, what the ONNX Runtime hook calls).

A bound kernel keeps its validated plan per input shape, dtype and small inputs (scales, pads, ...) in a
dict: a hit is one ``dict.get`` on the hot path; a miss validates and stores the plan with
:func:`remember`. Inputs that cannot be part of a key raise :class:`Uncacheable`, and the call is then
planned afresh.

The hook always passes every input as an ndarray of a fixed numeric type, so the bound kernels first
look up a *flat* key (:func:`flat_key`): the data's shape and dtype, then each small input's dtype,
shape and bytes, written out in one tuple (about half the cost of a key built input by input). Bytes
identify an input only for numbers and bools, so on a miss :func:`planned` stores the plan under the
flat key only when :func:`flat_key_ok` says so; other inputs (None, strings, lists) take the kernel's
general key.

A plan may hold a compiled loop or its absence, decided when it was made: a bound kernel whose plans
do registers its cache with :func:`tracked`, and :func:`forget_all` (called when
:func:`customops.accel.jit.numpy_only` switches the compiled paths) empties every registered cache; a
plan made while the switch flipped is not kept.
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
F = TypeVar("F", bound=Callable[..., Any])

_lock = threading.Lock()
_tracked: weakref.WeakKeyDictionary[Callable[..., Any], dict[Any, Any]] = weakref.WeakKeyDictionary()
_epoch = [0]
"""How many times :func:`forget_all` has run: a plan made across a change is not kept."""


def tracked(plans: dict[Any, Any]) -> Callable[[F], F]:
    """Decorate a bound kernel whose plan cache ``plans`` holds compiled decisions: :func:`forget_all`
    empties the cache for as long as the kernel lives."""

    def register(bound: F) -> F:
        with _lock:
            _tracked[bound] = plans
        return bound

    return register


def forget_all() -> None:
    """Empty every cache registered with :func:`tracked` (the compiled paths were switched on or off)."""
    with _lock:
        _epoch[0] += 1
        for plans in list(_tracked.values()):
            plans.clear()


def epoch() -> int:
    """The plan caches' current epoch: pass it to :func:`remember` with a plan made after reading it."""
    return _epoch[0]


class Uncacheable(Exception):
    """An input that cannot be part of a plan key (too large, or of an unhashable kind)."""


def remember(plans: dict[Any, P], key: Any, plan: P, made: int) -> P:
    """Store ``plan`` under ``key`` in ``plans`` (emptied first when it holds PLAN_CACHE_SIZE plans),
    unless :func:`forget_all` has run since :func:`epoch` was ``made`` (the plan may then hold the
    other decision: it serves the call that made it only)."""
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
