"""What ``customops bench`` reports: the results as dataclasses, their summary, the targets, the text and
Markdown renderings, and the JSON payload of ``--json``.

The summary and the targets are derived from the per-workload results and the hook measurement, never
stored on their own: a report read back from its JSON (customops.bench.saved) is summarized and judged
afresh, so what ``--from`` prints is what the run printed. Nothing here runs a benchmark or imports onnx,
onnxruntime or numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from customops.safeio import printable

# The targets of the summary lines (docs/performance.md): reported, not enforced.
GEOMEAN_TARGET = 1.0
WORST_TARGET = 3.0
OVERHEAD_TARGET_US = 20.0
HOOK_SPEEDUP_TARGET = 100.0
HOOK_TARGET_ELEMENTS = 1_000_000
PEAK_TARGET = 3.0

# ---------------------------------------------------------------------------------------------
# The results


@dataclass
class Result:
    """One workload's measurements (times in ms: medians of the samples, which are kept too)."""

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

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class HookResult:
    """Our invocation hook against the stock path on a float identity of ``elements`` values."""

    elements: int
    hook_ms: float
    stock_ms: float
    speedup: float

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Settings:
    """How a run was asked for: --quick, the samples per workload, --filter."""

    quick: bool
    samples: int
    filter: str | None

    @property
    def full(self) -> bool:
        """A run that judges the targets: the whole suite at full size."""
        return not (self.quick or self.filter)

    def to_json(self) -> dict[str, Any]:
        return {"quick": self.quick, "samples": self.samples, "filter": self.filter}


# ---------------------------------------------------------------------------------------------
# Summary and targets


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class Summary:
    """The summary lines' numbers. A field is None when the run measured nothing it applies to (no tiny
    workload, no floor, copy or Resize peak); ``to_json`` leaves those out."""

    geomean_ratio: float
    worst_ratio: float
    worst: str
    workloads: int
    max_overhead_us: float | None = None
    max_overhead_workload: str | None = None
    max_overhead_floor_us: float | None = None
    floor_geomean_ratio: float | None = None
    floor_at_or_above_builtin: tuple[str, ...] | None = None
    write_only_geomean_ratio: float | None = None
    copy_geomean_ratio: float | None = None
    custom_over_copy_geomean: float | None = None
    copied_geomean_ratio: float | None = None
    copy_workloads: int | None = None
    resize_peak_over_output: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        if self.floor_at_or_above_builtin is not None:
            out["floor_at_or_above_builtin"] = list(self.floor_at_or_above_builtin)
        return out


def summarize(results: list[Result]) -> Summary | None:
    """Geometric mean and worst of custom/built-in, the per-call overhead on tiny tensors, the floor,
    write-only and copy sides against the built-in one, the largest Resize peak; None without results."""
    if not results:
        return None
    worst = max(results, key=lambda r: r.ratio)
    return Summary(
        geomean_ratio=geomean([r.ratio for r in results]),
        worst_ratio=worst.ratio,
        worst=worst.name,
        workloads=len(results),
        **_overhead(results),
        **_yardsticks(results),
        resize_peak_over_output=max(
            (r.peak_over_output for r in results if r.op == "Resize" and r.peak_over_output is not None),
            default=None,
        ),
    )


def _overhead(results: list[Result]) -> dict[str, Any]:
    """The largest custom minus built-in time over the tiny workloads, in µs, and the floor's share."""
    small = [r for r in results if r.small]
    if not small:
        return {}
    over = max(small, key=lambda r: r.custom_ms - r.builtin_ms)
    return {
        "max_overhead_us": (over.custom_ms - over.builtin_ms) * 1e3,
        "max_overhead_workload": over.name,
        "max_overhead_floor_us": None if over.floor_ms is None else (over.floor_ms - over.builtin_ms) * 1e3,
    }


def _yardsticks(results: list[Result]) -> dict[str, Any]:
    """The floor, write-only and copy sides against the built-in one (over the workloads that ran them)."""
    out: dict[str, Any] = {}
    floors = [(r, r.floor_ms) for r in results if r.floor_ms]
    if floors:
        out["floor_geomean_ratio"] = geomean([f / r.builtin_ms for r, f in floors])
        out["floor_at_or_above_builtin"] = tuple(r.name for r, f in floors if f >= r.builtin_ms)
    written = [w / r.builtin_ms for r in results if (w := r.write_only_ms)]
    if written:
        out["write_only_geomean_ratio"] = geomean(written)
    copied = [(r, c) for r in results if (c := r.copy_ms)]
    if copied:
        out["copy_geomean_ratio"] = geomean([c / r.builtin_ms for r, c in copied])
        out["custom_over_copy_geomean"] = geomean([r.custom_ms / c for r, c in copied])
        out["copied_geomean_ratio"] = geomean([r.ratio for r, _ in copied])
        out["copy_workloads"] = len(copied)
    return out


