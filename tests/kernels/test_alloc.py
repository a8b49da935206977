"""Large results are fresh arrays: a result a caller keeps is never overwritten by a later call, and
sessions hand back every large result intact."""

from __future__ import annotations

import numpy as np

import customops
from customops.kernels.resampling.resize import bind as bind_resize
from tests.helpers import one_node_model


def test_results_kept_by_a_caller_are_never_overwritten() -> None:
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((1, 32, 256, 256)).astype(np.float32)
    x2 = rng.standard_normal((1, 32, 256, 256)).astype(np.float32)
    bound = bind_resize(mode="linear")
    scales = np.array([1, 1, 2, 2], np.float32)
    y1 = bound(x1, None, scales, None)  # 33.5 MB of float32
    expected = y1.copy()
    y2 = bound(x2, None, scales, None)
    assert not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, expected)
    del y1
    y3 = bound(x1, None, scales, None)
    np.testing.assert_array_equal(y3, expected)
    assert not np.shares_memory(y3, y2)


def test_sessions_return_every_large_result_intact() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 32, 256, 256)).astype(np.float32)
    for op, inputs in (
        ("Resize", {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], np.float32)}),
        ("Pad", {"data": x, "pads": np.array([0, 0, 130, 130, 0, 0, 130, 130], np.int64)}),
    ):
        model, feed = one_node_model(op, inputs, 19, initializers=("scales", "pads"))
        session = customops.InferenceSession(customops.rewrite(model))
        (first,) = session.run(None, feed)
        assert first.nbytes >= 32 << 20
        kept = first.copy()
        other = {k: (v + 1 if v.dtype == np.float32 else v) for k, v in feed.items()}
        (second,) = session.run(None, other)
        np.testing.assert_array_equal(first, kept)  # ORT hands back its own copy of each result
        assert not np.array_equal(first, second)
        (third,) = session.run(None, feed)
        np.testing.assert_array_equal(third, kept)
