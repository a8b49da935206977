"""Tests for customops.kernels.spatial.deform_conv (ONNX DeformConv-19 and -22)."""

from __future__ import annotations

import contextlib
import itertools
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import customops
from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.spatial import deform_conv as module
from customops.kernels.spatial.deform_conv import deform_conv
from tests.helpers import backend_cases, one_node_model, run_builtin, run_custom

BACKEND_CASES = backend_cases("test_basic_deform_conv", "test_deform_conv", generator="deformconv")


def test_backend_cases_found() -> None:
    names = {c.name for c in BACKEND_CASES}
    assert {
        "test_basic_deform_conv_with_padding",
        "test_basic_deform_conv_without_padding",
        "test_deform_conv_with_mask_bias",
        "test_deform_conv_with_multiple_offset_groups",
    } <= names


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.name)
def test_backend_node_case(case) -> None:
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for inputs, outputs in case.data_sets:
        got = deform_conv(*inputs, **attrs)
        assert got.dtype == outputs[0].dtype and got.shape == outputs[0].shape
        np.testing.assert_allclose(got, outputs[0], rtol=case.rtol, atol=case.atol)


# ---------------------------------------------------------------------------------------------
# an independent scalar re-derivation of the spec formula, float64


def sample(img: np.ndarray, point: list[float]) -> float:
    """Multilinear interpolation of img (D1..Dr) at ``point``: the sum over the 2^r surrounding pixels
    of prod(1 - |q - p|) * img[q], pixels outside the image being zero; a pixel of weight 0 adds nothing."""
    if any(math.isnan(p) for p in point):
        return math.nan
    total = 0.0
    for corner in itertools.product((0, 1), repeat=len(point)):
        q = [math.floor(p) + c if math.isfinite(p) else None for p, c in zip(point, corner, strict=True)]
        if any(v is None or not 0 <= v < d for v, d in zip(q, img.shape, strict=True)):
            continue
        weight = 1.0
        for v, p in zip(q, point, strict=True):
            weight *= max(0.0, 1.0 - abs(v - p))
        if weight:
            total += weight * float(img[tuple(q)])
    return total


