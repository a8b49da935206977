"""Tests for customops.kernels.spatial.affine_grid (ONNX AffineGrid-20)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

import customops
from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.spatial.affine_grid import affine_grid
from tests.helpers import backend_cases, one_node_model

BACKEND_CASES = backend_cases("test_affine_grid_", generator="affinegrid")
F32 = np.float32


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND_CASES}
    assert names == {
        "test_affine_grid_2d",
        "test_affine_grid_2d_align_corners",
        "test_affine_grid_3d",
        "test_affine_grid_3d_align_corners",
    }


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for inputs, outputs in case.data_sets:
        got = affine_grid(*inputs, **attrs)
        assert got.dtype == outputs[0].dtype and got.shape == outputs[0].shape
        np.testing.assert_allclose(got, outputs[0], rtol=case.rtol, atol=case.atol)


# ---------------------------------------------------------------------------------------------
# an independent re-derivation: float64 scalar loops over the spec's formula


def position(i: int, n: int, align_corners: int) -> float:
    """The spec's base position of pixel i of n along one axis, from its picture: with align_corners=1
    pixel centres from -1 to 1 (one pixel: its centre is 0), else pixel centres of n equal cells of
    [-1, 1]."""
    if align_corners:
        return 0.0 if n == 1 else -1.0 + 2.0 * i / (n - 1)
    cell = 2.0 / n
    return -1.0 + cell * (i + 0.5)


def slow_grid(theta: np.ndarray, size: list[int], align_corners: int) -> np.ndarray:
    spatial = len(size) - 2
    dims = size[2:]
    out = np.zeros((size[0], *dims, spatial))
    t = theta.astype(np.float64)
    for n in range(size[0]):
        for index in itertools.product(*(range(d) for d in dims)):
            # homogeneous position [x, y, (z,) 1]: x along the last axis
            p = [position(index[-1 - j], dims[-1 - j], align_corners) for j in range(spatial)] + [1.0]
            for k in range(spatial):
                out[(n, *index, k)] = sum(t[n, k, j] * p[j] for j in range(spatial + 1))
    return out


@pytest.mark.parametrize("spatial", [2, 3])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_random_cases_against_the_scalar_loop(spatial, align_corners) -> None:
    rng = np.random.default_rng(10 * spatial + align_corners)
    for _ in range(12):
        n = int(rng.integers(1, 4))
        dims = [int(d) for d in rng.integers(1, 6, size=spatial)]
        theta = rng.standard_normal((n, spatial, spatial + 1))
        size = [n, int(rng.integers(0, 4)), *dims]
        expected = slow_grid(theta, size, align_corners)
        got = affine_grid(theta, np.array(size), align_corners=align_corners)
        assert got.dtype == np.float64 and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)
        got32 = affine_grid(theta.astype(F32), np.array(size), align_corners=align_corners)
        expected32 = slow_grid(theta.astype(F32), size, align_corners)
        assert got32.dtype == F32
        # computed in float64 and rounded once: within half an ulp of float32 (and a hair)
        np.testing.assert_array_less(
            np.abs(got32 - expected32), 0.5000001 * np.spacing(np.abs(expected32).astype(F32)) + 1e-30
        )


# ---------------------------------------------------------------------------------------------
# hand-computed cases


IDENTITY = np.array([[[1, 0, 0], [0, 1, 0]]], F32)


def test_identity_2d_by_hand() -> None:
    # align_corners=0, W=3: x = -2/3, 0, 2/3; H=2: y = -1/2, 1/2
    got = affine_grid(IDENTITY, np.array([1, 5, 2, 3]))
    third = F32(2 / 3)
    assert got.tolist() == [
        [[[-third, -0.5], [0, -0.5], [third, -0.5]], [[-third, 0.5], [0, 0.5], [third, 0.5]]]
    ]
    # align_corners=1: x = -1, 0, 1; y = -1, 1
    got = affine_grid(IDENTITY, np.array([1, 5, 2, 3]), align_corners=1)
    assert got.tolist() == [[[[-1, -1], [0, -1], [1, -1]], [[-1, 1], [0, 1], [1, 1]]]]


def test_translation_and_rotation_by_hand() -> None:
    # x' = -y + 0.5, y' = x - 2 on the 2x2 corner grid
    theta = np.array([[[0, -1, 0.5], [1, 0, -2]]], np.float64)
    got = affine_grid(theta, np.array([1, 1, 2, 2]), align_corners=1)
    assert got.tolist() == [[[[1.5, -3], [1.5, -1]], [[-0.5, -3], [-0.5, -1]]]]


def test_3d_by_hand() -> None:
    # z' = z + x: D=2 (z = -1, 1), H=1 (y = 0), W=2 (x = -1, 1), align_corners=1
    theta = np.zeros((1, 3, 4))
    theta[0, 0, 0] = theta[0, 1, 1] = 1
    theta[0, 2, 2] = theta[0, 2, 0] = 1
    got = affine_grid(theta, np.array([1, 1, 2, 1, 2]), align_corners=1)
    assert got.shape == (1, 2, 1, 2, 3)
    assert got[0, :, 0].tolist() == [[[-1, 0, -2], [1, 0, 0]], [[-1, 0, 0], [1, 0, 2]]]


def test_one_pixel_axis_is_at_0_with_either_align_corners() -> None:
    theta = np.array([[[1, 0, 0.25], [0, 1, 0.25]]], F32)
    for align_corners in (0, 1):
        got = affine_grid(theta, np.array([1, 1, 1, 1]), align_corners=align_corners)
        assert got.tolist() == [[[[0.25, 0.25]]]]


def test_empty_grids() -> None:
    assert affine_grid(IDENTITY, np.array([1, 1, 0, 3])).shape == (1, 0, 3, 2)
    assert affine_grid(np.zeros((0, 2, 3), F32), np.array([0, 1, 4, 4])).shape == (0, 4, 4, 2)
    assert affine_grid(np.zeros((2, 3, 4)), np.array([2, 1, 3, 0, 2])).shape == (2, 3, 0, 2, 3)


def test_non_finite_theta_follows_ieee_arithmetic() -> None:
    theta = np.array([[[np.inf, 0, 0], [np.nan, 1, 0]]], F32)
    got = affine_grid(theta, np.array([1, 1, 1, 3]))
    # x = -2/3, 0, 2/3: inf * 0 is NaN; NaN spreads through component 1
    assert np.isneginf(got[0, 0, 0, 0]) and np.isnan(got[0, 0, 1, 0]) and np.isposinf(got[0, 0, 2, 0])
    assert np.isnan(got[..., 1]).all()


def test_float32_is_rounded_once_from_float64() -> None:
    rng = np.random.default_rng(5)
    theta = rng.standard_normal((2, 2, 3)).astype(F32)
    got = affine_grid(theta, np.array([2, 1, 7, 9]))
    exact = affine_grid(theta.astype(np.float64), np.array([2, 1, 7, 9]))
    np.testing.assert_array_equal(got, exact.astype(F32))


@pytest.mark.parametrize("size", [[2, 1, 5, 7], [2, 1, 3, 4, 6], [1, 1, 1, 1]])
@pytest.mark.parametrize("dtype", [F32, np.float64])
def test_compiled_loop_equals_the_numpy_path(size, dtype) -> None:
    rng = np.random.default_rng(len(size))
    spatial = len(size) - 2
    theta = rng.standard_normal((size[0], spatial, spatial + 1)).astype(dtype)
    theta[0, 0, 0] = -0.0
    for align_corners in (0, 1):
        compiled = affine_grid(theta, np.array(size), align_corners=align_corners)
        with jit.numpy_only():
            plain = affine_grid(theta, np.array(size), align_corners=align_corners)
        np.testing.assert_array_equal(compiled, plain)
        assert np.array_equal(np.signbit(compiled), np.signbit(plain))


# ---------------------------------------------------------------------------------------------
# invalid configurations


@pytest.mark.parametrize(
    ("theta_shape", "size", "attrs", "message"),
    [
        ((1, 2, 3), [1, 1, 4], {}, r"size \[1, 1, 4\] has 3 entries; expected 4"),
        ((1, 2, 3), [1, 1, 4, 4, 4, 4], {}, "has 6 entries"),
        ((1, 2, 3), [1, 1, -1, 4], {}, r"contains -1; sizes must be >= 0"),
        ((1, 2, 3), [1, -1, 2, 4], {}, r"contains -1"),
        ((1, 3, 4), [1, 1, 2, 2], {}, r"theta has shape \(1, 3, 4\); size .* asks for 1x2x3"),
        ((1, 2, 3), [1, 1, 2, 2, 2], {}, "asks for 1x3x4"),
        ((2, 2, 3), [1, 1, 2, 2], {}, "with the same N"),
        ((2, 3), [1, 1, 2, 2], {}, r"theta has shape \(2, 3\)"),
        ((1, 2, 3), [1, 1, 2, 2], {"align_corners": 2}, "align_corners 2 is not the integer 0 or 1"),
    ],
)
def test_invalid_configurations(theta_shape, size, attrs, message) -> None:
    with pytest.raises(KernelError, match=message):
        affine_grid(np.zeros(theta_shape, F32), np.array(size), **attrs)


def test_size_must_be_integers_and_theta_floating() -> None:
    with pytest.raises(KernelError, match="size must hold integers"):
        affine_grid(IDENTITY, np.array([1.0, 1.0, 2.0, 2.0]))
    with pytest.raises(KernelError, match="theta must be a floating-point tensor"):
        affine_grid(IDENTITY.astype(np.int32), np.array([1, 1, 2, 2]))


# ---------------------------------------------------------------------------------------------
# through ONNX Runtime: every element type, the rewrite and its restore


def _model(elem: int, size: list[int], align_corners: int = 0):
    """AffineGrid on theta of type ``elem`` between Casts from and to float (for bfloat16)."""
    nodes = [
        helper.make_node("Cast", ["theta"], ["t"], to=elem),
        helper.make_node("AffineGrid", ["t", "size"], ["g"], align_corners=align_corners),
        helper.make_node("Cast", ["g"], ["grid"], to=TensorProto.FLOAT),
    ]
    spatial = len(size) - 2
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("theta", TensorProto.FLOAT, [size[0], spatial, spatial + 1])],
        [helper.make_tensor_value_info("grid", TensorProto.FLOAT, None)],
        [helper.make_tensor("size", TensorProto.INT64, [len(size)], size)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("elem", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["float16", "bfloat16"])
def test_bridged_types_round_once_from_the_float_result(elem) -> None:
    theta = np.array([[[0.5, 0.25, 1], [-1, 0.75, 0.125]], [[1, 0, 0], [0, 1, 0]]], F32)
    size = [2, 1, 3, 5]
    model = _model(elem, size, align_corners=1)
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes if r.op.startswith("AffineGrid")] == ["swapped"]
    (grid,) = customops.InferenceSession(result.model).run(None, {"theta": theta})
    np_type = np.float16 if elem == TensorProto.FLOAT16 else None
    expected = affine_grid(theta, np.array(size), align_corners=1)
    if np_type is not None:
        np.testing.assert_array_equal(grid, expected.astype(np_type).astype(F32))
    else:  # bfloat16: within half a bfloat16 ulp (8 bits of mantissa)
        np.testing.assert_allclose(grid, expected, rtol=2**-8, atol=0)


@pytest.mark.parametrize("dtype", [F32, np.float64])
def test_native_types_through_a_session_and_restore(dtype) -> None:
    theta = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(dtype)
    size = np.array([2, 4, 2, 3, 4], np.int64)
    model, feed = one_node_model(
        "AffineGrid", {"theta": theta, "size": size}, 20, initializers=("size",), out_rank=5, align_corners=1
    )
    rewritten = customops.rewrite(model)
    assert [n.domain for n in rewritten.graph.node] == [customops.DOMAIN]
    (grid,) = customops.InferenceSession(rewritten).run(None, feed)
    assert grid.dtype == dtype
    np.testing.assert_array_equal(grid, affine_grid(theta, size, align_corners=1))
    restored = customops.restore(rewritten)
    assert restored.graph.node[0].SerializeToString() == model.graph.node[0].SerializeToString()


def test_kernel_error_reaches_the_caller() -> None:
    model, feed = one_node_model(
        "AffineGrid", {"theta": IDENTITY, "size": np.array([2, 1, 2, 2], np.int64)}, 20, out_rank=4
    )
    with pytest.raises(customops.KernelError, match="with the same N"):
        customops.InferenceSession(customops.rewrite(model)).run(None, feed)


@pytest.mark.parametrize("size", [[3, 1, 17, 5], [2, 1, 3, 7, 4]])
def test_rows_split_over_threads_give_the_same_bits(monkeypatch, size) -> None:
    from customops.accel import parallel

    spatial = len(size) - 2
    theta = np.random.default_rng(9).standard_normal((size[0], spatial, spatial + 1)).astype(F32)
    monkeypatch.setitem(parallel._state, "threads", 1)
    serial = affine_grid(theta, np.array(size), align_corners=1)
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)
    assert affine_grid(theta, np.array(size), align_corners=1).tobytes() == serial.tobytes()
