"""What a difference is, in the words fuzz and compare share: a :class:`Finding` (the odd side, the kind of
difference, its detail), a :class:`Signature` (a finding of one op version with the features it needs) and a
:class:`Subject` (a signature with the facts of its case, what customops.eval.judging.deviations labels).

Sides (customops.eval.judging.attribution): ``builtin``, ``custom``, ``three-way``, ``unknown`` (the reference
could not vote or agrees with both) and ``reference`` (the reference's own deviations, notes rather than
findings). Kinds: ``value``, ``shape``, ``dtype`` (both ORT's kernel and ours ran, their outputs differ),
``rejects-valid``, ``accepts-invalid``, ``crash``, ``hang``. The detail is the normalized error
(rejections, crashes) or the rule an invalid case breaks. Features are named as the fuzzer's spaces name
them (customops.fuzz.spaces): ``name=value`` for an attribute set, ``dtype=T``, ``special-values``...
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One disagreement on one case: the odd side, the kind of difference and its detail."""

    side: str
    kind: str
    detail: str = ""

    @property
    def counts(self) -> bool:
        """False for the reference's own deviations (kept as notes)."""
        return self.side != "reference"


@dataclass(frozen=True)
class Signature:
    """What a group of findings (or compare's node) shares: (op, version), the odd side, the kind, the
    detail and the features that matter."""

    op: str
    version: int
    side: str
    kind: str
    detail: str = ""
    features: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return json.dumps([self.op, self.version, self.side, self.kind, self.detail, list(self.features)])

    @property
    def id(self) -> str:
        return hashlib.sha1(self.key.encode()).hexdigest()[:10]

    @property
    def finding(self) -> Finding:
        return Finding(self.side, self.kind, self.detail)

    def text(self) -> str:
        parts = [f"{self.op}-{self.version}", self.side, self.kind]
        if self.detail:
            parts.append(f"({self.detail})")
        if self.features:
            parts.append("[" + ", ".join(self.features) + "]")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "version": self.version,
            "side": self.side,
            "kind": self.kind,
            "detail": self.detail,
            "features": list(self.features),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Signature:
        return Signature(d["op"], int(d["version"]), d["side"], d["kind"], d["detail"], tuple(d["features"]))


@dataclass
class Subject:
    """A difference to label: its signature, the facts of its case (customops.eval.judging.facts, or as read
    back from a summary.json: any JSON) and the ranks of a fuzz group's members (None for a single case, whose
    rank is in ``facts``). A fuzz group's summary entry (customops.fuzz.summary.GroupSummary) has the same
    three fields and is labelled as it is."""

    signature: Signature
    facts: dict[str, Any] | None = None
    ranks: list[int] | None = None
