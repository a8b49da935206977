"""``customops bench``: our kernels against ONNX Runtime's built-in ones on a fixed suite of workloads.

Each workload is a one-node model. The built-in side runs the standard model in a plain
``onnxruntime.InferenceSession``; the custom side runs ``customops.rewrite`` of it in
``customops.InferenceSession``. Both are timed alternately in one process (warm-up first, then the
median of repeats), so that their ratio holds on a noisy machine. The stock invocation path of
onnxruntime-extensions (outputs handed back through ``tolist()``) is timed on the same kernel for
comparison, and so is our invocation hook alone (a 1M-float identity). stdout carries the table, stderr
the progress; ``--json`` writes everything machine-readable.

This module is cheap to import: onnx, onnxruntime and numpy are imported by the command itself.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from customops.errors import CustomOpsError

# The targets of the summary lines (docs/performance.md): reported, not enforced.
GEOMEAN_TARGET = 1.0
WORST_TARGET = 3.0
OVERHEAD_TARGET_US = 20.0
HOOK_SPEEDUP_TARGET = 100.0
HOOK_TARGET_ELEMENTS = 1_000_000
PEAK_TARGET = 3.0


@dataclass(frozen=True)
class Workload:
    """One benchmark case: a one-node standard model and its input, at full or --quick size."""

    name: str
    op: str
    build: Callable[[bool], tuple[Any, dict[str, Any], str]]
    """quick -> (model, feed, shape text)."""
    small: bool = False
    """A tiny tensor: the case measures per-call overhead."""


@dataclass
class Result:
    name: str
    op: str
    shape: str
    small: bool
    builtin_ms: float
    custom_ms: float
    ratio: float
    stock_ms: float | None
    first_call_ms: float
    peak_over_output: float | None
    output_mb: float
    max_abs_diff: float | None
    samples: int
    inner: int
    floor_ms: float | None = None
    """The rewritten model with a kernel that costs nothing (its output handed back ready-made): what
    onnxruntime-extensions' copies and calls and our session cost, which no kernel can go below."""
    write_only_ms: float | None = None
    """The rewritten model with a kernel that reads nothing and only writes its output (a new array set
    to zero on the kernel threads): about the least any real kernel can cost behind this layer."""
    copy_ms: float | None = None
    """The rewritten model with a kernel that only copies its data input into its output (numpy copies
    split over the kernel threads): what moving the bytes once costs behind this layer, the yardstick
    for kernels that copy (Pad, CenterCropPad, nearest Resize), which filtering ones exceed. Not
    measured on tiny tensors (None), where per-call costs are all it would show."""
    builtin_samples_ms: list[float] = field(default_factory=list)
    custom_samples_ms: list[float] = field(default_factory=list)
    floor_samples_ms: list[float] = field(default_factory=list)
    write_only_samples_ms: list[float] = field(default_factory=list)
    copy_samples_ms: list[float] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# The suite


def _model(
    node: Any, inputs: list[tuple[str, Any]], inits: dict[str, Any], opset: int, out_rank: int | None = None
) -> Any:
    from onnx import helper, numpy_helper

    def elem(a: Any) -> int:
        return helper.np_dtype_to_tensor_dtype(a.dtype)

    graph = helper.make_graph(
        [node],
        "bench",
        [helper.make_tensor_value_info(name, elem(a), list(a.shape)) for name, a in inputs],
        [
            helper.make_tensor_value_info(
                node.output[0], elem(inputs[0][1]), [None] * (out_rank or inputs[0][1].ndim)
            )
        ],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _image(shape: tuple[int, ...], seed: int = 0) -> Any:
    import numpy as np

    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _resize(
    mode: str, full: tuple[int, ...], quick_shape: tuple[int, ...], factor: float, **attrs: Any
) -> Callable[[bool], tuple[Any, dict[str, Any], str]]:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        x = _image(shape)
        scales = np.array([1, 1, factor, factor], np.float32)
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode, **attrs)
        out = [*shape[:2], *(math.floor(s * factor) for s in shape[2:])]
        text = "x".join(map(str, shape)) + " -> " + "x".join(map(str, out))
        return _model(node, [("x", x)], {"scales": scales}, 19), {"x": x}, text

    return build


