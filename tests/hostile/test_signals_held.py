"""customops.signals: SIGINT and SIGTERM held back around steps that must not be cut, and handled as they
would have been right after; SIGTERM while the command line imports the native packages.

Each case runs in a child process: the signals are real, sent by the process to itself or from outside.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interrupt_import.py")
DEVIATION = os.path.join(_ROOT, "models", "ort_deviation.onnx")


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *(["-c", textwrap.dedent(code)] if code else []), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", _ROOT), **(env or {})},
    )


def test_a_sigterm_held_after_an_ignored_sigint_is_not_dropped():
    """With SIGINT ignored (a background job of a script), a SIGINT then a SIGTERM while held: the
    SIGTERM still ends the process. Only the first signal that came was handled, and it was the ignored
    SIGINT: the SIGTERM was lost and the process ran on."""
    proc = _python(
        """
        import os, signal
        from customops.signals import signals_held
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with signals_held():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
        print("ran on", flush=True)
        """
    )
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert proc.stdout == ""


def test_nested_holds_hand_the_signal_to_the_outer_one():
    """A Ctrl-C inside an inner hold is raised once the outer one ends, not when the inner one does."""
    proc = _python(
        """
        import os, signal
        from customops.signals import import_held, signals_held
        try:
            with signals_held():
                with signals_held():
                    os.kill(os.getpid(), signal.SIGINT)
                print("inner done", flush=True)
                import_held(("json",))  # a hold of its own, with nothing coming in it
                print("outer done", flush=True)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines == ["inner done", "outer done", "KeyboardInterrupt", "True True"], proc.stdout


def test_import_held_from_another_thread_imports_without_holding():
    proc = _python(
        """
        import signal, threading
        from customops.signals import import_held
        errors = []
        def work():
            try:
                import_held()
            except BaseException as exc:
                errors.append(exc)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        print(errors, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        """
    )
    assert (proc.returncode, proc.stdout) == (0, "[] True\n"), proc.stderr[-2000:]


COMPILED_STARTS = ["numpy", "onnx.onnx_cpp2py_export", "onnxruntime.capi.onnxruntime_pybind11_state"]


@pytest.mark.parametrize("delay", [0.0005, 0.005])
@pytest.mark.parametrize("module", COMPILED_STARTS)
def test_sigterm_while_the_native_packages_start_exits_143_with_one_line(module, delay):
    """SIGTERM while the command line imports the native packages (held there, before the command's
    SIGTERM handler was installed): the command exits 143 with its one line, as at any other moment. It
    was raised again with the default disposition and killed the process silently."""
    proc = _python("", HARNESS, module, str(delay), "SIGTERM", "compare", DEVIATION)
    assert proc.returncode == 143, (proc.returncode, proc.stderr[-2000:])
    assert proc.stderr.strip().splitlines()[-1] == "customops compare: terminated", proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_sigterm_once_the_command_has_finished_is_no_signal_death():
    """A SIGTERM while Python shuts down after the command (here from an exit handler; in a real run,
    while the sides' children are closed and ONNX Runtime unloads): the process must end with a status,
    the command's or 143, as after a Ctrl-C there (cli.main.entry). The command's SIGTERM handler is gone
    by then, and the process died of the signal (-15)."""
    proc = _python(
        """
        import atexit, os, signal, sys, time
        atexit.register(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.2)))
        from customops.cli.main import entry
        sys.argv = ["customops", "ops", "--json"]
        sys.exit(entry())
        """
    )
    assert proc.returncode in (0, 143), (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
