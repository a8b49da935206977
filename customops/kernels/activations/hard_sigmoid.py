"""ONNX HardSigmoid as the ONNX Runtime hook calls it: customops.kernels.activations.piecewise.hard_sigmoid with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.piecewise import hard_sigmoid

__all__ = ["bind", "hard_sigmoid"]


def bind(elem_type: str = "", alpha: float = 0.2, beta: float = 0.5) -> Callable[[Any], np.ndarray]:
    """``hard_sigmoid`` with alpha and beta fixed."""
    return bound(hard_sigmoid, elem_type, alpha=alpha, beta=beta)
