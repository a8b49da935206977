"""The compiled paths of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
(customops.kernels.quantized.compiled): the exact path's bits on hostile values, and the exact path taken
where their proof does not apply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.quantized.compiled import FAST_INTEGERS, ROW
from customops.kernels.quantized.dequantize_linear import dequantize_linear
from customops.kernels.quantized.dynamic_quantize_linear import dynamic_quantize_linear
from customops.kernels.quantized.quantize_linear import quantize_linear

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="no numba, or CUSTOMOPS_JIT=0")

TINY = float(np.float32(2.0**-149))
"""The least positive float32 (subnormal)."""
HUGE = float(np.finfo(np.float32).max)


def f32(*values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32).reshape(-1)


def both(kernel: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The kernel's answer with the compiled paths on and off (the exact path): its outputs, or the
    message of the KernelError it raised."""
    answers = []
    for exact in (False, True):
        try:
            if exact:
                with jit.numpy_only():
                    answers.append(kernel(*args, **kwargs))
            else:
                answers.append(kernel(*args, **kwargs))
        except KernelError as exc:
            answers.append(str(exc))
    return answers[0], answers[1]


def same_bits(fast: Any, exact: Any) -> None:
    if isinstance(exact, str):
        assert fast == exact
        return
    fast, exact = (fast, exact) if isinstance(exact, tuple) else ((fast,), (exact,))
    for f, e in zip(fast, exact, strict=True):
        assert f.dtype == e.dtype and f.shape == e.shape
        assert f.tobytes() == e.tobytes()


def near(values: np.ndarray, steps: int = 2) -> np.ndarray:
    """``values`` with their float32 neighbours ``steps`` deep on each side."""
    out = [values]
    up, down = values, values
    with np.errstate(over="ignore"):  # the neighbours of the largest finite values are infinities
        for _ in range(steps):
            up = np.nextafter(up, np.float32(np.inf))
            down = np.nextafter(down, np.float32(-np.inf))
            out += [up, down]
    return np.concatenate(out).astype(np.float32)


def ties(scale: float, rng: np.random.Generator, count: int = 300) -> np.ndarray:
    """x whose quotient by ``scale`` is k + 0.5 (exactly where float32 holds it, else its nearest
    float32), and their neighbours."""
    k = rng.integers(-70000, 70000, count).astype(np.float64)
    k = np.concatenate([k, np.arange(-300, 300)])
    with np.errstate(over="ignore", under="ignore"):
        return near(((k + 0.5) * scale).astype(np.float32))


SCALES = [
    1.0,
    0.5,
    2.0**-4,
    3.0,
    -0.25,
    0.0123,
    -7.7e-3,
    1e30,
    TINY,
    3 * TINY,
    2.0**-126,
    1.1754942e-38,
    -5 * TINY,
    HUGE,
]


