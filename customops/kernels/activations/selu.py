"""ONNX Selu as the ONNX Runtime hook calls it: customops.kernels.activations.piecewise.selu with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.piecewise import selu

__all__ = ["bind", "selu"]


def bind(
    elem_type: str = "", alpha: float = 1.6732632, gamma: float = 1.050701
) -> Callable[[Any], np.ndarray]:
    """``selu`` with alpha and gamma fixed."""
    return bound(selu, elem_type, alpha=alpha, gamma=gamma)
