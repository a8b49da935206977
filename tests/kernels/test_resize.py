"""Tests for customops.kernels.resampling.resize (ONNX Resize-10..19, the union of the versions'
attributes)."""

from __future__ import annotations

import zlib

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import customops.kernels.resampling.resize as resize_module
from customops.errors import KernelError
from customops.kernels.resampling.resize import resize
from tests.helpers import backend_cases

COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
INT_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


# ---------------------------------------------------------------------------------------------
# ONNX backend node tests


BACKEND_CASES = backend_cases("test_resize", generator="resize")


def _attributes(node: onnx.NodeProto) -> dict:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}


def test_backend_cases_found() -> None:
    assert len(BACKEND_CASES) >= 39
    names = {c.name for c in BACKEND_CASES}
    assert {"test_resize_downsample_scales_linear_align_corners", "test_resize_tf_crop_and_resize"} <= names


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    for inputs, outputs in case.data_sets:
        present = iter(inputs)
        args = [next(present) if name else None for name in node.input]
        args += [None] * (4 - len(args))
        got = resize(*args, **_attributes(node))
        expected = outputs[0]
        assert got.dtype == expected.dtype
        assert got.shape == expected.shape
        assert got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)


# ---------------------------------------------------------------------------------------------
# Helpers: onnx.reference on a one-node model, and independent oracles written from the spec text


