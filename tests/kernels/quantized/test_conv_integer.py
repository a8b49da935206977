"""Tests for customops.kernels.quantized.conv_integer (ONNX ConvInteger-10) and its exact sums."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto

from customops.errors import KernelError
from customops.kernels.quantized.conv_integer import conv_integer, geometry, integer_conv
from tests.kernels.quantized.oracles import attributes, cases, naive_conv, ort_session
from tests.kernels.quantized.test_quantize_linear import _onnx_types

BACKEND = cases("test_convinteger", "convinteger")
_TYPES = {"int8": np.int8, "uint8": np.uint8}


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    assert len(BACKEND) == 2
    for inputs, outputs in case.data_sets:
        got = conv_integer(*inputs, **attributes(case))
        assert got.dtype == np.int32 and np.array_equal(got, outputs[0])


def test_types_match_onnx() -> None:
    for name in ("x", "w", "x_zero_point", "w_zero_point"):
        assert _onnx_types("ConvInteger", 10, name) == ("int8", "uint8")
    assert _onnx_types("ConvInteger", 10, "y") == ("int32",)


def _random(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(_TYPES[name])
    return rng.integers(info.min, info.max + 1, shape).astype(_TYPES[name])


@st.composite
def convolutions(draw):
    """A random valid ConvInteger: 1 to 3 spatial axes, groups, strides, dilations, explicit pads or an
    auto_pad mode (the pads it stands for are computed by the test with its own formula)."""
    r = draw(st.integers(1, 3))
    group = draw(st.sampled_from([1, 2]))
    kernel = [draw(st.integers(1, 3)) for _ in range(r)]
    dil = [draw(st.integers(1, 2)) for _ in range(r)]
    stride = [draw(st.integers(1, 3)) for _ in range(r)]
    spatial = [draw(st.integers((k - 1) * d + 1, 7)) for k, d in zip(kernel, dil, strict=True)]
    mode = draw(st.sampled_from(["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    pads = [draw(st.integers(0, 2)) for _ in range(2 * r)] if mode == "NOTSET" else None
    channels = group * draw(st.integers(0, 2))
    out_channels = group * draw(st.integers(1, 2))
    return r, group, kernel, dil, stride, spatial, mode, pads, channels, out_channels


def _pads_of(mode: str, pads, spatial, kernel, dil, stride) -> list[int]:
    r = len(spatial)
    if mode == "NOTSET":
        return pads
    if mode == "VALID":
        return [0] * (2 * r)
    begin, end = [], []
    for d, k, di, s in zip(spatial, kernel, dil, stride, strict=True):
        out = -(-d // s)
        total = max(0, (out - 1) * s + (k - 1) * di + 1 - d)
        small = total // 2
        begin.append(small if mode == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return begin + end


@settings(max_examples=60, deadline=None)
@given(
    conv=convolutions(),
    seed=st.integers(0, 2**32 - 1),
    types=st.tuples(st.sampled_from(["int8", "uint8"]), st.sampled_from(["int8", "uint8"])),
    per_channel=st.booleans(),
)
def test_equals_the_definition(conv, seed, types, per_channel) -> None:
    r, group, kernel, dil, stride, spatial, mode, pads, channels, out_channels = conv
    rng = np.random.default_rng(seed)
    x = _random(rng, types[0], (2, channels, *spatial))
    w = _random(rng, types[1], (out_channels, channels // group, *kernel))
    xz = _random(rng, types[0], ())
    wz = _random(rng, types[1], (out_channels,) if per_channel else ())
    got = conv_integer(x, w, xz, wz, auto_pad=mode, dilations=dil, group=group, pads=pads, strides=stride)
    shifted_w = w.astype(np.int64) - (wz.reshape((-1,) + (1,) * (r + 1)) if per_channel else wz)
    expected = naive_conv(
        x.astype(np.int64) - xz,
        shifted_w,
        _pads_of(mode, pads, spatial, kernel, dil, stride),
        stride,
        dil,
        group,
    )
    assert got.dtype == np.int32 and got.shape == expected.shape
    assert np.array_equal(got, expected.astype(np.int64)) and got.flags.c_contiguous


def test_float_path_equals_the_int64_path() -> None:
    rng = np.random.default_rng(2)
    xs = rng.choice([-255, 255, 7], (2, 6, 9, 8)).astype(np.int64)
    ws = rng.choice([-255, 255, -3], (4, 3, 3, 2)).astype(np.int64)
    geo = geometry(xs.shape, ws.shape, "NOTSET", [2, 1], 2, None, [1, 0, 2, 1], [1, 2])
    assert np.array_equal(integer_conv(xs, ws, geo), integer_conv(xs, ws, geo, blas=False))


def test_matches_onnxruntime() -> None:
    rng = np.random.default_rng(4)
    session = ort_session(
        "ConvInteger",
        10,
        [
            ("x", TensorProto.UINT8),
            ("w", TensorProto.UINT8),
            ("xz", TensorProto.UINT8),
            ("wz", TensorProto.UINT8),
        ],
        [("y", TensorProto.INT32)],
        pads=[1, 2, 0, 1],
        strides=[2, 1],
        dilations=[1, 2],
        group=2,
    )
    x = _random(rng, "uint8", (2, 4, 9, 7))
    w = _random(rng, "uint8", (6, 2, 3, 2))
    xz, wz = _random(rng, "uint8", ()), _random(rng, "uint8", ())
    (expected,) = session.run(None, {"x": x, "w": w, "xz": np.asarray(xz), "wz": np.asarray(wz)})
    got = conv_integer(x, w, xz, wz, pads=[1, 2, 0, 1], strides=[2, 1], dilations=[1, 2], group=2)
    assert np.array_equal(got, expected)


def test_sums_beyond_int32_wrap() -> None:
    x = np.full((1, 33100, 1), 255, np.uint8)
    w = np.full((1, 33100, 1), 255, np.uint8)
    assert conv_integer(x, w).tolist() == [[[33100 * 65025 - 2**32]]]


def test_same_padding_of_an_empty_axis_gives_an_empty_output() -> None:
    got = conv_integer(np.zeros((1, 1, 0), np.uint8), np.ones((2, 1, 3), np.uint8), auto_pad="SAME_UPPER")
    assert got.shape == (1, 2, 0)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs", "message"),
    [
        ((1, 2, 5), (1, 2, 7), {}, "does not fit in spatial axis 0"),
        ((1, 2, 5), (1, 2, 3), {"kernel_shape": [2]}, "kernel_shape"),
        ((1, 2, 5), (1, 2, 3), {"auto_pad": "SAME_UPPER", "pads": [1, 1]}, "pads cannot be given"),
        ((1, 2, 5), (1, 2, 3), {"auto_pad": "SAME"}, "auto_pad 'SAME' is not one of"),
        ((1, 4, 5), (3, 2, 3), {"group": 2}, "not divisible by group"),
        ((1, 4, 5), (2, 3, 3), {"group": 2}, "times group"),
        ((1, 5), (1, 5), {}, "at least one spatial axis"),
        ((1, 2, 5), (1, 2, 3), {"strides": [0]}, "strides"),
    ],
)
def test_invalid_geometries_are_refused(x_shape, w_shape, kwargs, message) -> None:
    with pytest.raises(KernelError, match=message):
        conv_integer(np.zeros(x_shape, np.uint8), np.zeros(w_shape, np.uint8), **kwargs)


def test_invalid_zero_points_are_refused() -> None:
    x, w = np.zeros((1, 2, 5), np.uint8), np.zeros((3, 2, 2), np.int8)
    with pytest.raises(KernelError, match="x_zero_point has shape"):
        conv_integer(x, w, np.zeros(2, np.uint8))
    with pytest.raises(
        KernelError,
        match=r"w_zero_point has shape \(2,\); it must be one value or one per output channel \(3,\)",
    ):
        conv_integer(x, w, None, np.zeros(2, np.int8))
    with pytest.raises(KernelError, match="w_zero_point has element type 'uint8'"):
        conv_integer(x, w, None, np.zeros(3, np.uint8))
