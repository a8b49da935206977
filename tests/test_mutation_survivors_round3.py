"""More one-line slips that survived the whole suite in a mutation audit (tests/test_mutation_survivors.py
has the first ones): each test here fails under the slip its docstring names."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.helpers import ROOT, one_node_model

F32 = np.float32

SLOW_SITE = """
import os, time
if os.environ.get("CUSTOMOPS_TEST_SLOW_BUILTIN"):
    from customops.eval.running import worker

    original = worker.answer

    def answer(runner, request):
        if runner.side == "builtin":
            time.sleep(float(os.environ["CUSTOMOPS_TEST_SLOW_BUILTIN"]))
        return original(runner, request)

    worker.answer = answer
"""

SLOW = 3.0
"""Seconds the built-in side's child sleeps before each answer: far longer than this process takes to send
the other two sides their requests (children already started) and look at the built-in side's answer."""


def test_a_reference_timeout_does_not_cut_a_slow_built_in_side(tmp_path, monkeypatch):
    """sides.run_sides gives each side its own deadline (``deadlines.get(side)``): the built-in side,
    slower than the reference's timeout but given none, still answers. (Slip: every side given the
    reference's deadline; the first test of it let the built-in side answer before its answer was looked
    at.)"""
    from customops.comparison.isolate import run_isolated
    from customops.eval.running import sides

    (tmp_path / "sitecustomize.py").write_text(SLOW_SITE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", ROOT)]))
    monkeypatch.setenv("CUSTOMOPS_TEST_SLOW_BUILTIN", str(SLOW))
    sides.close_all()  # the children start again, the built-in side's slow
    try:
        model, feed = one_node_model(
            "Pad",
            {"data": np.zeros((1, 1, 4, 4), F32), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)},
            19,
        )
        node = model.graph.node[0]
        run_isolated(node, feed, model)  # every child started and ready
        iso = run_isolated(node, feed, model, reference_timeout=1e-6)
        assert iso.errors["builtin"] is None and iso.outputs["builtin"] is not None, iso.errors
        assert iso.errors["custom"] is None and iso.outputs["custom"] is not None, iso.errors
    finally:
        monkeypatch.delenv("CUSTOMOPS_TEST_SLOW_BUILTIN")
        sides.close_all()  # no child keeps the hook for the tests after this one


