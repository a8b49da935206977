"""The judging code's edges that a plausible one-line slip would pass unseen by the other tests (found by
mutating customops' judging code by hand): each test here fails under one such slip."""

from __future__ import annotations

import numpy as np
import pytest

from customops.eval.judging.metrics import compare_arrays

F32 = np.float32


@pytest.mark.parametrize(
    "a, b",
    [
        (np.array([1.5, -2.0], np.float32), np.array([1.5, -2.0], np.float64)),  # equal values, other dtype
        (np.zeros(3, np.float32), np.zeros(3, np.int32)),  # equal bytes, other dtype
        (np.zeros((0, 2), np.int32), np.zeros((0, 2), np.int32)),  # an empty integer tensor
        (np.zeros((0,), np.bool_), np.zeros((0,), np.bool_)),
    ],
)
def test_the_identical_tensor_shortcut_gives_the_pass_s_figures_across_dtypes_and_empty_tensors(a, b):
    """Only tensors equal bit for bit in one dtype skip the pass (values equal across dtypes, or bytes
    equal across dtypes, take it: their ulp distance is not counted); an empty tensor has no finite
    element either way, so no error statistics."""
    fast = compare_arrays(a, b, 0.0, 0.0)
    slow = compare_arrays(a, b, 0.0, 0.0, shortcut=False)
    assert fast.to_json() == slow.to_json(), (fast.to_json(), slow.to_json())


def test_the_smallest_normal_value_counts_its_ulps():
    """``tiny`` itself is normal: one step above it is one ulp, counted (only zeros and subnormals are
    left out)."""
    tiny = np.finfo(F32).tiny
    a = np.array([tiny], F32)
    b = np.nextafter(a, F32(1))
    m = compare_arrays(a, b, 0.0, 0.0)
    assert m.max_ulp == 1 and m.ulp_note is None


def test_differences_within_tolerance_still_have_error_statistics():
    """A tensor that passes with differences is not the identical one: its mean, median and p99 are
    those of the differences, not 0."""
    b = np.array([1.0, 2.0, 3.0, 4.0], F32)
    a = b + F32(1e-6)
    m = compare_arrays(a, b, 1e-5, 1e-5)
    assert m.passed and m.mismatches == 0 and m.max_abs > 0
    assert m.errors is not None and m.errors.abs["mean"] > 0 and m.errors.rel["p99"] > 0


def test_no_finite_element_and_a_mismatch_gives_no_max_abs():
    """With no finite element, max_abs is 0 only when everything matches (NaN with NaN); a NaN against an
    inf has no difference to measure: None, and the tensor fails."""
    m = compare_arrays(np.array([np.nan], F32), np.array([np.inf], F32), 0.0, 0.0)
    assert m.max_abs is None and m.mismatches == 1 and not m.passed
    same = compare_arrays(np.array([np.nan], F32), np.array([np.nan], F32), 0.0, 0.0, shortcut=False)
    assert same.max_abs == 0.0 and same.passed


def test_a_voting_reference_beyond_the_bound_hands_the_case_back_to_the_votes():
    """Built-in within its bound, ours beyond it, and the reference (a vote) beyond it too: the formula
    is in question, so the three votes decide (here the reference agrees with ours: the built-in kernel
    is the odd one out), not the yardstick alone."""
    from customops.eval.judging.attribution import Within, attribution, odd_one_out

    within = Within(builtin=True, custom=False, reference=False)
    assert odd_one_out(False, False, True, within) == "builtin"
    assert (
        attribution({"builtin": False, "custom": False}, False, False, True, within) == "builtin-leaves-spec"
    )
    assert odd_one_out(False, False, True, Within(True, False, None)) == "custom"  # no vote: the yardstick


@pytest.mark.parametrize("missing", ["builtin", "custom"])
def test_a_kernel_with_no_output_has_no_within(missing):
    """The yardstick says nothing of a pair when either kernel gave no output (its within is None)."""
    from customops.eval.judging.yardstick import Measured

    m = Measured("Resize", np.zeros(2), 1e-6)
    m.within = {"builtin": True, "custom": True, "reference": None, missing: None}
    assert m.usable and m.sides_within() is None