def slow(x, w, off, b=None, mask=None, dilations=None, group=1, offset_group=1, pads=None, strides=None):
    n, c = x.shape[:2]
    r = x.ndim - 2
    kernel = w.shape[2:]
    dil = dilations or [1] * r
    st = strides or [1] * r
    pd = pads or [0] * (2 * r)
    out = off.shape[2:]
    taps = list(itertools.product(*(range(k) for k in kernel)))
    oc = w.shape[0]
    y = np.zeros((n, oc, *out))
    for b_i, o, pos in itertools.product(range(n), range(oc), itertools.product(*(range(s) for s in out))):
        g = o // (oc // group)
        total = 0.0 if b is None else float(b[o])
        for ci in range(c // group):
            ch = g * (c // group) + ci
            og = ch // (c // offset_group)
            for t, tap in enumerate(taps):
                point = [
                    pos[d] * st[d]
                    - pd[d]
                    + tap[d] * dil[d]
                    + float(off[(b_i, (og * len(taps) + t) * r + d, *pos)])
                    for d in range(r)
                ]
                m = 1.0 if mask is None else float(mask[(b_i, og * len(taps) + t, *pos)])
                total += float(w[(o, ci, *tap)]) * m * sample(x[b_i, ch].astype(np.float64), point)
        y[(b_i, o, *pos)] = total
    return y


def random_case(rng, r, dtype=np.float64):
    group = int(rng.integers(1, 3))
    offset_group = int(rng.integers(1, 3))
    c = group * offset_group * int(rng.integers(1, 3))
    oc = group * int(rng.integers(1, 3))
    kernel = [int(rng.integers(1, 4)) for _ in range(r)]
    dil = [int(rng.integers(1, 3)) for _ in range(r)]
    st = [int(rng.integers(1, 3)) for _ in range(r)]
    pd = [int(rng.integers(0, 3)) for _ in range(2 * r)]
    spatial = [
        max(1, dil[i] * (kernel[i] - 1) + 1 - pd[i] - pd[r + i]) + int(rng.integers(0, 3)) for i in range(r)
    ]
    out = [(spatial[i] + pd[i] + pd[r + i] - dil[i] * (kernel[i] - 1) - 1) // st[i] + 1 for i in range(r)]
    n = int(rng.integers(1, 3))
    taps = math.prod(kernel)
    x = rng.standard_normal((n, c, *spatial)).astype(dtype)
    w = rng.standard_normal((oc, c // group, *kernel)).astype(dtype)
    off = (rng.standard_normal((n, offset_group * taps * r, *out)) * 1.5).astype(dtype)
    b = rng.standard_normal(oc).astype(dtype) if rng.random() < 0.5 else None
    mask = rng.random((n, offset_group * taps, *out)).astype(dtype) if rng.random() < 0.5 else None
    attrs = dict(dilations=dil, group=group, offset_group=offset_group, pads=pd, strides=st)
    return x, w, off, b, mask, attrs


def _path(numpy_only: bool) -> contextlib.AbstractContextManager[None]:
    """The numpy path (jit.numpy_only) or the path the kernel chooses (compiled in 2-D with numba)."""
    return jit.numpy_only() if numpy_only else contextlib.nullcontext()


def _check_path(numpy_only: bool, compiled_calls, ran_2d: bool) -> None:
    """The compiled im2col ran exactly when it should have: never under numpy_only, else for 2-D
    images with numba."""
    calls = compiled_calls["deform_im2col_2d"]
    assert (calls > 0) == (ran_2d and not numpy_only and jit.enabled()), calls


@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("numpy_only", [False, True], ids=["chosen", "numpy"])
def test_against_scalar_rederivation(r, numpy_only, compiled_calls) -> None:
    rng = np.random.default_rng(r)
    for _ in range(12 if r < 3 else 5):
        x, w, off, b, mask, attrs = random_case(rng, r)
        with _path(numpy_only):
            got = deform_conv(x, w, off, b, mask, **attrs)
        np.testing.assert_allclose(got, slow(x, w, off, b, mask, **attrs), rtol=1e-10, atol=1e-10)
    _check_path(numpy_only, compiled_calls, r == 2)


def test_float32_against_rederivation() -> None:
    rng = np.random.default_rng(7)
    for _ in range(8):
        x, w, off, b, mask, attrs = random_case(rng, 2, np.float32)
        got = deform_conv(x, w, off, b, mask, **attrs)
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_allclose(got, slow(x, w, off, b, mask, **attrs), rtol=1e-4, atol=1e-4)


def test_compiled_and_numpy_paths_are_identical() -> None:
    rng = np.random.default_rng(3)
    for i in range(12):
        x, w, off, b, mask, attrs = random_case(rng, 2, np.float32 if i % 2 else np.float64)
        off.ravel()[0] = np.nan
        x.ravel()[-1] = np.inf
        x.ravel()[0] = -0.0
        w[...] = np.where(rng.random(w.shape) < 0.3, 0.0, w)
        compiled = deform_conv(x, w, off, b, mask, **attrs)
        with jit.numpy_only():
            plain = deform_conv(x, w, off, b, mask, **attrs)
        np.testing.assert_array_equal(compiled, plain)
        number = ~np.isnan(plain)
        assert (np.signbit(compiled) == np.signbit(plain))[number].all()  # zeros of the same sign too


def test_chunks_of_output_positions_give_the_same_result(monkeypatch) -> None:
    rng = np.random.default_rng(4)
    x, w, off, b, mask, attrs = random_case(rng, 2)
    whole = deform_conv(x, w, off, b, mask, **attrs)
    monkeypatch.setattr(module, "COLUMN_BUDGET", 1)  # one output position per chunk
    # the same samples; the matrix product may round differently for another number of columns
    np.testing.assert_allclose(deform_conv(x, w, off, b, mask, **attrs), whole, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------------
# hand-computed cases


def test_hand_computed_half_pixel_offsets() -> None:
    x = np.arange(1, 10, dtype=np.float64).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 1, 1))
    off = np.zeros((1, 2, 3, 3))
    off[0, 0] = 0.5  # y + 0.5 everywhere
    # rows interpolate: (1+4)/2, ...; the last row mixes with the zero below: 7/2
    expected = [[2.5, 3.5, 4.5], [5.5, 6.5, 7.5], [3.5, 4.0, 4.5]]
    assert deform_conv(x, w, off)[0, 0].tolist() == expected


def test_hand_computed_outside_rule() -> None:
    x = np.full((1, 1, 2, 2), 8.0)
    w = np.ones((1, 1, 1, 1))
    for dy, want in (
        (-0.5, 4.0),
        (-1.0, 0.0),
        (-1e-9, 8.0 * (1 - 1e-9)),
        (1.5, 4.0),
        (2.0, 0.0),
        (np.inf, 0.0),
    ):
        off = np.zeros((1, 2, 2, 2))
        off[0, 0, 0, 0] = dy
        assert deform_conv(x, w, off)[0, 0, 0, 0] == pytest.approx(want), dy


def test_nan_offset_gives_nan_and_inf_pixel_does_not_leak() -> None:
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 1, 4)
    x[0, 0, 0, 0] = np.inf
    w = np.ones((1, 1, 1, 1), np.float32)
    off = np.zeros((1, 2, 1, 4), np.float32)
    assert deform_conv(x, w, off).ravel().tolist() == [np.inf, 2, 3, 4]
    off[0, 1, 0, 2] = np.nan
    got = deform_conv(x, w, off).ravel()
    assert np.isnan(got[2]) and got[[1, 3]].tolist() == [2, 4]


def test_mask_and_bias_hand_computed() -> None:
    x = np.arange(1, 5, dtype=np.float64).reshape(1, 1, 2, 2)
    w = np.array([[[[1.0, 10.0]]]])
    off = np.zeros((1, 4, 2, 1))
    mask = np.array([0.5, 2.0, 1.0, 0.0]).reshape(1, 2, 2, 1)  # (tap, row) per position
    got = deform_conv(x, w, off, np.array([100.0]), mask)
    # row 0: 1*0.5*1 + 10*1*2 ; row 1: 3*2.0*1 + 10*4*0
    assert got.ravel().tolist() == [100 + 0.5 + 20, 100 + 6.0]


@pytest.mark.parametrize("opset", [19, 22])
def test_zero_offsets_equal_ort_conv(opset) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    attrs = dict(group=2, pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2])
    model, feed = one_node_model("Conv", {"X": x, "W": w, "B": b}, 11, **attrs)
    conv = run_builtin(model, feed)[0]
    off = np.zeros((2, 2 * 6, *conv.shape[2:]), np.float32)
    ours = deform_conv(x, w, off, b, None, **attrs)
    np.testing.assert_allclose(ours, conv, rtol=1e-5, atol=1e-5)
    model, feed = one_node_model("DeformConv", {"X": x, "W": w, "offset": off, "B": b}, opset, **attrs)
    np.testing.assert_allclose(run_custom(model, feed)[0], conv, rtol=1e-5, atol=1e-5)


def test_whole_offsets_move_the_taps() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 1, 5, 5))
    w = np.ones((1, 1, 1, 1))
    off = np.zeros((1, 2, 5, 5))
    off[0, 0], off[0, 1] = 1, -2  # every tap reads (y + 1, x - 2)
    expected = np.zeros((5, 5))
    expected[:4, 2:] = x[0, 0, 1:, :3]
    np.testing.assert_array_equal(deform_conv(x, w, off)[0, 0], expected)


