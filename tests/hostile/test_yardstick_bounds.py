"""The yardstick's bound is how far rounding may move an output element: a ROI far off the map (its
coordinates round by many pixels, and it reads only zeros) must not widen the bound of the ROIs on the
map, or a kernel of ours that is wrong there passes as within rounding (docs/compare.md, Yardsticks)."""

from __future__ import annotations

import numpy as np

from customops.comparison.pipeline import compare_model
from customops.eval.judging.rounding_bound import bound
from tests.helpers import roi_align_model

F32 = np.float32


def test_a_far_roi_does_not_widen_the_bound_of_the_others():
    _, feed = roi_align_model(far=True)
    attrs = {"sampling_ratio": 2, "spatial_scale": 1.0, "output_height": 7, "output_width": 7}
    inputs = [feed["x"], feed["rois"], feed["idx"]]
    limits = np.asarray(bound("RoiAlign", inputs, attrs, (3, 4, 7, 7), F32))
    near = np.asarray(
        bound("RoiAlign", [feed["x"], feed["rois"][:2], feed["idx"][:2]], attrs, (2, 4, 7, 7), F32)
    )
    assert limits.shape in ((3, 1, 1, 1), (3,)) and np.all(limits.reshape(-1)[:2] == near.reshape(-1))
    assert limits.reshape(-1)[2] > 1.0 > near.max()  # the far roi's own rounding is many pixels


def test_a_wrong_kernel_of_ours_is_blamed_beside_a_far_roi(wrong_kernel):
    model, feed = roi_align_model(far=True)
    wrong_kernel("roi_align:add1f32")  # ours adds 1 in float32; its float64 run, the yardstick, does not
    comparison = compare_model(model, feed, reference_limit=0)
    (node,) = comparison.report.nodes
    assert node.attribution == "custom-leaves-spec", node.isolated
    within = node.isolated["yardstick"]["within"]
    assert within["custom"] is False and within["builtin"] is True


def test_a_node_too_large_for_the_yardstick_has_none_and_the_votes_decide(monkeypatch):
    from customops.eval.judging import yardstick

    model, feed = roi_align_model(far=False)
    monkeypatch.setattr(yardstick, "MEMORY_LIMIT", 8 * feed["x"].size)  # below the float64 inputs and output
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    y = node.isolated.get("yardstick")
    assert y is not None and y["error"].startswith("the yardstick would hold"), node.isolated
    assert node.attribution != "within-rounding"


def test_a_huge_pixel_no_roi_reads_does_not_widen_the_bound(wrong_kernel):
    model, feed = roi_align_model(far=False)
    feed["x"][0, 0, 63, 63] = 1e6  # in a corner both rois stay two pixels away from
    wrong_kernel("roi_align:add1f32")
    comparison = compare_model(model, feed, reference_limit=0)
    (node,) = comparison.report.nodes
    assert node.attribution == "custom-leaves-spec", node.isolated
    assert node.isolated["yardstick"]["bound"] < 1.0
