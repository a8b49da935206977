"""What ``customops fuzz`` does with its parsed arguments (customops.cli.fuzz): check their values, then
run a campaign, merge campaign directories (``merge``) or rerun reproducers (``replay``)."""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from customops.errors import CustomOpsError

if TYPE_CHECKING:
    import argparse

    from customops.fuzz.files import Reproducer
    from customops.fuzz.summary import CampaignInfo, CampaignSummary, CaseCounts, GroupSummary, Versions

DEFAULT_OUT = "customops-fuzz"
DEFAULT_CASES = 1000
MAX_CASES = 1_000_000
"""The most cases one campaign (one shard) runs: it keeps a record of each in memory (days of work at
the fuzzer's pace); more are run as shards (``--shard``) and merged."""
DEFAULT_CASE_TIMEOUT = 30.0
DEFAULT_SHRINK_BUDGET = 60


# ---------------------------------------------------------------------------------------------
# argument checking


def _int(value: str | None, name: str, default: int, minimum: int) -> int:
    """An integer option from ``minimum`` to files.MAX_NUMBER, the most a campaign's files hold."""
    from customops.jsonfields import MAX_NUMBER

    if value is None:
        return default
    try:
        n = int(value)
    except ValueError:
        raise CustomOpsError(f"{name} {value!r} is not an integer") from None
    if n < minimum:
        raise CustomOpsError(f"{name} {value!r} must be at least {minimum}")
    if n > MAX_NUMBER:
        raise CustomOpsError(f"{name} {value!r} must be at most {MAX_NUMBER} (what a campaign's files hold)")
    return n


def _seconds(value: str | None, name: str, default: float | None) -> float | None:
    """A time limit option (customops.eval.running.runner.checked_seconds: the one rule of them)."""
    from customops.eval.running.runner import checked_seconds

    if value is None:
        return default
    try:
        x = float(value)
    except ValueError:
        raise CustomOpsError(f"{name} {value!r} is not a number of seconds") from None
    checked_seconds(x, name)
    return x


def _targets(ops_arg: list[str] | None, opset_arg: str | None) -> list[Any]:
    from customops.registry import OP_TYPES, OPS, lookup

    ops = [o.strip() for item in ops_arg or [] for o in item.split(",") if o.strip()] or list(OP_TYPES)
    for op in ops:
        if op not in OP_TYPES:
            raise CustomOpsError(f"unknown op {op!r} in --op (supported: {', '.join(OP_TYPES)})")
    ops = [o for o in OP_TYPES if o in ops]
    if opset_arg is None:
        return [o for o in OPS if o.op in ops]
    opset = _int(opset_arg, "--opset", 0, 1)
    import onnx

    newest = onnx.defs.onnx_opset_version()
    if opset > newest:
        raise CustomOpsError(
            f"--opset {opset_arg!r} is past the newest opset of the installed onnx {onnx.__version__} ({newest})"
        )
    targets = [t for t in (lookup(op, opset) for op in ops) if t is not None]
    if not targets:
        raise CustomOpsError(f"no version of {', '.join(ops)} is in force at opset {opset}")
    return targets


def _shard(value: str | None) -> tuple[int, int]:
    if value is None:
        return 0, 1
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise CustomOpsError(f"--shard {value!r} is not I/N with 0 <= I < N")
    return int(m.group(1)), int(m.group(2))


def _indices(value: str | None) -> list[int] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items or not all(re.fullmatch(r"\d+", v) for v in items):
        raise CustomOpsError(f"--index {value!r} is not a comma-separated list of case indices")
    return sorted({_int(v, "--index", 0, 0) for v in items})


def _cases(value: str | None) -> int:
    cases = _int(value, "--cases", DEFAULT_CASES, 1)
    if cases > MAX_CASES:
        raise CustomOpsError(
            f"--cases {value!r} must be at most {MAX_CASES} a campaign; run more as shards (--shard I/N) "
            "and merge them"
        )
    return cases


def _out_dir(value: str | None) -> Path:
    from customops.safeio import check_output_dir

    out = Path(value or DEFAULT_OUT)
    check_output_dir(out, "--out")
    return out


