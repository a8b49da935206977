"""The facts the labelling rules read come from one function (customops.eval.judging.facts) for both tools: the
fuzzer's case and compare's node alone, built from the same one-node model, give the same facts and the
same label; and the facts' rules for ORT returning its input and for an axis brought to length 1."""

from __future__ import annotations

import numpy as np

from customops.eval.judging.deviations import known_labels
from customops.eval.judging.facts import Given, Observed, facts
from customops.eval.judging.signature import Signature, Subject
from tests.helpers import NEVER

F32 = np.float32


def test_fuzz_and_compare_describe_one_case_with_the_same_facts():
    """Resize of 10 elements by 0.7f (ORT: 7 elements, the spec: 6) with a NaN in X, scales a constant."""
    from customops.comparison.node_labels import observed as node_observed
    from customops.comparison.pipeline import compare_model
    from customops.eval.running.runner import Pool
    from customops.fuzz.case import Case, Tensor, build_model
    from customops.fuzz.triage import evaluate
    from customops.fuzz.triage import observed as case_observed

    x = np.arange(10, dtype=F32).reshape(1, 1, 1, 10)
    x[0, 0, 0, 3] = np.nan
    scales = Tensor(np.array([1, 1, 1, 0.7], F32), const=True)
    case = Case("Resize", 19, "float", {"X": Tensor(x), "roi": None, "scales": scales, "sizes": None}, {})
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
    built = build_model(case)
    comparison = compare_model(built.model, built.feed)
    (node_entry,) = comparison.report.nodes
    node = built.model.graph.node[0]
    from_fuzz = facts(case_observed(ev))
    from_compare = facts(node_observed(node, comparison.isolated[node_entry.node]))
    assert from_fuzz == from_compare, (from_fuzz, from_compare)
    assert from_fuzz["same_shape"] is False and from_fuzz["kept_axes"] == 3
    sig = Signature("Resize", 19, "builtin", "shape")
    assert (
        known_labels(Subject(sig, from_fuzz)) == node_entry.known == ["semantics: output length from scales"]
    )


def test_ort_returning_its_input_counts_nan_as_equal_and_compares_in_its_output_type():
    x = np.array([[1.0, np.nan, 3.0]], F32)

    def returns(builtin: np.ndarray) -> bool:
        return facts(Observed("Resize", x, "float", {}, builtin=builtin))["builtin_returns_input"]

    assert returns(x.copy())  # NaN where X has NaN
    assert returns(x.astype(np.float64))
    assert not returns(np.array([[1.0, 2.0, 3.0]], F32))
    assert not returns(x.reshape(3, 1))
    assert not returns(np.array([["a", "b", "c"]]))  # X does not cast to it


def test_an_axis_brought_to_length_one_is_a_fact_of_the_reference_rules_only():
    x = np.zeros((2, 3), F32)
    seen = Observed(
        "Resize", x, "float", {"coordinate_transformation_mode": "pytorch_half_pixel"}, out_shape=(2, 1)
    )
    assert "resized_to_one" not in facts(seen)
    assert facts(seen, reference=True)["resized_to_one"] is True
    sig = Signature("Resize", 19, "reference", "value")
    assert known_labels(Subject(sig, facts(seen, reference=True))) == [
        "semantics: `pytorch_half_pixel`, output length 1"
    ]
    assert known_labels(Subject(sig, facts(seen))) == []


def test_index_inputs_and_op_facts_are_read_by_registry_name():
    x = np.zeros((1, 1, 4, 4), F32)
    grid = np.array([[[[0.0, 2e6]]]], F32)
    roi = Given(np.zeros(8, np.float16), "float16", True)
    seen = Observed(
        "GridSample",
        x,
        "float",
        {},
        inputs={"X": Given(x, "float", False), "grid": Given(grid, "float", False), "roi": roi},
    )
    got = facts(seen)
    assert got["grid_far"] is True and got["roi_elem"] == "float16" and got["roi_const"] is True
