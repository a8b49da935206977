"""The fast paths agree with the plain numpy kernels.

Compiled loops (customops.accel.jit, numba) against the numpy passes they replace, run in a child
process with CUSTOMOPS_JIT=0; and each kernel's ``bind(**attributes)`` (what the ONNX Runtime hook
calls, with its per-shape plan cache) against the plain function, including errors.
"""

from __future__ import annotations

import functools
import itertools
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from customops.accel import jit
from customops.errors import KernelError
from customops.kernels.center_crop_pad import center_crop_pad
from customops.kernels.col2im import col2im
from customops.kernels.pad import pad
from customops.kernels.resize import resize
from customops.kernels.upsample import upsample

# Every case is (kernel name, args, kwargs); inputs are made from a fixed seed in both processes.
_CASES_SOURCE = textwrap.dedent(
    """
    import itertools
    import numpy as np

    def cases():
        rng = np.random.default_rng(5)
        out = []
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal((2, 3, 11, 9)).astype(dtype)
            bad = x.copy()
            bad[0, 1, 3, 4] = np.inf
            bad[1, 2, 7, 2] = np.nan
            bad[0, 0, 5, :] = -np.inf
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
                out.append(("resize", (x,), kwargs))
                if aa == 0 and exclude == 0:
                    out.append(("resize", (bad,), kwargs))
            if dtype == np.float64:  # sums that overflow between passes
                big = x * 1e307
                out.append(("resize", (big,), dict(scales=np.array([1, 1, 2.5, 0.5], np.float32), mode="cubic")))
        for dtype in (np.float32, np.float16, np.int8, np.uint16, np.int64, np.bool_, np.complex64):
            x = (rng.standard_normal((2, 3, 7, 5)) * 20).astype(dtype)
            for scales, nearest_mode in itertools.product(
                ([1, 1, 2, 2], [1, 1, 0.6, 1.5], [1, 1, 3, 1], [1, 1, 1, 0.5], [2, 1, 1, 2]), ("floor", "round_prefer_ceil")
            ):
                out.append(("resize", (x,), dict(scales=np.array(scales, np.float32), nearest_mode=nearest_mode)))
            # past the tiny take(): the compiled gather, and its x2 repeat of the last axis at every width
            x = (rng.standard_normal((1, 2, 20, 17)) * 20).astype(dtype)
            if dtype == np.float32:
                x.view(np.uint32)[0, 0, 0, :4] = [0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800000]  # payloads, -0, inf
            for scales, coord in (([1, 1, 2, 2], "half_pixel"), ([1, 1, 2, 2], "asymmetric"), ([1, 1, 1, 2], "align_corners")):
                kwargs = dict(scales=np.array(scales, np.float32), coordinate_transformation_mode=coord)
                out.append(("resize", (x,), kwargs))
            # one-row planes: every output row repeats the one before it within a plane, never across
            x = (rng.standard_normal((1, 8, 1, 70)) * 20).astype(dtype)
            out.append(("resize", (x,), dict(scales=np.array([1, 1, 2, 2], np.float32))))
            out.append(("resize", (x,), dict(scales=np.array([1, 1, 3, 1.5], np.float32))))
        for dtype in (np.float32, np.float64, np.int32, np.int64, np.int8):
            cols = (rng.standard_normal((2, 2 * 6, 4 * 3)) * 20).astype(dtype)
            for pads, strides, dilations in (
                ([0, 0, 0, 0], [1, 1], [1, 1]),
                ([1, 0, 2, 1], [1, 2], [1, 1]),
                ([2, 1, 0, 3], [2, 1], [2, 1]),
            ):
                # image sizes that give 4 x 3 blocks of 2 x 3
                h = (4 - 1) * strides[0] + dilations[0] * (2 - 1) + 1 - pads[0] - pads[2]
                w = (3 - 1) * strides[1] + dilations[1] * (3 - 1) + 1 - pads[1] - pads[3]
                out.append(
                    (
                        "col2im",
                        (cols, np.array([h, w]), np.array([2, 3])),
                        dict(pads=pads, strides=strides, dilations=dilations),
                    )
                )
        return out
    """
)
namespace: dict = {}
exec(_CASES_SOURCE, namespace)
CASES = namespace["cases"]()

