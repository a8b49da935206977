"""A campaign's results as typed data: what summary.json holds (:class:`CampaignSummary`).

A campaign builds these (customops.fuzz.campaign, customops.fuzz.command), the table, the Markdown page
(customops.fuzz.report) and the merge (customops.fuzz.merge) read them, and each ``to_json()`` gives the
summary.json form, key for key and in the order the fuzzer has always written it. ``from_json()`` takes only
what :func:`customops.fuzz.files.read_summary` has checked against its schema (it does not check again):
summary.json is untrusted data, and files.py is the one place that checks it. Optional fields the file may
lack are None here and left out of ``to_json()`` (but a group's ``dir`` and a campaign's ``indices``, which
the fuzzer writes as null, are always written). So what the fuzzer writes reads back and writes out byte for
byte; a hand-edited file comes out with its keys in the fuzzer's order, a missing ``indices`` as null and a
group's null ``seed`` left out.

A group's ``facts`` (what the labelling rules read, customops.eval.judging.facts and
customops.eval.judging.deviations) and ``representative`` (a description of the shrunk case) stay JSON
objects: they are free-form in the file, only passed through by the merge, and read key by key by the rules,
which tolerate any shape.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from customops.eval.judging.signature import Signature

EXAMPLES = 10
"""How many example case indices a group keeps."""

VERSION_KEYS = ("tool", "ort_version", "onnx_version", "customops_version", "numpy_version")


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """Set ``out[key]`` unless ``value`` is None (an optional field the file did not have)."""
    if value is not None:
        out[key] = value


@dataclass
class Versions:
    """The tool and the installed versions a campaign ran with (only ``ort_version`` is required)."""

    ort_version: str
    tool: str | None = None
    onnx_version: str | None = None
    customops_version: str | None = None
    numpy_version: str | None = None

    def to_json(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in VERSION_KEYS if getattr(self, k) is not None}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Versions:
        return Versions(**{k: d[k] for k in VERSION_KEYS if k in d})


def _add(into: dict[str, Any], other: dict[str, Any]) -> None:
    """Add the counts of ``other`` into ``into``, key by key (nested maps too), keeping first-seen order."""
    for k, v in other.items():
        if isinstance(v, dict):
            _add(into.setdefault(k, {}), v)
        else:
            into[k] = into.get(k, 0) + v


@dataclass
class CaseCounts:
    """Counts of a campaign's cases: run (valid, invalid by reason), skipped by reason, not run, and
    per target (run, skipped, not_run, with_findings)."""

    total: int
    run: int
    valid: int
    invalid: int
    skipped: dict[str, int]
    not_run: int
    invalid_reasons: dict[str, int] | None = None
    by_target: dict[str, dict[str, int]] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "total": self.total,
            "run": self.run,
            "valid": self.valid,
            "invalid": self.invalid,
        }
        _put(out, "invalid_reasons", self.invalid_reasons)
        out.update(skipped=self.skipped, not_run=self.not_run)
        _put(out, "by_target", self.by_target)
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> CaseCounts:
        return CaseCounts(
            d["total"],
            d["run"],
            d["valid"],
            d["invalid"],
            dict(d["skipped"]),
            d["not_run"],
            copy.deepcopy(d.get("invalid_reasons")),
            copy.deepcopy(d.get("by_target")),
        )

    def add(self, other: CaseCounts) -> None:
        """Add ``other``'s counts (those of another campaign) to these."""
        self.total += other.total
        self.run += other.run
        self.valid += other.valid
        self.invalid += other.invalid
        self.not_run += other.not_run
        _add(self.skipped, other.skipped)
        for name in ("invalid_reasons", "by_target"):
            theirs = getattr(other, name)
            if theirs is not None:
                if getattr(self, name) is None:
                    setattr(self, name, {})
                _add(getattr(self, name), theirs)


@dataclass
class CampaignInfo:
    """The summary's record of one campaign: its command and plan, its counts and its times."""

    command: str
    targets: list[str]
    seed: int
    cases: int
    run: int
    skipped: int
    groups: int
    findings: int
    seconds: float
    shard: str | None = None
    indices: list[int] | None = None
    """Only these case indices (``--index``); None: every index of the shard (written as null)."""
    skipped_reasons: dict[str, int] | None = None
    not_run: int | None = None
    seconds_cases: float | None = None
    jobs: int | None = None

    @property
    def key(self) -> str:
        """What makes a campaign: the same targets, seed, cases, shard and indices draw the same cases."""
        return json.dumps([self.targets, self.seed, self.cases, self.shard, self.indices])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": self.command,
            "targets": self.targets,
            "seed": self.seed,
            "cases": self.cases,
        }
        _put(out, "shard", self.shard)
        out.update(indices=self.indices, run=self.run, skipped=self.skipped)
        _put(out, "skipped_reasons", self.skipped_reasons)
        _put(out, "not_run", self.not_run)
        out.update(groups=self.groups, findings=self.findings, seconds=self.seconds)
        _put(out, "seconds_cases", self.seconds_cases)
        _put(out, "jobs", self.jobs)
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> CampaignInfo:
        return CampaignInfo(**copy.deepcopy(d))


