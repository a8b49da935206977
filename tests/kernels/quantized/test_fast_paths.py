"""The quantized GEMMs' fast paths give the exact integers, and the compiled requantization the numpy
path's bits.

MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv multiply in float32 BLAS where every partial
sum is below 2**24, over chunks of the shared axis (summed in float64) where only one chunk's sums are;
their int64 paths (``blas=False``) and a naive loop are the yardsticks. The requantization of QLinearMatMul
and QLinearConv into integer types rounds in a compiled loop (customops.accel.quantized.requantize_loops) and sends
the elements its bound leaves unsure through the numpy path; inside ``jit.numpy_only()`` everything takes
the numpy path, and the two must give the same bits. The operands sit at the boundaries: 255 x -128,
zero points at the ends of their types, sums exactly halfway between two integers, saturation.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.quantized import arithmetic as ar
from customops.kernels.quantized.conv_integer import conv_integer, geometry, integer_conv
from customops.kernels.quantized.matmul_integer import matmul_integer
from customops.kernels.quantized.qlinear_conv import qlinear_conv
from customops.kernels.quantized.qlinear_matmul import qlinear_matmul
from tests.kernels.quantized.oracles import naive_conv

needs_numba = pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
U8, I8 = np.uint8, np.int8


@pytest.fixture
def chunked(monkeypatch) -> list[int]:
    """The chunk sizes of every chunked float32 product made during the test."""
    sizes: list[int] = []
    real = ar.chunked_matmul

    def spy(a: np.ndarray, b: np.ndarray, chunk: int) -> np.ndarray:
        sizes.append(chunk)
        return real(a, b, chunk)

    monkeypatch.setattr(ar, "chunked_matmul", spy)
    return sizes


def _exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(object), b.astype(object))


@pytest.mark.parametrize(
    ("k", "a_zero", "b_zero", "chunks"),
    [
        (514, 0, 0, False),  # 514 * 255 * 128 < 2**24: one float32 product
        (515, 0, 0, True),  # one more term and 255 x -128 sums no longer fit float32
        (300, 255, -128, True),  # |a - 255| <= 255, |b + 128| <= 255: chunks of 258
        (2000, 0, 127, True),
    ],
)
def test_matmul_integer_is_exact_at_the_extremes(k, a_zero, b_zero, chunks, chunked) -> None:
    rng = np.random.default_rng(k)
    a = np.where(rng.random((5, k)) < 0.9, 255 if a_zero == 0 else 0, 255).astype(U8)
    b = np.where(rng.random((k, 7)) < 0.9, -128, 127).astype(I8)
    a[0], b[:, 0] = 255 if a_zero == 0 else 0, -128  # the row and column of the largest sum
    got = matmul_integer(a, b, np.array(a_zero, U8), np.array(b_zero, I8))
    expected = _exact(a.astype(np.int64) - a_zero, b.astype(np.int64) - b_zero)
    wrapped = ((expected + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert got.dtype == np.int32 and np.array_equal(got, wrapped)
    assert bool(chunked) == chunks
    largest = np.abs(a.astype(np.int64) - a_zero).max() * np.abs(b.astype(np.int64) - b_zero).max()
    assert all(size * largest < 2**24 <= (size + 1) * largest for size in chunked)


def test_a_sum_beyond_int32_still_wraps(chunked) -> None:
    k = 40_000  # 40,000 * 255 * 255 > 2**31
    a = np.full((1, k), 0, U8)
    b = np.full((k, 1), 127, I8)
    got = matmul_integer(a, b, np.array(255, U8), np.array(-128, I8))
    exact = k * -255 * 255
    assert got[0, 0] == (exact + 2**31) % 2**32 - 2**31 and chunked


def test_exact_matmul_dtype_and_known_bound() -> None:
    a = np.full((2, 600), 255.0, np.float32)
    b = np.full((600, 3), -128.0, np.float32)
    assert ar.exact_matmul(a, b, dtype=np.int32).dtype == np.int32
    assert (ar.exact_matmul(a, b, dtype=np.int32) == 600 * 255 * -128).all()
    huge = np.full((1, 40_000), 255.0, np.float32)
    wide = ar.exact_matmul(huge, np.full((40_000, 1), 255.0, np.float32), dtype=np.int32)
    assert wide.dtype == np.int64 and wide[0, 0] == 40_000 * 255 * 255  # beyond int32: int64
    assert np.array_equal(ar.exact_matmul(a, b, largest=255 * 128), ar.exact_matmul(a, b, blas=False))


@pytest.mark.parametrize(("channels", "kernel", "chunks"), [(56, 3, False), (64, 3, True), (3, 1, False)])
def test_conv_integer_is_exact_at_the_extremes(channels, kernel, chunks, chunked) -> None:
    rng = np.random.default_rng(channels * kernel)
    x = np.where(rng.random((2, channels, 9, 8)) < 0.8, 255, 0).astype(U8)
    w = np.where(rng.random((4, channels, kernel, kernel)) < 0.8, -128, 127).astype(I8)
    w[0] = -128
    attrs = {"pads": [kernel // 2, 0, kernel // 2 + 1, 1], "strides": [1, 2]}
    got = conv_integer(x, w, np.array(0, U8), np.array(0, I8), **attrs)
    geo = geometry(x.shape, w.shape, "NOTSET", None, 1, None, attrs["pads"], attrs["strides"])
    reference = integer_conv(x.astype(np.int64), w.astype(np.int64), geo, blas=False)
    assert np.array_equal(got, reference.astype(np.int32))
    if channels < 10:
        assert np.array_equal(reference, naive_conv(x, w, attrs["pads"], attrs["strides"], [1, 1], 1))
    assert bool(chunked) == chunks


def test_conv_larger_than_the_im2col_limit_takes_the_per_position_path(monkeypatch) -> None:
    from customops.kernels.quantized import conv_integer as module

    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 6, 7, 7), dtype=U8)
    w = rng.integers(-128, 128, (4, 3, 3, 3), dtype=I8)
    attrs = {"pads": [1, 1, 1, 1], "group": 2}
    whole = conv_integer(x, w, np.array(255, U8), np.array(-128, I8), **attrs)
    monkeypatch.setattr(module, "COLUMNS", 10)
    assert np.array_equal(conv_integer(x, w, np.array(255, U8), np.array(-128, I8), **attrs), whole)


def _halfway_acc(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Accumulators that, times 0.5 (scales 2**-2 and 2**-3 over 2**-4), are often exactly halfway."""
    acc = rng.integers(-700, 700, shape)
    acc.flat[:4] = [2**40 + 1, -(2**40) - 1, 511, -257]  # saturating both ways, halfway at the ends
    return acc


