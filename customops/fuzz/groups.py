"""A campaign's directory: one ONNX test-case directory (reproducer) per group, named from its signature,
with finding.json, README.txt and the commands that rerun it; summary.json beside them; the groups an
earlier campaign left there and the new one does not, removed.

Each directory is filled under a temporary name and renamed into place (customops.safeio.atomic_dir), so
an interrupted campaign leaves no half-written case directory and no temporary one; every file is
replaced in one rename too. Only a reproducer of ours (:func:`is_reproducer`) is ever replaced or removed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from pathlib import Path
from typing import Any

import numpy as np

from customops import jsonout
from customops.eval.cases.testcase import first_differences, versions_line, write_test_case
from customops.eval.judging.signature import Signature
from customops.fuzz.case import build_model, case_to_json
from customops.fuzz.files import FINDING
from customops.fuzz.summary import CampaignSummary, GroupSummary
from customops.fuzz.triage import Evaluation
from customops.safeio import atomic_dir, is_safe_component, safe_component, write_atomic

README_REPRODUCE = "Reproduce:"
"""The line of a reproducer's README.txt after which its rerun commands are listed, one a line."""


def group_dirname(sig: Signature, used: set[str] | None = None) -> str:
    """``Resize-19-builtin-value-ab12cd``: op-version, side, kind and a short id of the signature, as one
    safe path component (unique among ``used``, when given)."""
    side = sig.side.replace("+", "-")
    return safe_component(f"{sig.op}-{sig.version}-{side}-{sig.kind}-{sig.id[:6]}", used, fallback="group")


def spec_side(sig: Signature, ev: Evaluation) -> str | None:
    """Which side's output stands for the spec in output_0.pb (None: the spec rejects the case, or no
    side that agrees with the spec ran)."""
    if not ev.verdict.valid:
        return None
    ok = {s: o.status == "ok" for s, o in ev.outcomes.items()}
    order = ["reference", "builtin"] if sig.side == "custom" else ["custom", "reference"]
    return next((s for s in order if ok.get(s)), None)


def rerun_commands(
    sig: Signature, path: str | None, example: int | None, seed: int | None, compare: bool
) -> list[str]:
    """The commands that reproduce a group, made from checked fields alone (never from text read back):
    replay of the reproducer at ``path`` (None: it has none), ``customops compare`` on it when
    ``compare`` (see :func:`compare_exits_1`), and the campaign run of the original (unshrunk) example,
    when its seed and index are known. Every word is a safe path component, a number or quoted."""
    out = []
    if path is not None:
        out.append(f"customops fuzz replay {shlex.quote(path)}")
        if compare:
            out.append(f"customops compare {shlex.quote(path + '/model.onnx')} --inputs {shlex.quote(path)}")
    if seed is not None and example is not None:
        out.append(f"customops fuzz --op {sig.op} --opset {sig.version} --seed {seed} --index {example}")
    return out


def compare_exits_1(sig: Signature, ev: Evaluation | None) -> bool:
    """Whether ``customops compare`` exits 1 on the reproducer of ``ev``: our side swaps the node, and
    exactly one of ORT and ours fails or both run and differ."""
    swapped = ev is not None and not ev.outcomes["custom"].message.startswith("rewrite:")
    if ev is None or not swapped or sig.kind in ("crash", "hang"):  # compare skips unswapped nodes
        return False
    ok_b, ok_c = (ev.outcomes[s].status == "ok" for s in ("builtin", "custom"))
    return ok_b != ok_c or (ok_b and ok_c and sig.kind in ("value", "shape", "dtype"))


def rerun_at(g: GroupSummary, path: str | None) -> list[str]:
    """The rerun commands of the (checked) group ``g`` whose reproducer is now at ``path``, written anew
    from its signature, seed and first example; compare among them when its commands had it. Commands
    read from a campaign are never copied: they are text someone may paste into a shell."""
    compare = any(c.startswith("customops compare ") for c in g.rerun or [])
    return rerun_commands(g.signature, path, g.examples[0] if g.examples else None, g.seed, compare)


