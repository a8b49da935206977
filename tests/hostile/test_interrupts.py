"""Ctrl-C and SystemExit during a run are not kernel failures.

The runs happen in child processes (an exception escaping the hook aborts the process). The model is a
chain of Resize nodes whose kernel also sleeps, so that a run lasts several seconds and a prompt stop
shows in how many kernels the interrupted run called, not in a measured time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import customops
from customops.bridge import hook
from tests.helpers import DEVIATION, NEVER, ROOT, run_python

NODES = 8

_PRELUDE = f"""
import os, signal, sys, time
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper
import customops
from customops.bridge import hook

NODES = {NODES}
names = ["x"] + [f"r{{i}}" for i in range(NODES)]
nodes = [helper.make_node("Resize", [names[i], "", "scales"], [names[i + 1]]) for i in range(NODES)]
scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 1, 1])
graph = helper.make_graph(
    nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
    [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, None)], [scales],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
model = customops.rewrite(model)
feed = {{"x": np.ones((1, 1, 4, 4), np.float32)}}
calls = []
on_call = {{}}  # call number -> what to do then

customops.session_options()  # registers our ops (and our SIGINT handler)
for binding in hook.BINDINGS.values():
    if binding.op.name == "Resize" and binding.elem_type == "float":
        real = binding.kernel
        def slow(*args, real=real, **kwargs):
            calls.append(1)
            action = on_call.get(len(calls))
            if action is not None:
                action()
            time.sleep(0.3)
            return real(*args, **kwargs)
        binding.kernel = slow
        binding.bind = None
        binding.attr_cache.clear()
