"""ONNX Resize's spec, one resized axis at a time: the attributes checked, each axis' output length and
exact scale from scales or sizes (keep_aspect_ratio_policy included), the coordinate transformations
(x_original of every x_resized, each mode's formula with as few roundings as possible), nearest_mode's
rounding, the linear and cubic filters (antialias, exclude_outside) as a table of taps per output
position, and the extrapolation value in X's element type.

The kernel (customops.kernels.resampling.resize) plans a resize from these tables and runs it;
docs/semantics.md records where the spec text, onnx.reference and ONNX Runtime disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from customops.errors import KernelError
from customops.kernels.args import choice, flag
from customops.kernels.rounding import saturate

_MODES = ("nearest", "linear", "cubic")
_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")
_MAX_LENGTH = 2**53  # output lengths beyond this would lose integer exactness in the float64 coordinates


@dataclass(frozen=True)
class Axis:
    """How one resized axis maps: lengths, the exact scale, and the roi (start, end)."""

    axis: int
    in_len: int
    out_len: int
    scale: Fraction
    roi: tuple[float, float]


# ---------------------------------------------------------------------------------------------
# Argument checking: the attributes, and each axis' lengths and exact scale


def _number(name: str, value: Any, finite: bool) -> float:
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise KernelError(f"{name} {value!r} is not a number") from None
    if finite and not math.isfinite(result):
        raise KernelError(f"{name} {value!r} is not finite")
    return result


def optional_input(name: str, value: Any) -> np.ndarray | None:
    """None or an empty array mean absent; otherwise a 1-D array."""
    if value is None:
        return None
    array = np.asarray(value)
    if array.size == 0:
        return None
    if array.ndim != 1:
        raise KernelError(f"{name} must be 1-D, got shape {array.shape!r}")
    return array


def resized_axes(
    shape: tuple[int, ...],
    roi: np.ndarray | None,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
    axes: list[int],
    policy: str,
    uses_roi: bool,
) -> list[Axis]:
    """Each resized axis' lengths, exact scale and roi, from the optional inputs (None: absent)."""
    count = len(axes)
    if scales is not None and sizes is not None:
        raise KernelError("scales and sizes are both given; give exactly one")
    if scales is None and sizes is None:
        if count == 0:
            return []
        raise KernelError("neither scales nor sizes is given; give exactly one")
    given = scales if scales is not None else sizes
    label = "scales" if scales is not None else "sizes"
    assert given is not None
    if given.size != count:
        raise KernelError(f"{label} has {given.size} entries, expected {count} (one per resized axis)")
    starts, ends = [0.0] * count, [1.0] * count
    if uses_roi and roi is not None:
        starts, ends = _roi_bounds(roi, count)
    in_lens = [shape[a] for a in axes]
    if scales is not None:
        out_lens, fractions = _lengths_from_scales(scales, in_lens)
    else:
        assert sizes is not None
        out_lens, fractions = _lengths_from_sizes(sizes, in_lens, policy)
    return [
        Axis(a, n, m, f, (s, e))
        for a, n, m, f, s, e in zip(axes, in_lens, out_lens, fractions, starts, ends, strict=True)
    ]


def _roi_bounds(roi: np.ndarray, count: int) -> tuple[list[float], list[float]]:
    """The roi's starts and ends, one per resized axis."""
    if roi.size != 2 * count:
        raise KernelError(
            f"roi has {roi.size} entries, expected {2 * count} (start and end per resized axis)"
        )
    try:
        values = roi.astype(np.float64)
    except (TypeError, ValueError):
        raise KernelError(f"roi {roi!r} is not numeric") from None
    if not np.isfinite(values).all():
        raise KernelError(f"roi {roi.tolist()!r} is not finite")
    return values[:count].tolist(), values[count:].tolist()


def _lengths_from_scales(scales: np.ndarray, in_lens: list[int]) -> tuple[list[int], list[Fraction]]:
    """Output lengths floor(scale * length), and the scales as exact fractions."""
    if scales.dtype.kind not in "fiu":
        raise KernelError(f"scales have dtype {scales.dtype}, expected float")
    fractions = []
    for value in scales.tolist():
        if not (math.isfinite(value) and value > 0):
            raise KernelError(f"scale {value!r} is not a positive finite number")
        fractions.append(Fraction(value))
    out_lens = [math.floor(f * n) for f, n in zip(fractions, in_lens, strict=True)]
    for f, m in zip(fractions, out_lens, strict=True):
        if m > _MAX_LENGTH:
            raise KernelError(f"scale {float(f)!r} asks for an output length of {m}, more than {_MAX_LENGTH}")
    return out_lens, fractions


