"""``customops conformance``: the arguments (the work is customops.conformance)."""

from __future__ import annotations

import argparse
from typing import Any

from customops.cli import loudness


def add_parser(sub: Any) -> None:
    """Register ``customops conformance``."""
    p = sub.add_parser("conformance", help="ONNX's backend node tests of our operators on both sides")
    p.add_argument("--json", action="store_true", help="machine-readable rows on stdout")
    loudness.add_arguments(p)
    p.set_defaults(func=loudness.quietly(run))


def run(args: argparse.Namespace) -> int:
    """Run the tests and print the table (imported here: the parser stays cheap)."""
    from customops.conformance import report

    return report(as_json=args.json)
