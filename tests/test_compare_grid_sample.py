"""customops compare on GridSample: each deviation of docs/ort-deviations.md (GridSample) is flagged,
attributed and labelled, our side gives the spec answer; onnx.reference votes on GridSample-16's mode
names (renamed to 20's); where it is the odd one out, neither ORT nor we are blamed."""

from __future__ import annotations

import numpy as np
import pytest

from customops.comparison.pipeline import compare_model
from tests.helpers import Deviation, check_deviation, one_node_model

F32 = np.float32
X44 = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)

DEVIATIONS = [
    Deviation(
        "T-GRIDSAMPLE-DOUBLE-16",
        "GridSample",
        {"X": X44.astype(np.float64), "grid": np.array([[[[0.0, -0.5]]]])},
        16,
        {"align_corners": 1},
        attribution=("builtin-cannot-run",),
        spec=[[[[4.5]]]],  # x = 1.5, y = 0.75 on X[r, c] = 4r + c
    ),
    Deviation(
        "T-GRIDSAMPLE-INT32",
        "GridSample",
        {"X": X44.astype(np.int32), "grid": np.array([[[[0.0, -0.5]]]], F32)},
        20,
        {"align_corners": 1},
        attribution=("builtin-cannot-run",),
        spec=[[[[4]]]],  # 4.5 rounds half to even
    ),
    Deviation(
        "G-1D-SPATIAL",
        "GridSample",
        {"X": np.array([[[0, 10, 20, 30]]], F32), "grid": np.array([[[0.25]]], F32)},
        20,
        attribution=("builtin-cannot-run",),
        spec=[[[20]]],  # x = ((0.25 + 1) * 4 - 1) / 2 = 2
    ),
    Deviation(
        "G-CUBIC-3D-SPATIAL",
        "GridSample",
        {"X": np.arange(8, dtype=F32).reshape(1, 1, 2, 2, 2), "grid": np.zeros((1, 1, 1, 1, 3), F32)},
        22,
        {"mode": "cubic", "padding_mode": "border"},
        attribution=("builtin-cannot-run",),
        # x = 0.5 on each axis: taps -1..2 weigh -0.09375, 0.59375, 0.59375, -0.09375; with border padding
        # pixels 0 and 1 get 0.5 each: the mean of the 8 voxels
        spec=[[[[[3.5]]]]],
    ),
    Deviation(
        "G-EMPTY-IMAGE",
        "GridSample",
        {"X": np.zeros((1, 1, 0, 4), F32), "grid": np.zeros((1, 1, 2, 2), F32)},
        20,
        attribution=("builtin-cannot-run",),
        spec=[[[[0, 0]]]],  # every location is outside an empty image: zeros padding
    ),
    Deviation(
        "G-GRID-FAR-OR-NAN",
        "GridSample",
        {"X": X44, "grid": np.array([[[[1e8, 0.0]]]], F32)},
        20,
        {"padding_mode": "border"},
        # far right: every tap reads column 3; y = 1.5 between rows 1 and 2: (7 + 11) / 2
        spec=[[[[9]]]],
    ),
    Deviation(
        "G-GRID-FAR-OR-NAN-ZEROS",
        "GridSample",
        {"X": X44, "grid": np.array([[[[1e30, 0.0]]]], F32)},
        20,
        spec=[[[[0]]]],  # far outside: every tap reads 0
    ),
]


@pytest.mark.parametrize("dev", DEVIATIONS, ids=lambda d: d.id)
def test_known_ort_deviation_is_flagged_attributed_and_ours_gives_the_spec_answer(dev):
    check_deviation(dev)


def _node(model, feed):
    comparison = compare_model(model, feed, model_name="gridsample")
    (node,) = comparison.report.nodes or [None]
    return comparison, node


