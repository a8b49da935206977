"""``customops bench``: the arguments (the work is customops.bench)."""

from __future__ import annotations

import argparse
from typing import Any

from customops.cli import loudness


def run(args: argparse.Namespace) -> int:
    """Run the benchmark (imported here: the parser stays cheap)."""
    from customops.bench import command

    return command.run(args)


def add_parser(subparsers: Any) -> None:
    """Register ``customops bench``."""
    p = subparsers.add_parser(
        "bench",
        help="time our kernels against ORT's built-in ones on a fixed suite of workloads",
        description=(
            "Time each workload as a one-node model, built-in and rewritten, alternately in one process. "
            "stdout: a Markdown table and a summary; stderr: progress."
        ),
    )
    p.add_argument("--json", metavar="PATH", help="also write every number, machine-readable, to PATH")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats: a smoke run")
    p.add_argument("--filter", metavar="TEXT", help="only the workloads whose name contains TEXT")
    p.add_argument("--repeat", type=int, metavar="N", help="samples per workload (default 15, --quick 3)")
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the report as Markdown: the table, then the summary and the targets as a list",
    )
    p.add_argument(
        "--from",
        dest="from_path",
        metavar="PATH",
        help="run nothing: report the run saved by --json at PATH (with --markdown, as in docs/performance.md)",
    )
    loudness.add_arguments(p)
    p.set_defaults(func=loudness.quietly(run))