def _roi_bound(x: np.ndarray, rois: list[list[float]], batch: list[int]) -> np.ndarray:
    from customops.eval.judging.rounding_bound import bound

    attrs = {"mode": "avg", "output_height": 1, "output_width": 1, "sampling_ratio": 2, "spatial_scale": 1.0}
    inputs = [x, np.array(rois, F32), np.array(batch, np.int64)]
    found = bound("RoiAlign", inputs, attrs, (len(rois), x.shape[1], 1, 1), "float32")
    assert isinstance(found, np.ndarray)
    return found.reshape(-1)


def test_roi_align_s_bound_per_roi_reads_the_roi_s_own_rows_and_columns():
    """On a wide map (4 rows, 32 columns) a large pixel near the right edge loosens the bound of the roi
    around it, not of the one at the left: each roi's magnitude is read from its own box, rows by y and
    columns by x."""
    x = np.ones((1, 1, 4, 32), F32)
    x[0, 0, 1, 30] = 1000.0
    left, right = _roi_bound(x, [[0, 0, 2, 2], [28, 0, 30, 2]], [0, 0])
    assert right == pytest.approx(1000.0 * left)


def test_roi_align_s_bound_with_a_batch_index_past_the_batch_uses_the_largest_value():
    """A batch index equal to the batch size reads no image: every roi takes the largest |X| (and
    nothing raises)."""
    x = np.ones((1, 1, 4, 32), F32)
    x[0, 0, 1, 30] = 1000.0
    assert (
        _roi_bound(x, [[0, 0, 2, 2], [28, 0, 30, 2]], [0, 1]) == _roi_bound(x, [[28, 0, 30, 2]] * 2, [0, 0])
    ).all()


def test_a_side_equal_to_the_yardstick_rounded_to_its_type_is_within_any_bound():
    """The last rounding, to the output's type, is allowed: a float32 side holding the float64 value
    rounded once is at distance 0, however small the bound."""
    from customops.eval.judging.yardstick import measure

    value = np.array([0.1, 1 / 3], np.float64)
    m = measure("Resize", value, 1e-30, {"builtin": value.astype(F32), "custom": value.astype(F32)})
    assert m.distance == {"builtin": 0.0, "custom": 0.0} and m.within == {"builtin": True, "custom": True}


def _pads_model(count: int):
    import onnx
    from onnx import TensorProto, helper

    names = ["x"] + [f"p{i + 1}" for i in range(count)]
    nodes = [
        helper.make_node("Pad", [names[i], "pads"], [names[i + 1]], name=f"pad{i}", mode="edge")
        for i in range(count)
    ]
    graph = helper.make_graph(
        nodes,
        "pads",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


@pytest.mark.parametrize("count", [1, "limit"])
def test_up_to_single_limit_swaps_are_tried_one_at_a_time(count):
    """Swaps that agree exactly (Pads): up to SINGLE_LIMIT of them are each run alone, then together
    once (a single swap is not run again as a group); none is a culprit."""
    from customops.comparison.amplify import SINGLE_LIMIT, CulpritSearch, culprits
    from customops.comparison.inputs import generate_inputs
    from customops.eval.judging.metrics import tolerance_for
    from customops.eval.running.sides import run_side

    n = SINGLE_LIMIT if count == "limit" else count
    model = _pads_model(n)
    feed = generate_inputs(model)
    builtin = run_side(model, feed, custom=False)
    assert builtin.error is None, builtin.error
    search = CulpritSearch(
        model, feed, builtin.values, lambda _n: tolerance_for(np.dtype(F32)), lambda _m: None
    )
    assert culprits(search, [(node.name, "Pad") for node in model.graph.node]) == []
    assert search.runs == (1 if n == 1 else n + 1)


def test_roi_align_s_bound_per_roi_reads_two_pixels_beyond_the_box():
    """A sample coordinate rounded by a pixel weighs the pixels next to the box: a roi's magnitude takes
    those within two of it (column 8 for a box from column 10), not those further (column 7)."""
    near, far = np.ones((1, 1, 4, 32), F32), np.ones((1, 1, 4, 32), F32)
    near[0, 0, 1, 8] = far[0, 0, 1, 7] = 1000.0
    roi = [[10, 0, 12, 2]]
    assert _roi_bound(near, roi, [0])[0] == pytest.approx(1000.0 * _roi_bound(far, roi, [0])[0])


def _chain(*nodes: tuple[str, str, str, str]):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node(op, [i], [o], name=name) for name, op, i, o in nodes],
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(nodes[-1][3], TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph)


