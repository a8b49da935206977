"""The culprits when no node differs alone: the swaps that move the outputs.

A graph output can differ although every swapped node agrees with ORT's node within tolerance: a
difference of a few ulp at one node is amplified downstream (a large gain before a sin, a threshold, an
argmax). The model is then run with one swapped node at a time (the others on ORT's kernels), and each
swap is ranked by how far it moves the graph outputs. With many swapped nodes, groups are tried first and
only a group that moves an output is split (bisection), so the cost is a few model runs per culprit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from customops.comparison.isolate import metrics_of
from customops.eval.judging.metrics import Criterion
from customops.eval.running.sides import run_side

if TYPE_CHECKING:
    from onnx import ModelProto

SINGLE_LIMIT = 8
"""Swapped nodes tried one at a time without bisecting first."""


@dataclass
class Effect:
    """The graph outputs with only ``nodes`` swapped: the largest absolute difference from the built-in
    run per output (None: no value), and whether every output still passes its tolerance."""

    nodes: list[str]
    ops: list[str]
    max_abs: dict[str, float | None]
    passes: bool

    @property
    def size(self) -> float:
        """The largest difference over the outputs (what the effects are ranked by)."""
        values = [v for v in self.max_abs.values() if v is not None]
        return max(values, default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "ops": self.ops, "max_abs": self.max_abs, "passes": self.passes}


@dataclass
class CulpritSearch:
    """What the culprit search needs: the model, its feed, the built-in outputs and the tolerances."""

    model: ModelProto
    feed: dict[str, np.ndarray]
    builtin: dict[str, np.ndarray]
    tol: Callable[[str], tuple[float | None, float | None]]
    """(rtol, atol) of a tensor by name (None: the dtype's default)."""
    say: Callable[[str], None]
    stat: Callable[[str], Criterion] = lambda _name: Criterion()
    """What decides a tensor by name at its tolerances (customops.comparison.settings.Settings.criterion)."""
    runs: int = 0
    optimization: str = "all"
    """ORT's graph optimization level of the runs (customops.eval.running.worker.OPTIMIZATION_LEVELS)."""


def effect_of(search: CulpritSearch, nodes: Sequence[tuple[str, str]]) -> Effect:
    """Run the model with only ``nodes`` (name, op) swapped, and measure its outputs against the
    built-in run."""
    from customops.model.rewriter import rewrite_model

    search.runs += 1
    names = [name for name, _ in nodes]
    rewritten = rewrite_model(search.model, nodes=names).model
    run = run_side(rewritten, search.feed, custom=True, optimization=search.optimization)
    max_abs: dict[str, float | None] = {}
    passes = run.error is None
    for name, expected in search.builtin.items():
        m = metrics_of(
            expected, run.values.get(name), *search.tol(name), search.stat(name)
        )  # as judge_outputs
        max_abs[name] = None if m is None else m.max_abs
        passes = passes and m is not None and m.passed
    return Effect(names, [op for _, op in nodes], max_abs, passes)


def culprits(search: CulpritSearch, nodes: Sequence[tuple[str, str]]) -> list[Effect]:
    """The swaps (single nodes where they can be told apart, else the smallest group found) that move
    an output past its tolerance, largest effect first."""
    found = _search(search, list(nodes))
    return sorted(found, key=lambda e: -e.size)


def _search(search: CulpritSearch, nodes: list[tuple[str, str]], whole: Effect | None = None) -> list[Effect]:
    """The culprits among ``nodes``; ``whole``: their effect swapped together, when already measured."""
    if len(nodes) <= SINGLE_LIMIT:
        singles = [effect_of(search, [n]) for n in nodes]
        moving = [e for e in singles if not e.passes]
        if moving or len(nodes) == 1:
            return moving
        together = whole or effect_of(search, nodes)  # only their combination moves an output
        return [] if together.passes else [together]
    half = len(nodes) // 2
    found = []
    for group in (nodes[:half], nodes[half:]):
        search.say(f"bisecting: {len(group)} swapped node(s) at a time")
        effect = effect_of(search, group)
        if not effect.passes:
            found.extend(_search(search, group, effect))
    if not found:
        together = whole or effect_of(search, nodes)
        if not together.passes:
            found.append(together)
    return found
