"""A side's child dies with the process that started it, whatever ends that process (a second SIGTERM
while the command is ending its children, SIGKILL, a crash).

On Linux the child asks the kernel for SIGKILL when its parent goes (``prctl(PR_SET_PDEATHSIG)``, the first
thing it does: :func:`die_with_parent`), then checks that its parent is still the process that started it
(one that died before the request was made left the child to init). The kernel sends that signal when the
*thread* that started the child ends, not the process: :func:`started` therefore starts every child from
the main thread or, called on any other thread (the fuzzer's lanes restart a crashed side on theirs), from
one thread of this module that lives as long as the process. Elsewhere (macOS) nothing is asked: the
children then end when they read the end of their connection.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal this process gets when its parent thread ends (linux/prctl.h)."""


def die_with_parent(parent: int) -> None:
    """In a child just started by ``parent`` (a process id): be killed when it ends; end now if it has
    already (this process then has another parent). Nothing where prctl(2) is not available."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        asked = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no C library or no prctl to call
        return
    if asked and os.getppid() != parent:  # it ended before prctl was asked: no signal will come
        os._exit(1)


_REQUESTS: queue.Queue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.Queue()
_STARTER: list[threading.Thread] = []
_LOCK = threading.Lock()


def started(start: Callable[[], T]) -> T:
    """``start()`` (which forks or spawns a child), run on a thread that lives as long as this process
    (module docstring): on this one if it is the main thread, else on this module's starter thread,
    waiting for it; an exception of ``start`` is raised here."""
    if threading.current_thread() is threading.main_thread():
        return start()
    with _LOCK:
        if not _STARTER:
            thread = threading.Thread(target=_serve, name="customops-child-starter", daemon=True)
            thread.start()
            _STARTER.append(thread)
    answer: list[Any] = []
    done = threading.Event()
    _REQUESTS.put((start, answer, done))
    done.wait()
    result, error = answer
    if error is not None:
        raise error
    return result


def _serve() -> None:
    """The starter thread: run each start asked of it, forever (a daemon: it ends with the process)."""
    while True:
        start, answer, done = _REQUESTS.get()
        try:
            answer[:] = [start(), None]
        except BaseException as exc:  # handed to the thread that asked
            answer[:] = [None, exc]
        finally:
            done.set()
