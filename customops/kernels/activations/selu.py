"""ONNX Selu as the registry names its kernel: customops.kernels.activations.piecewise.selu on X's real element
type (customops.kernels.activations.carried), and ``bind``, what the ONNX Runtime hook calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations import piecewise
from customops.kernels.activations.carried import bound

__all__ = ["bind", "selu"]


def selu(X: Any, alpha: float = 1.6732632, gamma: float = 1.050701, elem_type: str = "") -> np.ndarray:
    """Selu of X, whose real element type is ``elem_type`` ('': X's own; float16 or bfloat16 carried as float)."""
    return bound(piecewise.selu, elem_type, alpha=alpha, gamma=gamma)(X)


def bind(
    alpha: float = 1.6732632, gamma: float = 1.050701, elem_type: str = ""
) -> Callable[[Any], np.ndarray]:
    """``selu`` with its attributes and X's real element type fixed."""
    return bound(piecewise.selu, elem_type, alpha=alpha, gamma=gamma)
