"""Keep one reproducer per known id in findings/ and write docs/findings.md, from a full fuzz merge.

``customops fuzz merge`` writes a reproducer for every group (about 320 against ORT 1.32). The
repository keeps only a few, chosen by :func:`choose`:

- for each id of docs/ort-deviations.md, each ``F-`` id (a deviation of ORT this fuzzer found) and each
  ``K-`` id (our kernels), in that order (customops.eval.judging.deviations), that some group carries and no
  kept group carries yet: the group carrying it that carries no id already kept, if there is one, then the
  fewest ids, then the most findings, then the first name;
- every group no rule labels (a new finding): all of them.

Rows of docs/semantics.md are labels, not ids: a group labelled only with such a row is not kept.
findings/summary.json stays the whole merged summary (every group, its counts and its rerun commands;
those of a group not kept still name its directory in MERGED, where the full regeneration writes it).
docs/findings.md is the page ``customops fuzz merge --markdown`` writes for that summary, with three
edits made here: the paragraph on reproducers says what is kept, the regenerate block ends with this
script, and the rows of groups not kept name their directory in plain text instead of linking to it.

Usage, from the repository root, after the campaigns and the merge that docs/findings.md lists::

    python tools/prune_findings.py MERGED [--out findings] [--markdown docs/findings.md]

MERGED is the merge's --out (a scratch directory, left as it is). Reproducer directories in --out that
are not kept are removed; the kept ones are copied from MERGED with their paths rewritten to --out.

With ``--page-only`` nothing is read from MERGED (it only names the directory in the page's commands):
the page is written again from --out's summary.json and the reproducers there, e.g. after a change of
the page customops fuzz writes::

    python tools/prune_findings.py /tmp/fuzz-runs/all --page-only
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
from pathlib import Path

from customops.errors import CustomOpsError
from customops.eval.judging.deviations import FOUND, OURS, documented_ids
from customops.fuzz.files import SUMMARY, read_summary
from customops.fuzz.groups import is_reproducer, rerun_at, write_json
from customops.fuzz.merge import Copy, check_reproducer, copy_reproducer
from customops.fuzz.report import markdown
from customops.fuzz.summary import CampaignSummary, GroupSummary
from customops.safeio import atomic_dir, write_atomic


def known_ids() -> list[str]:
    """The ids a reproducer is kept for, in order: docs/ort-deviations.md's, then ``F-``, then ``K-``."""
    return [*documented_ids(), *FOUND, *OURS]


def ids_of(group: GroupSummary) -> list[str]:
    """The known ids among a group's labels (its other labels are rows of docs/semantics.md)."""
    ids = set(known_ids())
    return [label for label in group.known or [] if label in ids]


def choose(groups: list[GroupSummary]) -> list[GroupSummary]:
    """The groups whose reproducers are kept (see the module docstring), in the summary's order.
    ``groups`` are those that have a reproducer to keep."""
    kept: list[GroupSummary] = []
    covered: set[str] = set()
    for ident in known_ids():
        carriers = [g for g in groups if ident in ids_of(g)]
        if ident in covered or not carriers:
            continue
        fresh = [g for g in carriers if not covered & set(ids_of(g))] or carriers
        best = min(fresh, key=lambda g: (len(ids_of(g)), -g.count, g.dir or ""))
        kept.append(best)
        covered.update(ids_of(best))
    kept += [g for g in groups if not g.known]
    chosen = {id(g) for g in kept}
    return [g for g in groups if id(g) in chosen]


def campaign_out(command: str) -> str:
    """The --out of a recorded campaign command."""
    words = shlex.split(command)
    for i, word in enumerate(words):
        if word == "--out" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--out="):
            return word.split("=", 1)[1]
    raise CustomOpsError(f"the campaign command {command!r} names no --out; merge its directory by hand")


def commands(summary: CampaignSummary, merged: str, out: str, md: str) -> tuple[str, str]:
    """The merge command (the campaigns' directories into ``merged``) and this script's command."""
    dirs = [campaign_out(c.command) for c in summary.campaigns]
    merge = shlex.join(["customops", "fuzz", "merge", *dirs, "--out", merged])
    prune = ["python", "tools/prune_findings.py", merged]
    if out != "findings":
        prune += ["--out", out]
    if md != "docs/findings.md":
        prune += ["--markdown", md]
    return merge, shlex.join(prune)


