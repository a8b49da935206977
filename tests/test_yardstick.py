"""compare and the fuzzer judge each side against the yardstick, a float64 value of the spec formula
(customops.eval.judging.yardstick), on real ORT sessions: a more accurate side is never blamed for being more
accurate, a side beyond its rounding bound still is, and onnx.reference's RoiAlign (a port of ORT's, in
float32) does not outvote the yardstick."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from customops.comparison.pipeline import compare_model
from customops.comparison.table import format_table
from customops.kernels.spatial.roi_align import roi_align

F32 = np.float32


def _roi_align_model(**attrs):
    """RoiAlign-16 (output_half_pixel, as torchvision's detection exports) on a 64x64 feature map of
    values up to about 250, three rois: ORT accumulates in float32."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((1, 4, 64, 64)) * 60).astype(F32)
    rois = np.array([[3.3, 5.1, 61.7, 58.9], [10.2, 0.7, 40.9, 33.3], [0.4, 20.6, 62.5, 63.1]], F32)
    attrs = {
        "coordinate_transformation_mode": "output_half_pixel",
        "output_height": 7,
        "output_width": 7,
        **attrs,
    }
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], name="roi", **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, list(rois.shape)),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    feed = {"x": x, "rois": rois, "idx": np.zeros(3, np.int64)}
    exact = roi_align(
        x.astype(np.float64),
        rois.astype(np.float64),
        feed["idx"],
        **{**attrs, "mode": attrs.get("mode", "avg")},
    )
    return model, feed, exact


def test_float32_accumulation_of_ort_is_within_rounding_and_blames_no_kernel():
    model, feed, exact = _roi_align_model(sampling_ratio=2)
    comparison = compare_model(model, feed)
    report = comparison.report
    (node,) = report.nodes
    iso = comparison.isolated["roi"]
    # ORT's float32 accumulation is further from the float64 value than the default tolerance allows
    assert np.abs(iso.outputs["builtin"] - exact).max() > 1e-5
    assert np.abs(iso.outputs["custom"] - exact).max() <= np.spacing(F32(np.abs(exact).max()))
    assert np.array_equal(iso.yardstick.value, exact)  # our kernel's float64 result, not ORT's
    assert node.attribution == "within-rounding", node.isolated
    assert node.origin == "rounding" and node.verdict == "within-rounding"
    assert node.known == []
    yardstick = node.isolated["yardstick"]
    assert yardstick["within"]["builtin"] is True and yardstick["within"]["custom"] is True
    assert yardstick["distance"]["builtin"] > 1e-5 and yardstick["distance"]["custom"] < 1e-5
    # the graph output still differs at the user's tolerance: exit 1, but the verdict names no side
    assert comparison.exit_status == 1 and report.verdict == "disagree"
    summary = report.summary
    assert "within-rounding" in summary and "no kernel leaves the spec" in summary
    assert "leaves-spec" not in summary.replace("no kernel leaves the spec", "")
    assert "starts at" not in summary
    assert not comparison.report.amplified  # the node alone explains the outputs: no extra runs


def test_onnx_reference_roi_align_no_longer_outvotes_the_yardstick():
    model, feed, _ = _roi_align_model(sampling_ratio=0)
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    iso = comparison.isolated["roi"]
    # onnx.reference's RoiAlign is a port of ORT's: the same float32 bits, so a majority of the two
    # would blame ours
    assert np.array_equal(iso.outputs["reference"], iso.outputs["builtin"])
    assert node.isolated["builtin_vs_reference"]["pass"] is True
    assert node.isolated["custom_vs_reference"]["pass"] is False
    assert node.isolated["yardstick"]["reference_vote"] is False
    assert node.isolated["yardstick"]["within"]["reference"] is None
    assert node.attribution in ("within-rounding", "builtin-leaves-spec"), node.isolated
    assert "custom-leaves-spec" not in comparison.report.summary


