"""GridSample: the kernel against a slow float64 scalar re-derivation of the spec's formulas, hand-computed
edge cases, every element type through rewrite + customops.InferenceSession, invalid inputs."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.spatial.grid_sample import bind as bind_grid_sample
from customops.kernels.spatial.grid_sample import grid_sample
from tests.helpers import backend_cases, one_node_model, run_builtin, run_custom

F32 = np.float32
MODES = ("nearest", "linear", "cubic")
PADDINGS = ("zeros", "border", "reflection")

# ---------------------------------------------------------------------------------------------
# the spec's formulas, one output element at a time, in Python floats (written from the operator text,
# independently of the kernel): the padding mode gives values to the pixels outside the image (reflection
# by repeated mirroring of the tap's pixel), then the padded image is interpolated at the location


def _bounds(length: int, align: bool) -> tuple[float, float]:
    """Pixel coordinates of the normalized borders -1 and 1."""
    return (0.0, length - 1.0) if align else (-0.5, length - 0.5)


def _mirror(x: float, lo: float, hi: float) -> float:
    """Reflect x about lo and hi until it lies in [lo, hi] (the spec's "keep being reflected")."""
    if lo == hi:
        return lo
    while x < lo or x > hi:
        x = 2 * lo - x if x < lo else 2 * hi - x
    return x


def _keys(d: float, a: float = -0.75) -> float:
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    if d < 2:
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a
    return 0.0


def _position(u: float, length: int, align: bool) -> float:
    """The pixel coordinate of normalized u: the location itself, whatever the padding mode."""
    return (u + 1) / 2 * (length - 1) if align else ((u + 1) * length - 1) / 2


def _tap(i: int, length: int, align: bool, padding: str) -> int | None:
    """The pixel a tap at integer i reads, None for zeros outside."""
    if 0 <= i < length:
        return i
    if padding == "zeros":
        return None
    if padding == "border":
        return min(max(i, 0), length - 1)
    return int(_mirror(float(i), *_bounds(length, align)))


def _taps(x: float, mode: str) -> list[tuple[int, float]]:
    if mode == "nearest":
        return [(round(x), 1.0)]  # Python's round: half to even
    first = math.floor(x)
    if mode == "linear":
        return [(first, 1 - (x - first)), (first + 1, x - first)]
    return [(first + k, _keys(x - (first + k))) for k in (-1, 0, 1, 2)]


def scalar_grid_sample(X: np.ndarray, grid: np.ndarray, align: int, mode: str, padding: str) -> np.ndarray:
    n, c, *spatial = X.shape
    r = len(spatial)
    out = np.zeros((n, c, *grid.shape[1:-1]))
    for b in range(n):
        for o in itertools.product(*(range(d) for d in grid.shape[1:-1])):
            us = [float(grid[(b, *o, r - 1 - a)]) for a in range(r)]
            xs = [_position(us[a], spatial[a], bool(align)) for a in range(r)]
            for ch in range(c):
                total = 0.0
                for combo in itertools.product(*(_taps(x, mode) for x in xs)):
                    pixel = [_tap(i, spatial[a], bool(align), padding) for a, (i, _) in enumerate(combo)]
                    weight = math.prod(w for _, w in combo)
                    if None not in pixel and weight != 0:
                        total += weight * float(X[(b, ch, *pixel)])
                out[(b, ch, *o)] = total
    return out


def _random_case(rng: np.random.Generator, rank: int) -> tuple[np.ndarray, np.ndarray]:
    spatial = [int(rng.integers(1, 5)) for _ in range(rank)]
    out = [int(rng.integers(1, 4)) for _ in range(rank)]
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    X = rng.normal(size=(n, c, *spatial))
    g = rng.uniform(-1.6, 1.6, size=(n, *out, rank))
    g.ravel()[:: max(1, g.size // 3)] = rng.choice([-1.0, 1.0, 0.0, 3.7, -5.25])  # borders, far out
    return X, g


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_matches_the_scalar_rederivation(mode, padding, align, rank):
    rng = np.random.default_rng([rank, align, PADDINGS.index(padding), MODES.index(mode)])
    for _ in range(6):
        X, g = _random_case(rng, rank)
        expected = scalar_grid_sample(X, g, align, mode, padding)
        got = grid_sample(X, g, align_corners=align, mode=mode, padding_mode=padding)
        assert got.dtype == np.float64 and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# hand-computed edge cases: X = [10, 20, 30, 40] on one row (1x1x1x4), y = 0 on the single row

ROW = np.array([[[[10.0, 20.0, 30.0, 40.0]]]])


def _at(u: float, **attrs: object) -> float:
    return float(grid_sample(ROW, np.array([[[[u, 0.0]]]]), **attrs)[0, 0, 0, 0])


@pytest.mark.parametrize(
    ("u", "attrs", "expected"),
    [
        # on the borders: align 0 puts -1 on pixel 0's outer edge (x = -0.5), align 1 on its centre
        (-1.0, {"padding_mode": "zeros"}, 5.0),
        (-1.0, {"padding_mode": "border"}, 10.0),
        (-1.0, {"padding_mode": "reflection"}, 10.0),
        (1.0, {"padding_mode": "zeros"}, 20.0),
        (-1.0, {"align_corners": 1}, 10.0),
        (1.0, {"align_corners": 1}, 40.0),
        (-1.0, {"mode": "cubic", "align_corners": 1, "padding_mode": "zeros"}, 10.0),
        # far outside
        (-5.0, {"padding_mode": "zeros"}, 0.0),
        (-5.0, {"padding_mode": "zeros", "mode": "cubic"}, 0.0),
        (1e300, {"padding_mode": "zeros"}, 0.0),
        (-5.0, {"padding_mode": "border"}, 10.0),
        (7.0, {"padding_mode": "border", "mode": "cubic"}, 40.0),  # every tap reads the edge pixel
        (math.inf, {"padding_mode": "border"}, 40.0),
        # reflection, the spec's example: -3.5 -> 1.5 -> 0.5; x = 0.75 * 3 = 2.25 (align 1)
        (-3.5, {"padding_mode": "reflection", "align_corners": 1}, 32.5),
        (-5.0, {"padding_mode": "reflection"}, 10.0),  # x = -8.5: taps -9 -> 0 and -8 -> 0
        (1e30, {"padding_mode": "reflection"}, 25.0),  # 1e30 = 0 (mod 4, one period): as u = 0, x = 1.5
        # nearest rounds half to even: align 0, x = ((u + 1) * 4 - 1) / 2
        (-0.5, {"mode": "nearest"}, 10.0),  # x = 0.5 -> 0
        (0.0, {"mode": "nearest"}, 30.0),  # x = 1.5 -> 2
        (0.5, {"mode": "nearest"}, 30.0),  # x = 2.5 -> 2
        (1.0, {"mode": "nearest"}, 0.0),  # x = 3.5 -> 4: outside, zeros
        (1.0, {"mode": "nearest", "padding_mode": "border"}, 40.0),
        # cubic at a pixel centre is the pixel; far enough out with border: the edge pixel
        (0.25, {"mode": "cubic"}, 30.0),
        (-2.0, {"mode": "cubic", "padding_mode": "border"}, 10.0),  # x = -4.5: taps -6..-3 -> 0
    ],
)
def test_hand_computed_edge_cases(u, attrs, expected):
    assert _at(u, **attrs) == pytest.approx(expected, abs=1e-12)


def test_cubic_border_interpolates_the_padded_image_at_the_location_itself():
    # align 0, u = -0.95: x = -0.4, taps -2..1 read 10, 10, 10, 20; weights at t = 0.6. u = -1.2 is out
    # of bound (x = -0.9), still interpolated where it is: taps -2..1 at t = 0.1
    for u, x in ((-0.95, -0.4), (-1.2, -0.9)):
        t = x - math.floor(x)
        w = [_keys(1 + t), _keys(t), _keys(1 - t), _keys(2 - t)]
        expected = 10 * (w[0] + w[1] + w[2]) + 20 * w[3]
        assert _at(u, mode="cubic", padding_mode="border") == pytest.approx(expected, abs=1e-12)


def test_nearest_reflection_rounds_then_reflects_the_pixel():
    # X = [0, 1], align 0: u = -2 -> x = -1.5, a tie between pixels -2 and -1: the even -2, whose
    # mirror about -0.5 is pixel 1
    X = np.array([[[[0.0, 1.0]]]])
    g = np.array([[[[-2.0, 0.0]]]])
    assert grid_sample(X, g, mode="nearest", padding_mode="reflection")[0, 0, 0, 0] == 1.0


def test_undefined_locations():
    g = np.array([[[[math.nan, 0.0], [math.inf, 0.0], [0.0, 0.0]]]])
    y = grid_sample(ROW, g, padding_mode="reflection")
    assert np.isnan(y[0, 0, 0, :2]).all() and y[0, 0, 0, 2] == 25.0
    assert np.isnan(grid_sample(ROW, g[:, :, :1], mode="nearest")).all()
    assert grid_sample(ROW, g[:, :, 1:2], padding_mode="zeros")[0, 0, 0, 0] == 0.0
    with pytest.raises(KernelError, match="NaN"):
        grid_sample(ROW.astype(np.int32), g)


def test_infinite_values_reach_only_outputs_that_use_them():
    X = np.array([[[[1.0, 2.0, math.inf, 4.0]]]])
    x_of = [0.0, 1.0, 1.5, 2.0]  # pixel coordinates; align 1: u = 2x/3 - 1
    g = np.array([[[[2 * x / 3 - 1, 0.0] for x in x_of]]])
    y = grid_sample(X, g, align_corners=1)[0, 0, 0]
    assert y[0] == 1.0 and y[1] == 2.0 and y[2] == math.inf and y[3] == math.inf
    assert grid_sample(X, g[:, :, :1], align_corners=1, mode="cubic")[0, 0, 0, 0] == 1.0


def test_two_channels_and_batches_use_their_own_grid():
    X = np.arange(2 * 3 * 2 * 2, dtype=np.float64).reshape(2, 3, 2, 2)
    g = np.array([[[[-1.0, -1.0]]], [[[1.0, 1.0]]]])  # align 1: top-left of batch 0, bottom-right of 1
    y = grid_sample(X, g, align_corners=1)
    np.testing.assert_array_equal(y[:, :, 0, 0], [X[0, :, 0, 0], X[1, :, 1, 1]])


# ---------------------------------------------------------------------------------------------
# element types


def test_integers_round_half_to_even_and_saturate():
    mid = np.array([[[[0.0, 0.0]]]])  # align 1 on a row of 2: x = 0.5
    y = grid_sample(np.array([[[[0, 3]]]], np.uint8), mid, align_corners=1)
    assert y.dtype == np.uint8 and y[0, 0, 0, 0] == 2  # 1.5 -> 2
    assert grid_sample(np.array([[[[0, 1]]]], np.uint8), mid, align_corners=1)[0, 0, 0, 0] == 0  # 0.5 -> 0
    # cubic overshoot clamps: x = 1.5 between 127 and 127 with -128 outside -> above 127
    X = np.array([[[[-128, 127, 127, -128]]]], np.int8)
    g = np.array([[[[0.0, 0.0]]]])
    expected = scalar_grid_sample(X.astype(np.float64), g, 1, "cubic", "zeros")[0, 0, 0, 0]
    assert expected > 127
    assert grid_sample(X, g, align_corners=1, mode="cubic")[0, 0, 0, 0] == 127
    big = np.array([[[[2**63 - 1, 2**63 - 1]]]], np.int64)
    assert grid_sample(big, mid, align_corners=1)[0, 0, 0, 0] == 2**63 - 1


def test_bool_is_true_above_one_half():
    X = np.array([[[[False, True]]]])
    g = np.array([[[[-0.5, 0.0], [0.0, 0.0], [0.5, 0.0]]]])  # align 1: x = 0.25, 0.5, 0.75
    y = grid_sample(X, g, align_corners=1)
    assert y.dtype == np.bool_ and y.tolist() == [[[[False, False, True]]]]


def test_strings_nearest_and_refused_interpolation():
    X = np.array([[[["a", "b"]]]], dtype=object)
    g = np.array([[[[-1.0, 0.0], [1.0, 0.0], [5.0, 0.0]]]])
    y = grid_sample(X, g, align_corners=1, mode="nearest")
    assert y.tolist() == [[[["a", "b", ""]]]]
    assert grid_sample(X, g, align_corners=1, mode="nearest", padding_mode="border").tolist() == [
        [[["a", "b", "b"]]]
    ]
    for mode in ("linear", "cubic"):
        with pytest.raises(KernelError, match="allowed for string X: nearest"):
            grid_sample(X, g, mode=mode)


def test_complex_weights_apply_to_both_parts():
    X = np.array([[[[1 + 2j, 3 - 4j]]]])
    y = grid_sample(X, np.array([[[[0.0, 0.0]]]]), align_corners=1)
    assert y.dtype == np.complex128 and y[0, 0, 0, 0] == 2 - 1j


def test_float32_is_computed_in_float64_and_rounded_once():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1, 2, 5, 5)).astype(F32)
    g = rng.uniform(-1.2, 1.2, size=(1, 3, 3, 2))
    expected = scalar_grid_sample(X.astype(np.float64), g, 0, "cubic", "reflection").astype(F32)
    got = grid_sample(X, g, mode="cubic", padding_mode="reflection")
    assert got.dtype == F32
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------------
# empty axes and invalid inputs


def test_empty_axes():
    g = np.zeros((0, 2, 2, 2))
    assert grid_sample(np.zeros((0, 3, 4, 4)), g).shape == (0, 3, 2, 2)
    assert grid_sample(np.zeros((1, 0, 4, 4)), np.zeros((1, 2, 2, 2))).shape == (1, 0, 2, 2)
    assert grid_sample(np.zeros((1, 1, 4, 4)), np.zeros((1, 0, 2, 2))).shape == (1, 1, 0, 2)
    y = grid_sample(np.zeros((1, 2, 0, 4), F32), np.zeros((1, 2, 2, 2)))
    assert y.shape == (1, 2, 2, 2) and y.dtype == F32 and not y.any()
    for padding in ("border", "reflection"):
        with pytest.raises(KernelError, match="empty axis"):
            grid_sample(np.zeros((1, 2, 0, 4)), np.zeros((1, 2, 2, 2)), padding_mode=padding)
        assert grid_sample(np.zeros((1, 2, 0, 4)), np.zeros((1, 0, 2, 2)), padding_mode=padding).size == 0


@pytest.mark.parametrize(
    ("x_shape", "g_shape", "attrs", "message"),
    [
        ((1, 4), (1, 2), {}, "rank >= 3"),
        ((1, 1, 4, 4), (1, 2, 2), {}, "rank of X"),
        ((2, 1, 4, 4), (1, 2, 2, 2), {}, "batch"),
        ((1, 1, 4, 4), (1, 2, 2, 3), {}, "one coordinate per spatial axis"),
        (
            (1, 1, 4, 4),
            (1, 2, 2, 2),
            {"mode": "bilinear"},
            "mode 'bilinear' is not one of 'linear', 'nearest', 'cubic'",
        ),
        (
            (1, 1, 4, 4),
            (1, 2, 2, 2),
            {"padding_mode": "wrap"},
            "padding_mode 'wrap' is not one of 'zeros', 'border', 'reflection'",
        ),
        ((1, 1, 4, 4), (1, 2, 2, 2), {"align_corners": 2}, "align_corners 2 is not the integer 0 or 1"),
    ],
)
def test_invalid_inputs_raise(x_shape, g_shape, attrs, message):
    with pytest.raises(KernelError, match=message):
        grid_sample(np.zeros(x_shape), np.zeros(g_shape), **attrs)


def test_integer_grid_is_refused():
    with pytest.raises(KernelError, match="floating-point"):
        grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 1, 2), np.int64))


