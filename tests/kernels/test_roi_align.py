"""Tests for customops.kernels.spatial.roi_align (ONNX RoiAlign-10/16/22), against values derived from
the spec text here (hand-computed cases and a float64 scalar-loop re-derivation), not taken from a
runtime."""

from __future__ import annotations

import contextlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from onnx import TensorProto, helper

import customops
from customops.accel import jit, parallel
from customops.errors import KernelError
from customops.kernels.spatial.roi_align import roi_align
from tests.helpers import backend_cases, one_node_model, run_builtin, run_custom

BACKEND_CASES = backend_cases("test_roialign", generator="roialign")


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND_CASES}
    assert names == {"test_roialign_aligned_false", "test_roialign_aligned_true", "test_roialign_mode_max"}


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    for inputs, outputs in case.data_sets:
        got = roi_align(*inputs, **attrs)
        assert got.dtype == outputs[0].dtype and got.shape == outputs[0].shape
        np.testing.assert_allclose(got, outputs[0], rtol=case.rtol, atol=case.atol)


# ---------------------------------------------------------------------------------------------
# an independent re-derivation of the spec formula: one sample point, one corner at a time


def _axis_points(start, end, scale, half, bins, ratio):
    """Per bin, the coordinates of its sample points along one axis (the spec's formula): point k of bin
    p lies at begin + (p + (k + 0.5) / grid) * extent / bins, written as one fraction of the extent."""
    offset = 0.5 if half else 0.0
    begin = start * scale - offset
    extent = end * scale - start * scale
    if not half:
        extent = max(extent, 1.0)
    grid = ratio if ratio > 0 else max(math.ceil(extent / bins), 0)
    return [
        [begin + (2 * grid * p + 2 * k + 1) * extent / (2 * grid * bins) for k in range(grid)]
        for p in range(bins)
    ]


def _corners(coord, length):
    """[(pixel, weight)] of one coordinate: none outside the map (< -1 or > length), else two,
    the coordinate clamped to [0, length - 1]."""
    if coord < -1.0 or coord > length:
        return []
    coord = min(max(coord, 0.0), length - 1.0)
    low = min(math.floor(coord), length - 1)
    high = min(low + 1, length - 1)
    frac = coord - low
    return [(low, 1.0 - frac), (high, frac)]


def spec_roi_align(x, rois, batch, mode, half, oh, ow, ratio, scale):
    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, oh, ow))
    for r, (x1, y1, x2, y2) in enumerate(np.asarray(rois, np.float64)):
        ys = _axis_points(y1, y2, scale, half, oh, ratio)
        xs = _axis_points(x1, x2, scale, half, ow, ratio)
        for ch, p, q in itertools.product(range(c), range(oh), range(ow)):
            terms_per_sample = []
            for yy in ys[p]:
                for xx in xs[q]:
                    cy, cx = _corners(yy, h), _corners(xx, w)
                    terms = [wy * wx * float(x[batch[r], ch, iy, ix]) for iy, wy in cy for ix, wx in cx]
                    terms_per_sample.append(terms or [0.0, 0.0, 0.0, 0.0])
            if not terms_per_sample:
                continue
            if mode == "avg":
                out[r, ch, p, q] = sum(sum(t) for t in terms_per_sample) / len(terms_per_sample)
            else:
                out[r, ch, p, q] = max(max(t) for t in terms_per_sample)
    return out


def _random_case(rng):
    n, c, h, w = (
        int(rng.integers(1, 3)),
        int(rng.integers(1, 3)),
        int(rng.integers(1, 7)),
        int(rng.integers(1, 7)),
    )
    x = rng.standard_normal((n, c, h, w))
    count = int(rng.integers(1, 4))
    first = rng.uniform(-2, max(h, w) + 1, (count, 2))
    rois = np.concatenate([first, first + rng.uniform(-1, 6, (count, 2))], axis=1)
    batch = rng.integers(0, n, count)
    return x, rois, batch


