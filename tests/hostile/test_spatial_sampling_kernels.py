"""The spatial-sampling kernels AffineGrid, MaxRoiPool, RoiAlign and DeformConv, and their translators,
on hostile inputs: tiny inputs with huge attributes or sizes, non-finite and huge coordinates, wrong
element types. Each must give a clean KernelError (or the right answer) quickly, with bounded memory, and
never take the process down: cases that could crash or exhaust memory run in a child process whose
address space is limited."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.accel import jit
from customops.errors import MESSAGE_LIMIT, KernelError
from customops.kernels.spatial import deform_conv as deform_conv_module
from customops.kernels.spatial.affine_grid import affine_grid
from customops.kernels.spatial.deform_conv import deform_conv
from customops.kernels.spatial.max_roi_pool import bin_edges, max_roi_pool
from customops.kernels.spatial.roi_align import roi_align
from tests.helpers import NEVER

F, D, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64
ABORTS = (134, 139, -6, -11)
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PRELUDE = """
import os, resource
import numpy as np
import onnx
import customops
from customops.errors import MESSAGE_LIMIT, KernelError
from customops.kernels.spatial.affine_grid import affine_grid
from customops.kernels.spatial.deform_conv import deform_conv
from customops.kernels.spatial.max_roi_pool import max_roi_pool
from customops.kernels.spatial.roi_align import roi_align

def limit_to(extra):
    used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + extra, resource.getrlimit(resource.RLIMIT_AS)[1]))

def attempt(call):
    try:
        y = call()
        print("ran", y.shape, flush=True)
    except KernelError as e:
        print("refused:", e, flush=True)
