"""Whole models, built-in against rewritten: what swapping costs a real model (docs/performance.md).

    python tools/model_speed.py MODEL.onnx [MODEL.onnx ...] [--rounds N] [--threads N] [--dim NAME=SIZE]
        [--input-shape NAME:DxDx...]

For each model, one process holds three ONNX Runtime sessions on the same seeded inputs (drawn as
``customops compare`` draws them): the model as it is (**built-in**), the model rewritten with every
operator customops swaps by default (**all swapped**), and the model rewritten with the resampling,
padding and spatial sampling operators alone (``customops.rewrite(model, ops=...)``: **base swapped**).
Sessions run in turns (built-in, all, base, built-in, ...) so that the machine's load falls on each
alike; the report gives each variant's median time per run and its ratio to the built-in median, and
the count of nodes each rewrite swapped. Each session runs at ORT's default graph optimization level
with ``--threads`` intra-op threads (default 1: the ratio, not the machine's core count, is the figure).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import onnxruntime as ort

import customops
from customops.comparison.inputs import generate_inputs, parse_dims, parse_input_shapes
from customops.model.io import load_model

BASE_OPS = (
    "Resize",
    "Upsample",
    "Pad",
    "Col2Im",
    "CenterCropPad",
    "GridSample",
    "AffineGrid",
    "RoiAlign",
    "MaxRoiPool",
    "DeformConv",
)
"""The resampling, padding and spatial sampling families."""


def _session(model, threads: int, ours: bool):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    data = model.SerializeToString()
    if ours:
        return customops.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _swapped(model) -> int:
    return sum(1 for n in model.graph.node if n.domain == customops.DOMAIN)


def measure(
    path: Path, rounds: int, threads: int, dims: dict[str, int], shapes: dict[str, list[int]]
) -> dict[str, object]:
    model = load_model(path)
    feed = generate_inputs(model, dims=dims, shapes=shapes)
    variants = {
        "built-in": (model, False),
        "all swapped": (customops.rewrite(model), True),
        "base swapped": (customops.rewrite(model, ops=BASE_OPS), True),
    }
    sessions = {k: _session(m, threads, ours) for k, (m, ours) in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in sessions}
    for s in sessions.values():
        s.run(None, feed)
    for _ in range(rounds):
        for k, s in sessions.items():
            t = time.perf_counter()
            s.run(None, feed)
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "model": path.name,
        "nodes": len(model.graph.node),
        "swapped": {k: _swapped(m) for k, (m, _) in variants.items()},
        "ms": {k: 1e3 * v for k, v in med.items()},
        "ratio": {k: v / med["built-in"] for k, v in med.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dim", nargs="*", default=[], metavar="NAME=SIZE")
    parser.add_argument("--input-shape", nargs="*", default=[], metavar="NAME:DxDx...")
    args = parser.parse_args(argv)
    dims, shapes = parse_dims(args.dim), parse_input_shapes(args.input_shape)
    load = os.getloadavg()
    print(
        f"{os.cpu_count()} cores; {args.threads} intra-op thread(s); load average {load[0]:.1f}; median of {args.rounds} runs"
    )
    print()
    print(
        "| model | nodes | built-in ms | all swapped: nodes | ms | ratio | base swapped: nodes | ms | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path in args.models:
        r = measure(path, args.rounds, args.threads, dims, shapes)
        ms, ratio, sw = r["ms"], r["ratio"], r["swapped"]
        print(
            f"| {r['model']} | {r['nodes']} | {ms['built-in']:.1f} | {sw['all swapped']} | {ms['all swapped']:.1f} "
            f"| {ratio['all swapped']:.2f} | {sw['base swapped']} | {ms['base swapped']:.1f} | {ratio['base swapped']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
