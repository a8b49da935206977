"""ONNX Sigmoid as the ONNX Runtime hook calls it: customops.kernels.activations.logistic.sigmoid with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.logistic import sigmoid

__all__ = ["bind", "sigmoid"]


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``sigmoid``, its element type told."""
    return bound(sigmoid, elem_type)
