"""A kernel error reaches exactly the run that caused it.

Runs of customops.InferenceSession are routed by thread identity alone: ONNX Runtime calls our kernels
on the thread that called run when execution is sequential, and the session always is. The tests hold
one run inside a kernel (an Event) while another runs, so that the overlap is certain, not a race.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import customops
from customops.bridge import hook, routing, seams
from tests.helpers import one_node_model

F32 = np.float32
_SEMANTICS = Path(__file__).resolve().parents[2] / "docs" / "semantics.md"


def _resize(dtype=F32):
    x = np.ones((1, 1, 2, 2), dtype)
    model, _ = one_node_model("Resize", {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], F32)}, 13)
    good = {"X": x, "scales": np.array([1, 1, 2, 2], F32)}
    bad = {"X": x, "scales": np.array([2, 2, 2], F32)}  # wrong number of scales: the kernel fails
    return customops.rewrite(model), good, bad


def _held(monkeypatch, elem_type: str) -> tuple[threading.Event, threading.Event]:
    """Make our Resize of ``elem_type`` wait in its kernel: (entered, release)."""
    entered, release = threading.Event(), threading.Event()
    for binding in hook.BINDINGS.values():
        if binding.op.name == "Resize" and binding.elem_type == elem_type:
            real = binding.kernel

            def waiting(*args, real=real, **kwargs):
                entered.set()
                assert release.wait(60)
                return real(*args, **kwargs)

            monkeypatch.setattr(binding, "kernel", waiting)
            monkeypatch.setattr(binding, "bind", None)
            monkeypatch.setattr(binding, "attr_cache", {})
    return entered, release


def _in_thread(call) -> tuple[threading.Thread, list]:
    outcome: list = []

    def body():
        try:
            outcome.append(call())
        except BaseException as exc:  # the test inspects what the thread met
            outcome.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    return thread, outcome


def test_a_plain_sessions_error_never_reaches_another_threads_run(monkeypatch):
    model, good, _ = _resize()
    ours = customops.InferenceSession(model)
    plain_model, _, plain_bad = _resize(np.float64)
    plain = ort.InferenceSession(
        plain_model.SerializeToString(), customops.session_options(), providers=["CPUExecutionProvider"]
    )
    customops.pop_errors()
    entered, release = _held(monkeypatch, "float")
    thread, outcome = _in_thread(lambda: ours.run(None, good))
    assert entered.wait(60)  # thread A is inside its run
    (y,) = plain.run(None, plain_bad)  # thread B's kernel fails meanwhile
    release.set()
    thread.join(60)
    assert y.size == 0
    assert isinstance(outcome[0], list) and outcome[0][0].shape == (1, 1, 4, 4), outcome
    errors = customops.pop_errors()
    assert len(errors) == 1 and "scales" in errors[0]


def test_parallel_execution_cannot_swallow_a_kernel_error(monkeypatch):
    sessions = []
    for dtype in (F32, np.float64):
        model, good, bad = _resize(dtype)
        options = ort.SessionOptions()
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        sessions.append((customops.InferenceSession(model, options), good, bad))
    (held, good, _), (failing, _, bad) = sessions
    customops.pop_errors()
    entered, release = _held(monkeypatch, "float")
    thread, outcome = _in_thread(lambda: held.run(None, good))
    assert entered.wait(60)  # one run is inside its kernel
    with pytest.raises(customops.KernelError, match="scales"):
        failing.run(None, bad)  # the other fails, and says so
    release.set()
    thread.join(60)
    assert outcome[0][0].shape == (1, 1, 4, 4), outcome
    assert customops.pop_errors() == []
    assert failing.get_session_options().execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL


def test_every_run_entry_point_raises_its_kernel_error():
    model, good, bad = _resize()
    sess = customops.InferenceSession(model)
    values = {name: ort.OrtValue.ortvalue_from_numpy(v) for name, v in bad.items()}
    with pytest.raises(customops.KernelError, match="scales"):
        sess.run_with_ort_values(["Y"], values)
    binding = sess.io_binding()
    for name, value in bad.items():
        binding.bind_cpu_input(name, value)
    binding.bind_output("Y")
    with pytest.raises(customops.KernelError, match="scales"):
        sess.run_with_iobinding(binding)
    with pytest.raises(customops.CustomOpsError, match="run_async is not supported"):
        sess.run_async(None, good, lambda *args: None, None)
    (y,) = sess.run(None, good)  # and the session goes on
    assert y.shape == (1, 1, 4, 4)
    assert customops.pop_errors() == []


def test_a_plain_session_failure_is_documented_as_invalidating_the_run(capfd):
    """A plain session has no handle on its run, so downstream nodes may make a plausible number
    of the empty output (ReduceMean of it is 0): the decision is to say so, loudly, not to promise
    otherwise. The run's results are declared meaningless on stderr and in docs/semantics.md."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["y"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("scales", TensorProto.FLOAT, None),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    plain = ort.InferenceSession(
        customops.rewrite(model).SerializeToString(),
        customops.session_options(),
        providers=["CPUExecutionProvider"],
    )
    customops.pop_errors()
    (y,) = plain.run(None, {"x": np.ones((1, 1, 2, 2), F32), "scales": np.array([2, 2, 2], F32)})
    assert float(y) == 0.0  # plausible: the hazard the documentation names
    errors = customops.pop_errors()
    assert len(errors) == 1 and "scales" in errors[0]
    assert "no result of this run means anything" in capfd.readouterr().err
    text = _SEMANTICS.read_text(encoding="utf-8")
    assert "## Kernel failures, interrupts and the layer's limits" in text
    assert "ReduceMean of it is 0" in text


