"""``customops ops``: the support table (customops.support), as text, JSON or Markdown."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """Register ``customops ops``."""
    p = sub.add_parser(
        "ops", help="the supported ops, versions and element types, beside ORT's built-in CPU coverage"
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="machine-readable output")
    form.add_argument("--markdown", action="store_true", help="the table as Markdown (as in the README)")
    p.add_argument("--no-probe", action="store_true", help="do not probe the installed onnxruntime")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the support table in the form asked for."""
    from customops.support import support_table

    rows = support_table(probe=not args.no_probe)
    if args.json:
        from customops import jsonout

        jsonout.dump([r.__dict__ for r in rows], sys.stdout, indent=1)
        print()
    elif args.markdown:
        print(markdown_table(rows, probed=not args.no_probe))
    else:
        print(text_table(rows, probed=not args.no_probe))
    return 0


def _by_key(rows: list) -> dict[tuple[str, int], list]:
    """The rows grouped by (op, version), in table order."""
    by_key: dict[tuple[str, int], list] = {}
    for r in rows:
        by_key.setdefault((r.op, r.version), []).append(r)
    return by_key


def text_table(rows: list, probed: bool = True) -> str:
    """The support table for a terminal: one line per (op, version), then the refused element types."""
    import onnxruntime as ort

    lines = [
        f"{'op':14s} {'ver':>3s}  {'customops (native / *bridged)':58s} {'built-in ORT ' + ort.__version__ + ' CPU'}"
    ]
    for (op, version), rs in _by_key(rows).items():
        ours = [r.elem_type + ("*" if r.ours == "bridged" else "") for r in rs if r.ours != "no"]
        builtin = [r.elem_type + WAY_MARKS.get(r.builtin_way, "") for r in rs if r.builtin]
        lines.append(
            f"{op:14s} {version:3d}  {' '.join(ours):58s} {' '.join(builtin) if probed else '(not probed)'}"
        )
    missing = sorted({(r.elem_type, r.detail) for r in rows if r.ours == "no"})
    lines.extend(f"not supported: {elem}: {why}" for elem, why in missing)
    lines.append("* bridged: cast to a wider type around our node, exactly; see docs/semantics.md")
    lines.extend(way_legend(rows) if probed else [])
    return "\n".join(lines)


WAY_MARKS = {"cast": "‡", "function": "†", "loads": "?"}
"""The marks of the built-in column for the ways ORT runs a type other than with a kernel for it."""


def way_legend(rows: list) -> list[str]:
    """What the marks of the built-in column that ``rows`` use mean."""
    from customops.support import BUILTIN_WAYS

    used = {r.builtin_way for r in rows}
    return [f"{mark} built-in: {BUILTIN_WAYS[way]}" for way, mark in WAY_MARKS.items() if way in used]


def markdown_table(rows: list, probed: bool = True) -> str:
    """The support table as Markdown: one row per (op, version), our element types and ORT's built-in ones."""
    import onnxruntime as ort

    head = f"built-in ORT {ort.__version__} CPU" if probed else "built-in ORT CPU (not probed)"
    lines = [
        f"| op | version | customops element types (* bridged) | not supported | {head} |",
        "|---|---|---|---|---|",
    ]
    notes: list[str] = []
    for (op, version), rs in _by_key(rows).items():
        ours = " ".join(_cell(r, notes) for r in rs if r.ours != "no")
        refused = " ".join(r.elem_type for r in rs if r.ours == "no") or "-"
        builtin = " ".join(r.elem_type + WAY_MARKS.get(r.builtin_way, "") for r in rs if r.builtin)
        lines.append(f"| {op} | {version} | {ours} | {refused} | {(builtin or '-') if probed else '?'} |")
    lines.extend(["", *notes] if notes else [])
    lines.extend(["", *(line + "." for line in way_legend(rows))] if probed else [])
    return "\n".join(lines)


def _cell(row: Any, notes: list[str]) -> str:
    """One element type in the table: ``\\*`` when bridged, a numbered mark when a note limits it (the
    note is added to ``notes``)."""
    text = row.elem_type + ("\\*" if row.ours == "bridged" else "")
    if row.note:
        notes.append(f"({len(notes) + 1}) {row.op}-{row.version} {row.elem_type}: {row.note}.")
        text += f"<sup>({len(notes)})</sup>"
    return text
