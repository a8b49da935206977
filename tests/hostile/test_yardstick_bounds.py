"""The yardstick's bound is how far rounding may move an output element: a ROI far off the map (its
coordinates round by many pixels, and it reads only zeros) must not widen the bound of the ROIs on the
map, or a kernel of ours that is wrong there passes as within rounding (docs/compare.md, Yardsticks)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from customops.comparison.pipeline import compare_model
from customops.eval.yardstick import bound

F32 = np.float32
FAR = 1e7


def _roi_align(far: bool):
    """RoiAlign-16 on a 64x64 map of values up to about 250 with two ROIs on it, and with ``far`` a third
    at (FAR, FAR): it reads only zeros on every side."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((1, 4, 64, 64)) * 60).astype(F32)
    rois = [[3.3, 5.1, 61.7, 58.9], [10.2, 0.7, 40.9, 33.3]] + ([[FAR, FAR, FAR + 9, FAR + 9]] if far else [])
    boxes = np.array(rois, F32)
    attrs = {"coordinate_transformation_mode": "output_half_pixel", "output_height": 7, "output_width": 7}
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], name="roi", sampling_ratio=2, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, list(boxes.shape)),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [len(boxes)]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    return model, {"x": x, "rois": boxes, "idx": np.zeros(len(boxes), np.int64)}


def test_a_far_roi_does_not_widen_the_bound_of_the_others():
    _, feed = _roi_align(far=True)
    attrs = {"sampling_ratio": 2, "spatial_scale": 1.0, "output_height": 7, "output_width": 7}
    inputs = [feed["x"], feed["rois"], feed["idx"]]
    limits = np.asarray(bound("RoiAlign", inputs, attrs, (3, 4, 7, 7), F32))
    near = np.asarray(
        bound("RoiAlign", [feed["x"], feed["rois"][:2], feed["idx"][:2]], attrs, (2, 4, 7, 7), F32)
    )
    assert limits.shape in ((3, 1, 1, 1), (3,)) and np.all(limits.reshape(-1)[:2] == near.reshape(-1))
    assert limits.reshape(-1)[2] > 1.0 > near.max()  # the far roi's own rounding is many pixels


def test_a_wrong_kernel_of_ours_is_blamed_beside_a_far_roi(wrong_kernel):
    model, feed = _roi_align(far=True)
    wrong_kernel("roi_align:add1f32")  # ours adds 1 in float32; its float64 run, the yardstick, does not
    comparison = compare_model(model, feed, reference_limit=0)
    (node,) = comparison.report["nodes"]
    assert node["attribution"] == "custom-leaves-spec", node["isolated"]
    within = node["isolated"]["yardstick"]["within"]
    assert within["custom"] is False and within["builtin"] is True


def test_a_node_too_large_for_the_yardstick_has_none_and_the_votes_decide(monkeypatch):
    from customops.eval import yardstick

    model, feed = _roi_align(far=False)
    monkeypatch.setattr(yardstick, "MEMORY_LIMIT", 8 * feed["x"].size)  # below the float64 inputs and output
    comparison = compare_model(model, feed)
    (node,) = comparison.report["nodes"]
    y = node["isolated"].get("yardstick")
    assert y is not None and y["error"].startswith("the yardstick would hold"), node["isolated"]
    assert node["attribution"] != "within-rounding"


def test_a_huge_pixel_no_roi_reads_does_not_widen_the_bound(wrong_kernel):
    model, feed = _roi_align(far=False)
    feed["x"][0, 0, 63, 63] = 1e6  # in a corner both rois stay two pixels away from
    wrong_kernel("roi_align:add1f32")
    comparison = compare_model(model, feed, reference_limit=0)
    (node,) = comparison.report["nodes"]
    assert node["attribution"] == "custom-leaves-spec", node["isolated"]
    assert node["isolated"]["yardstick"]["bound"] < 1.0
