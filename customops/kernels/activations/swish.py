"""ONNX Swish as the ONNX Runtime hook calls it: customops.kernels.activations.logistic.swish with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.logistic import swish

__all__ = ["bind", "swish"]


def bind(elem_type: str = "", alpha: float = 1.0) -> Callable[[Any], np.ndarray]:
    """``swish`` with alpha fixed."""
    return bound(swish, elem_type, alpha=alpha)