def _sides(*names: str, missing: str = "") -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Values of both sides: x equal, each of ``names`` different (``missing`` on the built-in side only)."""
    a = {"x": np.zeros(4, F32), **{n: np.zeros(4, F32) for n in names}}
    b = {"x": np.zeros(4, F32), **{n: np.ones(4, F32) for n in names if n != missing}}
    return a, b


def test_a_swapped_node_that_agrees_alone_passes_on_a_difference_it_reads():
    """s1 differs alone; s2 agrees alone but reads s1's difference and its output differs: the difference
    reaching s3 still comes from a swapped node upstream, not from ORT's nodes."""
    from customops.comparison.carried import FROM_SWAPPED, sources

    model = _chain(("s1", "Relu", "x", "a"), ("s2", "Relu", "a", "b"), ("s3", "Relu", "b", "c"))
    found = sources(model, {"s1": True, "s2": False, "s3": False}, frozenset(), _sides("a", "b", "c"))
    assert [(s.node, s.values, s.source) for s in found] == [
        ("s2", ("a",), FROM_SWAPPED),
        ("s3", ("b",), FROM_SWAPPED),
    ]


def test_a_swapped_node_s_output_missing_on_one_side_counts_as_differing():
    """s1's output is missing on one side (not compared, may differ): what ORT's node computes from it
    and s3 then reads comes from a swapped node upstream."""
    from customops.comparison.carried import FROM_SWAPPED, sources

    model = _chain(("s1", "Relu", "x", "a"), ("ort", "Relu", "a", "b"), ("s3", "Relu", "b", "c"))
    found = sources(model, {"s1": True, "s3": False}, frozenset(), _sides("a", "b", "c", missing="a"))
    assert [(s.node, s.source) for s in found] == [("s3", FROM_SWAPPED)]


def test_the_difference_vanishes_at_the_first_level_that_passes_within_tolerance():
    """A rerun whose outputs pass their tolerances without matching bit for bit is where the difference
    vanishes (the summary then says 'within tolerance')."""
    from customops.comparison.optimizer import LevelRun, Optimization
    from customops.comparison.summary import optimizer_text

    found = Optimization("all", [LevelRun("extended", True, False, {"y": 1e-7})])
    assert found.vanishes_at == "extended" and found.to_json()["vanishes_at"] == "extended"
    assert "level extended the outputs match within tolerance" in optimizer_text(found)
    assert Optimization("all", [LevelRun("extended", False, False, {"y": 1.0})]).vanishes_at is None


def _resize_rerun(tol):
    """A linear Resize (ORT's kernel and ours differ by a few ulp at every level) ready to rerun."""
    import onnx
    from onnx import TensorProto, helper

    from customops.comparison.inputs import generate_inputs
    from customops.comparison.optimizer import Rerun
    from customops.eval.judging.metrics import Criterion
    from customops.model.rewriter import rewrite_model

    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="r", mode="linear")],
        "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    feed = generate_inputs(model)
    rewritten = rewrite_model(model).model
    return Rerun(
        model, rewritten, feed, ["y"], tol, lambda _n: Criterion(), ["CPUExecutionProvider"], lambda _m: None
    )