# ---------------------------------------------------------------------------------------------
# through ONNX Runtime: every element type, both versions' mode names, rewrite and restore


def _grid_model(x_type: int, g_type: int, opset: int, **attrs: object) -> onnx.ModelProto:
    node = helper.make_node("GridSample", ["X", "grid"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", x_type, None),
            helper.make_tensor_value_info("grid", g_type, None),
        ],
        [helper.make_tensor_value_info("Y", x_type, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


SESSION_TYPES = [
    (np.float32, TensorProto.FLOAT),
    (np.float64, TensorProto.DOUBLE),
    (np.float16, TensorProto.FLOAT16),
    (np.int8, TensorProto.INT8),
    (np.uint8, TensorProto.UINT8),
    (np.int16, TensorProto.INT16),
    (np.uint16, TensorProto.UINT16),
    (np.int32, TensorProto.INT32),
    (np.uint32, TensorProto.UINT32),
    (np.int64, TensorProto.INT64),
    (np.uint64, TensorProto.UINT64),
    (np.bool_, TensorProto.BOOL),
]


@pytest.mark.parametrize(("dtype", "code"), SESSION_TYPES, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("opset", [16, 20, 22])
def test_every_element_type_through_a_session(dtype, code, opset):
    rng = np.random.default_rng(opset)
    X = (rng.normal(size=(1, 2, 3, 4)) * 3 + 5).astype(dtype)
    g = rng.uniform(-1.3, 1.3, size=(1, 2, 3, 2)).astype(F32)
    mode = "bicubic" if opset == 16 else "cubic"
    if dtype is np.bool_:
        mode = "nearest"
    model = _grid_model(code, TensorProto.FLOAT, opset, mode=mode, padding_mode="reflection")
    (got,) = run_custom(model, {"X": X, "grid": g})
    kernel_mode = {"bicubic": "cubic"}.get(mode, mode)
    expected = grid_sample(X, g.astype(np.float64), mode=kernel_mode, padding_mode="reflection")
    if dtype is np.float16:  # bridged: computed from float32 values, rounded once to float16
        expected = grid_sample(
            X.astype(F32), g.astype(np.float64), mode=kernel_mode, padding_mode="reflection"
        )
        expected = expected.astype(np.float16)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)


def test_strings_through_a_session():
    X = np.array([[[["a", "b"], ["c", "d"]]]], dtype=object)
    g = np.array([[[[-1.0, -1.0], [1.0, 1.0], [3.0, 0.0]]]], F32)
    model = _grid_model(TensorProto.STRING, TensorProto.FLOAT, 20, mode="nearest", align_corners=1)
    (got,) = run_custom(model, {"X": X, "grid": g})
    assert got.tolist() == [[[["a", "d", ""]]]]


@pytest.mark.parametrize("g_type", [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE])
def test_grid_types_are_cast_to_double_exactly(g_type):
    X = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    g = np.array([[[[-0.3, 0.7], [1.1, -0.9]]]], dtype=helper.tensor_dtype_to_np_dtype(g_type))
    (got,) = run_custom(_grid_model(TensorProto.FLOAT, g_type, 20, mode="cubic"), {"X": X, "grid": g})
    np.testing.assert_array_equal(got, grid_sample(X, g.astype(np.float64), mode="cubic"))


def _bfloat16_model() -> onnx.ModelProto:
    """float X and grid fed, Cast to bfloat16 around GridSample-22 (ORT's Python API takes no bfloat16)."""
    bf = TensorProto.BFLOAT16
    nodes = [
        helper.make_node("Cast", ["X"], ["Xb"], to=bf),
        helper.make_node("Cast", ["grid"], ["gb"], to=bf),
        helper.make_node("GridSample", ["Xb", "gb"], ["Yb"], mode="linear"),
        helper.make_node("Cast", ["Yb"], ["Y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("grid", TensorProto.FLOAT, None),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def test_bfloat16_x_and_grid_are_bridged():
    X = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    g = np.array([[[[-0.3, 0.7], [1.1, -0.9]]]], F32)
    result = customops.rewrite_model(_bfloat16_model())
    assert [r.status for r in result.nodes] == ["swapped"]
    (got,) = customops.InferenceSession(result.model).run(None, {"X": X, "grid": g})
    gb = g.astype(ml_dtypes.bfloat16).astype(np.float64)
    xb = X.astype(ml_dtypes.bfloat16).astype(F32)
    expected = grid_sample(xb, gb).astype(ml_dtypes.bfloat16).astype(F32)
    np.testing.assert_array_equal(got, expected)


def test_16_mode_names_map_onto_20_and_agree_with_onnxruntime():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(1, 3, 5, 6)).astype(F32)
    g = rng.uniform(-0.9, 0.9, size=(1, 4, 3, 2)).astype(F32)  # inside: no deviation of ORT applies
    for mode in ("bilinear", "bicubic", "nearest"):
        for align in (0, 1):
            model, feed = one_node_model(
                "GridSample", {"X": X, "grid": g}, 16, mode=mode, align_corners=align
            )
            np.testing.assert_allclose(
                run_custom(model, feed)[0], run_builtin(model, feed)[0], rtol=1e-5, atol=1e-5
            )


def test_invalid_mode_name_for_the_version_is_not_swapped():
    model, _ = one_node_model(
        "GridSample",
        {"X": np.zeros((1, 1, 2, 2), F32), "grid": np.zeros((1, 1, 1, 2), F32)},
        20,
        mode="bilinear",
    )
    result = customops.rewrite_model(model)
    assert not result.changed and "bilinear" in result.skipped[0].line()


def test_kernel_error_is_raised_by_the_session():
    model = _grid_model(TensorProto.STRING, TensorProto.FLOAT, 20, mode="linear")
    result = customops.rewrite_model(model)
    sess = customops.InferenceSession(result.model)
    with pytest.raises(KernelError, match="nearest"):
        sess.run(None, {"X": np.array([[[["a"]]]], dtype=object), "grid": np.zeros((1, 1, 1, 2), F32)})


def test_rewrite_restore_round_trip():
    model = _grid_model(TensorProto.INT32, TensorProto.FLOAT16, 16, mode="bicubic", padding_mode="border")
    result = customops.rewrite_model(model)
    assert result.changed
    custom = [n for n in result.model.graph.node if n.domain == customops.DOMAIN]
    assert len(custom) == 1 and custom[0].op_type == "GridSample"
    assert customops.restore(result.model).SerializeToString() == model.SerializeToString()


def test_backend_cases_found():
    names = [c.name for c in backend_cases("test_gridsample", generator="gridsample")]
    assert len(names) == 18


# ---------------------------------------------------------------------------------------------
# the compiled path (two spatial axes, float32 / float64) gives the numpy path's bits


def _sprinkle(values: np.ndarray, specials: list[float]) -> None:
    """Put the special values at evenly spread positions of ``values`` (in place)."""
    flat = values.reshape(-1)
    positions = np.linspace(0, flat.size - 1, num=min(len(specials), flat.size)).astype(int)
    flat[positions] = specials[: positions.size]


def _awkward_case(rng: np.random.Generator, dtype: type, shape: tuple[int, ...], out: tuple[int, int]):
    X = rng.standard_normal(shape).astype(dtype)
    _sprinkle(X, [np.inf, -np.inf, np.nan, -0.0, 3e38])
    g = rng.uniform(-1.4, 1.4, size=(shape[0], *out, 2))
    _sprinkle(g, [-1.0, 1.0, np.nan, np.inf, -np.inf, 1e30, -5.25, 0.5, -0.5])
    return X, g


@pytest.mark.skipif(not jit.enabled(), reason="no numba")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
def test_compiled_path_gives_the_numpy_bits(dtype, mode):
    rng = np.random.default_rng(MODES.index(mode))
    cases = [_awkward_case(rng, dtype, (2, 3, 5, 7), (4, 6)), _awkward_case(rng, dtype, (1, 1, 1, 1), (3, 3))]
    cases.append(_awkward_case(rng, dtype, (1, 16, 40, 50), (96, 96)))  # large enough for threads
    for (X, g), padding, align in itertools.product(cases, PADDINGS, (0, 1)):
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        compiled = grid_sample(X, g, **attrs)
        with jit.numpy_only():
            plain = grid_sample(X, g, **attrs)
        assert compiled.dtype == plain.dtype and compiled.shape == plain.shape
        np.testing.assert_array_equal(compiled.view(np.uint8), plain.view(np.uint8), err_msg=str(attrs))


@pytest.mark.skipif(not jit.enabled(), reason="no numba")
@pytest.mark.parametrize("mode", MODES)
def test_compiled_path_near_the_float32_maximum(mode):
    """Sums at the float32 maximum, of both signs, and infinite pixels beside them: the compiled loops
    check their stored (rounded) results for non-finite values and redo those sums."""
    rng = np.random.default_rng(11)
    X = np.full((1, 3, 6, 5), np.finfo(np.float32).max, np.float32)
    X[0, 1] *= -1
    X[0, 2, ::2, ::3] = np.inf
    g = rng.uniform(-1.2, 1.2, size=(1, 9, 7, 2))
    for padding in PADDINGS:
        compiled = grid_sample(X, g, mode=mode, padding_mode=padding)
        with jit.numpy_only():
            plain = grid_sample(X, g, mode=mode, padding_mode=padding)
        np.testing.assert_array_equal(compiled.view(np.uint8), plain.view(np.uint8), err_msg=padding)


@pytest.mark.parametrize("mode", MODES)
def test_the_numpy_path_in_chunks_gives_the_same_bits(monkeypatch, mode):
    from customops.kernels.spatial import grid_sample as module

    rng = np.random.default_rng(4)
    X, g = _awkward_case(rng, np.float32, (2, 3, 5, 4), (3, 5))
    with jit.numpy_only():
        whole = grid_sample(X, g, mode=mode, padding_mode="reflection")
        monkeypatch.setattr(module, "CHUNK", 7)  # two points of three channels at a time
        np.testing.assert_array_equal(grid_sample(X, g, mode=mode, padding_mode="reflection"), whole)


def test_bound_kernel_matches_the_function():
    rng = np.random.default_rng(9)
    X, g = _random_case(rng, 2)
    bound = bind_grid_sample(align_corners=1, mode="cubic", padding_mode="border")
    np.testing.assert_array_equal(
        bound(X, g), grid_sample(X, g, align_corners=1, mode="cubic", padding_mode="border")
    )
    with pytest.raises(KernelError, match="mode 'bicubic' is not one of"):
        bind_grid_sample(mode="bicubic")
    again = bind_grid_sample(mode="nearest")
    for _ in range(2):  # errors on every call, plans kept per shape and dtype
        with pytest.raises(KernelError, match="batch"):
            again(np.zeros((2, 1, 3, 3), F32), np.zeros((1, 1, 1, 2)))
        for dtype in (F32, np.float64, np.int32):
            Xd, gd = X.astype(dtype), g[:, :2]
            np.testing.assert_array_equal(again(Xd, gd), grid_sample(Xd, gd, mode="nearest"))


@pytest.mark.parametrize(("mode", "most"), [("cubic", 6), ("linear", 12)])
def test_taps_per_output_point_are_bounded(mode, most):
    # the work per point grows as taps ** spatial axes whatever the sizes: past 4096 taps it is refused
    def one_point(r):
        return np.ones((1, 1) + (2,) * r, F32), np.zeros((1,) + (1,) * r + (r,))

    x, g = one_point(most)
    # at the centre of each length-2 axis, zeros padding keeps the taps inside: per axis their weights' sum
    inside = {"cubic": 2 * (1.25 * 0.5**3 - 2.25 * 0.5**2 + 1), "linear": 1.0}[mode]
    np.testing.assert_allclose(grid_sample(x, g, mode=mode).ravel(), [inside**most], rtol=1e-6)
    with pytest.raises(KernelError, match="taps per output point"):
        grid_sample(*one_point(most + 1), mode=mode)
    x, g = one_point(most + 8)
    assert grid_sample(x, g, mode="nearest").shape == (1, 1) + (1,) * (most + 8)
