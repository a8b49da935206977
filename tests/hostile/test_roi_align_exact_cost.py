"""RoiAlign places the sample points that float64 cannot place for sure in exact arithmetic. A hostile set
of ROIs can put every one of its points there (an inexact spatial_scale, points on whole pixels): that
placing is integer arithmetic with no Python call per point (a Fraction per point took minutes for the
two million points one axis allows). Counted in Python calls, not in seconds."""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np

from customops.kernels.spatial.roi_align import roi_align

BINS = 1024
ROIS = 64


def _calls_during(fn) -> tuple[int, object]:
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return calls, out


def _hostile() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROIs 0..20 * BINS tall at spatial_scale 0.1 (inexact): each bin's one sample point is within a
    rounding of an odd whole pixel, so all ROIS * BINS points are placed exactly."""
    x = (np.arange((2 * BINS + 2) * 3, dtype=np.float64) % 7).reshape(1, 1, 2 * BINS + 2, 3)
    rois = np.zeros((ROIS, 4))
    rois[:, 3] = 20 * BINS
    rois[:, 2] = 10
    return x, rois, np.zeros(ROIS, np.int64)


def test_points_placed_exactly_cost_no_python_call_each():
    x, rois, batch = _hostile()
    kw = {"output_height": BINS, "output_width": 1, "sampling_ratio": 1, "spatial_scale": 0.1}
    kw["coordinate_transformation_mode"] = "output_half_pixel"
    roi_align(x, rois[:1] / BINS, batch[:1], **{**kw, "output_height": 2})  # any compiling, before counting
    calls, out = _calls_during(lambda: roi_align(x, rois, batch, **kw))
    assert calls < ROIS * BINS // 8, calls
    # bin p's point lies just past row 2p + 1 (exactly: 0.1 is a little over a tenth), x near 0.5
    scale = Fraction(0.1)
    for p in (0, 1, BINS // 2, BINS - 1):
        c = Fraction(20 * BINS) * scale * (2 * p + 1) / (2 * BINS)
        low = int(c)
        assert low == 2 * p + 1 and c > low
        f = float(c - low)
        row = (1 - f) * x[0, 0, low] + f * x[0, 0, low + 1]
        assert np.allclose(out[:, 0, p, 0], (row[0] + row[1]) / 2, rtol=1e-12, atol=0), p