def _markdown_path(value: str | None) -> Path | None:
    if value is None:
        return None
    from customops.safeio import check_output_file

    check_output_file(value, "--markdown")
    return Path(value)


# ---------------------------------------------------------------------------------------------
# the actions


def run(args: argparse.Namespace) -> int:
    """``customops fuzz``: dispatch to the campaign, merge or replay."""
    if args.action == "merge":
        return run_merge(args)
    if args.action == "replay":
        return run_replay(args)
    return run_campaign(args)


def _versions() -> Versions:
    import numpy
    import onnx
    import onnxruntime

    import customops
    from customops.fuzz.summary import Versions

    return Versions(
        tool="customops fuzz",
        ort_version=onnxruntime.__version__,
        onnx_version=onnx.__version__,
        customops_version=customops.__version__,
        numpy_version=numpy.__version__,
    )


def campaign_command(args: argparse.Namespace, out: Path) -> str:
    parts = ["customops", "fuzz"]
    for op in args.op or []:
        parts += ["--op", op]
    for flag, value in (
        ("--opset", args.opset),
        ("--cases", args.cases),
        ("--seed", args.seed),
        ("--shard", args.shard),
        ("--index", args.index),
        ("--time-budget", args.time_budget),
    ):
        if value is not None:
            parts += [flag, str(value)]
    parts += ["--out", str(out)]
    return shlex.join(parts)


def run_campaign(args: argparse.Namespace) -> int:
    """Run a campaign; see the module docstring of customops.fuzz.campaign."""
    from customops.fuzz.campaign import Plan

    targets = _targets(args.op, args.opset)
    plan = Plan(
        targets,
        seed=_int(args.seed, "--seed", 0, 0),
        cases=_cases(args.cases),
        shard=_shard(args.shard),
        indices=_indices(args.index),
    )
    jobs = _jobs(args.jobs, len(plan.work()))
    budget = _seconds(args.time_budget, "--time-budget", None)
    timeout = _seconds(args.case_timeout, "--case-timeout", DEFAULT_CASE_TIMEOUT)
    shrink_budget = _int(args.shrink_budget, "--shrink-budget", DEFAULT_SHRINK_BUDGET, 1)
    out = _out_dir(args.out)
    md = _markdown_path(args.markdown)
    previous = _previous_summary(out, md)
    assert timeout is not None
    command = campaign_command(args, out)
    summary = campaign(plan, jobs, budget, timeout, shrink_budget, out, command, previous)
    _report(summary, out, args.json, md, command)
    return 1 if summary.groups else 0


def _jobs(value: str | None, cases: int) -> int:
    """--jobs, capped by the usable cores and the cases to run (each lane is three processes); the cap
    is said on stderr."""
    from customops.eval.running.runner import usable_cores
    from customops.fuzz.campaign import log

    asked = _int(value, "--jobs", 1, 1)
    cores = usable_cores()
    jobs = max(1, min(asked, cores, cases))
    if jobs < asked:
        log(f"--jobs {asked}: using {jobs} ({cores} core(s), {cases} case(s))")
    return jobs


def _previous_summary(out: Path, md: Path | None) -> CampaignSummary | None:
    """The checked summary.json of an earlier campaign in ``out`` (its stale groups are removed at the
    end), read before any work so that a bad one stops the campaign at once."""
    from customops.fuzz.files import SUMMARY, read_summary
    from customops.safeio import check_distinct, check_output_file

    if not out.is_dir():
        return None
    check_output_file(out / SUMMARY, "--out's summary.json")
    check_distinct([("--out's summary.json", out / SUMMARY), ("--markdown", md)])
    return read_summary(out) if os.path.lexists(out / SUMMARY) else None


