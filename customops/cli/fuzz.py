"""``customops fuzz``: the arguments of a campaign and of its ``merge`` and ``replay`` actions (the work
is customops.fuzz.command)."""

from __future__ import annotations

import argparse
from typing import Any

from customops.cli import loudness
from customops.fuzz.command import DEFAULT_CASE_TIMEOUT, DEFAULT_CASES, DEFAULT_OUT, DEFAULT_SHRINK_BUDGET


def add_parser(sub: Any) -> None:
    """Register ``customops fuzz`` (and its ``merge`` and ``replay`` actions)."""
    p = sub.add_parser(
        "fuzz",
        help="differential fuzzing of ORT's kernels, ours and onnx.reference, with shrunk reproducers",
        description=(
            "Generate cases from the registry, run each on ORT's built-in kernel, ours and onnx.reference "
            "(each in a worker process), group disagreements by signature, shrink one per group and write it "
            "as an ONNX test case. Exit status: 0 no finding, 1 findings, 2 bad input or usage. "
            "'customops fuzz merge DIR...' merges campaign directories (e.g. shards); "
            "'customops fuzz replay GROUP_DIR...' reruns reproducers. Campaign directories are read as "
            "untrusted data: bounded, checked, names only as safe path components."
        ),
    )
    _add_campaign_arguments(p)
    actions = p.add_subparsers(dest="action", metavar="[merge|replay]")
    _add_merge_parser(actions)
    _add_replay_parser(actions)
    loudness.add_arguments(p)
    p.set_defaults(func=loudness.quietly(run))


def _add_campaign_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of a campaign: what to run, how, and where its results go."""
    p.add_argument(
        "--op",
        action="append",
        metavar="OP",
        help="operator(s) to fuzz, repeatable or comma separated (default: all)",
    )
    p.add_argument(
        "--opset",
        metavar="V",
        help="only the version of each op in force at opset V (default: every version)",
    )
    p.add_argument(
        "--cases", metavar="N", help=f"number of cases, spread over the targets (default {DEFAULT_CASES})"
    )
    p.add_argument(
        "--time-budget",
        metavar="SECONDS",
        help="start no case after this long; triage and shrinking follow (default: none)",
    )
    p.add_argument(
        "--seed", metavar="S", help="seed; case i is drawn from (seed, i, op, version) alone (default 0)"
    )
    p.add_argument(
        "--jobs",
        metavar="J",
        help="lanes of three worker processes run in parallel (default 1; at most one per usable core "
        "and one per case)",
    )
    p.add_argument(
        "--shard", metavar="I/N", help="run only the cases whose index is I modulo N (default 0/1)"
    )
    p.add_argument("--index", metavar="I[,I...]", help="run only these case indices (e.g. a group's example)")
    p.add_argument(
        "--out", metavar="DIR", help=f"where reproducers and summary.json go (default ./{DEFAULT_OUT})"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of the table")
    p.add_argument("--markdown", metavar="PATH", help="also write the findings page (docs/findings.md) there")
    p.add_argument(
        "--case-timeout",
        metavar="SECONDS",
        help=f"per-case time limit of a side (default {DEFAULT_CASE_TIMEOUT:g})",
    )
    p.add_argument(
        "--shrink-budget",
        metavar="RUNS",
        help=f"runs spent shrinking one group (default {DEFAULT_SHRINK_BUDGET})",
    )


def _add_merge_parser(actions: Any) -> None:
    """``customops fuzz merge DIR...``."""
    m = actions.add_parser(
        "merge",
        help="merge campaign directories (e.g. shards) into one summary",
        description="Merge campaign directories (e.g. shards) into one summary and one copy of each "
        "group's reproducer under --out. Each campaign counts once: a directory named twice, or two "
        "holding the same campaign (same targets, seed, cases, shard and indices, e.g. a merge and one of "
        "its sources), is refused with exit status 2. The inputs are never modified: --out must not be, "
        "contain or lie inside one of them.",
    )
    m.add_argument("dirs", nargs="+", metavar="DIR")
    m.add_argument(
        "--out",
        dest="merge_out",
        metavar="DIR",
        help=f"where the merged summary and reproducers go (default ./{DEFAULT_OUT})",
    )
    m.add_argument("--json", dest="merge_json", action="store_true", help="print the merged summary as JSON")
    m.add_argument(
        "--markdown", dest="merge_markdown", metavar="PATH", help="also write the findings page there"
    )


def _add_replay_parser(actions: Any) -> None:
    """``customops fuzz replay GROUP_DIR...``."""
    r = actions.add_parser("replay", help="rerun reproducers; exit 1 while one still reproduces")
    r.add_argument("groups", nargs="+", metavar="GROUP_DIR")
    r.add_argument("--case-timeout", dest="replay_timeout", metavar="SECONDS")


def run(args: argparse.Namespace) -> int:
    """Run the campaign, merge or replay (imported here: the parser stays cheap)."""
    from customops.fuzz import command

    return command.run(args)