def reference(X, roi=None, scales=None, sizes=None, **attrs) -> np.ndarray:
    inputs = {"X": X, "roi": roi, "scales": scales, "sizes": sizes}
    names = [k if v is not None else "" for k, v in inputs.items()]
    while names[-1] == "":
        names.pop()
    elem = {"X": helper.np_dtype_to_tensor_dtype(X.dtype), "roi": TensorProto.DOUBLE}
    elem |= {"scales": TensorProto.FLOAT, "sizes": TensorProto.INT64}
    graph = helper.make_graph(
        [helper.make_node("Resize", names, ["Y"], **attrs)],
        "g",
        [helper.make_tensor_value_info(k, elem[k], None) for k, v in inputs.items() if v is not None],
        [helper.make_tensor_value_info("Y", elem["X"], None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    feed = {k: v for k, v in inputs.items() if v is not None}
    return ReferenceEvaluator(model).run(None, feed)[0]


def spec_coordinates(mode: str, n: int, length: int, scale: float, roi=(0.0, 1.0)) -> np.ndarray:
    """x_original per the spec text; length_resized in the denominators is scale * n (as the backend
    tests for align_corners with scales require)."""
    o = np.arange(length, dtype=np.float64)
    width = scale * n
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = n / 2 * (1 - length / width)
        return offset + (o + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if length > 1 else np.zeros(length)
    if mode == "align_corners":
        return o * (n - 1) / (width - 1) if length > 1 else np.zeros(length)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    start, end = roi
    if length > 1:
        return start * (n - 1) + o * (end - start) * (n - 1) / (width - 1)
    return np.full(length, 0.5 * (start + end) * (n - 1))


def keys(u: np.ndarray, a: float) -> np.ndarray:
    u = np.abs(u)
    return np.where(
        u <= 1,
        (a + 2) * u**3 - (a + 3) * u**2 + 1,
        np.where(u < 2, a * u**3 - 5 * a * u**2 + 8 * a * u - 4 * a, 0.0),
    )


def oracle_1d(v: np.ndarray, x: np.ndarray, mode: str, a: float = -0.75, exclude: bool = False) -> np.ndarray:
    """Interpolate the 1-D signal v at positions x: linear with np.interp (clamps at the edges),
    cubic with the four taps around floor(x), edge-clamped or excluded and renormalized."""
    n = v.size
    if mode == "linear":
        return np.interp(x, np.arange(n), v)
    f = np.floor(x)
    total = np.zeros(x.shape)
    wsum = np.zeros(x.shape)
    for t in (-1, 0, 1, 2):
        p = f + t
        w = keys(x - p, a)
        if exclude:
            w = np.where((p < 0) | (p > n - 1), 0.0, w)
        total += w * v[np.clip(p, 0, n - 1).astype(int)]
        wsum += w
    return total / np.where(wsum == 0, 1.0, wsum)  # all taps excluded: an extrapolated position


def oracle(X, coords: dict, mode: str, a: float = -0.75, exclude: bool = False, outside=None, fill=0.0):
    Y = X.astype(np.float64)
    shape = [len(coords[ax]) if ax in coords else n for ax, n in enumerate(X.shape)]
    if 0 in shape:
        return np.zeros(shape)
    for ax, x in coords.items():
        Y = np.apply_along_axis(oracle_1d, ax, Y, x, mode, a, exclude)
    if outside:
        for ax, mask in outside.items():
            index = [slice(None)] * Y.ndim
            index[ax] = mask
            Y[tuple(index)] = fill
    return Y


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance between float32 arrays in units in the last place."""
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.abs(ia - ib)


# ---------------------------------------------------------------------------------------------
# Against onnx.reference where it follows the spec


def _reference_configs(mode: str, coordinate: str, rng: np.random.Generator):
    shapes = [(2, 5, 4), (1, 3, 6, 5), (7,)]
    for i in range(6):
        shape = shapes[i % len(shapes)]
        rank = len(shape)
        attrs: dict = {"mode": mode, "coordinate_transformation_mode": coordinate}
        axes = list(range(rank))
        if i % 3 == 1 and rank > 1:
            axes = [rank - 1, -rank]  # negative and out of order
            attrs["axes"] = axes
        if mode == "nearest":
            attrs["nearest_mode"] = NEAREST_MODES[i % 4]
        else:
            attrs["antialias"] = int(i in (2, 3, 5))
            attrs["exclude_outside"] = int(i in (1, 3))
            if mode == "cubic" and i == 4:
                attrs["cubic_coeff_a"] = -0.5
        scales = sizes = roi = None
        if i % 2 == 0 and coordinate != "half_pixel_symmetric":
            scales = f32(rng.choice([0.5, 0.6, 0.75, 1.5, 2.0, 3.0, 0.35], size=len(axes)))
        else:
            sizes = i64(rng.integers(2, 10, size=len(axes)))
            if i == 5:
                attrs["keep_aspect_ratio_policy"] = "not_smaller"
        if coordinate == "tf_crop_and_resize":
            start = rng.uniform(-0.3, 0.5, size=len(axes))
            roi = np.concatenate([start, start + rng.uniform(0.2, 1.0, size=len(axes))])
            attrs["extrapolation_value"] = -3.5
        X = rng.normal(size=shape)
        yield X, roi, scales, sizes, attrs


@pytest.mark.parametrize("coordinate", [c for c in COORDINATE_MODES if c != "tf_half_pixel_for_nn"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_against_onnx_reference(mode, coordinate) -> None:
    # Excluded where onnx.reference departs from the spec (each has its own test below):
    # tf_half_pixel_for_nn (it raises), output length 1 with pytorch_half_pixel / tf_crop_and_resize,
    # half_pixel_symmetric with a fractional scale * length (it can pick the wrong neighbour; here it
    # runs with sizes only). Its cubic coefficients are computed in float32 (cubic_coeff_a is a
    # float32 scalar), hence the looser tolerance.
    rng = np.random.default_rng(zlib.crc32(f"{mode}/{coordinate}".encode()))
    tol = 1e-5 if mode == "cubic" else 1e-10
    checked = 0
    for X, roi, scales, sizes, attrs in _reference_configs(mode, coordinate, rng):
        got = resize(X, roi, scales, sizes, **attrs)
        if coordinate in ("pytorch_half_pixel", "tf_crop_and_resize") and 1 in got.shape:
            continue
        if "axes" in attrs:  # onnx.reference does not accept negative axes
            attrs = attrs | {"axes": [a % X.ndim for a in attrs["axes"]]}
        expected = reference(X, roi, scales, sizes, **attrs)
        assert got.shape == expected.shape, attrs
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=str(attrs))
        checked += 1
    assert checked >= 4


# ---------------------------------------------------------------------------------------------
# Against the independent oracles, every coordinate mode (including those onnx.reference gets wrong)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    mode=st.sampled_from(["linear", "cubic"]),
    coordinate=st.sampled_from(COORDINATE_MODES),
    exclude=st.booleans(),
)
def test_against_oracle(data, mode, coordinate, exclude) -> None:
    shape = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), label="shape")
    rank = len(shape)
    axes = data.draw(st.permutations(range(rank)).flatmap(lambda p: st.just(p[: max(1, rank - 1)])))
    use_sizes = data.draw(st.booleans(), label="sizes")
    X = np.random.default_rng(data.draw(st.integers(0, 2**16))).normal(size=shape)
    scale_values = [data.draw(st.sampled_from([0.5, 0.6, 1.0, 1.3, 2.0, 2.5, 4.0])) for _ in axes]
    scales = sizes = roi = None
    if use_sizes:
        sizes = i64([data.draw(st.integers(1, 9)) for _ in axes])
        lengths = [int(s) for s in sizes]
        used = [m / shape[a] for m, a in zip(lengths, axes, strict=True)]
    else:
        scales = f32(scale_values)
        lengths = [int(np.floor(float(s) * shape[a])) for s, a in zip(scales, axes, strict=True)]
        used = [float(s) for s in scales]
    rois = [(0.0, 1.0)] * len(axes)
    if coordinate == "tf_crop_and_resize":
        rois = [
            (data.draw(st.sampled_from([-0.25, 0.0, 0.3])), data.draw(st.sampled_from([0.6, 1.0, 1.2])))
            for _ in axes
        ]
        roi = np.array([r[0] for r in rois] + [r[1] for r in rois])
    coords, outside = {}, {}
    for a, m, s, r in zip(axes, lengths, used, rois, strict=True):
        coords[a] = spec_coordinates(coordinate, shape[a], m, s, r)
        if coordinate == "tf_crop_and_resize":
            outside[a] = (coords[a] < 0) | (coords[a] > shape[a] - 1)
    got = resize(
        X, roi, scales, sizes, axes=list(axes), mode=mode, coordinate_transformation_mode=coordinate,
        exclude_outside=int(exclude), extrapolation_value=2.5,
    )  # fmt: skip
    expected = oracle(X, coords, mode, exclude=exclude, outside=outside, fill=2.5)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Hand-computed cases: the decisions in docs/semantics.md


def test_scale_given_enters_the_coordinate_transform() -> None:
    # 4 -> floor(4 * 0.6) = 2 outputs at x = (o + 0.5) / 0.6 - 0.5 (not / 0.5 = out / in)
    X = np.array([0.0, 10.0, 20.0, 30.0])
    s = float(np.float32(0.6))
    expected = np.interp((np.arange(2) + 0.5) / s - 0.5, np.arange(4), X)
    np.testing.assert_allclose(resize(X, scales=f32([0.6]), mode="linear"), expected, rtol=1e-12)


def test_keep_aspect_ratio_policy_scale_enters_the_transform() -> None:
    X = np.arange(15, dtype=np.float64).reshape(3, 5)
    # not_larger: scale = min(4/3, 4/5) = 0.8 -> out = (round(2.4), round(4.0)) = (2, 4)
    got = resize(X, sizes=i64([4, 4]), mode="linear", keep_aspect_ratio_policy="not_larger")
    coords = {a: (np.arange(m) + 0.5) / 0.8 - 0.5 for a, m in ((0, 2), (1, 4))}
    np.testing.assert_allclose(got, oracle(X, coords, "linear"), rtol=1e-12)
    # not_smaller: scale = max(4/3, 4/5) -> out = (4, round(6.67) = 7); round_int rounds half up
    assert resize(X, sizes=i64([4, 4]), keep_aspect_ratio_policy="not_smaller").shape == (4, 7)
    assert resize(np.zeros((2, 3)), sizes=i64([3, 100]), keep_aspect_ratio_policy="not_larger").shape == (
        3,
        5,
    )
    # axes outside the list keep their length
    assert resize(
        np.zeros((2, 3, 5)), sizes=i64([6, 1]), axes=[0, 2], keep_aspect_ratio_policy="not_smaller"
    ).shape == (6, 3, 15)


def test_align_corners_with_scales_uses_scale_times_length() -> None:
    # length_resized = 4 * 0.6 = 2.4 (the backend test's rule): x = [0, 3 / 1.4]
    X = np.array([1.0, 2.0, 3.0, 4.0])
    got = resize(X, scales=f32([0.6]), mode="linear", coordinate_transformation_mode="align_corners")
    width = 4 * float(np.float32(0.6))
    np.testing.assert_allclose(got, [1.0, 1.0 + 3 / (width - 1)], rtol=1e-12)


def test_tf_crop_and_resize_output_length_ignores_roi() -> None:
    # output = floor(4 * 2) = 8, as ONNX shape inference, onnx.reference and ORT compute it
    X = np.array([1.0, 2.0, 3.0, 4.0])
    got = resize(
        X,
        np.array([0.25, 0.75]),
        f32([2]),
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
    )
    x = 0.25 * 3 + np.arange(8) * 0.5 * 3 / 7
    np.testing.assert_allclose(got, 1 + x, rtol=1e-12)


def test_tf_crop_and_resize_without_roi_is_the_whole_input() -> None:
    X = np.random.default_rng(3).normal(size=(3, 4))
    for absent in (None, np.array([])):
        got = resize(
            X, absent, f32([1.5, 2]), mode="cubic", coordinate_transformation_mode="tf_crop_and_resize"
        )
        expected = resize(
            X, None, f32([1.5, 2]), mode="cubic", coordinate_transformation_mode="align_corners"
        )
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_tf_crop_and_resize_extrapolation() -> None:
    X = np.array([1.0, 2.0, 3.0, 4.0])
    roi = np.array([-0.5, 1.5])
    for mode, middle in (("nearest", 2.0), ("linear", 2.5), ("cubic", 2.5)):
        got = resize(
            X, roi, None, i64([5]), mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
            extrapolation_value=9.0,
        )  # fmt: skip
        assert got.tolist() == [9.0, 1.0, middle, 4.0, 9.0]
    # the extrapolated value is exact in every output position, even along several axes
    X2 = np.arange(12.0).reshape(3, 4)
    got = resize(
        X2, np.array([-1.0, 0.0, 2.0, 1.0]), None, i64([4, 3]), mode="cubic",
        coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.1,
    )  # fmt: skip
    # rows: x = -2, 0, 2, 4 on an axis of length 3 -> rows 0 and 3 are outside
    assert (got[[0, 3]] == 0.1).all()
    assert not (got[1:3] == 0.1).any()


def test_half_pixel_symmetric_lands_on_the_right_neighbour() -> None:
    # 7 -> 5 with scale 0.75: x = 1/3, 5/3, 3, 13/3, 17/3 (onnx.reference returns X[2] at x = 3)
    X = np.arange(7.0) ** 2
    got = resize(X, scales=f32([0.75]), mode="linear", coordinate_transformation_mode="half_pixel_symmetric")
    x = np.array([1 / 3, 5 / 3, 3, 13 / 3, 17 / 3])
    np.testing.assert_allclose(got, np.interp(x, np.arange(7), X), rtol=1e-12)
    assert got[2] == 9.0


def test_pytorch_half_pixel_output_length_one_maps_to_zero() -> None:
    # spec: length_resized > 1 ? ... : 0 (onnx.reference uses -0.5)
    X = np.array([1.0, 2.0, 4.0, 3.0])
    for mode in ("nearest", "linear", "cubic"):
        assert resize(
            X, sizes=i64([1]), mode=mode, coordinate_transformation_mode="pytorch_half_pixel"
        ).tolist() == [1.0]


def test_align_corners_output_length_one_maps_to_zero() -> None:
    X = np.array([5.0, 2.0, 4.0, 3.0])
    for kwargs in ({"sizes": i64([1])}, {"scales": f32([0.25])}, {"scales": f32([0.4])}):
        got = resize(X, mode="cubic", coordinate_transformation_mode="align_corners", **kwargs)
        assert got.tolist() == [5.0]


def test_tf_half_pixel_for_nn_follows_its_formula() -> None:
    X = np.array([10, 20, 30, 40])
    # x = (o + 0.5) / 2 = 0.25, 0.75, ...; round_prefer_floor; 4 clamps to 3
    got = resize(X, scales=f32([2]), coordinate_transformation_mode="tf_half_pixel_for_nn")
    assert got.tolist() == [10, 20, 20, 30, 30, 40, 40, 40]
    # at scale 1 it is a half-pixel shift, not the identity (onnx.reference and ORT skip the axis)
    got = resize(
        X, scales=f32([1]), coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="ceil"
    )
    assert got.tolist() == [20, 30, 40, 40]


def test_nearest_rounding_and_clamping() -> None:
    X = np.arange(4)
    # asymmetric, scale 2: x = 0, .5, 1, ..., 3.5
    expected = {
        "round_prefer_floor": [0, 0, 1, 1, 2, 2, 3, 3],
        "round_prefer_ceil": [0, 1, 1, 2, 2, 3, 3, 3],
        "floor": [0, 0, 1, 1, 2, 2, 3, 3],
        "ceil": [0, 1, 1, 2, 2, 3, 3, 3],
    }
    for nearest_mode, values in expected.items():
        got = resize(
            X, scales=f32([2]), coordinate_transformation_mode="asymmetric", nearest_mode=nearest_mode
        )
        assert got.tolist() == values
    # half_pixel, scale 2: x = -0.25, 0.25, ..., 3.25; ceil(3.25) = 4 is clamped to 3
    got = resize(X, scales=f32([2]), nearest_mode="ceil")
    assert got.tolist() == [0, 1, 1, 2, 2, 3, 3, 3]
    # round_prefer_floor at x = -0.25 and -0.75 (downscale with asymmetric cannot go below 0)
    got = resize(X, scales=f32([2]), nearest_mode="round_prefer_ceil")
    assert got.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_coordinates_are_exact_at_rounding_boundaries() -> None:
    # float32 coordinate arithmetic (ORT) lands on the other side of these boundaries
    X = np.arange(30).reshape(6, 5)
    got = resize(
        X, scales=f32([0.6, 1]), coordinate_transformation_mode="pytorch_half_pixel", nearest_mode="floor"
    )
    assert got[:, 0].tolist() == [0, 5, 15]  # x = 0.33, 1.9999999 (scale is 0.6000000238), 3.67
    got = resize(
        X, scales=f32([1, 0.6]), coordinate_transformation_mode="half_pixel_symmetric", nearest_mode="floor"
    )
    assert got[0].tolist() == [0, 2, 3]  # x = 0.33, exactly 2, 3.67
    # a tie from sizes: 6 -> 5, half_pixel, x = (o + 0.5) * 6 / 5 - 0.5 = 2.5 at o = 2
    got = resize(np.arange(6), sizes=i64([5]))
    assert got.tolist() == [0, 1, 2, 4, 5]


def test_antialias_is_plain_interpolation_when_upsampling() -> None:
    X = np.random.default_rng(4).normal(size=(4, 5))
    for mode in ("linear", "cubic"):
        for exclude in (0, 1):
            plain = resize(X, scales=f32([1.5, 2]), mode=mode, exclude_outside=exclude)
            aa = resize(X, scales=f32([1.5, 2]), mode=mode, exclude_outside=exclude, antialias=1)
            np.testing.assert_allclose(aa, plain, rtol=1e-13, atol=1e-13)


def test_antialias_downsampling_hand_computed() -> None:
    # linear, scale 1/2 on 8 values: support 2, taps at distance d get weight 1 - |d|/2.
    # Output 0 sits at x = 0.5: taps -1..2 -> weights .25 .75 .75 .25 (edge-clamped tap -1 -> X[0]);
    # with exclude_outside the tap at -1 is dropped and the rest renormalized.
    X = np.array([5.0, 1.0, 9.0, 2.0, 7.0, 3.0, 8.0, 0.0])
    got = resize(X, scales=f32([0.5]), mode="linear", antialias=1)
    assert got[0] == pytest.approx((0.25 * 5 + 0.75 * 5 + 0.75 * 1 + 0.25 * 9) / 2)
    assert got[1] == pytest.approx((0.25 * 1 + 0.75 * 9 + 0.75 * 2 + 0.25 * 7) / 2)
    got = resize(X, scales=f32([0.5]), mode="linear", antialias=1, exclude_outside=1)
    assert got[0] == pytest.approx((0.75 * 5 + 0.75 * 1 + 0.25 * 9) / 1.75)


def test_antialias_ignored_by_nearest() -> None:
    X = np.random.default_rng(5).normal(size=(6, 7))
    for scales in (f32([0.5, 0.3]), f32([2, 1.5])):
        np.testing.assert_array_equal(resize(X, scales=scales, antialias=1), resize(X, scales=scales))


def test_roi_is_ignored_unless_tf_crop_and_resize() -> None:
    X = np.random.default_rng(6).normal(size=(3, 4))
    expected = resize(X, scales=f32([2, 2]), mode="linear")
    for roi in (np.array([0.1, 0.2, 0.3, 0.4]), np.array([7.0]), np.array([np.nan] * 4), np.zeros((2, 2))):
        np.testing.assert_array_equal(resize(X, roi, f32([2, 2]), mode="linear"), expected)


def test_non_finite_inputs_only_reach_outputs_that_use_them() -> None:
    X = np.arange(64, dtype=np.float64).reshape(8, 8)
    X[3, 4] = np.inf
    X[6, 1] = np.nan
    finite = X.copy()
    finite[3, 4] = finite[6, 1] = 0.0
    for mode in ("linear", "cubic"):
        got = resize(X, scales=f32([2, 2]), mode=mode)
        clean = resize(finite, scales=f32([2, 2]), mode=mode)
        # outputs whose taps (with nonzero weight) miss both positions are unaffected
        coords = (np.arange(16) + 0.5) / 2 - 0.5
        reach = 1 if mode == "linear" else 2
        near_r = (np.abs(coords - 3) < reach)[:, None] & (np.abs(coords - 4) < reach)[None, :]
        near_n = (np.abs(coords - 6) < reach)[:, None] & (np.abs(coords - 1) < reach)[None, :]
        far = ~(near_r | near_n)
        np.testing.assert_allclose(got[far], clean[far], rtol=1e-12)
        assert not np.isfinite(got[near_r | near_n]).any()


def test_identity_returns_a_new_equal_array() -> None:
    X = np.random.default_rng(7).normal(size=(2, 3)).astype(np.float32)
    got = resize(X, scales=f32([1, 1]), mode="cubic")
    np.testing.assert_array_equal(got, X)
    assert got is not X and not np.shares_memory(got, X)


@pytest.mark.parametrize(
    "config",
    [
        {"scales": f32([1, 2.5, 0.7]), "mode": "cubic"},
        {"scales": f32([0.3, 1, 0.45]), "mode": "linear", "antialias": 1},
        {"sizes": i64([7, 3, 9]), "mode": "cubic", "antialias": 1, "exclude_outside": 1},
        {
            "roi": np.array([0.9, -0.1, 0.2, 0.1, 1.2, 0.7]),  # reversed on axis 0
            "sizes": i64([6, 5, 11]),
            "mode": "linear",
            "coordinate_transformation_mode": "tf_crop_and_resize",
            "extrapolation_value": -1.0,
        },
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.complex64])
def test_blocks_and_tiles_do_not_change_results(monkeypatch, config, dtype) -> None:
    # The arrays here fit one block and one tile; force many of both (and every block layout).
    X = _sample(dtype, shape=(9, 6, 13), seed=11)
    whole = resize(X, **config)
    monkeypatch.setattr(resize_module, "_BLOCK_LENGTHS", (2, 3))
    monkeypatch.setattr(resize_module, "_BAND_WIDTH", 10**9)
    monkeypatch.setattr(resize_module, "_MIDDLE_BLOCK", 2)
    monkeypatch.setattr(resize_module, "_TILE_BYTES", 1)
    monkeypatch.setattr(resize_module, "_GEMM_LIMIT", 1)
    tiled = resize(X, **config)
    assert tiled.dtype == whole.dtype and tiled.shape == whole.shape
    np.testing.assert_allclose(
        tiled, whole, rtol=1e-6 if dtype in (np.float32, np.complex64) else 1e-12, atol=1e-6
    )
    if dtype == np.float64:
        moved = resize(np.ascontiguousarray(np.moveaxis(X, 2, 0)), **_moved(config))
        np.testing.assert_allclose(np.moveaxis(moved, 0, 2), whole, rtol=1e-12, atol=1e-12)


def _moved(config: dict) -> dict:
    """The same resize for an input whose last axis was moved to the front."""
    out = dict(config)
    for key in ("scales", "sizes"):
        if key in out:
            v = out[key]
            out[key] = np.concatenate([v[2:], v[:2]])
    if "roi" in out:
        r = out["roi"]
        out["roi"] = np.concatenate([r[2:3], r[0:2], r[5:6], r[3:5]])
    return out


# ---------------------------------------------------------------------------------------------
# Element types


def _sample(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    if dtype is np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(
            dtype
        )
    if np.dtype(dtype).kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


CONFIGS = (
    {"scales": f32([2, 1.5])},
    {"scales": f32([0.5, 0.75]), "antialias": 1},
    {"sizes": i64([5, 3]), "coordinate_transformation_mode": "align_corners"},
    {
        "roi": np.array([-0.2, 0.1, 0.9, 1.1]),
        "sizes": i64([4, 5]),
        "coordinate_transformation_mode": "tf_crop_and_resize",
    },
)


@pytest.mark.parametrize("dtype", (*INT_DTYPES, np.bool_), ids=lambda d: np.dtype(d).name)
def test_integer_and_bool_types(dtype) -> None:
    X = _sample(dtype)
    for mode in ("nearest", "linear", "cubic"):
        for config in CONFIGS:
            got = resize(X, mode=mode, extrapolation_value=-7.5, **config)
            exact = resize(X.astype(np.float64), mode=mode, extrapolation_value=-7.5, **config)
            assert got.dtype == X.dtype and got.flags.c_contiguous
            # extrapolation_value -7.5 rounds half to even as interpolated values do
            if dtype is np.bool_:
                np.testing.assert_array_equal(got, np.rint(exact) >= 1)
            else:
                info = np.iinfo(dtype)
                np.testing.assert_array_equal(got, np.clip(np.rint(exact), info.min, info.max).astype(dtype))


def test_integer_rounding_is_half_to_even_and_saturates() -> None:
    # asymmetric, scale 2: x = o / 2 -> values 0, .5, 1, 1.5, 2, 2.5, 3, 3
    X = np.array([0, 1, 2, 3], dtype=np.int32)
    got = resize(X, scales=f32([2]), mode="linear", coordinate_transformation_mode="asymmetric")
    assert got.tolist() == [0, 0, 1, 2, 2, 2, 3, 3]
    B = np.array([False, True])
    got = resize(B, scales=f32([3]), mode="linear", coordinate_transformation_mode="asymmetric")
    assert got.tolist() == [False, False, True, True, True, True]  # 0, 1/3, 2/3, 1, 1, 1
    # cubic overshoots past the type's range: clamped, never wrapped
    U = np.array([0, 255, 255, 0], dtype=np.uint8)
    exact = resize(U.astype(np.float64), scales=f32([3]), mode="cubic")
    got = resize(U, scales=f32([3]), mode="cubic")
    assert exact.max() > 255 and exact.min() < 0
    assert got.tolist() == np.clip(np.rint(exact), 0, 255).astype(np.uint8).tolist()
    for dtype in (np.int64, np.uint64):
        info = np.iinfo(dtype)
        top = np.array([info.max, info.max, info.max - 5], dtype=dtype)
        got = resize(top, scales=f32([2]), mode="cubic")
        assert got.dtype == dtype and int(got.min()) >= info.max - 2**12 and (got >= 0).all()
        # nearest copies the values exactly
        assert resize(top, scales=f32([2])).tolist() == [int(v) for v in np.repeat(top, 2)]
    got = resize(
        np.array([1, 2], np.int8), np.array([-1.0, 1.0]), None, i64([3]), mode="linear",
        extrapolation_value=1e9, coordinate_transformation_mode="tf_crop_and_resize",
    )  # fmt: skip
    assert got.tolist() == [127, 1, 2]


@pytest.mark.parametrize("dtype", (np.complex64, np.complex128))
def test_complex_types_use_real_weights(dtype) -> None:
    X = _sample(dtype, shape=(3, 4, 2))
    for mode in ("nearest", "linear", "cubic"):
        for config in (
            {"scales": f32([2, 1.5, 1])},
            {"scales": f32([1, 0.5, 2]), "antialias": 1},
            {"sizes": i64([4, 4, 3])},
        ):
            got = resize(X, mode=mode, **config)
            real = resize(X.real.astype(np.float64), mode=mode, **config)
            imag = resize(X.imag.astype(np.float64), mode=mode, **config)
            assert got.dtype == X.dtype and got.flags.c_contiguous
            tol = 1e-6 if dtype == np.complex64 else 1e-13
            np.testing.assert_allclose(got, real + 1j * imag, rtol=tol, atol=tol)


def test_float32_is_computed_in_float64() -> None:
    # within 1 ulp of the float64 reference result rounded to float32, even where terms cancel
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1, 2, 20, 24)).astype(np.float32)
    for mode, scales, aa in (
        ("linear", [1, 1, 2, 2], 0),
        ("cubic", [1, 1, 2.5, 1.5], 0),
        ("cubic", [1, 1, 0.3, 0.5], 1),
    ):
        got = resize(X, scales=f32(scales), mode=mode, antialias=aa)
        exact = reference(X.astype(np.float64), scales=f32(scales), mode=mode, antialias=aa)
        if mode == "cubic":  # onnx.reference's cubic weights are float32; use our float64 result
            exact = resize(X.astype(np.float64), scales=f32(scales), mode=mode, antialias=aa)
        assert got.dtype == np.float32
        assert ulp_distance(got, exact.astype(np.float32)).max() <= 1


def test_float16() -> None:
    X = _sample(np.float16, shape=(4, 5))
    for mode in ("nearest", "linear", "cubic"):
        got = resize(X, scales=f32([1.5, 2]), mode=mode)
        assert got.dtype == np.float16
        expected = resize(X.astype(np.float64), scales=f32([1.5, 2]), mode=mode).astype(np.float16)
        np.testing.assert_array_equal(got, expected)


def test_strings_nearest_follow_the_numeric_indices() -> None:
    codes = np.arange(12).reshape(3, 4)
    X = np.array([f"s{c}" for c in codes.ravel()], dtype=object).reshape(3, 4)
    lookup = np.array([f"s{c}" for c in range(12)], dtype=object)
    for config in (*CONFIGS[:3], {"scales": f32([0.7, 3]), "nearest_mode": "ceil"}):
        got = resize(X, **config)
        assert got.dtype == object and got.flags.c_contiguous
        assert got.tolist() == lookup[resize(codes, **config)].tolist()
    with pytest.raises(KernelError, match="strings allow only 'nearest'"):
        resize(X, scales=f32([2, 2]), mode="linear")
    with pytest.raises(KernelError, match="extrapolation_value"):
        resize(X, **CONFIGS[3])


# ---------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple),
    mode=st.sampled_from(["nearest", "linear", "cubic"]),
    coordinate=st.sampled_from(
        [c for c in COORDINATE_MODES if c not in ("tf_crop_and_resize", "tf_half_pixel_for_nn")]
    ),
    nearest_mode=st.sampled_from(NEAREST_MODES),
    dtype=st.sampled_from([np.float32, np.float64, np.int8, np.uint16, np.int64, np.bool_, np.complex64]),
    use_sizes=st.booleans(),
    antialias=st.integers(0, 1),
    exclude=st.integers(0, 1),
)
def test_scale_one_is_the_identity(
    shape, mode, coordinate, nearest_mode, dtype, use_sizes, antialias, exclude
) -> None:
    X = _sample(dtype, shape=shape, seed=len(shape))
    kwargs = {"sizes": i64(shape)} if use_sizes else {"scales": f32([1] * len(shape))}
    got = resize(
        X, mode=mode, coordinate_transformation_mode=coordinate, nearest_mode=nearest_mode,
        antialias=antialias, exclude_outside=exclude, **kwargs,
    )  # fmt: skip
    assert got.dtype == X.dtype
    np.testing.assert_array_equal(got, X)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    factors=st.lists(st.integers(1, 4), min_size=4, max_size=4),
)
def test_nearest_integer_upscale_is_repeat(shape, factors) -> None:
    X = _sample(np.int32, shape=shape)
    factors = factors[: len(shape)]
    got = resize(X, scales=f32(factors), coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    expected = X
    for axis, k in enumerate(factors):
        expected = np.repeat(expected, k, axis=axis)
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
    scale=st.sampled_from([0.3, 0.5, 0.75, 1.25, 2.0, 3.0]),
    coordinate=st.sampled_from(COORDINATE_MODES[:-1]),
    antialias=st.integers(0, 1),
)
def test_linear_stays_within_the_input_range(shape, scale, coordinate, antialias) -> None:
    X = _sample(np.float64, shape=shape, seed=sum(shape))
    got = resize(
        X,
        scales=f32([scale] * len(shape)),
        mode="linear",
        coordinate_transformation_mode=coordinate,
        antialias=antialias,
    )
    if got.size:
        assert X.min() - 1e-12 <= got.min() and got.max() <= X.max() + 1e-12


# ---------------------------------------------------------------------------------------------
# Empty tensors and shapes


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_empty_tensors(mode) -> None:
    assert resize(np.zeros((0, 3)), scales=f32([2, 2]), mode=mode).shape == (0, 6)
    assert resize(np.zeros((2, 0), np.int8), scales=f32([2, 2]), mode=mode).shape == (4, 0)
    assert resize(np.zeros((0, 3)), sizes=i64([5]), axes=[1], mode=mode).shape == (0, 5)
    assert resize(np.ones((2, 3)), sizes=i64([0, 5]), mode=mode).shape == (0, 5)
    assert resize(np.ones((2, 3)), scales=f32([0.1, 1]), mode=mode).shape == (0, 3)
    assert resize(
        np.ones((2, 3)), sizes=i64([0, 5]), keep_aspect_ratio_policy="not_larger", mode=mode
    ).shape == (0, 0)
    out = resize(np.zeros((0, 3), dtype=object), scales=f32([2, 2]))
    assert out.shape == (0, 6) and out.dtype == object
    with pytest.raises(KernelError, match="length 0 and cannot be resized to 4"):
        resize(np.zeros((0, 3)), sizes=i64([4, 3]), mode=mode)


def test_rank_zero_and_no_axes() -> None:
    assert resize(np.array(5.0)).tolist() == 5.0
    X = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(resize(X, scales=f32([]), axes=[]), X)


def test_any_rank_and_axis_subset() -> None:
    X = np.random.default_rng(9).normal(size=(2, 3, 4, 3, 2))
    got = resize(X, scales=f32([2, 0.5]), axes=[-2, 1], mode="linear")
    assert got.shape == (2, 1, 4, 6, 2)
    coords = {3: (np.arange(6) + 0.5) / 2 - 0.5, 1: (np.arange(1) + 0.5) / 0.5 - 0.5}
    np.testing.assert_allclose(got, oracle(X, coords, "linear"), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Invalid configurations


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "bicubic"}, "mode 'bicubic' is not one of 'nearest', 'linear', 'cubic'"),
        (
            {"coordinate_transformation_mode": "centre"},
            "coordinate_transformation_mode 'centre' is not one of",
        ),
        ({"nearest_mode": "round"}, "nearest_mode 'round' is not one of"),
        ({"keep_aspect_ratio_policy": "fit"}, "keep_aspect_ratio_policy 'fit' is not one of"),
        ({"antialias": 2}, "antialias 2 is not the integer 0 or 1"),
        ({"exclude_outside": -1}, "exclude_outside -1 is not the integer 0 or 1"),
        ({"cubic_coeff_a": float("nan"), "mode": "cubic"}, "cubic_coeff_a nan is not finite"),
        ({"extrapolation_value": "x"}, "extrapolation_value 'x' is not a number"),
        ({"sizes": i64([4, 4])}, "scales and sizes are both given"),
        ({"scales": None}, "neither scales nor sizes is given"),
        ({"scales": np.array([], np.float32)}, "neither scales nor sizes is given"),
        ({"scales": f32([2, 2, 2])}, "scales has 3 entries, expected 2"),
        ({"scales": None, "sizes": i64([4])}, "sizes has 1 entries, expected 2"),
        ({"scales": f32([2, 0])}, "scale 0.0 is not a positive finite number"),
        ({"scales": f32([2, -1])}, "scale -1.0 is not a positive finite number"),
        ({"scales": f32([2, np.inf])}, "scale inf is not a positive finite number"),
        ({"scales": f32([[2, 2]])}, r"scales must be 1-D, got shape \(1, 2\)"),
        ({"scales": None, "sizes": i64([4, -1])}, "size -1 is negative"),
        ({"scales": None, "sizes": f32([4, 4])}, "sizes have dtype float32, expected int64"),
        ({"axes": [0, 2]}, r"axes value 2 is out of range \[-2, 1\] for rank 2"),
        ({"axes": [0, -2]}, r"axes \[0, -2\] refer to the same axis more than once"),
        ({"axes": [0.5, 1.0]}, "axes entry 0.5 is not an integer"),
        (
            {"roi": np.array([0.0, 1.0]), "coordinate_transformation_mode": "tf_crop_and_resize"},
            "roi has 2 entries, expected 4",
        ),
        (
            {"roi": np.array([0, 0, np.nan, 1]), "coordinate_transformation_mode": "tf_crop_and_resize"},
            "is not finite",
        ),
        ({"scales": f32([2, 1e30])}, "asks for an output length of"),
    ],
)
def test_invalid_configurations(kwargs, message) -> None:
    X = np.zeros((2, 3), dtype=np.float32)
    args = {"scales": f32([2, 2])} | kwargs
    with pytest.raises(KernelError, match=message):
        resize(X, **args)


def test_tf_crop_and_resize_lands_exactly_on_the_last_input_element() -> None:
    # x = -1.25 + 11 * 6.25 / 11 = 5 exactly; evaluated naively it is 5.000000000000001 (outside: extrapolated)
    x = np.arange(6, dtype=np.float32)
    roi = np.array([-0.25, 1.0])
    y = resize(
        x,
        roi,
        np.array([2], np.float32),
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=-1,
    )
    assert y[-1] == 5.0 and y[0] == -1.0


def test_cubic_coeff_a_is_ignored_outside_cubic_mode() -> None:
    x = np.array([1.0, 2.0], np.float32)
    assert resize(x, scales=np.array([1], np.float32), cubic_coeff_a=float("inf")).tolist() == [1.0, 2.0]
    with pytest.raises(KernelError, match="cubic_coeff_a"):
        resize(x, scales=np.array([2], np.float32), mode="cubic", cubic_coeff_a=float("inf"))
