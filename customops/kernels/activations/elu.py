"""ONNX Elu as the registry names its kernel: customops.kernels.activations.piecewise.elu on X's real element
type (customops.kernels.activations.carried), and ``bind``, what the ONNX Runtime hook calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations import piecewise
from customops.kernels.activations.carried import bound

__all__ = ["bind", "elu"]


def elu(X: Any, alpha: float = 1.0, elem_type: str = "") -> np.ndarray:
    """Elu of X, whose real element type is ``elem_type`` ('': X's own; float16 or bfloat16 carried as float)."""
    return bound(piecewise.elu, elem_type, alpha=alpha)(X)


def bind(alpha: float = 1.0, elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``elu`` with its attributes and X's real element type fixed."""
    return bound(piecewise.elu, elem_type, alpha=alpha)