"""


def _child(code: str, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    """Run ``code`` after the prelude in a child process; return its stdout after checking it exited
    normally (no abort, no signal)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": _ROOT, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode not in ABORTS, proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _model(op: str, inputs: list[tuple[str, int, int]], opset: int, out_elem: int = F, **attrs):
    node = helper.make_node(op, [name for name, _, _ in inputs], ["y"], name="n", **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(name, elem, [None] * rank) for name, elem, rank in inputs if name],
        [helper.make_tensor_value_info("y", out_elem, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


# ---------------------------------------------------------------------------------------------
# Empty outputs whose other sizes no array can hold


@pytest.mark.parametrize(
    "call",
    [
        lambda: affine_grid(np.zeros((0, 2, 3), np.float32), np.array([0, 1, 2**62, 2**62])),
        lambda: max_roi_pool(
            np.ones((0, 2**40, 4, 4), np.float32), np.zeros((0, 5), np.float32), pooled_shape=[2**20, 2**20]
        ),
        lambda: roi_align(
            np.ones((1, 1, 4, 4), np.float32),
            np.zeros((0, 4), np.float32),
            np.zeros(0, np.int64),
            output_height=2**62,
            output_width=2**62,
        ),
    ],
    ids=["AffineGrid", "MaxRoiPool", "RoiAlign"],
)
def test_empty_output_too_large_to_exist_is_a_kernel_error(call) -> None:
    # numpy refused these shapes with ValueError ("array is too big") before: not a KernelError
    with pytest.raises(KernelError, match="larger than any array can be"):
        call()


def test_empty_affine_grid_of_impossible_size_through_a_session() -> None:
    out = _child(
        """
        from onnx import TensorProto, helper
        node = helper.make_node("AffineGrid", ["theta", "size"], ["y"])
        graph = helper.make_graph([node], "g",
            [helper.make_tensor_value_info("theta", TensorProto.FLOAT, [None, 2, 3]),
             helper.make_tensor_value_info("size", TensorProto.INT64, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
        m.ir_version = 9
        sess = customops.InferenceSession(customops.rewrite(m).SerializeToString())
        attempt(lambda: sess.run(None, {"theta": np.zeros((0, 2, 3), np.float32),
                                        "size": np.array([0, 1, 2**62, 2**62])})[0])
        attempt(lambda: sess.run(None, {"theta": np.zeros((1, 2, 3), np.float32),
                                        "size": np.array([1, 1, 10**9, 10**9])})[0])
        """
    )
    assert out.count("refused:") == 2, out


def test_affine_grid_size_with_millions_of_entries_is_refused_without_listing_them() -> None:
    # a size of 5e7 entries was listed as Python ints (9 s, 1.2 GB) and repr'd whole into the error
    with pytest.raises(KernelError) as info:
        affine_grid(np.zeros((1, 2, 3), np.float32), np.ones(50_000_000, np.int64))
    assert "size has 50000000 entries; expected 4" in str(info.value) and len(str(info.value)) < 200


# ---------------------------------------------------------------------------------------------
# MaxRoiPool


def test_max_roi_pool_double_rois_whose_scaled_corners_overflow_are_pooled_exactly() -> None:
    # 1e300 * 1e10 is past float64: int(inf) raised OverflowError before; the corners are exact
    # rationals now, and the roi covers the image
    x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    rois = np.array([[0, -1e300, -1e300, 1e300, 1e300]])
    y = max_roi_pool(x, rois, pooled_shape=[1, 1], spatial_scale=1e10)
    assert y.tolist() == [[[[15.0]]]]
    y = max_roi_pool(x, np.array([[0, 1e300, 1e300, 1e300, 1e300]]), pooled_shape=[2, 2], spatial_scale=1e10)
    assert (y == 0).all()  # a roi far past the image: every bin empty


def test_max_roi_pool_huge_pooled_axis_is_refused_before_anything_is_built() -> None:
    # pooled_shape [2^27, 1] over a 4x4 image took 85 s and 4 GB (Python lists of bin edges) before
    out = _child(
        """
        limit_to(3 << 30)
        x = np.ones((1, 1, 4, 4), np.float32)
        rois = np.array([[0, 0, 0, 3, 3]], np.float32)
        attempt(lambda: max_roi_pool(x, rois, pooled_shape=[2**27, 1]))
        attempt(lambda: max_roi_pool(x, rois, pooled_shape=[1, 2**31]))
        attempt(lambda: max_roi_pool(x, rois, pooled_shape=[2**31, 2**31]))
        """
    )
    assert out.count("refused:") == 3 and "bins per axis" in out, out


def test_max_roi_pool_largest_pooled_axis_is_exact() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    y = max_roi_pool(x, np.array([[0, 0, 0, 3, 3]], np.float32), pooled_shape=[2**20, 1])
    assert y.shape == (1, 1, 2**20, 1)
    # bin p of 2^20 over 4 rows covers row floor(p * 4 / 2^20): each row's maximum, 2^18 times
    assert (y[0, 0, :, 0] == np.repeat([3.0, 7.0, 11.0, 15.0], 2**18)).all()


def test_max_roi_pool_huge_and_ordinary_rois_together_pool_as_each_alone() -> None:
    x = np.arange(32, dtype=np.float64).reshape(1, 2, 4, 4)
    rois = np.array([[0, -1e30, 0, 1e30, 3], [0, 1, 1, 2, 2], [0, 3e20, -2e41, 3e20, 1e41], [0, 0, 0, 3, 3]])
    together = max_roi_pool(x, rois, pooled_shape=[3, 5])
    for i in range(len(rois)):
        assert np.array_equal(together[i], max_roi_pool(x, rois[i : i + 1], pooled_shape=[3, 5])[0])
    # the middle fifth of 2e30 columns holds the whole image; the other column bins lie outside it
    assert together[0, 0, :, 2].tolist() == [7.0, 11.0, 15.0]
    assert (together[0, :, :, [0, 1, 3, 4]] == 0).all()


def test_max_roi_pool_numpy_path_on_a_large_grid_equals_the_compiled_one(monkeypatch) -> None:
    # the numpy path looped in Python over every bin: 3.3 s for pooled_shape [700, 900] on three rois
    # (about 40 minutes for [2^15, 2^14], a 2 GB output check_output allows); now one reduceat a row bin
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 40, 50)).astype(np.float32)
    x[0, 1, 5, 5], x[0, 2, 7, 7] = np.nan, -np.inf
    rois = np.array([[0, 0, 0, 49, 39], [0, -5, 3, 20, 60], [0, 30, 30, 10, 10]], np.float32)
    fast = max_roi_pool(x, rois, pooled_shape=[700, 900])
    with jit.numpy_only():
        slow = max_roi_pool(x, rois, pooled_shape=[700, 900])
    assert np.isnan(slow).any() and np.isneginf(slow).any()
    np.testing.assert_array_equal(slow, fast)