def test_the_reruns_stop_at_the_first_level_that_passes_within_tolerance():
    """Outputs that pass within tolerance at the first lower level, without matching bit for bit: no
    further level is run."""
    from customops.comparison.optimizer import check, lower_levels

    r = _resize_rerun(lambda _n: (1e-3, 1e-3))
    found = check(r, "all")
    assert len(lower_levels("all")) > 1
    assert [(x.level, x.passes, x.identical) for x in found.reruns] == [(lower_levels("all")[0], True, False)]


def test_a_rerun_judges_its_outputs_as_the_comparison_does_relative_to_ours():
    """At a lower level the outputs are judged as compare judges them (judge_outputs: built-in against
    ours, the relative error divided by ours): with an rtol between the two ways of dividing, the
    rerun's verdict is the one the comparison would give."""
    from customops.comparison.optimizer import rerun_at
    from customops.eval.running.sides import run_side

    probe = _resize_rerun(lambda _n: (None, None))
    va = run_side(probe.model, probe.feed, custom=False, optimization="basic").values["y"]
    vb = run_side(probe.rewritten, probe.feed, custom=True, optimization="basic").values["y"]
    d = np.abs(va.astype(np.float64) - vb)
    by_ours, by_builtin = float((d / np.abs(vb)).max()), float((d / np.abs(va)).max())
    assert by_ours != by_builtin, "the sides differ where the two divisions differ"
    rtol = (by_ours + by_builtin) / 2
    expected = compare_arrays(va, vb, rtol, 0.0).passed
    assert expected != compare_arrays(vb, va, rtol, 0.0).passed
    assert rerun_at(_resize_rerun(lambda _n: (rtol, 0.0)), "basic").passes == expected


def test_without_repeats_a_provider_s_placement_profile_gives_no_kernel_times():
    """A provider besides the CPU makes the built-in side profile its run (for where each node ran); with
    no --repeats that run is a warm-up, so no node gets a kernel time from it."""
    import onnxruntime as ort

    from customops.comparison.pipeline import compare_model
    from tests.helpers import one_node_model

    if "AzureExecutionProvider" not in ort.get_available_providers():
        pytest.skip("needs a second provider")
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    model, feed = one_node_model(
        "Resize", {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], F32)}, 19, initializers=("scales",)
    )
    comparison = compare_model(model, feed, providers=["AzureExecutionProvider", "CPUExecutionProvider"])
    (node,) = comparison.report.nodes
    assert node.provider["builtin"] == "CPUExecutionProvider"  # the profile was taken
    assert node.time_us == {"builtin": None, "custom": None}


def test_the_fuzzer_names_the_kind_of_the_reference_s_own_departure_from_its_pair_with_ours():
    """ORT's kernel and ours agree, the reference gives another shape: the reference is the odd one out
    and the difference is one of shape (from ours against the reference, not from the agreeing pair)."""
    from customops.eval.judging.signature import Finding
    from customops.eval.running.runner import Outcome
    from customops.fuzz.spaces.base import Verdict
    from customops.fuzz.triage import classify

    x = np.arange(4, dtype=F32)
    outcomes = {
        "builtin": Outcome("ok", x),
        "custom": Outcome("ok", x.copy()),
        "reference": Outcome("ok", x[:3]),
    }
    assert classify("float", Verdict(None), outcomes) == [Finding("reference", "shape")]


def test_a_reference_crash_keeps_the_finding_of_ort_s_kernel_against_ours():
    """The reference alone crashed: it cannot vote, but ORT's kernel and ours still compare, and their
    difference is a finding beside the crash."""
    from customops.eval.running.runner import Outcome
    from customops.fuzz.spaces.base import Verdict
    from customops.fuzz.triage import classify

    x = np.arange(4, dtype=F32)
    outcomes = {
        "builtin": Outcome("ok", x),
        "custom": Outcome("ok", x + 1),
        "reference": Outcome("crash", None, "signal 11"),
    }
    found = classify("float", Verdict(None), outcomes)
    assert [(f.side, f.kind) for f in found] == [("reference", "crash"), ("unknown", "value")]