# ---------------------------------------------------------------------------------------------
# empty tensors, attributes, invalid inputs


def test_empty_batch_channels_and_outputs() -> None:
    f = np.float32
    assert deform_conv(
        np.ones((0, 1, 3, 3), f), np.ones((1, 1, 2, 2), f), np.zeros((0, 8, 2, 2), f)
    ).shape == (
        0,
        1,
        2,
        2,
    )
    assert deform_conv(
        np.ones((1, 1, 3, 3), f), np.ones((0, 1, 2, 2), f), np.zeros((1, 8, 2, 2), f)
    ).shape == (
        1,
        0,
        2,
        2,
    )
    got = deform_conv(
        np.ones((1, 0, 3, 3), f), np.ones((2, 0, 2, 2), f), np.zeros((1, 8, 2, 2), f), np.array([1, 2], f)
    )
    assert got[0, :, 0, 0].tolist() == [1, 2] and got.shape == (1, 2, 2, 2)
    zero_width = deform_conv(
        np.ones((1, 1, 2, 0), f), np.ones((1, 1, 1, 1), f), np.zeros((1, 2, 2, 2), f), pads=[0, 1, 0, 1]
    )
    assert zero_width.tolist() == np.zeros((1, 1, 2, 2)).tolist()


def test_a_huge_group_count_with_no_channel_costs_nothing() -> None:
    f = np.float32
    x, off = np.ones((1, 0, 3, 3), f), np.zeros((1, 8, 2, 2), f)
    got = deform_conv(x, np.ones((0, 0, 2, 2), f), off, group=10**12)
    assert got.shape == (1, 0, 2, 2)
    got = deform_conv(x, np.ones((2, 0, 2, 2), f), off, np.array([3, 4], f), group=2)
    assert got[0, :, 1, 1].tolist() == [3, 4]