class _WatchedOptions(ort.RunOptions):
    """A caller's RunOptions that records every value written to its ``terminate``. The first True written
    also lets the other thread's held run go on (``release``) and waits until that run is over (``done``),
    so a write of ours lands while the other run passes a node boundary, every time."""

    def __init__(self, release: threading.Event, done: threading.Event) -> None:
        super().__init__()
        self.writes: list[bool] = []
        self.release, self.done = release, done

    @property
    def terminate(self) -> bool:
        return ort.RunOptions.terminate.__get__(self)

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self.writes.append(value)
        ort.RunOptions.terminate.__set__(self, value)
        if value:
            self.release.set()
            self.done.wait(60)


def _resize_then_neg():
    """Resize (ours, float) then a built-in Neg: ONNX Runtime looks at ``terminate`` between the two."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"]),
        helper.make_node("Neg", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return customops.rewrite(model)


def test_a_kernel_error_never_touches_the_callers_shared_run_options(monkeypatch):
    """Two sessions on two threads share one RunOptions (ONNX Runtime allows it). A
    failing kernel of thread A must stop A's run through options of our own, never by setting
    ``terminate`` on the caller's: thread B, inside its run meanwhile, would stop too, and A's reset
    would undo a ``terminate`` the caller set to cancel its own runs."""
    good_session = customops.InferenceSession(_resize_then_neg())
    bad_model, _, bad = _resize(np.float64)
    failing = customops.InferenceSession(bad_model)
    entered, release = _held(monkeypatch, "float")
    done = threading.Event()
    shared = _WatchedOptions(release, done)
    x = np.ones((1, 1, 2, 2), F32)

    def valid_runs():
        try:
            return [good_session.run(None, {"x": x}, shared)[0] for _ in range(50)]
        finally:
            done.set()

    thread, outcome = _in_thread(valid_runs)
    assert entered.wait(60)  # thread B is inside its first run, held in our Resize
    for _ in range(3):
        with pytest.raises(customops.KernelError, match="scales"):
            failing.run(None, bad, shared)  # thread A's kernel fails, with the same options
    release.set()
    thread.join(60)
    assert isinstance(outcome[0], list), outcome  # every one of B's runs succeeded
    assert all(y.shape == (1, 1, 4, 4) and (y == -1).all() for y in outcome[0])
    assert shared.writes == [] and not shared.terminate


def test_a_run_uses_options_of_its_own_carrying_the_callers_settings():
    """The options a run of ours uses are not the caller's object, and carry every setting the caller
    made that ONNX Runtime lets us read back (its properties and its documented run config entries)."""
    model, good, _ = _resize()
    sess = customops.InferenceSession(model)
    seen = []

    def recording(x, *args, **kwargs):
        seen.append(routing.current_context().run_options)
        return np.zeros((1, 1, 4, 4), x.dtype)

    options = ort.RunOptions()
    options.log_severity_level = 3
    options.log_verbosity_level = 2
    options.logid = "caller"
    options.only_execute_path_to_fetches = True
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    options.add_run_config_entry("gpu_graph_id", "-1")
    with seams.kernel_replaced("Resize", recording):
        sess.run(None, good, options)
        sess.run(None, good, options)
    assert len(seen) == 2 and seen[0] is not options and seen[1] is not seen[0]
    for ours in seen:
        assert (ours.log_severity_level, ours.log_verbosity_level, ours.logid) == (3, 2, "caller")
        assert ours.only_execute_path_to_fetches and not ours.terminate
        assert ours.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
        assert ours.get_run_config_entry("gpu_graph_id") == "-1"


def test_a_terminate_the_caller_sets_during_a_run_still_stops_it(monkeypatch):
    """The caller's own ``terminate`` (to cancel its runs from another thread) reaches a run of ours that
    uses a copy of its options: the run stops after the node of ours in progress."""
    sess = customops.InferenceSession(_resize_then_neg())
    entered, release = _held(monkeypatch, "float")
    options = ort.RunOptions()
    thread, outcome = _in_thread(lambda: sess.run(None, {"x": np.ones((1, 1, 2, 2), F32)}, options))
    assert entered.wait(60)  # the run is inside our Resize
    options.terminate = True  # the caller cancels it
    release.set()
    thread.join(60)
    assert isinstance(outcome[0], Exception) and "terminate" in str(outcome[0]), outcome
    assert options.terminate  # still the caller's to reset
