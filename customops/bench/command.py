"""``customops bench``: run the suite (or read a saved run back with ``--from``) and report it.

stdout carries the report (text, or Markdown with ``--markdown``), stderr the progress; ``--json`` writes
every number, machine-readable. Bad arguments and unreadable ``--from`` files exit 2 with one line
(CustomOpsError). onnx, onnxruntime and numpy are imported only when a run starts.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import Any

from customops.bench import report
from customops.bench.suite import select
from customops.errors import CustomOpsError

SAVED_RUN_CONFLICTS = ("quick", "filter", "repeat", "json")
"""Options of a new run, which ``--from`` (a saved run) refuses."""


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import numpy as np
    import onnxruntime as ort

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "onnxruntime": ort.__version__,
        "numpy": np.__version__,
    }
    try:
        from customops.extensions import onnxruntime_extensions

        info["onnxruntime_extensions"] = onnxruntime_extensions.__version__
    except ImportError:  # pragma: no cover
        pass
    from customops.accel import jit, parallel

    info.update(jit.describe())
    info["threads"] = parallel.threads()
    info["threads_source"] = parallel.describe()
    return info


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def measure(settings: report.Settings) -> report.Report:
    """Run the workloads ``settings`` selects (progress on stderr) and, on an unfiltered run, the hook."""
    from customops.bench.hooks import Hooks
    from customops.bench.timing import measure_hook, measure_workload

    workloads = select(settings.filter)
    hooks = Hooks()
    results: list[report.Result] = []
    for i, w in enumerate(workloads, 1):
        _progress(f"bench [{i}/{len(workloads)}] {w.name} ...")
        r = measure_workload(w, settings.quick, settings.samples, hooks)
        results.append(r)
        _progress(
            f"bench [{i}/{len(workloads)}] {w.name}: built-in {r.builtin_ms:.3f} ms, custom "
            f"{r.custom_ms:.3f} ms ({r.ratio:.2f}x)"
        )
    hook = None
    if not settings.filter:
        _progress("bench: invocation hook against the stock path ...")
        hook = measure_hook(hooks, settings.samples, 1_000 if settings.quick else report.HOOK_TARGET_ELEMENTS)
    return report.Report(machine(), settings, results, hook)


def _settings(args: argparse.Namespace) -> report.Settings:
    """The run ``args`` ask for, checked before anything runs."""
    select(args.filter)  # an unknown --filter fails now, not after the imports
    if args.json is not None:
        from customops.safeio import check_output_file

        check_output_file(args.json, "--json")
    if args.repeat is not None and args.repeat < 1:
        raise CustomOpsError(f"--repeat {args.repeat} must be at least 1")
    samples = args.repeat or (3 if args.quick else 15)
    return report.Settings(quick=bool(args.quick), samples=samples, filter=args.filter)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, or render the saved run of ``--from``; 0 when it ran (the targets are
    reported, not enforced)."""
    if args.from_path is not None:
        given = [f"--{name}" for name in SAVED_RUN_CONFLICTS if getattr(args, name) not in (None, False)]
        if given:
            raise CustomOpsError(f"--from renders a saved run; {', '.join(given)} only applies to a new run")
        from customops.bench.saved import load

        saved = load(args.from_path)
        print(saved.markdown() if args.markdown else saved.text())
        return 0
    settings = _settings(args)
    result = measure(settings)
    print(result.markdown() if args.markdown else result.text())
    if args.json:
        from customops import jsonout

        with open(args.json, "w", encoding="utf-8") as f:
            jsonout.dump(result.to_json(), f, indent=1)
            f.write("\n")
    return 0
