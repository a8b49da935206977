"""Running a model on one side, ORT's built-in kernels or ours, in a child process of its own.

Whatever a model does to ONNX Runtime or to onnxruntime-extensions' layer (an abort inside a custom-op
callback, a segmentation fault in a kernel), it takes down only the child: the side's run then reports
"the custom side crashed: ..." with the child's last words, and a fresh child serves the next run. Each
side keeps one child per process, started on first use and reused (starting one imports onnxruntime).

The child is ``python -m customops.eval.sides SIDE FD``; it talks to us over a socket pair with
``multiprocessing.connection`` (pickles between our own two processes only: the parent sends the
serialized model and numpy arrays it holds, the child sends back arrays).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from customops.eval.messages import message

SIDES = ("builtin", "custom")

INJECT_ENV = "CUSTOMOPS_SIDE_INJECT"
"""Test hook: ``abort:SIDE`` makes the child of SIDE call ``os.abort()`` on every run it is asked for, as a
crash inside ORT or the layer would."""

OUTPUT_LIMIT = 2 * 2**30
"""Most bytes a side's run may hand back (all its outputs together): compare holds four such runs and
their metrics at once; a model whose outputs exceed this is reported as the side's error, not read."""

VERBOSE_ENV = "CUSTOMOPS_ORT_LOG"
"""Set to ``1`` (the CLI's ``-v``) to keep ONNX Runtime's own log at warning level in the children."""


@dataclass
class SideRun:
    """Outputs of one run by name, or the error that stopped it; ``times`` per node name in µs."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None
    times: dict[str, float] = field(default_factory=dict)


def _verbose() -> bool:
    return os.environ.get(VERBOSE_ENV) == "1"


def _ort_log_level() -> int:
    """ONNX Runtime's severity: warnings (2) with :data:`VERBOSE_ENV`, else errors only (3)."""
    return 2 if _verbose() else 3


def quiet_ort_log() -> None:
    """Keep ONNX Runtime's default logger below errors (it prints coloured warnings and, for a model it
    refuses, several lines before ours), unless :data:`VERBOSE_ENV` asks for it."""
    import onnxruntime as ort

    ort.set_default_logger_severity(_ort_log_level())


# ---------------------------------------------------------------------------------------------------------
# in the child


def _session(model: bytes, custom: bool, profile_dir: str | None) -> Any:
    import onnxruntime as ort

    from customops.bridge.runtime import InferenceSession

    opts = ort.SessionOptions()
    opts.log_severity_level = _ort_log_level()
    if profile_dir is not None:
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(profile_dir, "custom" if custom else "builtin")
    if custom:
        return InferenceSession(model, sess_options=opts)
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _kernel_times(profile_file: str) -> dict[str, float]:
    with open(profile_file) as f:
        events = json.load(f)
    samples: dict[str, list[float]] = {}
    for e in events:
        if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time"):
            samples.setdefault(e["name"][: -len("_kernel_time")], []).append(float(e.get("dur", 0)))
    return {k: float(np.median(v)) for k, v in samples.items()}


def run_here(model: bytes, feed: dict[str, np.ndarray], custom: bool, repeats: int = 0) -> SideRun:
    """Run the serialized ``model`` on one side in this process; with ``repeats`` > 0 also profile that
    many runs for per-node times."""
    result = SideRun()
    with tempfile.TemporaryDirectory(prefix="customops-profile-") as tmp:
        try:
            sess = _session(model, custom, tmp if repeats else None)
            names = [o.name for o in sess.get_outputs()]
            values = sess.run(None, feed)
            for _ in range(max(repeats - 1, 0)):
                sess.run(None, feed)
            result.values = dict(zip(names, values, strict=True))
        except Exception as exc:
            result.error = message(exc)
            return result
        if repeats:
            try:
                result.times = _kernel_times(sess.end_profiling())
            except Exception:  # profiling is informative only
                result.times = {}
    return result


def _serve(conn: Connection, side: str, note_fd: int | None) -> None:
    quiet_ort_log()
    if note_fd is not None:  # the command's own stderr, for the note of a first compilation
        from customops.accel import jit

        jit.announce_compilation(os.fdopen(note_fd, "w"))
    abort = os.environ.get(INJECT_ENV, "") == f"abort:{side}"
    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        model, feed, repeats = request
        _empty_log()
        if abort:
            os.abort()
        result = bounded(run_here(model, feed, side == "custom", repeats))
        conn.send((result.values, result.error, result.times))  # plain types: we run as __main__ here