def is_reproducer(path: Path) -> bool:
    """Whether ``path`` is a group directory of ours: a real directory (not a link) holding a finding.json
    (a regular file, not a link). Only such a directory is ever replaced or removed."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode) and stat.S_ISREG(os.lstat(path / FINDING).st_mode)
    except OSError:
        return False


def taken_names(root: Path) -> set[str]:
    """The names (lower-cased) in ``root`` that a group may not take: everything there that is not a
    reproducer of ours, which is never replaced."""
    if not root.is_dir():
        return set()
    return {p.name.lower() for p in root.iterdir() if not is_reproducer(p)}


def write_group(root: Path, name: str, sig: Signature, ev: Evaluation, info: GroupSummary) -> Path:
    """Write the reproducer of one group atomically, replacing only a reproducer of ours of that name
    (names come from :func:`group_dirname` with :func:`taken_names`); returns its directory."""
    final = root / name
    with atomic_dir(final, replace=True) as tmp:
        _fill_group(tmp, sig, ev, info)
    return final


def _fill_group(tmp: Path, sig: Signature, ev: Evaluation, info: GroupSummary) -> None:
    from customops.fuzz.campaign import outcome_summary

    side = spec_side(sig, ev)
    expected = np.asarray(ev.outcomes[side].value) if side else None
    if expected is not None:
        dims: list[Any] = list(expected.shape)
    else:  # no spec output (an invalid case): a symbolic shape of the rank a side produced, else X's
        ran = [np.asarray(o.value) for o in ev.outcomes.values() if o.status == "ok"]
        dims = [f"d{i}" for i in range((ran[0] if ran else ev.case.main).ndim)]
    built = build_model(ev.case, declare_output_shape=dims)
    write_test_case(tmp, built.model, built.feed, expected)
    record = {
        **info.to_json(),
        "signature": sig.to_json(),
        "text": sig.text(),
        "spec_side": side,
        "valid": ev.verdict.valid,
        "invalid_reason": ev.verdict.reason,
        "case": case_to_json(ev.case),
        "outcomes": outcome_summary(ev),
    }
    (tmp / FINDING).write_text(jsonout.dumps(record, indent=1) + "\n")
    (tmp / "README.txt").write_text(_readme(sig, ev, side, info))


def _readme(sig: Signature, ev: Evaluation, side: str | None, info: GroupSummary) -> str:
    lines = [
        sig.text(),
        "",
        f"case: {ev.case.describe()}",
        "valid configuration" if ev.verdict.valid else f"invalid configuration: {ev.verdict.reason}",
    ]
    for s, o in ev.outcomes.items():
        what = o.message if o.status != "ok" else f"output shape {list(np.asarray(o.value).shape)}"
        lines.append(f"{s}: {o.status}: {what}")
    lines.append(
        f"output_0.pb holds the {side} side's output (the spec side)."
        if side
        else "no output_0.pb: the spec rejects this case."
    )
    if side and ev.outcomes["builtin"].status == "ok":
        spec = ev.outcomes[side].value
        lines.extend(f"  {line}" for line in first_differences(ev.outcomes["builtin"].value, spec))
    lines.append(versions_line())
    lines.append("python repro.py reruns it on ONNX Runtime alone (exit 1 while ORT disagrees).")
    lines.append(
        "model.onnx holds the node alone in its standard domain (Cast nodes carry types ORT's Python API cannot)."
    )
    lines.append(README_REPRODUCE)
    lines.extend(f"  {c}" for c in info.rerun or [])
    return "\n".join(lines) + "\n"


def write_json(path: Path, data: Any) -> None:
    """Write strict JSON atomically (a temporary file beside it and one rename)."""
    write_atomic(path, jsonout.dumps(data, indent=1) + "\n")


def remove_stale(root: Path, previous: CampaignSummary | None, keep: set[str]) -> None:
    """Remove group directories an earlier (checked) summary in ``root`` listed and the new one does not:
    only real directories directly in ``root`` that hold a finding.json."""
    for g in previous.groups if previous is not None else []:
        name = g.dir
        if not is_safe_component(name) or name in keep:
            continue
        path = root / name
        if is_reproducer(path):
            shutil.rmtree(path, ignore_errors=True)