ROOT = Path(__file__).resolve().parents[2]
KERNELS = {"resize": resize, "col2im": col2im}


def _run_all() -> list[np.ndarray]:
    return [KERNELS[name](*args, **kwargs) for name, args, kwargs in CASES]


@pytest.fixture(scope="module")
def numpy_results(tmp_path_factory) -> list[np.ndarray]:
    """The same cases computed by the numpy kernels, in a process with CUSTOMOPS_JIT=0."""
    path = tmp_path_factory.mktemp("nojit") / "results.pkl"
    script = textwrap.dedent(
        f"""
        import pickle, sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.kernels.test_fast_paths import _run_all
        from customops.accel import jit
        assert not jit.enabled()
        with open({str(path)!r}, "wb") as f:
            pickle.dump(_run_all(), f)
        """
    )
    env = {**os.environ, "CUSTOMOPS_JIT": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    with open(path, "rb") as f:
        return pickle.load(f)


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_compiled_paths_agree_with_the_numpy_kernels(numpy_results) -> None:
    compiled = _run_all()
    assert len(compiled) == len(numpy_results)
    for (name, _args, kwargs), got, want in zip(CASES, compiled, numpy_results, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous, (name, kwargs)
        if got.dtype.kind in "fc" and name == "resize" and kwargs.get("mode", "nearest") != "nearest":
            # float64 arithmetic in another order: the same float32 result up to 1 ulp, float64 to 1e-12
            both_nan = np.isnan(got) & np.isnan(want)
            assert (np.isinf(got) == np.isinf(want)).all(), kwargs
            tol = 2e-7 if got.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(
                np.where(both_nan, 0, got),
                np.where(both_nan, 0, want),
                rtol=tol,
                atol=tol,
                err_msg=str(kwargs),
            )
        else:  # gathers (NaN payloads included) and Col2Im's sums are bit-identical
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {kwargs}")
            assert got.tobytes() == want.tobytes(), (name, kwargs)


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
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
    from customops.kernels.resize import _prepare, _x2_run

    def run(mode: str, coord: str, width: int, scale: float = 2.0) -> list[int]:
        scales = np.array([1, 1, 1, scale], np.float32)
        prepared = _prepare((1, 1, 3, width), np.dtype(np.float32), None, scales, None, *_attrs(coord, mode))
        ((_, indices, weights),) = prepared.filters
        return _x2_run(indices, weights, width).tolist()

    assert run("linear", "half_pixel", 50) == [1, 49]  # the first and last pairs read a clamped edge
    assert run("linear", "asymmetric", 50) == [0, 49]
    assert run("cubic", "half_pixel", 50) == [2, 48]
    assert run("cubic", "align_corners", 50) == [0, 0]  # weights vary along the axis
    assert run("linear", "half_pixel", 5) == [0, 0]  # too short to be worth it
    assert run("linear", "half_pixel", 50, 3.0) == [0, 0]  # x3


def test_downsampling_runs_of_the_last_axis() -> None:
    from customops.kernels.resize import _down_run, _prepare

    def run(mode: str, scale: float, antialias: int = 1, width: int = 64) -> list[int]:
        scales = np.array([1, 1, 1, scale], np.float32)
        prepared = _prepare((1, 1, 3, width), np.dtype(np.float32), None, scales, None, antialias, None,
                            "half_pixel", -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")  # fmt: skip
        (_, indices, weights) = prepared.filters[-1]
        return _down_run(indices, weights).tolist()

    assert run("linear", 0.25, width=1024) == [4, 1, 255]  # 8 taps; the first and last outputs clamp
    assert run("cubic", 0.25, width=1024) == [4, 2, 254]
    assert run("cubic", 0.5, antialias=0) == [2, 1, 31]  # four taps
    assert run("linear", 0.5, antialias=0) == [0, 0, 0]  # two taps: the gathers read each element once
    assert run("linear", 0.3) == [0, 0, 0]  # weights vary along the axis
    assert run("linear", 0.25, width=40) == [0, 0, 0]  # too short to be worth it


def _attrs(coord: str, mode: str) -> tuple:
    """_prepare's attribute arguments after roi/scales/sizes, spec defaults but these two."""
    return (0, None, coord, -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_x2_pairs_give_the_table_loop_bits(monkeypatch) -> None:
    """The rows-first loop with its x2 pairs (jit._h_row_x2) against the same loop through the tables
    only: the same bits, non-finite rows and float64 included."""
    from customops.kernels import resize as resize_module

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
        prepared = resize_module._prepare(x.shape, x.dtype, None, scales, None, *_attrs(coord, mode))
        (_, indices, weights) = prepared.filters[-1]
        used += resize_module._x2_run(indices, weights, shape[-1])[1] > 0
        paired = resize_module._fast_path(prepared)(x)
        with monkeypatch.context() as m:
            m.setattr(resize_module, "_x2_run", lambda *a: np.zeros(2, np.int64))
            tables = resize_module._fast_path(prepared)(x)
        assert paired.tobytes() == tables.tobytes(), (dtype, mode, coord, shape)
    assert used >= 24  # every config but align_corners has a run


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_the_short_loop_of_small_images_gives_the_general_loops_bits(monkeypatch) -> None:
    """jit.resize_small_rows_first against resize_rows_first: the same bits, signed zeros included;
    an image with inf, NaN or float64 sums that overflow falls back to the general loop."""
    from customops.kernels import resize as resize_module

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
        prepared = resize_module._prepare(x.shape, x.dtype, None, scales, None, *_attrs(coord, mode))
        short = resize_module._fast_path(prepared)
        if short is None:  # an axis whose filter is a copy: a gather
            continue
        paths.append(short.__name__)
        with monkeypatch.context() as m:
            m.setattr(resize_module, "_SMALL_SCRATCH", 0)
            general = resize_module._fast_path(prepared)
        assert not general.__name__.startswith("last2_small")
        assert short(x).tobytes() == general(x).tobytes(), (dtype, mode, coord, shape, scales, special)
    # every upsampling of both axes (downsampling goes columns first); 4-D arrays as they come, other
    # ranks through a 4-D view
    assert paths.count("last2_small") >= 300 and paths.count("last2_small_any") >= 200


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_downsampling_phases_give_the_table_loop_bits(monkeypatch) -> None:
    """The columns-first loop with its phase split (jit._h_row_down) against the same loop through the
    tables only: the same bits, non-finite rows and float64 included."""
    from customops.kernels import resize as resize_module

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
        prepared = resize_module._prepare(x.shape, x.dtype, None, scales, None, antialias, None,
                                          "half_pixel", -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")  # fmt: skip
        (_, indices, weights) = prepared.filters[-1]
        used += resize_module._down_run(indices, weights)[0] > 0
        phased = resize_module._fast_path(prepared)(x)
        with monkeypatch.context() as m:
            m.setattr(resize_module, "_down_run", lambda *a: np.zeros(3, np.int64))
            tables = resize_module._fast_path(prepared)(x)
        assert phased.tobytes() == tables.tobytes(), (dtype, mode, antialias, scale, shape)
    assert used >= 20  # every config with at least 2k taps (two-tap linear and cubic /4 gather)


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
def test_last_axis_runs_give_the_table_loop_bits(monkeypatch) -> None:
    """The one-axis loop (only the last axis resized: audio frames, 1-D signals) with its x2 pairs and
    phases against the same loop through the tables only: the same bits."""
    from customops.kernels import resize as resize_module

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
        prepared = resize_module._prepare(x.shape, x.dtype, None, scales, None, antialias, None,
                                          "half_pixel", -0.75, 0, 0.0, "stretch", mode, "round_prefer_floor")  # fmt: skip
        (_, indices, weights) = prepared.filters[-1]
        used += resize_module._x2_run(indices, weights, shape[-1])[1] > 0
        used += resize_module._down_run(indices, weights)[0] > 0
        fast = resize_module._fast_path(prepared)(x)
        with monkeypatch.context() as m:
            m.setattr(resize_module, "_x2_run", lambda *a: np.zeros(2, np.int64))
            m.setattr(resize_module, "_down_run", lambda *a: np.zeros(3, np.int64))
            tables = resize_module._fast_path(prepared)(x)
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
        _same(resize.bind(**attrs), functools.partial(resize, **attrs), x, empty_roi, scales, sizes)
    strings = np.array([["a", "b"], ["c", "d"]], dtype=object)
    _same(resize.bind(mode="nearest"), resize, strings, None, np.array([2, 1.5], np.float32))


def test_bound_pad_and_center_crop_pad_match() -> None:
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    for mode, pads, value, axes in itertools.product(
        ("constant", "reflect", "edge", "wrap"),
        (np.array([1, 0, 2, 0, 1, 1]), np.array([-1, 2, 0, 3, 0, -2]), np.array([0, 0, 9, 0, 0, 0])),
        (None, np.array([7], np.int16), np.zeros(0, np.int16)),
        (None, np.zeros(0, np.int64)),
    ):
        _same(pad.bind(mode=mode), functools.partial(pad, mode=mode), x, pads, value, axes)
    words = np.array([["a", "b"], ["c", "d"]], dtype=object)
    _same(pad.bind(), pad, words, np.array([1, 0, 0, 1]), np.array(["z"], dtype=object))
    for shape, axes in (([3, 6], [1, 2]), ([1, 2, 7], None), ([-1, 3], [0, 1]), ([2], [0, 0])):
        bound = center_crop_pad.bind(axes=axes)
        _same(bound, functools.partial(center_crop_pad, axes=axes), x, np.array(shape, np.int64))


def test_bound_col2im_and_upsample_match() -> None:
    cols = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    for attrs, image, block in (
        ({}, np.array([3, 4]), np.array([2, 2])),
        ({"strides": [1, 2]}, np.array([3, 5]), np.array([2, 2])),
        ({"pads": [0, 0, 0]}, np.array([3, 4]), np.array([2, 2])),
    ):
        _same(col2im.bind(**attrs), functools.partial(col2im, **attrs), cols, image, block)
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    for mode, scales in (("nearest", [1, 1, 2, 0.5]), ("linear", [1, 1, 2, 3]), ("cubic", [1, 1, 2, 2])):
        s = np.array(scales, np.float32)
        _same(upsample.bind(mode=mode), functools.partial(upsample, mode=mode), x, s)


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
    bound = resize.bind(mode="linear")
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
    bound = pad.bind(mode="constant")
    for _ in range(2):
        for value in values:  # the int32 has the bits of 1.0f: only the dtype tells the two apart
            for p in (pads, pads[::-1].copy()):
                want = pad(x, p, value, axes)
                assert bound(x, p, value, axes).tobytes() == want.tobytes()
    cols = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    bound = col2im.bind()
    for _ in range(2):
        for image in (np.array([3, 4]), np.array([4, 3]), np.array([3, 4], np.int32)):
            want = col2im(cols, image, np.array([2, 2]))
            assert bound(cols, image, np.array([2, 2])).tobytes() == want.tobytes()
    bound = center_crop_pad.bind()
    for _ in range(2):
        for shape in (np.array([1, 2, 2, 5]), np.array([1, 2, 5, 2]), np.array([1, 2, 2, 5], np.int32)):
            assert bound(x, shape).tobytes() == center_crop_pad(x, shape).tobytes()


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
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


@pytest.mark.skipif(not jit.enabled(), reason="numba is not available")
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
    """_fast_path picks the compiled implementation named ``path`` (None: the numpy passes) for these
    inputs, and what it computes is what the numpy kernel computes."""
    from customops.kernels import resize as resize_module

    x = (np.arange(np.prod(shape)).reshape(shape) % 7).astype(dtype)
    s = np.array(scales, np.float32)
    prepared = resize_module._prepare(shape, x.dtype, None, s, None, *_attrs("half_pixel", mode))
    fast = resize_module._fast_path(prepared)
    assert (None if fast is None else fast.__name__) == path
    job = resize_module._job(prepared)
    candidate = None if job is None else resize_module._choose(job)
    assert (None if candidate is None else candidate.name) == path  # the table names its closures
    if fast is not None:
        prepared.fast = None
        assert fast(x).tobytes() == resize_module._execute(prepared, x).tobytes()