def _pad(
    mode: str, full: tuple[int, ...], quick_shape: tuple[int, ...], width: int
) -> Callable[[bool], tuple[Any, dict[str, Any], str]]:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        x = _image(shape)
        pads = np.array([0, 0, width, width, 0, 0, width, width], np.int64)
        node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
        text = "x".join(map(str, shape)) + f" pad {width}"
        return _model(node, [("x", x)], {"pads": pads}, 19), {"x": x}, text

    return build


def _col2im(
    channels: int, image: int, quick_image: int, block: int
) -> Callable[[bool], tuple[Any, dict[str, Any], str]]:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        size = quick_image if quick else image
        pad = block // 2
        x = _image((1, channels * block * block, size * size))
        node = helper.make_node(
            "Col2Im", ["x", "image_shape", "block_shape"], ["y"], pads=[pad] * 4, strides=[1, 1]
        )
        inits = {
            "image_shape": np.array([size, size], np.int64),
            "block_shape": np.array([block, block], np.int64),
        }
        text = f"{channels}ch {block}x{block} blocks -> {size}x{size}"
        return _model(node, [("x", x)], inits, 18, out_rank=4), {"x": x}, text

    return build


def _center_crop_pad(
    full: tuple[int, ...], quick_shape: tuple[int, ...], factor: float
) -> Callable[[bool], tuple[Any, dict[str, Any], str]]:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        x = _image(shape)
        target = [round(s * factor) for s in shape[2:]]
        node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[2, 3])
        text = "x".join(map(str, shape)) + " -> " + "x".join(map(str, [*shape[:2], *target]))
        return _model(node, [("x", x)], {"shape": np.array(target, np.int64)}, 18), {"x": x}, text

    return build


def suite() -> list[Workload]:
    """The fixed benchmark suite, in table order."""
    img, img_q = (1, 3, 512, 512), (1, 3, 96, 96)
    big, big_q = (1, 3, 1024, 1024), (1, 3, 128, 128)
    feat, feat_q = (1, 64, 256, 256), (1, 8, 48, 48)
    tiny = (1, 3, 8, 8)
    return [
        Workload("resize-nearest-x2", "Resize", _resize("nearest", img, img_q, 2)),
        Workload("resize-linear-x2", "Resize", _resize("linear", img, img_q, 2)),
        Workload("resize-cubic-x2", "Resize", _resize("cubic", img, img_q, 2)),
        Workload("resize-linear-antialias-div4", "Resize", _resize("linear", big, big_q, 0.25, antialias=1)),
        Workload("resize-cubic-antialias-div4", "Resize", _resize("cubic", big, big_q, 0.25, antialias=1)),
        Workload(
            "resize-nearest-x2-asymmetric-floor",
            "Resize",
            _resize(
                "nearest",
                (1, 128, 80, 80),
                (1, 16, 20, 20),
                2,
                coordinate_transformation_mode="asymmetric",
                nearest_mode="floor",
            ),
        ),
        Workload("pad-constant", "Pad", _pad("constant", feat, feat_q, 3)),
        Workload("pad-reflect", "Pad", _pad("reflect", feat, feat_q, 3)),
        Workload("pad-edge", "Pad", _pad("edge", feat, feat_q, 3)),
        Workload("pad-wrap", "Pad", _pad("wrap", feat, feat_q, 3)),
        Workload("col2im-16ch-3x3", "Col2Im", _col2im(16, 256, 32, 3)),
        Workload("centercroppad-crop", "CenterCropPad", _center_crop_pad(big, big_q, 0.75)),
        Workload("centercroppad-pad", "CenterCropPad", _center_crop_pad(big, big_q, 1.25)),
        Workload("small-resize-nearest-x2", "Resize", _resize("nearest", tiny, tiny, 2), small=True),
        Workload("small-resize-linear-x2", "Resize", _resize("linear", tiny, tiny, 2), small=True),
        Workload("small-resize-cubic-x2", "Resize", _resize("cubic", tiny, tiny, 2), small=True),
        Workload("small-pad-reflect", "Pad", _pad("reflect", tiny, tiny, 1), small=True),
        Workload("small-col2im", "Col2Im", _col2im(2, 8, 8, 3), small=True),
        Workload("small-centercroppad", "CenterCropPad", _center_crop_pad(tiny, tiny, 0.75), small=True),
    ]