@pytest.mark.parametrize(
    ("mode", "coord", "ratio"),
    list(itertools.product(("avg", "max"), ("half_pixel", "output_half_pixel"), (0, 1, 2, 3))),
)
def test_matches_a_scalar_re_derivation_of_the_formula(mode, coord, ratio) -> None:
    rng = np.random.default_rng([ord(mode[0]), len(coord), ratio])
    for _ in range(6):
        x, rois, batch = _random_case(rng)
        oh, ow = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        scale = float(rng.choice([1.0, 0.5, 2.0, 0.25]))
        expected = spec_roi_align(x, rois, batch, mode, coord == "half_pixel", oh, ow, ratio, scale)
        kwargs = dict(
            coordinate_transformation_mode=coord,
            mode=mode,
            output_height=oh,
            output_width=ow,
            sampling_ratio=ratio,
            spatial_scale=scale,
        )
        got = roi_align(x, rois, batch, **kwargs)
        assert got.dtype == np.float64 and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# hand-computed cases: on X[y, x] = 4y + x bilinear interpolation is exact, so a bin's mean is
# 4 * (mean y) + (mean x) of its sample points

LINEAR = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)


def test_output_half_pixel_hand_computed() -> None:
    # x: start 0.3, width 2.4, bins of 1.2, samples at 0.6, 1.2 | 1.8, 2.4 -> means 0.9, 2.1
    # y: start 0.2, height 2.9, bins of 1.45, samples at 0.5625, 1.2875 | 2.0125, 2.7375 -> 0.925, 2.375
    got = roi_align(
        LINEAR,
        np.array([[0.3, 0.2, 2.7, 3.1]]),
        np.array([0]),
        coordinate_transformation_mode="output_half_pixel",
        output_height=2,
        output_width=2,
        sampling_ratio=2,
    )
    np.testing.assert_allclose(got[0, 0], [[3.7 + 0.9, 3.7 + 2.1], [9.5 + 0.9, 9.5 + 2.1]], atol=1e-12)


def test_half_pixel_shifts_by_minus_a_half() -> None:
    # the same ROI shifted by -0.5 on both axes: means 0.4, 1.6 (x) and 0.425, 1.875 (y)
    got = roi_align(
        LINEAR,
        np.array([[0.3, 0.2, 2.7, 3.1]]),
        np.array([0]),
        output_height=2,
        output_width=2,
        sampling_ratio=2,
    )
    np.testing.assert_allclose(got[0, 0], [[2.1, 3.3], [7.9, 9.1]], atol=1e-12)


def test_adaptive_grid_is_ceil_of_roi_size_over_output_size() -> None:
    # height 5 over 2 bins: ceil(2.5) = 3 points a bin; on a map constant along y only x matters.
    # x: width 3 over 1 bin: 3 points at 0.5, 1.5, 2.5 (output_half_pixel) -> mean 1.5 = X[.., 1.5]
    x = np.tile(np.arange(8.0), (8, 1)).reshape(1, 1, 8, 8)
    rois = np.array([[0.0, 0.0, 3.0, 5.0]])
    got = roi_align(
        x, rois, np.array([0]), coordinate_transformation_mode="output_half_pixel", output_height=2
    )
    np.testing.assert_allclose(got[0, 0, :, 0], [1.5, 1.5])
    # along y on the transposed map: bin 0 samples y at 5/6, 2.5, 25/6 / 2 ... computed by the formula
    xt = x.transpose(0, 1, 3, 2).copy()
    got = roi_align(
        xt, rois, np.array([0]), coordinate_transformation_mode="output_half_pixel", output_height=2
    )
    bin_h = 2.5
    means = [np.mean([p * bin_h + (k + 0.5) * bin_h / 3 for k in range(3)]) for p in range(2)]
    np.testing.assert_allclose(got[0, 0, :, 0], means)


