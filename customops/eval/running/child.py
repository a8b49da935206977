"""``python -m customops.eval.running.child SIDE PARENT FD [NOTE_FD]``: serve one side
(customops.eval.running.worker) on the connection at file descriptor FD; PARENT is the process id of the
process that started it (the child dies with it: customops.eval.running.lifeline); NOTE_FD, if given, is
where the note of a first compilation goes.

A module of its own so that the classes the child sends back (customops.eval.running.worker.Reply) are pickled
under their importable name, not as ``__main__``'s."""

from __future__ import annotations

import signal
import sys

if __name__ == "__main__":  # the parent handles Ctrl-C and then ends us: ignored from the start, so that
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # it never cuts onnx or ONNX Runtime starting (a crash)
    from customops.eval.running.lifeline import die_with_parent

    die_with_parent(int(sys.argv[2]))  # before anything slow: killed with the parent from here on

from multiprocessing.connection import Connection

from customops.eval.running.worker import SIDES, serve


def main(argv: list[str]) -> None:
    side, fd = argv[0], int(argv[2])
    if side not in SIDES:
        raise SystemExit(f"unknown side {side!r}")
    serve(Connection(fd), side, int(argv[3]) if len(argv) > 3 else None)


if __name__ == "__main__":
    main(sys.argv[1:])
