"""How two tensors differ: shape and dtype match, error statistics, ULP distance, NaN/Inf placement, and
the smallest tolerances that would let them pass."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-12, 1e-12),
    "float32": (1e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}
"""(rtol, atol) per floating dtype name; integers, bool and strings compare exactly."""


def default_tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) of a floating ``dtype``: :data:`DEFAULT_TOLERANCES`, or for ml_dtypes' other narrow
    floats (float8, float4) their epsilon; exact for the rest."""
    dtype = np.dtype(dtype)
    if dtype.name in DEFAULT_TOLERANCES:
        return DEFAULT_TOLERANCES[dtype.name]
    if dtype.type.__module__ == "ml_dtypes" and dtype.name.startswith("float"):
        import ml_dtypes

        eps = float(ml_dtypes.finfo(dtype).eps)
        return eps, eps
    return 0.0, 0.0


def tolerance_for(
    dtype: np.dtype, rtol: float | None = None, atol: float | None = None
) -> tuple[float, float]:
    """(rtol, atol) for comparing tensors of ``dtype``: the given values, else the floating types'
    :func:`default_tolerance` (ml_dtypes' bfloat16 and float8 types included; exact for the rest)."""
    default = default_tolerance(dtype)
    return (default[0] if rtol is None else rtol, default[1] if atol is None else atol)


def _ordered(x: np.ndarray) -> np.ndarray:
    """Floats mapped to integers that are consecutive for adjacent representable values."""
    itype = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    i = x.view(itype).astype(np.int64)
    low = np.int64(np.iinfo(itype).min)
    return np.where(i < 0, low - i, i).astype(np.float64)


