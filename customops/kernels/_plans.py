"""The plan caches of the bound kernels (``kernel.bind(**attributes)``, what the ONNX Runtime hook calls).

A bound kernel keeps its validated plan per input shape, dtype and small inputs (scales, pads, ...) in a
dict: a hit is one ``dict.get`` on the hot path; a miss validates and stores the plan with
:func:`remember`. Inputs that cannot be part of a key raise :class:`Uncacheable`, and the call is then
planned afresh.
"""

from __future__ import annotations

from typing import Any, TypeVar

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
