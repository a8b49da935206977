"""Float matrix products for the exact integer kernels: BLAS on one thread per call, the rows shared
by customops' own threads (customops.accel.parallel).

The quantized kernels compute exact integer products in float32 or float64 BLAS (every partial sum
provably exact: customops.kernels.quantized.arithmetic). numpy's OpenBLAS splits a product over its own
threads and waits for all of them at a barrier: when another thread holds a core (ONNX Runtime's intra-op
threads spin for some 50 ms after a run that used them; any other process on a busy machine), a product
of 1 ms takes 10 to 40 (a scheduler time slice, measured on the 2-core VM: 240x240 @ 240x960 in float32,
0.4 ms alone, 12 ms with one core busy, 1.4 ms on one BLAS thread). So :func:`matmul` holds OpenBLAS to
one thread for the call (threadpoolctl: the setting is the process's, restored after the call) and cuts
the rows of the product into the pieces customops.accel.parallel hands to its threads one at a time, so
a thread slowed down by other work takes fewer pieces. Each output element is one BLAS dot product of
the same operands whatever the piece it falls in; the integer kernels' results are exact in any order.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from customops.accel import parallel

_lock = threading.Lock()
_state: dict[str, Any] = {"controller": None}


def _controller() -> Any:
    """threadpoolctl's view of the BLAS libraries loaded (made once: it inspects the process's libraries)."""
    with _lock:
        if _state["controller"] is None:
            from threadpoolctl import ThreadpoolController

            _state["controller"] = ThreadpoolController()
        return _state["controller"]


def _rows(a: np.ndarray, b: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
    np.matmul(a[..., start:stop, :], b, out=out[..., start:stop, :])


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``numpy.matmul(a, b)`` of float arrays of one type (at least 2-D; batch axes broadcast), as a new
    array: BLAS on one thread, the rows of the result shared by customops' threads."""
    shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    out = np.empty(shape, dtype=np.result_type(a, b))
    rows, work = a.shape[-2], out.size * a.shape[-1]
    with _controller().limit(limits=1, user_api="blas"):
        parallel.run(_rows, rows, work, a, b, out)
    return out
