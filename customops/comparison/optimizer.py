"""Whether a difference of the graph outputs comes from ONNX Runtime's graph optimizer, not from a kernel.

ORT rewrites a model before it runs it. At its default level (``all``) it fuses nodes (Conv with its
activation, Gelu, LayerNorm, MatMul with Add, ...) and runs Conv, pooling and Resize in its blocked NCHWc
layout, on other kernels that sum in another order. A node of our domain is opaque to it: ORT knows
neither what it computes nor the shape of its output, so the fusions and layout changes that would reach
through it or depend on the shapes after it are not made, and the nodes next to it run on other kernels
than in the model as it is. The graph outputs then differ by a few ulp although no kernel differs.

When the outputs differ and no swapped node differs alone, compare reruns the model on both sides at
the lower levels (``basic``, then ``disable``) until the outputs pass their tolerances: a difference that
vanishes there is the optimizer's (:class:`Optimization`), and no kernel is blamed for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from customops.comparison.isolate import metrics_of
from customops.eval.judging.metrics import Criterion, same_bits
from customops.eval.running.sides import run_side
from customops.eval.running.worker import OPTIMIZATION_LEVELS

if TYPE_CHECKING:
    from onnx import ModelProto

__all__ = [
    "OPTIMIZATION_LEVELS",
    "LevelRun",
    "Optimization",
    "Rerun",
    "check",
    "lower_levels",
]

RERUN_LEVELS = ("basic", "disable")
"""The levels tried, in order, below the one asked: ``basic`` keeps only the rewrites that do not change
which kernels run next to a node (constant folding, removing redundant nodes, folding constants into Conv
weights), ``disable`` none."""


def lower_levels(asked: str) -> tuple[str, ...]:
    """The levels of :data:`RERUN_LEVELS` below ``asked``."""
    rank = OPTIMIZATION_LEVELS.index
    return tuple(level for level in RERUN_LEVELS if rank(level) < rank(asked))


@dataclass
class LevelRun:
    """Both sides' graph outputs at one graph optimization level: whether every output passes its
    tolerance, whether every output is the same bit for bit, the largest difference per output (None:
    no value), and a side's error (the run then proves nothing)."""

    level: str
    passes: bool
    identical: bool
    max_abs: dict[str, float | None]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "passes": self.passes,
            "identical": self.identical,
            "max_abs": self.max_abs,
            "error": self.error,
        }


@dataclass
class Optimization:
    """ORT's graph optimization level of the comparison (``level``) and the reruns at lower levels made
    to tell the optimizer's differences from the kernels' (``reruns``; none when not needed)."""

    level: str = "all"
    reruns: list[LevelRun] = field(default_factory=list)

    @property
    def vanishes_at(self) -> str | None:
        """The highest lower level at which the outputs pass their tolerances (None: at none tried)."""
        return next((r.level for r in self.reruns if r.passes), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "reruns": [r.to_json() for r in self.reruns],
            "vanishes_at": self.vanishes_at,
        }


@dataclass
class Rerun:
    """What a rerun needs: both models, the feed, the graph outputs and how they are judged."""

    model: ModelProto
    rewritten: ModelProto
    feed: dict[str, np.ndarray]
    outputs: Sequence[str]
    tol: Callable[[str], tuple[float | None, float | None]]
    """(rtol, atol) of a tensor by name (None: the dtype's default)."""
    stat: Callable[[str], Criterion]
    """What decides a tensor by name at its tolerances (customops.comparison.settings.Settings.criterion)."""
    providers: list[str]
    say: Callable[[str], None]


def rerun_at(r: Rerun, level: str) -> LevelRun:
    """Both sides' graph outputs at ``level``, judged as compare judges them: the built-in side's against
    ours (the relative error divided by ours)."""
    a = run_side(r.model, r.feed, custom=False, providers=r.providers, optimization=level)
    b = run_side(r.rewritten, r.feed, custom=True, optimization=level)
    if a.error or b.error:
        return LevelRun(level, False, False, {}, a.error or b.error)
    passes, identical, max_abs = True, True, {}
    for name in r.outputs:
        va, vb = a.values.get(name), b.values.get(name)
        m = metrics_of(va, vb, *r.tol(name), r.stat(name))  # as judge_outputs
        max_abs[name] = None if m is None else m.max_abs
        passes = passes and m is not None and m.passed
        identical = identical and same_bits(va, vb)
    return LevelRun(level, passes, identical, max_abs)


def check(r: Rerun, asked: str, why: str = "no swapped node differs alone") -> Optimization:
    """Rerun both sides at each level below ``asked`` until the outputs pass (see the module docstring);
    ``why``: the reason, said in the progress line."""
    found = Optimization(asked)
    for level in lower_levels(asked):
        r.say(f"{why}: running both sides at --graph-optimization-level {level}")
        run = rerun_at(r, level)
        found.reruns.append(run)
        if run.passes:
            break
    return found
