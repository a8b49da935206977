"""Tests for customops.kernels.spatial.max_roi_pool (ONNX MaxRoiPool-1 and -22). ONNX has no backend test
of this operator: the expected values here are derived by hand or by the scalar loop below."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from onnx import TensorProto, helper

import customops
from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.spatial.max_roi_pool import max_roi_pool
from tests.helpers import one_node_model

F32 = np.float32
IMAGE = np.arange(20, dtype=F32).reshape(1, 1, 4, 5)  # X[h, w] = 5h + w


# ---------------------------------------------------------------------------------------------
# an independent re-derivation: exact rationals and scalar loops over Fast R-CNN's ROI pooling


def c_round(q: Fraction) -> int:
    """C's round() of an exact rational: halves away from zero."""
    magnitude = math.floor(abs(q) + Fraction(1, 2))
    return magnitude if q >= 0 else -magnitude


def slow_pool(x: np.ndarray, rois: np.ndarray, pooled: list[int], scale: float) -> np.ndarray:
    n_rois, channels = rois.shape[0], x.shape[1]
    height, width = x.shape[2], x.shape[3]
    out = np.zeros((n_rois, channels, *pooled))
    for r in range(n_rois):
        b = int(rois[r, 0])
        # C's round(): halves away from zero, on the exact product
        x1, y1, x2, y2 = (c_round(Fraction(float(v)) * Fraction(scale)) for v in rois[r, 1:])
        roi_w, roi_h = max(x2 - x1 + 1, 1), max(y2 - y1 + 1, 1)
        for c in range(channels):
            for i in range(pooled[0]):
                for j in range(pooled[1]):
                    h0 = y1 + math.floor(Fraction(i * roi_h, pooled[0]))
                    h1 = y1 + math.ceil(Fraction((i + 1) * roi_h, pooled[0]))
                    w0 = x1 + math.floor(Fraction(j * roi_w, pooled[1]))
                    w1 = x1 + math.ceil(Fraction((j + 1) * roi_w, pooled[1]))
                    h0, h1 = min(max(h0, 0), height), min(max(h1, 0), height)
                    w0, w1 = min(max(w0, 0), width), min(max(w1, 0), width)
                    window = [float(x[b, c, h, w]) for h in range(h0, h1) for w in range(w0, w1)]
                    if not window:
                        out[r, c, i, j] = 0.0  # an empty bin
                    elif any(math.isnan(v) for v in window):
                        out[r, c, i, j] = math.nan
                    else:
                        out[r, c, i, j] = max(window)
    return out


def random_case(rng: np.random.Generator):
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    x = rng.standard_normal((n, c, h, w))
    scale = float(F32(rng.choice([1.0, 0.5, 0.25, 2.0, 0.3])))
    count = int(rng.integers(0, 5))
    rois = np.zeros((count, 5))
    rois[:, 0] = rng.integers(0, n, count)
    # quarter pixels (halves after some scales), across the borders, some malformed (x2 < x1)
    rois[:, 1:] = np.round(rng.uniform(-3, max(h, w) + 3, (count, 4)) / scale * 4) / 4
    pooled = [int(rng.integers(1, 5)), int(rng.integers(1, 5))]
    return x, rois, pooled, scale


@pytest.mark.parametrize("seed", range(6))
def test_random_cases_against_the_scalar_loop(seed) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(15):
        x, rois, pooled, scale = random_case(rng)
        expected = slow_pool(x, rois, pooled, scale)
        for dtype in (np.float64, F32):
            got = max_roi_pool(x.astype(dtype), rois.astype(dtype), pooled_shape=pooled, spatial_scale=scale)
            assert got.dtype == dtype and got.flags.c_contiguous
            np.testing.assert_array_equal(got, expected.astype(dtype))


# ---------------------------------------------------------------------------------------------
# hand-computed cases


def pool(rois, pooled, x=IMAGE, **attrs):
    return max_roi_pool(x, np.array(rois, F32), pooled_shape=pooled, **attrs).tolist()


def test_whole_image_in_two_by_two_bins() -> None:
    # rows 0..3 in 2 bins: [0, 2), [2, 4); columns 0..4 (5) in 2 bins: [0, 3), [2, 5) (they overlap)
    assert pool([[0, 0, 0, 4, 3]], [2, 2]) == [[[[7, 9], [17, 19]]]]


