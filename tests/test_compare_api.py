"""``customops.compare``: the comparison as a Python call, returning the typed report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import customops
from customops.comparison import results

MODEL = Path(__file__).resolve().parent.parent / "customops" / "examples" / "ort_deviation.onnx"


def _untimed(document: dict) -> dict:
    """The report without its timings (kernel times and phase wall times differ from run to run)."""
    nodes = [{**n, "time_us": None} for n in document["nodes"]]
    return {**document, "nodes": nodes, "phase_seconds": None}


def test_compare_names_the_deviation_and_matches_the_command_s_json(tmp_path):
    from tests.helpers import run_cli, strict_json

    report = customops.compare(str(MODEL))
    assert isinstance(report, results.Report)
    assert report.verdict == "disagree" and "builtin-leaves-spec" in report.summary
    assert [n.attribution for n in report.nodes] == ["builtin-leaves-spec"]
    assert all(o.verdict == "disagree" for o in report.outputs)
    out = tmp_path / "r.json"
    proc = run_cli("compare", str(MODEL), "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    assert _untimed(report.to_json()) == _untimed(
        strict_json(out.read_text())
    )  # the same document as the command's


def test_inputs_as_arrays_a_file_or_generated_and_bad_ones_refused(tmp_path):
    model = onnx.load(MODEL)
    feed = customops.comparison.inputs.generate_inputs(model, seed=3)
    by_dict = customops.compare(model, feed, seed=3)
    np.savez(tmp_path / "in.npz", **feed)
    by_file = customops.compare(model.SerializeToString(), tmp_path / "in.npz", seed=3)
    generated = customops.compare(model, seed=3)
    docs = [_untimed(r.to_json()) for r in (by_dict, by_file, generated)]
    inputs = [d.pop("inputs") for d in docs]  # the same arrays; only the generated ones say so
    assert docs[0] == docs[1] == docs[2]
    assert inputs[0] == inputs[1] == {**inputs[2], "generated": False} and inputs[2]["generated"] is True
    with pytest.raises(customops.CustomOpsError, match="has no value"):
        customops.compare(model, {})
    with pytest.raises(customops.CustomOpsError, match="must be a dict"):
        customops.compare(model, 42)  # type: ignore[arg-type]


def test_an_agreeing_model_in_a_pytest_check():
    """The README's pytest example: assert that a model's swapped nodes agree."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64), "pads")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    report = customops.compare(model)
    assert report.verdict == "agree", report.summary


def test_two_threads_comparing_at_once_each_get_their_own_report():
    """The side processes are shared by the process: runs from two threads are served one at a time,
    and each thread gets the answers to its own requests."""
    import threading

    model = onnx.load(MODEL)
    reports: dict[int, results.Report] = {}

    def work(seed: int) -> None:
        reports[seed] = customops.compare(model, seed=seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(reports) == [1, 2]
    for seed, report in reports.items():
        alone = customops.compare(model, seed=seed)
        assert _untimed(report.to_json()) == _untimed(alone.to_json())