@needs_numba
@pytest.mark.parametrize("out", ["uint8", "int8", "int16", "int32"])
def test_compiled_requantize_gives_the_numpy_path_s_bits(out, compiled_calls) -> None:
    rng = np.random.default_rng(5)
    elem = ar.ELEMENTS[out]
    acc = _halfway_acc(rng, (3, 40, 11))
    num = np.array([0.25, 0.1, 3.0]).reshape(3, 1, 1) * np.float64(2**-3)
    for den, zero in [(2.0**-4, elem.low), (2.0**-4, elem.high), (0.3, 0), (np.inf, 1)]:
        z = np.array(zero).astype(elem.dtype)
        fast = ar.requantize(acc, num, np.array(den), z, elem, "y")
        with jit.numpy_only():
            slow = ar.requantize(acc, num, np.array(den), z, elem, "y")
        assert fast.dtype == slow.dtype and fast.tobytes() == slow.tobytes()
    assert compiled_calls["round_to_integers"] == 4


@needs_numba
def test_compiled_requantize_of_a_nan_raises_the_numpy_path_s_error(compiled_calls) -> None:
    acc = np.arange(12).reshape(3, 4)
    num = np.array([1.0, np.nan, 1.0, 1.0])
    with pytest.raises(KernelError) as fast:
        ar.requantize(acc, num, np.array(2.0), np.array(3, U8), ar.ELEMENTS["uint8"], "y")
    with jit.numpy_only(), pytest.raises(KernelError) as slow:
        ar.requantize(acc, num, np.array(2.0), np.array(3, U8), ar.ELEMENTS["uint8"], "y")
    assert str(fast.value) == str(slow.value) and "index (0, 1)" in str(fast.value)
    assert compiled_calls["round_to_integers"] == 1


def _both_paths(kernel, *args, **kwargs) -> np.ndarray:
    fast = kernel(*args, **kwargs)
    with jit.numpy_only():
        slow = kernel(*args, **kwargs)
    assert fast.dtype == slow.dtype and fast.tobytes() == slow.tobytes()
    return fast


@needs_numba
@pytest.mark.parametrize(("a_zero", "b_zero", "y_zero"), [(0, -128, 255), (255, 127, 0), (128, 0, 128)])
def test_qlinear_matmul_paths_agree_and_are_exact(a_zero, b_zero, y_zero, compiled_calls) -> None:
    rng = np.random.default_rng(a_zero + 7)
    a = rng.choice(np.array([0, 255, 128, 1], U8), (4, 2, 600))
    b = rng.choice(np.array([-128, 127, 0], I8), (600, 5))
    scales = (np.array(2.0**-5, np.float32), np.array(2.0**-6, np.float32), np.array(2.0**6, np.float32))
    zeros = (np.array(a_zero, U8), np.array(b_zero, I8), np.array(y_zero, U8))
    y = _both_paths(qlinear_matmul, a, scales[0], zeros[0], b, scales[1], zeros[1], scales[2], zeros[2])
    acc = _exact(a.astype(np.int64) - a_zero, b.astype(np.int64) - b_zero)
    # y = acc * 2**-17 rounded half to even, plus the zero point, saturated
    rounded = np.vectorize(lambda v: round(Fraction(int(v), 2**17)))(acc)
    assert np.array_equal(y, np.clip(rounded.astype(np.int64) + y_zero, 0, 255))
    assert compiled_calls["round_to_integers"] == 1


@needs_numba
def test_qlinear_conv_paths_agree_with_bias_and_per_channel_scales(compiled_calls) -> None:
    rng = np.random.default_rng(9)
    x = rng.choice(np.array([0, 255, 3], U8), (1, 64, 6, 6))
    w = rng.choice(np.array([-128, 127], I8), (3, 64, 5, 5))
    w_scale = np.array([2.0**-8, 0.0123, 2.0**-10], np.float32)
    args = (x, np.array(2.0**-4, np.float32), np.array(255, U8), w, w_scale, np.zeros(3, I8))
    bias = np.array([2**20, -(2**31), 7], np.int32)
    for y_zero in (np.array(-128, I8), np.array(255, U8)):
        _both_paths(qlinear_conv, *args, np.array(1.0, np.float32), y_zero, bias, pads=[2, 2, 2, 2])
    assert compiled_calls["round_to_integers"] == 2
