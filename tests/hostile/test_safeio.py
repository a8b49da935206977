"""customops.safeio: names from data become one safe path component; writes are atomic; reads bounded."""

import os
import stat
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
    open_bounded,
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
    with pytest.raises(RuntimeError), atomic_dir(final, replace=True) as tmp:
        (tmp / "half").write_text("y")
        raise RuntimeError("stop")
    assert sorted(p.name for p in final.iterdir()) == ["old"]
    with atomic_dir(final, replace=True) as tmp:
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


def test_a_dangling_link_is_never_taken_for_a_free_name(tmp_path):
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere" / "x")
    with pytest.raises(CustomOpsError, match="not a directory"):
        check_output_dir(link, "--save-repro")
    with pytest.raises(CustomOpsError, match="not a regular file"):
        check_output_file(link, "--json")


def test_atomic_dir_replaces_only_when_asked_and_only_a_real_directory(tmp_path):
    (tmp_path / "file").write_text("mine")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    for name in ("file", "link"):
        for replace in (False, True):
            with (
                pytest.raises(CustomOpsError, match="already exists"),
                atomic_dir(tmp_path / name, replace=replace),
            ):
                pass
    (tmp_path / "mine").mkdir()
    with pytest.raises(CustomOpsError, match="already exists"), atomic_dir(tmp_path / "mine"):
        pass
    assert (tmp_path / "file").read_text() == "mine" and (tmp_path / "mine").is_dir()


def test_written_files_keep_the_mode_of_what_they_replace(tmp_path):
    out = tmp_path / "private.json"
    out.write_text("old")
    out.chmod(0o600)
    write_atomic(out, "new")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    with atomic_dir(tmp_path / "case") as tmp:
        (tmp / "x").write_text("y")
    assert stat.S_IMODE((tmp_path / "case").stat().st_mode) == 0o777 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("source", ["/dev/zero", "fifo", "dir"])
def test_bounded_reads_never_open_what_is_not_a_regular_file(tmp_path, source):
    path = Path(source) if source.startswith("/") else tmp_path / source
    if source == "fifo":
        os.mkfifo(path)  # without O_NONBLOCK, opening it would block for ever
    elif source == "dir":
        path.mkdir()
    with pytest.raises(CustomOpsError, match=r"not a regular file|cannot read"):
        open_bounded(path, 100, "inputs file")


class _Stopped(Exception):
    pass


def _raise_stopped(signum, frame):
    raise _Stopped


@pytest.mark.parametrize("step", ["probe", "write_atomic", "atomic_dir"])
def test_a_signal_right_after_a_temporary_is_made_leaves_nothing_behind(tmp_path, monkeypatch, step):
    """SIGTERM delivered the moment mkstemp/mkdtemp has made its temporary: the temporary is still
    removed (the signal is held until its removal is armed) and the signal's exception still comes."""
    import signal
    import tempfile

    from customops import safeio

    def signalled(real):
        def make(*args, **kwargs):
            made = real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)
            return made

        return make

    monkeypatch.setattr(tempfile, "mkstemp", signalled(tempfile.mkstemp))
    monkeypatch.setattr(tempfile, "mkdtemp", signalled(tempfile.mkdtemp))
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        with pytest.raises(_Stopped):
            if step == "probe":
                safeio.check_output_file(tmp_path / "out.json", "--json")
            elif step == "write_atomic":
                safeio.write_atomic(tmp_path / "out.json", "{}")
            else:
                with safeio.atomic_dir(tmp_path / "case"):
                    pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert list(tmp_path.iterdir()) == []
