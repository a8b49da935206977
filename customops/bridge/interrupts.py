"""Ctrl-C and SystemExit around the invocation hook, which must never let an exception into
onnxruntime-extensions' layer (anything escaping the hook aborts the process).

KeyboardInterrupt and SystemExit are never taken for kernel failures: the run in progress stops after
the node and raises the same exception once ONNX Runtime has returned (:func:`stop`). Ctrl-C goes through
:func:`_on_sigint`, installed in place of Python's default handler (:func:`install_sigint`), which raises
KeyboardInterrupt only where the hook catches it: it reads the interrupted frames, and the hooks the
layer calls make themselves known with :func:`watch_hooks`. Where no run of ours can be stopped, the
KeyboardInterrupt is raised in the main thread again once it has left the hook (:func:`_redeliver`).
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import CodeType
from typing import Any

from customops.bridge import routing

_HOOK_CODES: set[CodeType] = set()
"""The code of the hooks the layer calls (ours, and others through the guarded hook)."""
_UNGUARDED: set[CodeType | None] = set()
"""Code run by a hook outside its ``try``: an exception raised in it would reach the layer."""


def watch_hooks(hooks: Iterable[Callable[..., Any]], unguarded: Iterable[Callable[..., Any]]) -> None:
    """Make ``hooks`` known as hooks the layer calls, which catch every exception raised under them
    except in the functions ``unguarded`` they call outside their ``try`` (a callable without Python
    code counts as none): :func:`_on_sigint` raises KeyboardInterrupt under them only where it is
    caught. The hook module calls this as it is imported, before any handler of ours is installed."""
    _HOOK_CODES.update(hook.__code__ for hook in hooks)
    _UNGUARDED.update(getattr(function, "__code__", None) for function in unguarded)


def _unguarded(frame: Any) -> bool:
    """Whether an exception raised in ``frame`` could escape our hook into the layer: ``frame`` is the
    innermost hook itself, or runs under it outside its ``try``, or under a call of :func:`_on_sigint`
    (a second signal landing while the handler of a first one works: the first may have landed outside
    the ``try``, and an exception would leave the handler there)."""
    child, handling = None, False
    while frame is not None:
        if frame.f_code in _HOOK_CODES:
            return child is None or child.f_code in _UNGUARDED or handling
        handling = handling or frame.f_code is _on_sigint.__code__
        child, frame = frame, frame.f_back
    return False


def _in_hook(frame: Any) -> bool:
    """Whether ``frame`` runs under our hook."""
    while frame is not None:
        if frame.f_code in _HOOK_CODES:
            return True
        frame = frame.f_back
    return False


def _on_sigint(signum: int, frame: Any) -> None:
    """SIGINT, in place of Python's default handler: KeyboardInterrupt, except where it could escape our
    hook into the layer (which aborts the process); there it stops the run in progress instead
    (:func:`stop`). Interrupted inside a kernel, the kernel stops at once (the hook catches it)."""
    if _unguarded(frame):
        stop(KeyboardInterrupt())
        return
    raise KeyboardInterrupt


def install_sigint() -> None:
    """Put :func:`_on_sigint` in place of Python's default SIGINT handler: from the main thread only,
    and never over a handler someone else installed."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def stop(exc: BaseException) -> None:
    """A KeyboardInterrupt or SystemExit met in the hook: the run of ours in progress on this thread stops
    after the node and raises it once ONNX Runtime returns (:func:`routing.stop_run`). A run we have no
    handle on goes on; a KeyboardInterrupt is raised in the main thread again once it has left the hook
    (:func:`_redeliver`), a SystemExit is reported as the node's failure."""
    if routing.stop_run(exc):
        return
    if isinstance(exc, KeyboardInterrupt) and signal.getsignal(signal.SIGINT) is _on_sigint:
        _redeliver()
    else:
        routing.report(f"{type(exc).__name__} raised in a kernel: {exc}")


_delivering = threading.Lock()


def _redeliver() -> None:
    """Raise KeyboardInterrupt in the main thread again once it has left our hook, from a new thread
    (at most one at a time): for runs we have no handle on. :func:`_on_sigint` takes it."""
    if _delivering.acquire(blocking=False):
        threading.Thread(target=_deliver, name="customops-interrupt", daemon=True).start()


def _deliver() -> None:
    try:
        main = threading.main_thread().ident
        while _in_hook(sys._current_frames().get(main)):
            time.sleep(0.001)
        _thread.interrupt_main()
    finally:
        _delivering.release()