def campaign(
    plan: Any,
    jobs: int,
    budget: float | None,
    timeout: float,
    shrink_budget: int,
    out: Path,
    command: str,
    previous: CampaignSummary | None = None,
) -> CampaignSummary:
    """Run ``plan``, triage, write the reproducers and summary.json under ``out`` (removing the groups
    of the ``previous`` summary there that are gone); returns the summary."""
    from customops.eval.running.runner import Pool
    from customops.fuzz.campaign import case_counts, group_summary, log, run_cases, triage
    from customops.fuzz.files import SUMMARY
    from customops.fuzz.groups import remove_stale, write_json
    from customops.fuzz.summary import CampaignSummary

    started = time.monotonic()
    work = plan.work()
    log(
        f"fuzz: {len(work)} case(s) of {', '.join(t.key for t in plan.targets)}, seed {plan.seed}, "
        f"shard {plan.shard[0]}/{plan.shard[1]}, {jobs} job(s)"
    )
    with Pool(jobs, timeout) as pool:
        records = run_cases(plan, pool, jobs, budget)
        ran = time.monotonic() - started
        groups, notes = triage(records, pool, jobs, shrink_budget)
    out.mkdir(exist_ok=True)
    entries = _write_groups(groups, plan.seed, out)
    counts = case_counts(records)
    total = time.monotonic() - started
    summary = CampaignSummary(
        _versions(),
        [_campaign_info(plan, command, counts, entries, jobs, (total, ran))],
        counts,
        entries,
        [group_summary(n, plan.seed, []).note() for n in notes],
    )
    write_json(out / SUMMARY, summary.to_json())
    remove_stale(out, previous, {e.dir for e in entries if e.dir is not None})
    log(f"fuzz: done in {total:.1f} s ({ran:.1f} s running cases)")
    return summary


def _campaign_info(
    plan: Any,
    command: str,
    counts: CaseCounts,
    entries: list[GroupSummary],
    jobs: int,
    seconds: tuple[float, float],
) -> CampaignInfo:
    """The summary's record of one campaign; ``seconds`` = (in all, running cases)."""
    from customops.fuzz.summary import CampaignInfo

    total, ran = seconds
    return CampaignInfo(
        command=command,
        targets=[t.key for t in plan.targets],
        seed=plan.seed,
        cases=plan.cases,
        shard=f"{plan.shard[0]}/{plan.shard[1]}",
        indices=plan.indices,
        run=counts.run,
        skipped=sum(counts.skipped.values()),
        skipped_reasons=dict(counts.skipped),
        not_run=counts.not_run,
        groups=len(entries),
        findings=sum(e.count for e in entries),
        seconds=round(total, 1),
        seconds_cases=round(ran, 1),
        jobs=jobs,
    )


def _write_groups(groups: list[Any], seed: int, out: Path) -> list[GroupSummary]:
    """Name each group's directory under ``out``, write its shrunk reproducer there; the groups' entries
    of the summary."""
    from customops.eval.judging.deviations import known_labels
    from customops.fuzz.campaign import group_summary
    from customops.fuzz.groups import compare_exits_1, group_dirname, rerun_commands, taken_names, write_group

    entries = []
    used = taken_names(out)
    for group in groups:
        group.dirname = group_dirname(group.signature, used)
        example = group.members[0].index
        shrunk = group.shrunk.evaluation if group.shrunk is not None else None
        compare = compare_exits_1(group.signature, shrunk)
        rerun = rerun_commands(group.signature, str(out / group.dirname), example, seed, compare)
        entry = group_summary(group, seed, rerun)
        entry.known = known_labels(entry)
        if group.shrunk is not None:
            write_group(out, group.dirname, group.signature, group.shrunk.evaluation, entry)
        entries.append(entry)
    return entries


def _report(summary: CampaignSummary, out: Path, as_json: bool, md: Path | None, command: str) -> None:
    from customops.fuzz.report import format_table, markdown

    if as_json:
        from customops import jsonout

        jsonout.dump(summary.to_json(), sys.stdout, indent=1)
        print()
    else:
        print(format_table(summary, str(out)))
    if md is not None:
        from customops.safeio import write_atomic

        write_atomic(md, markdown(summary, str(out), command))


