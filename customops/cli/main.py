"""The ``customops`` command: one entry point, argparse subcommands (one module of customops.cli each).

stdout carries results, stderr progress and errors. A problem with the user's input exits with status 2
and one line on stderr; nothing is written and the input is untouched.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from customops.cli import bench, compare, conformance, examples, fuzz, inspect, ops, rewrite
from customops.errors import CustomOpsError
from customops.safeio import printable
from customops.signals import NATIVE_PACKAGES, import_held, signals_held


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage mistakes reported as bad input is: one line on stderr naming the problem and
    where to read the usage, exit status 2. Subcommand parsers made from it are of this class too, and
    report arguments they do not know themselves (naming the subcommand), with the option meant where
    one is close (:meth:`hint`)."""

    refusals: dict[str, str] = {}  # noqa: RUF012  # a subcommand's: options of another tool it does not take, and why

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} -h')\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self.hint(extras)}")
        return parsed, extras

    def hint(self, extras: list[str]) -> str:
        """For the first unknown option among ``extras``: why this command does not take it (another
        tool's option, :attr:`refusals`), or the option of this parser it is closest to ("did you
        mean --atol?"); empty when none is close."""
        import difflib

        unknown = next((e.split("=", 1)[0] for e in extras if e.startswith("--")), None)
        if unknown is None:
            return ""
        if unknown in self.refusals:
            return f" ({unknown}: {self.refusals[unknown]})"
        known = [o for o in self._option_string_actions if o.startswith("--")]
        close = difflib.get_close_matches(unknown, known, n=1, cutoff=0.75)
        return f" (did you mean {close[0]}?)" if close else ""


VERSIONED = ("onnx", "onnxruntime", "onnxruntime-extensions", "numpy", "numba")
"""Distributions whose versions ``customops --version`` prints beside ours (what a bug report needs)."""


def version_line() -> str:
    """``customops X (onnx Y, onnxruntime Z, ..., Python P)``, without importing those packages."""
    from importlib.metadata import PackageNotFoundError, version

    from customops import __version__

    parts = []
    for name in VERSIONED:
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} not installed")
    python = ".".join(str(v) for v in sys.version_info[:3])
    return f"customops {__version__} ({', '.join(parts)}, Python {python})"


