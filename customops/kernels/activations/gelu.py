"""ONNX Gelu as the registry names its kernel: customops.kernels.activations.gaussian.gelu on X's real element
type (customops.kernels.activations.carried), and ``bind``, what the ONNX Runtime hook calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations import gaussian
from customops.kernels.activations.carried import bound

__all__ = ["bind", "gelu"]


def gelu(X: Any, approximate: str = "none", elem_type: str = "") -> np.ndarray:
    """Gelu of X, whose real element type is ``elem_type`` ('': X's own; float16 or bfloat16 carried as float)."""
    return bound(gaussian.gelu, elem_type, approximate=approximate)(X)


def bind(approximate: str = "none", elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``gelu`` with its attributes and X's real element type fixed."""
    return bound(gaussian.gelu, elem_type, approximate=approximate)
