"""``customops rewrite`` and ``customops restore``: a model file in, a model file out (customops.model)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from customops.errors import CustomOpsError


def add_parser(sub: Any) -> None:
    """Register ``customops rewrite`` and ``customops restore``."""
    p = sub.add_parser("rewrite", help="swap standard nodes of a model into the customops domain")
    p.add_argument("input", metavar="IN", help="the model to read (never modified)")
    p.add_argument("output", metavar="OUT", help="where to write the rewritten model")
    p.add_argument("--ops", help="only these op types, comma separated (e.g. Resize,Pad)")
    p.add_argument("--nodes", help="only these node names, comma separated")
    p.add_argument("--exclude", help="leave these node names alone, comma separated")
    p.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.set_defaults(func=run_rewrite)

    p = sub.add_parser("restore", help="put a rewritten model's standard nodes back")
    p.add_argument("input", metavar="IN")
    p.add_argument("output", metavar="OUT")
    p.set_defaults(func=run_restore)


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def run_rewrite(args: argparse.Namespace) -> int:
    """``customops rewrite IN OUT``: every check before anything is written; the report on stdout."""
    from customops.model.io import check_model_file, check_output_spares_input, load_model_files, save_model
    from customops.model.rewriter import already_rewritten, is_rewritten, rewrite_model
    from customops.safeio import check_output_file

    if not args.dry_run:
        check_output_file(args.output, "output")
    model, external, files = load_model_files(args.input)
    if not args.dry_run:
        check_output_spares_input(args.output, files, external=external)
    count = is_rewritten(model)
    if count:
        raise CustomOpsError(already_rewritten(count, f"'customops restore {args.input} OUT'"))
    check_model_file(args.input)
    result = rewrite_model(
        model, ops=_split(args.ops), nodes=_split(args.nodes), exclude=_split(args.exclude) or ()
    )
    if not args.dry_run:
        save_model(result.model, args.output, external=external or None)
    summary = {
        "swapped": len(result.swapped),
        "skipped": len(result.skipped),
        "written": None if args.dry_run else args.output,
    }
    if args.json:
        from customops import jsonout

        jsonout.dump({"nodes": [r.__dict__ for r in result.nodes], "summary": summary}, sys.stdout, indent=1)
        print()
    else:
        for r in result.nodes:
            print(r.line())
        where = "dry run, nothing written" if args.dry_run else f"wrote {args.output}"
        print(f"{summary['swapped']} swapped, {summary['skipped']} skipped; {where}")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    """``customops restore IN OUT``."""
    from customops.model.io import check_output_spares_input, load_model_files, save_model
    from customops.model.rewriter import is_rewritten, restore
    from customops.registry import DOMAIN
    from customops.safeio import check_output_file

    check_output_file(args.output, "output")
    model, external, files = load_model_files(args.input)
    check_output_spares_input(args.output, files, external=external)
    count = is_rewritten(model)
    restored = restore(model)  # CustomOpsError (nothing written) when a node cannot be restored
    save_model(restored, args.output, external=external or None)
    if count:
        print(f"restored {count} node(s); wrote {args.output}")
    else:
        print(f"nothing to restore (no node in the {DOMAIN} domain); wrote {args.output} unchanged")
    return 0
