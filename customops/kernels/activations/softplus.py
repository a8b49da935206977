"""ONNX Softplus as the ONNX Runtime hook calls it: customops.kernels.activations.logistic.softplus with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.logistic import softplus

__all__ = ["bind", "softplus"]


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``softplus``, its element type told."""
    return bound(softplus, elem_type)
