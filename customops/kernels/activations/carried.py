"""The activations as ONNX Runtime's hook calls them: each operator module's ``bind``.

onnxruntime-extensions' Python-op layer carries no float16 or bfloat16 tensor, so the translator
(customops.model.translate) Casts such an X exactly to float and the result back. Rounding the float32
result again to float16 would round twice (a correctly rounded float32 value can sit on a float16
midpoint that the exact value is not on), so the custom node carries ``elem_type``, X's real element
type: the bound kernel views the carried X as that type (exact: it came from it), computes the result
rounded once to it, and hands it back as float (exact again).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from customops.errors import KernelError

__all__ = ["CARRIED", "bound"]

CARRIED: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
"""The real element types that cross the layer as float, by their ONNX names."""

_OWN = ("", "float", "double")
"""``elem_type`` values of an X that crosses the layer as itself ('': the type of the array given)."""


def bound(
    kernel: Callable[..., np.ndarray], elem_type: str, **attributes: Any
) -> Callable[[Any], np.ndarray]:
    """``kernel`` with ``attributes`` fixed, for an X whose real element type is ``elem_type``; raises
    KernelError for a value the translator does not write."""
    if elem_type in _OWN:
        return functools.partial(kernel, **attributes)
    real = CARRIED.get(elem_type)
    if real is None:
        raise KernelError(f"elem_type {elem_type!r} is not float16, bfloat16, float or double")

    def call(X: Any) -> np.ndarray:
        result = kernel(np.asarray(X).astype(real), **attributes)
        return result.astype(np.float32)

    return call
