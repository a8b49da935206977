"""Tests for customops.kernels.quantized.qlinear_conv (ONNX QLinearConv-10)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customops.errors import KernelError
from customops.kernels.quantized.qlinear_conv import qlinear_conv
from tests.kernels.quantized.oracles import attributes, cases, int_rounded, naive_conv, reference_run
from tests.kernels.quantized.test_conv_integer import _pads_of, _random, convolutions
from tests.kernels.quantized.test_quantize_linear import _onnx_types

BACKEND = cases("test_qlinearconv", "qlinearconv")


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    assert BACKEND
    for inputs, outputs in case.data_sets:
        got = qlinear_conv(*inputs, **attributes(case))
        assert got.dtype == outputs[0].dtype and np.array_equal(got, outputs[0])


def test_types_match_onnx() -> None:
    for name in ("x", "w", "y"):
        assert _onnx_types("QLinearConv", 10, name) == ("int8", "uint8")
    assert _onnx_types("QLinearConv", 10, "B") == ("int32",)
    assert _onnx_types("QLinearConv", 10, "x_scale") == ("float",)


@settings(max_examples=50, deadline=None)
@given(
    conv=convolutions(),
    seed=st.integers(0, 2**32 - 1),
    types=st.tuples(*[st.sampled_from(["int8", "uint8"])] * 3),
    per_channel=st.booleans(),
    bias=st.booleans(),
)
def test_rounds_the_real_value_once(conv, seed, types, per_channel, bias) -> None:
    r, group, kernel, dil, stride, spatial, mode, pads, channels, out_channels = conv
    rng = np.random.default_rng(seed)
    x = _random(rng, types[0], (1, channels, *spatial))
    w = _random(rng, types[1], (out_channels, channels // group, *kernel))
    xz, yz = _random(rng, types[0], ()), _random(rng, types[2], ())
    wz = _random(rng, types[1], (out_channels,) if per_channel else ())
    xs = np.asarray(rng.choice([0.5, 0.02, 0.1]), np.float32)
    ws = np.asarray(rng.choice([0.25, 0.013, 1.0], (out_channels,) if per_channel else ()), np.float32)
    ys = np.asarray(rng.choice([0.5, 1.0, 3.0, 0.3]), np.float32)
    b = rng.integers(-5000, 5000, out_channels).astype(np.int32) if bias else None
    got = qlinear_conv(
        x, xs, xz, w, ws, wz, ys, yz, b, auto_pad=mode, dilations=dil, group=group, pads=pads, strides=stride
    )
    shifted_w = w.astype(np.int64) - (wz.reshape((-1,) + (1,) * (r + 1)) if per_channel else wz)
    acc = naive_conv(
        x.astype(np.int64) - xz,
        shifted_w,
        _pads_of(mode, pads, spatial, kernel, dil, stride),
        stride,
        dil,
        group,
    )
    assert got.dtype == np.dtype(types[2]) and got.shape == acc.shape
    for index in np.ndindex(acc.shape):
        m = index[1]
        w_scale = ws[m] if per_channel else ws
        total = int(acc[index]) + (int(b[m]) if bias else 0)
        real = Fraction(total) * Fraction(float(xs)) * Fraction(float(w_scale)) / Fraction(float(ys))
        assert got[index] == int_rounded(real, int(yz), types[2]), index


def test_ties_round_to_even() -> None:
    x = np.array([[[1, 3, 5, 7]]], np.uint8)
    w = np.array([[[1]]], np.uint8)
    one, zero = np.array(1, np.float32), np.array(0, np.uint8)
    got = qlinear_conv(x, np.array(0.5, np.float32), zero, w, one, zero, one, zero)
    assert got.ravel().tolist() == [0, 2, 2, 4]
    with_bias = qlinear_conv(
        x, np.array(0.5, np.float32), zero, w, one, zero, one, zero, np.array([2], np.int32)
    )
    assert with_bias.ravel().tolist() == [2, 2, 4, 4]  # (1 + 2) / 2 = 1.5 -> 2, (3 + 2) / 2 = 2.5 -> 2


def test_scales_without_a_value_in_the_output_type() -> None:
    x = np.array([[[0, 4]]], np.uint8)
    w = np.array([[[1]]], np.uint8)
    one, zero = np.array(1, np.float32), np.array(0, np.uint8)
    with pytest.raises(KernelError, match="NaN"):
        qlinear_conv(x, one, zero, w, one, zero, np.array(0, np.float32), zero)  # 0 / 0
    assert qlinear_conv(x[..., 1:], one, zero, w, one, zero, np.array(0, np.float32), zero).tolist() == [
        [[255]]
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"B": np.zeros(3, np.int32)}, r"B has shape \(3,\); it must be \[M\] = \(2,\)"),
        ({"B": np.zeros(2, np.int64)}, "B has element type 'int64'"),
        (
            {"x_scale": np.ones(2, np.float32), "x_zero_point": np.zeros(2, np.uint8)},
            "x_zero_point has shape .* one value",
        ),
        ({"w_scale": np.ones(2, np.float32)}, "must have the same shape"),
        ({"y_scale": np.array(1, np.float16)}, "y_scale has element type 'float16'"),
        ({"y_zero_point": np.array(0, np.int16)}, "y_zero_point has element type 'int16'"),
    ],
)
def test_invalid_inputs_are_refused(change, message) -> None:
    inputs = {
        "x": np.zeros((1, 2, 4), np.uint8),
        "x_scale": np.array(1, np.float32),
        "x_zero_point": np.array(0, np.uint8),
        "w": np.zeros((2, 2, 1), np.uint8),
        "w_scale": np.array(1, np.float32),
        "w_zero_point": np.array(0, np.uint8),
        "y_scale": np.array(1, np.float32),
        "y_zero_point": np.array(0, np.uint8),
    }
    inputs.update(change)
    with pytest.raises(KernelError, match=message):
        qlinear_conv(**inputs)


def test_per_channel_weights_and_an_empty_bias() -> None:
    x = np.array([[[2, 4]]], np.int8)
    w = np.array([[[1]], [[3]]], np.int8)
    got = qlinear_conv(
        x,
        np.array(1, np.float32),
        np.array(0, np.int8),
        w,
        np.array([1, 0.5], np.float32),
        np.array([0, 1], np.int8),
        np.array(1, np.float32),
        np.array(0, np.int8),
        np.zeros(0, np.int32),
    )
    assert got.tolist() == [[[2, 4], [2, 4]]]


def test_reference_rounds_a_float32_multiplier_first() -> None:
    """As QLinearMatMul (docs/semantics.md): x_scale = float32(1/3), w_scale = 3, y_scale = 2."""
    x = np.array([[[1, 3, 5]]], np.uint8)
    w = np.array([[[1]]], np.uint8)
    sx, sw, sy = np.array(1 / 3, np.float32), np.array(3, np.float32), np.array(2, np.float32)
    zero = np.array(0, np.uint8)
    assert qlinear_conv(x, sx, zero, w, sw, zero, sy, zero).ravel().tolist() == [1, 2, 3]
    feed = {"x": x, "sx": sx, "zx": zero, "w": w, "sw": sw, "zw": zero, "sy": sy, "zy": zero}
    (reference,) = reference_run("QLinearConv", 10, feed)
    assert reference.ravel().tolist() == [0, 2, 2]


def test_every_input_but_the_bias_is_required() -> None:
    one, zero = np.array(1, np.float32), np.array(0, np.uint8)
    x, w = np.zeros((1, 1, 3), np.uint8), np.zeros((1, 1, 1), np.uint8)
    with pytest.raises(KernelError, match="QLinearConv requires input x_zero_point, which is missing"):
        qlinear_conv(x, one, None, w, one, zero, one, zero)
