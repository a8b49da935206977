"""What a campaign leaves behind: one ONNX test-case directory per group, summary.json, the table on
stdout, the Markdown page (docs/findings.md), and merging of campaign directories.

Each directory is filled under a temporary name and renamed into place (customops.safeio.atomic_dir), so
an interrupted campaign or merge leaves no half-written case directory and no temporary one; every file
is replaced in one rename too. Campaign directories being merged are read through customops.fuzz.files
(bounded, checked); a group directory's name becomes a path only as one safe component.
"""

from __future__ import annotations

import copy
import os
import shlex
import shutil
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from customops import jsonout
from customops.errors import CustomOpsError
from customops.eval.testcase import (
    DATA_SET,
    REPRO_SCRIPT,
    check_self_contained,
    first_differences,
    repro_script,
    versions_line,
    write_test_case,
)
from customops.fuzz.case import build_model, case_to_json
from customops.fuzz.files import FINDING, group_dir, read_finding
from customops.fuzz.summary import CampaignInfo, CampaignSummary, GroupSummary, ReferenceNote, combine
from customops.fuzz.triage import Evaluation, Signature
from customops.safeio import (
    atomic_dir,
    is_safe_component,
    markdown_text,
    open_below,
    printable,
    read_bounded,
    safe_component,
    write_atomic,
)

MAX_README_BYTES = 64 << 10
"""Largest README.txt of a reproducer copied by a merge (it is read to rewrite its paths): the fuzzer
writes about 1 kB."""

MAX_REPRODUCER_FILE = 64 << 20
"""Largest model.onnx or .pb file of a reproducer copied by a merge (streamed, never held in memory).
A case's inputs are at most customops.fuzz.case.MAX_ARRAY_BYTES each, so its files are far smaller."""

README_REPRODUCE = "Reproduce:"
"""The line of a reproducer's README.txt after which its rerun commands are listed, one a line."""

MAX_INPUTS = 16
"""Most ``input_N.pb`` files copied from a reproducer's test_data_set_0 (the registry's ops have 5 at most)."""


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


# ---------------------------------------------------------------------------------------------
# table and Markdown


def format_table(summary: CampaignSummary, root: str) -> str:
    """The summary table printed on stdout."""
    cases = summary.cases
    head = (
        f"customops fuzz: {cases.total} cases ({cases.run} run: {cases.valid} valid, {cases.invalid} invalid; "
        f"{sum(cases.skipped.values())} skipped; {cases.not_run} not run), ORT {printable(summary.versions.ort_version)}"
    )
    rows = [("group", "count", "side", "kind", "detail / features that matter", "known")]
    for g in summary.groups:  # every text from data through printable: a campaign may be someone else's
        sig = g.signature
        detail = printable(sig.detail or ", ".join(sig.features) or "-")
        known = printable(", ".join(g.known or []) or "-")
        rows.append(
            (
                printable(g.dir or g.id),
                str(g.count),
                printable(sig.side),
                printable(sig.kind),
                detail[:70],
                known,
            )
        )
    lines = [head]
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for j, r in enumerate(rows):
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths))
    notes = summary.reference_notes
    lines.append(
        f"{len(summary.groups)} group(s), {summary.findings} finding(s); {len(notes)} group(s) of reference notes "
        f"({sum(n.count for n in notes)} cases where only onnx.reference differs); reproducers under {root}"
    )
    return "\n".join(lines)


def _label_table(
    title: str, intro: str | None, labels: dict[str, str], by_label: dict[str, list[GroupSummary]]
) -> list[str]:
    """A Markdown section listing the labels of ``labels`` that some group carries (id, what, groups,
    findings), or nothing when none does."""
    ids = [i for i in labels if i in by_label]
    if not ids:
        return []
    out = ["", f"## {title}", ""]
    if intro:
        out += [intro, ""]
    out += ["| id | what | groups | findings |", "|---|---|---|---|"]
    for ident in ids:
        hits = by_label[ident]
        out.append(f"| {ident} | {labels[ident]} | {len(hits)} | {sum(g.count for g in hits)} |")
    return out