@dataclass(frozen=True)
class Target:
    """One of issue 6's targets against a run: ``met`` is None when the run cannot judge it (a --quick
    or --filter run, or a value it did not measure). A value equal to its limit meets it."""

    name: str
    value: float | None
    limit: float
    at_most: bool
    unit: str
    met: bool | None

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.name,
            "value": self.value,
            "limit": self.limit,
            "at_most": self.at_most,
            "unit": self.unit,
            "met": self.met,
        }

    def verdict(self) -> str:
        """``NAME VALUE (<= LIMIT): met`` (or ``NOT met``, ``not judged``)."""
        sign = "<=" if self.at_most else ">="
        if self.value is None:
            value = "-"
        elif self.unit == "us":
            value = f"{self.value:+.1f} us"
        else:
            value = f"{self.value:.0f}x" if self.value >= 10 else f"{self.value:.2f}x"
        verdict = {True: "met", False: "NOT met", None: "not judged"}[self.met]
        return f"{self.name} {value} ({sign} {self.limit:g}): {verdict}"


def judge_targets(summary: Summary | None, hook: HookResult | None, full: bool) -> list[Target]:
    """Issue 6's five targets against a run's summary and hook measurement; judged only when ``full``."""

    def judged(name: str, value: float | None, limit: float, at_most: bool, unit: str) -> Target:
        met = None
        if full and value is not None:
            met = value <= limit if at_most else value >= limit
        return Target(name, value, limit, at_most, unit, met)

    def measured(name: str) -> Any:
        return None if summary is None else getattr(summary, name)

    hook_speedup = hook.speedup if hook and hook.elements >= HOOK_TARGET_ELEMENTS else None
    return [
        judged("geometric mean custom/built-in", measured("geomean_ratio"), GEOMEAN_TARGET, True, "x"),
        judged("worst custom/built-in", measured("worst_ratio"), WORST_TARGET, True, "x"),
        judged(
            "per-call overhead on tiny tensors", measured("max_overhead_us"), OVERHEAD_TARGET_US, True, "us"
        ),
        judged("invocation hook against the stock path", hook_speedup, HOOK_SPEEDUP_TARGET, False, "x"),
        judged(
            "peak memory of a custom Resize / output",
            measured("resize_peak_over_output"),
            PEAK_TARGET,
            True,
            "x",
        ),
    ]


def targets_line(targets: list[Target]) -> str:
    """One line: how many targets the run meets, and each one's verdict."""
    judged = [t for t in targets if t.met is not None]
    if not judged:
        return "targets: not judged (a full run without --quick or --filter judges them)"
    met = sum(1 for t in judged if t.met)
    return f"targets: {met} of {len(judged)} met; " + "; ".join(t.verdict() for t in targets)


