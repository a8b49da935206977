"""ONNX Upsample (versions 7 and 9) and Resize-10 as a numpy kernel: a thin layer over :func:`resize`."""

from __future__ import annotations

from typing import Any

import numpy as np

from customops.errors import KernelError
from customops.kernels.args import choice
from customops.kernels.resampling.resize import bind as bind_resize
from customops.kernels.resampling.resize import resize

__all__ = ["bind", "upsample"]

_MODES = ("nearest", "linear")


def upsample(X: np.ndarray, scales: Any, *, mode: str = "nearest") -> np.ndarray:
    """Resize ``X`` as Upsample-7, Upsample-9 and Resize-10 do.

    ``scales`` (required) holds one positive factor per axis of ``X`` (a float32 tensor, or for
    Upsample-7 the attribute's list of floats). ``mode`` is 'nearest' (default) or 'linear'. Each
    output length is floor(input length * scale); coordinates map as x_original = x_resized / scale
    ('asymmetric'); nearest rounds down on axes that grow or keep their length (scale >= 1) and up on
    axes that shrink, as ONNX's own Resize-10 test data has it; linear clamps at the edges. Upsample's rule that scales are
    at least 1 belongs to the translator, not to this kernel. The result has ``X``'s dtype.
    """
    return _upsample(X, scales, mode, None)


def _upsample(X: Any, scales: Any, mode: Any, bound: dict[str, Any] | None) -> np.ndarray:
    """upsample(), resizing through the bound resize functions in ``bound`` when given."""
    mode = choice(mode, "mode", _MODES)
    X = np.asarray(X)
    if scales is None:
        raise KernelError("scales is required")
    values = np.asarray(scales)
    if values.dtype.kind not in "fiu":
        raise KernelError(f"scales {scales!r} are not numbers")
    if values.ndim != 1 or values.size != X.ndim:
        raise KernelError(f"scales has shape {values.shape!r}, expected ({X.ndim},) (one per axis of X)")
    if values.size == 0:
        return X.copy()
    down = values < 1
    if mode != "nearest" or not down.any():
        if bound is not None:
            return bound[mode](X, None, values, None)
        return resize(
            X, scales=values, mode=mode, coordinate_transformation_mode="asymmetric", nearest_mode="floor"
        )
    # Nearest is separable: enlarge (floor) the axes with scale >= 1, then shrink (ceil) the others.
    ones = np.ones_like(values)
    if bound is not None:
        grown = bound["nearest"](X, None, np.where(down, ones, values), None)
        return bound["shrink"](grown, None, np.where(down, values, ones), None)
    grown = resize(
        X,
        scales=np.where(down, ones, values),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    return resize(
        grown,
        scales=np.where(down, values, ones),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="ceil",
    )


def bind(mode: str = "nearest") -> Any:
    """``upsample`` with its mode fixed, for repeated calls (the ONNX Runtime hook): the resizes go
    through :func:`resize`'s bound form, which keeps its tables per input shape."""
    bound = {
        name: bind_resize(mode=name, coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        for name in _MODES
    }
    bound["shrink"] = bind_resize(coordinate_transformation_mode="asymmetric", nearest_mode="ceil")

    def call(X: Any, scales: Any) -> np.ndarray:
        return _upsample(X, scales, mode, bound)

    return call
