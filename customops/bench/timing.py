"""How ``customops bench`` times: sides that take turns in balanced orders, inner counts, and the
measurement of one workload and of the invocation hook.

Each workload runs on up to five *sides*: the built-in node in a plain ``onnxruntime.InferenceSession``,
and the rewritten model in ``customops.InferenceSession`` with our hook, then with the stand-in kernels
of :mod:`customops.bench.hooks` (floor, write-only, copy; not for a node of several outputs or a whole
model, :attr:`customops.bench.suite.Workload.stand_ins`). The sides are timed alternately in one process
(warm-up first, then the median of repeats), so that their ratios hold on a noisy machine. onnx,
onnxruntime and numpy are imported by the functions that measure, not with this module.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from customops.bench.hooks import Hooks
from customops.bench.report import HookResult, Result
from customops.bench.suite import Workload, one_node_model, random_data


def time_once(run: Callable[[], Any], inner: int) -> float:
    """Seconds per run over ``inner`` back-to-back runs."""
    start = time.perf_counter()
    for _ in range(inner):
        run()
    return (time.perf_counter() - start) / inner


def inner_count(run: Callable[[], Any], target_s: float) -> int:
    """How many back-to-back runs make one sample of about ``target_s`` (1 for slow runs)."""
    once = time_once(run, 1)
    if once >= target_s:
        return 1
    return max(1, min(10_000, int(target_s / max(once, 1e-7))))


SETTLE_S = 0.1
"""After a run that used it, ORT's intra-op pool keeps spinning on a core for about 50 ms (its worker's
CPU time, docs/performance.md "ORT's spinning pool"): a side timed in that window shares a core with it.
After each built-in sample (tiny ones too: the 8x8 bilinear Resize uses the pool) the bench waits this
long, busy on the calling thread (an idle pause let the VM idle, and copy-bound runs after it slowed)."""


def busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass
class Side:
    """One side of a comparison: ``run`` once per call; ``enter``/``leave`` around each sample;
    ``settle`` seconds of busy waiting after it (default 0)."""

    run: Callable[[], Any]
    enter: Callable[[], Any] = lambda: None
    leave: Callable[[], Any] = lambda: None
    settle: float = 0.0

    def sample(self, inner: int) -> float:
        """Seconds per run over ``inner`` back-to-back runs, after one untimed run (the first run after
        another side starts on caches and threads that side left)."""
        self.enter()
        try:
            self.run()
            return time_once(self.run, inner)
        finally:
            self.leave()
            if self.settle:
                busy_wait(self.settle)

    def inner(self, target_s: float) -> int:
        """:func:`inner_count` of this side's run, between ``enter`` and ``leave``."""
        self.enter()
        try:
            return inner_count(self.run, target_s)
        finally:
            self.leave()


def orders(n: int) -> list[list[int]]:
    """Orders of ``n`` sides in which each side directly follows each other side equally often (a
    Williams design: n orders for even n, 2n for odd n)."""
    first = [0]
    low, high = 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    found = [[(k + i) % n for k in first] for i in range(n)]
    if n % 2:
        found += [list(reversed(order)) for order in found]
    return found


def alternate(sides: list[Side], samples: int, target_s: float) -> tuple[list[list[float]], int]:
    """Alternate samples of the sides; returns their per-run seconds and the runs per sample."""
    inner = min(side.inner(target_s) for side in sides)
    times: list[list[float]] = [[] for _ in sides]
    turns = orders(len(sides))
    for i in range(samples):
        # Balanced orders: no side always runs first, or always after the same other side (on the
        # caches and threads it left).
        for j in turns[i % len(turns)]:
            times[j].append(sides[j].sample(inner))
    return times, inner


