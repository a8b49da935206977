"""customops compare on RoiAlign: ORT's deviations (docs/ort-deviations.md, RoiAlign) are flagged, blamed
on ORT and labelled with their ids, and our side gives the spec answer (computed by hand in the
comments); where onnx.reference leaves the spec (RoiAlign-10's coordinates) it is the odd one out."""

from __future__ import annotations

import numpy as np
import pytest

from customops.comparison.pipeline import compare_model
from tests.helpers import Deviation, check_deviation, one_node_model

F32 = np.float32

# X[y, x] = 4y + x: bilinear interpolation is exact, a bin's mean is 4 * (mean y) + (mean x) of its points
LINEAR = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
ROI = np.array([[0.3, 0.2, 2.7, 3.1]], F32)

DEVIATIONS = [
    # half_pixel: x from -0.2, bins of 1.2, points 0.1, 0.7 | 1.3, 1.9 -> means 0.4, 1.6;
    # y from -0.3, bins of 1.45, points 0.0625, 0.7875 | 1.5125, 2.2375 -> means 0.425, 1.875
    Deviation(
        "T-ROIALIGN",
        "RoiAlign",
        {"X": LINEAR, "rois": ROI, "batch_indices": np.array([0], np.int64)},
        22,
        {"output_height": 2, "output_width": 2, "sampling_ratio": 2},
        attribution=("builtin-cannot-run",),
        spec=np.array([[2.1, 3.3], [7.9, 9.1]], F32).reshape(1, 1, 2, 2),
    ),
    # x: extent 0 - 2 = -2 over 1 bin: ceil(-2) = -2 -> no sample point, the bin is 0
    Deviation(
        "RA-REVERSED-ADAPTIVE",
        "RoiAlign",
        {"X": LINEAR, "rois": np.array([[2, 0, 0, 2]], F32), "batch_indices": np.array([0], np.int64)},
        16,
        {},
        attribution=("builtin-cannot-run",),
        spec=np.zeros((1, 1, 1, 1), F32),
    ),
]


@pytest.mark.parametrize("dev", DEVIATIONS, ids=lambda d: d.id)
def test_known_ort_deviation_is_flagged_attributed_and_ours_gives_the_spec_answer(dev):
    check_deviation(dev)


def test_empty_feature_map_is_refused_by_ours_while_ort_reads_outside_x():
    # RA-EMPTY-MAP: H = 0, one ROI: nothing to interpolate (docs/semantics.md); ORT returns a value it
    # read from outside X (or crashes: compare runs each side in its own process)
    model, feed = one_node_model(
        "RoiAlign",
        {
            "X": np.zeros((1, 1, 0, 4), F32),
            "rois": np.array([[0, 0, 1, 1]], F32),
            "batch_indices": np.array([0]),
        },
        16,
    )
    comparison = compare_model(model, feed, model_name="RA-EMPTY-MAP")
    (node,) = comparison.report.nodes
    iso = comparison.isolated[node.node]
    assert iso.outputs["custom"] is None
    assert "empty spatial axis" in str(node.isolated["errors"]["custom"])
    assert comparison.exit_status == 1
    assert "RA-EMPTY-MAP" in node.known, node.known


def test_roialign_10_reference_is_the_odd_one_out():
    # RoiAlign-10 has no half-pixel shift (16's output_half_pixel): points 0.6, 1.2 | 1.8, 2.4 (x) and
    # 0.5625, 1.2875 | 2.0125, 2.7375 (y) -> [[4.6, 5.8], [10.4, 11.6]]; onnx.reference shifts by -0.5
    model, feed = one_node_model(
        "RoiAlign",
        {"X": LINEAR, "rois": ROI, "batch_indices": np.array([0], np.int64)},
        10,
        output_height=2,
        output_width=2,
        sampling_ratio=2,
    )
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    assert node.attribution == "reference-odd-one-out" and node.verdict == "agree"
    assert node.known == ["semantics: RoiAlign-10 coordinates"], node.known  # the reference's departure
    assert comparison.exit_status == 0
    iso = comparison.isolated[node.node]
    np.testing.assert_allclose(iso.outputs["custom"][0, 0], [[4.6, 5.8], [10.4, 11.6]], rtol=1e-6)
    np.testing.assert_allclose(iso.outputs["builtin"][0, 0], [[4.6, 5.8], [10.4, 11.6]], rtol=1e-6)
    np.testing.assert_allclose(iso.outputs["reference"][0, 0], [[2.1, 3.3], [7.9, 9.1]], rtol=1e-6)


def test_inf_at_a_pixel_of_weight_zero_is_nan_in_ort_and_not_in_ours():
    # docs/semantics.md, "RoiAlign: special values in X": one point exactly on pixel (1, 1) = 5; its
    # neighbours of weight 0 hold inf: ORT multiplies 0 * inf = NaN, the spec's interpolation is 5
    x = LINEAR.copy()
    x[0, 0, 1, 2] = np.inf
    model, feed = one_node_model(
        "RoiAlign",
        {"X": x, "rois": np.array([[0.5, 0.5, 1.5, 1.5]], F32), "batch_indices": np.array([0], np.int64)},
        16,
        coordinate_transformation_mode="output_half_pixel",
        sampling_ratio=1,
    )
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    iso = comparison.isolated[node.node]
    assert iso.outputs["custom"].ravel().tolist() == [5.0]
    assert np.isnan(iso.outputs["builtin"]).all()
    assert any(k.startswith("semantics: RoiAlign: special values") for k in node.known), node.known


def test_a_sample_point_on_minus_one_counts_on_our_side():
    # docs/semantics.md, "RoiAlign: sample points outside the map": X = [[10, 20]], roi x from -2 to 0 in
    # 3 bins of one point each: x = -5/3 (outside: 0), -1 (inside, clamped to pixel 0: 10), -1/3 (10).
    # ORT and onnx.reference agree with the formula here too: compare finds nothing
    model, feed = one_node_model(
        "RoiAlign",
        {
            "X": np.array([[[[10, 20]]]], F32),
            "rois": np.array([[-2, 0, 0, 0]], F32),
            "batch_indices": np.array([0], np.int64),
        },
        16,
        coordinate_transformation_mode="output_half_pixel",
        output_height=1,
        output_width=3,
        sampling_ratio=1,
    )
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    outputs = comparison.isolated[node.node].outputs
    assert outputs["custom"].ravel().tolist() == [0, 10, 10]
    assert node.attribution == "agree", (node.attribution, {k: v.ravel() for k, v in outputs.items()})
    assert comparison.exit_status == 0
