"""The compile seam of the compiled loops (numba), with a numpy fallback.

The loops live in the ``*_loops`` modules of this package and of its family packages (resampling,
padding, spatial, quantized) as plain Python functions; :func:`get` compiles one with ``numba.njit`` on
first use, with an on-disk cache (``cache=True``: ``__pycache__`` beside the loop's module when it is
writable, else numba's user-wide cache directory; where neither is writable the function is compiled in
memory on every process start), after the helpers its module names. Every loop is compiled with
``nogil=True`` and without ``fastmath`` (no reassociation, no FMA contraction), so results do not depend
on vector width; :mod:`customops.accel.parallel` runs ranges of a loop on several threads (numba's own
parallel regions gave mixed results here: their workers compete with ORT's intra-op threads;
docs/performance.md).

``CUSTOMOPS_JIT=0`` in the environment disables the compiled paths (the numpy implementations run) for
the whole process; :func:`numpy_only` does so for a block of code (the tests' one switch).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from customops.accel import plans
from customops.signals import signals_held

BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
"""The unsigned integer type of each element width: the loops that only copy (Resize's nearest gather,
Pad's rows) move any numeric type as these."""

_lock = threading.Lock()
_compiled: dict[str, Callable[..., Any]] = {}
_state: dict[str, Any] = {"checked": False, "numba": None, "error": None, "cache": None}
_announce: dict[str, Any] = {"stream": None, "pid": None, "said": False}
_numpy_only = 0
"""How many :func:`numpy_only` blocks are open, on any thread: while any is, no compiled path runs."""
_switch_lock = threading.Lock()

COMPILING = (
    "compiling the kernels' loops for their first use here (numba: a few seconds each; kept on disk for "
    "later runs)"
)


def announce_compilation(stream: Any) -> None:
    """Write :data:`COMPILING` to ``stream``, once, when numba starts compiling one of our loops in this
    process (not when it loads one from its on-disk cache): the command line's progress note for the
    seconds a first run on a machine spends there. Child processes stay silent. ``None`` stops the notes
    (the command line does so when its command ends)."""
    _announce.update(stream=stream, pid=os.getpid())


def announcing() -> bool:
    """Whether this process writes the note of a first compilation (see :func:`announce_compilation`)."""
    return _announce["stream"] is not None and _announce["pid"] == os.getpid()


def _listen(numba: Any) -> None:
    """Have numba's compile events drive :func:`announce_compilation` (a cosmetic note: skipped if this
    numba has no event API)."""
    try:
        from numba.core import event
    except Exception:  # pragma: no cover - numba without its event API
        return

    class FirstCompile(event.Listener):  # type: ignore[misc]
        def on_start(self, ev: Any) -> None:
            stream = _announce["stream"]
            if stream is None or _announce["said"] or os.getpid() != _announce["pid"]:
                return
            data = ev.data if isinstance(ev.data, dict) else {}
            module = getattr(getattr(data.get("dispatcher"), "py_func", None), "__module__", "") or ""
            if module.startswith("customops."):
                _announce["said"] = True
                # a note only: a stream closed since (a test's captured stderr) must not fail the kernel
                with contextlib.suppress(ValueError, OSError):
                    print(COMPILING, file=stream, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    event.register("numba:compile", FirstCompile())


def _numba() -> Any:
    """The numba module, or None when it is missing, broken, or disabled by CUSTOMOPS_JIT=0."""
    if _state["checked"]:
        return _state["numba"]
    with _lock:
        if not _state["checked"]:
            if os.environ.get("CUSTOMOPS_JIT", "1").strip().lower() in ("0", "false", "no", "off"):
                _state["error"] = "disabled by CUSTOMOPS_JIT=0"
            else:
                try:
                    with signals_held():  # a Ctrl-C while numba starts must wait until it has
                        import numba

                    _state["numba"] = numba
                    _listen(numba)
                except Exception as exc:  # ImportError, or a numba that rejects this numpy
                    _state["error"] = f"numba unavailable: {type(exc).__name__}: {exc}"
            _state["checked"] = True
    return _state["numba"]


FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
"""The element types the float kernels' compiled loops are compiled for (others take the numpy path)."""


def enabled() -> bool:
    """Whether the compiled paths are used (False without numba, under CUSTOMOPS_JIT=0, and while a
    :func:`numpy_only` block is open)."""
    return not _numpy_only and _numba() is not None


@contextlib.contextmanager
def numpy_only() -> Iterator[None]:
    """While open, every kernel takes its numpy path, on every thread (the switch is process-wide;
    blocks may nest or overlap). Entering and leaving empty the bound kernels' plan caches
    (:func:`customops.accel.plans.forget_all`), which keep a compiled loop or its absence: a plan made
    inside is not used outside, nor the reverse. A call already running when the switch flips finishes
    on the path it took. For whole processes, ``CUSTOMOPS_JIT=0``."""
    global _numpy_only
    with _switch_lock:
        _numpy_only += 1
        plans.forget_all()
    try:
        yield
    finally:
        with _switch_lock:
            _numpy_only -= 1
            plans.forget_all()


def get(name: str, module: Any) -> Callable[..., Any] | None:
    """The compiled version of the function ``name`` of ``module`` (one of the ``*_loops`` modules), or
    None without numba or inside :func:`numpy_only`. The functions the module names in its ``HELPERS``
    are compiled first (its loops call them: compiled code must call compiled code), inlined unless also
    in its ``OUT_OF_LINE`` (compiled once as functions of their own, only ever called from compiled code:
    no Python wrappers). A module's ``ERROR_MODEL`` ("numpy": a float division by 0 gives inf, as
    IEEE says, instead of raising, so that a loop dividing by a value that is never 0 is vectorized)
    applies to its loops; "python" otherwise."""
    key = f"{module.__name__}.{name}"
    fn = _compiled.get(key)
    if fn is not None and not _numpy_only:
        return fn
    if _numpy_only:
        return None
    numba = _numba()
    if numba is None:
        return None
    with _lock:
        if not getattr(module, "_jit_helpers_done", False):
            out_of_line = getattr(module, "OUT_OF_LINE", ())
            for helper in getattr(module, "HELPERS", ()):
                fn = getattr(module, helper)
                if helper in out_of_line:
                    setattr(module, helper, _njit(numba, fn, wrappers=False))
                else:
                    setattr(module, helper, _njit(numba, fn, inline="always"))
            module._jit_helpers_done = True
        fn = _compiled.get(key)
        if fn is None:
            fn = _njit(numba, getattr(module, name), error_model=getattr(module, "ERROR_MODEL", "python"))
            _compiled[key] = fn
    return fn


def _njit(
    numba: Any,
    py_func: Callable[..., Any],
    inline: str = "never",
    wrappers: bool = True,
    error_model: str = "python",
) -> Callable[..., Any]:
    options = {"boundscheck": False, "nogil": True, "inline": inline, "error_model": error_model}
    if not wrappers:  # a helper only compiled code calls: no entry point from Python or as a C callback
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    try:
        fn = numba.njit(cache=True, **options)(py_func)
        _state["cache"] = _state["cache"] or "on disk"
    except RuntimeError:  # "cannot cache function ...: no locator available" (read-only directories)
        fn = numba.njit(cache=False, **options)(py_func)
        _state["cache"] = "in memory only (no writable cache directory)"
    return fn


def describe() -> dict[str, Any]:
    """For reports: whether the compiled paths are on, with which numba."""
    numba = _numba()
    if numba is None:
        return {"jit": f"numpy only ({_state['error']})", "numba": None}
    if _numpy_only:
        return {"jit": "numpy only (inside jit.numpy_only)", "numba": None}
    cache = _state["cache"] or "no loop compiled yet in this process"
    return {"jit": f"numba {numba.__version__}", "numba": numba.__version__, "jit_cache": cache}