def test_corners_round_half_away_from_zero() -> None:
    # 0.5 -> 1, 1.5 -> 2, 2.5 -> 3: rows 2..3, columns 1..3 -> X[3, 3] = 18
    assert pool([[0, 0.5, 1.5, 2.5, 2.5]], [1, 1]) == [[[[18]]]]
    # -0.5 -> -1, -1.5 -> -2: rows -2..3 (6) in 3 bins of 2: [-2, 0) empty, [0, 2), [2, 4); columns
    # -1..3 (5) in 3: [-1, 1), [0, 3), [2, 4) clipped to [0, 1), [0, 3), [2, 4)
    assert pool([[0, -0.5, -1.5, 2.5, 2.5]], [3, 3]) == [[[[0, 0, 0], [5, 7, 8], [15, 17, 18]]]]


def test_spatial_scale_applies_before_rounding() -> None:
    # scale 0.5: (2, 2, 5, 7) -> (1, 1, 2.5 -> 3, 3.5 -> 4 clipped): rows 1..3, columns 1..3
    assert pool([[0, 2, 2, 5, 7]], [1, 1], spatial_scale=0.5) == [[[[18]]]]
    # scale 0.25: 6 * 0.25 = 1.5 -> 2
    assert pool([[0, 6, 6, 6, 6]], [1, 1], spatial_scale=0.25) == [[[[12]]]]


def test_malformed_roi_is_one_pixel_at_its_first_corner() -> None:
    # x2 < x1 and y2 < y1: width and height 1 at (x1, y1) = (3, 2)
    assert pool([[0, 3, 2, 1, 0]], [1, 1]) == [[[[13]]]]
    # with 2x2 bins of one pixel: floor(p / 2), ceil((p + 1) / 2) -> [0, 1) and [0, 1): the pixel twice
    assert pool([[0, 3, 2, 1, 0]], [2, 2]) == [[[[13, 13], [13, 13]]]]


def test_bins_outside_the_image_are_zero() -> None:
    assert pool([[0, 10, 10, 20, 20]], [2, 2]) == [[[[0, 0], [0, 0]]]]
    # half inside: columns 3..6 -> bins [3, 5) and [5, 7) clipped to [5, 5) (empty)
    assert pool([[0, 3, 0, 6, 0]], [1, 2]) == [[[[4, 0]]]]


def test_zero_is_only_for_empty_bins_not_for_negative_maxima() -> None:
    x = -1 - IMAGE
    assert pool([[0, 0, 0, 1, 1]], [1, 1], x=x) == [[[[-1]]]]


def test_batch_index_picks_the_image() -> None:
    x = np.stack([IMAGE[0], 100 + IMAGE[0]])
    assert pool([[1, 0, 0, 0, 0], [0, 4, 3, 4, 3]], [1, 1], x=x) == [[[[100]]], [[[19]]]]


def test_bin_edges_are_exact_where_float32_is_not() -> None:
    # 57 columns in 7 bins: the last bin is [48, 57) exactly; float32 57/7 * 7 is 57.000004, whose ceil
    # would take column 57 in
    x = np.arange(58, dtype=F32).reshape(1, 1, 1, 58)
    assert pool([[0, 0, 0, 56, 0]], [1, 7], x=x) == [[[[8, 16, 24, 32, 40, 48, 56]]]]


def test_nan_propagates_wherever_it_is_in_the_window() -> None:
    for at in range(4):
        x = np.arange(4, dtype=F32).reshape(1, 1, 2, 2)
        x.reshape(-1)[at] = np.nan
        got = max_roi_pool(x, np.array([[0, 0, 0, 1, 1]], F32), pooled_shape=[1, 1])
        assert np.isnan(got).all(), at
    # a bin without the NaN is not affected
    x = np.array([[[[np.nan, 1, 2, 3]]]], F32)
    got = max_roi_pool(x, np.array([[0, 0, 0, 3, 0]], F32), pooled_shape=[1, 2])
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 0, 1] == 3


def test_infinities_are_ordinary_maxima() -> None:
    x = np.full((1, 1, 2, 2), -np.inf, F32)
    assert pool([[0, 0, 0, 1, 1]], [1, 1], x=x) == [[[[-np.inf]]]]
    x[0, 0, 1, 1] = np.inf
    assert pool([[0, 0, 0, 1, 1]], [1, 1], x=x) == [[[[np.inf]]]]


