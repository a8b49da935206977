"""Opt-in allocator policy for large tensors: ``CUSTOMOPS_MALLOC=heap``.

glibc's malloc serves blocks above its mmap threshold (at most 32 MiB) with fresh ``mmap`` pages and
returns them to the system on ``free``. onnxruntime-extensions copies every input of a custom node into a
new numpy array and our kernels allocate their outputs, so with tensors above that size every call
faults in and zeroes fresh pages: a 37.7 MB copy then runs at about half the speed of a 16 MB one
(docs/performance.md). With ``CUSTOMOPS_MALLOC=heap`` in the environment, importing
:mod:`customops.runtime` tells glibc to serve every block from its heap and to keep freed memory
(``mallopt(M_MMAP_MAX, 0)``, ``mallopt(M_TRIM_THRESHOLD, 1 GiB)``), so the next call reuses pages that
are already mapped. The price: the process keeps its peak heap instead of giving memory back, for every
allocation in the process, not only ours. That suits a tool process (``customops compare``, a test run,
a benchmark); in a long-lived service, decide for yourself. Off by default; without glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_KEEP_BYTES = 1 << 30

_state: dict[str, str] = {}


def policy() -> str:
    """The allocator policy in effect: ``"default"``, ``"heap"``, or why ``heap`` was not applied."""
    return _state.get("policy", "default")


def apply_from_environment() -> str:
    """Apply ``CUSTOMOPS_MALLOC`` once (``heap``, or ``default``/unset); returns :func:`policy`."""
    if "policy" in _state:
        return _state["policy"]
    wanted = os.environ.get("CUSTOMOPS_MALLOC", "").strip().lower()
    if wanted in ("", "default"):
        _state["policy"] = "default"
    elif wanted != "heap":
        _state["policy"] = f"default (CUSTOMOPS_MALLOC={wanted!r} is not 'heap' or 'default')"
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
