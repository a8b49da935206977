"""What decides a comparison besides the model and its inputs: the tolerances, the error statistics, the
reference's limit and timeout, the built-in side's providers, ORT's graph optimization level and the
nodes compared (:class:`Settings`), each option checked before any work (:func:`check_settings`,
:func:`checked_settings`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from customops.comparison.choices import Choices
from customops.comparison.inputs import check_seed
from customops.comparison.optimizer import OPTIMIZATION_LEVELS
from customops.errors import CustomOpsError
from customops.eval.judging.metrics import DEFAULT_QUANTILE, STATS, Criterion
from customops.eval.running.runner import checked_seconds
from customops.eval.running.sides import REFERENCE_TIMEOUT

__all__ = ["ErrorCheck", "Settings", "check_settings", "checked_settings"]


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
class ErrorCheck:
    """``--check-error-stat [NAME:]STAT``, ``--error-quantile [NAME:]Q`` and ``--infinities-compare-equal``:
    the error statistic and quantile of every tensor (key ``""``) and of named ones, and whether matching
    infinities count as errors of 0 (customops.eval.judging.metrics.Criterion)."""

    stats: dict[str, str] = field(default_factory=dict)
    quantiles: dict[str, float] = field(default_factory=dict)
    infinities_equal: bool = False

    @classmethod
    def of(
        cls,
        stat: str | Mapping[str, str] = "elemwise",
        quantile: float | Mapping[str, float] | None = None,
        infinities_equal: bool = False,
    ) -> ErrorCheck:
        """From customops.compare's keywords, as Polygraphy's comparator takes them: a value for every
        tensor, or values by tensor name with ``""`` for every other one."""
        stats = {"": stat} if isinstance(stat, str) else dict(stat)
        if quantile is None or isinstance(quantile, Mapping):
            quantiles = dict(quantile or {})
        else:
            quantiles = {"": quantile}
        return cls(stats, quantiles, bool(infinities_equal))

    def criterion(self, name: str) -> Criterion:
        """How the tensor ``name`` is decided: its own statistic and quantile where given, else every
        tensor's (default: element by element; quantile 0.99, Polygraphy's)."""
        stat = self.stats.get(name, self.stats.get("", "elemwise"))
        quantile = self.quantiles.get(name, self.quantiles.get("", DEFAULT_QUANTILE))
        return Criterion(stat, quantile, self.infinities_equal)

    def names(self) -> list[str]:
        """The tensors named in a statistic or a quantile."""
        return [n for n in dict.fromkeys([*self.stats, *self.quantiles]) if n]

    def check(self) -> None:
        """CustomOpsError, naming the option and its item, for a statistic not in STATS, a quantile that is
        not a number from 0 to 1, or a quantile that decides no tensor (its tensor, or every one, is not
        decided by the statistic quantile)."""
        for name, stat in self.stats.items():
            if not isinstance(stat, str) or stat not in STATS:
                raise CustomOpsError(
                    f"--check-error-stat {_item(name, stat)!r} is not one of {', '.join(STATS)}"
                )
        for name, q in self.quantiles.items():
            if isinstance(q, bool) or not isinstance(q, int | float) or not (0 <= q <= 1):
                raise CustomOpsError(f"--error-quantile {_item(name, q)!r} must be a number from 0 to 1")
            used = "quantile" in self.stats.values() if not name else self.criterion(name).stat == "quantile"
            if not used:
                whose = f"tensor {name!r} is not" if name else "no tensor is"
                raise CustomOpsError(
                    f"--error-quantile {_item(name, q)!r} has no effect: {whose} decided by --check-error-stat quantile"
                )


def _item(name: str, value: object) -> str:
    """An option's item as given: ``NAME:VALUE``, or ``VALUE`` for every tensor."""
    return f"{name}:{value}" if name else str(value)


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
    check: ErrorCheck = field(default_factory=ErrorCheck)
    """What decides whether a tensor passes at its tolerances (:meth:`criterion`)."""
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

    def criterion(self, name: str) -> Criterion:
        """What decides the tensor ``name`` at its tolerances (:class:`ErrorCheck`)."""
        return self.check.criterion(name)


def checked_settings(
    tol: tuple[float | None, float | None, dict[str, tuple[float | None, float | None]] | None],
    runs: tuple[int, int | None, float],
    how: tuple[Sequence[str] | None, ErrorCheck, str],
) -> Settings:
    """The settings of customops.comparison.pipeline.compare_model, each checked (CustomOpsError naming
    the first not allowed): ``tol`` (rtol, atol, per-tensor tolerances), ``runs`` (repeats, reference
    limit and timeout), ``how`` (providers, error statistics, graph optimization level)."""
    rtol, atol, tolerances = tol
    repeats, reference_limit, reference_timeout = runs
    providers, check, graph_optimization_level = how
    check_settings(
        rtol=rtol, atol=atol, reference_limit=reference_limit, optimization=graph_optimization_level
    )
    for r, a in (tolerances or {}).values():
        check_settings(rtol=r, atol=a)
    from customops.comparison.providers import resolve

    check.check()
    timeout = checked_seconds(reference_timeout, "--reference-timeout")
    settings = Settings(
        rtol, atol, repeats, reference_limit, timeout, resolve(providers), dict(tolerances or {})
    )
    settings.check, settings.optimization = check, graph_optimization_level
    return settings