"""


def _child(code: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", ROOT)},
        **kwargs,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=NEVER)
    assert proc.returncode not in (134, -6, 139, -11), err[-2000:]
    return proc.returncode, out, err


def test_ctrl_c_from_outside_stops_the_run_and_raises_keyboard_interrupt():
    proc = _child(
        """
        sess = customops.InferenceSession(model)
        sess.run(None, feed)  # the first run compiles what it needs
        calls.clear()
        on_call[NODES + 2] = lambda: print("in kernel", flush=True)  # the second node of the second run
        try:
            for _ in range(2):
                sess.run(None, feed)
            print("not interrupted")
        except KeyboardInterrupt:
            print("KeyboardInterrupt from run after", len(calls) - NODES, "kernels of", NODES, flush=True)
        except Exception as e:
            print("other:", type(e).__name__, e, flush=True)
        """
    )
    assert proc.stdout.readline() == "in kernel\n"
    proc.send_signal(signal.SIGINT)
    code, out, err = _finish(proc)
    assert code == 0, err[-2000:]
    assert out.startswith("KeyboardInterrupt from run after"), out + err[-2000:]
    called = int(out.split()[4])
    assert 2 <= called < NODES, out


@pytest.mark.parametrize("plain", [False, True], ids=["ours", "plain"])
def test_sigint_inside_a_kernel_is_an_interrupt_not_a_failure(plain):
    proc = _child(
        f"""
        if {plain}:
            sess = ort.InferenceSession(
                model.SerializeToString(), customops.session_options(), providers=["CPUExecutionProvider"]
            )
        else:
            sess = customops.InferenceSession(model)
        on_call[3] = lambda: os.kill(os.getpid(), signal.SIGINT)
        returned = False
        try:
            sess.run(None, feed)
            returned = True
            for _ in range(6000):  # a plain session's run cannot be stopped: the interrupt comes after it
                time.sleep(0.01)
            print("not interrupted")
        except KeyboardInterrupt:
            print("KeyboardInterrupt", "after run" if returned else "from run", len(calls), flush=True)
        print("errors:", customops.pop_errors(), flush=True)
        """
    )
    code, out, err = _finish(proc)
    assert code == 0, err[-2000:]
    first, errors = out.splitlines()[:2]
    if plain:
        # the run goes on (the nodes after the interrupted one fail on its empty output), then the
        # interrupt arrives; it is never reported as a kernel failure
        assert first.startswith("KeyboardInterrupt"), out + err[-2000:]
        assert "KeyboardInterrupt" not in errors, out
    else:
        assert first == "KeyboardInterrupt from run 3", out + err[-2000:]
        assert errors == "errors: []", out


def test_the_sigint_handler_raises_only_where_the_hook_catches_it():
    """The handler is called as a signal would call it, with the frame it landed in: inside a kernel it
    raises KeyboardInterrupt (the hook catches it and stops the run); under the hook outside its ``try``
    (here while the hook reports a kernel's failure) it must return and stop the run instead, as a
    KeyboardInterrupt raised there would reach the layer and abort the process."""
    proc = _child(
        """
        from customops.bridge import interrupts, routing
        sess = customops.InferenceSession(model)

        def interrupted(where):
            try:
                sess.run(None, feed)
                print(where, "not interrupted", flush=True)
            except KeyboardInterrupt:
                print(where, "KeyboardInterrupt from run", len(calls), flush=True)
            calls.clear()

        on_call[3] = lambda: interrupts._on_sigint(signal.SIGINT, sys._getframe())
        interrupted("in kernel")
        real_report = routing.report

        def report(message):
            interrupts._on_sigint(signal.SIGINT, sys._getframe())
            print("handler returned", flush=True)
            real_report(message)

        def fail():
            raise ValueError("the kernel fails")

        routing.report = report
        on_call[3] = fail
        interrupted("in report")
        """
    )
    code, out, err = _finish(proc)
    assert code == 0, err[-2000:]
    assert out.splitlines() == [
        "in kernel KeyboardInterrupt from run 3",
        "handler returned",
        "in report KeyboardInterrupt from run 3",
    ], out + err[-2000:]


@pytest.mark.parametrize("session", ["ours", "plain"])
def test_a_second_sigint_inside_the_handler_under_the_hook_never_aborts(session):
    """A first SIGINT lands in the hook outside its ``try`` (its first line, before the kernel is called):
    the handler stops the run there instead of raising. A second SIGINT landing while that handler is
    still working (here: as it stops the run) must not raise either: its KeyboardInterrupt would leave
    the first handler into the hook outside the ``try`` and abort the process. The signals come through
    calls of the handler with the frames they would land in (a tracer at the hook's first line), so the
    order is fixed, not raced."""
    proc = _child(
        f"""
        from customops.bridge import interrupts, routing
        if {session!r} == "ours":
            sess = customops.InferenceSession(model)
        else:
            sess = ort.InferenceSession(
                model.SerializeToString(), customops.session_options(), providers=["CPUExecutionProvider"]
            )
        nested = []

        def second(real):
            def wrapped(*args):
                if not nested:
                    nested.append(1)
                    interrupts._on_sigint(signal.SIGINT, sys._getframe())
                    print("second handler returned", flush=True)
                return real(*args)
            return wrapped

        routing.stop_run = second(routing.stop_run)

        def tracer(frame, event, arg):
            if event == "call" and frame.f_code is hook.invoke.__code__ and not calls:
                sys.settrace(None)
                interrupts._on_sigint(signal.SIGINT, frame)
                print("first handler returned", flush=True)
            return None

        sys.settrace(tracer)
        try:
            sess.run(None, feed)
            # no handle on the run (plain): the interrupt is delivered again once it has left the hook,
            # during the run (in a later node's Python code) or after it
            for _ in range(6000):
                time.sleep(0.05)
            print("no KeyboardInterrupt", flush=True)
        except KeyboardInterrupt:
            print("KeyboardInterrupt after call", len(calls), flush=True)
        """
    )
    code, out, err = _finish(proc)
    assert code == 0, err[-2000:]
    lines = out.splitlines()
    assert lines[:2] == ["second handler returned", "first handler returned"], out + err[-2000:]
    assert len(lines) == 3 and lines[2].startswith("KeyboardInterrupt after call"), out
    if session == "ours":  # the run stops after the node it was in
        assert lines[2] == "KeyboardInterrupt after call 1", out


@pytest.mark.parametrize("hook", ["stock", "probe_memory"])
def test_ctrl_c_under_a_hook_of_the_bench_stops_the_run_and_never_aborts(hook):
    """``customops bench`` swaps in hooks of its own (the layer's stock path, ours under a memory probe);
    a KeyboardInterrupt escaping one of them into the layer aborted the process."""
    proc = _child(
        f"""
        from customops.bench.hooks import Hooks
        sess = customops.InferenceSession(model)
        Hooks().{hook}()
        on_call[3] = lambda: os.kill(os.getpid(), signal.SIGINT)
        try:
            sess.run(None, feed)
            print("not interrupted")
        except KeyboardInterrupt:
            print("KeyboardInterrupt from run", len(calls), flush=True)
        print("errors:", customops.pop_errors(), flush=True)
        """
    )
    code, out, err = _finish(proc)
    assert code == 0, err[-2000:]
    assert out.splitlines()[:2] == ["KeyboardInterrupt from run 3", "errors: []"], out + err[-2000:]


def test_system_exit_in_a_kernel_is_raised_from_run(monkeypatch):
    from tests.helpers import one_node_model

    x = np.ones((1, 1, 2, 2), np.float32)
    model, feed = one_node_model(
        "Resize", {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], np.float32)}, 13
    )
    sess = customops.InferenceSession(customops.rewrite(model))
    for binding in hook.BINDINGS.values():
        if binding.op.name == "Resize" and binding.elem_type == "float":
            monkeypatch.setattr(binding, "kernel", lambda *a, **k: sys.exit(3))
            monkeypatch.setattr(binding, "bind", None)
            monkeypatch.setattr(binding, "attr_cache", {})
    with pytest.raises(SystemExit) as info:
        sess.run(None, feed)
    assert info.value.code == 3
    monkeypatch.undo()
    for binding in hook.BINDINGS.values():
        binding.attr_cache.clear()
    assert sess.run(None, feed)[0].shape == (1, 1, 4, 4)


HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interrupt_import.py")
COMPILED_STARTS = ["onnxruntime.capi.onnxruntime_pybind11_state", "onnx.onnx_cpp2py_export", "numpy"]
"""Compiled modules started under the hold: cut by a KeyboardInterrupt, ONNX Runtime's ends the
command line with ``ImportError: initialization failed``, onnx's with a segmentation fault; numpy's is the
first of them."""


@pytest.mark.parametrize(
    ("signame", "status", "word"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]
)
@pytest.mark.parametrize("delay", [0.0005, 0.005])
@pytest.mark.parametrize("module", COMPILED_STARTS)
def test_a_signal_while_a_compiled_module_starts_stops_the_command(module, delay, signame, status, word):
    """Held while the native packages start, then handled as at any other moment: a SIGTERM held there,
    before the command's handler was installed, killed the process silently."""
    proc = run_python(HARNESS, module, str(delay), signame, "compare", DEVIATION)
    assert (proc.returncode, proc.stderr) == (status, f"customops compare: {word}\n")


INSIDE_NUMPY = "datetime"
"""A module numpy's compiled core imports while it starts (``PyCapsule_Import``): a signal raised as that
import begins lands inside numpy's start, the moment that once ended compare with ``ImportError:
PyCapsule_Import could not import module "datetime"`` (its side processes were started, and numpy
imported for them, before the hold)."""


@pytest.mark.parametrize(
    ("signame", "status", "word"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]
)
def test_a_signal_inside_numpy_s_start_stops_compare_as_anywhere_else(signame, status, word):
    """The signal is sent by the process itself as numpy's core imports ``datetime``: no timing."""
    proc = run_python(HARNESS, INSIDE_NUMPY, "now", signame, "compare", DEVIATION)
    assert (proc.returncode, proc.stderr) == (status, f"customops compare: {word}\n")


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_once_the_command_has_finished_changes_nothing(signame):
    """A Ctrl-C or SIGTERM while Python shuts down, after the command's work (here from an exit
    handler): its status and its output stand, and nothing more is printed. The command's SIGTERM
    handler is gone by then, and the process died of either signal."""
    code = (
        "import atexit, os, signal, sys, time\n"
        f"atexit.register(lambda: (os.kill(os.getpid(), signal.{signame}), time.sleep(0.2)))\n"
        "from customops.cli.main import entry\n"
        "sys.argv = ['customops', 'ops', '--json']\n"
        "sys.exit(entry())\n"
    )
    proc = run_python("-c", code)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert proc.stdout.startswith("[") or proc.stdout.startswith("{")


def test_python_m_customops_exits_130_after_an_interrupt_raised_in_generated_code(tmp_path):
    """CPython notes a KeyboardInterrupt that leaves an ``exec`` of a string (numba's generated code,
    say) even when it is caught later; ``python -m`` then ended the process by SIGINT, not with 130."""
    (tmp_path / "sitecustomize.py").write_text(
        "import customops.cli.ops\ncustomops.cli.ops.run = lambda args: exec('raise KeyboardInterrupt')\n"
    )
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", ROOT)])
    proc = run_python("-m", "customops", "ops", env={"PYTHONPATH": path})
    assert (proc.returncode, proc.stderr) == (130, "customops ops: interrupted\n")