def test_empty_rois_channels_and_images() -> None:
    assert max_roi_pool(IMAGE, np.zeros((0, 5), F32), pooled_shape=[2, 3]).shape == (0, 1, 2, 3)
    x = np.zeros((1, 0, 4, 5), F32)
    assert max_roi_pool(x, np.array([[0, 0, 0, 1, 1]], F32), pooled_shape=[2, 2]).shape == (1, 0, 2, 2)
    x = np.zeros((1, 2, 0, 5), F32)
    got = max_roi_pool(x, np.array([[0, 0, 0, 1, 1]], F32), pooled_shape=[2, 2])
    assert got.shape == (1, 2, 2, 2) and not got.any()
    x = np.zeros((0, 2, 3, 3), F32)
    assert max_roi_pool(x, np.zeros((0, 5), F32), pooled_shape=[1, 1]).shape == (0, 2, 1, 1)


def test_huge_coordinates_are_pooled_exactly() -> None:
    # a roi from -1e30 to 1e30 covers the image: one bin holds it all (no integer overflow)
    got = max_roi_pool(IMAGE, np.array([[0, -1e30, -1e30, 1e30, 1e30]], F32), pooled_shape=[1, 1])
    assert got.tolist() == [[[[19]]]]


@pytest.mark.parametrize("seed", range(3))
def test_compiled_loop_equals_the_numpy_path(seed) -> None:
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        x, rois, pooled, scale = random_case(rng)
        x.reshape(-1)[rng.integers(0, x.size, 2)] = [np.nan, -np.inf]
        for dtype in (F32, np.float64):
            args = (x.astype(dtype), rois.astype(dtype))
            compiled = max_roi_pool(*args, pooled_shape=pooled, spatial_scale=scale)
            with jit.numpy_only():
                plain = max_roi_pool(*args, pooled_shape=pooled, spatial_scale=scale)
            np.testing.assert_array_equal(compiled, plain)


# ---------------------------------------------------------------------------------------------
# invalid configurations


@pytest.mark.parametrize(
    ("rois", "attrs", "message"),
    [
        ([[0.5, 0, 0, 1, 1]], {}, r"roi 0 has batch index 0.5; it must be an integer in \[0, 1\)"),
        ([[0, 0, 0, 1, 1], [1, 0, 0, 1, 1]], {}, "roi 1 has batch index 1.0"),
        ([[-1, 0, 0, 1, 1]], {}, "batch index -1.0"),
        ([[np.nan, 0, 0, 1, 1]], {}, "batch index nan"),
        ([[0, np.nan, 0, 1, 1]], {}, "roi 0 .* has a coordinate that is not finite"),
        ([[0, 0, 0, np.inf, 1]], {}, "not finite"),
        ([[0, 0, 0, 1, 1]], {"pooled_shape": [0, 1]}, r"pooled_shape \[0, 1\] must be two positive"),
        ([[0, 0, 0, 1, 1]], {"pooled_shape": [-1, 2]}, "must be two positive"),
        ([[0, 0, 0, 1, 1]], {"pooled_shape": [1, 1, 1]}, "must be two positive"),
        ([[0, 0, 0, 1, 1]], {"pooled_shape": None}, "pooled_shape is required"),
        ([[0, 0, 0, 1, 1]], {"spatial_scale": 0.0}, "spatial_scale 0.0 must be positive and finite"),
        ([[0, 0, 0, 1, 1]], {"spatial_scale": -1.0}, "must be positive"),
        ([[0, 0, 0, 1, 1]], {"spatial_scale": math.inf}, "must be positive and finite"),
        ([[0, 0, 0, 1]], {}, r"rois must have shape \(num_rois, 5\)"),
        ([0, 0, 0, 1, 1], {}, r"got \(5,\)"),
    ],
)
def test_invalid_configurations(rois, attrs, message) -> None:
    kwargs = {"pooled_shape": [1, 1], **attrs}
    with pytest.raises(KernelError, match=message):
        max_roi_pool(IMAGE, np.array(rois, F32), **kwargs)


def test_x_must_be_4d() -> None:
    with pytest.raises(KernelError, match=r"X must be 4-D \(N, C, H, W\), got shape \(1, 4, 5\)"):
        max_roi_pool(IMAGE[0], np.array([[0, 0, 0, 1, 1]], F32), pooled_shape=[1, 1])


# ---------------------------------------------------------------------------------------------
# through ONNX Runtime: every element type of both versions, the rewrite and its restore


