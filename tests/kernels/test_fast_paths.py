"""The compiled paths agree with the numpy paths.

Every kernel with a compiled path (customops.accel.jit, numba: Resize, Col2Im, Pad, GridSample,
AffineGrid, RoiAlign, MaxRoiPool, DeformConv) runs random cases covering its modes twice in this process:
as it comes, and inside ``jit.numpy_only()``, the one switch to the numpy paths. The results must have
the same bits (NaN-aware: any NaN matches any NaN) where the kernel promises it, else be within the bound
it states; the ``compiled_calls`` fixture proves which path ran. And each kernel's ``bind(**attributes)``
(what the ONNX Runtime hook calls, with its per-shape plan cache) against the plain function, errors
included, and across the switch.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from customops.accel import jit
from customops.accel.padding import col2im_loops
from customops.accel.resampling import resize_plans
from customops.errors import KernelError
from customops.kernels.padding.center_crop_pad import bind as bind_center_crop_pad
from customops.kernels.padding.center_crop_pad import center_crop_pad
from customops.kernels.padding.col2im import bind as bind_col2im
from customops.kernels.padding.col2im import col2im
from customops.kernels.padding.pad import bind as bind_pad
from customops.kernels.padding.pad import pad
from customops.kernels.resampling.resize import bind as bind_resize
from customops.kernels.resampling.resize import resize
from customops.kernels.resampling.upsample import bind as bind_upsample
from customops.kernels.resampling.upsample import upsample
from customops.kernels.spatial.affine_grid import affine_grid
from customops.kernels.spatial.deform_conv import deform_conv
from customops.kernels.spatial.grid_sample import bind as bind_grid_sample
from customops.kernels.spatial.grid_sample import grid_sample
from customops.kernels.spatial.max_roi_pool import max_roi_pool
from customops.kernels.spatial.roi_align import roi_align

needs_numba = pytest.mark.skipif(not jit.enabled(), reason="numba is not available")


@dataclass
class Case:
    """One call of a kernel: ``kernel(*args, **kwargs)``."""

    kernel: Callable[..., np.ndarray]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self) -> np.ndarray:
        return self.kernel(*self.args, **self.kwargs)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Same dtype, shape and bits, except that any NaN matches any NaN (payloads and signs of NaN are
    not promised); complex numbers part by part."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "c":
        got, want = (
            np.ascontiguousarray(got).view(got.real.dtype),
            np.ascontiguousarray(want).view(want.real.dtype),
        )
    if got.dtype.kind == "f":
        nan = np.isnan(got)
        if not np.array_equal(nan, np.isnan(want)):
            return False
        got, want = got[~nan], want[~nan]
    return np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


def _specials(rng: np.random.Generator, x: np.ndarray, values: tuple[float, ...]) -> np.ndarray:
    """x with ``values`` written at random places (float x only)."""
    if x.dtype.kind == "f" and x.size:
        x.flat[rng.integers(0, x.size, len(values))] = values
    return x


def resize_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((2, 3, 11, 9)).astype(dtype)
        bad = x.copy()
        bad[0, 1, 3, 4], bad[1, 2, 7, 2], bad[0, 0, 5, :] = np.inf, np.nan, -np.inf
        for mode, scales, aa, exclude, coord in itertools.product(
            ("linear", "cubic"),
            ([1, 1, 2, 2], [1, 1, 0.25, 0.3], [1, 1, 1.7, 0.6], [1, 2, 1.5, 1], [1, 1, 1, 3], [1, 1, 3, 1]),
            (0, 1),
            (0, 1),
            ("half_pixel", "align_corners", "tf_crop_and_resize", "asymmetric"),
        ):
            kwargs = dict(
                roi=np.array([0, 0, 0.1, -0.2, 1, 1, 0.8, 1.3]),
                scales=np.array(scales, np.float32),
                mode=mode,
                antialias=aa,
                exclude_outside=exclude,
                coordinate_transformation_mode=coord,
                extrapolation_value=-3.0,
            )
            cases.append(Case(resize, (x,), kwargs))
            if aa == 0 and exclude == 0:
                cases.append(Case(resize, (bad,), kwargs))
        if dtype == np.float64:  # sums that overflow between passes
            kwargs = dict(scales=np.array([1, 1, 2.5, 0.5], np.float32), mode="cubic")
            cases.append(Case(resize, (x * 1e307,), kwargs))
    for dtype in (np.float32, np.float16, np.int8, np.uint16, np.int64, np.bool_, np.complex64):
        x = (rng.standard_normal((2, 3, 7, 5)) * 20).astype(dtype)
        for scales, nearest_mode in itertools.product(
            ([1, 1, 2, 2], [1, 1, 0.6, 1.5], [1, 1, 3, 1], [1, 1, 1, 0.5], [2, 1, 1, 2]),
            ("floor", "round_prefer_ceil"),
        ):
            cases.append(
                Case(resize, (x,), dict(scales=np.array(scales, np.float32), nearest_mode=nearest_mode))
            )
        # past the tiny take(): the compiled gather, and its x2 repeat of the last axis at every width
        x = (rng.standard_normal((1, 2, 20, 17)) * 20).astype(dtype)
        if dtype == np.float32:
            x.view(np.uint32)[0, 0, 0, :4] = [
                0x7FC00001,
                0xFFC12345,
                0x80000000,
                0x7F800000,
            ]  # payloads, -0, inf
        for scales, coord in (
            ([1, 1, 2, 2], "half_pixel"),
            ([1, 1, 2, 2], "asymmetric"),
            ([1, 1, 1, 2], "align_corners"),
        ):
            kwargs = dict(scales=np.array(scales, np.float32), coordinate_transformation_mode=coord)
            cases.append(Case(resize, (x,), kwargs))
        # one-row planes: every output row repeats the one before it within a plane, never across
        x = (rng.standard_normal((1, 8, 1, 70)) * 20).astype(dtype)
        cases.append(Case(resize, (x,), dict(scales=np.array([1, 1, 2, 2], np.float32))))
        cases.append(Case(resize, (x,), dict(scales=np.array([1, 1, 3, 1.5], np.float32))))
    return cases


def col2im_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.int8):
        cols = (rng.standard_normal((2, 2 * 6, 4 * 3)) * 20).astype(dtype)
        _specials(rng, cols, (np.inf, -np.inf, np.nan, -0.0))
        for pads, strides, dilations in (
            ([0, 0, 0, 0], [1, 1], [1, 1]),
            ([1, 0, 2, 1], [1, 2], [1, 1]),
            ([2, 1, 0, 3], [2, 1], [2, 1]),
        ):
            # image sizes that give 4 x 3 blocks of 2 x 3
            h = (4 - 1) * strides[0] + dilations[0] * (2 - 1) + 1 - pads[0] - pads[2]
            w = (3 - 1) * strides[1] + dilations[1] * (3 - 1) + 1 - pads[1] - pads[3]
            kwargs = dict(pads=pads, strides=strides, dilations=dilations)
            cases.append(Case(col2im, (cols, np.array([h, w]), np.array([2, 3])), kwargs))
    return cases


def pad_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype, mode in itertools.product(
        (np.float32, np.float64, np.int8, np.uint16, np.bool_, np.complex128, np.float16),
        ("constant", "reflect", "edge", "wrap"),
    ):
        x = (rng.standard_normal((2, 3, 19, 22)) * 50).astype(dtype)  # past the tiny outputs' gather
        _specials(rng, x, (np.nan, -0.0, np.inf))
        for pads in ([0, 0, 2, 3, 0, 0, 1, 4], [0, 0, -1, 2, 0, 0, 3, -2], [0, 0, 0, 5, 0, 0, 0, 0]):
            value = np.array(7, dtype) if mode == "constant" else None
            cases.append(Case(pad, (x, np.array(pads), value), dict(mode=mode)))
        cases.append(Case(center_crop_pad, (x, np.array([2, 3, 25, 17]))))
    return cases


def grid_sample_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype, shape, out in itertools.product(
        (np.float32, np.float64), ((2, 3, 5, 7), (1, 1, 1, 1), (1, 4, 30, 40)), ((4, 6), (48, 40))
    ):
        x = _specials(rng, rng.standard_normal(shape).astype(dtype), (np.inf, -np.inf, np.nan, -0.0, 3e38))
        g = rng.uniform(-1.4, 1.4, size=(shape[0], *out, 2))
        _specials(rng, g, (-1.0, 1.0, np.nan, np.inf, -np.inf, 1e30, -5.25, 0.5, -0.5))
        for mode, padding, align in itertools.product(
            ("nearest", "linear", "cubic"), ("zeros", "border", "reflection"), (0, 1)
        ):
            cases.append(
                Case(grid_sample, (x, g), dict(mode=mode, padding_mode=padding, align_corners=align))
            )
    return cases


def affine_grid_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype, size, align in itertools.product(
        (np.float32, np.float64), ([2, 3, 5, 7], [1, 1, 1, 9], [2, 1, 4, 3, 6], [1, 2, 1, 1, 1]), (0, 1)
    ):
        spatial = len(size) - 2
        theta = (rng.standard_normal((size[0], spatial, spatial + 1)) * 3).astype(dtype)
        theta.flat[0] = -0.0
        cases.append(Case(affine_grid, (theta, np.array(size)), dict(align_corners=align)))
    return cases


def roi_align_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype, mode, coord, ratio in itertools.product(
        (np.float32, np.float64), ("avg", "max"), ("half_pixel", "output_half_pixel"), (0, 1, 3)
    ):
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 40)), int(rng.integers(1, 40))
        x = (rng.standard_normal((n, 3, h, w)) * 10).astype(dtype)
        if rng.random() < 0.5:
            _specials(rng, x, (np.inf, -np.inf, np.nan, -0.0))
        count = 6
        first = rng.uniform(-3, max(h, w) + 2, (count, 2))
        rois = np.concatenate([first, first + rng.uniform(-2, 30, (count, 2))], axis=1).astype(dtype)
        kwargs = dict(
            mode=mode,
            coordinate_transformation_mode=coord,
            sampling_ratio=ratio,
            output_height=int(rng.integers(1, 6)),
            output_width=int(rng.integers(1, 6)),
            spatial_scale=float(rng.choice([1.0, 0.5, 1.5])),
        )
        cases.append(Case(roi_align, (x, rois, rng.integers(0, n, count)), kwargs))
    return cases


def max_roi_pool_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype, _ in itertools.product((np.float32, np.float64), range(6)):
        h, w = int(rng.integers(1, 30)), int(rng.integers(1, 30))
        x = _specials(rng, rng.standard_normal((2, 3, h, w)).astype(dtype), (np.nan, -np.inf, np.inf, -0.0))
        count = 5
        corners = rng.uniform(-4, max(h, w) + 4, (count, 4))
        rois = np.concatenate([rng.integers(0, 2, (count, 1)), corners], axis=1).astype(dtype)
        pooled = [int(rng.integers(1, 6)), int(rng.integers(1, 6))]
        kwargs = dict(pooled_shape=pooled, spatial_scale=float(rng.choice([1.0, 0.5, 0.25])))
        cases.append(Case(max_roi_pool, (x, rois), kwargs))
    return cases


def deform_conv_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for dtype, group, offset_group, masked in itertools.product(
        (np.float32, np.float64), (1, 2), (1, 2), (False, True)
    ):
        c, oc, kernel = 4, 2 * group, [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        dil, st = [int(rng.integers(1, 3)) for _ in range(2)], [int(rng.integers(1, 3)) for _ in range(2)]
        pads = [int(rng.integers(0, 3)) for _ in range(4)]
        spatial = [
            max(1, dil[i] * (kernel[i] - 1) + 1 - pads[i] - pads[2 + i]) + int(rng.integers(0, 9))
            for i in range(2)
        ]
        out = [
            (spatial[i] + pads[i] + pads[2 + i] - dil[i] * (kernel[i] - 1) - 1) // st[i] + 1 for i in range(2)
        ]
        taps = kernel[0] * kernel[1]
        x = _specials(rng, rng.standard_normal((2, c, *spatial)).astype(dtype), (np.inf, np.nan, -0.0))
        w = rng.standard_normal((oc, c // group, *kernel)).astype(dtype)
        off = (rng.standard_normal((2, offset_group * taps * 2, *out)) * 2).astype(dtype)
        _specials(rng, off, (np.nan, 1e30, -0.5))
        b = rng.standard_normal(oc).astype(dtype)
        mask = rng.random((2, offset_group * taps, *out)).astype(dtype) if masked else None
        attrs = dict(dilations=dil, group=group, offset_group=offset_group, pads=pads, strides=st)
        cases.append(Case(deform_conv, (x, w, off, b, mask), attrs))
    return cases


def _filters(case: Case) -> bool:
    """Whether this Resize filters (linear or cubic): float64 sums in another order on the two paths."""
    return case.kernel is resize and case.kwargs.get("mode", "nearest") != "nearest"


def resize_within_its_bound(case: Case, got: np.ndarray, want: np.ndarray) -> None:
    """Resize's filters sum in float64 in another order on the two paths (the numpy passes take the
    axes in another order): the same float32 result up to 1 ulp, float64 to 1e-12; gathers have the
    same bits."""
    if got.dtype.kind not in "fc" or not _filters(case):
        assert same_bits(got, want), case.kwargs
        return
    both_nan = np.isnan(got) & np.isnan(want)
    assert (np.isinf(got) == np.isinf(want)).all(), case.kwargs
    tol = 2e-7 if got.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(
        np.where(both_nan, 0, got), np.where(both_nan, 0, want), rtol=tol, atol=tol, err_msg=str(case.kwargs)
    )


def _roi_grid(start: np.ndarray, end: np.ndarray, kwargs: dict[str, Any], bins: int) -> np.ndarray:
    """Sample points per bin of each ROI along one axis (roi_align's rule, written out again)."""
    shift = 0.5 if kwargs["coordinate_transformation_mode"] == "half_pixel" else 0.0
    scale = kwargs["spatial_scale"]
    begin = start.astype(np.float64) * scale - shift
    extent = end.astype(np.float64) * scale - shift - begin
    if not shift:
        extent = np.maximum(extent, 1.0)
    if kwargs["sampling_ratio"]:
        return np.full(len(start), kwargs["sampling_ratio"])
    return np.maximum(np.ceil(extent / bins), 0.0)


def roi_align_within_its_bound(case: Case, got: np.ndarray, want: np.ndarray) -> None:
    """RoiAlign: max mode gives the same bits; avg differs by at most the bound its docstring states,
    (H + W + 2 grid_h + 2 grid_w + 4) * 2^-52 * A + ulp, A the bin's mean |term| (the avg of |X|)."""
    if case.kwargs["mode"] == "max":
        assert same_bits(got, want), case.kwargs
        return
    x, rois, batch = case.args
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    assert np.array_equal(got[np.isinf(got)], want[np.isinf(want)])
    finite = np.isfinite(got)
    with jit.numpy_only():
        mean_abs = roi_align(np.abs(x).astype(np.float64), rois, batch, **case.kwargs)
    h, w = x.shape[2:]
    gy = _roi_grid(rois[:, 1], rois[:, 3], case.kwargs, case.kwargs["output_height"])
    gx = _roi_grid(rois[:, 0], rois[:, 2], case.kwargs, case.kwargs["output_width"])
    terms = (h + w + 2 * gy + 2 * gx + 4)[:, None, None, None]
    ulp = np.spacing(np.maximum(np.abs(got), np.abs(want)))
    bound = terms * 2.0**-52 * mean_abs + ulp
    diff = np.abs(got[finite].astype(np.float64) - want[finite])
    assert (diff <= bound[finite]).all(), (case.kwargs, (diff - bound[finite]).max())


def _bits(case: Case, got: np.ndarray, want: np.ndarray) -> None:
    assert same_bits(got, want), case.kwargs


OPS: dict[
    str, tuple[Callable[[np.random.Generator], list[Case]], Callable[[Case, np.ndarray, np.ndarray], None]]
] = {
    "Resize": (resize_cases, resize_within_its_bound),
    "Col2Im": (col2im_cases, _bits),
    "Pad": (pad_cases, _bits),
    "GridSample": (grid_sample_cases, _bits),
    "AffineGrid": (affine_grid_cases, _bits),
    "RoiAlign": (roi_align_cases, roi_align_within_its_bound),
    "MaxRoiPool": (max_roi_pool_cases, _bits),
    "DeformConv": (deform_conv_cases, _bits),
}
"""Each op with a compiled path: its cases, and how its two paths must agree."""


def run_both(case: Case, calls) -> tuple[np.ndarray, np.ndarray, int]:
    """(compiled result, numpy result, calls of compiled loops in the first run); the second run, inside
    jit.numpy_only(), must call none."""
    before = sum(calls.values())
    compiled = case.run()
    ran = sum(calls.values()) - before
    with jit.numpy_only():
        plain = case.run()
    assert sum(calls.values()) == before + ran, f"a compiled loop ran inside jit.numpy_only(): {calls}"
    return compiled, plain, ran


@needs_numba
@pytest.mark.parametrize("op", list(OPS))
def test_compiled_paths_agree_with_the_numpy_paths(op, compiled_calls) -> None:
    make, agree = OPS[op]
    cases = make(np.random.default_rng(len(op)))
    ran = 0
    for case in cases:
        got, want, calls = run_both(case, compiled_calls)
        assert got.flags.c_contiguous and want.flags.c_contiguous
        agree(case, got, want)
        ran += calls > 0
    assert ran >= len(cases) // 2, (ran, len(cases))  # most cases take a compiled loop


@needs_numba
def test_float32_filters_round_once_from_float64() -> None:
    rng = np.random.default_rng(9)
    X = (rng.standard_normal((1, 2, 40, 33)) * 1e3).astype(np.float32)
    for mode, scales, aa in (
        ("linear", [1, 1, 2, 2], 0),
        ("cubic", [1, 1, 0.3, 2.5], 1),
        ("cubic", [1, 1, 2, 2], 0),
    ):
        s = np.array(scales, np.float32)
        got = resize(X, scales=s, mode=mode, antialias=aa)
        exact = resize(X.astype(np.float64), scales=s, mode=mode, antialias=aa)
        np.testing.assert_array_equal(got, exact.astype(np.float32))


def test_x2_runs_of_the_last_axis() -> None:
    from customops.kernels.resampling.resize import prepare

    def run(mode: str, coord: str, width: int, scale: float = 2.0) -> list[int]:
        scales = np.array([1, 1, 1, scale], np.float32)
        prepared = prepare((1, 1, 3, width), np.dtype(np.float32), None, scales, None, *_attrs(coord, mode))
        ((_, indices, weights),) = prepared.filters
        return resize_plans.x2_run(indices, weights, width).tolist()

    assert run("linear", "half_pixel", 50) == [1, 49]  # the first and last pairs read a clamped edge
    assert run("linear", "asymmetric", 50) == [0, 49]
    assert run("cubic", "half_pixel", 50) == [2, 48]
    assert run("cubic", "align_corners", 50) == [0, 0]  # weights vary along the axis
    assert run("linear", "half_pixel", 5) == [0, 0]  # too short to be worth it
    assert run("linear", "half_pixel", 50, 3.0) == [0, 0]  # x3


def test_downsampling_runs_of_the_last_axis() -> None:
    from customops.kernels.resampling.resize import prepare

    def run(mode: str, scale: float, antialias: int = 1, width: int = 64) -> list[int]:
        scales = np.array([1, 1, 1, scale], np.float32)
        prepared = prepare((1, 1, 3, width), np.dtype(np.float32), None, scales, None, antialias, None,
                            "half_pixel", -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")  # fmt: skip
        (_, indices, weights) = prepared.filters[-1]
        return resize_plans.down_run(indices, weights).tolist()

    assert run("linear", 0.25, width=1024) == [4, 1, 255]  # 8 taps; the first and last outputs clamp
    assert run("cubic", 0.25, width=1024) == [4, 2, 254]
    assert run("cubic", 0.5, antialias=0) == [2, 1, 31]  # four taps
    assert run("linear", 0.5, antialias=0) == [0, 0, 0]  # two taps: the gathers read each element once
    assert run("linear", 0.3) == [0, 0, 0]  # weights vary along the axis
    assert run("linear", 0.25, width=40) == [0, 0, 0]  # too short to be worth it


def _fast(prepared: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The compiled path resize_plans chooses for a resize prepared by the kernel (None: numpy)."""
    return resize_plans.fast_path(
        prepared.shape, prepared.out_shape, prepared.dtype, prepared.gathers, prepared.filters
    )


def _attrs(coord: str, mode: str) -> tuple:
    """prepare's attribute arguments after roi/scales/sizes, spec defaults but these two."""
    return (0, None, coord, -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")


@needs_numba
def test_x2_pairs_give_the_table_loop_bits(monkeypatch) -> None:
    """The rows-first loop with its x2 pairs (resize_loops._h_row_x2) against the same loop through the tables
    only: the same bits, non-finite rows and float64 included."""
    from customops.kernels.resampling import resize as resize_module

    rng = np.random.default_rng(12)
    used = 0
    for dtype, mode, coord, shape in itertools.product(
        (np.float32, np.float64),
        ("linear", "cubic"),
        ("half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners"),
        ((1, 2, 17, 40), (2, 1, 9, 64)),
    ):
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        x[0, 0, 3, 11] = np.nan
        x[-1, -1, 5, :] = -np.inf
        x[0, -1, 7, 0] = np.inf
        scales = np.array([1, 1, 2, 2], np.float32)
        prepared = resize_module.prepare(x.shape, x.dtype, None, scales, None, *_attrs(coord, mode))
        (_, indices, weights) = prepared.filters[-1]
        used += resize_plans.x2_run(indices, weights, shape[-1])[1] > 0
        paired = _fast(prepared)(x)
        with monkeypatch.context() as m:
            m.setattr(resize_plans, "x2_run", lambda *a: np.zeros(2, np.int64))
            tables = _fast(prepared)(x)
        assert paired.tobytes() == tables.tobytes(), (dtype, mode, coord, shape)
    assert used >= 24  # every config but align_corners has a run


@needs_numba
def test_the_short_loop_of_small_images_gives_the_general_loops_bits(monkeypatch) -> None:
    """resize_loops.resize_small_rows_first against resize_rows_first: the same bits, signed zeros included;
    an image with inf, NaN or float64 sums that overflow falls back to the general loop."""
    from customops.kernels.resampling import resize as resize_module

    rng = np.random.default_rng(21)
    paths = []
    for dtype, mode, coord, shape, scales, special in itertools.product(
        (np.float32, np.float64),
        ("linear", "cubic"),
        ("half_pixel", "asymmetric", "align_corners", "half_pixel_symmetric"),
        ((1, 3, 8, 8), (2, 2, 5, 7), (1, 1, 1, 9), (3, 6, 5), (2, 1, 2, 4, 6)),
        ([2, 2], [1.5, 2.5], [0.8, 2]),
        ("none", "negative zeros", "nan", "inf", "huge"),
    ):
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        if special == "negative zeros":
            x[..., :2] = -0.0
        elif special == "nan":
            x.flat[rng.integers(x.size)] = np.nan
        elif special == "inf":
            x.flat[rng.integers(x.size)] = -np.inf
        elif special == "huge" and dtype == np.float64:
            x = np.full(shape, 1.7e308)  # cubic's partial sums overflow (its middle weights add up past 1)
            x[..., ::3] = 1e308
        scales = np.array([1] * (len(shape) - 2) + scales, np.float32)  # the last two axes
        prepared = resize_module.prepare(x.shape, x.dtype, None, scales, None, *_attrs(coord, mode))
        short = _fast(prepared)
        if short is None:  # an axis whose filter is a copy: a gather
            continue
        paths.append(short.__name__)
        with monkeypatch.context() as m:
            m.setattr(resize_plans, "SMALL_SCRATCH", 0)
            general = _fast(prepared)
        assert not general.__name__.startswith("last2_small")
        assert short(x).tobytes() == general(x).tobytes(), (dtype, mode, coord, shape, scales, special)
    # every upsampling of both axes (downsampling goes columns first); 4-D arrays as they come, other
    # ranks through a 4-D view
    assert paths.count("last2_small") >= 300 and paths.count("last2_small_any") >= 200


@needs_numba
def test_downsampling_phases_give_the_table_loop_bits(monkeypatch) -> None:
    """The columns-first loop with its phase split (resize_loops._h_row_down) against the same loop through the
    tables only: the same bits, non-finite rows and float64 included."""
    from customops.kernels.resampling import resize as resize_module

    rng = np.random.default_rng(13)
    used = 0
    for dtype, mode, antialias, scale, shape in itertools.product(
        (np.float32, np.float64), ("linear", "cubic"), (0, 1), (0.5, 0.25), ((1, 2, 40, 96), (2, 1, 33, 130))
    ):
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        x[0, 0, 3, 11] = np.nan
        x[-1, -1, 5, :] = -np.inf
        x[0, -1, 7, 0] = np.inf
        scales = np.array([1, 1, scale, scale], np.float32)
        prepared = resize_module.prepare(x.shape, x.dtype, None, scales, None, antialias, None,
                                          "half_pixel", -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")  # fmt: skip
        (_, indices, weights) = prepared.filters[-1]
        used += resize_plans.down_run(indices, weights)[0] > 0
        phased = _fast(prepared)(x)
        with monkeypatch.context() as m:
            m.setattr(resize_plans, "down_run", lambda *a: np.zeros(3, np.int64))
            tables = _fast(prepared)(x)
        assert phased.tobytes() == tables.tobytes(), (dtype, mode, antialias, scale, shape)
    assert used >= 20  # every config with at least 2k taps (two-tap linear and cubic /4 gather)


@needs_numba
def test_last_axis_runs_give_the_table_loop_bits(monkeypatch) -> None:
    """The one-axis loop (only the last axis resized: audio frames, 1-D signals) with its x2 pairs and
    phases against the same loop through the tables only: the same bits."""
    from customops.kernels.resampling import resize as resize_module

    rng = np.random.default_rng(14)
    used = 0
    for dtype, mode, antialias, scale, shape in itertools.product(
        (np.float32, np.float64), ("linear", "cubic"), (0, 1), (2.0, 0.5, 0.25), ((2, 3, 150), (1, 2, 5, 64))
    ):
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        x.reshape(-1, shape[-1])[1, 17] = np.nan
        x.reshape(-1, shape[-1])[-1, :] = np.inf
        scales = np.ones(len(shape), np.float32)
        scales[-1] = scale
        prepared = resize_module.prepare(x.shape, x.dtype, None, scales, None, antialias, None,
                                          "half_pixel", -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")  # fmt: skip
        (_, indices, weights) = prepared.filters[-1]
        used += resize_plans.x2_run(indices, weights, shape[-1])[1] > 0
        used += resize_plans.down_run(indices, weights)[0] > 0
        fast = _fast(prepared)(x)
        with monkeypatch.context() as m:
            m.setattr(resize_plans, "x2_run", lambda *a: np.zeros(2, np.int64))
            m.setattr(resize_plans, "down_run", lambda *a: np.zeros(3, np.int64))
            tables = _fast(prepared)(x)
        assert fast.tobytes() == tables.tobytes(), (dtype, mode, antialias, scale, shape)
    assert used >= 30


def _same(bound, plain, *args) -> None:
    """bound(*args) returns what plain(*args) returns, or raises the same KernelError."""
    try:
        want = plain(*args)
    except KernelError as exc:
        with pytest.raises(KernelError) as info:
            bound(*args)
        assert str(info.value) == str(exc)
        return
    for _ in range(2):  # the second call runs from the kept plan
        got = bound(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_bound_resize_matches_resize() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    empty_roi, empty_sizes = np.zeros(0), np.zeros(0, np.int64)
    for attrs, scales, sizes in (
        ({"mode": "linear"}, np.array([1, 1, 2, 2], np.float32), empty_sizes),
        ({"mode": "cubic", "antialias": 1}, np.array([1, 1, 0.5, 0.5], np.float32), empty_sizes),
        ({"mode": "nearest", "axes": [2, 3]}, np.zeros(0, np.float32), np.array([9, 4])),
        ({"mode": "bogus"}, np.array([1, 1, 2, 2], np.float32), empty_sizes),
        ({"mode": "linear"}, np.array([1, 1, 2, 2], np.float32), np.array([1, 2, 3, 4])),  # both given
        ({"mode": "linear", "antialias": 1.0}, np.array([1, 1, 2, 2], np.float32), empty_sizes),
    ):
        _same(bind_resize(**attrs), functools.partial(resize, **attrs), x, empty_roi, scales, sizes)
    strings = np.array([["a", "b"], ["c", "d"]], dtype=object)
    _same(bind_resize(mode="nearest"), resize, strings, None, np.array([2, 1.5], np.float32))


def test_bound_pad_and_center_crop_pad_match() -> None:
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    for mode, pads, value, axes in itertools.product(
        ("constant", "reflect", "edge", "wrap"),
        (np.array([1, 0, 2, 0, 1, 1]), np.array([-1, 2, 0, 3, 0, -2]), np.array([0, 0, 9, 0, 0, 0])),
        (None, np.array([7], np.int16), np.zeros(0, np.int16)),
        (None, np.zeros(0, np.int64)),
    ):
        _same(bind_pad(mode=mode), functools.partial(pad, mode=mode), x, pads, value, axes)
    words = np.array([["a", "b"], ["c", "d"]], dtype=object)
    _same(bind_pad(), pad, words, np.array([1, 0, 0, 1]), np.array(["z"], dtype=object))
    for shape, axes in (([3, 6], [1, 2]), ([1, 2, 7], None), ([-1, 3], [0, 1]), ([2], [0, 0])):
        bound = bind_center_crop_pad(axes=axes)
        _same(bound, functools.partial(center_crop_pad, axes=axes), x, np.array(shape, np.int64))


def test_bound_col2im_and_upsample_match() -> None:
    cols = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    for attrs, image, block in (
        ({}, np.array([3, 4]), np.array([2, 2])),
        ({"strides": [1, 2]}, np.array([3, 5]), np.array([2, 2])),
        ({"pads": [0, 0, 0]}, np.array([3, 4]), np.array([2, 2])),
    ):
        _same(bind_col2im(**attrs), functools.partial(col2im, **attrs), cols, image, block)
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    for mode, scales in (("nearest", [1, 1, 2, 0.5]), ("linear", [1, 1, 2, 3]), ("cubic", [1, 1, 2, 2])):
        s = np.array(scales, np.float32)
        _same(bind_upsample(mode=mode), functools.partial(upsample, mode=mode), x, s)


def test_bound_kernels_keep_one_plan_per_small_input_value() -> None:
    """One bound kernel called in turn with small inputs that differ in value, sign of zero, dtype or
    shape (the flat plan keys of customops.accel.plans): every call gives the bits of the plain
    function, the first time and from the kept plan."""
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    empty_roi, empty_sizes, empty_scales = (
        np.zeros(0, np.float32),
        np.zeros(0, np.int64),
        np.zeros(0, np.float32),
    )
    calls = [
        (np.array([1, 1, 2, 2], np.float32), empty_sizes),
        (np.array([1, 1, 3, 3], np.float32), empty_sizes),
        (np.array([1, 1, 2, 2], np.float64), empty_sizes),
        (empty_scales, np.array([1, 2, 6, 8])),
        (empty_scales, np.array([1, 2, 8, 6])),
        (empty_scales, np.array([[1, 2], [8, 6]])),  # same bytes, another shape: an error every time
    ]
    bound = bind_resize(mode="linear")
    for _ in range(2):
        for scales, sizes in calls:
            try:
                want = resize(x, empty_roi, scales, sizes, mode="linear")
            except KernelError as exc:
                with pytest.raises(KernelError, match=re.escape(str(exc))):
                    bound(x, empty_roi, scales, sizes)
                continue
            assert bound(x, empty_roi, scales, sizes).tobytes() == want.tobytes()
    pads, axes = np.array([0, 0, 1, 1, 0, 0, 1, 1]), np.arange(4)
    one = np.array(1, np.float32)
    values = (np.array(0, np.float32), np.array(-0.0, np.float32), one, one.view(np.int32), None)
    bound = bind_pad(mode="constant")
    for _ in range(2):
        for value in values:  # the int32 has the bits of 1.0f: only the dtype tells the two apart
            for p in (pads, pads[::-1].copy()):
                want = pad(x, p, value, axes)
                assert bound(x, p, value, axes).tobytes() == want.tobytes()
    cols = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    bound = bind_col2im()
    for _ in range(2):
        for image in (np.array([3, 4]), np.array([4, 3]), np.array([3, 4], np.int32)):
            want = col2im(cols, image, np.array([2, 2]))
            assert bound(cols, image, np.array([2, 2])).tobytes() == want.tobytes()
    bound = bind_center_crop_pad()
    for _ in range(2):
        for shape in (np.array([1, 2, 2, 5]), np.array([1, 2, 5, 2]), np.array([1, 2, 2, 5], np.int32)):
            assert bound(x, shape).tobytes() == center_crop_pad(x, shape).tobytes()


@needs_numba
@pytest.mark.parametrize(
    ("mode", "antialias", "shape", "sizes", "coordinates"),
    [
        ("linear", 1, (1, 3, 24, 20), (1, 3, 6, 5), "half_pixel"),  # columns first
        ("cubic", 1, (1, 3, 24, 20), (1, 3, 7, 10), "half_pixel"),  # columns first
        ("linear", 0, (1, 3, 24, 20), (1, 3, 48, 40), "half_pixel"),  # rows first
        ("cubic", 0, (1, 3, 24, 20), (1, 3, 60, 20), "half_pixel"),  # a middle axis
        # align_corners 13 -> 9 reads rows at 1.5 * o: even outputs read their second row with weight 0
        ("linear", 0, (1, 3, 13, 4), (1, 3, 9, 8), "align_corners"),  # columns first
        ("linear", 0, (1, 3, 13, 4), (1, 3, 9, 4), "align_corners"),  # a middle axis
        ("cubic", 0, (1, 3, 13, 4), (1, 3, 9, 8), "align_corners"),  # columns first, cubic
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_non_finite_value_reaches_only_the_outputs_that_weigh_it(
    mode, antialias, shape, sizes, coordinates, dtype
) -> None:
    """inf and NaN change exactly the outputs a finite change of the same element changes (taps of
    weight 0 never touch them), and every other output keeps its bits, signed zeros included."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, :, :2] = -0.0
    kwargs = dict(
        sizes=np.array(sizes, np.int64),
        mode=mode,
        antialias=antialias,
        coordinate_transformation_mode=coordinates,
    )
    clean = resize(x, **kwargs)
    for value in (np.inf, -np.inf, np.nan):
        bad = x.copy()
        bad[0, 1, 4, 1] = value
        nudged = x.copy()
        nudged[0, 1, 4, 1] += 1.0
        got = resize(bad, **kwargs)
        reach = resize(nudged, **kwargs) != clean
        assert reach.any() and not np.isfinite(got[reach]).any(), value
        same = ~reach
        assert got[same].tobytes() == clean[same].tobytes(), value


@needs_numba
@pytest.mark.parametrize(
    ("path", "shape", "dtype", "scales", "mode"),
    [
        ("tiny", (1, 3, 8, 8), np.float32, [1, 1, 2, 2], "nearest"),  # 768 outputs: one ndarray.take
        ("gather2", (1, 2, 20, 17), np.int16, [1, 1, 2, 2], "nearest"),  # every column twice
        ("gather", (1, 2, 20, 17), np.uint8, [1, 1, 1.5, 1.5], "nearest"),
        ("last2_small", (1, 3, 8, 8), np.float32, [1, 1, 2, 2], "linear"),  # 4-D, rows first, small
        ("last2_small_any", (3, 6, 5), np.float64, [1, 2, 2], "cubic"),  # another rank: a 4-D view
        ("last2_serial", (1, 3, 24, 20), np.float32, [1, 1, 0.25, 0.25], "linear"),  # columns first
        ("last2", (1, 3, 200, 300), np.float32, [1, 1, 2, 2], "linear"),  # enough work for threads
        ("passes", (1, 3, 24, 20), np.float32, [1, 1, 2.5, 1], "cubic"),  # a middle axis alone
        (None, (1, 3, 8, 8), np.uint8, [1, 1, 2, 2], "linear"),  # integer filters: the numpy passes
        (None, (3, 8, 8), np.float32, [2, 1, 1], "nearest"),  # a gather of the first axis
        (None, (3, 8, 8), np.float32, [1, 1, 1], "linear"),  # nothing to do
        (None, (2, 2), np.dtype(object), [2, 2], "nearest"),  # strings
    ],
)
def test_each_fast_path_is_chosen_for_its_inputs(path, shape, dtype, scales, mode) -> None:
    """resize_plans.fast_path picks the compiled implementation named ``path`` (None: the numpy passes) for these
    inputs, and what it computes is what the numpy kernel computes."""
    from customops.kernels.resampling import resize as resize_module

    x = (np.arange(np.prod(shape)).reshape(shape) % 7).astype(dtype)
    s = np.array(scales, np.float32)
    prepared = resize_module.prepare(shape, x.dtype, None, s, None, *_attrs("half_pixel", mode))
    fast = _fast(prepared)
    assert (None if fast is None else fast.__name__) == path
    job = resize_plans.plan_job(
        prepared.shape, prepared.out_shape, prepared.dtype, prepared.gathers, prepared.filters
    )
    candidate = None if job is None else resize_plans.choose(job)
    assert (None if candidate is None else candidate.name) == path  # the table names its closures
    if fast is not None:
        prepared.fast = None
        assert fast(x).tobytes() == resize_module.execute(prepared, x).tobytes()


def _bound_calls() -> list[tuple[Callable[..., np.ndarray], Callable[..., np.ndarray], tuple[Any, ...]]]:
    """(bound kernel, plain function, arguments that take a compiled loop) of each op whose bound kernel
    keeps compiled loops in its plans."""
    rng = np.random.default_rng(30)
    image = rng.standard_normal((1, 3, 24, 20)).astype(np.float32)
    data = rng.standard_normal((2, 3, 19, 22)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (1, 9, 7, 2)).astype(np.float32)
    cols = rng.standard_normal((2, 2 * 6, 4 * 3))
    return [
        (
            bind_resize(mode="linear"),
            functools.partial(resize, mode="linear"),
            (image, None, np.array([1, 1, 2, 2], np.float32)),
        ),
        (
            bind_upsample(mode="linear"),
            functools.partial(upsample, mode="linear"),
            (image, np.array([1, 1, 2, 3], np.float32)),
        ),
        (
            bind_pad(mode="reflect"),
            functools.partial(pad, mode="reflect"),
            (data, np.array([0, 0, 2, 3, 0, 0, 1, 4])),
        ),
        (bind_center_crop_pad(), center_crop_pad, (data, np.array([2, 3, 25, 17]))),
        (bind_col2im(), col2im, (cols, np.array([5, 5]), np.array([2, 3]))),
        (bind_grid_sample(mode="cubic"), functools.partial(grid_sample, mode="cubic"), (image, grid)),
    ]


@needs_numba
def test_bound_kernels_take_the_path_of_the_moment_not_of_their_kept_plan(compiled_calls) -> None:
    """A plan kept outside jit.numpy_only() is not used inside it, nor the reverse: each call of a
    bound kernel (made once, before the switch) runs the compiled loop exactly when it is outside, and
    gives the bits of the plain function on that path."""
    for bound, plain, args in _bound_calls():
        name = plain.__name__ if hasattr(plain, "__name__") else plain.func.__name__
        before = sum(compiled_calls.values())
        compiled = bound(*args)  # planned with the compiled loop, which runs
        assert same_bits(bound(*args), compiled), name  # from the kept plan
        outside = sum(compiled_calls.values())
        assert outside > before, name
        with jit.numpy_only():
            assert same_bits(bound(*args), plain(*args)), name
            assert same_bits(bound(*args), plain(*args)), name  # from the plan kept inside
            assert sum(compiled_calls.values()) == outside, name
        assert same_bits(bound(*args), compiled), name
        assert sum(compiled_calls.values()) > outside, name  # the plan made inside was not kept


@needs_numba
def test_numpy_only_holds_on_every_thread_and_nests(compiled_calls) -> None:
    x = np.random.default_rng(31).standard_normal((1, 3, 24, 20)).astype(np.float32)
    scales = np.array([1, 1, 2, 2], np.float32)
    results: list[np.ndarray] = []
    with jit.numpy_only():
        worker = threading.Thread(target=lambda: results.append(resize(x, scales=scales, mode="cubic")))
        worker.start()
        worker.join()
        with jit.numpy_only():
            assert not jit.enabled()
        assert (
            not jit.enabled() and jit.get("col2im_2d", col2im_loops) is None
        )  # the inner block's end left it on
        assert jit.describe()["jit"].startswith("numpy only")
    assert results and not compiled_calls
    assert jit.enabled() and jit.get("col2im_2d", col2im_loops) is not None
    resize(x, scales=scales, mode="cubic")
    assert compiled_calls