def test_a_side_beyond_its_bound_is_blamed_even_without_a_reference(wrong_kernel):
    # our float32 RoiAlign adds 1 (its float64 run, the yardstick, does not): ours is beyond its bound,
    # ORT within; with no reference run, the yardstick alone decides
    model, feed, _ = _roi_align_model(sampling_ratio=2)
    wrong_kernel("roi_align:add1f32")
    comparison = compare_model(model, feed, reference_limit=0)
    (node,) = comparison.report.nodes
    assert node.isolated["errors"]["reference"].startswith("not run")
    assert node.attribution == "custom-leaves-spec", node.isolated
    assert node.origin == "starts-here" and node.verdict == "disagree"
    within = node.isolated["yardstick"]["within"]
    assert within["custom"] is False and within["builtin"] is True
    assert comparison.report.summary.endswith(
        "first difference starts at 'roi' [RoiAlign-16]: custom-leaves-spec"
    )


def test_the_fuzzer_judges_a_case_by_the_same_yardstick():
    from customops.eval.judging.signature import Finding
    from customops.eval.running.runner import Pool
    from customops.eval.running.worker import Request
    from customops.fuzz.spaces.base import Verdict
    from customops.fuzz.triage import classify, yardstick_within

    model, feed, _ = _roi_align_model(sampling_ratio=2)
    with Pool(1, 600) as pool:
        outcomes = pool.run(Request(model.SerializeToString(), feed))
        within = yardstick_within(pool, model, feed, outcomes, ("float", 0.0))
    assert within is not None and within.builtin and within.custom
    valid = Verdict(None)
    assert classify("float", valid, outcomes) == [Finding("custom", "value")]  # the majority alone
    assert classify("float", valid, outcomes, 0.0, within) == []  # within rounding: no finding


def _two_deviating_resizes():
    """Two align_corners Resizes in a row (R-ALIGN-CORNERS-INT-LENGTH each): the second sees the first's
    difference carried in, so its values in the model differ more than the node alone."""
    x = np.arange(1, 1 + 8 * 8, dtype=F32).reshape(1, 1, 8, 8)
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 0.6, 0.6])
    nodes = [
        helper.make_node(
            "Resize",
            [x_in, "", "scales"],
            [out],
            name=name,
            mode="linear",
            coordinate_transformation_mode="align_corners",
        )
        for name, x_in, out in (("first", "x", "h"), ("second", "h", "y"))
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [scales],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), {"x": x}


def test_the_row_that_carries_the_attribution_shows_the_node_alone():
    model, feed = _two_deviating_resizes()
    report = compare_model(model, feed).report.to_json()  # the document the table is made from
    second = next(n for n in report["nodes"] if n["node"] == "second")
    assert second["origin"] == "starts-here"
    alone, in_model = second["isolated"]["builtin_vs_custom"]["max_abs"], second["in_model"]["max_abs"]
    assert alone != in_model  # the first node's difference is carried in
    lines = format_table(report, all_rows=False).splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("second "))
    assert f"{alone:.3g}" in lines[row].split() and f"{in_model:.3g}" not in lines[row].split()
    label = lines[row + 1]
    assert label.split()[:4] == ["in", "the", "model", "(in"] and f"{in_model:.3g}" in label.split()


def _table_rows(path: str, heading: str) -> dict[str, list[str]]:
    """The rows of the first table after ``heading`` in a doc, by their first cell (split at ", ")."""
    from pathlib import Path

    text = Path(__file__).resolve().parent.parent.joinpath(path).read_text()
    lines = text[text.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| op |"))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        for op in cells[0].split(", "):
            rows[op.split(" ")[0]] = cells
    return rows


def test_the_docs_tables_of_yardsticks_follow_the_data():
    from customops.eval.judging.rounding_bound import TERMS
    from customops.eval.judging.yardstick_table import YARDSTICKS
    from customops.registry import OP_TYPES

    assert set(YARDSTICKS) == set(OP_TYPES)
    for path, heading, vote_column in (
        ("docs/compare.md", "### Yardsticks per op", 4),
        ("docs/semantics.md", "## Which side follows the spec: the yardstick", 3),
    ):
        rows = _table_rows(path, heading)
        assert set(rows) == set(YARDSTICKS), path
        for op, row in YARDSTICKS.items():
            cells = rows[op]
            assert cells[vote_column].startswith("yes" if row.reference_vote else "no"), (path, op)
            assert cells[1].startswith("none") == (op not in TERMS), (path, op)
