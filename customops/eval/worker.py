"""The worker process of one side: it runs one-node models as ORT's built-in kernels, ours (rewritten into
the customops domain) or onnx.reference does, one request at a time, and answers with the output or the
error. A crash or a hang takes only this process down; the coordinator records it and starts another.

Test hook: the environment variable ``CUSTOMOPS_FUZZ_INJECT`` holds comma-separated ``ACTION:SIDE:INDEX``
items (ACTION ``abort``, ``exit`` or ``hang``); the worker of SIDE then calls ``os.abort()``, ``os._exit(3)``
or sleeps for an hour when it is asked to run campaign case INDEX (not when the triage reruns it).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from customops.eval.messages import described

INJECT_ENV = "CUSTOMOPS_FUZZ_INJECT"

SIDES = ("builtin", "custom", "reference")

MAX_OUTPUT_BYTES = 64 << 20
"""Largest output a worker sends back. A campaign's valid cases have at most 720 output elements
(customops.fuzz.spaces.base.OUT_LIMIT); a replayed case comes from a file and could ask a side for any size,
which would then be copied into the coordinator: past this it is an error of that side instead."""


@dataclass
class Request:
    """What a worker runs: the model (serialized), its feed, and which case it is (for the test hook)."""

    index: int
    tag: str
    """'case' for a campaign run, 'triage' for reruns by the triage and the shrinker."""
    model: bytes
    feed: dict[str, Any]


def _injections() -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for item in os.environ.get(INJECT_ENV, "").split(","):
        parts = item.strip().split(":")
        if len(parts) == 3 and parts[2].strip().lstrip("-").isdigit():
            out[(parts[1].strip(), int(parts[2]))] = parts[0].strip()
    return out


def _inject(action: str) -> None:
    if action == "abort":
        os.abort()
    if action == "exit":
        os._exit(3)
    if action == "hang":
        time.sleep(3600)


class _Runner:
    """Runs requests for one side (imports happen once, in the worker)."""

    def __init__(self, side: str) -> None:
        import warnings

        import numpy as np
        import onnxruntime as ort

        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        self.side = side
        self.ort = ort
        if side == "custom":
            import customops  # noqa: F401  (registers nothing yet; sessions do)

    def options(self) -> Any:
        opts = self.ort.SessionOptions()
        opts.log_severity_level = 4
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        return opts

    def run(self, request: Request) -> Any:
        import numpy as np
        import onnx

        if self.side == "builtin":
            options = self.options()
            sess = _staged(
                "load", self.ort.InferenceSession, request.model, options, ["CPUExecutionProvider"]
            )
            return np.asarray(_staged("run", sess.run, None, request.feed)[0])
        model = onnx.ModelProto.FromString(request.model)
        if self.side == "reference":
            from onnx.reference import ReferenceEvaluator

            evaluator = _staged("load", ReferenceEvaluator, model)
            return np.asarray(_staged("run", evaluator.run, None, request.feed)[0])
        import customops

        result = customops.rewrite_model(model)
        if result.skipped or not result.swapped:
            reason = result.skipped[0].reason if result.skipped else "no node to swap"
            raise _Stage("rewrite", RuntimeError(f"not swapped: {reason}"))
        sess = _staged("load", customops.InferenceSession, result.model, self.options())
        return np.asarray(_staged("run", sess.run, None, request.feed)[0])


def _staged(stage: str, call: Any, *args: Any) -> Any:
    """``call(*args)``, any exception raised as the _Stage ``stage`` (load, run) of the side."""
    try:
        return call(*args)
    except Exception as exc:
        raise _Stage(stage, exc) from None


class _Stage(Exception):
    def __init__(self, stage: str, exc: BaseException) -> None:
        super().__init__(f"{stage}: {described(exc)}")


def worker_main(conn: Any, side: str) -> None:
    """Answer requests on ``conn`` until it closes (stderr is the coordinator's log of this worker,
    emptied before each request, so a crash leaves its last words there)."""
    runner = _Runner(side)
    injections = _injections()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        job, request = message
        for fd in (1, 2):
            try:
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
            except OSError:
                pass
        action = injections.get((side, request.index)) if request.tag == "case" else None
        if action:
            _inject(action)
        started = time.perf_counter()
        try:
            value = runner.run(request)
            if value.nbytes > MAX_OUTPUT_BYTES:
                raise _Stage("run", MemoryError(f"output of {value.nbytes} bytes, over {MAX_OUTPUT_BYTES}"))
            reply = ("ok", job, value, "", time.perf_counter() - started)
        except _Stage as exc:
            reply = ("error", job, None, str(exc), time.perf_counter() - started)
        except BaseException as exc:  # the side failed in a way that is not ORT's nor the kernel's
            reply = ("error", job, None, f"run: {described(exc)}", time.perf_counter() - started)
        try:
            conn.send(reply)
        except Exception as exc:  # an output pickle cannot carry
            conn.send(("error", job, None, f"run: output not transferable: {described(exc)}", 0.0))


def main(argv: list[str]) -> None:
    """``python -m customops.eval.worker SIDE FD``: serve the connection on file descriptor FD."""
    from multiprocessing.connection import Connection

    side, fd = argv[0], int(argv[1])
    if side not in SIDES:
        raise SystemExit(f"unknown side {side!r}")
    worker_main(Connection(fd), side)


if __name__ == "__main__":
    main(sys.argv[1:])