def _model(elem: int, opset: int, pooled: list[int]):
    """MaxRoiPool on X and rois of type ``elem`` between Casts from and to float (for bfloat16)."""
    nodes = [
        helper.make_node("Cast", ["X"], ["x"], to=elem),
        helper.make_node("Cast", ["rois"], ["r"], to=elem),
        helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=pooled, spatial_scale=0.5),
        helper.make_node("Cast", ["y"], ["Y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, None),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    return model


@pytest.mark.parametrize(
    ("elem", "opset"),
    [(TensorProto.FLOAT16, 7), (TensorProto.FLOAT16, 22), (TensorProto.BFLOAT16, 22)],
    ids=["float16-1", "float16-22", "bfloat16-22"],
)
def test_bridged_types_cast_x_and_rois_to_float(elem, opset) -> None:
    x = np.arange(40, dtype=F32).reshape(2, 1, 4, 5)
    rois = np.array([[1, 1, 1, 7, 5], [0, 3, 0, 3, 0]], F32)  # halved: (0.5, 0.5, 3.5, 2.5) -> 1, 1, 4, 3
    result = customops.rewrite_model(_model(elem, opset, [2, 2]))
    assert [r.status for r in result.nodes if r.op.startswith("MaxRoiPool")] == ["swapped"]
    (y,) = customops.InferenceSession(result.model).run(None, {"X": x, "rois": rois})
    np.testing.assert_array_equal(y, max_roi_pool(x, rois, pooled_shape=[2, 2], spatial_scale=0.5))


@pytest.mark.parametrize("opset", [1, 22])
@pytest.mark.parametrize("dtype", [F32, np.float64])
def test_native_types_through_a_session_and_restore(opset, dtype) -> None:
    x = np.random.default_rng(opset).standard_normal((2, 3, 6, 7)).astype(dtype)
    rois = np.array([[1, 0, 0, 6, 5], [0, 2.5, 1, 4, 3.5], [1, 5, 5, 1, 1]], dtype)
    model, feed = one_node_model("MaxRoiPool", {"X": x, "rois": rois}, opset, pooled_shape=[3, 2])
    rewritten = customops.rewrite(model)
    assert [n.domain for n in rewritten.graph.node] == [customops.DOMAIN]
    (y,) = customops.InferenceSession(rewritten).run(None, feed)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, max_roi_pool(x, rois, pooled_shape=[3, 2]))
    restored = customops.restore(rewritten)
    assert restored.graph.node[0].SerializeToString() == model.graph.node[0].SerializeToString()


def test_float32_matches_onnxruntime_where_it_follows_the_spec() -> None:
    """ORT's float32 kernel agrees with ours on ordinary data (no NaN, no -inf, no float32 bin edge)."""
    import onnxruntime as ort

    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 16, 16)).astype(F32)
    rois = np.array([[0, 0, 0, 63, 63], [1, 8, 4, 40, 20], [1, 60, 60, 70, 80], [0, 30, 10, 2, 2]], F32)
    model, feed = one_node_model(
        "MaxRoiPool", {"X": x, "rois": rois}, 1, pooled_shape=[3, 4], spatial_scale=0.25
    )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    (theirs,) = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    ).run(None, feed)
    np.testing.assert_array_equal(theirs, max_roi_pool(x, rois, pooled_shape=[3, 4], spatial_scale=0.25))


def test_kernel_error_reaches_the_caller() -> None:
    model, feed = one_node_model(
        "MaxRoiPool", {"X": IMAGE, "rois": np.array([[0.5, 0, 0, 1, 1]], F32)}, 22, pooled_shape=[1, 1]
    )
    with pytest.raises(customops.KernelError, match=r"batch index 0\.5"):
        customops.InferenceSession(customops.rewrite(model)).run(None, feed)


def test_rois_split_over_threads_give_the_same_bits(monkeypatch) -> None:
    from customops.accel import parallel

    rng = np.random.default_rng(21)
    x = rng.standard_normal((2, 5, 9, 11)).astype(F32)
    x[0, 1, 2, 3] = np.nan
    rois = np.array([[0, 0, 0, 10, 8], [1, 2, 3, 7, 5], [0, -4, -4, 3, 3], [1, 9, 1, 2, 7]] * 3, F32)
    monkeypatch.setitem(parallel._state, "threads", 1)
    serial = max_roi_pool(x, rois, pooled_shape=[3, 4])
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)
    assert max_roi_pool(x, rois, pooled_shape=[3, 4]).tobytes() == serial.tobytes()
