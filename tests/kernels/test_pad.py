"""Tests for customops.kernels.padding.pad (ONNX Pad-11..25)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx.reference import ReferenceEvaluator

import customops.kernels.padding.pad as pad_module
from customops.errors import KernelError
from customops.kernels.padding.pad import pad
from tests.helpers import ALL_DTYPES, backend_cases

PREFIXES = ("test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_wrap_pad")
MODES = ("constant", "reflect", "edge", "wrap")
DTYPES = ALL_DTYPES


BACKEND_CASES = backend_cases(*PREFIXES, generator="pad")


def _run_node(node: onnx.NodeProto, arrays: list[np.ndarray]) -> np.ndarray:
    present = iter(arrays)
    inputs = [next(present) if name else None for name in node.input]
    inputs += [None] * (4 - len(inputs))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    mode = attrs.get("mode", b"constant")
    return pad(*inputs, mode=mode.decode() if isinstance(mode, bytes) else mode)


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND_CASES}
    assert {"test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_wrap_pad"} <= names
    assert {"test_constant_pad_axes", "test_constant_pad_negative_axes"} <= names


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    for inputs, outputs in case.data_sets:
        got = _run_node(node, list(inputs))
        expected = outputs[0]
        assert got.dtype == expected.dtype
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)


# ---------------------------------------------------------------------------------------------
# An independent oracle: per axis, the source index of every output position (numpy.pad applied to
# an index vector for reflect/edge/wrap); negative pads crop first, then the kept range is padded.


def oracle(data, pads, mode="constant", constant=None, axes=None):
    rank = data.ndim
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    begins, ends = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begins[a], ends[a] = pads[i], pads[len(axes) + i]
    index, masks = [], []
    for a in range(rank):
        n, b, e = data.shape[a], begins[a], ends[a]
        if mode == "constant":
            pos = np.arange(n + b + e) - b
            valid = (pos >= 0) & (pos < n)
            index.append(np.where(valid, pos, 0))
            masks.append(valid)
        else:
            lo, hi = max(0, -b), n - max(0, -e)
            kept = np.arange(lo, hi)
            index.append(np.pad(kept, (max(0, b), max(0, e)), mode=mode) if b > 0 or e > 0 else kept)
    if any(len(i) == 0 for i in index) or data.size == 0:
        return np.empty([len(i) for i in index], dtype=data.dtype)
    out = data[np.ix_(*index)].copy()
    if mode == "constant":
        keep = np.ones(out.shape, dtype=bool)
        for a, m in enumerate(masks):
            keep &= m.reshape([-1 if i == a else 1 for i in range(rank)])
        if constant is None:
            constant = "" if data.dtype == object else (False if data.dtype == np.bool_ else 0)
        out[~keep] = constant
    return out


def make(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 100, size=shape)
    if dtype is object:
        return np.array([f"s{v}" for v in values.ravel()] or [], dtype=object).reshape(shape)
    if dtype is np.bool_:
        return (values % 2).astype(bool)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * rng.integers(0, 100, size=shape)).astype(dtype)
    return values.astype(dtype)


def constant_for(dtype):
    if dtype is object:
        return np.array("pad", dtype=object)
    if dtype is np.bool_:
        return np.array(True)
    if np.dtype(dtype).kind == "c":
        return np.array(7 - 2j, dtype=dtype)
    return np.array(7, dtype=dtype)


def check(got, expected):
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)


PAD_SETS = [
    [1, 2, 3, 0],  # plain
    [0, 0, 0, 0],  # identity
    [-1, 2, 3, -2],  # crop one side, pad the other
    [5, 0, 0, 7],  # larger than the axes (3 x 4)
    [-2, -1, 0, -3],  # crop only
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", MODES)
def test_dtypes_and_modes_against_oracle(dtype, mode) -> None:
    data = make((3, 4), dtype)
    cv = constant_for(dtype) if mode == "constant" else None
    for pads in PAD_SETS:
        got = pad(data, np.array(pads, dtype=np.int64), cv, mode=mode)
        check(got, oracle(data, pads, mode, None if cv is None else cv.item()))
    # absent constant_value: None or an empty array
    for absent in (None, np.array([], dtype=data.dtype)):
        got = pad(data, np.array([1, 1, 1, 1], dtype=np.int64), absent, mode=mode)
        check(got, oracle(data, [1, 1, 1, 1], mode))


def test_default_constants_per_dtype() -> None:
    assert pad(np.array(["a"], dtype=object), np.array([1, 1])).tolist() == ["", "a", ""]
    assert pad(np.array([True]), np.array([1, 0])).tolist() == [False, True]
    assert pad(np.array([1 + 1j], dtype=np.complex64), np.array([0, 1])).tolist() == [1 + 1j, 0j]
    out = pad(np.array(["ab"], dtype=object), np.array([1, 0]), np.array(["xyz"], dtype=object))
    assert out.dtype == object
    assert out.tolist() == ["xyz", "ab"]


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.bool_],
    ids=lambda d: np.dtype(d).name,
)
@pytest.mark.parametrize("mode", MODES)
def test_against_onnx_reference(dtype, mode) -> None:
    # onnx.reference delegates to numpy.pad: right for non-negative pads, including reflect and
    # wrap pads longer than the axis (the reflection / wrap repeats).
    data = make((2, 3, 4), dtype, seed=1)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("Pad", ["x", "pads", "cv", "axes"], ["y"], mode=mode)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", elem, None),
            helper.make_tensor_value_info("pads", onnx.TensorProto.INT64, None),
            helper.make_tensor_value_info("cv", elem, None),
            helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, None),
        ],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    ref = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    cv = constant_for(dtype)
    for pads, axes in [
        ([1, 2, 0, 2, 1, 3], [0, 1, 2]),
        ([0, 7, 9, 0, 5, 6], [0, 1, 2]),  # pads longer than every axis
        ([2, 3, 1, 4], [-1, 1]),
        ([3, 0], [-3]),
    ]:
        p, a = np.array(pads, dtype=np.int64), np.array(axes, dtype=np.int64)
        expected = ref.run(None, {"x": data, "pads": p, "cv": cv, "axes": a})[0]
        check(pad(data, p, cv, a, mode=mode), expected)


@pytest.mark.parametrize(
    ("mode", "pads", "expected"),
    [
        # crop first, then pad the cropped vector (ORT 1.32 agrees)
        ("wrap", [-1, 2], [2, 3, 4, 2, 3]),
        ("wrap", [3, -2], [2, 1, 2, 1, 2]),
        ("reflect", [-1, 2], [2, 3, 4, 3, 2]),
        ("reflect", [-2, 3], [3, 4, 3, 4, 3]),  # ORT rejects: pad 3 > 2 - 1
        ("edge", [-2, 3], [3, 4, 4, 4, 4]),
        ("edge", [2, -1], [1, 1, 1, 2, 3]),
        ("constant", [-1, 2], [2, 3, 4, 0, 0]),
        # the crops meet: every remaining position is padding (ORT 1.32 agrees)
        ("constant", [-5, 4], [0, 0, 0]),
        ("constant", [4, -5], [0, 0, 0]),
        ("constant", [-4, 1], [0]),
        # reflect with pads >= the axis length repeats the reflection (numpy.pad; ORT rejects)
        ("reflect", [5, 0], [2, 3, 4, 3, 2, 1, 2, 3, 4]),
        ("reflect", [0, 7], [1, 2, 3, 4, 3, 2, 1, 2, 3, 4, 3]),
        # wrap longer than the axis repeats (ORT agrees)
        ("wrap", [9, 1], [4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1]),
    ],
)
def test_hand_computed_1d(mode, pads, expected) -> None:
    data = np.array([1, 2, 3, 4], dtype=np.int32)
    got = pad(data, np.array(pads, dtype=np.int64), mode=mode)
    assert got.tolist() == expected


def test_reflect_length_one_axis_repeats_the_value() -> None:
    assert pad(np.array([7.0]), np.array([2, 3]), mode="reflect").tolist() == [7.0] * 6
    # cropped down to one element, then reflected
    assert pad(np.array([1, 2, 3]), np.array([-2, 2]), mode="reflect").tolist() == [3, 3, 3]


def test_negative_axes_and_subsets() -> None:
    data = make((2, 3, 4), np.int64)
    got = pad(data, np.array([1, -1, 2, 0]), np.array(9), np.array([-1, 0], dtype=np.int32))
    check(got, oracle(data, [1, -1, 2, 0], "constant", 9, axes=[-1, 0]))
    assert got.shape == (1, 3, 7)


def test_empty_axes_means_all_axes() -> None:
    data = make((2, 3), np.float32)
    check(pad(data, [1, 1, 1, 1], None, np.array([], dtype=np.int64)), oracle(data, [1, 1, 1, 1]))


def test_result_is_a_new_array() -> None:
    data = make((2, 3), np.float32)
    out = pad(data, np.zeros(4, dtype=np.int64))
    out[0, 0] = -1
    assert data[0, 0] != -1


def test_non_contiguous_input() -> None:
    data = make((6, 8), np.int32)[::2, ::-3]
    for mode in MODES:
        check(pad(data, [1, 2, 2, 1], mode=mode), oracle(data, [1, 2, 2, 1], mode))


def test_zero_rank() -> None:
    out = pad(np.array(3.5, dtype=np.float32), np.array([], dtype=np.int64), mode="reflect")
    assert out.shape == () and out.dtype == np.float32 and out == 3.5


@pytest.mark.parametrize("mode", MODES)
def test_empty_tensors(mode) -> None:
    data = np.zeros((0, 3), dtype=np.float32)
    # padding only the non-empty axis: empty result
    assert pad(data, [0, 1, 0, 2], mode=mode).shape == (0, 6)
    # cropping an axis away
    assert pad(make((2, 3), np.int8), [0, -3, 0, 0], mode=mode).shape == (2, 0)
    if mode == "constant":
        out = pad(data, [1, 0, 2, 0], np.float32(5))
        assert out.shape == (3, 3) and (out == 5).all()
    else:
        with pytest.raises(KernelError, match="no elements left"):
            pad(data, [1, 0, 0, 0], mode=mode)
        with pytest.raises(KernelError, match="no elements left"):
            pad(make((3,), np.int8), [-3, 1], mode=mode)


def test_blocked_path_matches_oracle(monkeypatch) -> None:
    # force the cache-blocked copy on small arrays: every split axis and partial last blocks
    monkeypatch.setattr(pad_module, "_CHUNK_BYTES", 48)
    monkeypatch.setattr(pad_module, "_CHUNK_MIN_BORDER_BYTES", 0)
    data = make((3, 5, 4, 6), np.int32, seed=3)
    for mode in MODES:
        for pads in ([1, 0, 2, 3, 0, 2, 1, 4], [0, -1, 1, 9, 2, 1, -2, 2], [2, 2, 0, -1, 1, 0, 3, 0]):
            check(pad(data, pads, np.int32(-1), mode=mode), oracle(data, pads, mode, -1))


def test_large_input_matches_numpy() -> None:
    data = make((2, 8, 200, 300), np.float32, seed=4)
    for mode in MODES:
        pads = [0, 0, 40, 40, 0, 0, 40, 40]
        expected = np.pad(data, [(0, 0), (0, 0), (40, 40), (40, 40)], mode=mode)
        check(pad(data, pads, mode=mode), expected)


def test_agrees_with_onnxruntime_on_mixed_pads() -> None:
    ort = pytest.importorskip("onnxruntime")
    data = make((3, 5, 4), np.float32, seed=5)
    for mode in MODES:
        node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
        graph = helper.make_graph(
            [node],
            "g",
            [
                helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, None),
                helper.make_tensor_value_info("pads", onnx.TensorProto.INT64, None),
            ],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        # reflect pads within ORT's limit (kept length - 1); wrap tells crop-first from pad-first
        for pads in ([-1, 2, 1, 1, -2, 1], [1, -3, 0, -1, 1, 2], [0, 1, -2, 1, -2, 1]):
            p = np.array(pads, dtype=np.int64)
            check(pad(data, p, mode=mode), session.run(None, {"x": data, "pads": p})[0])


# ---------------------------------------------------------------------------------------------
# properties


@st.composite
def shapes_and_pads(draw, allow_negative=True):
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    low = -3 if allow_negative else 0
    pads = draw(st.lists(st.integers(low, 6), min_size=2 * rank, max_size=2 * rank))
    return tuple(shape), pads


@settings(max_examples=150, deadline=None)
@given(shapes_and_pads(), st.sampled_from(MODES))
def test_property_matches_oracle(shape_pads, mode) -> None:
    shape, pads = shape_pads
    data = make(shape, np.int16, seed=len(pads))
    rank = len(shape)
    kept = [shape[a] - max(0, -pads[a]) - max(0, -pads[rank + a]) for a in range(rank)]
    grows = [pads[a] > 0 or pads[rank + a] > 0 for a in range(rank)]
    out_len = [shape[a] + pads[a] + pads[rank + a] for a in range(rank)]
    if any(n < 0 for n in out_len):
        with pytest.raises(KernelError, match="negative size"):
            pad(data, pads, mode=mode)
    elif mode != "constant" and any(g and k <= 0 for g, k in zip(grows, kept, strict=True)):
        with pytest.raises(KernelError, match="no elements left"):
            pad(data, pads, mode=mode)
    else:
        check(pad(data, pads, mode=mode), oracle(data, pads, mode))


@settings(max_examples=150, deadline=None)
@given(shapes_and_pads(allow_negative=False), st.sampled_from(MODES))
def test_property_pad_then_crop_round_trips(shape_pads, mode) -> None:
    shape, pads = shape_pads
    data = make(shape, object)
    padded = pad(data, pads, mode=mode)
    check(pad(padded, [-p for p in pads], mode=mode), data)


# ---------------------------------------------------------------------------------------------
# invalid configurations


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pads": [1, 1, 1, 1], "mode": "mirror"}, "mode 'mirror' is not one of 'constant', 'reflect'"),
        ({"pads": [1, 1, 1]}, r"pads \[1, 1, 1\] has 3 entries; expected 2 \* 2 = 4"),
        ({"pads": [1, 1], "axes": [0, 1]}, "expected 2 \\* 2 = 4"),
        ({"pads": [1, 1], "axes": [2]}, r"axes value 2 is out of range \[-2, 1\]"),
        ({"pads": [1, 1], "axes": [-3]}, r"axes value -3 is out of range"),
        ({"pads": [1, 1, 1, 1], "axes": [1, -1]}, r"axes \[1, -1\] refer to the same axis"),
        ({"pads": [0, -2, 0, -3]}, "axis 1 of length 4 a negative size -1"),
        ({"pads": [0.5, 1, 1, 1]}, "pads must hold integers"),
        ({"pads": [[1, 1], [1, 1]]}, r"pads must be a 1-D tensor, got shape \(2, 2\)"),
        ({"pads": [1, 1], "axes": [0.0]}, "axes entry 0.0 is not an integer"),
        ({"pads": [1, 1, 1, 1], "constant_value": np.array([1.0, 2.0])}, "scalar or 1-element"),
        ({"pads": [1, 1, 1, 1], "constant_value": np.array("x")}, "constant_value of dtype '<U1'"),
        ({"pads": [1, 1, 1, 1], "constant_value": np.array(1 + 1j)}, "complex128"),
    ],
)
def test_invalid_configurations(kwargs, message) -> None:
    data = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(KernelError, match=message):
        pad(data, **kwargs)


def test_invalid_constants_for_other_dtypes() -> None:
    with pytest.raises(KernelError, match="out of range for dtype 'int8'"):
        pad(np.zeros(2, dtype=np.int8), [1, 1], np.array(300))
    with pytest.raises(KernelError, match="must be a str"):
        pad(np.array(["a"], dtype=object), [1, 1], np.array(0))
    with pytest.raises(KernelError, match="does not match data of dtype 'int32'"):
        pad(np.zeros(2, dtype=np.int32), [1, 1], np.array(1.5))
    assert issubclass(KernelError, ValueError)
