"""Compiled loops split over threads give the same bits as on one thread."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from customops.accel import jit, parallel
from customops.kernels.resampling.resize import resize
from tests.helpers import NEVER
from tests.kernels.test_fast_paths import OPS, Case

ROOT = Path(__file__).resolve().parents[2]


def _cases() -> list[Case]:
    """The random cases of tests/kernels/test_fast_paths.py, every op with a compiled path."""
    return [case for make, _agree in OPS.values() for case in make(np.random.default_rng(0))]


@pytest.fixture
def split_everything(monkeypatch):
    """Three threads, and every loop of two or more rows split, however small."""
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)


def _one_thread(monkeypatch, cases: list[Case]) -> list[np.ndarray]:
    monkeypatch.setitem(parallel._state, "threads", 1)
    return [case.run() for case in cases]


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_split_loops_are_bit_identical(monkeypatch) -> None:
    cases = _cases()
    serial = _one_thread(monkeypatch, cases)
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)
    calls: list[tuple[int, int]] = []
    real_run = parallel.run

    def counting(loop, length, work, *args):
        calls.append((length, parallel.parts(length, work)))
        return real_run(loop, length, work, *args)

    monkeypatch.setattr(parallel, "run", counting)
    split = [case.run() for case in cases]
    assert any(parts > 1 for _, parts in calls), "no loop was split"
    for case, got, want in zip(cases, split, serial, strict=True):
        assert got.tobytes() == want.tobytes(), (case.kernel.__name__, case.kwargs)


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_split_large_resize_matches_serial(monkeypatch) -> None:
    """Real sizes, default work threshold: the fused rows-first, columns-first and nearest loops."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 300, 260)).astype(np.float32)
    x[0, 1, 17, 33] = np.nan
    configs = [
        dict(mode="linear", scales=np.array([1, 1, 2, 2], np.float32)),
        dict(mode="cubic", antialias=1, scales=np.array([1, 1, 0.25, 0.25], np.float32)),
        dict(mode="nearest", scales=np.array([1, 1, 2, 2], np.float32), nearest_mode="floor"),
        dict(mode="linear", scales=np.array([1, 2, 1, 1], np.float32)),
        dict(mode="cubic", scales=np.array([1, 1, 1, 1.5], np.float32)),
    ]
    monkeypatch.setitem(parallel._state, "threads", 1)
    serial = [resize(x, **c) for c in configs]
    monkeypatch.setitem(parallel._state, "threads", 2)
    for config, want in zip(configs, serial, strict=True):
        got = resize(x, **config)
        assert got.tobytes() == want.tobytes(), config


def test_run_covers_the_range_once(split_everything) -> None:
    seen: list[tuple[int, int]] = []

    def loop(tag, start, stop):
        assert tag == "t"
        seen.append((start, stop))

    parallel.run(loop, 23, 10**9, "t")
    seen.sort()
    assert seen[0][0] == 0 and seen[-1][1] == 23
    assert all(a[1] == b[0] for a, b in itertools.pairwise(seen))
    assert len(seen) == min(23, 3 * parallel._PIECES_PER_THREAD)


def test_pieces_are_bounded_per_thread_and_by_work() -> None:
    per = parallel._PIECES_PER_THREAD
    assert len(parallel.pieces(1000, 10**12, 2)) == 2 * per
    assert len(parallel.pieces(1000, 10**12, 1)) == 1
    few = parallel.pieces(1000, 3 * parallel._MIN_PIECE_WORK, 2)
    assert len(few) == 3 and few[-1][1] == 1000
    assert parallel.pieces(5, 10**12, 2) == [(i, i + 1) for i in range(5)]
    assert parallel.pieces(0, 10**12, 2) == [(0, 0)]


def test_a_slow_thread_holds_up_one_piece_only(monkeypatch) -> None:
    """A worker stalled on its first piece (as behind ORT's spinning threads on a shared core): the calling
    thread takes every other piece instead of waiting with half the loop undone."""
    monkeypatch.setitem(parallel._state, "threads", 2)
    caller = threading.get_ident()
    total = len(parallel.pieces(64, 10**12, 2))
    done: list[int] = []
    release = threading.Event()

    def loop(start, stop):
        if threading.get_ident() != caller and not release.wait(timeout=NEVER):
            release.set()  # the caller is not taking the pieces: let the test end and fail
        done.append(threading.get_ident())
        if done.count(caller) >= total - 1:
            release.set()

    parallel.run(loop, 64, 10**12)
    assert len(done) == total
    assert done.count(caller) >= total - 1, done


def test_small_work_stays_on_the_calling_thread(monkeypatch) -> None:
    monkeypatch.setitem(parallel._state, "threads", 4)
    assert parallel.parts(1000, parallel._MIN_WORK - 1) == 1
    assert parallel.parts(1, 10**12) == 1
    assert parallel.parts(1000, 10**12) == 4
    monkeypatch.setitem(parallel._state, "threads", 1)
    assert parallel.parts(1000, 10**12) == 1


def test_errors_in_a_worker_reach_the_caller(split_everything) -> None:
    def loop(start, stop):
        if start > 0:
            raise ValueError(f"part {start}")

    with pytest.raises(ValueError, match="part"):
        parallel.run(loop, 10, 10**9)


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("3", 3), ("0", None), ("many", None)])
def test_thread_count_from_the_environment(value, expected) -> None:
    script = "from customops.accel import parallel; print(parallel.threads()); print(parallel.describe())"
    env = {**os.environ, "CUSTOMOPS_THREADS": value}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=ROOT, check=True
    )
    first, described = out.stdout.splitlines()
    count = int(first)
    assert described.startswith(f"{count} (")
    if expected is None:  # not a positive count: the default, the usable cores (at most 8)
        assert 1 <= count <= min(8, len(os.sched_getaffinity(0)))
        assert f"CUSTOMOPS_THREADS={value!r} is not a positive integer" in described
    else:
        assert count == expected and "CUSTOMOPS_THREADS" in described


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_pool() -> None:
    """A pool made before fork has no threads in the child: the child must make its own, not hang."""
    script = textwrap.dedent(
        """
        import os, numpy as np
        from customops.accel import parallel
        parallel._state["threads"] = 2
        parallel._MIN_WORK = 1
        def loop(out, start, stop):
            out[start:stop] = 1
        out = np.zeros(10)
        parallel.run(loop, 10, 10**9, out)
        pid = os.fork()
        if pid == 0:
            child = np.zeros(10)
            parallel.run(loop, 10, 10**9, child)
            os._exit(0 if child.sum() == 10 else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=NEVER
    )
    assert out.stdout.strip() == "0", out.stderr


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_split_pad_matches_serial(monkeypatch, mode) -> None:
    from customops.kernels.padding.center_crop_pad import center_crop_pad
    from customops.kernels.padding.pad import pad

    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 33, 40)).astype(np.float32)
    pads = np.array([0, 0, 3, -2, 0, 0, 1, 7], np.int64)
    monkeypatch.setitem(parallel._state, "threads", 1)
    want = pad(x, pads, mode=mode)
    cropped = center_crop_pad(x, np.array([40, 30], np.int64), axes=[2, 3])
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)
    assert pad(x, pads, mode=mode).tobytes() == want.tobytes()
    assert center_crop_pad(x, np.array([40, 30], np.int64), axes=[2, 3]).tobytes() == cropped.tobytes()
