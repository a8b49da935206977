"""Kernel time of the activations against ORT's node, float32 (docs/performance.md, "Activations").

    python tools/activation_speed.py [--shape 1x64x160x160] [--rounds 15] [--threads N] [--ops a,b]

For each of the twelve activation ops (default attributes; Gelu in both forms): our kernel called on a
numpy array (customops.kernels.activations, output allocated by the kernel), and a one-node ORT session
of the same op (``intra_op_num_threads`` = our kernel threads, customops.accel.parallel), on the same
standard normal input (the bench's data). Also the cost the Python-op layer adds around any kernel for
such a tensor, roughly a copy in and a copy out: a trivial numpy function (two copies into new arrays).
The sides take turns; each sample is the mean of runs filling about 20 ms after an untimed run, in wall
time and in CPU time of the process (every thread: ours and ORT's pools), which holds better than wall
time on a machine shared with other work; the table shows medians (ms) and the ratios ours / ORT. Each
ORT sample is followed by 100 ms of busy waiting (ORT's intra-op pool spins after a run;
docs/performance.md). Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from customops.accel import jit, parallel
from customops.kernels.activations import gaussian, logistic, piecewise


@dataclass(frozen=True)
class Op:
    """One activation: its ONNX node, the opset it runs at, and our kernel."""

    name: str
    op_type: str
    opset: int
    kernel: Callable[[np.ndarray], np.ndarray]
    attributes: dict[str, Any] = field(default_factory=dict)


OPS = [
    Op("Sigmoid", "Sigmoid", 13, logistic.sigmoid),
    Op("Tanh", "Tanh", 13, logistic.tanh),
    Op("Erf", "Erf", 13, gaussian.erf),
    Op("Gelu", "Gelu", 20, gaussian.gelu),
    Op("Gelu-tanh", "Gelu", 20, lambda x: gaussian.gelu(x, approximate="tanh"), {"approximate": "tanh"}),
    Op("Softplus", "Softplus", 22, logistic.softplus),
    Op("Mish", "Mish", 22, logistic.mish),
    Op("Swish", "Swish", 24, logistic.swish),
    Op("HardSigmoid", "HardSigmoid", 22, piecewise.hard_sigmoid),
    Op("HardSwish", "HardSwish", 22, piecewise.hard_swish),
    Op("Elu", "Elu", 22, piecewise.elu),
    Op("Selu", "Selu", 22, piecewise.selu),
    Op("Celu", "Celu", 12, piecewise.celu),
]


def session(op: Op, shape: tuple[int, ...], threads: int) -> ort.InferenceSession:
    node = helper.make_node(op.op_type, ["x"], ["y"], **op.attributes)
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in ("x", "y")]
    graph = helper.make_graph([node], op.name, [info[0]], [info[1]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", op.opset)])
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def sample(run: Callable[[], Any], target_s: float = 0.02) -> tuple[float, float]:
    """Wall and CPU seconds per call: one untimed call, then calls filling about target_s."""
    run()
    start = time.perf_counter()
    run()
    once = time.perf_counter() - start
    inner = max(1, int(target_s / max(once, 1e-6)))
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(inner):
        run()
    return (time.perf_counter() - start) / inner, (time.process_time() - cpu) / inner


def layer_cost(x: np.ndarray) -> Callable[[], Any]:
    """The Python-op layer's own work around a kernel, roughly: a copy in, a copy out."""

    def run() -> Any:
        inside = np.array(x)
        return np.array(inside)

    return run


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """Median wall and CPU milliseconds."""
    return statistics.median(s[0] for s in samples) * 1e3, statistics.median(s[1] for s in samples) * 1e3


def measure(
    op: Op, x: np.ndarray, threads: int, rounds: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    sess = session(op, x.shape, threads)
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for i in range(rounds):
        sides = [("ours", lambda: op.kernel(x)), ("ort", lambda: sess.run(None, {"x": x}))]
        for name, run in sides if i % 2 == 0 else sides[::-1]:
            (ours if name == "ours" else theirs).append(sample(run))
            if name == "ort":
                busy_wait(0.1)
    return medians(ours), medians(theirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="1x64x160x160")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=0, help="ORT's intra-op threads (default: ours)")
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    args = parser.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split("x"))
    threads = args.threads or parallel.threads()
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    wanted = {s.strip().lower() for s in args.ops.split(",") if s.strip()}
    print(f"jit: {jit.describe()['jit']}; kernel threads {parallel.describe()}; ORT threads {threads}")
    print(f"shape {args.shape} float32 ({x.size:,} elements), median of {args.rounds} rounds")
    copy, copy_cpu = medians([sample(layer_cost(x)) for _ in range(args.rounds)])
    print(f"layer cost (copy in + copy out): {copy:.2f} ms wall, {copy_cpu:.2f} ms CPU\n")
    print("| op | ours ms | ORT ms | ours/ORT | ours CPU ms | ORT CPU ms | CPU ours/ORT |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for op in OPS:
        if wanted and op.name.lower() not in wanted:
            continue
        (ours, ours_cpu), (theirs, theirs_cpu) = measure(op, x, threads, args.rounds)
        row = [ours, theirs, ours / theirs, ours_cpu, theirs_cpu, ours_cpu / theirs_cpu]
        print(f"| {op.name} | " + " | ".join(f"{v:.2f}" for v in row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
