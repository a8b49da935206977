"""Merging campaign directories (e.g. shards) into one: one summary with the groups combined by
signature, and each group's representative reproducer copied under a name unique in the merged directory.

Campaign directories being merged are read through customops.fuzz.files (bounded, checked); a group
directory's name becomes a path only as one safe component, and every reproducer is checked before
anything is written. Each copy is filled under a temporary name and renamed into place
(customops.safeio.atomic_dir), so an interrupted merge leaves no half-written case directory. Commands
and scripts read from a campaign are never copied: they are written anew (customops.fuzz.groups).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from customops import jsonout
from customops.errors import CustomOpsError
from customops.eval.cases.testcase import DATA_SET, REPRO_SCRIPT, check_self_contained, repro_script
from customops.fuzz.files import FINDING, group_dir, read_finding
from customops.fuzz.groups import README_REPRODUCE, rerun_at, taken_names
from customops.fuzz.summary import CampaignInfo, CampaignSummary, GroupSummary, ReferenceNote, combine
from customops.safeio import atomic_dir, open_below, printable, read_bounded, safe_component, write_atomic

MAX_README_BYTES = 64 << 10
"""Largest README.txt of a reproducer copied by a merge (it is read to rewrite its paths): the fuzzer
writes about 1 kB."""

MAX_REPRODUCER_FILE = 64 << 20
"""Largest model.onnx or .pb file of a reproducer copied by a merge (streamed, never held in memory).
A case's inputs are at most customops.fuzz.case.MAX_ARRAY_BYTES each, so its files are far smaller."""

MAX_INPUTS = 16
"""Most ``input_N.pb`` files copied from a reproducer's test_data_set_0 (the registry's ops have 5 at most)."""


def merge(summaries: list[tuple[Path, CampaignSummary]], out: Path) -> CampaignSummary:
    """One summary from several checked campaign summaries (e.g. shards); copies each group's
    representative (the one whose first example has the lowest index) into ``out``, under a name unique
    there, with its known labels refreshed (in the summary and in its finding.json)."""
    from customops.eval.judging.deviations import known_labels

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
