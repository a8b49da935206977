"""customops.safeio: names from data become one safe path component; writes are atomic; reads bounded."""

import os
import zlib
from pathlib import Path

import pytest

from customops.errors import CustomOpsError
from customops.safeio import (
    atomic_dir,
    check_distinct,
    check_output_dir,
    check_output_file,
    inflate_bounded,
    is_safe_component,
    read_bounded,
    safe_component,
    write_atomic,
)


@pytest.mark.parametrize(
    "name", ["..", ".", "", "/", "/etc/passwd", "../x", "a/../../b", "\\..\\", ".hidden", "-"]
)
def test_names_from_data_become_one_safe_component(name, tmp_path):
    part = safe_component(name)
    assert part and part not in (".", "..") and not part.startswith(".")
    assert "/" not in part and "\\" not in part
    assert (tmp_path / part).resolve().parent == tmp_path.resolve()
    assert is_safe_component(part)
    assert not is_safe_component(name)


def test_components_are_unique_ignoring_case_and_bounded():
    used: set[str] = set()
    names = [safe_component(n, used) for n in ["a/b", "a_b", "A_B", "x" * 500, "x" * 600]]
    assert len({n.lower() for n in names}) == 5
    assert all(len(n) <= 100 for n in names)


def test_outputs_that_are_not_regular_files_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(CustomOpsError, match="not a regular file"):
        check_output_file(fifo, "OUT")
    with pytest.raises(CustomOpsError, match="is a directory"):
        check_output_file(tmp_path, "OUT")
    with pytest.raises(CustomOpsError, match="does not exist"):
        check_output_file(tmp_path / "no" / "x.json", "--json")
    with pytest.raises(CustomOpsError, match="not a directory"):
        check_output_dir(fifo, "--out")
    with pytest.raises(CustomOpsError, match="same file"):
        check_distinct([("--json", tmp_path / "r"), ("--html", tmp_path / "." / "r")])


def _unwritable_dir(tmp_path):
    """A directory no file can be made in: read-only for a user; for root (who writes anywhere the mode
    says no) sysfs, where nothing can be created."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    return Path("/sys/kernel")


def test_unwritable_directory_is_refused_before_the_work(tmp_path):
    ro = _unwritable_dir(tmp_path)
    with pytest.raises(CustomOpsError, match="not writable"):
        check_output_file(ro / "x.json", "--json")
    with pytest.raises(CustomOpsError, match="not writable"):
        check_output_dir(ro, "--save-repro")
    with pytest.raises(CustomOpsError, match="not writable"):
        check_output_dir(ro / "new", "--save-repro")


def test_atomic_write_leaves_the_old_file_on_failure(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(out, 3)  # type: ignore[arg-type]
    assert out.read_text() == "old"
    write_atomic(out, "new")
    assert out.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_atomic_dir_replaces_whole_or_not_at_all(tmp_path):
    final = tmp_path / "case"
    final.mkdir()
    (final / "old").write_text("x")
    with pytest.raises(RuntimeError), atomic_dir(final) as tmp:
        (tmp / "half").write_text("y")
        raise RuntimeError("stop")
    assert sorted(p.name for p in final.iterdir()) == ["old"]
    with atomic_dir(final) as tmp:
        (tmp / "new").write_text("y")
    assert sorted(p.name for p in final.iterdir()) == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case"]


def test_reads_and_inflation_are_bounded(tmp_path):
    f = tmp_path / "big"
    f.write_bytes(b"x" * 101)
    with pytest.raises(CustomOpsError, match="larger than 100"):
        read_bounded(f, 100, "finding")
    assert read_bounded(f, 101, "finding") == b"x" * 101
    bomb = zlib.compress(b"\0" * 10_000_000)
    with pytest.raises(CustomOpsError, match="expands beyond"):
        inflate_bounded(bomb, 1_000_000, "payload")
    assert inflate_bounded(zlib.compress(b"abc"), 3, "payload") == b"abc"
    with pytest.raises(CustomOpsError, match="corrupt"):
        inflate_bounded(b"not zlib", 100, "payload")
    with pytest.raises(CustomOpsError, match="truncated"):
        inflate_bounded(zlib.compress(b"abc" * 100)[:-5], 1000, "payload")
