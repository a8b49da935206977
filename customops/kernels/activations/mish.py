"""ONNX Mish as the ONNX Runtime hook calls it: customops.kernels.activations.logistic.mish with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.logistic import mish

__all__ = ["bind", "mish"]


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``mish``, its element type told."""
    return bound(mish, elem_type)