def _two_outputs_rerun(tol):
    """A model of two graph outputs, a linear Resize (ORT's kernel and ours differ by a few ulp at every
    level) then an edge Pad (the same bits on both sides), ready to rerun."""
    import onnx

    from customops.comparison.inputs import generate_inputs
    from customops.comparison.optimizer import Rerun
    from customops.eval.judging.metrics import Criterion
    from customops.model.rewriter import rewrite_model

    graph = helper.make_graph(
        [
            helper.make_node("Resize", ["x", "", "scales"], ["resized"], name="r", mode="linear"),
            helper.make_node("Pad", ["x", "pads"], ["padded"], name="p", mode="edge"),
        ],
        "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16, 16])],
        [
            helper.make_tensor_value_info("resized", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("padded", TensorProto.FLOAT, None),
        ],
        [
            onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales"),
            onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    feed = generate_inputs(model)
    rewritten = rewrite_model(model).model
    outputs = ["resized", "padded"]
    return Rerun(
        model,
        rewritten,
        feed,
        outputs,
        tol,
        lambda _n: Criterion(),
        ["CPUExecutionProvider"],
        lambda _m: None,
    )


def test_a_rerun_passes_only_when_every_output_passes():
    """A lower level's outputs pass only if each does: the first output failing its (zero) tolerance
    fails the level though the last one passes. (Slip: ``passes`` set by the last output alone.)"""
    from customops.comparison.optimizer import rerun_at

    run = rerun_at(_two_outputs_rerun(lambda _n: (0.0, 0.0)), "basic")
    assert run.error is None, run.error
    assert run.max_abs["resized"] and run.max_abs["padded"] == 0.0, run.max_abs
    assert not run.passes and not run.identical


def _resize_bound(shape, out_shape, antialias):
    from customops.eval.judging.rounding_bound import bound

    x = np.ones(shape, F32)
    attrs = {"mode": "linear", "antialias": antialias}
    return bound("Resize", [x, None, None, None], attrs, out_shape, "float32")


def test_resize_s_bound_widens_with_antialias_only_when_it_shrinks():
    """Antialias widens linear's 2 taps to ceil(2 x 16 / 4) + 1 = 9 on an axis shrunk from 16 to 4; on an
    axis grown it changes nothing. (Slip: the condition inverted, either way.)"""
    from customops.eval.judging.rounding_bound import COORDINATE_OPS, epsilon

    eps, extent = epsilon("float32"), 16.0
    shrunk = _resize_bound((1, 1, 1, 16), (1, 1, 1, 4), 1)
    assert shrunk == pytest.approx(eps * (9 + COORDINATE_OPS * extent))
    assert _resize_bound((1, 1, 1, 16), (1, 1, 1, 4), 0) == pytest.approx(eps * (2 + COORDINATE_OPS * extent))
    grown = (1, 1, 1, 4), (1, 1, 1, 16)
    assert (
        _resize_bound(*grown, 1)
        == _resize_bound(*grown, 0)
        == pytest.approx(eps * (2 + COORDINATE_OPS * extent))
    )


def test_grid_sample_s_extent_stops_at_twice_the_input_for_a_far_grid():
    """A grid coordinate of 1e6 reads padding however it rounds: GridSample's extent is at most 2 L, not
    1e6 L. (Slip: ``min`` made ``max``, a bound 5e5 times looser.)"""
    from customops.eval.judging.rounding_bound import COORDINATE_OPS, bound, epsilon

    x = np.ones((1, 1, 8, 8), F32)
    near, far = np.zeros((1, 2, 2, 2), F32), np.full((1, 2, 2, 2), 1e6, F32)
    eps = epsilon("float32")
    attrs = {"mode": "linear"}
    assert bound("GridSample", [x, near], attrs, (1, 1, 2, 2), "float32") == pytest.approx(
        eps * (4 + COORDINATE_OPS * 2 * 8)
    )
    assert bound("GridSample", [x, far], attrs, (1, 1, 2, 2), "float32") == pytest.approx(
        eps * (4 + COORDINATE_OPS * 2 * 16)
    )


@pytest.mark.parametrize(("shape", "zero"), [((1, 3, 0, 4), 1), ((1, 1, 4, 4), 0), ((0, 1, 1, 0), 2)])
def test_zero_axes_counts_the_axes_of_size_zero_only(shape, zero):
    """(Slip: ``d <= 1``, an axis of one counted as empty.)"""
    from customops.eval.judging.facts import Observed, facts

    assert facts(Observed("Resize", np.zeros(shape, F32), "float32", {}))["zero_axes"] == zero


def test_two_failing_nodes_of_one_op_are_told_apart_by_node():
    """Both sides stop, at two different Pad nodes: they part ways before they fail (a finding), though
    the op is the same. (Slip: the nodes compared by op.)"""
    from customops.comparison.failures import fail_point, parted

    model, _ = one_node_model("Pad", {"data": np.zeros((1, 1, 2, 2), F32), "pads": np.zeros(8, np.int64)}, 19)
    second = helper.make_node("Pad", ["Y", "pads"], ["Z"], name="second_pad")
    first = model.graph.node[0]
    nodes = {first.name: first, second.name: second}
    swapped = {first.name: "Pad-19", second.name: "Pad-19"}

    def point(name):
        error = f"Non-zero status code returned while running Pad node. Name:'{name}' Status Message: no"
        return fail_point(error, nodes, swapped)

    a, b = point(first.name), point(second.name)
    assert a is not None and b is not None and a.op == b.op == "Pad-19"
    assert parted(a, b)
    assert not parted(a, point(first.name))


@pytest.mark.parametrize(
    ("rank", "known"),
    [(6, "R-LINEAR-RANK"), (7, "R-LINEAR-RANK"), (5, "R-LINEAR-OUTER-AXIS")],
)
def test_ort_s_linear_resize_rank_limits_are_labelled_by_rank(rank, known):
    """ORT's linear Resize takes 2-D to 5-D inputs (4-D and 5-D with their outer scales 1): a 6-D or 7-D
    input is R-LINEAR-RANK (ranks 6 or more count as 6), a 5-D one scaled on its outer axis
    R-LINEAR-OUTER-AXIS, never both. (Slip: R-LINEAR-RANK's ranks changed; only rank 1 was tested.)"""
    shape, scales = [2] + [1] * (rank - 2) + [3], [1.0] * rank
    scales[0 if known == "R-LINEAR-OUTER-AXIS" else -1] = 2.0
    x = np.arange(np.prod(shape), dtype=F32).reshape(shape)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array(scales, F32)},
        19,
        initializers=("scales",),
        mode="linear",
    )
    from customops.comparison.pipeline import compare_model

    (node,) = compare_model(model, feed).report.nodes
    other = {"R-LINEAR-RANK", "R-LINEAR-OUTER-AXIS"} - {known}
    assert known in node.known and not other.intersection(node.known), node.known


def test_open_below_refuses_a_path_that_climbs_out_through_dot_dot(tmp_path):
    """``root/sub/../../outside`` lies outside ``root`` though it starts inside it: refused before any
    component is opened. (Slip: the ``..`` check removed; the walk would open the file outside.)"""
    from customops.safeio import open_below

    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside.txt").write_text("secret")
    for path in (root / "sub" / ".." / ".." / "outside.txt", root / "sub" / ".." / "sub"):
        with pytest.raises(ValueError, match="is not a path inside"):
            open_below(root, path, os.O_RDONLY)
    fd = open_below(root, root / "sub", os.O_RDONLY | os.O_DIRECTORY)  # a plain path inside opens
    os.close(fd)