def _lengths_from_sizes(
    sizes: np.ndarray, in_lens: list[int], policy: str
) -> tuple[list[int], list[Fraction]]:
    """Output lengths and exact scales from sizes under keep_aspect_ratio_policy ``policy``."""
    if sizes.dtype.kind not in "iu":
        raise KernelError(f"sizes have dtype {sizes.dtype}, expected int64")
    wanted = [int(v) for v in sizes.tolist()]
    for v in wanted:
        if v < 0:
            raise KernelError(f"size {v!r} is negative")
    if policy == "stretch":
        fractions = [Fraction(m, n) if n else Fraction(1) for m, n in zip(wanted, in_lens, strict=True)]
        return wanted, fractions
    # The policy's single scale is the smallest (not_larger) or largest (not_smaller) of
    # sizes[i] / in_size[d]; axes of length 0 cannot constrain it.
    ratios = [Fraction(m, n) for m, n in zip(wanted, in_lens, strict=True) if n]
    pick = min if policy == "not_larger" else max
    scale = pick(ratios) if ratios else Fraction(1)
    # round_int rounds halfway cases up.
    return [math.floor(scale * n + Fraction(1, 2)) for n in in_lens], [scale] * len(in_lens)


# ---------------------------------------------------------------------------------------------
# Coordinates and filter tables (1-D, float64)


def source_coordinates(ax: Axis, mode: str) -> np.ndarray:
    """x_original for every output index x_resized (o below), computed from the exact scale a / b with as
    few roundings as possible: each mode's spec formula, then its rational form (one division where the
    terms are exact in float64). length_resized is the exact scale times length_original (n)."""
    n, length = ax.in_len, ax.out_len
    a, b = float(ax.scale.numerator), float(ax.scale.denominator)  # scale = a / b
    o = np.arange(length, dtype=np.float64)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        # spec: (x_resized + 0.5) / scale - 0.5 (pytorch_half_pixel: 0 when the output length is <= 1)
        if mode == "pytorch_half_pixel" and length <= 1:
            return np.zeros(length)
        return ((2 * o + 1) * b - a) / (2 * a)  # ((2o + 1) b - a) / 2a
    if mode == "half_pixel_symmetric":
        # spec: offset + (x_resized + 0.5) / scale - 0.5, offset = n / 2 * (1 - length / (scale * n))
        return (a * (n - 1) + b * (2 * o + 1 - length)) / (2 * a)  # (a (n - 1) + b (2o + 1 - length)) / 2a
    if mode == "asymmetric":
        # spec: x_resized / scale
        return o * b / a  # o b / a
    if mode == "tf_half_pixel_for_nn":
        # spec: (x_resized + 0.5) / scale
        return (2 * o + 1) * b / (2 * a)  # (2o + 1) b / 2a
    width = ax.scale * n  # length_resized: the exact scale times the input length
    if mode == "align_corners":
        # spec: x_resized * (length_original - 1) / (length_resized - 1), 0 when the output length is <= 1
        if length <= 1:
            return np.zeros(length)
        ratio = (n - 1) / (width - 1)
        return o * float(ratio.numerator) / float(ratio.denominator)  # o p / q, p / q = (n - 1) / (width - 1)
    # tf_crop_and_resize, spec: start_x * (length_original - 1) + x_resized * (end_x - start_x) *
    # (length_original - 1) / (length_resized - 1); 0.5 * (start_x + end_x) * (length_original - 1) when
    # the output length is <= 1. Rational: (start (n-1) (width-1) + o (end-start) (n-1)) / (width-1), one
    # rounding, where the numerator stays exact in float64; else the spec's formula in float64.
    start, end = ax.roi
    if length <= 1:
        return np.full(length, 0.5 * (start + end) * (n - 1))
    terms = [Fraction(start) * (n - 1) * (width - 1), (Fraction(end) - Fraction(start)) * (n - 1), width - 1]
    common = math.lcm(*(t.denominator for t in terms))
    p, q, r = (int(t * common) for t in terms)
    if max(abs(p) + (length - 1) * abs(q), abs(r)) < 2**53:
        return (p + o * q) / r  # the numerator is exact in float64
    return start * (n - 1) + o * ((end - start) * (n - 1) / float(width - 1))


