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
import threading
import time
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

MEMINFO = "/proc/meminfo"
SELF_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"
"""Where :func:`machine_room` reads what the machine can give now: the kernel's memory counters, this
process's control groups and where they are mounted. The one seam for tests: they point these at files
of their own (tests/hostile/test_layer_limits.py) to play a machine under memory pressure."""

UNLIMITED_CGROUP = 1 << 62
"""A cgroup v1 memory limit from which it means none (the kernel writes 2**63 less a page)."""


def _meminfo() -> dict[str, int]:
    """/proc/meminfo (:data:`MEMINFO`) in bytes ({} where there is none)."""
    try:
        with open(MEMINFO, encoding="ascii") as f:
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


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):  # absent, or "max"
        return None


def _cgroup_dirs(base: str, path: str) -> list[str]:
    """The directories of the cgroup ``path`` under the mount ``base`` and of each cgroup above it (a
    limit anywhere up the tree binds), deepest first."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return [os.path.join(base, *parts[:n]) for n in range(len(parts), -1, -1)]


def _cgroup_room() -> list[tuple[int, str]]:
    """Each memory limit of this process's control groups less their usage (cgroup v2 ``memory.max`` -
    ``memory.current``; v1 ``memory.limit_in_bytes`` - ``memory.usage_in_bytes``), with the file that
    sets it. Past a cgroup's limit the kernel's OOM killer ends a process, or an allocation fails."""
    try:
        with open(SELF_CGROUP, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":
            base, limit_file, usage_file = CGROUP_ROOT, "memory.max", "memory.current"
        elif "memory" in controllers.split(","):
            base, limit_file, usage_file = (
                os.path.join(CGROUP_ROOT, "memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        else:
            continue
        for directory in _cgroup_dirs(base, path):
            limit = _read_int(os.path.join(directory, limit_file))
            usage = _read_int(os.path.join(directory, usage_file))
            if limit is not None and usage is not None and limit < UNLIMITED_CGROUP:
                found.append(
                    (limit - usage, f"the memory cgroup's limit, {os.path.join(directory, limit_file)}")
                )
    return found


def machine_room() -> list[tuple[int, str]]:
    """What the machine can give this process now, and what says so: the memory available without
    pushing other processes out (``MemAvailable`` and ``SwapFree`` of /proc/meminfo) and the room left
    under each memory cgroup limit. Others may hold most of the memory: an allocation past this is then
    refused by the kernel (a C++ exception in the layer: an abort) or answered by its OOM killer."""
    info = _meminfo()
    found = _cgroup_room()
    if "MemAvailable" in info:
        found.append(
            (info["MemAvailable"] + info.get("SwapFree", 0), "the memory available now (MemAvailable)")
        )
    return found


def headroom() -> tuple[int, str] | None:
    """The bytes this process can still allocate and the limit that says so (``RLIMIT_AS``,
    ``RLIMIT_DATA``, the kernel's commit limit under strict overcommit, or what the machine can give
    now: :func:`machine_room`), or None when none of them can be read (no /proc: then only RAM itself
    limits)."""
    found: list[tuple[int, str]] = machine_room()
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


FRESH = 0.05
"""Seconds a reading of :func:`headroom` answers for later outputs that need at most 1/:data:`MARGIN` of
what it found (reading /proc and the cgroup files costs about 0.1 ms: a model of a hundred quantized
nodes read them twice per node, 15 % of its run). A larger output, an older reading, or one taken under
other resource limits or from other sources (the tests' seams) reads again."""
MARGIN = 8

_recent: dict[str, Any] = {"at": -math.inf, "left": None, "files": None}
_recent_lock = threading.Lock()


def _headroom_for(need: int) -> tuple[int, str] | None:
    """:func:`headroom`, or a reading of it younger than :data:`FRESH` seconds of the same files that
    leaves ``need`` bytes :data:`MARGIN` times over."""
    files = (
        MEMINFO,
        SELF_CGROUP,
        CGROUP_ROOT,
        headroom,
        resource.getrlimit(resource.RLIMIT_AS),
        resource.getrlimit(resource.RLIMIT_DATA),
    )
    now = time.monotonic()
    with _recent_lock:
        left, at, same = _recent["left"], _recent["at"], _recent["files"] == files
    if same and left is not None and now - at < FRESH and need * MARGIN <= left[0]:
        return left
    left = headroom()
    with _recent_lock:
        _recent.update(at=time.monotonic(), left=left, files=files)
    return left


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
    need = layer if allocated else own + layer
    left = _headroom_for(need)
    if left is not None and need > left[0]:
        raise KernelError(
            f"{what} needs {need} bytes ({'' if allocated else 'ours and '}ONNX Runtime's copy of it) "
            f"and this process can allocate {max(left[0], 0)} more ({left[1]})"
        )
