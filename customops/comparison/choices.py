"""What ``customops compare`` looks at and how far it goes: the swapped nodes chosen (``--nodes``,
``--exclude``), NaN and inf looked for in every compared tensor (``--validate``), and the stop at the
first node where a difference starts (``--fail-fast``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SIDE_WORDS = {"builtin": "built-in", "custom": "custom"}


@dataclass
class Choices:
    """``--nodes`` (None: every supported node), ``--exclude``, ``--validate`` and ``--fail-fast``."""

    nodes: list[str] | None = None
    exclude: list[str] = field(default_factory=list)
    validate: bool = False
    fail_fast: bool = False


@dataclass
class NonFinite:
    """A compared tensor that holds NaN or inf on one side (``--validate``)."""

    tensor: str
    node: str | None
    """The swapped node whose output it is (None: a graph output)."""
    side: str
    nan: int
    posinf: int
    neginf: int

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "node": self.node,
            "side": self.side,
            "nan": self.nan,
            "posinf": self.posinf,
            "neginf": self.neginf,
        }

    def text(self) -> str:
        counts = [
            f"{n} {w}" for n, w in ((self.nan, "NaN"), (self.posinf, "+inf"), (self.neginf, "-inf")) if n
        ]
        where = f" (output of {self.node!r})" if self.node is not None and self.node != self.tensor else ""
        return f"{self.tensor!r}{where} holds {', '.join(counts)} on the {SIDE_WORDS[self.side]} side"


def non_finite(tensor: str, node: str | None, values: tuple[Any, Any]) -> list[NonFinite]:
    """The sides of one compared tensor (A, B; None: no value) that hold NaN or inf."""
    found = []
    for side, value in zip(("builtin", "custom"), values, strict=True):
        if value is None or np.asarray(value).dtype.kind not in "fc":
            continue
        arr = np.asarray(value)
        nan = int(np.count_nonzero(np.isnan(arr)))
        posinf, neginf = (
            int(np.count_nonzero(np.isposinf(arr.real))),
            int(np.count_nonzero(np.isneginf(arr.real))),
        )
        if nan or posinf or neginf:
            found.append(NonFinite(tensor, node, side, nan, posinf, neginf))
    return found


@dataclass
class Stopped:
    """``--fail-fast`` stopped after ``node``, where a difference starts or a side fails alone: the swapped
    nodes after it (``not_judged``) were neither compared nor run alone, and no amplification search ran."""

    node: str
    op: str
    not_judged: list[dict[str, str]]

    def to_json(self) -> dict[str, Any]:
        return {"stopped_at": self.node, "op": self.op, "not_judged": self.not_judged}

    def text(self) -> str:
        names = ", ".join(repr(n["node"]) for n in self.not_judged) or "none"
        return (
            f"--fail-fast: stopped at {self.node!r} [{self.op}]; {len(self.not_judged)} swapped node(s) not "
            f"judged: {names}"
        )


def stops_here(origin: str, verdict: str) -> bool:
    """Whether ``--fail-fast`` stops after a node: a difference starts there (a kernel leaves the spec) or
    one side fails on the node alone."""
    return origin == "starts-here" and verdict != "agree"
