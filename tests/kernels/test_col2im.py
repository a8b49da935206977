"""Tests for customops.kernels.padding.col2im (ONNX Col2Im-18)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper
from onnx.reference import ReferenceEvaluator

from customops.errors import KernelError
from customops.kernels.padding.col2im import col2im
from tests.helpers import backend_cases

BACKEND_CASES = backend_cases("test_col2im", generator="col2im")


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND_CASES}
    assert {"test_col2im", "test_col2im_strides", "test_col2im_pads", "test_col2im_dilations"} <= names
    assert "test_col2im_5d" in names


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for inputs, outputs in case.data_sets:
        got = col2im(*inputs, **attrs)
        expected = outputs[0]
        assert got.dtype == expected.dtype
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)


# ---------------------------------------------------------------------------------------------
# helpers


def n_blocks(image, block, dilations, pads, strides):
    r = len(image)
    return [
        (image[i] + pads[i] + pads[r + i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1
        for i in range(r)
    ]


def im2col(x, block, dilations, pads, strides):
    """The adjoint of col2im: gather every block of the zero-padded image x [N, C, *image]."""
    r = len(block)
    padded = np.pad(x, [(0, 0), (0, 0), *((pads[i], pads[r + i]) for i in range(r))])
    counts = n_blocks(x.shape[2:], block, dilations, pads, strides)
    rows = []
    for offset in itertools.product(*(range(b) for b in block)):
        index = [np.arange(counts[i]) * strides[i] + offset[i] * dilations[i] for i in range(r)]
        rows.append(padded[(slice(None), slice(None), *np.ix_(*index))].reshape(*x.shape[:2], -1))
    cols = np.stack(rows, axis=2)  # N, C, K, L
    return cols.reshape(x.shape[0], -1, cols.shape[-1])


def reference(x, image, block, **attrs):
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    i64 = onnx.TensorProto.INT64
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", elem, None),
            helper.make_tensor_value_info("image", i64, None),
            helper.make_tensor_value_info("block", i64, None),
        ],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feeds = {"x": x, "image": np.array(image, dtype=np.int64), "block": np.array(block, dtype=np.int64)}
    return ReferenceEvaluator(model).run(None, feeds)[0]


def random_config(rng, rank):
    while True:
        image = rng.integers(1, 7, size=rank).tolist()
        block = rng.integers(1, 4, size=rank).tolist()
        dilations = rng.integers(1, 3, size=rank).tolist()
        strides = rng.integers(1, 3, size=rank).tolist()
        pads = rng.integers(0, 3, size=2 * rank).tolist()
        counts = n_blocks(image, block, dilations, pads, strides)
        if min(counts) >= 1:
            return image, block, {"dilations": dilations, "pads": pads, "strides": strides}, counts


def check(got, expected):
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------------
# semantics


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_against_onnx_reference(rank) -> None:
    rng = np.random.default_rng(rank)
    for _ in range(8):
        image, block, attrs, counts = random_config(rng, rank)
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        x = rng.integers(-50, 50, size=(n, c * math.prod(block), math.prod(counts))).astype(np.float64)
        check(col2im(x, np.array(image), np.array(block), **attrs), reference(x, image, block, **attrs))


def test_dilation_and_end_padding_with_two_channels() -> None:
    # hand-computed; ORT 1.32 returns [[2, 9, 11, 24], [17, 18, 19, 20]] here
    x = np.arange(1, 21, dtype=np.float32).reshape(1, 4, 5)
    got = col2im(x, np.array([4]), np.array([2]), dilations=[2], pads=[1, 2])
    assert got.tolist() == [[[2, 9, 11, 13], [12, 29, 31, 33]]]


def test_default_attributes_absent_or_empty() -> None:
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 9)
    a = col2im(x, np.array([10]), np.array([2]))
    b = col2im(x, np.array([10]), np.array([2]), dilations=[], pads=[], strides=[])
    c = col2im(x, np.array([10]), np.array([2]), dilations=[1], pads=[0, 0], strides=[1])
    check(a, b)
    check(a, c)


def _sum_config():
    # 2-D, overlapping 2x2 blocks with stride 1 on a 3x3 image: up to 4 contributions per pixel
    values = np.arange(1, 1 + 2 * 4 * 4).reshape(1, 8, 4)  # N=1, C=2, K=4, L=4
    return values, np.array([3, 3]), np.array([2, 2])


INT_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_sums_wrap_around(dtype) -> None:
    values, image, block = _sum_config()
    values = values * 9  # pixel sums up to 4 * 288: overflow for 8-bit types
    exact = col2im(values.astype(np.int64), image, block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = exact.astype(dtype)  # modular conversion
    check(col2im(values.astype(dtype), image, block), expected)


def test_int8_overflow_hand_computed() -> None:
    x = np.full((1, 4, 9), 100, dtype=np.int8)  # 2x2 blocks on 4x4: centre pixels get 4 * 100
    got = col2im(x, np.array([4, 4]), np.array([2, 2]))
    assert got[0, 0, 0, 0] == 100
    assert got[0, 0, 0, 1] == np.int8(200 - 256)
    assert got[0, 0, 1, 1] == np.int8(400 - 512)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_float_types(dtype) -> None:
    values, image, block = _sum_config()
    check(col2im(values.astype(dtype), image, block), col2im(values, image, block).astype(dtype))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_complex(dtype) -> None:
    values, image, block = _sum_config()
    got = col2im((values + 1j * (100 - values)).astype(dtype), image, block)
    real = col2im(values, image, block)
    imag = col2im(100 - values, image, block)
    check(got, (real + 1j * imag).astype(dtype))


def test_bool_sum_is_logical_or() -> None:
    values, image, block = _sum_config()
    mask = values % 3 == 0
    expected = col2im(mask.astype(np.int64), image, block) > 0
    check(col2im(mask, image, block), expected)
    # stride 2: the corner pixels see one block each, a pixel outside every block stays False
    x = np.ones((1, 1, 4), dtype=bool)
    got = col2im(x, np.array([3, 3]), np.array([1, 1]), strides=[2, 2])
    assert got[0, 0].tolist() == [[True, False, True], [False, False, False], [True, False, True]]


def test_strings_concatenate_in_block_order() -> None:
    # 1-D image of 4, blocks of 2 with stride 1: block l covers pixels l and l + 1
    x = np.array([[["a", "b", "c"], ["x", "y", "z"]]], dtype=object)  # K=2 rows, L=3 blocks
    got = col2im(x, np.array([4]), np.array([2]))
    assert got.dtype == object
    assert got.tolist() == [[["a", "xb", "yc", "z"]]]
    # pixels no block reaches are the empty string
    x = np.array([[["p", "q"]]], dtype=object)
    got = col2im(x, np.array([5]), np.array([1]), strides=[3], pads=[0, 1])
    assert got.tolist() == [[["p", "", "", "q", ""]]]
    # 2-D: lexicographic block order
    x = np.array([["A", "B", "C", "D"]] * 4, dtype=object).reshape(1, 4, 4)
    x = x + np.array(["0", "1", "2", "3"], dtype=object).reshape(1, 4, 1)  # element k of block l
    got = col2im(x, np.array([3, 3]), np.array([2, 2]))
    assert got[0, 0, 1, 1] == "A3B2C1D0"
    assert got[0, 0, 0, 1] == "A1B0"


def test_strings_with_non_string_elements_are_rejected() -> None:
    x = np.array([[["a", 1]]], dtype=object)
    with pytest.raises(KernelError, match="non-string"):
        col2im(x, np.array([2]), np.array([1]))


def test_empty_batch_and_channels() -> None:
    got = col2im(np.zeros((0, 4, 9), dtype=np.float32), np.array([4, 4]), np.array([2, 2]))
    assert got.shape == (0, 1, 4, 4) and got.dtype == np.float32
    got = col2im(np.zeros((2, 0, 9), dtype=np.int32), np.array([4, 4]), np.array([2, 2]))
    assert got.shape == (2, 0, 4, 4)
    # an image axis of size 0 whose blocks all land in the padding
    got = col2im(np.ones((1, 1, 2), dtype=np.float32), np.array([0]), np.array([1]), pads=[1, 1])
    assert got.shape == (1, 1, 0)


def test_large_2d_matches_reference_structure() -> None:
    # 16 channels, 3x3 blocks, 32x32 image, pads 1: against the im2col adjoint identity
    rng = np.random.default_rng(7)
    x = rng.integers(-9, 9, size=(1, 144, 32 * 32)).astype(np.int64)
    img = rng.integers(-9, 9, size=(1, 16, 32, 32)).astype(np.int64)
    out = col2im(x, np.array([32, 32]), np.array([3, 3]), pads=[1, 1, 1, 1])
    assert int((out * img).sum()) == int((x * im2col(img, [3, 3], [1, 1], [1, 1, 1, 1], [1, 1])).sum())


# ---------------------------------------------------------------------------------------------
# properties


@st.composite
def configs(draw):
    rank = draw(st.integers(1, 3))
    block = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    pads = draw(st.lists(st.integers(0, 2), min_size=2 * rank, max_size=2 * rank))
    extra = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    # the image must hold at least one dilated block once padded
    image = [
        max(0, dilations[i] * (block[i] - 1) + 1 - pads[i] - pads[rank + i]) + extra[i] for i in range(rank)
    ]
    return image, block, dilations, pads, strides


@settings(max_examples=120, deadline=None)
@given(configs(), st.integers(1, 2), st.integers(1, 2))
def test_property_adjoint_of_im2col(config, n, c) -> None:
    # <col2im(Y), X> == <Y, im2col(X)> for every Y and X: exact with integers
    image, block, dilations, pads, strides = config
    counts = n_blocks(image, block, dilations, pads, strides)
    rng = np.random.default_rng(sum(image) + 7 * sum(block))
    y = rng.integers(-5, 5, size=(n, c * math.prod(block), math.prod(counts))).astype(np.int64)
    x = rng.integers(-5, 5, size=(n, c, *image)).astype(np.int64)
    out = col2im(y, np.array(image), np.array(block), dilations=dilations, pads=pads, strides=strides)
    assert out.shape == (n, c, *image)
    assert int((out * x).sum()) == int((y * im2col(x, block, dilations, pads, strides)).sum())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=3),
    st.lists(st.integers(1, 3), min_size=3, max_size=3),
    st.lists(st.integers(0, 2), min_size=6, max_size=6),
)
def test_property_non_overlapping_blocks_reconstruct(block, counts, pad_parts) -> None:
    # blocks tiling the padded image exactly (stride == block): col2im(im2col(x)) == x
    rank = len(block)
    counts = counts[:rank]
    begins = [min(p, b - 1) for p, b in zip(pad_parts[:rank], block, strict=True)]
    ends = [min(p, b - 1 - q) for p, b, q in zip(pad_parts[3 : 3 + rank], block, begins, strict=True)]
    pads = begins + ends  # less than one block of padding per axis: every image axis is non-empty
    image = [counts[i] * block[i] - pads[i] - pads[rank + i] for i in range(rank)]
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((2, 3, *image)).astype(np.float32)
    ones = [1] * rank
    cols = im2col(x, block, ones, pads, block)
    check(col2im(cols, np.array(image), np.array(block), pads=pads, strides=block), x)


# ---------------------------------------------------------------------------------------------
# invalid configurations


@pytest.mark.parametrize(
    ("shape", "image", "block", "attrs", "message"),
    [
        ((4, 9), [4, 4], [2, 2], {}, r"input must be 3-D .* got shape \(4, 9\)"),
        ((1, 4, 9), [4, 4], [2, 2, 1], {}, r"block_shape \[2, 2, 1\] has 3 entries but image_shape"),
        ((1, 4, 9), [], [], {}, "image_shape is empty"),
        ((1, 4, 9), [4, 4], [2, 0], {}, r"block_shape \[2, 0\] contains 0; sizes must be positive"),
        ((1, 4, 9), [4, -4], [2, 2], {}, r"image_shape \[4, -4\] contains -4"),
        (
            (1, 4, 9),
            [4, 4],
            [2, 2],
            {"strides": [0, 1]},
            r"strides \[0, 1\] contains 0; every value must be positive",
        ),
        ((1, 4, 9), [4, 4], [2, 2], {"dilations": [1, -1]}, r"dilations \[1, -1\] contains -1"),
        (
            (1, 4, 9),
            [4, 4],
            [2, 2],
            {"pads": [0, -1, 0, 0]},
            r"pads \[0, -1, 0, 0\] contains -1; every value must be >= 0",
        ),
        ((1, 4, 9), [4, 4], [2, 2], {"pads": [1, 1]}, r"pads \[1, 1\] has 2 entries; expected 4"),
        ((1, 4, 9), [4, 4], [2, 2], {"strides": [1]}, r"strides \[1\] has 1 entries; expected 2"),
        ((1, 5, 9), [4, 4], [2, 2], {}, r"input dimension 1 \(5\) is not a multiple of prod\(block_shape"),
        (
            (1, 4, 8),
            [4, 4],
            [2, 2],
            {},
            r"input dimension 2 \(8\) does not match the number of blocks \[3, 3\] = 9",
        ),
        ((1, 4, 0), [1, 1], [2, 2], {}, "block of extent 2 .* does not fit in spatial axis 0 of size 1"),
        ((1, 4, 9), [4.0, 4.0], [2, 2], {}, "image_shape must hold integers"),
    ],
)
def test_invalid_configurations(shape, image, block, attrs, message) -> None:
    with pytest.raises(KernelError, match=message):
        col2im(np.zeros(shape, dtype=np.float32), np.array(image), np.array(block), **attrs)
