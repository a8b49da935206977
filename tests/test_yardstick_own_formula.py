"""The yardstick is our kernel's formula run in float64, so a departure of our formula is within its
bound by construction: where onnx.reference is no vote for the op but agrees with ORT's kernel and not
with ours, compare names no side rather than blaming ORT for our mistake."""

from __future__ import annotations

from customops.comparison.pipeline import compare_model
from tests.helpers import roi_align_model


def test_a_formula_wrong_in_ours_is_not_blamed_on_ort(wrong_kernel):
    model, feed = roi_align_model(far=False)
    wrong_kernel("roi_align:add1")  # ours adds 1 in every type: its float64 run, the yardstick, too
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    within = node.isolated["yardstick"]["within"]
    assert within["custom"] is True and within["builtin"] is False  # the yardstick shares our mistake
    assert node.attribution == "undecided", node.isolated
    assert node.verdict == "disagree" and "builtin-leaves-spec" not in comparison.report.summary