def hostile_x(scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    specials = f32(0.0, -0.0, np.inf, -np.inf, TINY, -TINY, 2 * TINY, 3 * TINY, 1e-40, HUGE, -HUGE, 1.0, -1.0)
    random = (rng.standard_normal(500) * 10.0 ** rng.integers(-40, 38, 500)).astype(np.float32)
    return np.concatenate([ties(scale, rng), specials, near(specials[4:]), random])


ZERO_POINTS = {
    "uint8": [0, 1, 128, 254, 255],
    "int8": [-128, -1, 0, 3, 127],
    "uint16": [0, 300, 32768, 65535],
    "int16": [-32768, -5, 0, 32767],
}


@pytest.mark.parametrize("out", FAST_INTEGERS)
@pytest.mark.parametrize("scale", SCALES)
def test_quantize_gives_the_exact_paths_bits(out: str, scale: float, compiled_calls) -> None:
    x = hostile_x(scale, seed=len(out) + int(abs(np.log2(abs(scale)))))
    for zero in ZERO_POINTS[out]:
        for version in (10, 13, 21, 25):
            if version < 21 and out not in ("uint8", "int8"):
                continue
            z = np.array(zero, dtype=out)
            fast, exact = both(quantize_linear, x, np.array(scale, np.float32), z, version=version)
            same_bits(fast, exact)
    assert compiled_calls["quantize_float32"] >= 1


@pytest.mark.parametrize("out", FAST_INTEGERS)
def test_quantize_saturation_bounds(out: str, compiled_calls) -> None:
    """Quotients whose rounding plus the zero point lands on, next to and past each end of the range."""
    info = np.iinfo(out)
    for zero in ZERO_POINTS[out]:
        edges = np.array([info.min, info.max], np.float64) - zero
        q = np.concatenate([edges + d for d in (-1.5, -1, -0.5, 0, 0.5, 1, 1.5)] + [[2.0**24, -(2.0**24)]])
        x = near(q.astype(np.float32) * np.float32(0.5))
        same_bits(*both(quantize_linear, x, np.array(0.5, np.float32), np.array(zero, out), version=21))
    assert compiled_calls["quantize_float32"] >= 1


def test_quantize_without_a_zero_point_and_with_a_one_element_one() -> None:
    x = hostile_x(0.3, seed=5)
    same_bits(*both(quantize_linear, x, np.array(0.3, np.float32), None, version=13))
    same_bits(*both(quantize_linear, x, np.array([0.3], np.float32), np.array([7], np.int8), version=13))
    same_bits(*both(quantize_linear, x.reshape(-1, 3)[:5], np.array(-2.5, np.float32), version=25))


def test_quantize_nan_is_reported_by_the_exact_path(compiled_calls) -> None:
    x = np.arange(-50, 50, dtype=np.float32)
    x[37] = np.nan
    fast, exact = both(quantize_linear, x, np.array(0.5, np.float32), np.array(3, np.uint8), version=13)
    assert isinstance(fast, str) and "index (37,)" in fast and fast == exact
    assert compiled_calls["quantize_float32"] == 0


@pytest.mark.parametrize("scale", [0.0, -0.0, np.inf, -np.inf, np.nan])
def test_quantize_scales_beyond_the_proof_take_the_exact_path(scale: float, compiled_calls) -> None:
    for x in (f32(1.0, -2.0, np.inf, -np.inf, 3e38), f32(0.0, 1.0), f32(np.inf, 1.0)):
        same_bits(*both(quantize_linear, x, np.array(scale, np.float32), np.array(9, np.uint8), version=13))
    assert compiled_calls["quantize_float32"] == 0


def test_quantize_other_cases_take_the_exact_path(compiled_calls) -> None:
    x = hostile_x(0.75, seed=9)
    scale = np.array(0.75, np.float32)
    # blocked scales, an int32 precision, a float16 precision, a 4-bit output, a float8 output
    blocked = np.full((x.size // 6, 1), 0.75, np.float32)
    same_bits(*both(quantize_linear, x[: blocked.size * 6].reshape(-1, 6), blocked, block_size=6, version=21))
    same_bits(*both(quantize_linear, x, scale, np.array(2, np.int8), precision=6, version=23))
    same_bits(*both(quantize_linear, x, scale, np.array(2, np.int8), precision=10, version=23))
    same_bits(*both(quantize_linear, x, scale, output_dtype=22, version=21))
    same_bits(*both(quantize_linear, x, scale, output_dtype=17, version=21))
    assert compiled_calls["quantize_float32"] == 0


DEQUANTIZE_SCALES = [
    0.5,
    -0.1,
    1e-3,
    TINY,
    -3 * TINY,
    2.0**-126,
    3e38,
    HUGE,
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
]


@pytest.mark.parametrize("x_type", FAST_INTEGERS)
@pytest.mark.parametrize("scale", DEQUANTIZE_SCALES)
def test_dequantize_gives_the_exact_paths_bits(x_type: str, scale: float, compiled_calls) -> None:
    info = np.iinfo(x_type)
    x = np.arange(info.min, info.max + 1).astype(x_type)  # every value
    for zero in ZERO_POINTS[x_type]:
        z = np.array(zero, x_type)
        for version in (10, 21, 25):
            if version < 21 and x_type not in ("uint8", "int8"):
                continue
            same_bits(*both(dequantize_linear, x, np.array(scale, np.float32), z, version=version))
    same_bits(*both(dequantize_linear, x.reshape(-1, 4), np.array([scale], np.float32), version=21))
    assert compiled_calls["dequantize_float32"] >= 1


def test_dequantize_other_cases_take_the_exact_path(compiled_calls) -> None:
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, -1)
    blocked = np.array([[0.5, 1], [2, 3], [4, 5], [6, 7]], np.float32)
    same_bits(*both(dequantize_linear, x, blocked, axis=1, block_size=32, version=21))
    same_bits(*both(dequantize_linear, x, np.array(0.5, np.float32), output_dtype=10, version=23))
    same_bits(*both(dequantize_linear, x.astype(np.int32) * 70000, np.array(0.3, np.float32), version=13))
    assert compiled_calls["dequantize_float32"] == 0


CHANNEL_SCALES = [[0.0123, TINY, -0.25, HUGE], [2.0**-4, 3.0, 1e30, -5 * TINY, 0.5]]


def per_channel(scales: list[float], seed: int) -> np.ndarray:
    """[C, M] hostile float32 values, row c with the ties of scales[c]."""
    rows = [hostile_x(scale, seed + c) for c, scale in enumerate(scales)]
    m = min(r.size for r in rows)
    return np.stack([r[:m] for r in rows])


def layouts(x: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """[C, M] as (array, axis) of each kind of row the loops walk: the channel axis first (long rows),
    in the middle, last (rows along it) and before trailing axes of 1."""
    c, m = x.shape
    half = x[:, : m // 2 * 2]
    return [
        (x, 0),
        (x.T.copy(), 1),
        (x.T.copy(), -1),
        (np.moveaxis(half.reshape(c, 2, -1), 0, 1).copy(), 1),
        (x.T.reshape(m, c, 1, 1).copy(), 1),
    ]


@pytest.mark.parametrize("out", FAST_INTEGERS)
@pytest.mark.parametrize("scales", CHANNEL_SCALES, ids=["4", "5"])
def test_quantize_per_axis_gives_the_exact_paths_bits(out: str, scales: list[float], compiled_calls) -> None:
    zeros = np.resize(np.array(ZERO_POINTS[out], out), len(scales))
    for x, axis in layouts(per_channel(scales, seed=len(out))):
        scale = np.array(scales, np.float32)
        same_bits(*both(quantize_linear, x, scale, zeros, axis=axis, version=21))
        if out in ("uint8", "int8"):
            same_bits(*both(quantize_linear, x, scale, zeros, axis=axis, version=13))
    assert compiled_calls["quantize_float32"] >= 1 and compiled_calls["quantize_float32_last"] >= 1


def test_quantize_per_axis_with_a_scale_beyond_the_proof_takes_the_exact_path(compiled_calls) -> None:
    x = per_channel([0.5, 2.0, 3.0], seed=1)
    for bad in (0.0, np.inf, np.nan):
        for arr, axis in layouts(np.where(np.isnan(x), 1, x)):
            same_bits(*both(quantize_linear, arr, f32(0.5, bad, 3.0), np.zeros(3, np.uint8), axis=axis))
    assert compiled_calls["quantize_float32"] == 0 and compiled_calls["quantize_float32_last"] == 0


@pytest.mark.parametrize("x_type", FAST_INTEGERS)
def test_dequantize_per_axis_gives_the_exact_paths_bits(x_type: str, compiled_calls) -> None:
    info = np.iinfo(x_type)
    values = np.arange(info.min, info.max + 1).astype(x_type)
    channels = len(DEQUANTIZE_SCALES)
    x = np.stack([np.roll(values, 17 * c) for c in range(channels)])
    scale = np.array(DEQUANTIZE_SCALES, np.float32)
    zeros = np.resize(np.array(ZERO_POINTS[x_type], x_type), channels)
    for arr, axis in layouts(x):
        same_bits(*both(dequantize_linear, arr, scale, zeros, axis=axis, version=21))
        same_bits(*both(dequantize_linear, arr, scale, axis=axis, version=25))
    assert compiled_calls["dequantize_float32"] >= 1 and compiled_calls["dequantize_float32_last"] >= 1


def _blocks(rng: np.random.Generator) -> list[np.ndarray]:
    """Arrays for DynamicQuantizeLinear: ties of a power-of-two scale, subnormals, signed zeros,
    infinities, NaNs of both signs, sizes around the loop's rows and its thread split."""
    tie = (np.arange(0, 255) + 0.5).astype(np.float32) * np.float32(2.0**-4)
    tied = near(np.concatenate([tie, f32(0.0, 255 * 2.0**-4)]), 1)  # min 0, max 255/16: scale 2**-4
    neg_nan = np.array([0xFFC00000], np.uint32).view(np.float32)
    arrays = [
        tied,
        tied - np.float32(8),
        f32(TINY, -TINY, 0.0, 3 * TINY, 1e-40),
        f32(-0.0),
        f32(-0.0, 0.0, 1.0),
        f32(-0.0, -1.0),
        f32(2.5),
        f32(-2.5),
        f32(HUGE, -HUGE),
        f32(HUGE, 1.0),
        f32(np.inf, 1.0, -2.0),
        f32(-np.inf, 1.0),
        f32(1.0, np.nan, 2.0),
        np.concatenate([f32(1.0, 2.0), neg_nan]),
        rng.standard_normal(ROW + 1).astype(np.float32),
    ]
    big = (rng.standard_normal(3 * (1 << 18) + 77) * 3).astype(np.float32)  # shared by threads
    for where, value in ((-1, 40.0), (5, -40.0), (200_000, np.nan), (600_000, neg_nan[0]), (0, np.inf)):
        copy = big.copy()
        copy[where] = value
        arrays.append(copy)
    arrays.append(big)
    return arrays


def test_dynamic_quantize_gives_the_exact_paths_bits(compiled_calls) -> None:
    for x in _blocks(np.random.default_rng(4)):
        same_bits(*both(dynamic_quantize_linear, x))
        same_bits(*both(dynamic_quantize_linear, x.reshape(1, -1, 1)))
    assert compiled_calls["quantize_float32"] >= 1


def test_dynamic_quantize_reports_the_first_nan_as_before() -> None:
    x = np.zeros(300_000, np.float32)
    x[[123_456, 200_000]] = np.nan
    fast, exact = both(dynamic_quantize_linear, x)
    assert fast == exact and "index (123456,)" in fast


def test_large_tensors_shared_by_threads_give_the_exact_paths_bits(compiled_calls) -> None:
    """Sizes the loops split over threads (customops.accel.parallel), per tensor and per axis."""
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((4, 1 << 18)) * 50).astype(np.float32)
    x[:, ::1000] = (np.arange(x[:, ::1000].size).reshape(4, -1) + 0.5) * 0.25  # ties of the scale 0.25
    q = rng.integers(-128, 128, x.shape).astype(np.int8)
    scales = f32(0.25, 0.3, -7.5, 1e-3)
    zeros = np.array([0, 5, -128, 127], np.int8)
    for arr, axis in ((x, 0), (x.T.copy(), 1)):
        same_bits(*both(quantize_linear, arr, scales, zeros, axis=axis, version=13))
    for arr, axis in ((q, 0), (q.T.copy(), 1)):
        same_bits(*both(dequantize_linear, arr, scales, zeros, axis=axis, version=13))
    same_bits(*both(quantize_linear, x, np.array(0.25, np.float32), np.array(3, np.int8), version=13))
    same_bits(*both(dequantize_linear, q, np.array(0.25, np.float32), np.array(3, np.int8), version=13))
    assert compiled_calls["quantize_float32_last"] >= 1 and compiled_calls["dequantize_float32_last"] >= 1
