"""The compiled Pad loop (customops.accel.padding.pad_loops) against Pad's numpy copies, bit for bit.

Each case prepares one plan and runs it twice: as prepared (compiled loop) and with the loop removed
(the numpy copies, what runs without numba). ``_loop_pays`` is patched so that small tensors take the
compiled path too.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

import customops.kernels.padding.pad as pad_module
from customops.accel import jit
from customops.accel.padding import pad_loops
from customops.errors import KernelError
from customops.kernels.padding.center_crop_pad import crop_pads as center_crop_pads
from customops.kernels.padding.pad import MODES, execute_pad, pad, prepare_pad
from customops.kernels.padding.pad import bind as bind_pad

needs_numba = pytest.mark.skipif(not jit.enabled(), reason="numba is not available")

DTYPES = (
    np.float32,
    np.float64,
    np.float16,
    np.int8,
    np.uint16,
    np.int64,
    np.bool_,
    np.complex64,
    np.complex128,
)

# (shape, pads of the last two axes (or the only one): begins then ends)
CASES = [
    ((7,), [2, 3]),
    ((7,), [-2, 4]),
    ((7,), [3, -1]),
    ((7,), [0, 9]),  # wrap and reflect pads larger than the axis
    ((1,), [2, 3]),  # a length-1 axis
    ((5, 6), [1, 2, 3, 1]),
    ((5, 6), [-1, 2, 3, -2]),  # crop one side, pad the other
    ((5, 6), [0, 0, 2, 0]),  # zero-size borders
    ((5, 6), [2, 0, 0, 0]),  # rows only
    ((5, 6), [0, -2, 0, 3]),
    ((5, 6), [-2, -1, -1, -2]),  # crops only
    ((5, 6), [9, 11, 13, 7]),  # pads larger than both axes
    ((1, 6), [2, 3, 1, 1]),  # a length-1 row axis
    ((5, 1), [1, 2, 4, 3]),  # a length-1 column axis
    ((1, 1), [3, 2, 2, 3]),
    ((2, 4, 5), [1, -1, 2, 0]),
    ((2, 4, 5), [0, 3, 0, 3]),
    ((3, 2, 4, 5), [2, 2, 1, 1]),
    ((3, 2, 4, 5), [-1, 6, 5, -2]),
    ((2, 3, 40, 33), [3, 3, 3, 3]),
    ((2, 3, 40, 33), [-4, 17, 9, -5]),
]


@pytest.fixture
def always_compiled(monkeypatch):
    monkeypatch.setattr(pad_module, "_loop_pays", lambda *args: True)
    monkeypatch.setattr(pad_module, "_TINY_GATHER", 0)


def _make(shape, dtype, rng) -> np.ndarray:
    if dtype is np.bool_:
        return np.asarray(rng.integers(0, 2, size=shape)).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True))
    values = np.asarray(rng.standard_normal(shape) * 100)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape) * 100
    return values.astype(dtype)


def _constant(dtype, rng) -> np.ndarray:
    return _make((), dtype, rng)


def _assert_same_bits(got: np.ndarray, want: np.ndarray, label) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, label
    assert got.flags.c_contiguous, label
    assert got.tobytes() == want.tobytes(), label


def _both_paths(data, pads, constant, axes, mode, expect_loop=True):
    """(compiled result, numpy result) of one Pad."""
    prepared = prepare_pad(data.shape, data.dtype, pads, constant, axes, mode)
    if expect_loop:
        assert prepared.loop is not None, (data.shape, pads, mode)
    numpy_only = dataclasses.replace(prepared, loop=None, gather=None)
    return execute_pad(prepared, data), execute_pad(numpy_only, data)


@needs_numba
@pytest.mark.usefixtures("always_compiled")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", MODES)
def test_compiled_loop_matches_numpy_copies(mode, dtype) -> None:
    rng = np.random.default_rng(11)
    ran = 0
    for shape, pads in CASES:
        data = _make(shape, dtype, rng)
        axes = np.arange(len(shape))[-2:]
        constant = _constant(dtype, rng) if mode == "constant" else None
        try:
            prepare_pad(data.shape, data.dtype, pads, constant, axes, mode)
        except KernelError:
            continue  # cropped to nothing, then padded: an error in every mode but constant
        got, want = _both_paths(data, np.array(pads, dtype=np.int64), constant, axes, mode)
        _assert_same_bits(got, want, (shape, pads))
        ran += 1
    assert ran >= len(CASES) - 2


@needs_numba
@pytest.mark.usefixtures("always_compiled")
@pytest.mark.parametrize("mode", MODES)
def test_random_pads_match_numpy_copies(mode) -> None:
    rng = np.random.default_rng(12)
    ran = 0
    for trial in range(300):
        rank = 1 + trial % 4
        shape = tuple(int(n) for n in rng.integers(1, 7, size=rank))
        padded = min(rank, 2) if trial % 3 else rank  # every third: leading axes too (numpy copies)
        pads = rng.integers(-4, 10, size=2 * padded)
        dtype = DTYPES[trial % len(DTYPES)]
        data = _make(shape, dtype, rng)
        constant = _constant(dtype, rng) if mode == "constant" else None
        axes = np.arange(rank - padded, rank)
        try:
            prepared = prepare_pad(data.shape, data.dtype, pads, constant, axes, mode)
        except KernelError:
            continue
        last2 = padded == min(rank, 2) or (not pads[: rank - 2].any() and not pads[rank : 2 * rank - 2].any())
        if prepared.loop is None and last2:  # nothing to copy: the output is empty or only the constant
            assert prepared.only_fill or 0 in prepared.out_shape
            continue
        got, want = _both_paths(data, pads, constant, axes, mode, expect_loop=last2)
        _assert_same_bits(got, want, (shape, pads.tolist(), np.dtype(dtype).name))
        ran += 1
    assert ran > 100


@needs_numba
@pytest.mark.usefixtures("always_compiled")
def test_special_values_are_copied_bit_for_bit() -> None:
    # NaNs with payloads (quiet, negative, signalling), -0.0, inf, -inf, 1.5, the smallest subnormal
    bits = [0x7FC00001, 0xFFC12345, 0x7F800001, 0x80000000, 0x7F800000, 0xFF800000, 0x3FC00000, 1]
    row = np.array(bits, dtype=np.uint32)
    data = np.tile(row, (3, 5)).reshape(3, 5, 8).view(np.float32)
    payloads = row.view(np.float32)
    for mode, pads in itertools.product(MODES, ([2, 1, 3, 4], [-1, 3, 2, -3])):
        constant = np.float32(-0.0) if mode == "constant" else None
        got, want = _both_paths(data, pads, constant, [1, 2], mode)
        _assert_same_bits(got, want, (mode, pads))
    nan_constant = payloads[1]
    got, want = _both_paths(data, [1, 1, 2, 2], nan_constant, [-2, -1], "constant")
    _assert_same_bits(got, want, "NaN constant")
    assert got[0, 0, 0].view(np.uint32) == 0xFFC12345
    doubles = np.array([-0.0, np.nan, 2.0], dtype=np.float64)
    doubles[1] = np.array(0x7FF0000000000ABC, dtype=np.uint64).view(np.float64)
    got, want = _both_paths(np.tile(doubles, (4, 1)), [1, 2, 3, 4], None, None, "reflect")
    _assert_same_bits(got, want, "float64 payloads")


@needs_numba
def test_large_float32_pad_takes_the_compiled_loop() -> None:
    data = np.random.default_rng(13).standard_normal((1, 4, 96, 80)).astype(np.float32)
    pads = np.array([0, 0, 3, 3, 0, 0, 3, 3], dtype=np.int64)
    for mode in MODES:
        prepared = prepare_pad(data.shape, data.dtype, pads, None, None, mode)
        assert prepared.loop is not None, mode
        assert prepared.loop.kernel is jit.get("pad_last2", pad_loops)
        calls = []

        def counting(*args, kernel=prepared.loop.kernel, calls=calls):
            calls.append(args[0].shape)
            return kernel(*args)

        counted = dataclasses.replace(prepared, loop=dataclasses.replace(prepared.loop, kernel=counting))
        got = execute_pad(counted, data)
        assert calls == [(4, 96, 80)]
        expected = np.pad(data, [(0, 0), (0, 0), (3, 3), (3, 3)], mode=mode)
        np.testing.assert_array_equal(got, expected)
    # CenterCropPad's plans: a pad takes the loop; a crop alone is one numpy copy
    for target, compiled in (([1, 4, 120, 100], True), ([1, 4, 64, 64], False)):
        pads, axes = center_crop_pads(data.shape, np.array(target), None)
        prepared = prepare_pad(data.shape, data.dtype, pads, None, axes, "constant")
        assert (prepared.loop is not None) is compiled, target


@needs_numba
def test_loop_is_left_out_where_numpy_is_as_fast_or_it_does_not_apply(monkeypatch) -> None:
    x = np.zeros((2, 3, 4, 5), dtype=np.float32)
    tiny = prepare_pad(x.shape, x.dtype, np.array([0, 0, 1, 1, 0, 0, 1, 1]), None, None, "edge")
    assert tiny.gather is not None and tiny.loop is None  # 252 outputs: the flat gather
    monkeypatch.setattr(pad_module, "_TINY_GATHER", 0)  # below: the choices for larger outputs

    def loop(data, pads, axes=None, mode="edge"):
        return prepare_pad(data.shape, data.dtype, np.array(pads), None, axes, mode).loop

    assert loop(x, [0, 0, 1, 1, 0, 0, 1, 1]) is not None
    assert loop(x, [0, 1, 0, 0, 0, 1, 0, 0]) is None  # a leading axis padded
    assert loop(x, [1, 0, 1, 1, -1, 0, 1, 1]) is None  # a leading axis shifted
    assert loop(x, [0, 0, 1, 1, 1, 0, 1, 1]) is None  # a leading axis padded at its end
    assert loop(x, [0, 0, 1, 1, 0, -1, 1, 1]) is None  # a leading axis cropped at its end
    assert loop(x, [0, 0, -1, -1, 0, 0, -1, -1]) is None  # crops only: one numpy copy
    assert loop(x.astype(object), [0, 0, 1, 1, 0, 0, 1, 1]) is None
    assert loop(x.astype(np.clongdouble), [0, 0, 1, 1, 0, 0, 1, 1]) is None
    assert loop(np.zeros(100, np.float32), [1, 1]) is None  # one small row: numpy's three copies
    assert loop(np.zeros(10000, np.float32), [1, 1]) is not None
    assert loop(x, [0, 0, 1, 1, 0, 0, 1, 1], mode="constant") is not None


@pytest.mark.usefixtures("always_compiled")
def test_without_numba_the_numpy_copies_run() -> None:
    data = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    for mode in MODES:
        with jit.numpy_only():
            prepared = prepare_pad(data.shape, data.dtype, [1, 2, 2, 1], None, [1, 2], mode)
        assert prepared.loop is None
        expected = np.pad(data, [(0, 0), (1, 2), (2, 1)], mode=mode)
        np.testing.assert_array_equal(execute_pad(prepared, data), expected)


@needs_numba
@pytest.mark.usefixtures("always_compiled")
def test_non_contiguous_and_read_only_inputs() -> None:
    base = np.random.default_rng(14).standard_normal((4, 9, 12)).astype(np.float32)
    read_only = base.copy()
    read_only.flags.writeable = False
    offset = base[1:3]  # contiguous, not at the start of its buffer
    for data in (base[:, ::2, ::-3], base.transpose(0, 2, 1), read_only, offset):
        for mode in MODES:
            got = pad(data, [2, 1, 1, 3], axes=[1, 2], mode=mode)
            expected = np.pad(data, [(0, 0), (2, 1), (1, 3)], mode=mode)
            _assert_same_bits(got, np.ascontiguousarray(expected), (data.strides, mode))


@needs_numba
def test_bound_kernel_reuses_the_compiled_plan() -> None:
    data = np.random.default_rng(15).integers(0, 255, size=(2, 3, 30, 20)).astype(np.uint8)
    pads = np.array([0, 0, 2, 5, 0, 0, 4, 1], dtype=np.int64)
    for mode in MODES:
        bound = bind_pad(mode=mode)
        first, second = bound(data, pads), bound(data, pads)
        expected = np.pad(data, [(0, 0), (0, 0), (2, 4), (5, 1)], mode=mode)
        np.testing.assert_array_equal(first, expected)
        np.testing.assert_array_equal(second, expected)
        assert first is not second


@pytest.mark.parametrize("mode", MODES)
def test_tiny_gather_matches_numpy_copies(mode) -> None:
    """Tiny outputs take one fancy index through a flat table: the same bits as the numpy copies, for
    pads of any axes (leading ones too), crops, and every numeric and bool type."""
    rng = np.random.default_rng(14)
    ran = 0
    for trial in range(300):
        rank = 1 + trial % 4
        shape = tuple(int(n) for n in rng.integers(1, 6, size=rank))
        pads = rng.integers(-3, 5, size=2 * rank)
        dtype = DTYPES[trial % len(DTYPES)]
        data = _make(shape, dtype, rng)
        constant = _constant(dtype, rng) if mode == "constant" else None
        try:
            prepared = prepare_pad(data.shape, data.dtype, pads, constant, None, mode)
        except KernelError:
            continue
        if prepared.only_fill or not 0 < math.prod(prepared.out_shape) <= pad_module._TINY_GATHER:
            continue
        assert prepared.gather is not None and prepared.loop is None, (shape, pads)
        got = execute_pad(prepared, data)
        want = execute_pad(dataclasses.replace(prepared, gather=None), data)
        _assert_same_bits(got, want, (shape, pads.tolist(), np.dtype(dtype).name))
        ran += 1
    assert ran >= 100