def test_points_outside_the_map_count_zero_and_the_border_band_clamps() -> None:
    x = np.full((1, 1, 2, 2), 10.0)
    one = dict(coordinate_transformation_mode="output_half_pixel", sampling_ratio=1)

    # one point at (x, y) = (x1 + 0.5, y1 + 0.5) for a 1x1 box
    def at(cx, cy):
        return roi_align(x, np.array([[cx - 0.5, cy - 0.5, cx + 0.5, cy + 0.5]]), np.array([0]), **one)

    assert at(0.5, 0.5)[0, 0, 0, 0] == 10.0
    assert at(-0.5, 0.5)[0, 0, 0, 0] == 10.0  # -1 <= x < 0: clamped to 0
    assert at(-1.0, 0.5)[0, 0, 0, 0] == 10.0  # -1 is still inside
    assert at(-1.25, 0.5)[0, 0, 0, 0] == 0.0  # < -1: outside
    assert at(2.0, 0.5)[0, 0, 0, 0] == 10.0  # x = W: inside, clamped to the last pixel
    assert at(2.25, 0.5)[0, 0, 0, 0] == 0.0  # > W: outside
    assert at(0.5, 2.25)[0, 0, 0, 0] == 0.0
    # avg: a bin half outside averages the zeros in (2 points: one at 0.5, one at 3.5 > W)
    got = roi_align(
        x, np.array([[0.0, 0.0, 4.0, 1.0]]), np.array([0]), coordinate_transformation_mode="output_half_pixel"
    )
    # width 4 -> grid 4 on x: points 0.5, 1.5, 2.5, 3.5: two inside (10), two outside (0)
    assert got[0, 0, 0, 0] == pytest.approx(5.0)


def test_max_is_the_largest_weighted_corner_term() -> None:
    # one point at the centre of [[1, 2], [3, 4]]: weights 1/4 each; the terms are 0.25, 0.5, 0.75, 1;
    # the bilinear value would be 2.5 (docs/semantics.md, RoiAlign max mode)
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    rois = np.array([[0.0, 0.0, 1.0, 1.0]])
    kwargs = dict(coordinate_transformation_mode="output_half_pixel", sampling_ratio=1)
    assert roi_align(x, rois, np.array([0]), mode="max", **kwargs)[0, 0, 0, 0] == 1.0
    assert roi_align(x, rois, np.array([0]), mode="avg", **kwargs)[0, 0, 0, 0] == 2.5
    # a point exactly on a pixel of -5: its term is -5, the three others have weight 0 and count 0
    x = np.full((1, 1, 3, 3), -5.0)
    got = roi_align(x, np.array([[0.5, 0.5, 1.5, 1.5]]), np.array([0]), mode="max", **kwargs)
    assert got[0, 0, 0, 0] == 0.0
    # ... while a point inside the clamped border band has one corner only: -5 there
    got = roi_align(x, np.array([[1.75, 1.75, 2.75, 2.75]]), np.array([0]), mode="max", **kwargs)
    assert got[0, 0, 0, 0] == -5.0 * 1.0 or got[0, 0, 0, 0] == 0.0


def test_degenerate_and_reversed_rois() -> None:
    x = LINEAR
    # half_pixel, a point-sized ROI and an adaptive grid: ceil(0) = 0 points, the bin is 0
    assert roi_align(x, np.array([[1.0, 1.0, 1.0, 1.0]]), np.array([0]))[0, 0, 0, 0] == 0.0
    # output_half_pixel: ROIs are at least 1x1, so the same ROI samples its one point at (1.5, 1.5)
    got = roi_align(
        x, np.array([[1.0, 1.0, 1.0, 1.0]]), np.array([0]), coordinate_transformation_mode="output_half_pixel"
    )
    assert got[0, 0, 0, 0] == 4 * 1.5 + 1.5
    # reversed with a fixed grid: the formula samples backwards, so the bins come out mirrored
    fwd = roi_align(x, np.array([[0.5, 0.5, 2.5, 2.5]]), np.array([0]), output_width=2, sampling_ratio=2)
    rev = roi_align(x, np.array([[2.5, 0.5, 0.5, 2.5]]), np.array([0]), output_width=2, sampling_ratio=2)
    np.testing.assert_allclose(rev[0, 0, :, ::-1], fwd[0, 0])
    # reversed with an adaptive grid: ceil of a negative size is no point at all
    rev0 = roi_align(x, np.array([[2.5, 0.5, 0.5, 2.5]]), np.array([0]), output_width=2)
    assert (rev0 == 0).all()


