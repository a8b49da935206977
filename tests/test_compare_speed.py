"""compare's fixed costs (docs/performance.md, compare's speed): what each process imports, when the
sides' children start, how many sessions and runs a comparison makes. Behaviour only, never time: each
test counts imports, sessions or runs, on real ORT sessions."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.helpers import run_python


def _resize_model(path) -> None:
    """x -> Relu -> Resize (nearest x2) -> y: one swapped node between two built-in ones."""
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Resize", ["r", "", "scales"], ["y"], name="resize", mode="nearest"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 8])],
        [scales],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _child_modules(side: str, path) -> dict:
    """What a side's runner has imported once ready (``ready``) and after running the model at ``path``
    whole (``ran``), in a fresh process as the side's child is."""
    script = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np
        from customops.eval.running.worker import Request, Runner, answer
        watched = ("onnx", "ml_dtypes", "onnxruntime", "customops.bridge.session")
        seen = {{}}
        runner = Runner({side!r})
        seen["ready"] = [m for m in watched if m in sys.modules]
        model = open({str(path)!r}, "rb").read()
        feed = {{"x": np.ones((1, 2, 3, 4), np.float32)}}
        reply = answer(runner, Request(model, feed, whole=True, repeats=1, limit=1 << 30))
        seen["ran"] = [m for m in watched if m in sys.modules]
        seen["status"] = reply.status
        print(json.dumps(seen))
        """
    )
    done = run_python("-c", script)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_builtin_side_never_imports_onnx(tmp_path):
    """ORT reads the model's bytes itself: the built-in side's child runs it without onnx (whose import,
    with ml_dtypes, takes longer than ONNX Runtime's)."""
    path = tmp_path / "m.onnx"
    _resize_model(path)
    seen = _child_modules("builtin", path)
    assert seen["status"] == "ok"
    assert "onnxruntime" in seen["ready"]
    assert "onnx" not in seen["ran"] and "ml_dtypes" not in seen["ran"]


def test_the_custom_side_imports_its_runtime_before_it_says_ready(tmp_path):
    """The custom side's child imports our runtime while starting (overlapping with the parent's own
    work), not during its first run; the reference side's child needs no ONNX Runtime at all."""
    path = tmp_path / "m.onnx"
    _resize_model(path)
    rewritten = tmp_path / "r.onnx"
    from customops import rewrite_model

    onnx.save(rewrite_model(onnx.load(str(path))).model, str(rewritten))
    seen = _child_modules("custom", rewritten)
    assert seen["status"] == "ok"
    assert "customops.bridge.session" in seen["ready"]
    reference = _child_modules("reference", path)
    assert reference["status"] == "ok"
    assert "onnxruntime" not in reference["ran"]


def test_compare_starts_its_sides_first_and_forks_those_that_need_onnx(tmp_path):
    """The command starts the three sides' children first, so that their imports overlap with its own:
    the built-in side's (no onnx) as a fresh interpreter before anything else, the custom and reference
    sides' forked from the command once it has imported onnx, so that onnx is imported once, not three
    times. Its own process imports neither onnxruntime-extensions nor numba (the children run the
    sessions)."""
    path = tmp_path / "m.onnx"
    _resize_model(path)
    script = textwrap.dedent(
        f"""
        import json, sys
        from customops.eval.running import runner
        starts = []
        original = runner.SideProcess.start
        def start(self, fork=False):
            before = "onnx" in sys.modules
            original(self, fork)
            starts.append([self.side, before, type(self.proc).__name__])
        runner.SideProcess.start = start
        from customops.cli.main import main
        status = main(["compare", {str(path)!r}, "-q"])
        late = [m for m in ("onnxruntime_extensions", "numba", "onnx.reference") if m in sys.modules]
        print(json.dumps({{"status": status, "starts": starts, "late": late}}))
        """
    )
    done = run_python("-c", script)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["status"] == 0
    assert seen["starts"] == [
        ["builtin", False, "Popen"],
        ["custom", True, "ForkedChild"],
        ["reference", True, "ForkedChild"],
    ]
    assert seen["late"] == []


def test_kernel_times_leave_out_the_warm_up_run(tmp_path):
    """A side's kernel times come from ``repeats`` runs after the one that gives the outputs: that first
    run of a session compiles our kernels' loops and builds their plans, which is no kernel time. Counted
    from the session's own profile (its model runs), on both sides."""
    from customops import rewrite_model
    from customops.eval.running import sides

    path = tmp_path / "m.onnx"
    _resize_model(path)
    model = onnx.load(str(path))
    feed = {"x": np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)}
    for custom, which in ((False, model), (True, rewrite_model(model).model)):
        run = sides.run_side(which.SerializeToString(), feed, custom, repeats=3)
        assert run.error is None
        assert run.timed_runs == 3
        assert set(run.times) >= {"relu", "resize"}
        once = sides.run_side(which.SerializeToString(), feed, custom, repeats=1)
        assert once.timed_runs == 1 and "resize" in once.times