def markdown(summary: CampaignSummary, root: str, command: str) -> str:
    """docs/findings.md: how to regenerate it, the campaigns, which documented deviations were found
    again, the deviations new to the catalogue, then one row per group with its reproducer."""
    from customops.eval.known import FOUND, OURS, documented_ids

    by_label = summary.by_label()
    out = _findings_intro(summary, root, _regenerate_commands(summary, command))
    out += _campaigns_table(summary.campaigns)
    out += _documented_table(documented_ids(), by_label)
    out += _label_table("Deviations of ONNX Runtime new to the catalogue", None, FOUND, by_label)
    out += _label_table(
        "Our kernels",
        "Groups where our side is the odd one out and docs/semantics.md records no decision: reported to the "
        "kernels' owner, not fixed here.",
        OURS,
        by_label,
    )
    out += _groups_table(summary.groups, root)
    out += _reference_notes_table(summary.reference_notes)
    out += _skipped_list(summary.campaigns)
    return "\n".join(out) + "\n"


def _regenerate_commands(summary: CampaignSummary, command: str) -> list[str]:
    """The command of each campaign, then ``command`` (the merge) unless a campaign ran it already."""
    commands = [c.command for c in summary.campaigns]
    if command not in commands:
        commands.append(command)
    return commands


def _findings_intro(summary: CampaignSummary, root: str, commands: list[str]) -> list[str]:
    """The findings page's title, what the fuzzer does, where the reproducers are and how to regenerate
    the page, up to the header of the campaigns table."""
    v = summary.versions
    ort = markdown_text(v.ort_version)
    onnx = "?" if v.onnx_version is None else markdown_text(v.onnx_version)
    numpy = "?" if v.numpy_version is None else markdown_text(v.numpy_version)
    return [
        "# Findings of `customops fuzz`",
        "",
        f"Current findings of the differential fuzzer (`customops fuzz`) against onnxruntime "
        f"{ort} (onnx {onnx}, numpy {numpy}). The fuzzer draws cases from the registry (every attribute "
        "domain, element type, rank 1 to 6 with empty and unit axes, special values, about 10% invalid "
        "configurations on purpose), runs each on ORT's built-in CPU kernel, ours and onnx.reference in worker "
        "processes, groups the disagreements by signature (op and version, the side that is the odd one out, "
        "the kind, the normalized error or broken rule, and the features the finding needs), and shrinks one "
        "case per group.",
        "",
        f"One row per group below. Each group's shrunk reproducer is committed under `{root}/<group>/` "
        "(`model.onnx` with the node in its standard domain, `test_data_set_0/input_N.pb` and `output_0.pb` with "
        "the spec side's output, `finding.json`, `README.txt`, `repro.py`). `customops fuzz replay <dir>` reruns one on the "
        "three sides and exits 1 while it still reproduces; for groups where one side fails or the outputs "
        "differ, `customops compare <dir>/model.onnx --inputs <dir>` exits 1 too.",
        "",
        "Regenerate (campaigns from a scratch directory, then the merge from the repository root):",
        "",
        "```",
        *map(printable, commands),  # each one line starting with customops (files.py checks them)
        "```",
    ]


