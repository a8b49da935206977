"""A fuzz campaign: which cases (targets, indices, shards), running them, triage, and the summary.

Case ``g`` of a campaign goes to the target ``ops[g % len(ops)]``, at that op's version number
``(g // len(ops)) % len(versions)``, and is drawn from ``(seed, g, op, version)`` alone; shard ``I/N``
runs the indices ``g`` with ``g % N == I``. So the same seed, targets and case count give the same cases
and the same findings whatever ``--jobs`` is, and shards merged give the whole campaign.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from customops.eval.judging.signature import Finding, Signature
from customops.eval.running.runner import Pool, parallel
from customops.fuzz.dispatch import make_case
from customops.fuzz.summary import EXAMPLES, CaseCounts, GroupSummary
from customops.fuzz.triage import Evaluation, Shrunk, evaluate, observed, shrink, signature_of
from customops.registry import OpVersion


@dataclass
class Plan:
    """What a campaign runs."""

    targets: list[OpVersion]
    seed: int
    cases: int
    shard: tuple[int, int] = (0, 1)
    indices: list[int] | None = None
    """Only these indices (``--index``), else every index of the shard below ``cases``."""

    def ops(self) -> list[str]:
        return list(dict.fromkeys(t.op for t in self.targets))

    def target(self, g: int) -> OpVersion:
        ops = self.ops()
        op = ops[g % len(ops)]
        versions = [t for t in self.targets if t.op == op]
        return versions[(g // len(ops)) % len(versions)]

    def work(self) -> list[int]:
        if self.indices is not None:
            return list(self.indices)
        i, n = self.shard
        return [g for g in range(self.cases) if g % n == i]


@dataclass
class CaseRecord:
    """What became of one index."""

    index: int
    target: str
    dtype: str
    """T, or a run case's types in a word (customops.fuzz.case.Case.types: each type variable's)."""
    status: str
    """'run', 'skipped' (``note`` says why) or 'not-run' (the time budget ran out first)."""
    valid: bool | None = None
    reason: str | None = None
    findings: list[Finding] = field(default_factory=list)
    evaluation: Evaluation | None = None
    note: str = ""


class Progress:
    """Progress on stderr: a bar on a terminal, otherwise a line every 10 s and one at the end."""

    def __init__(self, total: int, label: str, stream: Any = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.last = self.started
        self.last_step = -1

    def update(self, done: int, extra: str = "") -> None:
        now = time.monotonic()
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        if self.tty:
            if now - self.last < 0.1 and done < self.total:
                return
            width = 28
            filled = int(width * done / self.total)
            eta = (self.total - done) / rate if rate > 0 else 0.0
            line = (
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                f"{extra} {rate:.1f}/s ETA {int(eta) // 60}:{int(eta) % 60:02d}"
            )
            self.stream.write(line.ljust(100)[:120])
            self.stream.flush()
            self.last = now
            return
        if done == self.total or now - self.last >= 10:
            if done == self.total and self.last_step == done:
                return
            self.stream.write(f"{self.label}: {done}/{self.total} {extra} ({rate:.1f}/s, {elapsed:.0f} s)\n")
            self.stream.flush()
            self.last_step, self.last = done, now

    def done(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_cases(plan: Plan, pool: Pool, jobs: int, budget: float | None) -> list[CaseRecord]:
    """Run every index of the plan (until the time budget runs out); records in index order."""
    work = plan.work()
    started = time.monotonic()
    progress = Progress(len(work), "fuzz")
    done = [0, 0]
    lock = threading.Lock()

    def one(g: int) -> CaseRecord:
        opv = plan.target(g)
        if budget is not None and time.monotonic() - started > budget:
            record = CaseRecord(g, opv.key, "", "not-run")
        else:
            drawn = make_case(opv, plan.seed, g)
            if drawn.case is None or drawn.verdict is None:
                record = CaseRecord(g, opv.key, drawn.dtype, "skipped", note=drawn.skipped or "")
            else:
                ev = evaluate(pool, drawn.case, drawn.verdict, tag="case")
                counted = [f for f in ev.findings if f.counts]
                record = CaseRecord(
                    g,
                    opv.key,
                    drawn.case.types,
                    "run",
                    drawn.verdict.valid,
                    drawn.verdict.reason,
                    ev.findings,
                    ev if ev.findings else None,
                )
                with lock:
                    done[1] += len(counted)
        with lock:
            done[0] += 1
            progress.update(done[0], f"cases, {done[1]} findings")
        return record

    records = parallel(work, one, jobs)
    progress.done()
    return records


@dataclass
class Group:
    """Findings sharing a signature, with the shrunk representative."""

    signature: Signature
    members: list[CaseRecord]
    shrunk: Shrunk | None = None
    dirname: str = ""

    @property
    def count(self) -> int:
        return len(self.members)


def triage(
    records: list[CaseRecord], pool: Pool, jobs: int, shrink_budget: int
) -> tuple[list[Group], list[Group]]:
    """Signatures of every finding, groups, shrunk representatives; returns (groups, reference notes)."""
    items = [(r, f) for r in records for f in r.findings if r.evaluation is not None]
    counted = [(r, f) for r, f in items if f.counts]
    notes = [(r, f) for r, f in items if not f.counts]
    progress = Progress(len(counted), "triage")
    done = [0]
    lock = threading.Lock()

    def sign(item: tuple[CaseRecord, Finding]) -> Signature:
        r, f = item
        assert r.evaluation is not None
        sig = signature_of(pool, r.evaluation, f)
        with lock:
            done[0] += 1
            progress.update(done[0], "signatures")
        return sig

    sigs = parallel(counted, sign, jobs)
    progress.done()
    groups = _group([(r, s) for (r, _), s in zip(counted, sigs, strict=True)])
    note_groups = _group(
        [
            (r, Signature(r.evaluation.case.op, r.evaluation.case.version, f.side, f.kind, f.detail))
            for r, f in notes
        ]  # type: ignore[union-attr]
    )
    if groups:
        progress = Progress(len(groups), "shrink")
        done[0] = 0

        def shrink_group(group: Group) -> Shrunk:
            first = group.members[0].evaluation
            assert first is not None
            result = shrink(pool, group.signature, first.case, shrink_budget)
            with lock:
                done[0] += 1
                progress.update(done[0], "groups")
            return result

        for group, result in zip(groups, parallel(groups, shrink_group, jobs), strict=True):
            group.shrunk = result
        progress.done()
    return groups, note_groups


def _group(pairs: list[tuple[CaseRecord, Signature]]) -> list[Group]:
    by_key: dict[str, Group] = {}
    for record, sig in pairs:
        g = by_key.get(sig.key)
        if g is None:
            by_key[sig.key] = Group(sig, [record])
        elif g.members[-1] is not record:
            g.members.append(record)
    groups = sorted(
        by_key.values(), key=lambda g: (g.signature.op, g.signature.version, -g.count, g.members[0].index)
    )
    return groups


def case_counts(records: list[CaseRecord]) -> CaseCounts:
    """Counts of the cases: run, valid, invalid, skipped by reason, not run, per target."""
    run = [r for r in records if r.status == "run"]
    skipped = Counter(f"{r.dtype}: {r.note}" for r in records if r.status == "skipped")
    by_target: dict[str, dict[str, int]] = {}
    for r in records:
        row = by_target.setdefault(r.target, {"run": 0, "skipped": 0, "not_run": 0, "with_findings": 0})
        key = "not_run" if r.status == "not-run" else r.status
        row[key] += 1
        if any(f.counts for f in r.findings):
            row["with_findings"] += 1
    return CaseCounts(
        total=len(records),
        run=len(run),
        valid=sum(1 for r in run if r.valid),
        invalid=sum(1 for r in run if not r.valid),
        invalid_reasons=dict(sorted(Counter(r.reason for r in run if not r.valid).items())),
        skipped=dict(sorted(skipped.items())),
        not_run=sum(1 for r in records if r.status == "not-run"),
        by_target=dict(sorted(by_target.items())),
    )


def group_summary(group: Group, seed: int, rerun: list[str]) -> GroupSummary:
    """The summary entry of a group (its known labels are set by the caller)."""
    sig = group.signature
    entry = GroupSummary(
        id=sig.id,
        dir=group.dirname or None,
        signature=sig,
        text=sig.text(),
        counts=sig.finding.counts,
        count=group.count,
        examples=[r.index for r in group.members[:EXAMPLES]],
        dtypes=dict(sorted(Counter(r.dtype for r in group.members).items())),
        ranks=sorted({int(r.evaluation.case.main.ndim) for r in group.members if r.evaluation is not None}),
        seed=seed,
        rerun=rerun,
    )
    if group.shrunk is not None:
        from customops.eval.judging.facts import facts

        ev = group.shrunk.evaluation
        entry.facts = facts(observed(ev))
        if group.shrunk.needs:
            entry.facts["needs"] = list(group.shrunk.needs)
        entry.representative = {
            "index": group.members[0].index,
            "case": ev.case.describe(),
            "valid": ev.verdict.valid,
            "invalid_reason": ev.verdict.reason,
            "steps": group.shrunk.steps,
            "shrink_runs": group.shrunk.runs,
            "reproduced": group.shrunk.reproduced,
        }
    return entry


def outcome_summary(ev: Evaluation) -> dict[str, Any]:
    """Per side: status, message, and the output (shape, and values when small)."""
    out: dict[str, Any] = {}
    for side, o in ev.outcomes.items():
        item: dict[str, Any] = {"status": o.status}
        if o.message:
            item["message"] = o.message
        if o.value is not None:
            import numpy as np

            v = np.asarray(o.value)
            item["shape"] = list(v.shape)
            if v.size <= 24:
                item["values"] = [str(x) if v.dtype == object else _num(x) for x in v.ravel().tolist()]
        out[side] = item
    return out


def _num(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x
