"""Checks of integer inputs that several kernels share (Pad, CenterCropPad, Col2Im): a 1-D integer tensor
as a list of ints, and ONNX's ``axes`` convention (negative axes count from the back, no repeats)."""

from __future__ import annotations

from typing import Any

import numpy as np

from customops.errors import KernelError


def is_absent(value: Any) -> bool:
    """True for an optional input that was not given: None or an empty array."""
    return value is None or np.asarray(value).size == 0


def int_list(value: Any, name: str) -> list[int]:
    """A 1-D integer tensor (or sequence of ints) as a list of Python ints; raises KernelError naming
    ``name`` otherwise."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise KernelError(f"{name} must be a 1-D tensor, got shape {arr.shape!r}")
    if arr.size and arr.dtype.kind not in "iu":
        raise KernelError(f"{name} must hold integers, got dtype {str(arr.dtype)!r}")
    return [int(v) for v in arr.tolist()]


def normalize_axes(axes: Any, rank: int, name: str = "axes") -> list[int]:
    """Axes in [-rank, rank-1] as non-negative ints; absent (None or empty) means every axis. Raises
    KernelError for an axis out of range or one given twice."""
    if is_absent(axes):
        return list(range(rank))
    raw = int_list(axes, name)
    out = []
    for a in raw:
        if not -rank <= a < rank:
            raise KernelError(f"{name} value {a!r} is out of range [{-rank}, {rank - 1}] for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise KernelError(f"{name} {raw!r} refer to the same axis more than once")
    return out
