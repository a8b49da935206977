"""ONNX Tanh as the ONNX Runtime hook calls it: customops.kernels.activations.logistic.tanh with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.logistic import tanh

__all__ = ["bind", "tanh"]


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``tanh``, its element type told."""
    return bound(tanh, elem_type)
