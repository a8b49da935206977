"""Output arrays of the fast kernel paths, with large ones recycled per thread.

glibc's malloc serves blocks above its mmap threshold (at most 32 MiB) with fresh pages on every call,
and the kernel zeroes them as they are first written: for a 33.5 MB Resize output that was about 2 ms
of an 8 ms call (docs/performance.md, "Large tensors and the allocator"). :func:`empty` keeps the
buffers of the last ``KEEP`` large outputs of each thread and hands one out again once nothing else
refers to it: the ONNX Runtime layer copies our result into its own tensor and lets it go before the
next call, while a caller who keeps a result (or a view of it) keeps its buffer out of reuse. Small
outputs are plain ``np.empty``, and so is every output with ``CUSTOMOPS_MALLOC=off``, and every output
made during a ``customops.InferenceSession`` run in which the recycling memory handler of
customops.allocator serves large blocks instead; when a session starts using it (:func:`release`),
this thread's kept buffers are dropped, so the two never keep buffers twice.
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np

from customops import allocator

LARGE = 32 << 20
"""Bytes from which an output is recycled: glibc's largest mmap threshold."""
KEEP = 2
"""Large buffers kept per thread (the most recently used)."""

_local = threading.local()
# references to a cached buffer when only the cache holds it: the cache list, the loop variable and
# getrefcount's own argument
_FREE_REFS = 3


def is_large(shape: tuple[int, ...], dtype: Any) -> bool:
    """Whether an output of ``shape`` and ``dtype`` is recycled by :func:`empty`."""
    return math.prod(shape) * np.dtype(dtype).itemsize >= LARGE and allocator.recycling()


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous array of ``shape`` and ``dtype``: a recycled buffer for large ones
    (see the module docstring), else ``np.empty``."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < LARGE or not allocator.recycling() or allocator.recycling_here():
        return np.empty(shape, dtype=dtype)  # in our session runs, numpy's handler recycles it
    cache: list[np.ndarray] | None = getattr(_local, "buffers", None)
    if cache is None:
        cache = _local.buffers = []
    for i in range(len(cache)):
        buf = cache[i]
        if buf.nbytes == nbytes and sys.getrefcount(buf) == _FREE_REFS:
            cache.append(cache.pop(i))
            return buf.view(dtype).reshape(shape)
    fresh = np.empty(nbytes, dtype=np.uint8)
    cache.append(fresh)
    if len(cache) > KEEP:
        del cache[0]
    return fresh.view(dtype).reshape(shape)


def release() -> None:
    """Drop this thread's kept buffers (a customops.InferenceSession whose runs numpy's recycling
    handler serves from now on: the two never keep buffers twice). Arrays still in use keep theirs."""
    cache = getattr(_local, "buffers", None)
    if cache:
        cache.clear()
