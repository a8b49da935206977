"""The plan caches of the bound kernels (``kernel.bind(**attributes)``, what the ONNX Runtime hook calls).

A bound kernel keeps its validated plan per input shape, dtype and small inputs (scales, pads, ...) in a
dict: a hit is one ``dict.get`` on the hot path; a miss validates and stores the plan with
:func:`remember`. Inputs that cannot be part of a key raise :class:`Uncacheable`, and the call is then
planned afresh.

The hook always passes every input as an ndarray of a fixed numeric type, so the bound kernels first
try a *flat* key: the data's shape and dtype, then each small input's dtype, shape and bytes, written
out in one tuple (about twice as fast as building it input by input). Bytes identify an input only for
numbers and bools, so a flat key is stored only when :func:`flat_key_ok` says so; other inputs (None,
strings, lists) take the kernel's general key.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

PLAN_CACHE_SIZE = 64
"""Plans kept per bound kernel; the cache is emptied when it is full (a model has few shapes per node)."""

P = TypeVar("P")


class Uncacheable(Exception):
    """An input that cannot be part of a plan key (too large, or of an unhashable kind)."""


def remember(plans: dict[Any, P], key: Any, plan: P) -> P:
    """Store ``plan`` under ``key`` in ``plans`` (emptied first when it holds PLAN_CACHE_SIZE plans)."""
    if len(plans) >= PLAN_CACHE_SIZE:
        plans.clear()
    plans[key] = plan
    return plan


FLAT_KEY_LIMIT = 4096
"""Elements up to which a small input is part of a flat key."""


def flat_key_ok(*values: Any) -> bool:
    """Whether a flat key (dtype, shape and bytes of each value) identifies these inputs: ndarrays of
    numbers or bools of at most FLAT_KEY_LIMIT elements each. Checked on a miss only."""
    return all(type(v) is np.ndarray and v.dtype.kind in "biuf" and v.size <= FLAT_KEY_LIMIT for v in values)
