"""How large tensors get their memory: recycling during our runs (the default), or glibc's heap.

glibc's malloc serves blocks above its mmap threshold (at most 32 MiB) with fresh ``mmap`` pages and
returns them to the system on ``free``. onnxruntime-extensions copies every input of a custom node into a
new numpy array and our kernels allocate their outputs, so with tensors above that size every call
faults in and zeroes fresh pages: a 37.7 MB copy then runs at about half the speed of a 16 MB one
(docs/performance.md).

``CUSTOMOPS_MALLOC`` in the environment (read once) chooses what happens:

* unset or ``default``: **recycling**. While :class:`customops.InferenceSession` runs a model, numpy
  allocates array memory through a handler of ours (:func:`recycler`) that keeps the last eight freed
  blocks of 32 MiB or more (512 MiB in all at most) and hands one out again for a request of exactly
  its size; everything else goes to numpy's own allocator. A session does so in runs whose inputs hold
  an array of 32 MiB or more, and in every run after one in which one of our nodes met an input or
  output of that size: sessions with small tensors only do not pay for setting numpy's variable (1-2
  µs a run). The layer's copies of large inputs and our large outputs then land in pages that are
  already mapped, also in a model with several large tensors of different sizes. The price: up to 512 MiB of freed blocks stay
  allocated. It needs numba (not with ``CUSTOMOPS_JIT=0``) and a Python with a GIL; plain
  ``onnxruntime`` sessions do not get it (their runs are not ours to wrap). Outside our runs, the
  kernels' own large outputs are recycled per thread instead (customops.kernels._alloc), in any
  caller.
* ``heap``: importing :mod:`customops.runtime` tells glibc to serve every block from its heap and to
  keep freed memory (``mallopt(M_MMAP_MAX, 0)``, ``mallopt(M_TRIM_THRESHOLD, 1 GiB)``), for every
  allocation of the process, not only ours: the process keeps its peak heap. Nothing is recycled
  (the heap keeps freed memory itself). Without glibc it does nothing.
* ``off``: neither, and no recycling of the kernels' outputs: every buffer is freshly allocated.
"""

from __future__ import annotations

import contextvars
import ctypes
import os
import sys
import threading
from typing import Any, NamedTuple

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_KEEP_BYTES = 1 << 30

_state: dict[str, Any] = {}
_lock = threading.Lock()


def _wanted() -> str:
    """The value of CUSTOMOPS_MALLOC: 'default', 'heap', 'off', or the unknown value given."""
    return os.environ.get("CUSTOMOPS_MALLOC", "").strip().lower() or "default"


def policy() -> str:
    """The allocator policy in effect: ``"default"`` (recycling), ``"heap"``, ``"off"``, or why the
    one asked for was not applied."""
    if "policy" not in _state:
        apply_from_environment()
    return _state["policy"]


def recycling() -> bool:
    """Whether large buffers are recycled (the default policy)."""
    return policy().split(" ", 1)[0] == "default"


def apply_from_environment() -> str:
    """Apply ``CUSTOMOPS_MALLOC`` once (unset/``default``, ``heap`` or ``off``); returns :func:`policy`."""
    if "policy" in _state:
        return _state["policy"]
    wanted = _wanted()
    if wanted in ("default", "off"):
        _state["policy"] = wanted
    elif wanted != "heap":
        _state["policy"] = f"default (CUSTOMOPS_MALLOC={wanted!r} is not 'default', 'heap' or 'off')"
    else:
        _state["policy"] = _use_heap()
    return _state["policy"]


def _use_heap() -> str:
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: mallopt's codes differ elsewhere
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return "default (CUSTOMOPS_MALLOC=heap needs glibc)"
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES) != 1 or mallopt(_M_MMAP_MAX, 0) != 1:
        return "default (glibc refused the mallopt settings)"
    return "heap"


# ---------------------------------------------------------------------------------------------
# The recycling handler

_HANDLER_NAME = b"customops_recycle_large"
_SET_HANDLER_SLOT = 304  # PyDataMem_SetHandler in numpy's C API table (numpy >= 1.22)