def test_absent_means_default_and_empty_means_absent() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 2, 4, 5))
    w = rng.standard_normal((3, 2, 2, 3))
    off = rng.standard_normal((2, 12, 3, 3))
    e = np.zeros((0,))
    plain = deform_conv(x, w, off)
    explicit = deform_conv(x, w, off, e, e, dilations=[], pads=[], strides=[], kernel_shape=[])
    np.testing.assert_array_equal(explicit, plain)
    np.testing.assert_array_equal(deform_conv(x, w, off, None, np.ones((2, 6, 3, 3))), plain)
    np.testing.assert_array_equal(deform_conv(x, w, off, np.zeros(3)), plain)
    defaults = dict(
        dilations=[1, 1], pads=[0] * 4, strides=[1, 1], kernel_shape=[2, 3], group=1, offset_group=1
    )
    np.testing.assert_array_equal(deform_conv(x, w, off, **defaults), plain)


F = np.float32
X = np.ones((1, 2, 4, 4), F)
W = np.ones((2, 2, 2, 2), F)
OFF = np.zeros((1, 8, 3, 3), F)


@pytest.mark.parametrize(
    ("args", "attrs", "message"),
    [
        ((X, W, OFF), {"kernel_shape": [3, 3]}, "differs from W's spatial shape"),
        ((X, W, OFF), {"group": 2}, "times group"),
        ((X, np.ones((3, 1, 2, 2), F), OFF), {"group": 2}, "not divisible by group"),
        ((X, W, OFF), {"offset_group": 3}, "not divisible by offset_group"),
        ((X, W, OFF), {"group": 0}, "group is 0; it must be >= 1"),
        ((X, W, OFF), {"offset_group": -1}, "offset_group is -1; it must be >= 1"),
        ((X, W, np.zeros((1, 6, 3, 3), F)), {}, "offset has shape"),
        ((X, W, np.zeros((1, 8, 2, 3), F)), {}, "offset has shape"),
        ((X, W, OFF, np.ones(3, F)), {}, "B has shape"),
        ((X, W, OFF, None, np.ones((1, 8, 3, 3), F)), {}, "mask has shape"),
        ((X, W, OFF), {"pads": [0, 0, -1, 0]}, "pads"),
        ((X, W, OFF), {"strides": [1]}, "strides"),
        ((X, W, OFF), {"dilations": [0, 1]}, "dilations"),
        ((np.ones((1, 2, 1, 4), F), W, np.zeros((1, 8, 0, 3), F)), {}, "does not fit"),
        ((np.ones((1, 2, 1, 4), F), W, np.zeros((1, 8, 1, 2), F)), {"strides": [2, 2]}, "does not fit"),
        ((np.ones((1, 2), F), W, OFF), {}, "at least one spatial axis"),
        ((X, np.ones((2, 2, 2), F), OFF), {}, "W must have rank"),
        ((X, np.ones((2, 2, 0, 2), F), OFF), {}, "empty axis"),
        (
            (
                np.ones((1, 1) + (1,) * 11, F),
                np.ones((1, 1) + (1,) * 11, F),
                np.zeros((1, 11) + (1,) * 11, F),
            ),
            {},
            "at most 10",
        ),
        ((X, W.astype(np.float64), OFF), {}, "dtype"),
        ((X.astype(np.int32), W, OFF), {}, "float32 or float64"),
    ],
)
def test_invalid_inputs_raise_kernel_error(args, attrs, message) -> None:
    with pytest.raises(KernelError, match=message):
        deform_conv(*args, **attrs)


# ---------------------------------------------------------------------------------------------
# through ONNX Runtime: every element type, bridged types, rewrite and restore


@pytest.mark.parametrize(
    ("opset", "dtype"),
    [(19, np.float32), (19, np.float64), (22, np.float64), (19, np.float16), (22, np.float16)],
)
def test_every_native_and_float16_type_through_a_session(opset, dtype) -> None:
    rng = np.random.default_rng(9)
    x, w, off, b, mask, attrs = random_case(rng, 2)
    b = rng.standard_normal(w.shape[0])
    inputs = {"X": x, "W": w, "offset": off, "B": b, "mask": mask}
    inputs = {k: None if v is None else v.astype(dtype) for k, v in inputs.items()}
    model, feed = one_node_model("DeformConv", inputs, opset, **attrs)
    got = run_custom(model, feed)[0]
    assert got.dtype == dtype
    cast = {k: None if v is None else v.astype(np.float64) for k, v in inputs.items()}
    expected = slow(cast["X"], cast["W"], cast["offset"], cast["B"], cast["mask"], **attrs)
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(
        got.astype(np.float64), expected.astype(dtype).astype(np.float64), rtol=tol, atol=tol * 4
    )


