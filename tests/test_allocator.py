"""``CUSTOMOPS_MALLOC=heap``: large blocks come from glibc's heap instead of fresh mmap pages."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE = textwrap.dedent(
    """
    import ctypes, json
    import numpy as np
    import customops.runtime
    from customops import allocator

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    before = libc.mallinfo2().hblkhd
    big = np.ones(40 * 2**20 // 4, np.float32)  # above glibc's largest mmap threshold (32 MiB)
    mmapped = libc.mallinfo2().hblkhd - before
    print(json.dumps({"policy": allocator.policy(), "mmapped": mmapped, "nbytes": big.nbytes}))
    """
)


def _glibc_with_mallinfo2() -> bool:
    try:
        libc = ctypes.CDLL(None)
        return hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallinfo2")
    except OSError:
        return False


def _probe(value: str | None) -> dict:
    import json

    env = {k: v for k, v in os.environ.items() if k != "CUSTOMOPS_MALLOC"}
    if value is not None:
        env["CUSTOMOPS_MALLOC"] = value
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="needs glibc >= 2.33")
def test_heap_policy_serves_large_blocks_from_the_heap() -> None:
    heap = _probe("heap")
    assert heap["policy"] == "heap"
    assert heap["mmapped"] == 0  # the 40 MiB array lives in the heap
    default = _probe(None)
    assert default["policy"] == "default"
    assert default["mmapped"] >= default["nbytes"]  # glibc's own choice: a fresh mapping


def test_unknown_value_keeps_the_default_and_says_why() -> None:
    result = _probe("bogus")
    assert result["policy"].startswith("default") and "'bogus'" in result["policy"]
    assert _probe("default")["policy"] == "default"