def measure_hook(hooks: Hooks, samples: int, elements: int) -> HookResult:
    """Our invocation hook against the stock path on a float identity of ``elements`` values."""
    import numpy as np
    from onnx import helper

    import customops

    x = random_data((1, elements))
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant")
    model = customops.rewrite(one_node_model(node, [("x", x)], {"pads": np.zeros(4, np.int64)}, 19))
    session = customops.InferenceSession(model)
    with hooks.seams.kernel_replaced("Pad", lambda data, *args, **kwargs: data):
        run = lambda: session.run(None, {"x": x})  # noqa: E731
        run()
        hook = statistics.median(time_once(run, 1) for _ in range(max(samples, 5)))
        hooks.stock()
        try:
            run()
            stock = statistics.median(time_once(run, 1) for _ in range(max(1, samples // 3)))
        finally:
            hooks.ours()
    return HookResult(elements=elements, hook_ms=hook * 1e3, stock_ms=stock * 1e3, speedup=stock / hook)


@dataclass
class _Prepared:
    """A workload's two sessions, its feed and what their first runs gave."""

    shape: str
    run_builtin: Callable[[], Any]
    run_custom: Callable[[], Any]
    custom_out: Any
    first_call_ms: float
    max_abs_diff: float | None


def _prepare(w: Workload, quick: bool) -> _Prepared:
    """Build ``w``, open its built-in and rewritten sessions, and run each once (the custom one timed:
    the first call, which compiles or loads the loops)."""
    import numpy as np
    import onnxruntime as ort

    import customops

    model, feed, shape_text = w.build(quick)
    builtin_session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    custom_session = customops.InferenceSession(customops.rewrite(model))

    start = time.perf_counter()
    custom_out = custom_session.run(None, feed)[0]
    first_call = time.perf_counter() - start
    builtin_out = builtin_session.run(None, feed)[0]
    diff = None
    if builtin_out.shape == custom_out.shape and builtin_out.size:
        diff = float(np.max(np.abs(builtin_out.astype(np.float64) - custom_out.astype(np.float64))))

    def run_builtin() -> None:
        builtin_session.run(None, feed)

    def run_custom() -> None:
        custom_session.run(None, feed)

    return _Prepared(shape_text, run_builtin, run_custom, custom_out, first_call * 1e3, diff)


def _sides(p: _Prepared, hooks: Hooks, w: Workload) -> list[Side]:
    """Built-in, custom, and with stand-ins floor, write-only and (not on tiny tensors) copy, in that
    order."""
    import numpy as np

    if not w.stand_ins:
        return [Side(p.run_builtin, settle=SETTLE_S), Side(p.run_custom)]
    out = p.custom_out
    install_ready = hooks.ready_made(np.ascontiguousarray(out))
    install_write = hooks.write_only(out.shape, out.dtype)
    sides = [
        Side(p.run_builtin, settle=SETTLE_S),
        Side(p.run_custom),
        Side(p.run_custom, install_ready, hooks.ours),
        Side(p.run_custom, install_write, hooks.ours),
    ]
    if not w.small:  # on tiny tensors the per-call costs are all a copy would show: see the floor
        sides.append(Side(p.run_custom, hooks.copy_once(out.shape, out.dtype), hooks.ours))
    return sides


def _stock_ms(p: _Prepared, hooks: Hooks, samples: int, inner: int) -> float:
    """The custom side through the layer's stock path (fewer samples: it is slow on large outputs)."""
    hooks.stock()
    try:
        stock_samples = [time_once(p.run_custom, inner) for _ in range(max(1, samples // 5))]
    finally:
        hooks.ours()
    return statistics.median(stock_samples) * 1e3


def _peak_over_output(p: _Prepared, hooks: Hooks) -> float | None:
    """The peak of numpy allocations during one call of our hook over its output's size."""
    hooks.peak.clear()
    hooks.probe_memory()
    try:
        p.run_custom()
    finally:
        hooks.ours()
    if hooks.peak and hooks.peak[-1][1]:
        return hooks.peak[-1][0] / hooks.peak[-1][1]
    return None


def measure_workload(w: Workload, quick: bool, samples: int, hooks: Hooks) -> Result:
    """Every side of ``w`` timed alternately (two warm-up samples each, then ``samples``), the stock
    path, the first call, the peak memory and the largest difference from the built-in output."""
    p = _prepare(w, quick)
    sides = _sides(p, hooks, w)
    for _ in range(2):
        for side in sides:
            side.sample(1)
    target = 0.02 if w.small else 0.002
    (times_b, times_c, *stand_ins), inner = alternate(sides, samples, target)
    times_f, times_w, times_y = [*stand_ins, [], [], []][:3]  # each [] when that side did not run

    def median_ms(times: list[float]) -> float | None:
        return statistics.median(times) * 1e3 if times else None

    builtin_ms, custom_ms = statistics.median(times_b) * 1e3, statistics.median(times_c) * 1e3
    stock_ms = _stock_ms(p, hooks, samples, inner) if w.stand_ins else None
    return Result(
        name=w.name,
        op=w.op,
        shape=p.shape,
        small=w.small,
        builtin_ms=builtin_ms,
        custom_ms=custom_ms,
        ratio=custom_ms / builtin_ms,
        stock_ms=stock_ms,
        first_call_ms=p.first_call_ms,
        peak_over_output=_peak_over_output(p, hooks) if w.stand_ins else None,
        output_mb=p.custom_out.nbytes / 2**20,
        max_abs_diff=p.max_abs_diff,
        samples=samples,
        inner=inner,
        floor_ms=median_ms(times_f),
        write_only_ms=median_ms(times_w),
        copy_ms=median_ms(times_y),
        builtin_samples_ms=[t * 1e3 for t in times_b],
        custom_samples_ms=[t * 1e3 for t in times_c],
        floor_samples_ms=[t * 1e3 for t in times_f],
        write_only_samples_ms=[t * 1e3 for t in times_w],
        copy_samples_ms=[t * 1e3 for t in times_y],
    )