def test_gridsample_16_bilinear_without_a_third_vote_blames_nobody():
    # ORT and ours agree on GridSample-16 bilinear: the node agrees, whatever the reference says
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1, 2, 4, 5)).astype(F32)
    g = rng.uniform(-0.9, 0.9, size=(1, 3, 3, 2)).astype(F32)
    model, feed = one_node_model("GridSample", {"X": X, "grid": g}, 16, mode="bilinear")
    comparison, _ = _node(model, feed)
    assert comparison.report.verdict == "agree", comparison.report.summary
    assert comparison.exit_status == 0


def test_reference_moving_out_of_bound_points_is_the_odd_one_out():
    # cubic + border at u = -1.2 (x = -0.9): ORT and we interpolate the border-padded image there
    # (8.56425); onnx.reference moves the point onto column 0 first (8.571)
    model, feed = one_node_model(
        "GridSample",
        {"X": X44, "grid": np.array([[[[-1.2, 0.3]]]], F32)},
        20,
        mode="cubic",
        padding_mode="border",
    )
    comparison, node = _node(model, feed)
    assert comparison.exit_status == 0, comparison.report.summary
    if node is not None:
        assert node.attribution == "reference-odd-one-out"
        assert node.known == ["semantics: cubic + border, location out of bound"], node.known
    ours = comparison.isolated[next(iter(comparison.isolated))].outputs["custom"]
    np.testing.assert_allclose(ours.ravel(), [8.56425], rtol=1e-6)


def test_nearest_reflection_tie_rounds_then_mirrors_on_all_three_sides():
    # docs/semantics.md, GridSample "nearest: rounding": X = [0, 1] (one row), align_corners=0, u = -2 ->
    # x = ((u + 1) * 2 - 1) / 2 = -1.5, halfway between pixels -2 and -1: the even -2, whose mirror about
    # the border at -0.5 is pixel 1 -> 1 (PyTorch mirrors the location to 0.5 first and rounds it to 0)
    model, feed = one_node_model(
        "GridSample",
        {"X": np.array([[[[0, 1]]]], F32), "grid": np.array([[[[-2.0, 0.0]]]], F32)},
        20,
        mode="nearest",
        padding_mode="reflection",
    )
    comparison, node = _node(model, feed)
    assert comparison.exit_status == 0, comparison.report.summary
    assert node.attribution == "agree" and node.known == []
    outputs = comparison.isolated[node.node].outputs
    assert {side: outputs[side].ravel().tolist() for side in outputs} == {
        "builtin": [1.0],
        "custom": [1.0],
        "reference": [1.0],
    }


@pytest.mark.parametrize(("mode", "opset"), [("bilinear", 16), ("bicubic", 17), ("bilinear", 19)])
def test_gridsample_16_modes_get_a_third_vote(mode, opset):
    # GridSample-16's bilinear / bicubic are GridSample-20's linear / cubic: onnx.reference knows only
    # the latter names, so the reference side runs the node renamed, and votes
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1, 2, 4, 5)).astype(F32)
    g = rng.uniform(-1.1, 1.1, size=(1, 3, 3, 2)).astype(F32)
    model, feed = one_node_model("GridSample", {"X": X, "grid": g}, opset, mode=mode)
    comparison, _ = _node(model, feed)
    (iso,) = comparison.isolated.values()
    assert iso.errors["reference"] is None, iso.errors["reference"]
    np.testing.assert_allclose(iso.outputs["reference"], iso.outputs["custom"], rtol=1e-5, atol=1e-6)
    assert iso.model.graph.node[0].attribute[0].s.decode() == mode  # the model compared is unchanged


def test_gridsample_20_keeps_rejecting_16s_mode_names():
    # at opset 20 "bilinear" is no mode: the reference is not handed a renamed node
    from onnx import helper

    from customops.eval.running.worker import reference_model

    model, _ = one_node_model("GridSample", {"X": X44, "grid": np.zeros((1, 1, 1, 2), F32)}, 20)
    model.graph.node[0].attribute.extend([helper.make_attribute("mode", "bilinear")])
    assert reference_model(model).graph.node[0].attribute[0].s == b"bilinear"
