"""customops fuzz, what a wrong answer would hide: ``classify`` names the right side and kind for every
combination of outcomes; a merge of shards is the unsharded campaign's summary field by field (campaigns,
counts, groups, reference notes, reproducer files); the committed findings carry exactly the labels the
current rules give them; ``fuzz replay`` says GONE and exits 0 when the recorded finding is not what the
sides do now.

Every subprocess inherits this process's environment and working directory, so running this file from
another checkout with ``PYTHONPATH`` set to it tests that checkout's code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from customops.eval.judging.signature import Finding
from customops.eval.running.runner import Outcome
from customops.fuzz.spaces.base import Verdict
from customops.fuzz.triage import classify, error_key
from tests.helpers import run_cli, strict_json

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# classify: every side and kind, from outcomes built by hand


def ok(*values: float, dtype: Any = np.float32) -> Outcome:
    return Outcome("ok", np.array(values, dtype))


def rejects(message: str) -> Outcome:
    return Outcome("error", message=message)


CRASH = Outcome("crash", message="killed by SIGABRT: free(): invalid pointer")
HANG = Outcome("hang", message="no answer within the time limit")
ORT_NO_KERNEL = "load: NOT_IMPLEMENTED : Could not find an implementation for Resize(19) node with name 'n'"
OURS_REJECT = "run: KernelError: Resize-19 node 'n': scales 0 must be positive"
REF_REJECT = "run: ValueError: index can't contain negative values"

VALID = Verdict(None, (3,))
INVALID = Verdict("pads-negative")

X = ok(1, 2, 3)  # the output two sides agree on
Y = ok(1, 2, 4)  # another value
Z = ok(1, 2, 5)  # a third value
SHORT = ok(1, 2)  # another shape
WIDE = ok(1, 2, 3, dtype=np.float64)  # X's values in another element type
NEAR_LOW, NEAR_MID, NEAR_HIGH = ok(1.0), ok(1.0 + 1.5e-5), ok(1.0 + 3e-5)
"""float32 tolerance is 1e-5 + 1e-5 * |b| = 2e-5 at 1: LOW and HIGH differ, MID agrees with both."""

# (id, verdict, builtin, custom, reference, expected findings as (side, kind, detail))
TABLE: list[tuple[str, Verdict, Outcome, Outcome, Outcome, list[tuple[str, str, str]]]] = [
    ("all-agree", VALID, X, X, X, []),
    # our kernel is the odd one out
    ("custom-value", VALID, X, Y, X, [("custom", "value", "")]),
    ("custom-shape", VALID, X, SHORT, X, [("custom", "shape", "")]),
    ("custom-dtype", VALID, X, WIDE, X, [("custom", "dtype", "")]),
    ("custom-rejects-valid", VALID, X, rejects(OURS_REJECT), X, [("custom", "rejects-valid", OURS_REJECT)]),
    ("custom-accepts-invalid", INVALID, rejects(ORT_NO_KERNEL), X, rejects(REF_REJECT), [("custom", "accepts-invalid", "pads-negative")]),
    ("custom-crash", VALID, X, CRASH, X, [("custom", "crash", CRASH.message)]),
    ("custom-hang", VALID, X, HANG, X, [("custom", "hang", HANG.message)]),
    ("custom-crash-hides-a-difference", VALID, X, CRASH, Y, [("custom", "crash", CRASH.message)]),
    ("custom-hang-on-invalid", INVALID, X, HANG, X, [("custom", "hang", HANG.message)]),
    # ORT's kernel is the odd one out
    ("builtin-value", VALID, Y, X, X, [("builtin", "value", "")]),
    ("builtin-shape", VALID, SHORT, X, X, [("builtin", "shape", "")]),
    ("builtin-dtype", VALID, WIDE, X, X, [("builtin", "dtype", "")]),
    ("builtin-rejects-valid", VALID, rejects(ORT_NO_KERNEL), X, X, [("builtin", "rejects-valid", ORT_NO_KERNEL)]),
    ("builtin-accepts-invalid", INVALID, X, rejects(OURS_REJECT), rejects(REF_REJECT), [("builtin", "accepts-invalid", "pads-negative")]),
    ("builtin-crash", VALID, CRASH, X, X, [("builtin", "crash", CRASH.message)]),
    ("builtin-hang", VALID, HANG, X, X, [("builtin", "hang", HANG.message)]),
    # several at once
    ("both-reject-valid", VALID, rejects(ORT_NO_KERNEL), rejects(OURS_REJECT), X, [("builtin", "rejects-valid", ORT_NO_KERNEL), ("custom", "rejects-valid", OURS_REJECT)]),
    ("all-reject-valid", VALID, rejects(ORT_NO_KERNEL), rejects(OURS_REJECT), rejects(REF_REJECT), [("builtin", "rejects-valid", ORT_NO_KERNEL), ("custom", "rejects-valid", OURS_REJECT), ("reference", "rejects-valid", REF_REJECT)]),
    ("all-accept-invalid", INVALID, X, X, X, [("builtin", "accepts-invalid", "pads-negative"), ("custom", "accepts-invalid", "pads-negative"), ("reference", "accepts-invalid", "pads-negative")]),
    ("all-reject-invalid", INVALID, rejects(ORT_NO_KERNEL), rejects(OURS_REJECT), rejects(REF_REJECT), []),
    ("both-crash", VALID, CRASH, HANG, X, [("builtin", "crash", CRASH.message), ("custom", "hang", HANG.message)]),
    # three-way: all three differ
    ("three-way-value", VALID, X, Y, Z, [("three-way", "value", "")]),
    ("three-way-shape", VALID, X, SHORT, ok(1), [("three-way", "shape", "")]),
    # unknown: the two differ and the reference cannot vote
    ("unknown-reference-rejects", VALID, X, Y, rejects(REF_REJECT), [("unknown", "value", "")]),
    ("unknown-shape-reference-rejects", VALID, X, SHORT, rejects(REF_REJECT), [("unknown", "shape", "")]),
    ("unknown-reference-agrees-with-both", VALID, NEAR_LOW, NEAR_HIGH, NEAR_MID, [("unknown", "value", "")]),
    ("unknown-reference-hangs", VALID, X, Y, HANG, [("reference", "hang", HANG.message), ("unknown", "value", "")]),
    ("unknown-reference-crashes", VALID, X, SHORT, CRASH, [("reference", "crash", CRASH.message), ("unknown", "shape", "")]),
    # the reference's own deviations are notes, and a reference that cannot vote hides nothing else
    ("reference-value", VALID, X, X, Y, [("reference", "value", "")]),
    # the reference differing from one of two agreeing sides blames nobody (compare's rule too)
    ("nobody-reference-differs-from-one", VALID, NEAR_MID, NEAR_HIGH, NEAR_LOW, []),
    ("reference-shape", VALID, X, X, SHORT, [("reference", "shape", "")]),
    ("reference-rejects-valid", VALID, X, X, rejects(REF_REJECT), [("reference", "rejects-valid", REF_REJECT)]),
    ("reference-accepts-invalid", INVALID, rejects(ORT_NO_KERNEL), rejects(OURS_REJECT), X, [("reference", "accepts-invalid", "pads-negative")]),
    ("reference-hangs-sides-agree", VALID, X, X, HANG, [("reference", "hang", HANG.message)]),
    ("reference-crashes-builtin-rejects", VALID, rejects(ORT_NO_KERNEL), X, CRASH, [("reference", "crash", CRASH.message), ("builtin", "rejects-valid", ORT_NO_KERNEL)]),
    ("reference-hangs-custom-accepts-invalid", INVALID, rejects(ORT_NO_KERNEL), X, HANG, [("reference", "hang", HANG.message), ("custom", "accepts-invalid", "pads-negative")]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("verdict", "b", "c", "r", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE]
)
def test_classify_names_the_odd_side_and_the_kind(verdict, b, c, r, expected):
    found = classify("float", verdict, {"builtin": b, "custom": c, "reference": r})
    assert found == [
        Finding(side, kind, error_key(detail) if detail else "") for side, kind, detail in expected
    ]
    assert [f.counts for f in found] == [side != "reference" for side, _, _ in expected]


def test_classify_details_are_the_stable_part_of_the_message():
    found = classify("float", VALID, {"builtin": rejects(ORT_NO_KERNEL), "custom": X, "reference": X})
    assert found == [
        Finding(
            "builtin", "rejects-valid", "Could not find an implementation for Resize(#) node with name 'n'"
        )
    ]
    (crash,) = classify("float", VALID, {"builtin": X, "custom": CRASH, "reference": X})
    assert crash.detail == "killed by SIGABRT: free(): invalid pointer"


def test_classify_compares_integers_exactly_and_widens_float_tolerance_by_scale():
    ints = {"builtin": ok(1, 2, dtype=np.int64), "custom": ok(1, 3, dtype=np.int64)}
    assert classify("int64", VALID, {**ints, "reference": ok(1, 2, dtype=np.int64)}) == [
        Finding("custom", "value")
    ]
    far = {"builtin": ok(100.0), "custom": ok(100.004), "reference": ok(100.0)}
    assert classify("float", VALID, far) == [Finding("custom", "value")]
    assert classify("float", VALID, far, scale=1000.0) == []  # atol 1e-5 + 1e-5 * 1000


def test_a_reference_that_crashes_hides_no_finding_of_a_campaign(tmp_path):
    """End to end: the reference worker dies on a case ORT's kernel rejects; the campaign still records
    the builtin rejects-valid finding, and the reference's crash as a note."""
    proc = run_cli(
        *[
            "fuzz",
            "--op",
            "Resize",
            "--opset",
            "19",
            "--seed",
            "1",
            "--index",
            "1",
            "--shrink-budget",
            "2",
            "--json",
        ],
        "--out",
        str(tmp_path / "out"),
        env={"CUSTOMOPS_FUZZ_INJECT": "exit:reference:1"},
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = strict_json(proc.stdout)
    assert [(g["signature"]["side"], g["signature"]["kind"], g["known"]) for g in summary["groups"]] == [
        ("builtin", "rejects-valid", ["T-RESIZE"])
    ]
    assert [(n["signature"]["side"], n["signature"]["kind"]) for n in summary["reference_notes"]] == [
        ("reference", "crash")
    ]


# ---------------------------------------------------------------------------------------------
# merge: two shards merged are the unsharded campaign


CAMPAIGN = [
    "fuzz",
    "--op",
    "Resize",
    "--opset",
    "19",
    "--cases",
    "30",
    "--seed",
    "1",
    "--shrink-budget",
    "6",
    "--json",
]
"""5 s on one core: 8 groups (one an output kind with features, several spread over both shards) and 4
groups of reference notes (one spread over both shards)."""


def sharded_runs(root: Path) -> dict[str, Any]:
    """The campaign unsharded, as shards 0/2 and 1/2, and the shards merged: summaries by name, each
    directory ``root / name``."""
    out: dict[str, Any] = {"root": root}
    for name, extra in (("whole", []), ("s0", ["--shard", "0/2"]), ("s1", ["--shard", "1/2"])):
        proc = run_cli(*CAMPAIGN, *extra, "--out", str(root / name))
        assert proc.returncode == 1, proc.stderr[-2000:]
        out[name] = strict_json(proc.stdout)
    proc = run_cli(
        "fuzz", "merge", str(root / "s0"), str(root / "s1"), "--out", str(root / "merged"), "--json"
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    out["merged"] = strict_json(proc.stdout)
    for name in ("whole", "s0", "s1", "merged"):
        assert strict_json((root / name / "summary.json").read_text()) == out[name], name
    return out


def test_merged_shards_are_the_whole_campaign_field_by_field(tmp_path):
    """One test (the campaigns run once even under xdist): the summaries, then the reproducers."""
    runs = sharded_runs(tmp_path)
    check_merged_summary(runs)
    check_merged_reproducers(runs)


def _moved(value: Any, old: str, new: str) -> Any:
    """``value`` with the directory ``old`` replaced by ``new`` in every string."""
    return json.loads(json.dumps(value).replace(old, new))


def check_merged_summary(runs: dict[str, Any]) -> None:
    """Every field of the merged summary equals the unsharded one's, but the campaigns list (one entry
    per shard, checked below) and the reproducers' paths (another --out, replaced before comparing)."""
    whole, merged, shards = runs["whole"], runs["merged"], (runs["s0"], runs["s1"])
    root = runs["root"]
    assert set(merged) == set(whole)
    assert whole["groups"] and whole["reference_notes"], "the campaign should find groups and notes"
    assert any(g["signature"]["features"] for g in whole["groups"]), "and an output-kind group"
    # groups and notes found by both shards: their counts, examples, dtypes and ranks are combined
    spread = {g["id"] for g in shards[0]["groups"]} & {g["id"] for g in shards[1]["groups"]}
    assert spread and {n["id"] for n in shards[0]["reference_notes"]} & {
        n["id"] for n in shards[1]["reference_notes"]
    }

    for key in ("tool", "ort_version", "onnx_version", "customops_version", "numpy_version"):
        assert merged[key] == whole[key], key
    assert merged["cases"] == whole["cases"]
    assert merged["reference_notes"] == whole["reference_notes"]

    moved = _moved(whole["groups"], str(root / "whole"), str(root / "merged"))
    assert [g["id"] for g in merged["groups"]] == [g["id"] for g in moved]  # same groups, same order
    for m, w in zip(merged["groups"], moved, strict=True):
        assert set(m) == set(w), w["dir"]
        for key in w:
            assert m[key] == w[key], (w["dir"], key)
    assert merged["groups"] == moved

    # campaigns: each shard's own entry, as its summary has it. What differs from the unsharded entry
    # and why: command (--shard and --out), shard, seconds / seconds_cases / jobs (how the run went),
    # and groups (a signature both shards found counts in both). The rest adds up to the whole.
    (w,) = whole["campaigns"]
    assert merged["campaigns"] == [*shards[0]["campaigns"], *shards[1]["campaigns"]]
    assert [c["shard"] for c in merged["campaigns"]] == ["0/2", "1/2"] and w["shard"] == "0/1"
    for c in merged["campaigns"]:
        assert {k: c[k] for k in ("targets", "seed", "cases", "indices")} == {
            k: w[k] for k in ("targets", "seed", "cases", "indices")
        }
    for key in ("run", "skipped", "not_run", "findings"):
        assert sum(c[key] for c in merged["campaigns"]) == w[key], key
    reasons: dict[str, int] = {}
    for c in merged["campaigns"]:
        for k, v in c["skipped_reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
    assert reasons == w["skipped_reasons"]
    assert [c["groups"] for c in merged["campaigns"]] == [len(s["groups"]) for s in shards]
    assert sum(c["groups"] for c in merged["campaigns"]) == w["groups"] + len(spread)


def check_merged_reproducers(runs: dict[str, Any]) -> None:
    """Each group's directory holds the same files: finding.json and README.txt as the unsharded
    campaign's but for the directory they name, model.onnx and the .pb files byte for byte."""
    root = runs["root"]
    old, new = str(root / "whole"), str(root / "merged")
    for g in runs["whole"]["groups"]:
        a, b = root / "whole" / g["dir"], root / "merged" / g["dir"]
        names = sorted(str(p.relative_to(a)) for p in a.rglob("*"))
        assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*")), g["dir"]
        assert strict_json((b / "finding.json").read_text()) == _moved(
            strict_json((a / "finding.json").read_text()), old, new
        )
        assert (b / "README.txt").read_text() == (a / "README.txt").read_text().replace(old, new)
        for name in names:
            if name.endswith((".onnx", ".pb")):
                assert (a / name).read_bytes() == (b / name).read_bytes(), (g["dir"], name)


# ---------------------------------------------------------------------------------------------
# labels: the committed findings carry what the current rules say


def test_committed_findings_carry_the_labels_of_the_current_rules():
    """Relabel findings/summary.json and each group's finding.json with customops.eval.judging.deviations'
    rules: a rule that stops matching (or starts matching) shows here, group by group."""
    from customops.eval.judging.deviations import known_labels
    from customops.fuzz.files import GROUP_FIELDS, read_summary
    from customops.fuzz.summary import GroupSummary

    summary = read_summary(ROOT / "findings")
    assert len(summary.groups) >= 300
    wrong = []
    for g in summary.groups:
        now = {"summary": known_labels(g)}
        stored = {"summary": g.known}
        kept = ROOT / "findings" / str(g.dir) / "finding.json"  # one reproducer per known id is kept
        if kept.is_file():
            record = strict_json(kept.read_text())
            group = GroupSummary.from_json({k: v for k, v in record.items() if k in GROUP_FIELDS})
            now["finding.json"], stored["finding.json"] = known_labels(group), record["known"]
        if now != stored:
            wrong.append((g.dir, {"stored": stored, "now": now}))
    assert not wrong, f"{len(wrong)} group(s) relabelled differently:\n" + "\n".join(map(str, wrong))
    labelled = sum(1 for g in summary.groups if g.known)
    assert labelled >= 250, labelled  # the rules do label most groups


# ---------------------------------------------------------------------------------------------
# replay: a reproducer that reproduces, and one whose finding is gone


def _edit_signature(directory: Path, **change: Any) -> None:
    path = directory / "finding.json"
    record = strict_json(path.read_text())
    record["signature"].update(change)
    path.write_text(json.dumps(record, indent=1))


def test_replay_says_reproduces_and_exits_1_then_gone_and_exits_0(tmp_path):
    """replay reruns the case and asks whether the recorded signature (side, kind, detail, features) is
    among what the three sides do now (triage.holds). A finding.json whose signature no longer matches
    what they do (another odd side, a message ORT no longer prints, a feature the case lacks) is GONE."""
    from customops.fuzz.files import read_finding
    from customops.fuzz.triage import feature_labels

    # Resize-19, seed 1: case 23 is ORT's align_corners deviation, case 27 a size of 0 ORT refuses
    out = tmp_path / "campaign"
    proc = run_cli(*CAMPAIGN, "--index", "23,27", "--out", str(out))
    assert proc.returncode == 1, proc.stderr[-2000:]
    groups = {g["signature"]["kind"]: g for g in strict_json(proc.stdout)["groups"]}
    value, rejected = groups["value"], groups["rejects-valid"]
    assert value["signature"]["side"] == rejected["signature"]["side"] == "builtin"
    assert value["signature"]["features"], value

    kept = out / value["dir"]
    other_side, new_message, needs_more = (tmp_path / n for n in ("other-side", "new-message", "needs-more"))
    for edited in (other_side, needs_more):
        shutil.copytree(kept, edited)
    shutil.copytree(out / rejected["dir"], new_message)
    _edit_signature(other_side, side="custom")  # recorded: ours is the odd one out
    _edit_signature(new_message, detail="a message ORT no longer prints")
    has = feature_labels(read_finding(needs_more).case)
    lacks = next(f for f in ("exclude_outside=1", "antialias=1", "extrapolation_value") if f not in has)
    _edit_signature(needs_more, features=sorted([*value["signature"]["features"], lacks]))

    proc = run_cli("fuzz", "replay", str(kept))
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [f"REPRODUCES {kept}: {value['text']}"]

    proc = run_cli("fuzz", "replay", str(other_side), str(new_message), str(needs_more))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 and "REPRODUCES" not in proc.stdout, proc.stdout
    assert lines[0].startswith(f"GONE {other_side}: Resize-19 custom value [")
    assert lines[1].startswith(f"GONE {new_message}: Resize-19 builtin rejects-valid (a message ORT no")
    assert lines[2].startswith(f"GONE {needs_more}: Resize-19 builtin value [") and lacks in lines[2]
    for line in (lines[0], lines[2]):
        assert line.endswith("; now: builtin value"), line
    assert lines[1].endswith(f"; now: builtin rejects-valid ({rejected['signature']['detail']})"), lines[1]

    # one that still reproduces among them: exit 1
    proc = run_cli("fuzz", "replay", str(other_side), str(kept))
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["GONE", "REPRODUCES"]


def test_the_summary_schema_and_the_group_dataclass_name_the_same_fields():
    """files.py checks a group against GROUP_FIELDS and summary.GroupSummary.from_json builds the
    dataclass from what it let through: a field added to one and not the other would surface as a
    traceback instead of a one-line error."""
    import dataclasses

    from customops.fuzz.files import GROUP_FIELDS
    from customops.fuzz.summary import GroupSummary

    assert set(GROUP_FIELDS) == {f.name for f in dataclasses.fields(GroupSummary)}
