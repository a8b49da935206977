"""Start-up costs of the ``customops`` command, as a small Markdown table on stdout.

    python tools/startup.py [--runs N] [--conformance-runs N] [--cold-runs M] [--no-cold] [--importtime]

Rows: ``customops -h`` and ``customops --version`` (median of N runs), ``customops conformance`` warm
(after one untimed run), and the README's first command (``customops compare`` on the bundled example
ort_deviation, customops/examples/ort_deviation.onnx) cold, each run with an empty numba cache directory of its own
(``NUMBA_CACHE_DIR``: every loop it needs is compiled), then warm (that directory filled by the cold run:
loops loaded). The difference of the two is what compiling costs a machine's first run. Times are wall
clock of the whole command and the CPU time of it and its child processes (user + system), whose median
is steadier than wall time on a loaded machine. The command measured is the ``customops`` script beside
this Python (else ``python -m customops``), with this process's environment: set PYTHONPATH to measure
another source tree. ``--importtime`` also lists what ``-h`` imports, heaviest first (``python -X
importtime``). Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MODEL = ROOT / "customops" / "examples" / "ort_deviation.onnx"
WORKDIR = tempfile.gettempdir()
"""Where the commands run: not the source tree, so that ``python -m`` in this process's own commands cannot
pick up the tree's ``customops`` instead of PYTHONPATH's (compare's child processes start in the package's
directory whatever the current one)."""


def command() -> list[str]:
    """How to run ``customops``: its script beside this Python, else ``python -m customops``."""
    script = Path(sys.executable).with_name("customops")
    return [str(script)] if script.exists() else [sys.executable, "-m", "customops"]


def timed(
    args: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one run of ``customops args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*command(), *args], capture_output=True, env=env, cwd=WORKDIR, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        sys.exit(f"customops {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def row(label: str, samples: list[tuple[float, float]]) -> str:
    """A Markdown row: label, runs, median and min wall time, median CPU time."""
    walls = [w for w, _ in samples]
    cpus = [c for _, c in samples]
    return (
        f"| {label} | {len(samples)} | {statistics.median(walls):.2f} | {min(walls):.2f} | "
        f"{statistics.median(cpus):.2f} |"
    )


def readme_command(runs: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(cold samples, warm samples) of the README's first command: each cold run in an empty numba cache
    directory of its own, followed by a warm run in the same directory. Exit status 1 is expected: the
    bundled model is one where the two sides disagree."""
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="customops-numba-") as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            args = ["compare", str(README_MODEL)]
            cold.append(timed(args, env, ok=(0, 1)))
            warm.append(timed(args, env, ok=(0, 1)))
    return cold, warm


def heaviest_imports(args: list[str], count: int = 12) -> list[str]:
    """The ``count`` imports of ``customops args`` with the largest cumulative time (python -X importtime)."""
    code = f"import sys; from customops.cli.main import main; sys.exit(main({args!r}))"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        cwd=WORKDIR,
        check=False,
    )
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    rows.sort(reverse=True)
    return [f"    {us / 1000:7.1f} ms {name}" for us, name in rows[:count]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure the start-up costs of the customops command.")
    parser.add_argument("--runs", type=int, default=7, help="runs of -h and --version (default 7)")
    parser.add_argument(
        "--conformance-runs", type=int, default=3, help="warm runs of conformance (default 3)"
    )
    parser.add_argument(
        "--cold-runs", type=int, default=3, help="cold/warm pairs of the README command (default 3)"
    )
    parser.add_argument("--no-cold", action="store_true", help="skip the README command")
    parser.add_argument("--importtime", action="store_true", help="also list what -h and --version import")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    print(
        f"{' '.join(command())} on Python {sys.version.split()[0]}, {os.cpu_count()} cores, load {load:.1f}"
    )
    print()
    print("| command | runs | median wall s | min wall s | median CPU s |")
    print("|---|---|---|---|---|")
    print(row("customops -h", [timed(["-h"]) for _ in range(args.runs)]))
    print(row("customops --version", [timed(["--version"]) for _ in range(args.runs)]))
    timed(["conformance"], ok=(0, 1))  # warms the file system cache and compiles the loops it needs
    print(
        row(
            "customops conformance (warm)",
            [timed(["conformance"], ok=(0, 1)) for _ in range(args.conformance_runs)],
        )
    )
    if not args.no_cold:
        cold, warm = readme_command(args.cold_runs)
        print(row("README first command, cold numba cache", cold))
        print(row("README first command, warm numba cache", warm))
        compile_wall = statistics.median(c[0] - w[0] for c, w in zip(cold, warm, strict=True))
        compile_cpu = statistics.median(c[1] - w[1] for c, w in zip(cold, warm, strict=True))
        print(
            f"| cold - warm (compiling), median of pairs | {len(cold)} | {compile_wall:.2f} | | {compile_cpu:.2f} |"
        )
    if args.importtime:
        for words in (["-h"], ["--version"]):
            print(f"\nheaviest imports of customops {' '.join(words)} (cumulative):")
            print("\n".join(heaviest_imports(words)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
