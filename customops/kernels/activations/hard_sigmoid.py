"""ONNX HardSigmoid as the registry names its kernel: customops.kernels.activations.piecewise.hard_sigmoid on X's real element
type (customops.kernels.activations.carried), and ``bind``, what the ONNX Runtime hook calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations import piecewise
from customops.kernels.activations.carried import bound

__all__ = ["bind", "hard_sigmoid"]


def hard_sigmoid(X: Any, alpha: float = 0.2, beta: float = 0.5, elem_type: str = "") -> np.ndarray:
    """HardSigmoid of X, whose real element type is ``elem_type`` ('': X's own; float16 or bfloat16 carried as float)."""
    return bound(piecewise.hard_sigmoid, elem_type, alpha=alpha, beta=beta)(X)


def bind(alpha: float = 0.2, beta: float = 0.5, elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``hard_sigmoid`` with its attributes and X's real element type fixed."""
    return bound(piecewise.hard_sigmoid, elem_type, alpha=alpha, beta=beta)
