"""The one guard on output sizes: :func:`check_output`.

Every kernel calls it with its output's shape and dtype before allocating anything, and the ONNX Runtime
hook (customops.bridge.hook) calls it again with each result of :data:`CHECKED` bytes or more before handing
it to the layer (see its docstring for what the layer cannot hold). Kernels allocate their outputs with
plain numpy.
"""

from __future__ import annotations

import math
import os
import resource
from typing import Any

import numpy as np

from customops.errors import KernelError

LAYER_STRINGS = 2**31 - 1
"""The most strings a tensor may hold to cross onnxruntime-extensions' Python-op layer, which indexes a
string input with a C ``int`` (pyop/pyfunc.cc, ``BuildPyArrayFromTensor``)."""
STRING_COPY = 64
"""Bytes the layer allocates per string it takes from us, characters aside: a ``std::string`` in its own
vector and one in ONNX Runtime's tensor."""
CHECKED = 1 << 20
"""Output bytes from which :func:`check_output` asks how much memory the process can still allocate
(a few system calls; smaller outputs only get the arithmetic checks)."""

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes ({} where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    values = {}
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            values[name] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return values


def _overcommit_mode() -> int:
    try:
        with open("/proc/sys/vm/overcommit_memory", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 1


_OVERCOMMIT = _overcommit_mode()
_INFO = _meminfo()
_ONE_ALLOCATION = _INFO.get("MemTotal", 0) + _INFO.get("SwapTotal", 0) if _OVERCOMMIT == 0 else 0
"""With the kernel's heuristic overcommit (mode 0), the largest single allocation it grants."""


def _statm() -> tuple[int, int]:
    """(virtual size, data size) of this process in bytes, from /proc/self/statm."""
    with open("/proc/self/statm", encoding="ascii") as f:
        fields = f.read().split()
    return int(fields[0]) * _PAGE, int(fields[5]) * _PAGE


def headroom() -> tuple[int, str] | None:
    """The bytes this process can still allocate and the limit that says so (``RLIMIT_AS``,
    ``RLIMIT_DATA`` or the kernel's commit limit under strict overcommit), or None when none of them
    applies (then only RAM itself limits, and running out of it ends in the OOM killer, not in a failed
    allocation)."""
    found: list[tuple[int, str]] = []
    as_limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    data_limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    if as_limit != resource.RLIM_INFINITY or data_limit != resource.RLIM_INFINITY:
        size, data = _statm()
        if as_limit != resource.RLIM_INFINITY:
            found.append((as_limit - size, "RLIMIT_AS"))
        if data_limit != resource.RLIM_INFINITY:
            found.append((data_limit - data, "RLIMIT_DATA"))
    if _OVERCOMMIT == 2:
        info = _meminfo()
        found.append((info.get("CommitLimit", 0) - info.get("Committed_AS", 0), "the commit limit"))
    return min(found) if found else None


def check_output(shape: tuple[int, ...], dtype: Any, allocated: bool = False) -> None:
    """Raise KernelError when an output of ``shape`` and ``dtype`` cannot cross the ONNX Runtime layer.

    The layer (onnxruntime-extensions, pyop/pyfunc.cc) asks ONNX Runtime for a tensor of the output's
    shape after our kernel returns, while our array still lives, and copies into it; a failed
    allocation there is a C++ exception that aborts the process. So an output needs its bytes twice
    (``allocated``: ours exist already), which must fit in what :func:`headroom` says is left and, under
    heuristic overcommit, in one allocation of at most RAM plus swap; a string tensor also holds at
    most LAYER_STRINGS elements. Sizes are exact Python integers: nothing overflows here.
    """
    dtype = np.dtype(dtype)
    count = math.prod(shape)
    if count == 0 and math.prod(d for d in shape if d) * dtype.itemsize >= 1 << 63:
        # numpy refuses such a shape even with no element ("array is too big")
        raise KernelError(
            f"output {'x'.join(map(str, shape))} is larger than any array can be, even with no element"
        )
    own = count * dtype.itemsize
    strings = dtype.kind in "OSU"
    if own < CHECKED and not strings:
        return
    layer = count * (STRING_COPY if strings else dtype.itemsize)
    what = f"output {'x'.join(map(str, shape)) or 'scalar'} {'string' if strings else dtype.name}"
    if strings and count > LAYER_STRINGS:
        raise KernelError(
            f"{what} has {count} strings; ONNX Runtime's Python-op layer takes at most {LAYER_STRINGS}"
        )
    if _ONE_ALLOCATION and layer > _ONE_ALLOCATION:
        raise KernelError(
            f"{what} is {layer} bytes; the largest allocation this machine grants is {_ONE_ALLOCATION}"
        )
    if own < CHECKED:
        return
    left = headroom()
    need = layer if allocated else own + layer
    if left is not None and need > left[0]:
        raise KernelError(
            f"{what} needs {need} bytes ({'' if allocated else 'ours and '}ONNX Runtime's copy of it) "
            f"and this process can allocate {max(left[0], 0)} more ({left[1]})"
        )