def targets_table(targets: list[Target]) -> str:
    """The targets as a small Markdown table (the README's performance summary shows docs/bench.json's)."""
    rows = ["| target | this run | goal | |", "|---|---:|---:|---|"]
    for t in targets:
        value = t.verdict().rsplit(" (", 1)[0][len(t.name) + 1 :]
        goal = f"{'<=' if t.at_most else '>='} {t.limit:g}{' us' if t.unit == 'us' else 'x'}"
        met = {True: "met", False: "not met", None: "not judged"}[t.met]
        rows.append(f"| {t.name} | {value} | {goal} | {met} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------
# Rendering


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def _over(value: float | None, base: float) -> str:
    return "-" if value is None else f"{value / base:.2f}"


def _cell(text: str) -> str:
    """Text from a result as one Markdown table cell (no control characters, no bare ``|``)."""
    return printable(text).replace("|", "\\|")


def table(results: list[Result]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| workload | shape | built-in ms | custom ms | custom/built-in | floor ms | floor/built-in "
        "| write-only/built-in | copy/built-in | stock path ms | peak mem / output |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        digits = 4 if r.small else 2
        lines.append(
            f"| {_cell(r.name)} | {_cell(r.shape)} | {_fmt(r.builtin_ms, digits)} | {_fmt(r.custom_ms, digits)} | "
            f"{r.ratio:.2f} | {_fmt(r.floor_ms, digits)} | {_over(r.floor_ms, r.builtin_ms)} | "
            f"{_over(r.write_only_ms, r.builtin_ms)} | {_over(r.copy_ms, r.builtin_ms)} | "
            f"{_fmt(r.stock_ms, digits)} | "
            f"{'-' if r.peak_over_output is None else f'{r.peak_over_output:.2f}'} |"
        )
    return "\n".join(lines)


def summary_lines(summary: Summary | None, hook: HookResult | None) -> list[str]:
    """The summary below the table: one line per measure the run has, then the hook's."""
    lines = _ratio_lines(summary) if summary else []
    if hook:
        # the target is defined at 1M floats; a --quick run measures 1,000, where the layer's fixed costs
        # dominate both paths
        target = (
            f"target {HOOK_SPEEDUP_TARGET:.0f}x"
            if hook.elements >= HOOK_TARGET_ELEMENTS
            else f"the {HOOK_SPEEDUP_TARGET:.0f}x target is for {HOOK_TARGET_ELEMENTS:,} floats: run without --quick"
        )
        lines.append(
            f"invocation hook, {hook.elements:,}-float identity: {hook.hook_ms:.2f} ms, stock path "
            f"{hook.stock_ms:.1f} ms ({hook.speedup:.0f}x faster; {target})"
        )
    return lines


def _ratio_lines(s: Summary) -> list[str]:
    lines = [
        f"geometric mean custom/built-in {s.geomean_ratio:.2f} over {s.workloads} workloads (target "
        f"{GEOMEAN_TARGET:.1f}); worst {s.worst_ratio:.2f} ({_cell(s.worst)}; target {WORST_TARGET:.1f})"
    ]
    if s.max_overhead_us is not None:
        floor = s.max_overhead_floor_us
        lines.append(
            f"per-call overhead on tiny tensors: at most {s.max_overhead_us:+.1f} us against the built-in node "
            f"({_cell(s.max_overhead_workload or '')}; target {OVERHEAD_TARGET_US:.0f} us)"
            + (f", of which the floor {floor:+.1f} us" if floor is not None else "")
        )
    if s.floor_geomean_ratio is not None:
        above = [_cell(name) for name in s.floor_at_or_above_builtin or ()]
        lines.append(
            f"floor (a kernel that costs nothing, behind the same layer): geometric mean floor/built-in "
            f"{s.floor_geomean_ratio:.2f}; at or above the built-in time on {len(above)} of "
            f"{s.workloads} workloads" + (f" ({', '.join(above)})" if above else "")
        )
    if s.write_only_geomean_ratio is not None:
        lines.append(
            "write-only (a kernel that reads nothing and only writes its output, behind the same layer): "
            f"geometric mean write-only/built-in {s.write_only_geomean_ratio:.2f}"
        )
    if s.copy_geomean_ratio is not None:
        lines.append(
            "copy (a kernel that only copies its data input into its output once, behind the same layer; "
            f"the {s.copy_workloads} workloads not on tiny tensors): geometric mean copy/built-in "
            f"{s.copy_geomean_ratio:.2f}, custom/built-in {s.copied_geomean_ratio:.2f}, "
            f"custom/copy {s.custom_over_copy_geomean:.2f}"
        )
    if s.resize_peak_over_output is not None:
        lines.append(
            f"peak memory of a custom Resize: at most {s.resize_peak_over_output:.2f}x its output "
            f"(target {PEAK_TARGET:.0f}x)"
        )
    return lines


def machine_line(machine: dict[str, Any], settings: Settings) -> str:
    """The report's first line: what the numbers were measured on, and how the run was asked for."""

    def get(key: str) -> str:
        return printable(machine.get(key, "?"))

    return (
        f"machine: {get('nproc')} cores ({get('cpu')}); onnxruntime {get('onnxruntime')}, "
        f"onnxruntime-extensions {get('onnxruntime_extensions')}, numpy {get('numpy')}, "
        f"{get('jit')}, kernel threads {get('threads_source')}; "
        f"{'quick' if settings.quick else 'full'} run, median of {settings.samples}"
    )


# ---------------------------------------------------------------------------------------------
# A whole report


@dataclass
class Report:
    """One run: where it ran, how it was asked for, its results and the hook measurement (None on a
    --filter run). The summary and the targets follow from these."""

    machine: dict[str, Any]
    settings: Settings
    results: list[Result]
    hook: HookResult | None

    @property
    def summary(self) -> Summary | None:
        return summarize(self.results)

    @property
    def targets(self) -> list[Target]:
        return judge_targets(self.summary, self.hook, self.settings.full)

    def text(self) -> str:
        """What ``customops bench`` prints on stdout: the machine line, the table, the summary lines and
        the targets line."""
        summary = self.summary
        return "\n".join(
            [
                machine_line(self.machine, self.settings),
                "",
                table(self.results),
                "",
                *summary_lines(summary, self.hook),
                targets_line(judge_targets(summary, self.hook, self.settings.full)),
            ]
        )

    def markdown(self) -> str:
        """The report as Markdown (``--markdown``): the machine line, the table, the summary as a list and
        the targets as a table (:func:`targets_table`)."""
        return "\n".join(
            [
                machine_line(self.machine, self.settings),
                "",
                table(self.results),
                "",
                *(f"- {line}" for line in summary_lines(self.summary, self.hook)),
                "",
                targets_table(self.targets),
            ]
        )

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` payload."""
        summary = self.summary
        return {
            "machine": self.machine,
            "settings": self.settings.to_json(),
            "results": [r.to_json() for r in self.results],
            "summary": summary.to_json() if summary else {},
            "hook": self.hook.to_json() if self.hook else None,
            "targets": [t.to_json() for t in self.targets],
        }