@dataclass
class Metrics:
    """How ``a`` (the side under test) differs from ``b`` (the side compared against: the spec side,
    whose magnitude the relative error and rtol divide by); :meth:`to_json`
    is the form in compare's report (``passed`` is its ``pass``). Statistics over finite elements are
    None when there are none (or for strings)."""

    shape_a: list[int]
    shape_b: list[int]
    dtype_a: str
    dtype_b: str
    shape_match: bool
    dtype_match: bool
    count: int
    rtol: float
    atol: float
    mismatches: int | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    max_ulp: int | None = None
    """Representable values between the two, over the differing elements; None when not counted
    (``ulp_note`` says why: a difference across a sign change or at a zero or subnormal value)."""
    ulp_note: str | None = None
    nan_match: bool = True
    inf_match: bool = True
    needed_atol: float | None = None
    needed_rtol: float | None = None
    passed: bool = False
    stat: str = "elemwise"
    """What decides ``passed``: each element (``elemwise``), or a statistic of the errors (:data:`STATS`)."""
    stat_abs: float | None = None
    stat_rel: float | None = None
    quantile: float | None = None
    """The quantile of ``stat`` quantile (None: another statistic)."""
    infinities_equal: bool = False
    """Whether matching infinities counted as errors of 0 in ``stat`` (:class:`Criterion`)."""
    errors: ErrorStats | None = None
    """Mean, median and 99th percentile of the absolute and relative errors (None: no finite element, or
    strings, or shapes that differ)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "shape_a": self.shape_a,
            "shape_b": self.shape_b,
            "dtype_a": self.dtype_a,
            "dtype_b": self.dtype_b,
            "shape_match": self.shape_match,
            "dtype_match": self.dtype_match,
            "count": self.count,
            "mismatches": self.mismatches,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "max_ulp": self.max_ulp,
            "ulp_note": self.ulp_note,
            "nan_match": self.nan_match,
            "inf_match": self.inf_match,
            "needed_atol": self.needed_atol,
            "needed_rtol": self.needed_rtol,
            "rtol": self.rtol,
            "atol": self.atol,
            "pass": self.passed,
            "error_stats": None if self.errors is None else self.errors.to_json(),
            **({} if self.stat == "elemwise" else self._stat_json()),
        }

    def _stat_json(self) -> dict[str, Any]:
        """What decided a tensor by an error statistic: the statistic (and its quantile), whether matching
        infinities counted as errors of 0, and its absolute and relative values."""
        quantile = {} if self.quantile is None else {"quantile": self.quantile}
        return {
            "stat": self.stat,
            **quantile,
            "infinities_equal": self.infinities_equal,
            "stat_abs": self.stat_abs,
            "stat_rel": self.stat_rel,
        }


def _strings(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == object or b.dtype == object or a.dtype.kind in "US" or b.dtype.kind in "US"


STATS = ("elemwise", "max", "mean", "median", "quantile")
"""``--check-error-stat``: elemwise (each element passes when |a - b| <= atol + rtol * |b|), or, as
Polygraphy's, the tensor passes when the max, mean, median or quantile (:attr:`Criterion.quantile`) of
|a - b| is at most atol or that of |a - b| / |b| at most rtol (over the finite elements, and the matching
infinities with :attr:`Criterion.infinities_equal`; NaN and inf must still sit at the same places)."""

DEFAULT_QUANTILE = 0.99
"""The quantile of ``--check-error-stat quantile`` without ``--error-quantile`` (Polygraphy's default)."""


@dataclass(frozen=True)
class Criterion:
    """What decides whether a tensor passes at its tolerances: each element, or an error statistic
    (:data:`STATS`; ``quantile``: numpy's linear quantile ``quantile`` of the errors, as Polygraphy's
    ``np.quantile``); ``infinities_equal``: the elements where both sides hold the same infinity count in
    the statistic as an error of 0 (Polygraphy's ``infinities_compare_equal``), instead of being left out
    with the other non-finite ones. Element by element, matching infinities always pass."""

    stat: str = "elemwise"
    quantile: float = DEFAULT_QUANTILE
    infinities_equal: bool = False


REPORTED = ("mean", "median", "p99")
"""The error statistics every comparison reports beside the maxima (:class:`ErrorStats`)."""

STAT_SAMPLE = 1 << 24
"""Most elements the median and the percentile are taken over (a regular stride through larger tensors)."""

_REDUCE: dict[str, Any] = {
    "max": np.max,
    "mean": np.mean,
    "median": np.median,
    "p99": lambda x: _quantile(x, 0.99),
}


def _quantile(x: np.ndarray, q: float) -> float:
    """numpy's (linear) quantile ``q`` (in [0, 1]), or where it falls between a finite value and inf (a
    relative error against a reference of 0 with atol 0), the higher of the two: inf, never NaN."""
    with np.errstate(invalid="ignore"):
        found = float(np.quantile(x, q))
    return float(np.quantile(x, q, method="higher")) if math.isnan(found) else found


_SAMPLED = ("median", "p99", "quantile")


def _errors(
    a: np.ndarray, b: np.ndarray, atol: float, sample: bool, infinities_equal: bool = False
) -> tuple[np.ndarray, np.ndarray] | None:
    """|a - b| and the relative error (to max(|b|, atol), as max_rel) over the finite elements (and, with
    ``infinities_equal``, the elements where both hold the same infinity, as errors of 0), of every
    element or (``sample``) of a regular stride of at most :data:`STAT_SAMPLE`; None: none is there."""
    fa, fb = a.reshape(-1), b.reshape(-1)
    if sample and fa.size > STAT_SAMPLE:
        step = -(-fa.size // STAT_SAMPLE)
        fa, fb = fa[::step], fb[::step]
    wide = (
        np.complex128 if fa.dtype.kind == "c" or fb.dtype.kind == "c" else np.float64
    )  # |a - b| of both parts
    fa, fb = fa.astype(wide), fb.astype(wide)
    finite = np.isfinite(fa) & np.isfinite(fb)
    keep = finite | (np.isinf(fa) & (fa == fb)) if infinities_equal else finite
    if not keep.any():
        return None
    with np.errstate(invalid="ignore"):  # inf - inf where they match: an error of 0 (below)
        diff = np.where(finite[keep], np.abs(fa[keep] - fb[keep]), 0.0)
    return diff, _relative_error(diff, np.abs(fb[keep]), atol)


def _relative_error(diff: np.ndarray, mag: np.ndarray, atol: float) -> np.ndarray:
    """|a - b| (``diff``) relative to |b| (``mag``), guarded near zero: below atol the denominator is
    atol (there the absolute error decides); with atol 0 a reference of 0 makes it infinite (0 where the
    elements are equal): a value, not a warning."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        floor = np.maximum(mag, atol)
        return np.where(floor > 0, diff / floor, np.where(diff > 0, np.inf, 0.0))


def error_stats(
    a: np.ndarray, b: np.ndarray, stats: tuple[str, ...], atol: float = 0.0
) -> dict[str, tuple[float | None, float | None]]:
    """(absolute, relative) error statistic of each of ``stats`` (max, mean, median, p99) over the finite
    elements of ``a`` against ``b`` (relative to max(|b|, atol), as max_rel); the median and the
    percentile over a regular sample of at most :data:`STAT_SAMPLE` elements."""
    out: dict[str, tuple[float | None, float | None]] = {}
    whole = None
    for sample in (False, True):
        wanted = [s for s in stats if (s in _SAMPLED) == sample]
        if not wanted:
            continue
        if whole is None or a.size > STAT_SAMPLE:  # a tensor within the sample size: one pass for both
            whole = _errors(a, b, atol, sample)
        errors = whole
        for stat in wanted:
            if errors is None:
                out[stat] = (None, None)
            else:
                out[stat] = (float(_REDUCE[stat](errors[0])), float(_REDUCE[stat](errors[1])))
    return out


def error_stat(
    a: np.ndarray, b: np.ndarray, criterion: Criterion, atol: float = 0.0
) -> tuple[float | None, float | None]:
    """(absolute, relative) error statistic of ``criterion`` (its stat, quantile and infinities) of ``a``
    against ``b`` (relative to max(|b|, atol), as max_rel), over the elements :func:`_errors` keeps; the
    median and a quantile over a regular sample of at most :data:`STAT_SAMPLE` elements."""
    errors = _errors(a, b, atol, criterion.stat in _SAMPLED, criterion.infinities_equal)
    if errors is None:
        return (None, None)
    if criterion.stat == "quantile":
        return _quantile(errors[0], criterion.quantile), _quantile(errors[1], criterion.quantile)
    reduce = _REDUCE[criterion.stat]
    return float(reduce(errors[0])), float(reduce(errors[1]))


HISTOGRAM_DECADES = 16
"""Most bins of :func:`error_histogram` besides the one of equal elements."""


def error_histogram(a: np.ndarray, b: np.ndarray) -> list[tuple[float, float, int]]:
    """How many finite elements of ``a`` differ from ``b`` by each decade of |a - b|: (low, high, count)
    for [low, high), the first bin (0, 0, n) counting the equal elements, at most
    :data:`HISTOGRAM_DECADES` decades up to the largest difference (the lowest also holding any smaller
    one); over a regular sample of at most :data:`STAT_SAMPLE` elements. Empty: no finite element."""
    errors = _errors(a, b, 0.0, sample=True)
    if errors is None:
        return []
    diff = errors[0]
    bins = [(0.0, 0.0, int(np.count_nonzero(diff == 0)))]
    nonzero = diff[diff > 0]
    if nonzero.size:
        exponent = np.floor(np.log10(nonzero)).astype(np.int64)
        top = int(exponent.max())
        low = max(int(exponent.min()), top - HISTOGRAM_DECADES + 1)
        counts = np.bincount(np.maximum(exponent, low) - low, minlength=top - low + 1)
        bins += [(10.0**e, 10.0 ** (e + 1), int(c)) for e, c in zip(range(low, top + 1), counts, strict=True)]
    return bins


@dataclass
class ErrorStats:
    """The mean, median and 99th percentile of |a - b| (``abs``) and of the relative error (``rel``) over
    the finite elements, as Polygraphy prints them beside the maxima (:data:`REPORTED`)."""

    abs: dict[str, float | None]
    rel: dict[str, float | None]

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray, atol: float, same: bool) -> ErrorStats:
        """The statistics of ``a`` against ``b``; ``same``: every finite element is equal (no pass over
        the tensors: each statistic is 0)."""
        found = dict.fromkeys(REPORTED, (0.0, 0.0)) if same else error_stats(a, b, REPORTED, atol)
        return cls({k: v[0] for k, v in found.items()}, {k: v[1] for k, v in found.items()})

    def to_json(self) -> dict[str, Any]:
        return {"abs": self.abs, "rel": self.rel}


def compare_arrays(
    a: Any, b: Any, rtol: float, atol: float, stat: str | Criterion = "elemwise", shortcut: bool = True
) -> Metrics:
    """Compare ``a`` (the side under test) with ``b`` (the side compared against) at ``rtol``/``atol``,
    element by element or by an error statistic (``stat``: one of :data:`STATS`, or a :class:`Criterion`
    with its quantile and infinities). With ``shortcut``, tensors equal bit for
    bit (most of a model's agreeing values) skip the pass over their elements: the figures are those the
    pass gives for them (``shortcut=False`` makes the pass anyway; tests/test_metrics.py holds both
    equal)."""
    a = np.asarray(a)
    b = np.asarray(b)
    criterion = stat if isinstance(stat, Criterion) else Criterion(stat)
    m = Metrics(
        list(a.shape),
        list(b.shape),
        str(a.dtype),
        str(b.dtype),
        a.shape == b.shape,
        a.dtype == b.dtype,
        int(b.size),
        rtol,
        atol,
    )
    if not m.shape_match:
        return m
    if shortcut and _plain_tolerances(rtol, atol) and bitwise_equal(a, b):
        stats = _Stats.identical(a)
    else:
        stats = _Stats()
        for ca, cb in _chunks(a, b):
            stats.add(ca, cb, rtol, atol)
    for key, value in stats.metrics(a, b).items():
        setattr(m, key, value)
    if not _strings(a, b) and m.max_abs is not None and stats.finite:
        m.errors = ErrorStats.of(a, b, atol, same=m.max_abs == 0)
    if _strings(a, b):
        m.passed = m.mismatches == 0 and m.dtype_match
    elif criterion.stat == "elemwise":
        m.passed = bool(m.mismatches == 0 and m.nan_match and m.inf_match and m.dtype_match)
    else:
        _decide_by_stat(m, a, b, criterion)
    return m


def _decide_by_stat(m: Metrics, a: np.ndarray, b: np.ndarray, criterion: Criterion) -> None:
    """``m.passed`` by ``criterion``'s error statistic: at most atol, or its relative one at most rtol
    (NaN and inf at the same places and one dtype still required)."""
    m.stat, m.infinities_equal = criterion.stat, criterion.infinities_equal
    m.quantile = criterion.quantile if criterion.stat == "quantile" else None
    m.stat_abs, m.stat_rel = error_stat(a, b, criterion, m.atol)
    close = m.stat_abs is None or m.stat_abs <= m.atol or (m.stat_rel is not None and m.stat_rel <= m.rtol)
    m.passed = bool(close and m.nan_match and m.inf_match and m.dtype_match)


def _plain_tolerances(rtol: float, atol: float) -> bool:
    """Tolerances under which a tensor equal bit for bit passes the element pass (finite, at least 0)."""
    return all(math.isfinite(t) and t >= 0 for t in (rtol, atol))


def _numeric(dtype: np.dtype) -> bool:
    """numpy's numbers, and ml_dtypes' (bfloat16, float8, int4: kind V, but numbers)."""
    return dtype.kind in "biufc" or dtype.type.__module__ == "ml_dtypes"


def bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same bytes in the same shape and numeric dtype (NaN payloads and
    the sign of zero included; strings, objects, dates and raw bytes: never)."""
    if a.dtype != b.dtype or a.shape != b.shape or not _numeric(a.dtype):
        return False
    return bool(
        np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))
    )


def same_bits(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two values of a run are the same: both there, of one shape and dtype, strings equal
    string by string and numbers equal bit for bit (:func:`bitwise_equal`)."""
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "OUS" and a.dtype == b.dtype and a.shape == b.shape:
        return bool(np.array_equal(a, b))
    return bitwise_equal(a, b)


CHUNK = 1 << 20
"""Elements compared at a time: the float64 temporaries of one chunk, not of a whole tensor."""


def _chunks(a: np.ndarray, b: np.ndarray) -> Any:
    """Matching flat slices of ``a`` and ``b`` (of one shape), :data:`CHUNK` elements at a time."""
    fa, fb = a.reshape(-1), b.reshape(-1)
    for start in range(0, max(fa.size, 1), CHUNK):
        yield fa[start : start + CHUNK], fb[start : start + CHUNK]


class _Stats:
    """The metrics of a comparison, gathered chunk by chunk (every figure is a count, a maximum or an
    all(), so the chunks give exactly what one pass over the whole tensors would)."""

    def __init__(self) -> None:
        self.mismatches = 0
        self.nan_match = True
        self.inf_match = True
        self.finite = False
        self.max_abs: float | None = None
        self.max_rel: float | None = None
        self.needed_atol: float | None = None
        self.needed_rtol = 0.0
        self.max_ulp: int | None = None
        self.ulp_skipped = {"sign": 0, "tiny": 0}
        """Differing elements whose ulp distance is not counted: across a sign change, or where either
        value is a zero or subnormal (:func:`ulp_distance`)."""

    @classmethod
    def identical(cls, a: np.ndarray) -> _Stats:
        """What the pass over ``a`` against its bitwise copy gathers: no mismatch, every difference 0,
        and the ulp distance 0 where it is counted."""
        stats = cls()
        stats.finite = a.size > 0 if a.dtype.kind in "biu" else bool(np.isfinite(a).any())
        if stats.finite:
            stats.max_abs = stats.max_rel = stats.needed_atol = 0.0
            counted = a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8)
            stats.max_ulp = 0 if counted else None
        return stats

    def add(self, a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> None:
        if _strings(a, b):
            self.mismatches += int(a.size - np.count_nonzero(np.asarray(a.astype(str) == b.astype(str))))
            return
        wide = np.complex128 if a.dtype.kind == "c" or b.dtype.kind == "c" else np.float64
        fa, fb = a.astype(wide), b.astype(wide)
        nan_a, nan_b = np.isnan(fa), np.isnan(fb)
        inf_a, inf_b = np.isinf(fa), np.isinf(fb)
        self.nan_match &= bool(np.array_equal(nan_a, nan_b))
        same_inf = np.array_equal(inf_a, inf_b)
        # equal_nan: a complex value with an inf and a NaN part is NaN for nan_match, not an inf mismatch
        self.inf_match &= bool(same_inf and np.array_equal(fa[inf_a], fb[inf_b], equal_nan=True))
        finite = ~(nan_a | nan_b | inf_a | inf_b)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(fa - fb)
        mag = np.abs(fb)
        special_ok = (nan_a & nan_b) | (inf_a & inf_b & (fa == fb))
        within = np.zeros(a.shape, dtype=bool)
        with np.errstate(invalid="ignore"):  # inf x 0 under a tolerance the command refuses: no warning
            within[finite] = diff[finite] <= atol + rtol * mag[finite]
        self.mismatches += int(a.size - np.count_nonzero(within | special_ok))
        if np.any(finite):
            self._finite(a[finite], b[finite], diff[finite], mag[finite], rtol, atol)

    def _finite(
        self, a: np.ndarray, b: np.ndarray, d: np.ndarray, g: np.ndarray, rtol: float, atol: float
    ) -> None:
        self.finite = True
        self.max_abs = _max(self.max_abs, float(d.max()))
        self.max_rel = _max(self.max_rel, float(_relative_error(d, g, atol).max()))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.needed_atol = _max(self.needed_atol, float(np.maximum(d - rtol * g, 0).max()))
            over = d > atol
            need = np.where(g > 0, (d - atol) / g, np.inf)
            if over.any():
                self.needed_rtol = max(self.needed_rtol, float(need[over].max()))
        if a.dtype == b.dtype and a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8):
            ulps, sign, tiny = ulp_distance(a, b)
            self.max_ulp = _max(self.max_ulp, ulps)
            self.ulp_skipped["sign"] += sign
            self.ulp_skipped["tiny"] += tiny

    def metrics(self, a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"mismatches": self.mismatches}
        if _strings(a, b):
            return out
        out.update(nan_match=self.nan_match, inf_match=self.inf_match)
        if self.finite:
            out.update(
                max_abs=self.max_abs,
                max_rel=self.max_rel,
                needed_atol=self.needed_atol,
                needed_rtol=self.needed_rtol,
                max_ulp=self.max_ulp,
            )
            if self.max_ulp is not None and any(self.ulp_skipped.values()):
                out.update(max_ulp=None, ulp_note=_ulp_note(**self.ulp_skipped))
        elif a.size:
            out["max_abs"] = 0.0 if self.mismatches == 0 else None
        else:
            out["max_abs"] = 0.0
        return out


def ulp_distance(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """Over finite ``a`` and ``b`` of one floating dtype: the most representable values between two
    differing elements that are both normal and of one sign, and how many differing elements were left
    out because their signs differ, or because either is a zero or subnormal. Across a sign change or
    at zero the count measures the exponent range, not the difference (0 against 1.5e-7 is 874 million
    float32 steps), so it is not given."""
    differ = a != b  # -0 and +0 are equal: no difference to count
    tiny = np.finfo(a.dtype).tiny
    normal = (np.abs(a) >= tiny) & (np.abs(b) >= tiny)
    sign = differ & normal & (np.signbit(a) != np.signbit(b))
    counted = differ & normal & ~sign
    ulps = int(np.abs(_ordered(a[counted]) - _ordered(b[counted])).max()) if counted.any() else 0
    return ulps, int(np.count_nonzero(sign)), int(np.count_nonzero(differ & ~normal))


def _ulp_note(sign: int, tiny: int) -> str:
    """Why a tensor's ulp distance is not given (see :func:`ulp_distance`)."""
    why = []
    if sign:
        why.append(f"{sign} differing element(s) change sign")
    if tiny:
        why.append(f"{tiny} differing element(s) hold a zero or subnormal value")
    return f"not counted: {' and '.join(why)} (ulps are counted only between normal values of one sign)"


def _max(x: Any, y: Any) -> Any:
    return y if x is None else max(x, y)
