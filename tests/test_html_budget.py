"""The HTML report on models with many swapped nodes: agreeing nodes are one line, and heat maps stop at
the page's size budget."""

from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from customops.comparison.html import PAGE_BUDGET, render
from tests.helpers import run_cli, strict_json

PADS = 40


def _many_pads_and_one_deviation() -> onnx.ModelProto:
    """x (1x3x64x64) -> Resize linear/align_corners x0.6 (ORT departs from the spec: differs) -> y;
    x -> a chain of PADS edge Pads (agree everywhere) -> z."""
    inits = [
        numpy_helper.from_array(np.array([1, 1, 0.6, 0.6], np.float32), "scales"),
        numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    nodes = [
        helper.make_node(
            "Resize",
            ["x", "", "scales"],
            ["y"],
            name="resize",
            mode="linear",
            coordinate_transformation_mode="align_corners",
        )
    ]
    prev = "x"
    for i in range(PADS):
        out = "z" if i == PADS - 1 else f"p{i}"
        nodes.append(helper.make_node("Pad", [prev, "pads"], [out], name=f"pad{i}", mode="edge"))
        prev = out
    graph = helper.make_graph(
        nodes,
        "many",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_compare_html_of_many_agreeing_nodes_stays_small_and_shows_maps_where_they_differ(tmp_path):
    path = tmp_path / "many.onnx"
    onnx.save(_many_pads_and_one_deviation(), path)
    html, js = tmp_path / "r.html", tmp_path / "r.json"
    proc = run_cli("compare", str(path), "--html", str(html), "--json", str(js), "--quiet")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdicts = {n["node"]: n["verdict"] for n in strict_json(js.read_text())["nodes"]}
    assert verdicts["resize"] != "agree"
    agreeing = [name for name, v in verdicts.items() if v == "agree"]
    assert len(agreeing) == PADS
    page = html.read_text()
    assert len(page.encode()) < PAGE_BUDGET
    alts = [m.group(1) for m in re.finditer(r'<img class="heat" [^>]*alt="([^"]*)"', page)]
    shown = {alt.split(": ", 1)[1] for alt in alts}
    assert "resize" in shown and not shown & set(agreeing)
    for name in agreeing:  # each one line, still linked from the nodes table
        assert re.search(rf'<p class="collapsed" id="node-\d+">.*?<strong>{name}</strong>', page)


def test_maps_past_the_page_budget_are_left_out_with_a_note():
    rng = np.random.default_rng(0)
    tensors = {}
    nodes = []
    for i in range(6):
        a = rng.standard_normal((1, 2, 40, 40)).astype(np.float32)
        tensors[f"n{i}"] = (a, a + 1)
        nodes.append({"node": f"n{i}", "op": "Pad", "verdict": "disagree"})
    report = {"model": "m.onnx", "nodes": nodes, "outputs": []}
    whole = render(report, tensors)
    assert whole.count("<img") == 18 and "size budget" not in whole
    budget = len(whole.encode()) // 2
    page = render(report, tensors, max_bytes=budget)
    assert len(page.encode()) <= budget
    kept = page.count("<img") // 3
    assert 0 < kept < 6
    assert page.count("Heat maps left out (the page reached its size budget") == 6 - kept  # where each was
    assert f"Heat maps of {6 - kept} tensor(s) left out" in page
