"""The facts the labelling rules read come from one function (customops.eval.judging.facts) for both tools: the
fuzzer's case and compare's node alone, built from the same one-node model, give the same facts and the
same label; and the facts' rules for ORT returning its input and for an axis brought to length 1."""

from __future__ import annotations

import numpy as np

from customops.eval.judging.deviations import REFERENCE_RULES, known_labels, match_read, misses
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


def _bin_edges_differ(rois: list[list[float]], pooled: list[int]) -> bool:
    from customops.eval.judging.facts import op_facts

    attrs = {"pooled_shape": pooled, "spatial_scale": 1.0}
    return op_facts("MaxRoiPool", {"rois": np.array(rois, F32)}, attrs, None)["float_bin_edges_differ"]


def test_maxroipool_bin_edges_are_read_within_a_bound():
    """A roi 3 pixels wide in 21 bins has a float32 edge other than the exact one; the fact is found
    from the bins up to BIN_CHECKS of the first ROI_CHECKS rois, so a pooled_shape of 2**40 bins (which
    our kernel refuses), 2**30 bins or a million rois cost no more than those (every bin was read in Python: compare
    hung labelling such a node)."""
    from customops.eval.judging.facts import ROI_CHECKS

    differs, exact = [0, 0, 0, 2, 0], [0, 0, 0, 3, 3]  # 3 pixels wide; 4 x 4
    assert _bin_edges_differ([differs], [1, 21])
    assert not _bin_edges_differ([differs], [1, 1])
    assert not _bin_edges_differ([exact], [2, 2])
    assert not _bin_edges_differ([differs], [1, 2**40])  # past ORT's int arithmetic: not read
    assert not _bin_edges_differ([differs], [1, 2**30 - 1])  # BIN_CHECKS edges read, not 2**30
    assert _bin_edges_differ([differs] + [exact] * 10**6, [1, 21])
    assert not _bin_edges_differ([exact] * ROI_CHECKS + [differs], [1, 21])  # past the first ROI_CHECKS


def test_compare_labels_a_node_with_more_bins_than_the_kernel_pools(tmp_path):
    """MaxRoiPool with C = 0 and pooled_shape [1, 2**40]: ORT runs it (an empty output), our kernel
    refuses the bins, and compare says so (custom-cannot-run, exit status 1) instead of labelling the node
    bin by bin."""
    import json

    import onnx
    from onnx import TensorProto, helper

    from tests.helpers import run_cli

    node = helper.make_node("MaxRoiPool", ["X", "rois"], ["Y"], pooled_shape=[1, 2**40])
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, (1, 0, 1, 4)),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, (1, 5)),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 1)])
    model.ir_version = 10
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", X=np.zeros((1, 0, 1, 4), F32), rois=np.array([[0, 0, 0, 3, 0]], F32))
    out = tmp_path / "r.json"
    proc = run_cli(
        "compare", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"), "--json", str(out)
    )
    assert proc.returncode == 1, proc.stderr
    (entry,) = json.loads(out.read_text())["nodes"]
    assert (entry["attribution"], entry["verdict"]) == ("custom-cannot-run", "side-failed"), entry


def test_a_rule_that_does_not_match_says_which_condition_fails_first():
    x = np.zeros((2, 3), F32)
    seen = Observed(
        "Resize", x, "float", {"coordinate_transformation_mode": "pytorch_half_pixel"}, out_shape=(2, 1)
    )
    sig = Signature("Resize", 19, "reference", "value")
    rule_id = "semantics: `pytorch_half_pixel`, output length 1"
    # the same difference with the fact the rule reads, then without it: the reason names that fact
    assert rule_id not in misses(Subject(sig, facts(seen, reference=True)))
    assert misses(Subject(sig, facts(seen)))[rule_id] == "the fact resized_to_one holds"
    # a rule of another op fails at its first condition, the op; one that matches is truthy
    other = Subject(Signature("Pad", 19, "reference", "value"), facts(seen, reference=True))
    assert misses(other)[rule_id] == "the op is one of ('Resize',)"
    labelled = Subject(sig, facts(seen, reference=True))
    assert [rule.id for rule in REFERENCE_RULES if match_read(rule, labelled)] == [rule_id]


def test_a_field_of_another_shape_fails_the_rule_and_says_so():
    sig = Signature("Resize", 19, "reference", "value")
    broken = Subject(sig, {"attrs": ["not", "an", "object"], "resized_to_one": True})
    reasons = misses(broken)
    assert reasons and all(r for r in reasons.values())
    assert any("a field of another shape" in r for r in reasons.values())
    assert known_labels(broken) == []