class _Allocator(ctypes.Structure):
    _fields_ = [
        ("ctx", ctypes.c_void_p),
        ("malloc", ctypes.c_void_p),
        ("calloc", ctypes.c_void_p),
        ("realloc", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
    ]


class _Handler(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("allocator", _Allocator)]


class Recycler(NamedTuple):
    """The recycling handler: setting ``var`` to ``handler`` routes numpy's allocations in that context
    through it, and resetting the variable ends that. ``delegate`` is the handler it passes everything
    else to (numpy's own, normally): runs set ``var`` only where it holds ``delegate``, so a handler
    that someone else installed stays in charge."""

    var: contextvars.ContextVar[Any]
    handler: Any
    delegate: Any


def recycler() -> Recycler | None:
    """The recycling handler, or None when the policy is not the default or this process cannot have
    it (see the module docstring; why: :func:`recycler_state`). Built once."""
    if "recycler" in _state:
        return _state["recycler"]
    with _lock:
        if "recycler" not in _state:
            try:
                _state["recycler"] = _build_recycler()
            except Exception as exc:  # numba, numpy or ctypes not as expected: go without
                _state["recycler"] = None
                _state["recycler_note"] = f"unavailable: {type(exc).__name__}: {exc}"
    return _state["recycler"]


def recycling_here() -> bool:
    """Whether numpy allocates through the recycling handler in the current context (during our
    session runs)."""
    found = _state.get("recycler")
    return found is not None and found.var.get() is found.handler


def recycler_state() -> str:
    """For reports: whether the recycling handler is in use, or why not."""
    recycler()
    return _state.get("recycler_note", "in use")


def recycled_counts() -> dict[str, int]:
    """The handler's counters: requests served from a kept block ('hits'), blocks kept when freed
    ('kept'), kept blocks given back to make room ('released'), and the bytes it keeps now
    ('held_bytes'). Zero without the handler."""
    array = _state.get("recycler_array")
    if array is None:
        return {"hits": 0, "kept": 0, "released": 0, "held_bytes": 0}
    from customops import _recycler as r

    return {
        "hits": int(array[r.HITS]),
        "kept": int(array[r.KEPT]),
        "released": int(array[r.RELEASED]),
        "held_bytes": int(array[r.HELD]),
    }


def _build_recycler() -> Recycler | None:
    if not recycling():
        _state["recycler_note"] = f"off (CUSTOMOPS_MALLOC policy {policy()!r})"
        return None
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        _state["recycler_note"] = "off (it relies on the GIL, which this Python runs without)"
        return None
    from customops.kernels import _jit

    if not _jit.enabled():
        _state["recycler_note"] = f"off (it needs numba; kernels: {_jit.describe()['jit']})"
        return None
    import numpy as np

    major = int(np.__version__.split(".")[0])
    if major not in (1, 2):  # the C API slot below is checked against numpy 1.x and 2.x headers
        _state["recycler_note"] = f"unavailable: numpy {np.__version__} is not one this was checked against"
        return None
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath  # type: ignore[no-redef]

    from customops import _recycler as r

    # prototypes of our own, so that ctypes.pythonapi's shared function objects keep their settings
    get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi)
    )
    new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
        ("PyCapsule_New", ctypes.pythonapi)
    )
    table = ctypes.cast(get_pointer(_multiarray_umath._ARRAY_API, None), ctypes.POINTER(ctypes.c_void_p))
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[_SET_HANDLER_SLOT])

    addresses = r.compile_functions()
    state = np.zeros(r.STATE_SIZE, dtype=np.uint64)
    name = ctypes.create_string_buffer(b"mem_handler")  # the capsule keeps this pointer: kept alive below
    handler = _Handler(_HANDLER_NAME, 1, _Allocator(state.ctypes.data, *addresses.values()))
    capsule = new_capsule(ctypes.addressof(handler), name, None)

    # install it once to learn numpy's ContextVar and the handler it replaces, then put that one back
    previous = set_handler(capsule)
    try:
        found = [var for var, value in contextvars.copy_context().items() if value is capsule]
    finally:
        set_handler(previous)
    if len(found) != 1:
        _state["recycler_note"] = "unavailable: numpy's handler variable was not found"
        return None
    delegate = _Handler.from_address(get_pointer(previous, b"mem_handler"))
    if delegate.version != 1:
        _state["recycler_note"] = f"unavailable: numpy's handler has version {delegate.version}, not 1"
        return None
    fns = delegate.allocator
    state[: r.SLOTS] = [fns.ctx or 0, fns.malloc, fns.calloc, fns.realloc, fns.free]
    _state.update(recycler_array=state, recycler_parts=(handler, name, previous))
    return Recycler(found[0], capsule, previous)