@pytest.mark.parametrize("start", [0, 5, -3, -(2**41), 2**41, -(10**30), -(10**300)])
@pytest.mark.parametrize("span", [1, 3, 17, 2**41, 10**30, 3 * 10**300])
def test_bin_edges_equal_the_python_integer_formula(start, span) -> None:
    for bins in (1, 2, 7, 33):
        for limit in (0, 1, 9):
            starts, ends = bin_edges(start, span, bins, limit)
            for p in range(bins):
                lo = start + (p * span) // bins
                hi = start - ((-(p + 1) * span) // bins)
                assert starts[p] == min(max(lo, 0), limit) and ends[p] == min(max(hi, 0), limit)


# ---------------------------------------------------------------------------------------------
# RoiAlign


def test_roi_align_tall_map_and_wide_output_grid_is_refused_not_allocated() -> None:
    # a 1x1x2000x1 map and output_width 2^17 (a 1 MB output) took 1.2 GB of scratch rows before;
    # with 20000 rows the loop's table was 20 GB
    out = _child(
        """
        limit_to(1 << 30)
        for h in (2000, 20000):
            x = np.ones((1, 1, h, 1), np.float32)
            rois = np.array([[0, 0, 0, h]], np.float32)
            attempt(lambda: roi_align(x, rois, np.zeros(1, np.int64), output_height=2,
                                      output_width=2**17, sampling_ratio=1))
        """
    )
    assert out.count("refused:") == 2 and "H x output_width" in out, out


def test_roi_align_numpy_avg_path_pools_many_channels_in_bounded_scratch() -> None:
    # without numba, avg's x pass held every channel at once: C x rows x output_width float64, 4.3 GB
    # here for a 4 MB input and an 8 MB output (MemoryError under this limit); now a block of channels
    out = _child(
        """
        limit_to(2 << 30)
        x = np.ones((1, 64, 4096, 1), np.float32)
        attempt(lambda: roi_align(x, np.array([[0, 0, 0, 4096]], np.float32), np.zeros(1, np.int64),
                                  output_height=2, output_width=4096, sampling_ratio=1))
        """,
        env={"CUSTOMOPS_JIT": "0"},
    )
    assert "ran (1, 64, 2, 4096)" in out, out


def test_roi_align_numpy_avg_path_with_inf_and_nan_pixels_equals_the_compiled_one(
    monkeypatch,
) -> None:
    # the numpy path's masked sums formed one outer product of weights per bin: oh * ow * H * W work,
    # 0.7 s at 128 x 128 and some minutes at 512 x 512; now two matrix products per kind of value
    rng = np.random.default_rng(5)
    n = 384
    x = rng.standard_normal((1, 2, n, n)).astype(np.float32)
    for value in (np.nan, np.inf, -np.inf, np.inf, -np.inf):
        x[0, rng.integers(2), rng.integers(n), rng.integers(n)] = value
    x[0, 1, 10, 10], x[0, 1, 10, 11] = np.inf, -np.inf  # a bin mixing both infinities is NaN
    args = (x, np.array([[0, 0, n, n], [3.5, 1.25, 40, 90]], np.float32), np.zeros(2, np.int64))
    kwargs = {"output_height": n, "output_width": n, "sampling_ratio": 2}
    fast = roi_align(*args, **kwargs)
    with jit.numpy_only():
        slow = roi_align(*args, **kwargs)
    assert np.isnan(slow).any() and np.isposinf(slow).any() and np.isneginf(slow).any()
    np.testing.assert_allclose(slow, fast, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("jit", ["0", "1"])
def test_roi_align_max_mode_grid_beyond_the_term_limit_is_refused(jit) -> None:
    # without numba, max mode built the 2^21 x 2^21 outer product of weights before its size check
    out = _child(
        """
        limit_to(2 << 30)
        x = np.ones((1, 1, 4, 4), np.float32)
        attempt(lambda: roi_align(x, np.array([[0, 0, 3, 3]], np.float32), np.zeros(1, np.int64),
                                  mode="max", output_height=1, output_width=1, sampling_ratio=2**20))
        """,
        env={"CUSTOMOPS_JIT": jit},
    )
    assert ("refused:" in out) if jit == "0" else ("ran" in out or "refused:" in out), out


def test_roi_align_huge_attributes_and_rois_are_refused() -> None:
    x = np.ones((1, 1, 4, 4), np.float32)
    rois = np.array([[0, 0, 3, 3]], np.float32)
    batch = np.zeros(1, np.int64)
    with pytest.raises(KernelError):
        roi_align(x, rois, batch, output_height=2**40)
    with pytest.raises(KernelError):
        roi_align(x, rois, batch, sampling_ratio=2**40)
    with pytest.raises(KernelError, match="sample points"):
        roi_align(x, np.array([[-1e30, -1e30, 1e30, 1e30]], np.float32), batch)
    with pytest.raises(KernelError):
        roi_align(x, rois, np.array([2**62]))


def test_roi_align_extreme_coordinates_stay_inside_the_map() -> None:
    # finite coordinates whose sample points overflow to inf, in both coordinate modes and ratios:
    # the points lie outside (weight 0) or are clamped; nothing reads outside the map
    out = _child(
        """
        x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
        for rois in ([[-1e308, -1e308, 1.7e308, 1.7e308]], [[1.7e308, 1.7e308, -1e308, -1e308]],
                     [[-1.7e308, 0, 1e308, 3]], [[0, 0, 1e-320, 1e-320]]):
            for mode in ("avg", "max"):
                for coord in ("half_pixel", "output_half_pixel"):
                    for ratio in (1, 4):
                        y = roi_align(x, np.array(rois), np.zeros(1, np.int64), mode=mode, sampling_ratio=ratio,
                                      coordinate_transformation_mode=coord, output_height=2, output_width=2)
                        assert y.shape == (1, 1, 2, 2)
        print("done")
        """
    )
    assert "done" in out


# ---------------------------------------------------------------------------------------------
# DeformConv


@pytest.mark.parametrize("jit", ["0", "1"])
def test_deform_conv_int64_extreme_pads_and_strides_give_the_exact_positions(jit) -> None:
    # pads of 2^63 - 1 and a stride of 2^62: products overflow int64 on the way, but every position's
    # coordinate fits, so the wrapped arithmetic is exact; output row 2 is X's row 1, the rest padding
    out = _child(
        """
        x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
        big = 2**63 - 1
        y = deform_conv(x, np.ones((1, 1, 1, 1), np.float32), np.zeros((1, 2, 5, 3), np.float32),
                        pads=[big, 0, big, 0], strides=[2**62, 1])
        print(y[0, 0].tolist())
        """,
        env={"CUSTOMOPS_JIT": jit},
    )
    assert "[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [3.0, 4.0, 5.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]" in out, out


@pytest.mark.parametrize(
    "attrs",
    [
        {"group": 2**62},
        {"group": -1},
        {"offset_group": 2**62},
        {"offset_group": -(2**62)},
        {"strides": [2**62, 0]},
        {"dilations": [-1, 1]},
        {"pads": [-(2**62), 0, 0, 0]},
        {"kernel_shape": [1, 2]},
        {"kernel_shape": [2**40, 2**40]},
    ],
)
def test_deform_conv_hostile_attributes_are_kernel_errors(attrs) -> None:
    x = np.ones((1, 2, 3, 3), np.float32)
    with pytest.raises(KernelError):
        deform_conv(x, np.ones((2, 2, 1, 1), np.float32), np.zeros((1, 2, 3, 3), np.float32), **attrs)


def test_deform_conv_nan_and_huge_offsets_stay_inside_the_image() -> None:
    out = _child(
        """
        x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
        for v in (np.nan, np.inf, -np.inf, 3e38, -3e38, 2.0**63, -2.0**63, 1e-45):
            off = np.full((1, 2 * 9, 1, 1), v, np.float32)
            y = deform_conv(x, np.ones((1, 2, 3, 3), np.float32), off)
            assert y.shape == (1, 1, 1, 1)
        print("done")
        """
    )
    assert "done" in out


# ---------------------------------------------------------------------------------------------
# Translators: inputs of types the spec does not allow, attributes of the wrong kind

_X4 = [("x", F, 4)]


@pytest.mark.parametrize(
    "model, reason",
    [
        # these three were swapped before: a Cast helper turned the invalid size or rois into valid ones
        (_model("AffineGrid", [("t", F, 3), ("s", F, 1)], 20), "size has element type float"),
        (_model("AffineGrid", [("t", F, 3), ("s", TensorProto.STRING, 1)], 20), "requires int64"),
        (_model("AffineGrid", [("t", F, 3), ("s", TensorProto.INT32, 1)], 20), "requires int64"),
        (_model("MaxRoiPool", [*_X4, ("r", D, 2)], 22, pooled_shape=[2, 2]), "rois has element type double"),
        (
            _model("MaxRoiPool", [("x", TensorProto.FLOAT16, 4), ("r", I64, 2)], 22, pooled_shape=[2, 2]),
            "requires the same type",
        ),
        (_model("DeformConv", [*_X4, ("w", D, 4), ("o", F, 4)], 19), "W has element type double"),
        (
            _model(
                "DeformConv",
                [("x", TensorProto.FLOAT16, 4), ("w", I64, 4), ("o", TensorProto.FLOAT16, 4)],
                22,
            ),
            "W has element type int64",
        ),
        (
            _model(
                "DeformConv", [*_X4, ("w", F, 4), ("o", F, 4), ("", 0, 0), ("m", TensorProto.STRING, 4)], 19
            ),
            "mask has element type string",
        ),
        (
            _model("DeformConv", [*_X4, ("w", F, 4), ("o", F, 4), ("b", D, 1)], 19),
            "B has element type double",
        ),
        # attributes of the wrong kind (already skipped: pinned)
        (_model("AffineGrid", [("t", F, 3), ("s", I64, 1)], 20, align_corners=1.0), "align_corners"),
        (_model("MaxRoiPool", [*_X4, ("r", F, 2)], 22, pooled_shape=2), "pooled_shape"),
        (
            _model("MaxRoiPool", [*_X4, ("r", F, 2)], 22, pooled_shape=[2, 2], spatial_scale=2),
            "spatial_scale",
        ),
        (_model("RoiAlign", [*_X4, ("r", F, 2), ("b", I64, 1)], 16, output_height=2.0), "output_height"),
        (_model("RoiAlign", [*_X4, ("r", F, 2), ("b", I64, 1)], 16, mode=b"\xff"), "not valid UTF-8"),
        (_model("RoiAlign", [*_X4, ("r", D, 2), ("b", I64, 1)], 16), "rois has element type double"),
        (_model("RoiAlign", [*_X4, ("r", F, 2), ("b", TensorProto.INT32, 1)], 16), "requires int64"),
        (_model("DeformConv", [*_X4, ("w", F, 4), ("o", F, 4)], 19, group=2.0), "group"),
        (_model("DeformConv", [*_X4, ("w", F, 4), ("o", F, 4)], 19, pads=[1.0, 1.0, 1.0, 1.0]), "pads"),
    ],
)
def test_translators_skip_invalid_types_with_the_reason(model: onnx.ModelProto, reason: str) -> None:
    result = customops.rewrite_model(model)
    assert len(result.skipped) == 1, result
    assert reason in result.skipped[0].reason
    assert all(n.domain != customops.DOMAIN for n in result.model.graph.node)


def test_deform_conv_many_kernel_positions_in_many_axes_keep_the_corner_tables_bounded() -> None:
    # 9 spatial axes and a 4^9 kernel (11 MB of inputs): the numpy path's corner tables of one output
    # position held 2^9 corners x 4^9 kernel positions (2 GB; MemoryError under this limit)
    out = _child(
        """
        limit_to(1 << 30)
        r = 9
        x = np.ones((1, 1) + (4,) * r, np.float32)
        w = np.ones((1, 1) + (4,) * r, np.float32)
        off = np.zeros((1, 4**r * r) + (1,) * r, np.float32)
        attempt(lambda: deform_conv(x, w, off))
        print(float(deform_conv(x, w, off).ravel()[0]))
        """,
        timeout=NEVER,
    )
    assert "ran" in out and "262144.0" in out, out


def test_deform_conv_kernel_positions_in_blocks_give_the_same_values(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 5, 4, 6)).astype(np.float64)
    w = rng.standard_normal((2, 2, 3, 2, 3)).astype(np.float64)
    off = (rng.standard_normal((1, 2 * 18 * 3, 3, 3, 4)) * 2).astype(np.float64)
    off[0, 7, 1, 1, 1] = np.nan
    mask = rng.random((1, 2 * 18, 3, 3, 4))
    whole = deform_conv(x, w, off, None, mask, group=2, offset_group=2)
    monkeypatch.setattr(deform_conv_module, "COLUMN_BUDGET", 200)  # 1 output position, 3 kernel positions
    blocks = deform_conv(x, w, off, None, mask, group=2, offset_group=2)
    assert np.isnan(whole).any()
    # the samples are the same; the matrix products of other chunk sizes may round differently
    np.testing.assert_allclose(blocks, whole, rtol=1e-13, atol=1e-13)


def test_an_error_quoting_a_huge_attribute_reaches_the_run_cut_short() -> None:
    # DeformConv quotes its pads in the error; a model can make them as long as itself
    pads = [1] * 200_000
    m = _model("DeformConv", [("X", F, 4), ("W", F, 4), ("offset", F, 4)], 19, pads=pads)
    sess = customops.InferenceSession(customops.rewrite_model(m).model)
    feed = {
        "X": np.ones((1, 1, 3, 3), np.float32),
        "W": np.ones((1, 1, 2, 2), np.float32),
        "offset": np.zeros((1, 8, 2, 2), np.float32),
    }
    with pytest.raises(KernelError) as info:
        sess.run(None, feed)
    message = str(info.value)
    assert "pads" in message and "message cut" in message
    assert len(message) < 2 * MESSAGE_LIMIT, len(message)
