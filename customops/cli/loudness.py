"""``-q`` and ``-v`` of the long-running commands (fuzz, bench, conformance): how much goes to stderr."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Callable, Iterator


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``-q``: no progress on stderr (errors still reach it); ``-v``: ONNX Runtime's own warnings too."""
    loud = p.add_mutually_exclusive_group()
    loud.add_argument(
        "-q", "--quiet", action="store_true", help="no progress on stderr; results and errors only"
    )
    loud.add_argument("-v", "--verbose", action="store_true", help="show ONNX Runtime's own warnings")


@contextlib.contextmanager
def progress_silenced(quiet: bool) -> Iterator[None]:
    """While the command runs with ``quiet``, what it writes to stderr (its progress) is dropped; an error
    it raises is printed by the entry point after this block, on the real stderr."""
    if not quiet:
        yield
        return
    with contextlib.redirect_stderr(io.StringIO()):
        yield


def quietly(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``func`` run with its progress silenced when ``args.quiet``."""

    def run(args: argparse.Namespace) -> int:
        with progress_silenced(getattr(args, "quiet", False)):
            return func(args)

    return run
