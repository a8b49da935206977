"""ONNX Erf as the ONNX Runtime hook calls it: customops.kernels.activations.gaussian.erf with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.gaussian import erf

__all__ = ["bind", "erf"]


def bind(elem_type: str = "") -> Callable[[Any], np.ndarray]:
    """``erf``, its element type told."""
    return bound(erf, elem_type)
