"""compare names the kind of a node's difference as the fuzzer names its groups' (value, shape, dtype,
rejects-valid), and labels it by the rules that read that kind (customops.comparison.node_labels)."""

from __future__ import annotations

import numpy as np

from customops.comparison.pipeline import compare_model
from tests.helpers import one_node_model

F32 = np.float32


def test_an_output_of_another_shape_is_labelled_as_a_shape_difference():
    """Resize of 10 elements by 0.7f: ORT multiplies in float32 (7 elements), the spec in exact
    arithmetic (floor(6.9999...) = 6). The difference is one of shape, so it is labelled by the shape
    rule ('output length from scales'), not by a rule about values."""
    x = np.arange(10, dtype=F32).reshape(1, 1, 1, 10)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 1, 0.7], F32)},
        19,
        initializers=("scales",),
        mode="nearest",
    )
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    pair = node.isolated["builtin_vs_custom"]
    assert not pair["shape_match"] and pair["shape_a"] == [1, 1, 1, 7], pair
    assert node.attribution == "builtin-leaves-spec" and node.origin == "starts-here"
    assert node.known == ["semantics: output length from scales"], node.known
    ours = comparison.isolated[node.node].outputs["custom"]
    assert ours.shape == (1, 1, 1, 6)