def select(filter_text: str | None) -> list[Workload]:
    """The workloads whose name contains ``filter_text`` (case-insensitive); all of them by default."""
    workloads = suite()
    if not filter_text:
        return workloads
    wanted = filter_text.lower()
    chosen = [w for w in workloads if wanted in w.name]
    if not chosen:
        names = ", ".join(w.name for w in workloads)
        raise CustomOpsError(f"--filter {filter_text!r} matches no workload; the workloads are: {names}")
    return chosen


# ---------------------------------------------------------------------------------------------
# Timing


def _time_once(run: Callable[[], Any], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        run()
    return (time.perf_counter() - start) / inner


def _inner_count(run: Callable[[], Any], target_s: float) -> int:
    """How many back-to-back runs make one sample of about ``target_s`` (1 for slow runs)."""
    once = _time_once(run, 1)
    if once >= target_s:
        return 1
    return max(1, min(10_000, int(target_s / max(once, 1e-7))))


# After a run that used it, ORT's intra-op pool keeps spinning on a core for about 50 ms (its worker's CPU
# time, docs/performance.md "ORT's spinning pool"): a side timed in that window shares a core with it.
# After each built-in sample (tiny ones too: the 8x8 bilinear Resize uses the pool) the bench waits this
# long, busy on the calling thread (an idle pause let the VM idle, and copy-bound runs after it slowed).
_SETTLE_S = 0.1


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass
class _Side:
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
            return _time_once(self.run, inner)
        finally:
            self.leave()
            if self.settle:
                _busy_wait(self.settle)


def _orders(n: int) -> list[list[int]]:
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
    orders = [[(k + i) % n for k in first] for i in range(n)]
    if n % 2:
        orders += [list(reversed(order)) for order in orders]
    return orders


def _alternate(sides: list[_Side], samples: int, target_s: float) -> tuple[list[list[float]], int]:
    """Alternate samples of the sides; returns their per-run seconds and the runs per sample."""
    inner = min(_sides_inner(side, target_s) for side in sides)
    times: list[list[float]] = [[] for _ in sides]
    orders = _orders(len(sides))
    for i in range(samples):
        # Balanced orders: no side always runs first, or always after the same other side (on the
        # caches and threads it left).
        for j in orders[i % len(orders)]:
            times[j].append(sides[j].sample(inner))
    return times, inner


def _sides_inner(side: _Side, target_s: float) -> int:
    side.enter()
    try:
        return _inner_count(side.run, target_s)
    finally:
        side.leave()


class _Hooks:
    """Swap onnxruntime-extensions' invocation hook: ours, the stock path, or ours under a probe."""

    def __init__(self) -> None:
        from onnxruntime_extensions import PyCustomOpDef

        from customops.bridge import runtime

        self.runtime = runtime
        self.install = PyCustomOpDef.install_hooker
        self.peak: list[tuple[int, int]] = []

    def ours(self) -> None:
        self.install(self.runtime.our_hook())

    def stock(self) -> None:
        """The stock path of onnxruntime-extensions on our kernel: the result goes back as a list."""
        runtime = self.runtime

        def stock_path(k_id: int, feed: Any, raw: dict[str, str]) -> tuple[Any, ...]:
            kernel, kwargs = runtime.kernel_call(k_id, raw)
            rv = kernel(*feed, **kwargs)
            return (k_id, rv.shape, rv.flatten().tolist())

        self.install(stock_path)

    def _answering(self, output: Callable[[Any], Any]) -> Callable[[], None]:
        """A hook that answers every call of our ops with ``output(inputs)`` (others go to the stock
        handler). Returns the function that installs it."""
        ours = self.runtime.our_registrations()
        stock = self.runtime.stock_hook()

        def answer(k_id: int, feed: Any, raw: dict[str, str]) -> tuple[Any, ...]:
            if k_id not in ours:
                return stock(k_id, feed, raw)
            out = output(feed)
            return (k_id, out.shape, out)

        return lambda: self.install(answer)

    def ready_made(self, output: Any) -> Callable[[], None]:
        """A hook whose kernel costs nothing: every call of our ops gets ``output`` back as is.
        Returns the function that installs it."""
        return self._answering(lambda feed: output)

    def write_only(self, shape: tuple[int, ...], dtype: Any) -> Callable[[], None]:
        """A hook whose kernel reads nothing and writes its output once: a new array of ``shape`` and
        ``dtype`` set to zero, split over the kernel threads as the compiled loops are. Returns the
        function that installs it."""
        import numpy as np

        from customops.accel import parallel

        size = math.prod(shape)
        serial = parallel.serial(size)

        def zero(flat: Any, start: int, stop: int) -> None:
            flat[start:stop] = 0  # numpy releases the GIL for this

        def write(feed: Any) -> Any:
            if serial:
                return np.zeros(shape, dtype)
            out = np.empty(shape, dtype)
            parallel.run(zero, size, size, out.reshape(-1))
            return out

        return self._answering(write)

    def copy_once(self, shape: tuple[int, ...], dtype: Any) -> Callable[[], None]:
        """A hook whose kernel copies its data input (the node's first input) into a new array of
        ``shape`` and ``dtype`` once: the first elements, as many as both hold, in order; the rest of a
        larger input is read (an OR over its bits), the rest of a larger output set to zero. Split over
        the kernel threads as the compiled loops are, each part taking an equal share of positions.
        Returns the function that installs it."""
        import numpy as np

        from customops.accel import parallel

        dtype = np.dtype(dtype)
        bits = np.dtype(f"u{dtype.itemsize}") if dtype.itemsize in (1, 2, 4, 8) else np.dtype(np.uint8)
        units = _COPY_UNITS

        def part(src: Any, dst: Any, start: int, stop: int) -> None:
            both, longer = min(src.size, dst.size), max(src.size, dst.size)
            lo, hi = longer * start // units, longer * stop // units  # this part's share of positions
            if lo < both:
                dst[lo : min(hi, both)] = src[lo : min(hi, both)]  # numpy releases the GIL for these
            lo = max(lo, both)
            if lo < hi:
                if src.size > both:
                    np.bitwise_or.reduce(src[lo:hi])
                else:
                    dst[lo:hi] = 0

        def copy(feed: Any) -> Any:
            out = np.empty(shape, dtype)
            src = feed[0].reshape(-1).view(bits)  # the layer's inputs are fresh C-contiguous copies
            dst = out.reshape(-1).view(bits)
            parallel.run(part, units, src.size + dst.size, src, dst)
            return out

        return self._answering(copy)

    def probe_memory(self) -> None:
        """Our hook, recording (peak bytes numpy allocated during the call, output bytes)."""
        import tracemalloc

        invoke = self.runtime.our_hook()

        def probed(k_id: int, feed: Any, raw: dict[str, str]) -> tuple[Any, ...]:
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                result = invoke(k_id, feed, raw)
                peak = tracemalloc.get_traced_memory()[1] - base
            finally:
                tracemalloc.stop()
            self.peak.append((peak, getattr(result[2], "nbytes", 0)))
            return result

        self.install(probed)


# The copy side's parts: the thread splitter cuts [0, _COPY_UNITS) into pieces, each piece an equal
# share of the positions of the larger of input and output.
_COPY_UNITS = 1 << 12


def _measure_hook(hooks: _Hooks, samples: int, elements: int) -> dict[str, Any]:
    """Our invocation hook against the stock path on a float identity of ``elements`` values."""
    import numpy as np
    from onnx import helper

    import customops

    x = _image((1, elements))
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant")
    model = customops.rewrite(_model(node, [("x", x)], {"pads": np.zeros(4, np.int64)}, 19))
    session = customops.InferenceSession(model)
    with hooks.runtime.kernel_replaced("Pad", lambda data, *args, **kwargs: data):
        run = lambda: session.run(None, {"x": x})  # noqa: E731
        run()
        hook = statistics.median(_time_once(run, 1) for _ in range(max(samples, 5)))
        hooks.stock()
        try:
            run()
            stock = statistics.median(_time_once(run, 1) for _ in range(max(1, samples // 3)))
        finally:
            hooks.ours()
    return {
        "elements": elements,
        "hook_ms": hook * 1e3,
        "stock_ms": stock * 1e3,
        "speedup": stock / hook,
    }


def _run_workload(w: Workload, quick: bool, samples: int, hooks: _Hooks) -> Result:
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

    install_ready = hooks.ready_made(np.ascontiguousarray(custom_out))
    install_write = hooks.write_only(custom_out.shape, custom_out.dtype)

    sides = [
        _Side(run_builtin, settle=_SETTLE_S),
        _Side(run_custom),
        _Side(run_custom, install_ready, hooks.ours),
        _Side(run_custom, install_write, hooks.ours),
    ]
    if not w.small:  # on tiny tensors the per-call costs are all a copy would show: see the floor
        sides.append(_Side(run_custom, hooks.copy_once(custom_out.shape, custom_out.dtype), hooks.ours))
    for _ in range(2):
        for side in sides:
            side.sample(1)
    target = 0.02 if w.small else 0.002
    (times_b, times_c, times_f, times_w, *copied), inner = _alternate(sides, samples, target)
    times_y = copied[0] if copied else []  # the copy side, when it ran
    builtin_ms = statistics.median(times_b) * 1e3
    custom_ms = statistics.median(times_c) * 1e3
    floor_ms = statistics.median(times_f) * 1e3
    write_only_ms = statistics.median(times_w) * 1e3
    copy_ms = statistics.median(times_y) * 1e3 if times_y else None

    hooks.stock()
    try:
        stock_samples = [_time_once(run_custom, inner) for _ in range(max(1, samples // 5))]
    finally:
        hooks.ours()
    stock_ms = statistics.median(stock_samples) * 1e3

    hooks.peak.clear()
    hooks.probe_memory()
    try:
        run_custom()
    finally:
        hooks.ours()
    peak_ratio = None
    if hooks.peak and hooks.peak[-1][1]:
        peak_ratio = hooks.peak[-1][0] / hooks.peak[-1][1]
    return Result(
        name=w.name,
        op=w.op,
        shape=shape_text,
        small=w.small,
        builtin_ms=builtin_ms,
        custom_ms=custom_ms,
        ratio=custom_ms / builtin_ms,
        stock_ms=stock_ms,
        first_call_ms=first_call * 1e3,
        peak_over_output=peak_ratio,
        output_mb=custom_out.nbytes / 2**20,
        max_abs_diff=diff,
        samples=samples,
        inner=inner,
        floor_ms=floor_ms,
        write_only_ms=write_only_ms,
        copy_ms=copy_ms,
        builtin_samples_ms=[t * 1e3 for t in times_b],
        custom_samples_ms=[t * 1e3 for t in times_c],
        floor_samples_ms=[t * 1e3 for t in times_f],
        write_only_samples_ms=[t * 1e3 for t in times_w],
        copy_samples_ms=[t * 1e3 for t in times_y],
    )


# ---------------------------------------------------------------------------------------------
# Report


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
        import onnxruntime_extensions

        info["onnxruntime_extensions"] = onnxruntime_extensions.__version__
    except ImportError:  # pragma: no cover
        pass
    from customops.accel import jit, parallel

    info.update(jit.describe())
    info["threads"] = parallel.threads()
    info["threads_source"] = parallel.describe()
    return info


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summarize(results: list[Result]) -> dict[str, Any]:
    """Geometric mean and worst of custom/built-in, and the per-call overhead on tiny tensors."""
    if not results:
        return {}
    worst = max(results, key=lambda r: r.ratio)
    small = [r for r in results if r.small]
    summary: dict[str, Any] = {
        "geomean_ratio": _geomean([r.ratio for r in results]),
        "worst_ratio": worst.ratio,
        "worst": worst.name,
        "workloads": len(results),
    }
    if small:
        over = max(small, key=lambda r: r.custom_ms - r.builtin_ms)
        summary["max_overhead_us"] = (over.custom_ms - over.builtin_ms) * 1e3
        summary["max_overhead_workload"] = over.name
        if over.floor_ms is not None:
            summary["max_overhead_floor_us"] = (over.floor_ms - over.builtin_ms) * 1e3
    floors = [r for r in results if r.floor_ms]
    if floors:
        summary["floor_geomean_ratio"] = _geomean([r.floor_ms / r.builtin_ms for r in floors])  # type: ignore[operator]
        summary["floor_at_or_above_builtin"] = [r.name for r in floors if r.floor_ms >= r.builtin_ms]  # type: ignore[operator]
    written = [r for r in results if r.write_only_ms]
    if written:
        summary["write_only_geomean_ratio"] = _geomean([r.write_only_ms / r.builtin_ms for r in written])  # type: ignore[operator]
    copied = [r for r in results if r.copy_ms]
    if copied:
        summary["copy_geomean_ratio"] = _geomean([r.copy_ms / r.builtin_ms for r in copied])  # type: ignore[operator]
        summary["custom_over_copy_geomean"] = _geomean([r.custom_ms / r.copy_ms for r in copied])  # type: ignore[operator]
        summary["copied_geomean_ratio"] = _geomean([r.ratio for r in copied])
        summary["copy_workloads"] = len(copied)
    peaks = [r.peak_over_output for r in results if r.op == "Resize" and r.peak_over_output is not None]
    if peaks:
        summary["resize_peak_over_output"] = max(peaks)
    return summary


def judge_targets(summary: dict[str, Any], hook: dict[str, Any] | None, full: bool) -> list[dict[str, Any]]:
    """Issue 6's targets against a run's summary: for each, its name, the measured value, the target,
    and ``met`` (True or False; None when the run cannot judge it: a --quick or --filter run, or a value
    it did not measure). A value equal to its target meets it."""

    def judged(name: str, value: float | None, target: float, at_most: bool, unit: str) -> dict[str, Any]:
        met = None
        if full and value is not None:
            met = value <= target if at_most else value >= target
        return {"target": name, "value": value, "limit": target, "at_most": at_most, "unit": unit, "met": met}

    hook_speedup = None
    if hook and hook.get("elements", 0) >= HOOK_TARGET_ELEMENTS:
        hook_speedup = hook["speedup"]
    return [
        judged("geometric mean custom/built-in", summary.get("geomean_ratio"), GEOMEAN_TARGET, True, "x"),
        judged("worst custom/built-in", summary.get("worst_ratio"), WORST_TARGET, True, "x"),
        judged(
            "per-call overhead on tiny tensors",
            summary.get("max_overhead_us"),
            OVERHEAD_TARGET_US,
            True,
            "us",
        ),
        judged("invocation hook against the stock path", hook_speedup, HOOK_SPEEDUP_TARGET, False, "x"),
        judged(
            "peak memory of a custom Resize / output",
            summary.get("resize_peak_over_output"),
            PEAK_TARGET,
            True,
            "x",
        ),
    ]


def targets_line(targets: list[dict[str, Any]]) -> str:
    """One line: how many targets the run meets, and each one's verdict."""
    if all(t["met"] is None for t in targets):
        return "targets: not judged (a full run without --quick or --filter judges them)"
    judged = [t for t in targets if t["met"] is not None]
    parts = []
    for t in targets:
        sign = "<=" if t["at_most"] else ">="
        if t["value"] is None:
            value = "-"
        elif t["unit"] == "us":
            value = f"{t['value']:+.1f} us"
        else:
            value = f"{t['value']:.0f}x" if t["value"] >= 10 else f"{t['value']:.2f}x"
        verdict = {True: "met", False: "NOT met", None: "not judged"}[t["met"]]
        parts.append(f"{t['target']} {value} ({sign} {t['limit']:g}): {verdict}")
    met = sum(1 for t in judged if t["met"])
    return f"targets: {met} of {len(judged)} met; " + "; ".join(parts)


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def table(results: list[Result]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| workload | shape | built-in ms | custom ms | custom/built-in | floor ms | floor/built-in "
        "| write-only/built-in | copy/built-in | stock path ms | peak mem / output |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        small = r.small
        digits = 4 if small else 2
        lines.append(
            f"| {r.name} | {r.shape} | {_fmt(r.builtin_ms, digits)} | {_fmt(r.custom_ms, digits)} | "
            f"{r.ratio:.2f} | {_fmt(r.floor_ms, digits)} | "
            f"{'-' if r.floor_ms is None else f'{r.floor_ms / r.builtin_ms:.2f}'} | "
            f"{'-' if r.write_only_ms is None else f'{r.write_only_ms / r.builtin_ms:.2f}'} | "
            f"{'-' if r.copy_ms is None else f'{r.copy_ms / r.builtin_ms:.2f}'} | "
            f"{_fmt(r.stock_ms, digits)} | "
            f"{'-' if r.peak_over_output is None else f'{r.peak_over_output:.2f}'} |"
        )
    return "\n".join(lines)


def summary_lines(summary: dict[str, Any], hook: dict[str, Any] | None) -> list[str]:
    lines = []
    if summary:
        lines.append(
            f"geometric mean custom/built-in {summary['geomean_ratio']:.2f} over {summary['workloads']} "
            f"workloads (target {GEOMEAN_TARGET:.1f}); worst {summary['worst_ratio']:.2f} ({summary['worst']}; "
            f"target {WORST_TARGET:.1f})"
        )
        if "max_overhead_us" in summary:
            lines.append(
                f"per-call overhead on tiny tensors: at most {summary['max_overhead_us']:+.1f} us against the "
                f"built-in node ({summary['max_overhead_workload']}; target {OVERHEAD_TARGET_US:.0f} us)"
                + (
                    f", of which the floor {summary['max_overhead_floor_us']:+.1f} us"
                    if "max_overhead_floor_us" in summary
                    else ""
                )
            )
        if "floor_geomean_ratio" in summary:
            above = summary["floor_at_or_above_builtin"]
            lines.append(
                f"floor (a kernel that costs nothing, behind the same layer): geometric mean floor/built-in "
                f"{summary['floor_geomean_ratio']:.2f}; at or above the built-in time on {len(above)} of "
                f"{summary['workloads']} workloads" + (f" ({', '.join(above)})" if above else "")
            )
        if "write_only_geomean_ratio" in summary:
            lines.append(
                "write-only (a kernel that reads nothing and only writes its output, behind the same layer): "
                f"geometric mean write-only/built-in {summary['write_only_geomean_ratio']:.2f}"
            )
        if "copy_geomean_ratio" in summary:
            lines.append(
                "copy (a kernel that only copies its data input into its output once, behind the same layer; "
                f"the {summary['copy_workloads']} workloads not on tiny tensors): geometric mean copy/built-in "
                f"{summary['copy_geomean_ratio']:.2f}, custom/built-in {summary['copied_geomean_ratio']:.2f}, "
                f"custom/copy {summary['custom_over_copy_geomean']:.2f}"
            )
        if "resize_peak_over_output" in summary:
            lines.append(
                f"peak memory of a custom Resize: at most {summary['resize_peak_over_output']:.2f}x its output "
                f"(target {PEAK_TARGET:.0f}x)"
            )
    if hook:
        # the target is defined at 1M floats; a --quick run measures 1,000, where the layer's fixed costs
        # dominate both paths
        target = (
            f"target {HOOK_SPEEDUP_TARGET:.0f}x"
            if hook["elements"] >= HOOK_TARGET_ELEMENTS
            else f"the {HOOK_SPEEDUP_TARGET:.0f}x target is for {HOOK_TARGET_ELEMENTS:,} floats: run without --quick"
        )
        lines.append(
            f"invocation hook, {hook['elements']:,}-float identity: {hook['hook_ms']:.2f} ms, stock path "
            f"{hook['stock_ms']:.1f} ms ({hook['speedup']:.0f}x faster; {target})"
        )
    return lines


# ---------------------------------------------------------------------------------------------
# Command


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; 0 when it ran (the targets are reported, not enforced)."""
    workloads = select(args.filter)
    if args.json is not None:
        from customops.safeio import check_output_file

        check_output_file(args.json, "--json")
    if args.repeat is not None and args.repeat < 1:
        raise CustomOpsError(f"--repeat {args.repeat} must be at least 1")
    samples = args.repeat or (3 if args.quick else 15)

    from customops import jsonout

    hooks = _Hooks()
    results: list[Result] = []
    for i, w in enumerate(workloads, 1):
        print(f"bench [{i}/{len(workloads)}] {w.name} ...", file=sys.stderr, flush=True)
        results.append(_run_workload(w, args.quick, samples, hooks))
        r = results[-1]
        print(
            f"bench [{i}/{len(workloads)}] {w.name}: built-in {r.builtin_ms:.3f} ms, custom "
            f"{r.custom_ms:.3f} ms ({r.ratio:.2f}x)",
            file=sys.stderr,
            flush=True,
        )
    hook = None
    if not args.filter:
        print("bench: invocation hook against the stock path ...", file=sys.stderr, flush=True)
        hook = _measure_hook(hooks, samples, 1_000 if args.quick else HOOK_TARGET_ELEMENTS)
    summary = summarize(results)
    info = machine()
    print(
        f"machine: {info['nproc']} cores ({info['cpu']}); onnxruntime {info['onnxruntime']}, "
        f"onnxruntime-extensions {info.get('onnxruntime_extensions', '?')}, numpy {info['numpy']}, "
        f"{info['jit']}, kernel threads {info['threads_source']}; "
        f"{'quick' if args.quick else 'full'} run, median of {samples}"
    )
    print()
    print(table(results))
    print()
    for line in summary_lines(summary, hook):
        print(line)
    targets = judge_targets(summary, hook, full=not (args.quick or args.filter))
    print(targets_line(targets))
    if args.json:
        payload = {
            "machine": info,
            "settings": {"quick": bool(args.quick), "samples": samples, "filter": args.filter},
            "results": [r.__dict__ for r in results],
            "summary": summary,
            "hook": hook,
            "targets": targets,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            jsonout.dump(payload, f, indent=1)
            f.write("\n")
    return 0