def nearest_indices(x: np.ndarray, nearest_mode: str, n: int) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        r = np.ceil(x - 0.5)
    elif nearest_mode == "round_prefer_ceil":
        r = np.floor(x + 0.5)
    elif nearest_mode == "floor":
        r = np.floor(x)
    else:
        r = np.ceil(x)
    return np.clip(r, 0, max(n - 1, 0)).astype(np.intp)


def _cubic_kernel(u: np.ndarray, a: float) -> np.ndarray:
    inner = ((a + 2) * u - (a + 3)) * u * u + 1
    outer = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    return np.where(u <= 1, inner, np.where(u < 2, outer, 0.0))


def filter_table(
    x: np.ndarray, ax: Axis, mode: str, a: float, antialias: bool, exclude_outside: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Taps of every output position: (positions, clamped indices, normalized weights), each (out, taps)."""
    support = 1.0 if mode == "linear" else 2.0
    stretch = min(float(ax.scale), 1.0) if antialias else 1.0
    half = max(1, math.ceil(support / stretch))
    floor = np.floor(x)
    offsets = np.arange(1 - half, half + 1, dtype=np.float64)
    positions = floor[:, None] + offsets
    u = np.abs(offsets - (x - floor)[:, None])
    if stretch != 1.0:
        u *= stretch
    weights = np.maximum(1.0 - u, 0.0) if mode == "linear" else _cubic_kernel(u, a)
    n = ax.in_len
    if exclude_outside:
        weights[(positions < 0) | (positions > n - 1)] = 0.0
    total = weights.sum(axis=1, keepdims=True)
    weights /= np.where(total == 0, 1.0, total)
    indices = np.clip(positions, 0, n - 1).astype(np.intp)
    return positions, indices, weights


def single_tap(positions: np.ndarray, indices: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
    """The gather indices if every output copies exactly one input (weight 1), else None."""
    nonzero = weights != 0
    if not (nonzero.sum(axis=1) == 1).all():
        return None
    if not (weights[nonzero] == 1.0).all():
        return None
    return indices[nonzero]


# ---------------------------------------------------------------------------------------------
# The extrapolation value, and the attributes checked


def extrapolation_scalar(value: float, dtype: np.dtype) -> Any:
    if dtype.kind in "fc":
        return value
    if dtype.kind in "OSU":
        raise KernelError(
            f"extrapolation_value {value!r} cannot fill a {dtype} tensor; "
            "tf_crop_and_resize with strings needs the roi inside the input"
        )
    if math.isnan(value):
        raise KernelError(f"extrapolation_value {value!r} cannot fill an integer or bool tensor")
    if dtype.kind == "b":
        return bool(np.rint(value) >= 1)
    return saturate(np.rint(np.array([value])), dtype)[0]


class Options(NamedTuple):
    """Resize's attributes, checked."""

    mode: str
    coordinate_mode: str
    nearest_mode: str
    policy: str
    antialias: bool
    exclude_outside: bool
    cubic_coeff_a: float
    extrapolation: float


def checked_options(
    dtype: np.dtype,
    antialias: Any,
    coordinate_transformation_mode: Any,
    cubic_coeff_a: Any,
    exclude_outside: Any,
    extrapolation_value: Any,
    keep_aspect_ratio_policy: Any,
    mode: Any,
    nearest_mode: Any,
) -> Options:
    """Check the attributes, and the mode against X's element type ``dtype``; raises KernelError."""
    mode = choice(mode, "mode", _MODES)
    coordinate_mode = choice(
        coordinate_transformation_mode, "coordinate_transformation_mode", _COORDINATE_MODES
    )
    nearest_mode = choice(nearest_mode, "nearest_mode", _NEAREST_MODES)
    policy = choice(keep_aspect_ratio_policy, "keep_aspect_ratio_policy", _POLICIES)
    use_antialias = flag(antialias, "antialias")
    exclude = flag(exclude_outside, "exclude_outside")
    # cubic_coeff_a "is valid only if mode is cubic": other modes ignore it, whatever its value
    a = _number("cubic_coeff_a", cubic_coeff_a, finite=mode == "cubic")
    extrapolation = _number("extrapolation_value", extrapolation_value, finite=False)
    if dtype.kind in "OSUV" and mode != "nearest":
        raise KernelError(f"mode {mode!r} needs a numeric tensor, got {dtype}; strings allow only 'nearest'")
    if dtype.kind not in "biufcOSU":
        raise KernelError(f"element type {dtype} is not supported")
    return Options(mode, coordinate_mode, nearest_mode, policy, use_antialias, exclude, a, extrapolation)