@dataclass
class ReferenceNote:
    """Cases where onnx.reference alone differs, sharing a signature (a note, not a finding)."""

    signature: Signature
    count: int
    examples: list[int]
    id: str | None = None
    text: str | None = None
    dtypes: dict[str, int] | None = None
    ranks: list[int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "id", self.id)
        out["signature"] = self.signature.to_json()
        _put(out, "text", self.text)
        out.update(count=self.count, examples=self.examples)
        _put(out, "dtypes", self.dtypes)
        _put(out, "ranks", self.ranks)
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> ReferenceNote:
        fields = copy.deepcopy(d)
        return ReferenceNote(**{**fields, "signature": Signature.from_json(d["signature"])})


@dataclass
class GroupSummary:
    """The summary entry of a group of findings sharing a signature: its reproducer directory, counts,
    example indices, element types and ranks of its members, the commands that rerun it, the facts of
    its shrunk representative and its known labels."""

    id: str
    dir: str | None
    signature: Signature
    count: int
    examples: list[int]
    text: str | None = None
    counts: bool | None = None
    dtypes: dict[str, int] | None = None
    ranks: list[int] | None = None
    seed: int | None = None
    rerun: list[str] | None = None
    facts: dict[str, Any] | None = None
    representative: dict[str, Any] | None = None
    known: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "dir": self.dir, "signature": self.signature.to_json()}
        _put(out, "text", self.text)
        _put(out, "counts", self.counts)
        out.update(count=self.count, examples=self.examples)
        for name in ("dtypes", "ranks", "seed", "rerun", "facts", "representative", "known"):
            _put(out, name, getattr(self, name))
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> GroupSummary:
        fields = copy.deepcopy(d)
        return GroupSummary(**{**fields, "signature": Signature.from_json(d["signature"])})

    def note(self) -> ReferenceNote:
        """This group as a reference note (the fields a note keeps)."""
        return ReferenceNote(self.signature, self.count, self.examples, self.id, self.text, self.dtypes)


def combine(into: GroupSummary | ReferenceNote, other: GroupSummary | ReferenceNote) -> None:
    """Add ``other``'s members (of the same signature, from another campaign) to ``into``: counts,
    the lowest example indices, element types, ranks."""
    into.count += other.count
    into.examples = sorted(set(into.examples) | set(other.examples))[:EXAMPLES]
    dtypes = Counter(into.dtypes or {})
    dtypes.update(other.dtypes or {})
    into.dtypes = dict(sorted(dtypes.items()))
    if into.ranks is not None or other.ranks is not None:
        into.ranks = sorted(set(into.ranks or []) | set(other.ranks or []))


@dataclass
class CampaignSummary:
    """summary.json: the versions, each campaign's record, the case counts, the groups of findings
    (with their reproducers) and the reference notes."""

    versions: Versions
    campaigns: list[CampaignInfo]
    cases: CaseCounts
    groups: list[GroupSummary]
    reference_notes: list[ReferenceNote]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.versions.to_json(),
            "campaigns": [c.to_json() for c in self.campaigns],
            "cases": self.cases.to_json(),
            "groups": [g.to_json() for g in self.groups],
            "reference_notes": [n.to_json() for n in self.reference_notes],
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> CampaignSummary:
        return CampaignSummary(
            Versions.from_json(d),
            [CampaignInfo.from_json(c) for c in d["campaigns"]],
            CaseCounts.from_json(d["cases"]),
            [GroupSummary.from_json(g) for g in d["groups"]],
            [ReferenceNote.from_json(n) for n in d.get("reference_notes", [])],
        )

    @property
    def findings(self) -> int:
        return sum(g.count for g in self.groups)

    def by_label(self) -> dict[str, list[GroupSummary]]:
        """The groups carrying each known label, labels in first-seen order."""
        out: dict[str, list[GroupSummary]] = {}
        for g in self.groups:
            for label in g.known or []:
                out.setdefault(label, []).append(g)
        return out
