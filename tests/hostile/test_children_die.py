"""The sides' children die with the command, whatever signals reach it: a second SIGTERM while compare
is ending its children once made it exit with a busy child still running (a DeformConv computing 35 s
after the command was gone), and a SIGKILL leaves no time to end anyone. Each child asks the kernel to be
killed with its parent (customops.eval.running.lifeline)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from customops.eval.running.sides import INJECT_ENV
from tests.helpers import DEVIATION, NEVER, ROOT

GONE_WITHIN = 60.0
"""Seconds the children may take to be gone once the command is: the kernel kills them as it ends, so
only a machine stalled for a minute could reach this."""

BUSY_MARK_ENV = "CUSTOMOPS_TEST_BUSY_MARK"

SITE = f"""
import os
mark = os.environ.get({BUSY_MARK_ENV!r})
if mark:  # the reference side's child says when it is busy (asleep on the request, not reading the command)
    from customops.eval.running import worker

    original = worker.inject

    def inject(action):
        with open(mark, "a") as f:
            f.write(f"{{os.getpid()}}\\n")
        original(action)

    worker.inject = inject
"""


def _family(marker: bytes) -> set[int]:
    """The live processes (zombies left out) whose environment holds ``marker``: the command and every
    child it started, whoever their parent is now."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "environ").read_bytes():
                continue
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            found.add(int(entry.name))
    return found


def _wait_for(check, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _terminate_while_ending(proc: subprocess.Popen, err: Path) -> None:
    """SIGTERM; once the command says it is terminated (it is ending its children), SIGTERM again every
    50 ms until it is gone, so that one lands while it waits on a busy child, however loaded the
    machine."""
    proc.send_signal(signal.SIGTERM)
    assert _wait_for(lambda: "terminated" in err.read_text() or proc.poll() is not None, NEVER)
    while proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc; the kernel's parent-death signal"
)
@pytest.mark.parametrize("how", ["SIGTERM again while ending", "SIGKILL"])
def test_no_child_of_compare_outlives_it(tmp_path, how):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITE)
    marker = f"customops-test-family-{uuid.uuid4().hex}"
    mark, err = tmp_path / "busy", tmp_path / "stderr"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), ROOT]),
        "CUSTOMOPS_TEST_FAMILY": marker,
        BUSY_MARK_ENV: str(mark),
        INJECT_ENV: "hang:reference",  # the reference's child sleeps an hour on its request
    }
    command = [
        sys.executable,
        "-m",
        "customops.cli.main",
        "compare",
        str(DEVIATION),
        "--reference-timeout",
        "1000",
    ]
    with err.open("w") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env, cwd=tmp_path)
    try:
        assert _wait_for(lambda: mark.exists() and mark.read_text().endswith("\n"), NEVER), err.read_text()
        family = _family(marker.encode())
        busy = int(mark.read_text().split()[0])
        assert proc.pid in family and busy in family and len(family) >= 4, (family, err.read_text())
        if how == "SIGKILL":
            proc.kill()
        else:
            _terminate_while_ending(proc, err)
        status = proc.wait(NEVER)
        assert status in ((-9,) if how == "SIGKILL" else (143, -15)), (status, err.read_text())
        assert _wait_for(lambda: not _family(marker.encode()), GONE_WITHIN), _family(marker.encode())
    finally:
        proc.kill()
        proc.wait(NEVER)
        for pid in _family(marker.encode()):  # nothing left behind if the test failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_child_started_on_a_thread_that_ends_keeps_running():
    """The kernel's parent-death signal follows the thread that started a child: the fuzzer's lanes
    restart a side on threads of their own that end soon after. A side started, and served once, on a
    thread still answers once that thread is gone from the process (lifeline.started starts it on a
    thread that lives as long as the process)."""
    import numpy as np

    from customops.eval.running.runner import SideProcess
    from customops.eval.running.worker import Request
    from tests.helpers import one_node_model

    model, feed = one_node_model(
        "Pad", {"data": np.zeros((1, 1, 2, 2), np.float32), "pads": np.zeros(8, np.int64)}, 19
    )
    request = Request(model.SerializeToString(), feed)
    worker = SideProcess("builtin")
    replies, tid = [], []

    def first() -> None:  # the child has asked for its signal once it answers
        tid.append(threading.get_native_id())
        worker.start()
        replies.append(worker.result(worker.submit(request)))

    thread = threading.Thread(target=first)
    thread.start()
    thread.join()
    try:
        assert _wait_for(lambda: not Path(f"/proc/self/task/{tid[0]}").exists(), NEVER)  # ended in the kernel
        assert worker.proc is not None
        pid = worker.proc.pid
        replies.append(worker.result(worker.submit(request)))
        assert [r.status for r in replies] == ["ok", "ok"], replies
        assert worker.restarts == 0 and worker.proc.pid == pid  # the same child answered
    finally:
        worker.close()
