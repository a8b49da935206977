"""What decides a comparison besides the model and its inputs: the tolerances, the error statistic, the
reference's limit and timeout, the built-in side's providers, ORT's graph optimization level and the
nodes compared (:class:`Settings`), each option checked before any work (:func:`check_settings`,
:func:`checked_settings`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from customops.comparison.choices import Choices
from customops.comparison.inputs import check_seed
from customops.comparison.optimizer import OPTIMIZATION_LEVELS
from customops.errors import CustomOpsError
from customops.eval.judging.metrics import STATS
from customops.eval.running.runner import checked_seconds
from customops.eval.running.sides import REFERENCE_TIMEOUT

__all__ = ["Settings", "check_settings", "checked_settings"]


def check_settings(
    *,
    rtol: float | None = None,
    atol: float | None = None,
    reference_limit: int | None = None,
    seed: int = 0,
    optimization: str = "all",
) -> None:
    """Raise CustomOpsError, naming the option, for a tolerance that is negative or not finite, a
    negative reference limit or seed, or an unknown graph optimization level."""
    if optimization not in OPTIMIZATION_LEVELS:
        raise CustomOpsError(
            f"--graph-optimization-level {optimization!r} is not one of {', '.join(OPTIMIZATION_LEVELS)}"
        )
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise CustomOpsError(f"--{name} {value!r} must be a finite number at least 0")
    if reference_limit is not None and reference_limit < 0:
        raise CustomOpsError(f"--reference-limit {reference_limit!r} must be at least 0")
    check_seed(seed)


@dataclass
class Settings:
    """What decides a comparison besides the model and its inputs."""

    rtol: float | None = None
    atol: float | None = None
    repeats: int = 0
    """Timed runs of each whole model for per-node kernel times (0: none; KERNEL_TIME_RUNS with
    ``--kernel-times``)."""
    reference_limit: int | None = None
    """Work asked of onnx.reference at most (None: per op, customops.comparison.isolate)."""
    reference_timeout: float = REFERENCE_TIMEOUT
    """Seconds onnx.reference may take for one node (customops.eval.running.sides.REFERENCE_TIMEOUT)."""
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    """The built-in side's execution providers, as ORT names (customops.comparison.providers)."""
    by_name: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    """(rtol, atol) of named tensors (graph outputs, swapped nodes' outputs); None: the global one."""
    stat: str = "elemwise"
    """What decides whether a tensor passes (customops.eval.judging.metrics.STATS)."""
    optimization: str = "all"
    """ORT's graph optimization level of every ORT session
    (customops.eval.running.worker.OPTIMIZATION_LEVELS)."""
    choices: Choices = field(default_factory=Choices)
    """The nodes compared, --validate and --fail-fast (customops.comparison.choices)."""

    def tol(self, name: str) -> tuple[float | None, float | None]:
        """(rtol, atol) for the tensor ``name``: its own where given, else the global ones (None: the
        dtype's default, customops.eval.judging.metrics)."""
        rtol, atol = self.by_name.get(name, (None, None))
        return (self.rtol if rtol is None else rtol, self.atol if atol is None else atol)


def checked_settings(
    tol: tuple[float | None, float | None, dict[str, tuple[float | None, float | None]] | None],
    runs: tuple[int, int | None, float],
    how: tuple[Sequence[str] | None, str, str],
) -> Settings:
    """The settings of customops.comparison.pipeline.compare_model, each checked (CustomOpsError naming
    the first not allowed): ``tol`` (rtol, atol, per-tensor tolerances), ``runs`` (repeats, reference
    limit and timeout), ``how`` (providers, error statistic, graph optimization level)."""
    rtol, atol, tolerances = tol
    repeats, reference_limit, reference_timeout = runs
    providers, check_error_stat, graph_optimization_level = how
    check_settings(
        rtol=rtol, atol=atol, reference_limit=reference_limit, optimization=graph_optimization_level
    )
    for r, a in (tolerances or {}).values():
        check_settings(rtol=r, atol=a)
    from customops.comparison.providers import resolve

    if check_error_stat not in STATS:
        raise CustomOpsError(f"--check-error-stat {check_error_stat!r} is not one of {', '.join(STATS)}")
    timeout = checked_seconds(reference_timeout, "--reference-timeout")
    settings = Settings(
        rtol, atol, repeats, reference_limit, timeout, resolve(providers), dict(tolerances or {})
    )
    settings.stat, settings.optimization = check_error_stat, graph_optimization_level
    return settings