def test_non_finite_roi_coordinates_give_nan_for_that_roi_only() -> None:
    rois = np.array([[0.0, 0.0, 2.0, 2.0], [np.nan, 0.0, 2.0, 2.0], [0.0, 0.0, np.inf, 2.0]])
    got = roi_align(LINEAR, rois, np.array([0, 0, 0]), output_height=2, output_width=2)
    assert np.isfinite(got[0]).all() and np.isnan(got[1]).all() and np.isnan(got[2]).all()
    assert np.isnan(roi_align(LINEAR, rois[:1], np.array([0]), spatial_scale=float("nan"))).all()
    # a scale of 0 collapses every ROI to the point (-0.5, -0.5): adaptive grids are empty
    assert (roi_align(LINEAR, rois[:1], np.array([0]), spatial_scale=0.0) == 0).all()
    got = roi_align(LINEAR, rois[:1], np.array([0]), spatial_scale=0.0, sampling_ratio=1)
    assert got[0, 0, 0, 0] == 0.0  # the point (-0.5, -0.5) clamps to X[0, 0] = 0


def test_inf_at_a_pixel_of_weight_zero_does_not_reach_the_output() -> None:
    x = LINEAR.copy()
    x[0, 0, 1, 2] = np.inf  # the high x neighbour of points at x = 1 (weight 0) on row 1
    rois = np.array([[0.5, 0.5, 1.5, 1.5]])  # one point at (1, 1): exactly pixel (1, 1)
    for mode in ("avg", "max"):
        got = roi_align(
            x,
            rois,
            np.array([0]),
            coordinate_transformation_mode="output_half_pixel",
            mode=mode,
            sampling_ratio=1,
        )
        assert got[0, 0, 0, 0] == 5.0
    x[0, 0, 1, 1] = np.nan
    got = roi_align(
        x,
        rois,
        np.array([0]),
        coordinate_transformation_mode="output_half_pixel",
        mode="max",
        sampling_ratio=1,
    )
    assert np.isnan(got[0, 0, 0, 0])


def test_spatial_scale_maps_image_coordinates_to_the_map() -> None:
    a = roi_align(LINEAR, np.array([[1.0, 2.0, 5.0, 6.0]]), np.array([0]), spatial_scale=0.5, output_height=2)
    b = roi_align(LINEAR, np.array([[0.5, 1.0, 2.5, 3.0]]), np.array([0]), output_height=2)
    np.testing.assert_array_equal(a, b)


def test_batch_indices_pick_the_image() -> None:
    x = np.stack([LINEAR[0], 100 + LINEAR[0]])
    rois = np.array([[0.0, 0.0, 2.0, 2.0]] * 3)
    got = roi_align(x, rois, np.array([1, 0, 1]), sampling_ratio=2)
    assert got[0, 0, 0, 0] == got[2, 0, 0, 0] == got[1, 0, 0, 0] + 100


# ---------------------------------------------------------------------------------------------
# shapes, types, invalid inputs