def bounded(result: SideRun) -> SideRun:
    """``result``, or its error in place of outputs that hold more than :data:`OUTPUT_LIMIT` bytes."""
    size = sum(int(np.asarray(v).nbytes) for v in result.values.values())
    if size <= OUTPUT_LIMIT:
        return result
    return SideRun(
        error=f"the outputs of this run hold {size} bytes, over the {OUTPUT_LIMIT} bytes compare takes back"
    )


def _empty_log() -> None:
    """Empty this child's stderr file before a run, so that a crash leaves only its own last words."""
    with contextlib.suppress(OSError):
        os.ftruncate(2, 0)
        os.lseek(2, 0, os.SEEK_SET)


def main(argv: list[str]) -> None:
    """``python -m customops.eval.sides SIDE FD [NOTE_FD]``: serve runs of SIDE on the connection at file
    descriptor FD; NOTE_FD, if given, is where the note of a first compilation goes."""
    side, fd = argv[0], int(argv[1])
    if side not in SIDES:
        raise SystemExit(f"unknown side {side!r}")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and then ends us
    _serve(Connection(fd), side, int(argv[2]) if len(argv) > 2 else None)


# ---------------------------------------------------------------------------------------------------------
# in the parent


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exited with status {code}"


def _reap(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait up to ``seconds`` for ``proc`` to end, then kill it."""
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _stderr_fd() -> list[int]:
    """A duplicate of this process's stderr file descriptor (the child's own fd 2 is its log), if it has
    one; the caller closes it."""
    try:
        return [os.dup(sys.stderr.fileno())]
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return []


class SideProcess:
    """The child process of one side; a dead child is replaced at the next run."""

    def __init__(self, side: str) -> None:
        self.side = side
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - the child's stderr while this object lives

    def _start(self) -> Connection:
        parent, child = socket.socketpair()
        self.log.seek(0)
        self.log.truncate()
        fds = [child.fileno(), *_stderr_fd()]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "customops.eval.sides", self.side, *map(str, fds)],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=None if _verbose() else self.log,
        )
        child.close()
        for fd in fds[1:]:
            os.close(fd)
        self.conn = Connection(parent.detach())
        if self.conn.recv() != "ready":
            raise OSError("the child did not say it was ready")
        return self.conn

    def run(self, model: bytes, feed: dict[str, np.ndarray], repeats: int = 0) -> SideRun:
        """The side's run of the serialized ``model``, or the crash of its child as the error."""
        try:
            conn = self.conn if self.alive() else self._start()
            assert conn is not None
            conn.send((model, feed, repeats))
            values, error, times = conn.recv()
            return SideRun(values, error, times)
        except (EOFError, OSError):
            return SideRun(error=self._crashed())

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and self.conn is not None

    def _crashed(self) -> str:
        reason = "did not start"
        if self.proc is not None:
            _reap(self.proc, 10)
            reason = _exit_reason(self.proc.returncode)
        self.close()
        name = "built-in" if self.side == "builtin" else self.side
        tail = self._tail()
        return f"the {name} side crashed ({reason})" + (f": {tail}" if tail else "")

    def _tail(self) -> str:
        self.log.seek(0)
        text = self.log.read()[-4000:].decode(errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " / ".join(lines[-3:])[:400]

    def close(self) -> None:
        """End the child (politely first)."""
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            _reap(self.proc, 2)
            self.proc = None


_CHILDREN: dict[str, SideProcess] = {}


def run_side(model: bytes, feed: dict[str, np.ndarray], custom: bool, repeats: int = 0) -> SideRun:
    """Run the serialized ``model`` on one side in that side's child process (see the module docstring)."""
    side = "custom" if custom else "builtin"
    child = _CHILDREN.get(side)
    if child is None:
        child = _CHILDREN[side] = SideProcess(side)
    return child.run(model, feed, repeats)


@atexit.register
def close_all() -> None:
    """End every side's child (at exit, and after an interrupted command)."""
    for child in _CHILDREN.values():
        child.close()


if __name__ == "__main__":
    main(sys.argv[1:])
