"""ONNX Mish as the registry names its kernel: customops.kernels.activations.logistic.mish on X's real element
type (customops.kernels.activations.carried), and ``bind``, what the ONNX Runtime hook calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations import logistic
from customops.kernels.activations.carried import bound

__all__ = ["bind", "mish"]


def mish(X: Any, elem_type: str = "") -> np.ndarray:
    """Mish of X, whose real element type is ``elem_type`` ('': X's own; float16 or bfloat16 carried as float)."""
    return bound(logistic.mish, elem_type)(X)


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``mish`` with its attributes and X's real element type fixed."""
    return bound(logistic.mish, elem_type)