def test_the_two_sides_run_the_model_at_once(tmp_path, monkeypatch):
    """compare sends the model to both sides' children before it waits for either answer (the plain
    runs, then the runs with the values exposed), so that on two cores they run side by side: the order of
    the requests and answers, recorded at the parent's end of the connection."""
    from customops.comparison.pipeline import compare_model
    from customops.eval.running import runner

    path = tmp_path / "m.onnx"
    _resize_model(path)
    events: list[tuple[str, str]] = []
    submit, result = runner.SideProcess.submit, runner.SideProcess.result

    def logged_submit(self, request):
        if request.whole:
            events.append(("send", self.side))
        return submit(self, request)

    def logged_result(self, job, deadline=None):
        reply = result(self, job, deadline)
        if isinstance(reply.value, dict):  # a whole-model run's outputs by name
            events.append(("answer", self.side))
        return reply

    monkeypatch.setattr(runner.SideProcess, "submit", logged_submit)
    monkeypatch.setattr(runner.SideProcess, "result", logged_result)
    feed = {"x": np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)}
    comparison = compare_model(onnx.load(str(path)), feed)
    assert comparison.report.verdict == "agree"
    pair = [("send", "builtin"), ("send", "custom"), ("answer", "builtin"), ("answer", "custom")]
    assert events[:8] == pair + pair  # then the swapped node alone on each side


def test_kernel_times_are_measured_only_when_asked(tmp_path):
    """Without --kernel-times neither side is profiled (no node has a time; the table has no time
    columns); with it each node has both sides' steady-state times and the columns are there."""
    from tests.helpers import run_cli, strict_json

    path = tmp_path / "m.onnx"
    _resize_model(path)
    for asked in (False, True):
        out = tmp_path / f"r{asked}.json"
        proc = run_cli("compare", str(path), "--json", str(out), *(["--kernel-times"] if asked else []))
        assert proc.returncode == 0, proc.stderr
        (node,) = strict_json(out.read_text())["nodes"]
        times = list(node["time_us"].values())
        assert all(t is not None and t >= 0 for t in times) if asked else times == [None, None]
        assert ("A µs" in proc.stdout) == asked, proc.stdout


def test_outputs_loaded_in_place_of_the_built_in_side_start_only_the_custom_side(tmp_path):
    """With --load-outputs neither the built-in side's model nor any node alone runs: only the custom
    side's child is started."""
    path = tmp_path / "m.onnx"
    _resize_model(path)
    saved = tmp_path / "saved.npz"
    from tests.helpers import run_cli

    made = run_cli("compare", str(path), "-q", "--save-outputs", str(saved))
    assert made.returncode == 0, made.stderr
    script = textwrap.dedent(
        f"""
        import json
        from customops.eval.running import runner
        started = []
        original = runner.SideProcess.start
        def start(self, fork=False):
            started.append(self.side)
            original(self, fork)
        runner.SideProcess.start = start
        from customops.cli.main import main
        status = main(["compare", {str(path)!r}, "-q", "--load-outputs", {str(saved)!r}])
        print(json.dumps({{"status": status, "started": started}}))
        """
    )
    done = run_python("-c", script)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"status": 0, "started": ["custom"]}
