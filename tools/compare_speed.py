"""compare's cost against a Polygraphy comparison of the same two sides (docs/performance.md).

    python tools/compare_speed.py MODEL.onnx [MODEL.onnx ...] [--rounds N]

Needs Polygraphy in the same environment (``pip install polygraphy``; it is no dependency of customops).
For each model and round, in turns:

- **compare**: ``customops compare MODEL -q --save-inputs FEED.json`` (the inputs it draws, in
  Polygraphy's format, for the other two);
- **polygraphy**: one Python process that does what a Polygraphy user does to compare ORT's built-in
  kernels against ours: ``OnnxrtRunner`` on the model as it is, ``OnnxrtRunner`` on
  ``customops.InferenceSession`` of the rewritten model, ``Comparator.run`` on FEED.json and
  ``Comparator.compare_accuracy`` (graph outputs only, as Polygraphy compares by default);
- **polygraphy run**: ``polygraphy run MODEL --onnxrt --load-inputs FEED.json`` (the built-in side
  alone: what running the model costs, for scale).

Each is a child process; its wall time and its CPU time (user + system of it and its own children,
from ``resource.getrusage(RUSAGE_CHILDREN)``) are measured. CPU seconds hold on a loaded machine, where
wall time measures the other processes too. The report: medians per model and the ratios compare /
polygraphy, by wall and by CPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

POLYGRAPHY_SCRIPT = r"""
import sys
import onnx
from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from polygraphy.comparator import Comparator
from polygraphy.json import load_json

import customops

model_path, feed_path = sys.argv[1], sys.argv[2]
rewritten = customops.rewrite_model(onnx.load(model_path)).model.SerializeToString()
builtin = OnnxrtRunner(SessionFromOnnx(model_path), name="builtin")
custom = OnnxrtRunner(lambda: customops.InferenceSession(rewritten), name="custom")
results = Comparator.run([builtin, custom], data_loader=load_json(feed_path))
passed = bool(Comparator.compare_accuracy(results))
print("PASSED" if passed else "FAILED")
"""


@dataclass
class Sample:
    wall: float
    cpu: float
    status: int


@dataclass
class Row:
    model: str
    nodes: int
    samples: dict[str, list[Sample]] = field(default_factory=dict)

    def median(self, tool: str, what: str) -> float:
        return statistics.median(getattr(s, what) for s in self.samples[tool])


def measured(command: list[str]) -> Sample:
    """Run ``command``; its wall time and the CPU time of it and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr.decode(errors="replace")[-2000:])
    return Sample(wall, cpu, done.returncode)


def polygraphy_script() -> str:
    """The ``polygraphy`` command installed beside this Python (it has no ``python -m`` entry)."""
    beside = Path(sys.executable).parent / "polygraphy"
    return str(beside) if beside.exists() else "polygraphy"


def commands(model: Path, feed: Path) -> dict[str, list[str]]:
    """The three commands compared, by name."""
    exe = sys.executable
    return {
        "compare": [exe, "-m", "customops", "compare", str(model), "-q", "--save-inputs", str(feed)],
        "polygraphy": [exe, "-c", POLYGRAPHY_SCRIPT, str(model), str(feed)],
        "polygraphy run": [polygraphy_script(), "run", str(model), "--onnxrt", "--load-inputs", str(feed)],
    }


def measure(model: Path, rounds: int) -> Row:
    import onnx

    row = Row(model.name, len(onnx.load(str(model), load_external_data=False).graph.node))
    with tempfile.TemporaryDirectory(prefix="compare-speed-") as tmp:
        feed = Path(tmp) / "feed.json"
        for i in range(rounds):
            order = list(commands(model, feed).items())
            if i % 2:  # compare first, then last: load drifts hit both alike
                order = [order[0], *reversed(order[1:])] if i % 4 == 1 else [*order[1:], order[0]]
            if not feed.exists():  # compare writes the inputs the others read
                order.sort(key=lambda item: item[0] != "compare")
            for name, command in order:
                row.samples.setdefault(name, []).append(measured(command))
                print(f"  {model.name} round {i + 1}: {name} {row.samples[name][-1]}", file=sys.stderr)
    return row


def load_average() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def report(rows: list[Row], rounds: int, load: tuple[str, str]) -> str:
    lines = [
        f"{os.cpu_count()} cores; load average (1, 5, 15 min) {load[0]} before, {load[1]} after; "
        f"median of {rounds} rounds",
        "",
        "| model | nodes | compare wall s | compare CPU s | polygraphy wall s | polygraphy CPU s "
        "| wall ratio | CPU ratio | polygraphy run wall s | polygraphy run CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cw, cc = r.median("compare", "wall"), r.median("compare", "cpu")
        pw, pc = r.median("polygraphy", "wall"), r.median("polygraphy", "cpu")
        rw, rc = r.median("polygraphy run", "wall"), r.median("polygraphy run", "cpu")
        lines.append(
            f"| {r.model} | {r.nodes} | {cw:.1f} | {cc:.1f} | {pw:.1f} | {pc:.1f} | {cw / pw:.2f} "
            f"| {cc / pc:.2f} | {rw:.1f} | {rc:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each command per model (median)")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("polygraphy") is None:  # no dependency of customops: the tool asks for it
        print("compare_speed needs Polygraphy: pip install polygraphy", file=sys.stderr)
        return 2
    before = load_average()
    rows = [measure(m, args.rounds) for m in args.models]
    print(report(rows, args.rounds, (before, load_average())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
