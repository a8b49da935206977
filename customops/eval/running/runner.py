"""The parent's side of the children that run each side (customops.eval.running.worker): :class:`SideProcess`
starts one, sends it requests, and turns its death into a ``crash`` reply and a missing answer by a
deadline into a ``hang`` (the child is then killed); either way a fresh child serves the next request.
compare keeps one per side for its whole-model runs (customops.eval.running.sides); the fuzzer groups them in
lanes of three (built-in, custom, reference) and a pool of lanes, so a campaign goes on past a crash."""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from customops.accel import jit
from customops.errors import CustomOpsError
from customops.eval.running import forked, lifeline
from customops.eval.running.worker import SIDES, Reply, Request, verbose

STARTUP_TIMEOUT = 300.0
"""Seconds a new child may take to import onnxruntime and say it is ready."""

MAX_SECONDS = 1_000_000.0
"""The longest time limit a user may give (compare's ``--reference-timeout``, fuzz's ``--case-timeout`` and
``--time-budget``, ``customops.compare``'s ``reference_timeout``): about 11.5 days, far past any run, and
far inside what waiting on a child can count (poll(2) takes at most 2**31 - 1 ms; a deadline of 1e10 s
overflows Python's clock)."""


def checked_seconds(value: object, option: str) -> float:
    """``value`` as a time limit in seconds, or CustomOpsError naming ``option`` and the allowed range
    (above 0, at most :data:`MAX_SECONDS`): the one rule of every time limit a user gives."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        seconds = float(value)
        if math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS:
            return seconds
    raise CustomOpsError(
        f"{option} {value!r} must be a positive number of seconds, at most {MAX_SECONDS:.0f} (11.5 days)"
    )


PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding this customops package: the children start there, so that ``python -m`` finds
this package and never one in the user's current directory."""


@dataclass
class Outcome:
    """What one side did with a fuzz case: ``status`` is 'ok' (``value`` holds the output), 'error' (it
    rejected the case; ``message`` says where and why), 'crash' or 'hang'."""

    status: str
    value: Any = None
    message: str = ""
    seconds: float = 0.0


def outcome_of(reply: Reply) -> Outcome:
    """The fuzzer's view of a reply (the error with its stage and class; a crash's reason and tail)."""
    if reply.status == "error":
        return Outcome("error", None, reply.error, reply.seconds)
    if reply.status == "crash":
        text = f"worker {reply.message}"
        return Outcome("crash", None, f"{text}: {reply.tail}" if reply.tail else text, reply.seconds)
    return Outcome(reply.status, reply.value, reply.message, reply.seconds)


def exit_reason(code: int | None) -> str:
    """How a child ended: ``killed by SIGABRT``, ``exited with status 3``."""
    if code is None:
        return "unknown exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class WorkerDied(CustomOpsError):
    """A child died before it said it was ready (``reason``: how it ended; ``tail``: its last lines)."""

    def __init__(self, side: str, reason: str, tail: str) -> None:
        super().__init__(f"the {side} worker died while starting ({reason}): {tail}")
        self.reason, self.tail = reason, tail


def _stderr_fd() -> list[int]:
    """A duplicate of this process's stderr file descriptor (the child's own fd 2 is its log), if it has
    one; the caller closes it."""
    try:
        return [os.dup(sys.stderr.fileno())]
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return []