def kept_paragraph(root: str, merged: str, groups: list[GroupSummary], kept: set[str]) -> str:
    """The page's paragraph on reproducers: what ``root`` keeps, counted from the summary."""
    ids = {i for g in groups for i in ids_of(g)}
    carriers = [i for g in groups if g.dir in kept for i in ids_of(g)]
    each = "exactly one" if sorted(carriers) == sorted(ids) else "at least one"
    new = sum(1 for g in groups if not g.known)
    news = f"and the {new} group(s) no rule labels" if new else "and every group no rule labels (none here)"
    return (
        f"One row per group below. `{root}/` keeps one shrunk reproducer per known id, {len(kept)} of the "
        f"{len(groups)} groups: for each of the {len(ids)} ids of docs/ort-deviations.md and of the tables "
        f"below that some group carries, {each} kept group carries it, {news}; a group labelled only with a "
        "row of docs/semantics.md has none. tools/prune_findings.py makes the choice (its docstring gives "
        "the rule). The reproducer column links the kept ones; the other rows name, in plain text, the "
        f"directory the commands below write under `{merged}/`. `{root}/summary.json` is the whole merged "
        "summary: every group with its counts and its rerun commands, the last of which (`customops fuzz "
        "--op OP --opset V --seed 0 --index I`, with `--out DIR`) reruns the group's original case alone and "
        "writes its shrunk reproducer, in seconds. A reproducer holds `model.onnx` with the node in its "
        "standard domain, `test_data_set_0/input_N.pb` and `output_0.pb` with the spec side's output, "
        "`finding.json`, `README.txt` and `repro.py` (`python repro.py` in the directory reruns the case on "
        "ONNX Runtime alone, with only onnx, onnxruntime and numpy, and exits 1 while ORT disagrees: ready to "
        "attach to an ORT issue). `customops fuzz replay <dir>` reruns one on the three sides and "
        "exits 1 while it still reproduces; for groups where one side fails or the outputs differ, "
        "`customops compare <dir>/model.onnx --inputs <dir>` exits 1 too."
    )


REGENERATE = (
    "Regenerate everything (the campaigns and the merge of every group's reproducer into scratch "
    "directories, then, from the repository root, this page and the kept reproducers):"
)


def page(summary: CampaignSummary, kept: set[str], root: str, merged: str, merge: str, prune: str) -> str:
    """docs/findings.md: :func:`customops.fuzz.report.markdown` of the whole summary, with the paragraph
    on reproducers, the regenerate block and the links of groups not kept edited as the module says."""
    text = markdown(summary, root, merge)
    lines = text.split("\n")
    para = [i for i, line in enumerate(lines) if line.startswith("One row per group below.")]
    regen = [i for i, line in enumerate(lines) if line.startswith("Regenerate ")]
    at_merge = [i for i, line in enumerate(lines) if line == merge]
    if len(para) != 1 or len(regen) != 1 or len(at_merge) != 1:
        raise CustomOpsError("the page customops fuzz writes has changed; update tools/prune_findings.py")
    lines[para[0]] = kept_paragraph(root, merged, summary.groups, kept)
    lines[regen[0]] = REGENERATE
    lines.insert(at_merge[0] + 1, prune)
    rel = root if root.startswith(("/", ".")) else "../" + root.strip("/")  # as markdown() links

    def unlink(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name in kept else f"`{name}`"

    link = re.compile(r"\[([^\]]+)\]\(" + re.escape(rel) + r"/\1\)")
    return "\n".join(link.sub(unlink, line) for line in lines)


def prune(merged: Path, out: Path, md: Path) -> list[str]:
    """Write ``out`` (the kept reproducers and the whole summary) and ``md`` from the full merge in
    ``merged``; returns the kept directories' names."""
    if merged.resolve() == out.resolve():
        raise CustomOpsError("MERGED and --out are one directory; merge into a scratch directory")
    summary = read_summary(merged)
    available = [g for g in summary.groups if g.dir and is_reproducer(merged / g.dir)]
    kept = choose(available)
    names = {g.dir for g in kept if g.dir}
    copies = []
    for g in kept:
        assert g.dir is not None
        g.rerun = rerun_at(g, str(out / g.dir))
        copy = Copy(merged / g.dir, g, str(out / g.dir))
        check_reproducer(copy)
        copies.append(copy)
    out.mkdir(exist_ok=True)
    for entry in sorted(out.iterdir()):
        if entry.name not in names and is_reproducer(entry):
            shutil.rmtree(entry)
    for c in copies:
        with atomic_dir(out / c.name, replace=True) as tmp:
            copy_reproducer(c, tmp)
    write_json(out / SUMMARY, summary.to_json())
    merge_command, prune_command = commands(summary, str(merged), str(out), str(md))
    write_atomic(md, page(summary, names, str(out), str(merged), merge_command, prune_command))
    return sorted(names)


def page_only(merged: Path, out: Path, md: Path) -> list[str]:
    """Write ``md`` again from ``out``'s summary.json and the reproducers in ``out``; returns their names."""
    summary = read_summary(out)
    names = {g.dir for g in summary.groups if g.dir and is_reproducer(out / g.dir)}
    merge_command, prune_command = commands(summary, str(merged), str(out), str(md))
    write_atomic(md, page(summary, names, str(out), str(merged), merge_command, prune_command))
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("merged", metavar="MERGED", help="the --out of customops fuzz merge (every group)")
    parser.add_argument("--out", default="findings", help="where the kept reproducers go (default findings)")
    parser.add_argument("--markdown", default="docs/findings.md", help="the page (default docs/findings.md)")
    parser.add_argument(
        "--page-only", action="store_true", help="only write the page again, from --out (MERGED is not read)"
    )
    args = parser.parse_args(argv)
    run = page_only if args.page_only else prune
    try:
        kept = run(Path(args.merged), Path(args.out), Path(args.markdown))
    except CustomOpsError as exc:
        print(f"prune_findings: {exc}", file=sys.stderr)
        return 2
    print(f"prune_findings: kept {len(kept)} reproducer(s) in {args.out}; wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