def _campaigns_table(campaigns: list[CampaignInfo]) -> list[str]:
    """The section "Campaigns": one row per campaign."""
    out = [
        "",
        "## Campaigns",
        "",
        "| targets | seed | cases | run | skipped | time (s) | groups | findings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in campaigns:
        out.append(
            f"| {markdown_text(', '.join(c.targets))} | {c.seed} | {c.cases} | {c.run} | {c.skipped} | "
            f"{c.seconds:.0f} | {c.groups} | {c.findings} |"
        )
    return out


def _documented_table(ids: list[str], by_label: dict[str, list[GroupSummary]]) -> list[str]:
    """The section "Documented deviations found again": each id of docs/ort-deviations.md among ``ids``
    with its groups and findings, or "not found"."""
    out = [
        "",
        "## Documented deviations found again",
        "",
        "Ids of docs/ort-deviations.md (each pinned by hand in tests/test_compare.py or its operator's "
        "tests/test_compare_<op>.py), from random cases alone.",
        "",
        "| id | groups | findings |",
        "|---|---|---|",
    ]
    for ident in ids:
        hits = by_label.get(ident, [])
        found = f"{len(hits)} | {sum(g.count for g in hits)}" if hits else "not found | -"
        out.append(f"| {ident} | {found} |")
    return out


def _groups_table(groups: list[GroupSummary], root: str) -> list[str]:
    """The section "Groups": one row per group, with a link to its reproducer under ``root``."""
    out = [
        "",
        "## Groups",
        "",
        "Side: the odd one out (`builtin` = ORT's CPU kernel, `custom` = ours, `three-way` = all three "
        "differ, `unknown` = the two differ and onnx.reference could not vote or agrees with both; a side that rejects a valid "
        "case, or accepts an invalid one, is a finding on its own). Known: an id of docs/ort-deviations.md, "
        "a row of docs/semantics.md, or an id above.",
        "",
        "| op | side | kind | detail / features that matter | count | known | reproducer |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in groups:
        sig = g.signature
        detail = markdown_text(sig.detail or ", ".join(sig.features) or "-")
        known = markdown_text(", ".join(g.known or [])) or "**new**"
        where = f"[{g.dir}]({_rel(root)}/{g.dir})" if g.dir else "-"  # a safe component (files.py)
        side, kind = markdown_text(sig.side), markdown_text(sig.kind)
        out.append(f"| {sig.op}-{sig.version} | {side} | {kind} | {detail} | {g.count} | {known} | {where} |")
    return out


def _reference_notes_table(notes: list[ReferenceNote]) -> list[str]:
    """The section on cases where onnx.reference alone differs (by op and kind, with the most frequent
    details), or nothing when there are none."""
    if not notes:
        return []
    out = [
        "",
        "## onnx.reference alone differs (notes, not findings)",
        "",
        "Cases where ORT's kernel and ours agree (or both reject an invalid case) and onnx.reference does not, "
        "by op and kind, with the most frequent details; docs/semantics.md says where the reference leaves "
        "the spec.",
        "",
        "| op | kind | cases | groups | most frequent details |",
        "|---|---|---|---|---|",
    ]
    by_key: dict[tuple[str, str], list[ReferenceNote]] = {}
    for n in notes:
        sig = n.signature
        by_key.setdefault((f"{sig.op}-{sig.version}", sig.kind), []).append(n)
    for (op, kind), items in by_key.items():
        items = sorted(items, key=lambda n: -n.count)
        top = "; ".join(f"{(n.signature.detail or '-')[:70]} ({n.count})" for n in items[:3])
        top = markdown_text(top)
        out.append(f"| {op} | {markdown_text(kind)} | {sum(n.count for n in items)} | {len(items)} | {top} |")
    return out


def _skipped_list(campaigns: list[CampaignInfo]) -> list[str]:
    """The section on skipped cases: how many of each reason over all campaigns, or nothing."""
    skipped: Counter[str] = Counter()
    for c in campaigns:
        skipped.update(c.skipped_reasons or {})
    if not skipped:
        return []
    return [
        "",
        "## Skipped cases (element types no side can carry)",
        "",
        *(f"- {markdown_text(reason)}: {n}" for reason, n in sorted(skipped.items())),
    ]


def _rel(root: str) -> str:
    return "../" + root.strip("/") if not root.startswith(("/", ".")) else root


# ---------------------------------------------------------------------------------------------
# merging


def merge(summaries: list[tuple[Path, CampaignSummary]], out: Path) -> CampaignSummary:
    """One summary from several checked campaign summaries (e.g. shards); copies each group's
    representative (the one whose first example has the lowest index) into ``out``, under a name unique
    there, with its known labels refreshed (in the summary and in its finding.json)."""
    from customops.eval.known import known_labels

    first = summaries[0][1]
    groups, sources = _merged_groups(summaries)
    notes: dict[str, ReferenceNote] = {}
    cases = copy.deepcopy(first.cases)
    campaigns: list[CampaignInfo] = []
    for i, (_, s) in enumerate(summaries):
        campaigns.extend(copy.deepcopy(s.campaigns))
        if i:
            cases.add(s.cases)
        for n in s.reference_notes:
            if n.signature.key in notes:
                combine(notes[n.signature.key], n)
            else:
                notes[n.signature.key] = copy.deepcopy(n)
    copies = []  # every group renamed and every reproducer checked before anything is written
    used = taken_names(out)
    for key, g in groups.items():
        g.known = known_labels(g)
        copies += _place_group(g, sources[key], out, used)
    out.mkdir(parents=True, exist_ok=True)
    for c in copies:
        with atomic_dir(out / c.name, replace=True) as tmp:
            copy_reproducer(c, tmp)
    ordered = sorted(
        groups.values(), key=lambda g: (g.signature.op, g.signature.version, -g.count, g.examples[:1])
    )
    return CampaignSummary(
        copy.deepcopy(first.versions),
        campaigns,
        cases,
        ordered,
        sorted(notes.values(), key=lambda n: (n.signature.op, n.signature.version, -n.count)),
    )


def _merged_groups(
    summaries: list[tuple[Path, CampaignSummary]],
) -> tuple[dict[str, GroupSummary], dict[str, Path]]:
    """Groups by signature (counts combined) and the campaign directory of each one's representative."""
    groups: dict[str, GroupSummary] = {}
    sources: dict[str, Path] = {}
    for directory, s in summaries:
        for g in s.groups:
            key = g.signature.key
            merged = groups.get(key)
            if merged is None:
                groups[key] = copy.deepcopy(g)
                sources[key] = directory
                continue
            if g.examples and (not merged.examples or g.examples[0] < merged.examples[0]):
                new = copy.deepcopy(g)  # the new representative, with the counts so far
                new.count, new.examples = merged.count, merged.examples
                new.dtypes = merged.dtypes if merged.dtypes is not None else new.dtypes
                new.ranks = merged.ranks if merged.ranks is not None else new.ranks
                groups[key] = merged = new
                sources[key] = directory
            combine(merged, g)
    return groups, sources


def check_campaigns_once(summaries: list[tuple[Path, CampaignSummary]]) -> None:
    """Refuse to merge one campaign twice (a directory named twice, a copy of one, or a merge together
    with one of its sources): its cases would count twice."""
    seen: dict[str, Path] = {}
    for directory, s in summaries:
        keys = [(c.key, c.command) for c in s.campaigns]
        for key, command in keys:
            if key in seen:
                where = "twice" if seen[key] == directory else f"and in {str(seen[key])!r}"
                raise CustomOpsError(
                    f"campaign {command[:200]!r} is in {str(directory)!r} {where}; each campaign may be merged "
                    "once, or its cases would count twice"
                )
        seen.update((key, directory) for key, _ in keys)


@dataclass
class Copy:
    """A reproducer to copy into the merged directory: from ``src``, for ``group`` (its new dir, commands
    and labels), to be at ``new``."""

    src: Path
    group: GroupSummary
    new: str

    @property
    def name(self) -> str:
        """The group's directory name in the merged directory."""
        assert self.group.dir is not None
        return self.group.dir


def _place_group(g: GroupSummary, source: Path, out: Path, used: set[str]) -> list[Copy]:
    """Name the group uniquely in ``out`` and write its commands anew for it there (a group without a
    directory keeps only the campaign run of its example); its reproducer in the campaign directory
    ``source``, checked, is the copy to make (none when it is not there)."""
    if not g.dir:
        g.rerun = rerun_at(g, None) if g.rerun is not None else None
        return []
    src = group_dir(source, g.dir)
    g.dir = safe_component(g.dir, used)
    new = str(out / g.dir)
    g.rerun = rerun_at(g, new)
    if not src.is_dir():
        return []
    copy = Copy(src, g, new)
    check_reproducer(copy)
    return [copy]


def reproducer_texts(c: Copy) -> tuple[dict[str, Any], str | None]:
    """The copy's finding.json record (checked, with the group's dir, commands and labels) and its
    README.txt (None: absent) with its commands written anew (:func:`readme_at`)."""
    record = read_finding(c.src, c.src.parent).record
    g = c.group
    tallies = {"count": g.count, "examples": g.examples, "dtypes": g.dtypes, "ranks": g.ranks}
    record.update(
        {k: v for k, v in tallies.items() if v is not None},  # merged counts
        dir=g.dir,
        rerun=rerun_at(g, c.new),
        known=g.known or [],
    )
    readme = c.src / "README.txt"
    if not present(c.src.parent, readme):
        return record, None
    raw = read_bounded(readme, MAX_README_BYTES, "README.txt", below=c.src.parent)
    return record, readme_at(raw.decode("utf-8", errors="replace"), record["rerun"])


def readme_at(text: str, rerun: list[str]) -> str:
    """A README.txt read from a campaign, with every line printable and its "Reproduce:" section
    written anew from ``rerun`` (a command from a campaign is never copied)."""
    lines = text.splitlines()
    if README_REPRODUCE in lines:
        lines = lines[: lines.index(README_REPRODUCE)]
    return "\n".join([*map(printable, lines), README_REPRODUCE, *(f"  {c}" for c in rerun)]) + "\n"


def copy_reproducer(c: Copy, dst: Path) -> None:
    """Fill the empty directory ``dst`` with the reproducer of ``c``: finding.json and README.txt from
    :func:`reproducer_texts`, model.onnx and test_data_set_0's ``input_N.pb`` and ``output_0.pb`` as
    they are once checked (:func:`reproducer_file`), and repro.py written anew (a script from an
    untrusted directory is never copied). Anything else in the source is left."""
    record, readme = reproducer_texts(c)
    write_atomic(dst / FINDING, jsonout.dumps(record, indent=1) + "\n")
    if readme is not None:
        write_atomic(dst / "README.txt", readme)
    (dst / DATA_SET).mkdir()
    for name in REPRODUCER_FILES:
        data = reproducer_file(c, name)
        if data is not None:
            (dst / name).write_bytes(data)
    # written from our own text, never copied: a campaign directory is untrusted, and repro.py is run
    write_atomic(dst / REPRO_SCRIPT, repro_script())


REPRODUCER_FILES = (
    "model.onnx",
    f"{DATA_SET}/output_0.pb",
    *(f"{DATA_SET}/input_{i}.pb" for i in range(MAX_INPUTS)),
)
"""The files of a reproducer a merge copies as they are (besides finding.json and README.txt)."""


def check_reproducer(c: Copy) -> None:
    """Raise CustomOpsError unless the reproducer of ``c`` can be copied: its texts (see
    :func:`reproducer_texts`) and each of its other files (:func:`reproducer_file`)."""
    reproducer_texts(c)
    for name in REPRODUCER_FILES:
        reproducer_file(c, name)


def present(root: Path, path: Path) -> bool:
    """Whether ``path`` (inside the campaign directory ``root``) is there, found through no symbolic link
    below ``root`` (a link on the way is a CustomOpsError)."""
    try:
        os.close(open_below(root, path, os.O_RDONLY | os.O_NONBLOCK))
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise CustomOpsError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    return True


def reproducer_file(c: Copy, name: str) -> bytes | None:
    """The bytes of the file ``name`` of the reproducer of ``c`` (None: absent): a regular file of at
    most MAX_REPRODUCER_FILE bytes, reached through no symbolic link below the campaign directory, and
    a model or tensor that keeps no data in other files (testcase.check_self_contained)."""
    root, src = c.src.parent, c.src / name
    if not present(root, src):
        return None
    data = read_bounded(src, MAX_REPRODUCER_FILE, "reproducer file", below=root)
    check_self_contained(data, name, repr(str(src)))
    return data
