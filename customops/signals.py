"""SIGINT and SIGTERM held back where a signal would cut a step that must not be cut in two.

:func:`signals_held` holds them around one short step; :func:`import_held` around the import of the
packages with compiled parts. A KeyboardInterrupt raised while one of those starts (ONNX Runtime's and
onnx's pybind11 modules call back into Python as they start) turns into ``ImportError: initialization
failed``, an abort or a segmentation fault, at once or at exit, never into Ctrl-C.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Iterator

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals held back."""


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while a short step that must not be cut in two runs: a signal that
    comes meanwhile is recorded, and handled as it would have been (its handler raises) right after.
    (Blocking the signal in this thread would not do: the process has other threads to deliver it to.)"""
    foreign = any(signal.getsignal(sig) is None for sig in HELD_SIGNALS)  # set outside Python: left alone
    if foreign or threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: came.append(signum)) for sig in HELD_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in came:  # the first that is not ignored (SIGINT is, in a script's background job)
            handler = previous[sig]
            if callable(handler):
                handler(sig, None)
                break
            if handler == signal.SIG_DFL:
                signal.raise_signal(sig)
                break


NATIVE_PACKAGES = ("numpy", "onnx", "onnxruntime", "customops.extensions")
"""The packages with compiled parts the command line uses in its own process (onnxruntime-extensions
through customops.extensions, which keeps the environment as it was; numba is imported, held, by
customops.accel.jit when a first loop is needed)."""


def import_held(names: tuple[str, ...] = NATIVE_PACKAGES) -> None:
    """Import the packages ``names``, each whole, with SIGINT and SIGTERM held back; a signal that came
    meanwhile is handled right after. Called by the command line before its command, never on import."""
    with signals_held():
        for name in names:
            importlib.import_module(name)