def _pad_node():
    from tests.helpers import one_node_model

    model, feed = one_node_model(
        "Pad", {"data": np.zeros((1, 1, 4, 4), F32), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}, 19
    )
    return model.graph.node[0], feed, model


def test_a_node_whose_reference_work_equals_the_limit_gets_its_third_vote():
    """The reference limit is the most work the reference is asked: at exactly the limit it runs, one
    step below it is refused."""
    from customops.comparison.isolate import reference_work_of, run_isolated
    from customops.model.rewriter import rewrite_model

    node, feed, model = _pad_node()
    work = reference_work_of(rewrite_model(model).model, feed)
    assert work == int(work) > 1
    at = run_isolated(node, feed, model, reference_limit=int(work))
    assert at.errors["reference"] is None and at.outputs["reference"] is not None
    below = run_isolated(node, feed, model, reference_limit=int(work) - 1)
    assert below.outputs["reference"] is None and "over the reference limit" in below.errors["reference"]


def test_the_reference_timeout_applies_to_the_reference_alone(monkeypatch):
    """The reference side's child sleeps on every request (the side hook): with a reference timeout far
    shorter than any run, the built-in and custom sides, sent at the same moment, have no deadline and
    answer; the reference is cut, no vote, its reason naming the option's value. (A reference that could
    answer would race the check: an answer already there when the deadline is looked at is taken.)"""
    from customops.comparison.isolate import run_isolated
    from customops.eval.running import sides

    monkeypatch.setenv(sides.INJECT_ENV, "hang:reference")
    sides.close_all()  # the children start again, the reference's with the hook
    try:
        node, feed, model = _pad_node()
        iso = run_isolated(node, feed, model, reference_timeout=1e-6)
        assert iso.errors["builtin"] is None and iso.errors["custom"] is None
        assert iso.outputs["builtin"] is not None and iso.outputs["custom"] is not None
        assert iso.errors["reference"] == "not run: no answer within 1e-06 s (--reference-timeout)"
        assert iso.outputs["reference"] is None
    finally:
        monkeypatch.delenv(sides.INJECT_ENV)
        sides.close_all()  # no child keeps the hook for the tests after this one


def test_a_side_whose_child_dies_while_starting_is_a_crash_not_a_hang(tmp_path):
    """A side's child killed before it is ready: the run is a crash naming how it ended, not a run past
    a time limit."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "sitecustomize.py").write_text(
        "import os, signal\nif os.environ.get('CUSTOMOPS_TEST_DIE'):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    script = (
        "import os\nos.environ['CUSTOMOPS_TEST_DIE'] = '1'\n"
        "from customops.eval.running import sides\n"
        "run = sides.run_side(b'', {}, custom=False)\n"
        "print(repr(run.error))\n"
    )
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), root])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == repr("the built-in side crashed (killed by SIGKILL)"), proc.stdout


def test_a_pair_of_two_dtypes_takes_the_default_tolerances_of_the_spec_side():
    """metrics_of divides by ``b``, the spec side, and takes its dtype's default tolerances (a float16
    output against a float32 one is judged at float32's)."""
    from customops.comparison.isolate import metrics_of

    m = metrics_of(np.zeros(2, np.float16), np.zeros(2, F32), None, None)
    assert m is not None and (m.rtol, m.atol) == (1e-5, 1e-5) and not m.passed


def test_a_reference_that_crashed_is_not_said_to_have_timed_out():
    """Only a run past the reference's deadline is worded as the timeout; a crash keeps its own text."""
    from customops.eval.running.sides import HANG, SideRun, reference_answer

    crashed = "the reference side crashed (killed by SIGKILL)"
    assert reference_answer(SideRun(error=crashed), 5.0) == (None, crashed)
    assert reference_answer(SideRun(error=HANG, hung=True), 5.0) == (
        None,
        "not run: no answer within 5 s (--reference-timeout)",
    )
    assert reference_answer(SideRun(error=HANG), 5.0) == (None, HANG)  # a side's own text, not a timeout
