"""What a campaign or merge reports: the table printed on stdout and the Markdown findings page
(docs/findings.md). Every text read from a summary goes through customops.safeio.printable or
markdown_text: a campaign directory may be someone else's.
"""

from __future__ import annotations

from collections import Counter

from customops.fuzz.summary import CampaignInfo, CampaignSummary, GroupSummary, ReferenceNote
from customops.safeio import markdown_text, printable


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
    from customops.eval.judging.deviations import FOUND, OURS, documented_ids

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
