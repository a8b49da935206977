"""Tests for customops.kernels.quantized.matmul_integer (ONNX MatMulInteger-10)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto

from customops.errors import KernelError
from customops.kernels.quantized.arithmetic import exact_matmul
from customops.kernels.quantized.matmul_integer import matmul_integer
from tests.kernels.quantized.oracles import cases, ort_session, reference_run
from tests.kernels.quantized.test_quantize_linear import _onnx_types

BACKEND = cases("test_matmulinteger", "matmulinteger")
_TYPES = {"int8": np.int8, "uint8": np.uint8}


@pytest.mark.parametrize("case", BACKEND, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    assert BACKEND
    for inputs, outputs in case.data_sets:
        got = matmul_integer(*inputs)
        assert got.dtype == np.int32 and np.array_equal(got, outputs[0])


def test_types_match_onnx() -> None:
    for name in ("A", "B", "a_zero_point", "b_zero_point"):
        assert _onnx_types("MatMulInteger", 10, name) == ("int8", "uint8")
    assert _onnx_types("MatMulInteger", 10, "Y") == ("int32",)


def _random(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(_TYPES[name])
    return rng.integers(info.min, info.max + 1, shape).astype(_TYPES[name])


def _brute(a: np.ndarray, b: np.ndarray, za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """The definition with Python ints, wrapped to int32."""
    a2 = a.astype(object) - za.astype(object)
    b2 = b.astype(object) - zb.astype(object)
    exact = np.matmul(a2, b2)
    return np.vectorize(lambda v: (int(v) + 2**31) % 2**32 - 2**31, otypes=[np.int64])(exact).astype(np.int32)


_SHAPES = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (4, 3)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((0, 4), (4, 2)),
    ((3, 0), (0, 2)),
]


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shapes=st.sampled_from(_SHAPES),
    types=st.tuples(st.sampled_from(sorted(_TYPES)), st.sampled_from(sorted(_TYPES))),
    zero_kinds=st.tuples(
        st.sampled_from(["none", "scalar", "one", "vector", "full"]),
        st.sampled_from(["none", "scalar", "one", "vector", "full"]),
    ),
)
def test_equals_the_definition_with_every_zero_point_shape(seed, shapes, types, zero_kinds) -> None:
    rng = np.random.default_rng(seed)
    (sa, sb), (ta, tb) = shapes, types
    a, b = _random(rng, ta, sa), _random(rng, tb, sb)
    za = _zero(rng, ta, zero_kinds[0], sa, "row")
    zb = _zero(rng, tb, zero_kinds[1], sb, "column")
    got = matmul_integer(a, b, za, zb)
    row = (
        np.zeros((), np.int64) if za is None else (za.reshape(-1, 1) if za.ndim == 1 and za.size != 1 else za)
    )
    col = np.zeros((), np.int64) if zb is None else zb
    expected = _brute(a, b, row, col)
    assert got.dtype == np.int32 and got.shape == np.matmul(a.astype(np.int32), b.astype(np.int32)).shape
    assert np.array_equal(got, expected) and got.flags.c_contiguous


def _zero(
    rng: np.random.Generator, name: str, kind: str, shape: tuple[int, ...], per: str
) -> np.ndarray | None:
    """A zero point of ``kind`` for an operand of ``shape``: per row of A, per column of B."""
    if kind == "none" or (kind in ("vector", "full") and len(shape) == 1):
        return None
    if kind == "scalar":
        return _random(rng, name, ())
    if kind == "one":
        return _random(rng, name, (1,))
    if kind == "vector":
        return _random(rng, name, (shape[-2] if per == "row" else shape[-1],))
    full = (*shape[:-1], 1) if per == "row" else (*shape[:-2], 1, shape[-1])
    return _random(rng, name, full)


def test_sums_beyond_int32_wrap_as_an_int32_accumulator_does() -> None:
    k = 33100  # 33100 * 255 * 255 = 2 152 327 500 > 2**31 - 1
    a = np.full((1, k), 255, np.uint8)
    b = np.full((k, 2), 255, np.uint8)
    got = matmul_integer(a, b)
    assert got.tolist() == [[k * 65025 - 2**32] * 2]
    session = ort_session(
        "MatMulInteger", 10, [("A", TensorProto.UINT8), ("B", TensorProto.UINT8)], [("Y", TensorProto.INT32)]
    )
    assert np.array_equal(session.run(None, {"A": a, "B": b})[0], got)


@pytest.mark.parametrize("types", [("int8", "int8"), ("uint8", "uint8")])
def test_matches_onnxruntime_where_it_is_exact(types) -> None:
    """ORT's s8s8 and u8u8 integer GEMMs are exact on every CPU (its u8s8 one is not: not compared)."""
    rng = np.random.default_rng(5)
    code = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}
    inputs = [("A", code[types[0]]), ("B", code[types[1]]), ("za", code[types[0]]), ("zb", code[types[1]])]
    session = ort_session("MatMulInteger", 10, inputs, [("Y", TensorProto.INT32)])
    for shape_a, shape_b, zb_shape in [
        ((5, 7), (7, 3), (3,)),
        ((2, 4, 9), (9, 6), ()),
        ((3, 2, 8), (3, 8, 4), (3, 1, 4)),
    ]:
        a, b = _random(rng, types[0], shape_a), _random(rng, types[1], shape_b)
        za, zb = _random(rng, types[0], ()), _random(rng, types[1], zb_shape)
        (expected,) = session.run(None, {"A": a, "B": b, "za": np.asarray(za), "zb": np.asarray(zb)})
        assert np.array_equal(matmul_integer(a, b, za, zb), expected)


