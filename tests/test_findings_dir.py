"""findings/ keeps one reproducer per known id (tools/prune_findings.py): each kept directory carries a
known id (or no label at all: a new finding), each id some group carries is carried by exactly one kept
directory, the kept set is what the script's rule picks from findings/summary.json, docs/findings.md is
what the script writes, and every link of docs/findings.md into findings/ resolves."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.helpers import strict_json

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = ROOT / "findings"
PAGE = ROOT / "docs" / "findings.md"


def _prune_module():
    spec = importlib.util.spec_from_file_location("prune_findings", ROOT / "tools" / "prune_findings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def prune():
    return _prune_module()


@pytest.fixture(scope="module")
def summary():
    from customops.fuzz.files import read_summary

    return read_summary(FINDINGS)


def _group(record: dict):
    """A finding.json record's fields of its summary entry, as the summary's typed group."""
    from customops.fuzz.files import GROUP_FIELDS
    from customops.fuzz.summary import GroupSummary

    return GroupSummary.from_json({k: v for k, v in record.items() if k in GROUP_FIELDS})


def _kept_dirs() -> list[Path]:
    return sorted(p for p in FINDINGS.iterdir() if p.is_dir())


def test_findings_holds_only_the_summary_and_reproducers():
    assert sorted(p.name for p in FINDINGS.iterdir() if not p.is_dir()) == ["summary.json"]
    for d in _kept_dirs():
        assert (d / "finding.json").is_file(), d.name
        assert (d / "model.onnx").is_file(), d.name
        assert (d / "test_data_set_0" / "input_0.pb").is_file(), d.name


def test_each_kept_directory_carries_a_known_id_or_no_label_and_its_labels_are_current(prune, summary):
    from customops.eval.judging.deviations import known_labels

    by_dir = {g.dir: g for g in summary.groups}
    for d in _kept_dirs():
        record = strict_json((d / "finding.json").read_text())
        assert record["dir"] == d.name
        assert record["known"] == by_dir[d.name].known == known_labels(_group(record)), d.name
        assert prune.ids_of(_group(record)) or not record["known"], (d.name, record["known"])
        assert f"customops fuzz replay findings/{d.name}" in record["rerun"]


def test_each_known_id_found_has_exactly_one_directory(prune, summary):
    found = {i for g in summary.groups for i in prune.ids_of(g)}
    carried = [
        i for d in _kept_dirs() for i in prune.ids_of(_group(strict_json((d / "finding.json").read_text())))
    ]
    assert sorted(carried) == sorted(found)
    from customops.eval.judging.deviations import documented_ids

    assert set(documented_ids()) <= found  # the campaigns find every documented deviation again


def test_the_kept_set_is_what_the_rule_picks(prune, summary):
    chosen = prune.choose([g for g in summary.groups if g.dir])
    assert sorted(g.dir for g in chosen) == [d.name for d in _kept_dirs()]


def test_the_page_is_what_the_script_writes(prune, summary):
    page = PAGE.read_text()
    block = page.split("```\n", 2)[1].strip().splitlines()
    merge, last = block[-2], block[-1]
    words = shlex.split(last)
    assert words[:2] == ["python", "tools/prune_findings.py"] and len(words) == 3, last
    merged = words[2]
    assert prune.commands(summary, merged, "findings", "docs/findings.md") == (merge, last)
    kept = {d.name for d in _kept_dirs()}
    assert prune.page(summary, kept, "findings", merged, merge, last) == page
    assert "keeps one shrunk reproducer per known id" in page
    assert "| not found |" not in page  # every documented deviation was found again


def test_every_link_into_findings_resolves_and_every_group_has_a_row(summary):
    page = PAGE.read_text()
    links = re.findall(r"\]\((\.\./findings/[^)]*)\)", page)
    assert sorted(link.split("/")[2] for link in links) == [d.name for d in _kept_dirs()]
    assert all((PAGE.parent / link).is_dir() for link in links)
    for g in summary.groups:
        assert f"| [{g.dir}](../findings/{g.dir}) |" in page or f"| `{g.dir}` |" in page, g.dir


def test_page_only_writes_the_same_page_from_a_copy_of_findings(prune, tmp_path, monkeypatch):
    page = PAGE.read_text()
    merged = shlex.split(page.split("```\n", 2)[1].strip().splitlines()[-1])[2]
    shutil.copytree(FINDINGS, tmp_path / "findings")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    names = prune.page_only(Path(merged), Path("findings"), Path("docs/findings.md"))
    assert names == [d.name for d in _kept_dirs()]
    assert (tmp_path / "docs" / "findings.md").read_text() == page
