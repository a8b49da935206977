"""ONNX HardSwish as the ONNX Runtime hook calls it: customops.kernels.activations.piecewise.hard_swish with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.piecewise import hard_swish

__all__ = ["bind", "hard_swish"]


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``hard_swish``, its element type told."""
    return bound(hard_swish, elem_type)
