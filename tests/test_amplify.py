"""customops.comparison.amplify on a model with more swapped nodes than are tried one at a time: the
bisection keeps every node of both halves, and the culprits come largest effect first, whatever their
place in the graph."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from customops.comparison.amplify import SINGLE_LIMIT, CulpritSearch, culprits
from customops.comparison.inputs import generate_inputs
from customops.eval.judging.metrics import tolerance_for
from customops.eval.running.sides import run_side

PADS_BEFORE, PADS_AFTER = 4, 4
"""Pads (which agree exactly) around the two Resizes in the graph's order: the Resizes are the last node
of the first half and the first node of the second half the search splits the swapped nodes into."""


def _two_culprits_model() -> onnx.ModelProto:
    """Two tiny linear Resizes (ORT and we differ by a few ulp, within tolerance), each feeding a gain
    and a sin: 'small' a gain of 3e3, 'large' one of 3e4, so swapping 'large' moves its output about ten
    times as far. Pads that agree exactly stand before and after them in the graph."""

    def pads(prefix: str, count: int) -> list[onnx.NodeProto]:
        names = ["x"] + [f"{prefix}{i + 1}" for i in range(count)]
        return [
            helper.make_node("Pad", [names[i], "pads"], [names[i + 1]], name=f"{prefix}pad{i}", mode="edge")
            for i in range(count)
        ]

    nodes = pads("q", PADS_BEFORE)
    for name, gain in (("small", "gain_small"), ("large", "gain_large")):
        nodes += [
            helper.make_node("Resize", ["x", "", "scales"], [f"{name}_r"], name=name, mode="linear"),
            helper.make_node("Mul", [f"{name}_r", gain], [f"{name}_phase"], name=f"{name}_gain"),
            helper.make_node("Sin", [f"{name}_phase"], [f"{name}_out"], name=f"{name}_sin"),
        ]
    nodes += pads("z", PADS_AFTER)
    inits = [
        onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        onnx.numpy_helper.from_array(np.array([3e3], np.float32), "gain_small"),
        onnx.numpy_helper.from_array(np.array([3e4], np.float32), "gain_large"),
        onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    outputs = [f"q{PADS_BEFORE}", "small_out", "large_out", f"z{PADS_AFTER}"]
    graph = helper.make_graph(
        nodes,
        "two_culprits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 16, 16])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def test_culprits_on_either_side_of_the_split_are_both_found_largest_effect_first():
    """Ten swapped nodes (more than SINGLE_LIMIT): the search bisects, and the Resizes sit where the two
    halves meet. Both are found, each alone, and 'large' (the later one in the graph, whose swap moves
    the outputs further) comes first; the Pads, which agree exactly, are never blamed."""
    model = _two_culprits_model()
    swaps = [(n.name, n.op_type) for n in model.graph.node if n.op_type in ("Pad", "Resize")]
    assert len(swaps) > SINGLE_LIMIT and [s[0] for s in swaps].index("small") == len(swaps) // 2 - 1
    feed = generate_inputs(model)
    builtin = run_side(model, feed, custom=False)
    assert builtin.error is None, builtin.error

    def tol(name: str) -> tuple[float | None, float | None]:
        return tolerance_for(np.dtype(np.float32))

    search = CulpritSearch(model, feed, builtin.values, tol, lambda _m: None)
    found = culprits(search, swaps)
    assert [e.nodes for e in found] == [["large"], ["small"]], [(e.nodes, e.size) for e in found]
    assert [e.ops for e in found] == [["Resize"], ["Resize"]]
    assert all(not e.passes for e in found)
    large, small = found
    assert large.size > small.size > 0
    # each swap moves its own branch only
    assert large.max_abs["small_out"] == 0.0 and small.max_abs["large_out"] == 0.0
    assert large.max_abs[f"q{PADS_BEFORE}"] == 0.0 == small.max_abs[f"z{PADS_AFTER}"]
