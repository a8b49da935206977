"""Worker processes per side, grouped in lanes of three (built-in, custom, reference), and a pool of
lanes. A lane runs one case on its three sides at once; a side that crashes (the process dies, e.g. an
abort) or hangs (no answer within the per-case time limit) is recorded as such and its worker is
replaced, so the campaign goes on."""

from __future__ import annotations

import contextlib
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
from typing import Any

from customops.errors import CustomOpsError
from customops.eval.worker import SIDES, Request

STARTUP_TIMEOUT = 300.0
"""Seconds a new worker may take to import onnxruntime and say it is ready."""


@dataclass
class Outcome:
    """What one side did with a case: ``status`` is 'ok' (``value`` holds the output), 'error' (it
    rejected the case; ``message`` says where and why), 'crash' or 'hang'."""

    status: str
    value: Any = None
    message: str = ""
    seconds: float = 0.0


def _signal_name(code: int | None) -> str:
    if code is None:
        return "unknown exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class SideWorker:
    """One worker process for one side, restarted after a crash or a hang."""

    def __init__(self, side: str, log_dir: str) -> None:
        self.side = side
        self.log_path = os.path.join(log_dir, f"{side}-{id(self)}.log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Any = None
        self.ready = False
        self.restarts = 0
        self._job = 0

    def start(self) -> None:
        """Start the worker process (``python -m customops.eval.worker``), connected by a socket pair."""
        parent, child = socket.socketpair()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "customops.eval.worker", self.side, str(child.fileno())],
                pass_fds=[child.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        child.close()
        self.conn = Connection(parent.detach())
        self.ready = False

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
            message = self.conn.recv()
        except (EOFError, OSError):
            assert self.proc is not None
            self.proc.wait(10)
            raise CustomOpsError(
                f"the {self.side} worker died while starting ({_signal_name(self.proc.returncode)}): {self._tail()}"
            ) from None
        if message[0] != "ready":
            raise CustomOpsError(f"the {self.side} worker said {message!r} instead of ready")
        self.ready = True

    def submit(self, request: Request) -> int:
        self._ensure_ready()
        self._job += 1
        try:
            self.conn.send((self._job, request))
        except OSError:  # the worker died since its last answer: start another
            self.restart()
            self._ensure_ready()
            self.conn.send((self._job, request))
        return self._job

    def _tail(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                lines = [line.strip() for line in f.read().splitlines() if line.strip()]
        except OSError:
            return ""
        return " / ".join(lines[-3:])[:400]

    def result(self, job: int, deadline: float) -> Outcome:
        """The answer to ``job``; a dead worker is a crash, no answer by ``deadline`` a hang (the worker
        is then killed). Either way a fresh worker replaces it."""
        started = time.perf_counter()
        while True:
            try:
                if not self.conn.poll(max(deadline - time.perf_counter(), 0.0)):
                    break
                status, got, value, message, seconds = self.conn.recv()
            except (EOFError, OSError):
                return self._crashed(started)
            if got == job:
                return Outcome(status, value, message, seconds)
        if not self.alive():
            return self._crashed(started)
        self.kill()
        return Outcome(
            "hang", message="no answer within the time limit", seconds=time.perf_counter() - started
        )

    def _crashed(self, started: float) -> Outcome:
        assert self.proc is not None
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        message = f"worker {_signal_name(self.proc.returncode)}"
        tail = self._tail()
        self.restart()
        return Outcome(
            "crash", message=f"{message}: {tail}" if tail else message, seconds=time.perf_counter() - started
        )

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
        if self.proc is None:
            return
        with contextlib.suppress(Exception):
            self.conn.send(None)
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.conn.close()
        self.proc = None


class Lane:
    """Three workers, one per side; runs a request on all three at once."""

    def __init__(self, log_dir: str, timeout: float) -> None:
        self.timeout = timeout
        self.workers = {side: SideWorker(side, log_dir) for side in SIDES}
        try:
            for w in self.workers.values():
                w.start()
        except BaseException:  # stop the workers started so far
            self.close()
            raise

    def run(self, request: Request) -> dict[str, Outcome]:
        jobs = {side: w.submit(request) for side, w in self.workers.items()}
        deadline = time.perf_counter() + self.timeout
        return {side: self.workers[side].result(jobs[side], deadline) for side in SIDES}

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
        self._tmp = tempfile.TemporaryDirectory(prefix="customops-fuzz-")
        self.lanes: queue.Queue[Lane] = queue.Queue()
        self._all: list[Lane] = []
        try:
            for _ in range(jobs):
                self._all.append(Lane(self._tmp.name, timeout))
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

    def close(self) -> None:
        for lane in self._all:
            lane.close()
        self._tmp.cleanup()

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
