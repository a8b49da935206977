"""A side's child forked from the command's own process, which has imported onnx already: the custom and
reference sides then start without importing it again (about 0.6 s of CPU each, most of it ml_dtypes).

Only the command line forks, once, at its start (customops.eval.running.sides.start_all with ``fork``): its
process has then started no Python thread, no ONNX Runtime session and no compiled loop, so the child inherits
nothing that a fork would break (numpy's OpenBLAS pool, started on import, is rebuilt by OpenBLAS's own fork
handler). The Python objects that held the descriptors the child closes stay referenced until it ends by
``os._exit``: none is collected and closes a number reused meanwhile. Any other caller (``customops.compare``
in a user's process, a restart after a crash) starts a fresh interpreter
(customops.eval.running.runner.SideProcess).

The child is what ``python -m customops.eval.running.child`` would be: SIGINT ignored from its first step (the
command handles Ctrl-C and then ends it), SIGTERM at its default, stdin from /dev/null, stdout (and stderr
unless ``-v``) into its log, and no file descriptor of the command's but its connection and the note's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

from customops.eval.running.lifeline import die_with_parent

HELD = {signal.SIGINT, signal.SIGTERM}
"""Blocked in the command around the fork: a signal then waits for the command's handler in the command,
and never runs it in the child before the child has set its own."""


def possible() -> bool:
    """Whether a child may be forked from here now: on Linux (macOS's system libraries are not safe to use
    in a forked child, which is why Python spawns there too), and this process runs one thread (a fork
    copies no other thread, nor the lock one of them may hold)."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


class ForkedChild:
    """The parent's handle of a forked child, answering as subprocess.Popen does for what
    customops.eval.running.runner uses: ``poll``, ``wait``, ``kill``, ``returncode`` (negative: the
    signal)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its status is lost
                self.returncode = 1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"forked side {self.pid}", timeout or 0.0)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def fork_side(side: str, conn_fd: int, note_fd: int | None, log_fd: int, own_stderr: bool) -> ForkedChild:
    """Fork the child of ``side``, serving the connection ``conn_fd`` (customops.eval.running.worker.serve);
    ``note_fd``: the command's stderr for the note of a first compilation; ``log_fd``: its stdout, and its
    stderr unless ``own_stderr`` (``-v``: the command's stderr stays the child's)."""
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice
        with contextlib.suppress(Exception):
            stream.flush()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    parent = os.getpid()
    try:
        pid = os.fork()
        if pid == 0:
            _serve_in_child(side, (conn_fd, parent), note_fd, log_fd, own_stderr)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return ForkedChild(pid)


def _serve_in_child(
    side: str, conn: tuple[int, int], note_fd: int | None, log_fd: int, own_stderr: bool
) -> None:
    """The forked child (``conn``: its connection's descriptor and the command's process id): set up as
    ``python -m customops.eval.running.child`` would be, killed with the command
    (customops.eval.running.lifeline), serve, and end without running anything of the command's (its exit
    handlers, its buffered output)."""
    code = 1
    conn_fd, parent = conn
    try:
        die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        _redirect(log_fd, own_stderr)
        _close_all_but({0, 1, 2, conn_fd, *([] if note_fd is None else [note_fd])})
        from multiprocessing.connection import Connection

        from customops.eval.running.worker import serve

        serve(Connection(conn_fd), side, note_fd)
        code = 0
    except BaseException:  # into the log: the parent reports the child's last lines
        with contextlib.suppress(Exception):
            traceback.print_exc()
            sys.stderr.flush()
    finally:
        os._exit(code)


def _redirect(log_fd: int, own_stderr: bool) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(log_fd, 1)
    if not own_stderr:
        os.dup2(log_fd, 2)


def _close_all_but(keep: set[int]) -> None:
    """Close every file descriptor of the command's but ``keep``: a copy of another child's connection
    held here would keep that child from seeing the command end."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):  # no /proc: every number up to the limit
        open_fds = list(range(_max_fd()))
    for fd in open_fds:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _max_fd() -> int:
    try:
        return min(int(os.sysconf("SC_OPEN_MAX")), 1 << 16)
    except (ValueError, OSError):
        return 1 << 16