def test_empty_shapes() -> None:
    x = np.zeros((2, 3, 4, 4), np.float32)
    assert roi_align(x, np.zeros((0, 4), np.float32), np.zeros(0, np.int64), output_height=2).shape == (
        0,
        3,
        2,
        1,
    )
    got = roi_align(np.zeros((1, 0, 4, 4), np.float32), np.zeros((2, 4), np.float32), np.zeros(2, np.int64))
    assert got.shape == (2, 0, 1, 1) and got.dtype == np.float32
    got = roi_align(np.zeros((0, 3, 4, 4)), np.zeros((0, 4)), np.zeros(0, np.int64))
    assert got.shape == (0, 3, 1, 1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_output_has_the_input_type_and_rounds_once(dtype) -> None:
    x = (LINEAR / 3).astype(dtype)
    rois = np.array([[0.3, 0.2, 2.7, 3.1]], dtype)
    got = roi_align(x, rois, np.array([0]), output_height=2, output_width=2, sampling_ratio=2)
    exact = roi_align(
        x.astype(np.float64),
        rois.astype(np.float64),
        np.array([0]),
        output_height=2,
        output_width=2,
        sampling_ratio=2,
    )
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, exact.astype(dtype))


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((LINEAR, [[0, 0, 1, 1]], [0]), {"mode": "min"}, "mode 'min'"),
        (
            (LINEAR, [[0, 0, 1, 1]], [0]),
            {"coordinate_transformation_mode": "align_corners"},
            "coordinate_transformation_mode",
        ),
        ((LINEAR, [[0, 0, 1, 1]], [0]), {"output_height": 0}, "output_height is 0"),
        ((LINEAR, [[0, 0, 1, 1]], [0]), {"output_width": -2}, "output_width is -2"),
        ((LINEAR, [[0, 0, 1, 1]], [0]), {"sampling_ratio": -1}, "sampling_ratio is -1"),
        ((LINEAR, [[0, 0, 1, 1]], [1]), {}, r"batch_indices\[0\] = 1 is out of range"),
        ((LINEAR, [[0, 0, 1, 1]], [-1]), {}, "out of range"),
        ((LINEAR, [[0, 0, 1, 1, 1]], [0]), {}, r"rois must have shape \(num_rois, 4\)"),
        ((LINEAR, [[0, 0, 1, 1]], [0, 0]), {}, "batch_indices must have shape"),
        ((LINEAR, [[0, 0, 1, 1]], [0.0]), {}, "batch_indices has element type"),
        ((LINEAR[0], [[0, 0, 1, 1]], [0]), {}, "must be 4-D"),
        ((LINEAR.astype(np.int32), [[0, 0, 1, 1]], [0]), {}, "element type int32"),
        ((np.zeros((1, 1, 0, 3)), [[0, 0, 1, 1]], [0]), {}, "empty spatial axis"),
        ((LINEAR, [[0, 0, 1e30, 1]], [0]), {}, "sample points"),
        ((LINEAR, [[0, 0, 1, 1]], [0]), {"sampling_ratio": 2**62}, "sample points"),
    ],
)
def test_invalid_inputs_raise_kernel_error(args, kwargs, message) -> None:
    x, rois, batch = args
    rois = np.asarray(rois, np.float64)
    batch = np.asarray(batch) if np.asarray(batch).dtype.kind == "f" else np.asarray(batch, np.int64)
    with pytest.raises(KernelError, match=message):
        roi_align(x, rois, batch, **kwargs)


# ---------------------------------------------------------------------------------------------
# through ONNX Runtime: every version and element type, rewrite and restore


def _feeds(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 5)).astype(dtype)
    rois = np.array([[0.5, 0.25, 4.0, 5.5], [-1, 2, 3, 3.5], [2, 2, 2, 2]], dtype)
    return x, rois, np.array([1, 0, 1], np.int64)


@pytest.mark.parametrize(
    ("opset", "dtype"),
    [
        (10, np.float32),
        (16, np.float64),
        (16, np.float16),
        (22, np.float32),
        (22, np.float64),
        (22, np.float16),
    ],
)
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_every_version_and_type_through_onnxruntime(opset, dtype, mode) -> None:
    x, rois, batch = _feeds(dtype)
    attrs = dict(mode=mode, output_height=3, output_width=2, sampling_ratio=0, spatial_scale=1.0)
    if opset >= 16:
        attrs["coordinate_transformation_mode"] = "output_half_pixel" if dtype == np.float64 else "half_pixel"
    model, feed = one_node_model("RoiAlign", {"X": x, "rois": rois, "batch_indices": batch}, opset, **attrs)
    (got,) = run_custom(model, feed)
    coord = attrs.get("coordinate_transformation_mode", "output_half_pixel")  # RoiAlign-10: no shift
    compute = np.float64 if dtype == np.float64 else np.float32  # float16 is bridged through float
    expected = spec_roi_align(
        x.astype(compute), rois.astype(compute), batch, mode, coord == "half_pixel", 3, 2, 0, 1.0
    )
    assert got.dtype == dtype and got.shape == (3, 3, 3, 2)
    if dtype == np.float64:  # float64 sums in another order than the scalar loop's
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    else:  # one rounding from float64
        np.testing.assert_array_equal(got, expected.astype(compute).astype(dtype))


