"""The quantized kernels as ONNX Runtime's hook calls them: each kernel module's ``bind``.

onnxruntime-extensions' Python-op layer carries no int4, uint4, int2, uint2, float8 or 16-bit float
tensors, so the translator (customops.model.translate) Casts each such input exactly to its carrier
(customops.registry.BRIDGED_TYPES: int8, uint8 or float) and each such output back. The kernels compute on
the real element types (a float8 output is rounded once to float8, not to float and then again), so the
custom node also carries ``types``: the real element type of each of its inputs, ``-`` for an optional
input the standard node did not give, then ``->`` and the real type of each output. ``bind`` views every
carried input as its real type (exact: it came from that type), passes ``None`` for an absent one, and
hands each output back in its carrier (exact again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels.quantized.arithmetic import ELEMENTS
from customops.registry import layer_carrier

__all__ = ["ABSENT", "binder", "carrier", "parse_types"]

ABSENT = "-"
"""``types``' word for an optional input the standard node did not give."""


def carrier(elem: str) -> np.dtype:
    """The numpy dtype that carries element type ``elem`` through the layer (its bridge type, or itself)."""
    return ELEMENTS[layer_carrier(elem)].dtype


def parse_types(types: str) -> tuple[list[str], list[str]]:
    """(inputs, outputs) of a ``types`` attribute: element type names, :data:`ABSENT` for an input not
    given; raises KernelError for a value the translator does not write."""
    ins, arrow, outs = types.partition(" -> ")
    inputs, outputs = ins.split(), outs.split()
    known = all(t in ELEMENTS for t in outputs) and all(t in ELEMENTS or t == ABSENT for t in inputs)
    if not arrow or not outputs or not known:
        raise KernelError(f"types {types!r} is not 'IN ... -> OUT ...' of the quantization types")
    return inputs, outputs


def _real(value: np.ndarray, elem: str) -> np.ndarray | None:
    """A carried input as its real element type (None when absent)."""
    if elem == ABSENT:
        return None
    dtype = ELEMENTS[elem].dtype
    return value if value.dtype == dtype else value.astype(dtype)


def _carried(value: np.ndarray, elem: str) -> np.ndarray:
    """A kernel's output of element type ``elem`` in its carrier, C-contiguous (a 0-d array stays 0-d,
    which numpy's ascontiguousarray would make 1-d)."""
    arr = np.asarray(value, dtype=carrier(elem))
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def binder(kernel: Callable[..., Any]) -> Callable[..., Callable[..., Any]]:
    """The ``bind`` of a quantized kernel module: ``bind(types=..., version=..., **attributes)`` is the
    kernel with those attributes fixed, taking and giving carried arrays."""

    def bind(*, types: str, version: int, **attributes: Any) -> Callable[..., Any]:
        inputs, outputs = parse_types(types)

        def call(*feed: np.ndarray) -> Any:
            if len(feed) != len(inputs):
                raise KernelError(f"{len(feed)} inputs for types {types!r}")
            result = kernel(*map(_real, feed, inputs), version=version, **attributes)
            if len(outputs) == 1:
                return _carried(result, outputs[0])
            return tuple(map(_carried, result, outputs))

        return call

    return bind
