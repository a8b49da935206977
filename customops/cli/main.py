"""The ``customops`` command: one entry point, argparse subcommands.

stdout carries results, stderr progress and errors. A problem with the user's input exits with status 2
and one line on stderr; nothing is written and the input is untouched.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from customops.errors import CustomOpsError
from customops.safeio import printable


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def _cmd_ops(args: argparse.Namespace) -> int:
    from customops.support import support_table

    rows = support_table(probe=not args.no_probe)
    if args.json:
        from customops import jsonout

        jsonout.dump([r.__dict__ for r in rows], sys.stdout, indent=1)
        print()
        return 0
    if args.markdown:
        print(markdown_table(rows, probed=not args.no_probe))
        return 0
    import onnxruntime as ort

    by_key: dict[tuple[str, int], list] = {}
    for r in rows:
        by_key.setdefault((r.op, r.version), []).append(r)
    print(
        f"{'op':14s} {'ver':>3s}  {'customops (native / *bridged)':58s} {'built-in ORT ' + ort.__version__ + ' CPU'}"
    )
    for (op, version), rs in by_key.items():
        ours = [r.elem_type + ("*" if r.ours == "bridged" else "") for r in rs if r.ours != "no"]
        builtin = [r.elem_type for r in rs if r.builtin]
        print(
            f"{op:14s} {version:3d}  {' '.join(ours):58s} {' '.join(builtin) if not args.no_probe else '(not probed)'}"
        )
    missing = sorted({(r.elem_type, r.detail) for r in rows if r.ours == "no"})
    for elem, why in missing:
        print(f"not supported: {elem}: {why}")
    print("* bridged: cast to a wider type around our node, exactly; see docs/semantics.md")
    return 0


def markdown_table(rows: list, probed: bool = True) -> str:
    """The support table as Markdown: one row per (op, version), our element types and ORT's built-in ones."""
    import onnxruntime as ort

    by_key: dict[tuple[str, int], list] = {}
    for r in rows:
        by_key.setdefault((r.op, r.version), []).append(r)
    head = f"built-in ORT {ort.__version__} CPU" if probed else "built-in ORT CPU (not probed)"
    lines = [
        f"| op | version | customops element types (* bridged) | not supported | {head} |",
        "|---|---|---|---|---|",
    ]
    notes = []
    for (op, version), rs in by_key.items():
        ours = " ".join(_cell(r, notes) for r in rs if r.ours != "no")
        refused = " ".join(r.elem_type for r in rs if r.ours == "no") or "-"
        builtin = " ".join(r.elem_type for r in rs if r.builtin) if probed else "?"
        lines.append(f"| {op} | {version} | {ours} | {refused} | {builtin or '-'} |")
    lines.extend(["", *notes] if notes else [])
    return "\n".join(lines)


def _cell(row: Any, notes: list[str]) -> str:
    """One element type in the table: ``\\*`` when bridged, a numbered mark when a note limits it (the
    note is added to ``notes``)."""
    text = row.elem_type + ("\\*" if row.ours == "bridged" else "")
    if row.note:
        notes.append(f"({len(notes) + 1}) {row.op}-{row.version} {row.elem_type}: {row.note}.")
        text += f"<sup>({len(notes)})</sup>"
    return text


def _cmd_rewrite(args: argparse.Namespace) -> int:
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


def _cmd_restore(args: argparse.Namespace) -> int:
    from customops.model.io import check_output_spares_input, load_model_files, save_model
    from customops.model.rewriter import is_rewritten, restore
    from customops.safeio import check_output_file

    check_output_file(args.output, "output")
    model, external, files = load_model_files(args.input)
    check_output_spares_input(args.output, files, external=external)
    count = is_rewritten(model)
    save_model(restore(model), args.output, external=external or None)
    print(f"restored {count} node(s); wrote {args.output}")
    return 0


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage mistakes reported as bad input is: one line on stderr naming the problem and
    where to read the usage, exit status 2. Subcommand parsers made from it are of this class too, and
    report arguments they do not know themselves (naming the subcommand)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} -h')\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


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

    p = sub.add_parser(
        "ops", help="the supported ops, versions and element types, beside ORT's built-in CPU coverage"
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="machine-readable output")
    form.add_argument("--markdown", action="store_true", help="the table as Markdown (as in the README)")
    p.add_argument("--no-probe", action="store_true", help="do not probe the installed onnxruntime")
    p.set_defaults(func=_cmd_ops)

    p = sub.add_parser("rewrite", help="swap standard nodes of a model into the customops domain")
    p.add_argument("input", metavar="IN", help="the model to read (never modified)")
    p.add_argument("output", metavar="OUT", help="where to write the rewritten model")
    p.add_argument("--ops", help="only these op types, comma separated (e.g. Resize,Pad)")
    p.add_argument("--nodes", help="only these node names, comma separated")
    p.add_argument("--exclude", help="leave these node names alone, comma separated")
    p.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.set_defaults(func=_cmd_rewrite)

    p = sub.add_parser("restore", help="put a rewritten model's standard nodes back")
    p.add_argument("input", metavar="IN")
    p.add_argument("output", metavar="OUT")
    p.set_defaults(func=_cmd_restore)

    import importlib

    for name in TOOL_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


TOOL_MODULES: tuple[str, ...] = (
    "customops.cli.compare",
    "customops.conformance",
    "customops.cli.bench",
    "customops.fuzz",
)
"""Modules that add a subcommand: each has ``add_parser(subparsers)`` (cheap: heavy imports happen in the
command itself) registering a parser whose ``func(args) -> int`` runs it."""


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread so that every ``finally`` runs: temporary files are removed and
    child processes ended before the command exits with 143."""


def _on_sigterm(signum: int, frame: Any) -> NoReturn:
    raise Terminated(128 + signum)


ORT_COMMANDS = frozenset({"compare", "conformance", "bench", "ops", "fuzz"})
"""Commands that run ONNX Runtime in this process: its default logger is kept below errors there."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 findings, 2 bad input or usage, 130 Ctrl-C,
    143 SIGTERM)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before the command started (while importing or parsing)
        print("customops: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        return _run(args)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    from customops.accel import jit

    try:
        jit.announce_compilation(sys.stderr)  # a first run on a machine pauses there for a few seconds
        if args.command in ORT_COMMANDS and not getattr(args, "verbose", False):
            from customops.eval.sides import quiet_ort_log

            quiet_ort_log()
        return int(args.func(args))
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
    finally:
        jit.announce_compilation(None)  # this command's stderr may be gone once it has returned


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
