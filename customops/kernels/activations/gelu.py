"""ONNX Gelu as the ONNX Runtime hook calls it: customops.kernels.activations.gaussian.gelu with its attributes
fixed, on X's real element type (customops.kernels.activations.carried)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from customops.kernels.activations.carried import bound
from customops.kernels.activations.gaussian import gelu

__all__ = ["bind", "gelu"]


def bind(elem_type: str = "", approximate: str = "none") -> Callable[[Any], np.ndarray]:
    """``gelu`` with approximate fixed."""
    return bound(gelu, elem_type, approximate=approximate)
