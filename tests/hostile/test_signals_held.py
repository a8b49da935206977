"""customops.signals: SIGINT and SIGTERM held back around steps that must not be cut, and handled as they
would have been right after (the command line's use of them: test_interrupts.py).

Each case runs in a child process: the signals are real, sent by the process to itself.
"""

from __future__ import annotations

import signal
import subprocess
import textwrap

from tests.helpers import run_python


def _python(code: str) -> subprocess.CompletedProcess:
    return run_python("-c", textwrap.dedent(code))


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
