"""customops compare on MaxRoiPool: each deviation of ORT's kernel (docs/ort-deviations.md) is flagged,
attributed to ORT and labelled with its id, and our side gives the spec answer computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import Deviation, check_deviation

F32 = np.float32
NO_REFERENCE = ("no-third-vote",)
"""onnx 1.23's reference has no MaxRoiPool: compare has two votes, ORT's and ours, and the id decides."""
WHOLE_2X2 = np.array([[0, 0, 0, 1, 1]], F32)  # batch 0, columns 0..1, rows 0..1

DEVIATIONS = [
    Deviation(
        "MRP-NAN-DROPPED",
        "MaxRoiPool",
        {"X": np.array([[[[np.nan, 1], [2, 3]]]], F32), "rois": WHOLE_2X2},
        1,
        {"pooled_shape": [1, 1]},
        attribution=NO_REFERENCE,
        spec=[[[[np.nan]]]],  # the maximum of a window holding a NaN is NaN
    ),
    Deviation(
        "MRP-NEG-INF-LOWEST",
        "MaxRoiPool",
        {"X": np.full((1, 1, 2, 2), -np.inf, F32), "rois": WHOLE_2X2},
        1,
        {"pooled_shape": [1, 1]},
        attribution=NO_REFERENCE,
        spec=[[[[-np.inf]]]],
    ),
    Deviation(
        "MRP-FLOAT-BIN-EDGE",
        "MaxRoiPool",
        # a roi of 57 columns (0..56) in 7 bins: the last one is [floor(6 * 57 / 7), ceil(7 * 57 / 7)) =
        # [48, 57), whose maximum is 56; column 57 lies outside the roi
        {"X": np.arange(58, dtype=F32).reshape(1, 1, 1, 58), "rois": np.array([[0, 0, 0, 56, 0]], F32)},
        1,
        {"pooled_shape": [1, 7]},
        attribution=NO_REFERENCE,
        spec=[[[[8, 16, 24, 32, 40, 48, 56]]]],
    ),
    Deviation(
        "semantics: MaxRoiPool: roi corners in pixels of X",
        "MaxRoiPool",
        # x1 = x2 = 5 at spatial_scale 0.7 (float32: 0.699999988...): 5 * 0.7f is 3.49999994... exactly,
        # which rounds to column 3; ORT rounds the float32 product 3.5 to column 4
        {"X": np.arange(8, dtype=F32).reshape(1, 1, 1, 8), "rois": np.array([[0, 5, 0, 5, 0]], F32)},
        1,
        {"pooled_shape": [1, 1], "spatial_scale": 0.7},
        attribution=NO_REFERENCE,
        spec=[[[[3]]]],
    ),
    Deviation(
        "T-MAXROIPOOL-22",
        "MaxRoiPool",
        {"X": np.arange(20, dtype=F32).reshape(1, 1, 4, 5), "rois": np.array([[0, 0, 0, 4, 3]], F32)},
        22,
        {"pooled_shape": [2, 2]},
        attribution=("builtin-cannot-run",),
        # rows 0..3 in 2 bins: [0, 2), [2, 4); columns 0..4: [0, 3), [2, 5)
        spec=[[[[7, 9], [17, 19]]]],
    ),
    Deviation(
        "T-MAXROIPOOL-DOUBLE",
        "MaxRoiPool",
        {
            "X": np.arange(20, dtype=np.float64).reshape(1, 1, 4, 5),
            "rois": np.array([[0, 1, 1, 2, 2]], np.float64),
        },
        1,
        {"pooled_shape": [1, 1]},
        attribution=("builtin-cannot-run",),
        spec=[[[[12]]]],  # rows 1..2, columns 1..2: X[2, 2]
    ),
]


@pytest.mark.parametrize("dev", DEVIATIONS, ids=lambda d: d.id)
def test_known_ort_deviation_is_flagged_attributed_and_ours_gives_the_spec_answer(dev):
    check_deviation(dev)