def run_merge(args: argparse.Namespace) -> int:
    """``customops fuzz merge DIR...``."""
    from customops.fuzz.files import SUMMARY, read_summary
    from customops.fuzz.groups import write_json
    from customops.fuzz.merge import check_campaigns_once, merge

    dirs = _merge_inputs(args.dirs)
    out = _out_dir(args.merge_out)
    md = _markdown_path(args.merge_markdown)
    _check_apart(dirs, out, md)
    summaries = [(d, read_summary(d)) for d in dirs]
    check_campaigns_once(summaries)
    merged = merge(summaries, out)
    write_json(out / SUMMARY, merged.to_json())
    parts = ["customops", "fuzz", "merge", *map(str, dirs), "--out", str(out)]
    command = shlex.join([*parts, "--markdown", str(md)] if md is not None else parts)
    _report(merged, out, args.merge_json, md, command)
    return 1 if merged.groups else 0


def _merge_inputs(names: list[str]) -> list[Path]:
    """The campaign directories to merge: each a directory, none named twice."""
    seen: dict[str, str] = {}
    for name in names:
        if not Path(name).is_dir():
            raise CustomOpsError(f"{name!r} is not a directory")
        real = os.path.realpath(name)
        if real in seen:
            raise CustomOpsError(
                f"{name!r} is named twice (as {seen[real]!r}); each campaign directory may be merged once, "
                "or its cases would count twice"
            )
        seen[real] = name
    return [Path(n) for n in names]


def _check_apart(dirs: list[Path], out: Path, md: Path | None) -> None:
    """Refuse --out or --markdown inside an input directory, and --out containing one: inputs are
    never modified."""
    from customops.fuzz.files import SUMMARY
    from customops.safeio import check_distinct, inside

    check_distinct([("--out's summary.json", out / SUMMARY), ("--markdown", md)])
    for d in dirs:
        if inside(out, d) or inside(d, out):
            raise CustomOpsError(
                f"--out {str(out)!r} overlaps the input directory {str(d)!r}; merge into a directory of its "
                "own (inputs are never modified)"
            )
        if md is not None and inside(md, d):
            raise CustomOpsError(f"--markdown {str(md)!r} is inside the input directory {str(d)!r}")


def run_replay(args: argparse.Namespace) -> int:
    """``customops fuzz replay GROUP_DIR...``: exit 1 while any still reproduces."""
    from customops.eval.running.runner import Pool
    from customops.fuzz.files import read_finding
    from customops.fuzz.triage import evaluate, holds
    from customops.safeio import printable

    timeout = _seconds(args.replay_timeout, "--case-timeout", DEFAULT_CASE_TIMEOUT)
    assert timeout is not None
    loaded = [read_finding(Path(g)) for g in args.groups]
    for rep in loaded:
        _check_runnable(rep)
    status = 0
    with Pool(1, timeout) as pool:
        for rep in loaded:
            ev = evaluate(pool, rep.case)
            found = (
                "; ".join(f"{f.side} {f.kind}" + (f" ({f.detail})" if f.detail else "") for f in ev.findings)
                or "agree"
            )
            if holds(rep.signature, ev):  # a signature's text comes from finding.json: printable
                status = 1
                print(printable(f"REPRODUCES {rep.directory}: {rep.signature.text()}"))
            else:
                print(printable(f"GONE {rep.directory}: {rep.signature.text()}; now: {found}"))
    return status


def _check_runnable(rep: Reproducer) -> None:
    """Run, in this process, what replay does with the file's case besides the sides (the validity
    oracle, the model, the features): a case the checks let through that these still cannot take is a
    CustomOpsError before any worker starts, not a traceback."""
    from customops.eval.running.messages import described
    from customops.fuzz.case import build_model
    from customops.fuzz.dispatch import space_of
    from customops.fuzz.triage import feature_labels

    try:
        space_of(rep.case.op).validate(rep.case)
        build_model(rep.case)
        feature_labels(rep.case)
    except Exception as exc:  # any failure of this code on data read from a file is the file's problem
        raise CustomOpsError(
            f"finding.json in {str(rep.directory)!r}: its case cannot be replayed ({described(exc)})"
        ) from None
