"""``customops inspect MODEL``: what the model is and what rewrite would swap (customops.model.inspect)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``customops inspect``."""
    p = sub.add_parser(
        "inspect",
        help="a model's inputs, outputs, opsets and size, and which nodes rewrite would swap (runs nothing)",
    )
    p.add_argument("model", metavar="MODEL", help="the model to read (never modified)")
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.set_defaults(func=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """``customops inspect MODEL``: the summary on stdout; bad input exits 2 (customops.cli.main)."""
    from customops.model.inspect import inspect_model, summary_lines

    summary = inspect_model(args.model)
    if args.json:
        from dataclasses import asdict

        from customops import jsonout

        jsonout.dump(asdict(summary), sys.stdout, indent=1)
        print()
    else:
        print("\n".join(summary_lines(summary)))
    return 0
