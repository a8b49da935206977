"""Large outputs recycled per thread: reused only once nothing else refers to them."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import customops
from customops import allocator
from customops.kernels import _alloc
from customops.kernels.resize import resize
from tests.helpers import one_node_model

LARGE_SHAPE = (1, 32, 512, 512)  # 33.5 MB of float32, over the 32 MiB threshold


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@pytest.fixture(autouse=True)
def _fresh_cache():
    _alloc._local.__dict__.pop("buffers", None)
    yield
    _alloc._local.__dict__.pop("buffers", None)


def test_a_released_buffer_is_reused_and_a_held_one_is_not() -> None:
    a = _alloc.empty(LARGE_SHAPE, np.float32)
    first = _address(a)
    b = _alloc.empty(LARGE_SHAPE, np.float32)
    assert _address(b) != first  # a is still held
    view = a[0, 3]
    del a
    c = _alloc.empty(LARGE_SHAPE, np.float32)
    third = _address(c)
    assert third not in (first, _address(b))  # a view of a still holds its buffer
    del view, c
    d = _alloc.empty(LARGE_SHAPE, np.float32)
    assert _address(d) == third  # a's buffer, the oldest, left the cache (KEEP = 2)
    assert d.shape == LARGE_SHAPE and d.dtype == np.float32 and d.flags.c_contiguous and d.flags.writeable
    # the same bytes under another dtype and shape
    del d
    e = _alloc.empty((2, 16, 512, 256), np.float64)
    assert e.dtype == np.float64 and e.shape == (2, 16, 512, 256)
    assert len(_alloc._local.buffers) <= _alloc.KEEP


def test_small_outputs_are_plain_and_never_kept() -> None:
    a = _alloc.empty((3, 8, 8), np.float32)
    assert a.base is None and not getattr(_alloc._local, "buffers", [])
    assert not _alloc.is_large((3, 8, 8), np.float32) and _alloc.is_large(LARGE_SHAPE, np.float32)


def test_each_thread_has_its_own_buffers() -> None:
    mine = _alloc.empty(LARGE_SHAPE, np.float32)
    address = _address(mine)
    del mine
    seen = []
    worker = threading.Thread(target=lambda: seen.append(_address(_alloc.empty(LARGE_SHAPE, np.float32))))
    worker.start()
    worker.join()
    assert seen[0] != address
    assert _address(_alloc.empty(LARGE_SHAPE, np.float32)) == address


def test_results_kept_by_a_caller_are_never_overwritten() -> None:
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((1, 32, 256, 256)).astype(np.float32)
    x2 = rng.standard_normal((1, 32, 256, 256)).astype(np.float32)
    bound = resize.bind(mode="linear")
    scales = np.array([1, 1, 2, 2], np.float32)
    y1 = bound(x1, None, scales, None)
    expected = y1.copy()
    y2 = bound(x2, None, scales, None)
    assert _address(y2) != _address(y1)
    np.testing.assert_array_equal(y1, expected)
    del y1
    y3 = bound(x1, None, scales, None)  # reuses y1's buffer now that nobody holds it
    np.testing.assert_array_equal(y3, expected)
    assert not np.shares_memory(y3, y2)


def test_sessions_return_every_large_result_intact() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 32, 256, 256)).astype(np.float32)
    for op, inputs in (
        ("Resize", {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], np.float32)}),
        ("Pad", {"data": x[:, :, :, :], "pads": np.array([0, 0, 130, 130, 0, 0, 130, 130], np.int64)}),
    ):
        model, feed = one_node_model(op, inputs, 19, initializers=("scales", "pads"))
        session = customops.InferenceSession(customops.rewrite(model))
        (first,) = session.run(None, feed)
        assert first.nbytes >= _alloc.LARGE
        kept = first.copy()
        other = {k: (v + 1 if v.dtype == np.float32 else v) for k, v in feed.items()}
        (second,) = session.run(None, other)
        np.testing.assert_array_equal(first, kept)  # ORT hands back its own copy of each result
        assert not np.array_equal(first, second)
        (third,) = session.run(None, feed)
        np.testing.assert_array_equal(third, kept)
        kept_here = [buf for buf in getattr(_alloc._local, "buffers", []) if buf.nbytes == first.nbytes]
        if allocator.recycler() is not None:
            # numpy's memory handler recycled it during the runs: no second copy kept here
            assert not kept_here
        else:
            # the kernel ran on this thread and kept its output's buffer for the next call
            assert kept_here


def test_plain_onnxruntime_sessions_keep_the_kernels_own_recycling() -> None:
    """Runs of a plain onnxruntime session are not ours to wrap: the kernel keeps its output's buffer."""
    import onnxruntime as ort

    x = np.random.default_rng(2).standard_normal((1, 32, 256, 256)).astype(np.float32)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], np.float32)},
        19,
        initializers=("scales",),
    )
    session = ort.InferenceSession(customops.rewrite(model).SerializeToString(), customops.session_options())
    (y,) = session.run(None, feed)
    assert any(buf.nbytes == y.nbytes for buf in _alloc._local.buffers)
