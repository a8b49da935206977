"""``customops bench``: the command's output and arguments (no timing assertions)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from customops.bench import hooks, report, saved, suite, timing
from tests.helpers import NEVER, strict_json

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "customops.cli.main", "bench", *args],
        capture_output=True,
        text=True,
        timeout=NEVER,
    )


def _result(name: str, ratio: float, small: bool = False, op: str = "Pad", **changes) -> report.Result:
    """A result of 1 ms built-in, ``ratio`` ms custom, 0.5 ms floor, 0.8 ms write-only, 0.9 ms copy (none
    on tiny tensors)."""
    fields = {
        "name": name,
        "op": op,
        "shape": "1x1",
        "small": small,
        "builtin_ms": 1.0,
        "custom_ms": ratio,
        "ratio": ratio,
        "stock_ms": 50.0,
        "first_call_ms": 3.0,
        "peak_over_output": 1.2 if op == "Resize" else None,
        "output_mb": 1.0,
        "max_abs_diff": 0.0,
        "samples": 2,
        "inner": 1,
        "floor_ms": 0.5,
        "write_only_ms": 0.8,
        "copy_ms": None if small else 0.9,
        "builtin_samples_ms": [1.0, 1.0],
        "custom_samples_ms": [ratio, ratio],
    }
    return report.Result(**{**fields, **changes})


def test_quick_filtered_run_prints_a_table_and_writes_json(tmp_path) -> None:
    out = tmp_path / "bench.json"
    proc = run_cli("--quick", "--filter", "pad-reflect", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("machine: ") and "onnxruntime" in lines[0]
    header = next(i for i, line in enumerate(lines) if line.startswith("| workload |"))
    assert lines[header + 1].startswith("|---")
    rows = [line for line in lines[header + 2 :] if line.startswith("|")]
    assert [row.split("|")[1].strip() for row in rows] == ["pad-reflect", "small-pad-reflect"]
    small_cells = [c.strip() for c in rows[1].strip("|").split("|")]  # 4 digits: ratios can be checked
    assert len(small_cells) == 11
    builtin, custom, ratio, floor, floor_ratio, write_ratio = (float(c) for c in small_cells[2:8])
    assert math.isclose(ratio, custom / builtin, rel_tol=0.02, abs_tol=0.01)
    assert math.isclose(floor_ratio, floor / builtin, rel_tol=0.02, abs_tol=0.01)
    assert write_ratio > 0 and float(small_cells[9]) > 0  # stock path
    assert small_cells[8] == "-"  # copy: not measured on tiny tensors
    assert any(line.startswith("geometric mean custom/built-in") for line in lines)
    assert any(
        line.startswith("per-call overhead on tiny tensors") and "of which the floor" in line
        for line in lines
    )
    assert any(line.startswith("floor (a kernel that costs nothing") for line in lines)
    assert any(line.startswith("write-only (a kernel that reads nothing") for line in lines)
    assert any(
        line.startswith("copy (a kernel that only copies") and "the 1 workloads" in line for line in lines
    )
    assert "small-pad-reflect" in proc.stderr  # progress goes to stderr

    data = strict_json(out.read_text())
    assert set(data) == {"machine", "settings", "results", "summary", "hook", "targets"}
    assert len(data["targets"]) == 5 and all(t["met"] is None for t in data["targets"])  # a filtered run
    assert lines[-1] == "targets: not judged (a full run without --quick or --filter judges them)"
    assert data["settings"] == {"quick": True, "samples": 3, "filter": "pad-reflect"}
    large, small = data["results"]
    assert small["name"] == "small-pad-reflect" and small["op"] == "Pad" and small["small"] is True
    assert large["small"] is False
    for result in (large, small):
        for key in (
            "builtin_ms",
            "custom_ms",
            "ratio",
            "stock_ms",
            "first_call_ms",
            "floor_ms",
            "write_only_ms",
        ):
            assert result[key] > 0
        assert len(result["builtin_samples_ms"]) == len(result["custom_samples_ms"]) == 3
        assert len(result["floor_samples_ms"]) == len(result["write_only_samples_ms"]) == 3
        assert result["max_abs_diff"] == 0.0  # Pad agrees with ORT exactly
    assert large["copy_ms"] > 0 and len(large["copy_samples_ms"]) == 3
    large_cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert len(large_cells) == 11 and large_cells[4] == f"{large['ratio']:.2f}"
    assert large_cells[8] == f"{large['copy_ms'] / large['builtin_ms']:.2f}"
    assert small["copy_ms"] is None and small["copy_samples_ms"] == []
    summary = data["summary"]
    assert math.isclose(summary["copy_geomean_ratio"], large["copy_ms"] / large["builtin_ms"])
    assert math.isclose(summary["custom_over_copy_geomean"], large["custom_ms"] / large["copy_ms"])
    assert math.isclose(summary["copied_geomean_ratio"], large["ratio"]) and summary["copy_workloads"] == 1
    ratios = [r["write_only_ms"] / r["builtin_ms"] for r in (large, small)]
    assert math.isclose(summary["write_only_geomean_ratio"], math.sqrt(ratios[0] * ratios[1]))
    assert "floor_geomean_ratio" in summary
    assert math.isclose(summary["geomean_ratio"], math.sqrt(large["ratio"] * small["ratio"]))
    assert summary["worst"] == max((large, small), key=lambda r: r["ratio"])["name"]
    assert data["machine"]["nproc"] >= 1 and data["machine"]["onnxruntime"]
    assert data["hook"] is None  # measured only on unfiltered runs

    # the saved run reads back as the run printed it, without running anything
    again = run_cli("--from", str(out))
    assert again.returncode == 0 and again.stderr == "" and again.stdout == proc.stdout
    markdown = run_cli("--from", str(out), "--markdown")
    assert markdown.returncode == 0 and markdown.stderr == ""
    assert markdown.stdout == saved.load(out).markdown() + "\n"
    body = proc.stdout.splitlines()
    md = markdown.stdout.splitlines()
    cut = body.index("", 2) + 1  # the machine line, the table, then the summary
    targets = md.index("| target | this run | goal | |")  # the summary as a list, the targets as a table
    assert md[:cut] == body[:cut] and md[cut : targets - 1] == [f"- {line}" for line in body[cut:-1]]
    assert md[targets - 1] == "" and len(md) == targets + 2 + 5


def test_markdown_run_prints_the_table_a_list_and_the_targets() -> None:
    proc = run_cli("--quick", "--filter", "small-pad", "--repeat", "1", "--markdown")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("machine: ") and lines[1] == "" and lines[2].startswith("| workload |")
    assert lines[4].startswith("| small-pad-reflect |") and lines[5] == ""
    assert lines[6].startswith("- geometric mean custom/built-in")
    table_at = lines.index("| target | this run | goal | |")
    assert all(line.startswith("- ") for line in lines[6 : table_at - 1]) and lines[table_at - 1] == ""
    assert all(line.endswith("| not judged |") for line in lines[table_at + 2 :])  # a quick run judges none
    assert "small-pad-reflect" in proc.stderr  # progress still goes to stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--filter", "no-such-workload"], "matches no workload"),
        (["--quick", "--json", "/nonexistent-dir/out.json"], "does not exist"),
        (["--repeat", "0"], "must be at least 1"),
        (["--from", "/nonexistent-dir/bench.json"], "does not exist"),
        (["--from", "/dev/null"], "is not a regular file"),
        (
            ["--from", "docs/bench.json", "--quick", "--repeat", "3"],
            "--quick, --repeat only applies to a new",
        ),
        (["--from", "docs/bench.json", "--json", "x.json"], "--json only applies to a new run"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, message) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("customops bench: error:") and message in err[0]


def test_suite_covers_the_required_workloads() -> None:
    names = [w.name for w in suite.suite()]
    assert len(names) == len(set(names))
    for required in (
        "resize-nearest-x2",
        "resize-linear-x2",
        "resize-cubic-x2",
        "resize-linear-antialias-div4",
        "resize-cubic-antialias-div4",
        "resize-nearest-x2-asymmetric-floor",
        "pad-constant",
        "pad-reflect",
        "pad-edge",
        "pad-wrap",
        "col2im-16ch-3x3",
        "centercroppad-crop",
        "centercroppad-pad",
        "affinegrid-2d",
        "maxroipool-7x7",
        "roialign-avg",
        "roialign-max",
    ):
        assert required in names
    assert any(w.small for w in suite.suite())
    assert [w.name for w in suite.select("WRAP")] == ["pad-wrap"]


def test_every_workload_builds_a_valid_model_at_quick_size() -> None:
    import onnx

    for w in suite.suite():
        model, feed, text = w.build(True)
        onnx.checker.check_model(model)
        assert set(feed) == {"x"} and text


def test_summary_and_table_from_results() -> None:
    def result(name: str, ratio: float, small: bool = False, op: str = "Resize") -> report.Result:
        return report.Result(
            name=name,
            op=op,
            shape="1x1",
            small=small,
            builtin_ms=1.0,
            custom_ms=ratio,
            ratio=ratio,
            stock_ms=None,
            first_call_ms=1.0,
            peak_over_output=1.5,
            output_mb=1.0,
            max_abs_diff=0.0,
            samples=3,
            inner=1,
            floor_ms=0.5 if name != "b" else 2.0,
            write_only_ms=0.8 if name != "b" else 2.5,
            copy_ms=None if small else (0.9 if name != "b" else 3.0),
        )

    results = [result("a", 0.25), result("b", 4.0), result("c", 1.0, small=True, op="Pad")]
    summary = report.summarize(results)
    assert math.isclose(summary.geomean_ratio, 1.0)
    assert summary.worst == "b" and summary.worst_ratio == 4.0
    assert summary.max_overhead_workload == "c" and summary.max_overhead_us == 0.0
    assert summary.max_overhead_floor_us == -500.0  # the tiny Pad's floor, 0.5 ms under its 1 ms
    assert summary.resize_peak_over_output == 1.5
    assert math.isclose(summary.floor_geomean_ratio, (0.5 * 2.0 * 0.5) ** (1 / 3))
    assert summary.floor_at_or_above_builtin == ("b",)
    assert math.isclose(summary.write_only_geomean_ratio, (0.8 * 2.5 * 0.8) ** (1 / 3))
    # copy: measured on the two workloads not on tiny tensors
    assert math.isclose(summary.copy_geomean_ratio, math.sqrt(0.9 * 3.0))
    assert math.isclose(summary.custom_over_copy_geomean, math.sqrt(0.25 / 0.9 * 4.0 / 3.0))
    assert math.isclose(summary.copied_geomean_ratio, 1.0) and summary.copy_workloads == 2
    text = report.table(results)
    assert text.count("\n") == 4 and "| b | 1x1 |" in text and "| - |" in text
    # ratio, floor ms, floor/built-in, write-only/built-in, copy/built-in
    assert "| 4.00 | 2.00 | 2.00 | 2.50 | 3.00 |" in text
    assert report.summarize([]) is None
    full = report.HookResult(elements=1_000_000, hook_ms=0.5, stock_ms=120.0, speedup=240.0)
    quick = report.HookResult(elements=1_000, hook_ms=0.04, stock_ms=0.3, speedup=7.5)
    assert report.summary_lines(summary, full)[-1].endswith("(240x faster; target 100x)")
    # a --quick run's 1,000 floats are not measured against the target
    assert "target is for 1,000,000 floats: run without --quick" in report.summary_lines(summary, quick)[-1]


def test_summary_json_leaves_out_what_the_run_did_not_measure() -> None:
    large = _result("big", ratio=2.0, copy_ms=1.5)
    summary = report.summarize([large])
    assert summary.max_overhead_us is None and summary.resize_peak_over_output is None
    data = summary.to_json()
    assert list(data) == [
        "geomean_ratio",
        "worst_ratio",
        "worst",
        "workloads",
        "floor_geomean_ratio",
        "floor_at_or_above_builtin",
        "write_only_geomean_ratio",
        "copy_geomean_ratio",
        "custom_over_copy_geomean",
        "copied_geomean_ratio",
        "copy_workloads",
    ]
    assert data["floor_at_or_above_builtin"] == []  # measured, and none: an empty list, not left out
    lines = report.summary_lines(summary, None)
    assert len(lines) == 4 and not any(line.startswith(("per-call", "peak")) for line in lines)
    tiny = _result("tiny", ratio=1.5, small=True, floor_ms=None)
    assert "of which the floor" not in report.summary_lines(report.summarize([tiny]), None)[1]


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_sides_follow_each_other_equally_often(n: int) -> None:
    import itertools
    from collections import Counter

    orders = timing.orders(n)
    assert all(sorted(order) == list(range(n)) for order in orders)
    follows = Counter(pair for order in orders for pair in itertools.pairwise(order))
    # every ordered pair of distinct sides, each as often as the others
    assert len(follows) == n * (n - 1) and len(set(follows.values())) == 1
    assert Counter(order[0] for order in orders) == Counter({k: len(orders) // n for k in range(n)})


def test_each_sample_starts_with_an_untimed_run() -> None:
    events: list[str] = []
    side = timing.Side(
        lambda: events.append("run"),
        enter=lambda: events.append("enter"),
        leave=lambda: events.append("leave"),
        settle=0.01,
    )
    side.sample(3)
    assert events == ["enter", "run", "run", "run", "run", "leave"]
    # longer than ORT's pool was measured to spin after a run (50-60 ms)
    assert timing.SETTLE_S >= 0.06


def test_targets_are_judged_on_full_runs_only_and_a_value_at_its_limit_meets_it() -> None:
    summary = report.Summary(
        geomean_ratio=1.0,
        worst_ratio=3.02,
        worst="w",
        workloads=3,
        max_overhead_us=19.9,
        resize_peak_over_output=1.6,
    )
    hook = report.HookResult(elements=report.HOOK_TARGET_ELEMENTS, hook_ms=1.0, stock_ms=99.5, speedup=99.5)
    targets = report.judge_targets(summary, hook, full=True)
    assert [t.met for t in targets] == [True, False, True, False, True]
    assert targets[2].to_json() == {
        "target": "per-call overhead on tiny tensors",
        "value": 19.9,
        "limit": 20.0,
        "at_most": True,
        "unit": "us",
        "met": True,
    }
    line = report.targets_line(targets)
    assert line.startswith("targets: 3 of 5 met; ") and line.count("NOT met") == 2
    assert "+19.9 us (<= 20): met" in line and "3.02x (<= 3): NOT met" in line
    assert all(t.met is None for t in report.judge_targets(summary, hook, full=False))
    small = report.HookResult(elements=1000, hook_ms=0.01, stock_ms=5.0, speedup=500.0)
    small_hook = report.judge_targets(summary, small, full=True)
    assert small_hook[3].met is None  # the hook's target is defined at 1M floats
    assert report.targets_line(small_hook).startswith("targets: 3 of 4 met; ")
    nothing = report.judge_targets(None, None, full=True)
    assert [t.value for t in nothing] == [None] * 5
    assert report.targets_line(nothing).startswith("targets: not judged")


@pytest.mark.parametrize("side", [24, 600])  # one part, and split over the kernel threads
def test_copy_side_copies_the_data_input_into_its_output(side: int) -> None:
    import numpy as np
    from onnx import helper

    import customops

    swap = hooks.Hooks()
    x = np.arange(side * side, dtype=np.float32).reshape(1, 1, side, side)
    for pads, grown in (
        (np.array([0, 0, 2, 3, 0, 0, 2, 3]), True),
        (np.array([0, 0, -2, -3, 0, 0, -2, -3]), False),
    ):
        node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")
        model = customops.rewrite(suite.one_node_model(node, [("x", x)], {"pads": pads}, 19))
        session = customops.InferenceSession(model)
        expected_shape = session.run(None, {"x": x})[0].shape
        swap.copy_once(expected_shape, np.float32)()
        try:
            got = session.run(None, {"x": x})[0]
        finally:
            swap.ours()
        assert got.shape == expected_shape
        flat, src = got.reshape(-1), x.reshape(-1)
        if grown:  # the input in order, then zeros
            np.testing.assert_array_equal(flat[: src.size], src)
            assert not flat[src.size :].any()
        else:  # the input's first elements
            np.testing.assert_array_equal(flat, src[: flat.size])


@pytest.mark.parametrize("name", ["int8-matmulinteger-512", "int8-qlinearconv-64ch-3x3", "pad-reflect"])
def test_stock_path_runs_the_kernel_as_our_hook_binds_it(name: str) -> None:
    """The stock path hands the kernel's result back as a list, from the kernel bound to the node's
    attributes as our hook calls it (the quantized kernels take their real element types through bind)."""
    import numpy as np

    import customops

    model, feed, _ = suite.select(name)[0].build(True)
    session = customops.InferenceSession(customops.rewrite(model))
    ours = session.run(None, feed)[0]
    swap = hooks.Hooks()
    swap.stock()
    try:
        stock = session.run(None, feed)[0]
    finally:
        swap.ours()
    assert stock.dtype == ours.dtype and np.array_equal(stock, ours)


def test_stand_ins_are_timed_only_where_one_answer_fits_every_call() -> None:
    chosen = {w.name: w.stand_ins for w in suite.select("int8")}
    assert chosen == {
        "int8-matmulinteger-512": True,
        "int8-qlinearconv-64ch-3x3": True,
        "int8-dynamicquantizelinear-1m": False,
        "int8-dynamic-model": False,
    }
    for w in suite.suite():
        model, _, _ = w.build(True)
        one_output = len(model.graph.node) == 1 and len([o for o in model.graph.node[0].output if o]) == 1
        assert w.stand_ins == one_output, w.name


def _saved(tmp_path, text: str) -> Path:
    path = tmp_path / "saved.json"
    path.write_text(text)
    return path


def _payload() -> dict:
    """A small saved run: one large and one tiny workload, and the hook, as a full run writes them."""
    results = [_result("big", ratio=2.0, op="Resize"), _result("tiny", ratio=1.5, small=True)]
    hook = report.HookResult(elements=report.HOOK_TARGET_ELEMENTS, hook_ms=0.4, stock_ms=120.0, speedup=300.0)
    settings = report.Settings(quick=False, samples=2, filter=None)
    machine = {"nproc": 2, "cpu": "CPU", "onnxruntime": "1", "jit": "numba 1", "threads_source": "2 (x)"}
    return report.Report(machine, settings, results, hook).to_json()


def test_a_report_reads_back_from_its_json(tmp_path) -> None:
    from customops import jsonout

    payload = _payload()
    assert [t["met"] for t in payload["targets"]] == [False, True, False, True, True]  # judged: a full run
    back = saved.load(_saved(tmp_path, jsonout.dumps(payload, indent=1)))
    assert back.to_json() == json.loads(jsonout.dumps(payload))
    assert back.results[0] == report.Result(**payload["results"][0])
    text = back.text().splitlines()
    assert text[0].startswith("machine: 2 cores (CPU); onnxruntime 1, onnxruntime-extensions ?")
    assert text[0].endswith("full run, median of 2") and text[-1].startswith("targets: 3 of 5 met; ")
    # the summary and targets are derived again, never taken from the file
    payload["summary"] = {"geomean_ratio": "whatever"}
    payload["targets"] = []
    assert saved.load(_saved(tmp_path, json.dumps(payload))).text() == back.text()


def _broken(change) -> dict:
    payload = _payload()
    change(payload)
    return payload


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "is not valid JSON (nested too deeply)"),
        (json.dumps({"machine": {}}) + "x", "is not valid JSON"),
        ('{"a": NaN}', "NaN is not JSON"),
        ("[]", "must be an object, not list"),
        (json.dumps(_broken(lambda p: p.pop("results"))), "has no 'results'"),
        (json.dumps(_broken(lambda p: p.update(results=[]))), "results must be a non-empty array"),
        (json.dumps(_broken(lambda p: p["results"][1].pop("ratio"))), "results[1] has no 'ratio'"),
        (
            json.dumps(_broken(lambda p: p["results"][0].update(builtin_ms=0))),
            "results[0].builtin_ms must be a number from 1e-100 to 1e+100, not int 0",
        ),
        (json.dumps(_broken(lambda p: p["results"][0].update(floor_ms=-1))), "floor_ms must not be negative"),
        (
            json.dumps(_broken(lambda p: p["results"][0].update(ratio="1.0"))),
            "results[0].ratio must be a number, not str",
        ),
        (json.dumps(_broken(lambda p: p["results"][0].update(small=1))), "small must be true or false"),
        (
            json.dumps(_broken(lambda p: p["results"][0].update(name=["x"]))),
            "name must be a string, not list",
        ),
        (json.dumps(_broken(lambda p: p["results"][0].update(samples=0))), "samples must be at least 1"),
        (json.dumps(_broken(lambda p: p["results"][0].update(stock_ms=10**400))), "must be a finite number"),
        (
            json.dumps(_broken(lambda p: p["results"][0].update(custom_samples_ms=[1, None]))),
            "custom_samples_ms[1]",
        ),
        (
            json.dumps(_broken(lambda p: p["hook"].update(speedup=True))),
            "hook.speedup must be a number, not bool",
        ),
        (json.dumps(_broken(lambda p: p["settings"].update(filter=3))), "settings.filter must be a string"),
        (
            json.dumps(_broken(lambda p: p["machine"].update(cpu={"a": 1}))),
            "machine.cpu must be a string or a number",
        ),
    ],
)
def test_a_broken_saved_run_is_refused_with_one_line(tmp_path, text, message) -> None:
    from customops.errors import CustomOpsError

    with pytest.raises(CustomOpsError) as caught:
        saved.load(_saved(tmp_path, text))
    error = str(caught.value)
    assert message in error and "\n" not in error and len(error) < 300
    assert error.startswith("--from ") and "saved.json" in error


def test_a_saved_run_larger_than_the_limit_is_not_read(tmp_path, monkeypatch) -> None:
    from customops.errors import CustomOpsError

    path = _saved(tmp_path, json.dumps(_payload()))
    monkeypatch.setattr(saved, "MAX_JSON_BYTES", 100)
    with pytest.raises(CustomOpsError, match="larger than 100 bytes"):
        saved.load(path)


def test_names_from_a_saved_run_cannot_break_the_table_or_the_terminal(tmp_path) -> None:
    payload = _payload()
    payload["results"][0]["name"] = "a|b\n| x |\x1b[31m"
    payload["machine"]["cpu"] = "cpu\x1b]0;title\x07"
    back = saved.load(_saved(tmp_path, json.dumps(payload)))
    markdown = back.markdown()
    row = next(line for line in markdown.splitlines() if line.startswith("| a"))
    assert row.startswith("| a\\|b\\n\\| x \\|\\x1b[31m | 1x1 |") and row.count(" | ") == 10
    assert "\x1b" not in markdown and "\x07" not in back.text()


def test_the_docs_table_is_the_committed_run_rendered() -> None:
    """docs/performance.md shows docs/bench.json as ``customops bench --from docs/bench.json --markdown``
    prints it; after a new ``--json docs/bench.json``, paste that output between the markers."""
    page = (ROOT / "docs" / "performance.md").read_text()
    block = page.split("<!-- bench-table -->\n")[1].split("<!-- /bench-table -->")[0]
    committed = saved.load(ROOT / "docs" / "bench.json")
    assert block.strip() == committed.markdown()
    assert committed.settings.full and committed.hook is not None  # a full run: every target judged
    assert [r.name for r in committed.results] == [w.name for w in suite.suite()]


def test_the_readme_targets_are_the_committed_run_s() -> None:
    """The README's performance summary is the targets table of docs/bench.json (the last part of
    ``customops bench --from docs/bench.json --markdown``)."""
    from customops.bench.report import targets_table

    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- bench-targets -->\n")[1].split("<!-- /bench-targets -->")[0]
    assert block.strip() == targets_table(saved.load(ROOT / "docs" / "bench.json").targets)


def _run_json(results: list[report.Result], settings: report.Settings) -> dict:
    hook = report.HookResult(elements=report.HOOK_TARGET_ELEMENTS, hook_ms=0.4, stock_ms=120.0, speedup=300.0)
    machine = {"nproc": 2, "cpu": "CPU", "onnxruntime": "1", "jit": "numba 1", "threads_source": "2 (x)"}
    return report.Report(machine, settings, results, hook).to_json()


def test_bench_rows_puts_a_filtered_run_s_rows_into_the_full_run(tmp_path) -> None:
    names = [w.name for w in suite.suite()]
    full = tmp_path / "bench.json"
    full.write_text(
        json.dumps(_run_json([_result(n, 1.0) for n in names[:-1]], report.Settings(False, 2, None)))
    )
    rows = tmp_path / "rows.json"
    filtered = [_result(names[-1], 9.0), _result(names[0], 4.0)]
    rows.write_text(json.dumps(_run_json(filtered, report.Settings(False, 2, "x"))))
    tool = [sys.executable, str(ROOT / "tools" / "bench_rows.py")]
    done = subprocess.run(
        [*tool, str(rows), "--into", str(full)], capture_output=True, text=True, timeout=NEVER
    )
    assert done.returncode == 0, done.stderr
    merged = saved.load(full)
    assert [r.name for r in merged.results] == names  # the suite's order, the new row added
    assert [r.ratio for r in merged.results] == [4.0] + [1.0] * (len(names) - 2) + [9.0]
    assert merged.settings.full and merged.summary.worst_ratio == 9.0
    rows.write_text(json.dumps(_run_json([_result("no-such-workload", 2.0)], report.Settings(False, 2, "x"))))
    before = full.read_bytes()
    refused = subprocess.run(
        [*tool, str(rows), "--into", str(full)], capture_output=True, text=True, timeout=NEVER
    )
    assert refused.returncode == 2 and "no-such-workload" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1 and full.read_bytes() == before