class SideProcess:
    """One child process for one side, restarted after a crash or a hang. With ``note``, the child gets
    this process's stderr for the note of a first compilation, if this process writes that note itself
    (customops.accel.jit.announcing: not under ``-q``)."""

    def __init__(self, side: str, note: bool = False) -> None:
        self.side = side
        self.note = note
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - the child's stdout and stderr while this lives
        self.proc: subprocess.Popen[bytes] | forked.ForkedChild | None = None
        self.conn: Any = None
        self.ready = False
        self.noting = False
        self.restarts = 0
        self._job = 0

    def start(self, fork: bool = False) -> None:
        """Start the child (``python -m customops.eval.running.child``), connected by a socket pair; with
        ``fork``, forked from this process where it may be (customops.eval.running.forked.possible)."""
        parent, child = socket.socketpair()
        self.log.seek(0)
        self.log.truncate()
        self.noting = self.note and jit.announcing()
        fds = [child.fileno(), *(_stderr_fd() if self.noting else [])]
        try:
            self.proc = lifeline.started(lambda: self._spawn(fds, fork))
        finally:
            child.close()
            for fd in fds[1:]:
                os.close(fd)
        self.conn = Connection(parent.detach())
        self.ready = False

    def _spawn(self, fds: list[int], fork: bool) -> subprocess.Popen[bytes] | forked.ForkedChild:
        """The child, forked or started afresh (:meth:`start`), serving the connection ``fds[0]``; on a
        thread that outlives it (customops.eval.running.lifeline.started)."""
        if fork and forked.possible():
            note = fds[1] if len(fds) > 1 else None
            return forked.fork_side(self.side, fds[0], note, self.log.fileno(), verbose())
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "customops.eval.running.child",
                self.side,
                str(os.getpid()),
                *map(str, fds),
            ],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=None if verbose() else self.log,
            cwd=PACKAGE_ROOT,
        )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _ensure_ready(self) -> None:
        if self.proc is None:
            self.start()
        if self.ready:
            return
        try:
            if not self.conn.poll(STARTUP_TIMEOUT):
                raise CustomOpsError(f"the {self.side} worker did not start within {STARTUP_TIMEOUT:.0f} s")
            said = self.conn.recv()
        except (EOFError, OSError):
            assert self.proc is not None
            self._reap(10)
            if self.proc.returncode == -signal.SIGINT:  # a child ignores Ctrl-C from its first line:
                raise KeyboardInterrupt from None  # one that came sooner was the user's, to the command
            raise WorkerDied(self.side, exit_reason(self.proc.returncode), self.tail()) from None
        if said[0] != "ready":
            raise CustomOpsError(f"the {self.side} worker said {said!r} instead of ready")
        self.ready = True

    def submit(self, request: Request) -> int:
        """Send ``request``; returns its job number for :meth:`result`. A child started with the note of
        a first compilation on, or off, is replaced when that has changed since (a new command in this
        process: ``-q`` or not)."""
        if self.proc is not None and self.noting != (self.note and jit.announcing()):
            self.close()
        self._ensure_ready()
        self._job += 1
        try:
            self.conn.send((self._job, request))
        except OSError:  # the child died since its last answer: start another
            self.restart()
            self._ensure_ready()
            self.conn.send((self._job, request))
        return self._job

    def tail(self) -> str:
        """The child's last three lines of output."""
        self.log.seek(0)
        text = self.log.read()[-4000:].decode(errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " / ".join(lines[-3:])[:400]

    def result(self, job: int, deadline: float | None = None) -> Reply:
        """The answer to ``job``; a dead child is a crash, no answer by ``deadline`` (perf_counter time;
        None: wait) a hang, and the child is then killed. Either way a fresh child replaces it."""
        started = time.perf_counter()
        while True:
            try:
                wait = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
                if not self.conn.poll(None if wait is None else min(wait, MAX_SECONDS)):
                    if wait is not None and wait > MAX_SECONDS:  # a caller's far deadline: wait again
                        continue
                    break
                got, reply = self.conn.recv()
            except (EOFError, OSError):
                return self._crashed(started)
            if got == job:
                return reply
        if not self.alive():
            return self._crashed(started)
        self.kill()
        return Reply("hang", message="no answer within the time limit", seconds=time.perf_counter() - started)

    def _reap(self, seconds: float) -> None:
        assert self.proc is not None
        try:
            self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def _crashed(self, started: float) -> Reply:
        assert self.proc is not None
        self._reap(5)
        reason, tail = exit_reason(self.proc.returncode), self.tail()
        self.restart()
        return Reply("crash", message=reason, tail=tail, seconds=time.perf_counter() - started)

    def kill(self) -> None:
        if self.proc is not None and self.alive():
            self.proc.kill()
            self.proc.wait(10)
        self.restart()

    def restart(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.restarts += 1
        self.start()

    def close(self) -> None:
        """End the child (politely first, once it is ready: one still starting is killed at once; so is
        one still running when a signal cuts the wait short)."""
        if self.proc is None:
            return
        try:
            if self.ready:
                with contextlib.suppress(Exception):
                    self.conn.send(None)
                self._reap(2)
        finally:
            self.proc.kill()
            self.conn.close()
        self.proc.wait(10)
        self.proc = None


class Lane:
    """Three workers, one per side; runs a request on all three at once."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.workers = {side: SideProcess(side) for side in SIDES}
        try:
            for w in self.workers.values():
                w.start()
        except BaseException:  # stop the workers started so far
            self.close()
            raise

    def run(self, request: Request) -> dict[str, Outcome]:
        jobs = {side: w.submit(request) for side, w in self.workers.items()}
        deadline = time.perf_counter() + self.timeout
        return {side: outcome_of(self.workers[side].result(jobs[side], deadline)) for side in SIDES}

    def run_side(self, side: str, request: Request) -> Outcome:
        """``request`` on one side alone (the yardstick's float64 run on ours)."""
        worker = self.workers[side]
        job = worker.submit(request)
        return outcome_of(worker.result(job, time.perf_counter() + self.timeout))

    def close(self) -> None:
        for w in self.workers.values():
            w.close()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and taskset restrict)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS)
        return os.cpu_count() or 1


class Pool:
    """``jobs`` lanes shared by any number of threads: :meth:`run` borrows a lane for one request."""

    def __init__(self, jobs: int, timeout: float) -> None:
        self.lanes: queue.Queue[Lane] = queue.Queue()
        self._all: list[Lane] = []
        try:
            for _ in range(jobs):
                self._all.append(Lane(timeout))
        except BaseException:  # e.g. the system refuses more processes: stop the workers started so far
            self.close()
            raise
        for lane in self._all:
            self.lanes.put(lane)
        self.runs = 0
        self._lock = threading.Lock()

    @property
    def restarts(self) -> int:
        return sum(w.restarts for lane in self._all for w in lane.workers.values())

    def run(self, request: Request) -> dict[str, Outcome]:
        lane = self.lanes.get()
        try:
            return lane.run(request)
        finally:
            self.lanes.put(lane)
            with self._lock:
                self.runs += 1

    def run_side(self, side: str, request: Request) -> Outcome:
        """``request`` on one side of a free lane (:meth:`Lane.run_side`)."""
        lane = self.lanes.get()
        try:
            return lane.run_side(side, request)
        finally:
            self.lanes.put(lane)

    def close(self) -> None:
        for lane in self._all:
            lane.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parallel(items: list[Any], fn: Callable[[Any], Any], threads: int) -> list[Any]:
    """``[fn(item) for item in items]`` on ``threads`` threads, results in the order of ``items``.
    An exception in one call is raised after the others finish (KeyboardInterrupt stops at once)."""
    if threads <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(items)):
        todo.put(i)

    def work() -> None:
        while not errors:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:
                errors.append(exc)

    pool = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        while t.is_alive():
            t.join(0.2)
    if errors:
        raise errors[0]
    return results