class _Version(argparse.Action):
    """``--version``: :func:`version_line` on stdout, one unwrapped line, exit 0."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        print(version_line())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``customops`` command."""
    parser = OneLineParser(
        prog="customops",
        description=(
            "Spec-exact ONNX operators as ONNX Runtime custom ops: rewrite and run models, compare ORT's "
            "kernels with ours node by node, fuzz them, benchmark them."
        ),
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="print the versions of customops and what it runs on, and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


COMMANDS = (ops, inspect, rewrite, compare, conformance, bench, fuzz, examples)
"""The modules of the subcommands, in the order of ``customops -h``: each has ``add_parser(subparsers)``
(cheap: heavy imports happen in the command itself) registering a parser whose ``func(args) -> int`` runs
it (``rewrite`` registers ``restore`` too)."""


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread so that every ``finally`` runs: temporary files are removed and
    child processes ended before the command exits with 143."""


def _on_sigterm(signum: int, frame: Any) -> NoReturn:
    raise Terminated(128 + signum)


NATIVE_NEEDED = {"inspect": ("numpy", "onnx"), "compare": ("numpy", "onnx", "onnxruntime"), "examples": ()}
"""Commands that need fewer native packages than :data:`~customops.signals.NATIVE_PACKAGES`: inspect runs
nothing, so ONNX Runtime is not imported (it would cost most of its time); compare runs no session
itself (its sides' children do, and they import onnxruntime-extensions); examples only prints paths."""

ORT_COMMANDS = frozenset({"compare", "conformance", "bench", "ops", "fuzz"})
"""Commands that run ONNX Runtime in this process: its default logger is kept below errors there."""


def main(argv: Sequence[str] | None = None, started: float | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 findings, 2 bad input or usage, 130 Ctrl-C,
    143 SIGTERM). ``started``: the perf_counter time the command started (None: now; the program's is
    its interpreter's start, :func:`process_started`), from which compare reports its wall time."""
    started = time.perf_counter() if started is None else started
    try:
        return _main(argv, started)
    except KeyboardInterrupt:  # before the command started (while parsing or importing)
        print("customops: interrupted", file=sys.stderr)
        return 130


def entry() -> int:
    """The ``customops`` program: :func:`main` on the process's arguments; its status stands whatever
    happens after. While Python shuts down, Ctrl-C is ignored and SIGTERM ends the process at once with
    that status (either would kill it silently there), its output flushed first. CPython's note of a
    KeyboardInterrupt is cleared too: it notes one that left any ``exec``/``eval`` of a string (numba's
    and the standard library's generated code), even if caught later, and ``python -m customops`` then
    ends by SIGINT in place of our status; running a string that completes clears the note."""
    status = main(started=process_started())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: os._exit(status))
    exec("None")  # a constant: clears the note (Python/pythonrun.c, run_eval_code_obj)
    return status


def process_started() -> float:
    """The perf_counter time at which this command's interpreter started, so that a command's wall time
    includes Python's start and the imports. The process's creation time (/proc/self/stat) is not it: a
    process keeps it through ``exec``, so a shell that ``exec``s customops after a wait, or a parent that
    forks, waits and then ``exec``s, would count the wait. Until this call the interpreter has done
    nothing but start and import (CPU work, on one thread), so its CPU time so far stands for that:
    the start is now minus the CPU time, never before the process was created."""
    now = time.perf_counter()
    started = now - time.process_time()
    created = _created(now)
    return started if created is None else max(started, created)


def _created(now: float) -> float | None:
    """The perf_counter time at which this process was created (Linux: from /proc/self/stat, to a clock
    tick: the fork, not the last ``exec``); None where unknown."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])  # field 22, starttime: ticks since boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return now - age if age >= 0 else None


def _main(argv: Sequence[str] | None, started: float) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.started = started
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        return _run(args)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    """The command, with its errors and interruptions turned into one line on stderr and an exit status."""
    try:
        _start_sides(args)
        # a Ctrl-C while onnx or ONNX Runtime starts would crash the process, not stop it
        import_held(NATIVE_NEEDED.get(args.command, NATIVE_PACKAGES))
        return _command(args)
    except CustomOpsError as exc:
        print(f"customops {args.command}: error: {printable(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"customops {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        print(f"customops {args.command}: terminated", file=sys.stderr)
        return int(exc.code)  # type: ignore[arg-type]
    except MemoryError:
        print(
            f"customops {args.command}: error: out of memory (the model or its inputs are too large)",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:
        # the reader of stdout went away (``customops ops | head``): stop quietly, as a command killed by
        # SIGPIPE would; stdout goes to devnull so that flushing it at exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


def _start_sides(args: argparse.Namespace) -> None:
    """For compare, start its sides' children first (customops.eval.running.sides.start_all), so that their
    imports overlap with this process's own instead of following them. Held as the imports after it
    are: the modules that start the children import numpy, whose start a signal must not cut."""
    if args.command != "compare":
        return
    with signals_held():
        from customops.accel import jit
        from customops.eval.running import sides

        if not getattr(args, "quiet", False):  # the children get this stderr for the note of a compilation
            jit.announce_compilation(sys.stderr)
        if getattr(args, "verbose", False):
            os.environ[sides.VERBOSE_ENV] = "1"
        # saved outputs stand in for side A: no built-in side, no reference
        unused = ("builtin", "reference") if getattr(args, "load_outputs", None) else ()
        # this process has no thread yet: customops.eval.running.forked
        sides.start_all(fork=True, without=unused)


def _command(args: argparse.Namespace) -> int:
    from customops.accel import jit

    if not getattr(args, "quiet", False):  # progress: a first run on a machine pauses for a few seconds
        jit.announce_compilation(sys.stderr)
    try:
        if args.command in ORT_COMMANDS and not getattr(args, "verbose", False):
            from customops.eval.running.sides import quiet_ort_log

            quiet_ort_log()
        return int(args.func(args))
    finally:
        jit.announce_compilation(None)  # this command's stderr may be gone once it has returned


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