def test_bfloat16_roialign_22_is_bridged() -> None:
    import ml_dtypes

    x, rois, batch = _feeds(np.float32)
    x16, rois16 = x.astype(ml_dtypes.bfloat16), rois.astype(ml_dtypes.bfloat16)
    nodes = [
        helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["r"], ["rb"], to=TensorProto.BFLOAT16),
        helper.make_node("RoiAlign", ["xb", "rb", "b"], ["yb"], output_height=2, output_width=2),
        helper.make_node("Cast", ["yb"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("b", TensorProto.INT64, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    result = customops.rewrite_model(model)
    assert [r.op for r in result.swapped] == ["RoiAlign-22"] or [r.op for r in result.swapped] == ["RoiAlign"]
    got = customops.InferenceSession(result.model).run(None, {"x": x, "r": rois, "b": batch})[0]
    exact = spec_roi_align(
        x16.astype(np.float32), rois16.astype(np.float32), batch, "avg", True, 2, 2, 0, 1.0
    )
    expected = exact.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(got, expected)


def test_roialign_10_agrees_with_onnxruntime_and_16_output_half_pixel() -> None:
    x, rois, batch = _feeds(np.float32)
    inputs = {"X": x, "rois": rois, "batch_indices": batch}
    m10, feed = one_node_model("RoiAlign", inputs, 10, output_height=2, output_width=3, sampling_ratio=2)
    m16, _ = one_node_model(
        "RoiAlign",
        inputs,
        16,
        output_height=2,
        output_width=3,
        sampling_ratio=2,
        coordinate_transformation_mode="output_half_pixel",
    )
    (ours10,) = run_custom(m10, feed)
    (ours16,) = run_custom(m16, feed)
    np.testing.assert_array_equal(ours10, ours16)
    np.testing.assert_allclose(ours10, run_builtin(m10, feed)[0], rtol=1e-5, atol=1e-5)


def test_rewrite_and_restore_round_trip() -> None:
    x, rois, batch = _feeds(np.float16)
    model, _ = one_node_model(
        "RoiAlign",
        {"X": x, "rois": rois, "batch_indices": batch},
        16,
        initializers=("rois",),
        mode="max",
        spatial_scale=0.5,
    )
    result = customops.rewrite_model(model)
    assert result.changed and not result.skipped
    assert any(n.domain == customops.DOMAIN for n in result.model.graph.node)
    restored = customops.restore(result.model)
    assert restored.graph.SerializeToString() == model.graph.SerializeToString()


def test_batch_indices_of_another_type_or_rois_of_another_type_are_left_alone() -> None:
    x, rois, batch = _feeds(np.float32)
    model, _ = one_node_model("RoiAlign", {"X": x, "rois": rois, "batch_indices": batch.astype(np.int32)}, 16)
    result = customops.rewrite_model(model)
    assert not result.changed and "requires int64" in result.skipped[0].line()
    model, _ = one_node_model(
        "RoiAlign", {"X": x, "rois": rois.astype(np.float64), "batch_indices": batch}, 16
    )
    result = customops.rewrite_model(model)
    assert not result.changed and "same type" in result.skipped[0].line()


def test_kernel_error_inside_a_session_names_the_rule() -> None:
    x, rois, batch = _feeds(np.float32)
    model, feed = one_node_model("RoiAlign", {"X": x, "rois": rois, "batch_indices": batch}, 16)
    sess = customops.InferenceSession(customops.rewrite_model(model).model)
    feed["batch_indices"] = np.array([0, 5, 0], np.int64)
    with pytest.raises(KernelError, match="out of range"):
        sess.run(None, feed)


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_split_over_threads_gives_the_same_bits(monkeypatch) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    x[1, 2, 4, 4] = np.inf
    rois = np.concatenate([rng.uniform(-2, 8, (9, 2)), rng.uniform(0, 12, (9, 2))], axis=1).astype(np.float32)
    batch = rng.integers(0, 2, 9)
    calls = [
        dict(mode=m, coordinate_transformation_mode=c, sampling_ratio=s, output_height=3, output_width=2)
        for m, c, s in itertools.product(("avg", "max"), ("half_pixel", "output_half_pixel"), (0, 2))
    ]
    monkeypatch.setitem(parallel._state, "threads", 1)
    serial = [roi_align(x, rois, batch, **kw) for kw in calls]
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)
    for kw, want in zip(calls, serial, strict=True):
        assert roi_align(x, rois, batch, **kw).tobytes() == want.tobytes(), kw


# ---------------------------------------------------------------------------------------------
# sample points exactly on a boundary (-1, the map's length, a whole pixel): the formula in rational
# arithmetic decides whether a point is inside and which pixels it weighs, never a float64 rounding


def _exact_points(start, end, scale, half, bins, ratio):
    """Per bin, the exact coordinates (fractions) of its sample points along one axis."""
    a = Fraction(float(start)) * Fraction(float(scale))
    begin = a - (Fraction(1, 2) if half else 0)
    extent = Fraction(float(end)) * Fraction(float(scale)) - a
    if not half:
        extent = max(extent, Fraction(1))
    grid = ratio if ratio > 0 else max(math.ceil(extent / bins), 0)
    step = extent / (2 * grid * bins) if grid else 0
    return [[begin + (2 * grid * p + 2 * k + 1) * step for k in range(grid)] for p in range(bins)]


def _exact_corners(coord, length):
    if coord < -1 or coord > length:
        return []
    coord = min(max(coord, Fraction(0)), Fraction(length - 1))
    low = min(math.floor(coord), length - 1)
    return [(low, 1 - (coord - low)), (min(low + 1, length - 1), coord - low)]


def exact_roi_align(x, rois, mode, half, oh, ow, ratio, scale):
    """The formula in rational arithmetic (X finite, batch 0), rounded once at the end."""
    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, oh, ow))
    for r, (x1, y1, x2, y2) in enumerate(np.asarray(rois, np.float64)):
        ys = _exact_points(y1, y2, scale, half, oh, ratio)
        xs = _exact_points(x1, x2, scale, half, ow, ratio)
        for ch, p, q in itertools.product(range(c), range(oh), range(ow)):
            samples = [
                [
                    wy * wx * Fraction(float(x[0, ch, iy, ix]))
                    for iy, wy in _exact_corners(yy, h)
                    for ix, wx in _exact_corners(xx, w)
                ]
                or [0]
                for yy in ys[p]
                for xx in xs[q]
            ]
            if samples and mode == "avg":
                out[r, ch, p, q] = float(sum(sum(t) for t in samples) / len(samples))
            elif samples:
                out[r, ch, p, q] = float(max(max(t) for t in samples))
    return out


