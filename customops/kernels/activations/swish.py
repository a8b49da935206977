"""ONNX Swish as the registry names its kernel: customops.kernels.activations.logistic.swish on X's real element
type (customops.kernels.activations.carried), and ``bind``, what the ONNX Runtime hook calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations import logistic
from customops.kernels.activations.carried import bound

__all__ = ["bind", "swish"]


def swish(X: Any, alpha: float = 1.0, elem_type: str = "") -> np.ndarray:
    """Swish of X, whose real element type is ``elem_type`` ('': X's own; float16 or bfloat16 carried as float)."""
    return bound(logistic.swish, elem_type, alpha=alpha)(X)


def bind(alpha: float = 1.0, elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``swish`` with its attributes and X's real element type fixed."""
    return bound(logistic.swish, elem_type, alpha=alpha)