def test_reference_broadcasts_a_per_row_zero_point_along_k() -> None:
    """onnx.reference subtracts an [M] a_zero_point from A [M, K] by numpy broadcasting, that is per
    column (docs/semantics.md); with M == K it runs and differs from the spec's per-row meaning."""
    a = np.arange(9, dtype=np.uint8).reshape(3, 3)
    b = np.eye(3, dtype=np.uint8)
    za = np.array([1, 2, 3], np.uint8)
    (reference,) = reference_run("MatMulInteger", 10, {"A": a, "B": b, "za": za})
    got = matmul_integer(a, b, za)
    assert np.array_equal(got, a.astype(np.int32) - za.reshape(3, 1))
    assert np.array_equal(reference, a.astype(np.int32) - za.reshape(1, 3))


def test_float_path_equals_the_int64_path_at_the_extremes() -> None:
    rng = np.random.default_rng(1)
    a = rng.choice([-255, 255, 0, 1], (4, 3, 500)).astype(np.int64)
    b = rng.choice([-255, 255, -1], (500, 6)).astype(np.int64)
    assert np.array_equal(exact_matmul(a, b), exact_matmul(a, b, blas=False))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.ones((2, 3), np.int8), np.ones((4, 2), np.int8)), "A's last axis"),
        ((np.ones((2, 3, 4), np.int8), np.ones((3, 4, 2), np.int8)), "do not broadcast"),
        ((np.ones(3, np.int8), np.ones(3, np.int16)), "B has element type 'int16'"),
        ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8), np.ones(3, np.int8)), "a_zero_point has shape"),
        (
            (np.ones((2, 3), np.int8), np.ones((3, 2), np.int8), None, np.ones((1, 2, 1), np.int8)),
            "b_zero_point has shape",
        ),
        (
            (np.ones((2, 3), np.int8), np.ones((3, 2), np.int8), np.zeros((), np.uint8)),
            "a_zero_point has element type",
        ),
        ((np.ones((), np.int8), np.ones(2, np.int8)), "at least 1-D"),
    ],
)
def test_invalid_inputs_are_refused(args, message) -> None:
    with pytest.raises(KernelError, match=message):
        matmul_integer(*args)