def _landing_roi(rng, target, half, bins, ratio, scale):
    """(start, end) of a ROI one of whose sample points lies exactly on ``target``, in values that
    float32 holds exactly. The extent is dyadic and the point's fraction of it, m / (2 grid bins), has
    the odd part of its denominator in m: the point is dyadic, the bin size (extent / bins) need not be."""
    grid = ratio if ratio > 0 else int(rng.integers(1, 4))
    d = 2 * grid * bins
    if ratio == 0:  # ceil(extent / bins) = grid: extent in (bins (grid - 1), bins grid]
        extent = bins * grid - Fraction(int(rng.integers(0, 16 * bins)), 16)
    else:
        extent = Fraction(int(rng.integers(1 if half else 16, 16 * d)), 16)  # >= 1 under output_half_pixel
    odd = d // (d & -d)
    m = odd * int(rng.choice(range(1, d // odd, 2)))
    start = (target - m * extent / d + (Fraction(1, 2) if half else 0)) / Fraction(scale)
    return start, start + extent / Fraction(scale)


@pytest.mark.parametrize("half", [True, False], ids=["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [1, 2, 3, 0])
def test_points_exactly_on_the_map_boundary_follow_the_exact_formula(half, ratio) -> None:
    rng = np.random.default_rng([ratio, half])
    h, w = 3, 5
    x = (np.arange(2 * h * w, dtype=np.float64).reshape(1, 2, h, w) + 1) * 3
    for mode, _ in itertools.product(("avg", "max"), range(20)):
        oh, ow = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        scale = float(rng.choice([1.0, 0.5, 2.0]))
        y1, y2 = _landing_roi(rng, int(rng.choice([-1, h])), half, oh, ratio, scale)
        x1, x2 = _landing_roi(rng, int(rng.choice([-1, w])), half, ow, ratio, scale)
        rois = np.array([[x1, y1, x2, y2]], np.float64)
        assert np.array_equal(rois.astype(np.float32), rois)  # the values are exact
        coord = "half_pixel" if half else "output_half_pixel"
        kwargs = dict(coordinate_transformation_mode=coord, mode=mode, output_height=oh, output_width=ow)
        want = exact_roi_align(x, rois, mode, half, oh, ow, ratio, scale)
        for dtype in (np.float64, np.float32):
            compiled = roi_align(
                x.astype(dtype),
                rois.astype(dtype),
                np.array([0]),
                sampling_ratio=ratio,
                spatial_scale=scale,
                **kwargs,
            )
            with jit.numpy_only():
                plain = roi_align(
                    x.astype(dtype),
                    rois.astype(dtype),
                    np.array([0]),
                    sampling_ratio=ratio,
                    spatial_scale=scale,
                    **kwargs,
                )
            for got in (compiled, plain):
                np.testing.assert_allclose(
                    got, want, rtol=1e-6 if dtype == np.float32 else 1e-12, err_msg=str((rois, kwargs))
                )


def test_a_point_on_minus_one_is_kept() -> None:
    # X = [[10, 20]], roi x from -2 to 0, 3 bins of one point: x = -2 + (2p + 1) / 3 = -5/3, -1, -1/3;
    # -1 is inside (clamped to pixel 0), -5/3 outside: [0, 10, 10]
    x = np.array([[[[10, 20]]]], np.float32)
    rois = np.array([[-2, 0, 0, 0]], np.float32)
    kwargs = dict(coordinate_transformation_mode="output_half_pixel", output_width=3, sampling_ratio=1)
    assert roi_align(x, rois, np.array([0]), **kwargs).ravel().tolist() == [0, 10, 10]
    with jit.numpy_only():
        assert roi_align(x, rois, np.array([0]), **kwargs).ravel().tolist() == [0, 10, 10]


# s + e = 4 with spatial_scale 0.75 under half_pixel and 3 bins of one point: the middle point lies at
# 0.75 * (s + e) / 2 - 0.5 = 1 exactly, although 0.75 * s and 0.75 * e round in float64
INEXACT_STARTS = [0.6231065388581198, 0.13191296808750064, 3.994419871578422, 4 - math.e, 2.5 + 2**-51]


@pytest.mark.parametrize("start", INEXACT_STARTS)
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_points_whose_float64_coordinates_round_are_placed_exactly(start, mode) -> None:
    kwargs = dict(
        coordinate_transformation_mode="half_pixel",
        spatial_scale=0.75,
        output_width=3,
        sampling_ratio=1,
        mode=mode,
    )
    rois = np.array([[start, 0, 4 - start, 0]])
    assert start + (4 - start) == 4
    # one pixel: the point at x = 1 = W is inside (pixel 0), the others as the formula says
    x = np.array([[[[10.0]]]])
    want = exact_roi_align(x, rois, mode, True, 1, 3, 1, 0.75)
    assert 10 in want.ravel().tolist() and want[0, 0, 0, 1] == 10  # the middle point counts
    # three pixels: the point at x = 1 sits on pixel 1 and gives pixel 2 (inf) a weight of 0
    x3 = np.array([[[[np.inf, 5.0, np.inf]]]])
    for path in (jit.numpy_only, _compiled_path):
        with path():
            assert roi_align(x, rois, np.array([0]), **kwargs)[0, 0, 0, 1] == 10
            assert roi_align(x3, rois, np.array([0]), **kwargs)[0, 0, 0, 1] == 5.0
            np.testing.assert_allclose(roi_align(x, rois, np.array([0]), **kwargs), want, rtol=1e-12)


def test_a_point_of_a_huge_roi_on_minus_one() -> None:
    # x from -2^53 to 2^53 - 2 in 3 bins: the middle point is -2^53 + (2^54 - 2) / 2 = -1 exactly, while
    # 3 * (2^54 - 2) has no float64 of its own; the outer points lie far outside
    rois = np.array([[-(2.0**53), 0, 2.0**53 - 2, 0]])
    kwargs = dict(coordinate_transformation_mode="output_half_pixel", output_width=3, sampling_ratio=1)
    x = np.array([[[[10.0, 20.0]]]])
    for path in (jit.numpy_only, _compiled_path):
        with path():
            assert roi_align(x, rois, np.array([0]), **kwargs).ravel().tolist() == [0, 10, 0]


def _compiled_path():
    """The kernel's default path (compiled where numba is present) as a context, beside jit.numpy_only."""
    return contextlib.nullcontext()