def test_bfloat16_is_bridged_through_float() -> None:
    rng = np.random.default_rng(10)
    x, w, off, _, mask, attrs = random_case(rng, 2, np.float32)
    names = ["X", "W", "offset", "B", "mask"]
    values = dict(
        zip(names, (x, w, off, rng.standard_normal(w.shape[0]).astype(np.float32), mask), strict=True)
    )
    present = [n for n in names if values[n] is not None]
    nodes = [helper.make_node("Cast", [n], [f"{n}_bf"], to=TensorProto.BFLOAT16) for n in present]
    nodes.append(
        helper.make_node(
            "DeformConv", [f"{n}_bf" if values[n] is not None else "" for n in names], ["Yb"], **attrs
        )
    )
    nodes.append(helper.make_node("Cast", ["Yb"], ["Y"], to=TensorProto.FLOAT))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(values[n].shape)) for n in present],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    result = customops.rewrite_model(model)
    assert [n.op_type for n in result.model.graph.node].count("DeformConv") == 1 and not result.skipped
    got = customops.InferenceSession(result.model).run(None, {n: values[n] for n in present})[0]
    import ml_dtypes

    rounded = {n: values[n].astype(ml_dtypes.bfloat16).astype(np.float64) for n in present}
    expected = slow(rounded["X"], rounded["W"], rounded["offset"], rounded["B"], rounded.get("mask"), **attrs)
    np.testing.assert_allclose(
        got, expected.astype(ml_dtypes.bfloat16).astype(np.float32), rtol=2e-2, atol=5e-2
    )


def test_ort_agrees_on_ordinary_2d_cases() -> None:
    rng = np.random.default_rng(11)
    for _ in range(6):
        x, w, off, b, mask, attrs = random_case(rng, 2, np.float32)
        model, feed = one_node_model(
            "DeformConv", {"X": x, "W": w, "offset": off, "B": b, "mask": mask}, 22, **attrs
        )
        np.testing.assert_allclose(
            run_custom(model, feed)[0], run_builtin(model, feed)[0], rtol=1e-4, atol=1e-4
        )


def test_rewrite_and_restore_round_trip() -> None:
    rng = np.random.default_rng(12)
    x, w, off, _, _, attrs = random_case(rng, 2, np.float32)
    model, _ = one_node_model("DeformConv", {"X": x, "W": w, "offset": off}, 19, initializers=("W",), **attrs)
    rewritten = customops.rewrite_model(model).model
    custom = [n for n in rewritten.graph.node if n.domain == customops.DOMAIN]
    assert [n.op_type for n in custom] == ["DeformConv"] and len(custom[0].input) == 5
    restored = customops.restore(rewritten)
    assert restored.SerializeToString() == model.SerializeToString()


def test_kernel_error_surfaces_through_a_session() -> None:
    model, feed = one_node_model("DeformConv", {"X": X, "W": W, "offset": OFF}, 22, kernel_shape=[3, 3])
    rewritten = customops.rewrite_model(model).model
    with pytest.raises(KernelError, match="kernel_shape"):
        customops.InferenceSession(rewritten).run(None, feed)


@pytest.mark.parametrize("numpy_only", [False, True], ids=["chosen", "numpy"])
def test_scratch_memory_is_bounded_by_the_column_budget(numpy_only, monkeypatch, compiled_calls) -> None:
    import tracemalloc

    budget = 1 << 14
    monkeypatch.setattr(module, "COLUMN_BUDGET", budget)
    rng = np.random.default_rng(13)
    x = rng.standard_normal((1, 2, 200, 200))
    w = rng.standard_normal((2, 2, 3, 3))
    off = rng.standard_normal((1, 18, 198, 198))
    with _path(numpy_only):
        deform_conv(x, w, off)  # compiled once, outside the measurement
        tracemalloc.start()
        try:
            out = deform_conv(x, w, off)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    _check_path(numpy_only, compiled_calls, True)
    # the output and one copy of the image, plus scratch bounded by the budget (not by the 39204
    # output positions x 9 kernel positions x 2 channels of a whole-image column buffer: 5.6 MB)
    assert peak < out.nbytes + x.nbytes + 64 * budget, peak


def test_split_over_threads_is_bit_identical(monkeypatch) -> None:
    from customops.accel import parallel

    rng = np.random.default_rng(14)
    x, w, off, b, mask, attrs = random_case(rng, 2, np.float32)
    monkeypatch.setitem(parallel._state, "threads", 1)
    serial = deform_conv(x, w, off, b, mask, **attrs)
    monkeypatch.setitem(parallel._state, "threads", 3)
    monkeypatch.setattr(parallel, "_MIN_WORK", 1)
    monkeypatch.setattr(parallel, "_MIN_PIECE_WORK", 1)
    np.testing.assert_array_equal(deform_conv(x, w, off, b, mask, **attrs), serial)
