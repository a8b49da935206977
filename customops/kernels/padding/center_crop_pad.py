"""ONNX CenterCropPad (opset 18): centre-crop or zero-pad chosen axes to a target shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from customops.accel.plans import plan_cache
from customops.errors import KernelError
from customops.kernels.args import int_list, normalize_axes
from customops.kernels.padding.pad import execute_pad, pad, prepare_pad

__all__ = ["bind", "center_crop_pad"]


def center_crop_pad(
    input_data: np.ndarray,
    shape: np.ndarray | Sequence[int],
    *,
    axes: Sequence[int] | None = None,
) -> np.ndarray:
    """Crop or pad ``input_data`` so that the axes in ``axes`` get the sizes in ``shape``, centred.

    ``axes`` defaults to every axis (negative values count from the back); the other axes are kept.
    A crop window starts at half the excess rounded down (the odd element is dropped on the right);
    padding puts half the missing elements, rounded down, on the left and the rest on the right.
    Padding is zero (False for bool, the empty string for strings). Returns a new C-contiguous array
    of the input's dtype.
    """
    data = np.asarray(input_data)
    pads, axes_array = crop_pads(data.shape, shape, axes)
    return pad(data, pads, None, axes_array, mode="constant")


def crop_pads(data_shape: tuple[int, ...], shape: Any, axes: Any) -> tuple[np.ndarray, np.ndarray]:
    """The Pad arguments (pads, axes) that crop or pad ``data_shape`` to ``shape``; raises KernelError."""
    rank = len(data_shape)
    ax = normalize_axes(axes, rank)
    target = int_list(shape, "shape")
    if len(target) != len(ax):
        raise KernelError(
            f"shape {target!r} has {len(target)} entries but there are {len(ax)} axes {ax!r} to crop or pad"
        )
    begins: list[int] = []
    ends: list[int] = []
    for a, size in zip(ax, target, strict=True):
        if size < 0:
            raise KernelError(f"shape value {size!r} for axis {a} is negative; sizes must be >= 0")
        diff = size - data_shape[a]
        if diff >= 0:  # pad: the odd element goes to the end
            begins.append(diff // 2)
            ends.append(diff - diff // 2)
        else:  # crop: the window starts at half the excess, rounded down
            excess = -diff
            begins.append(-(excess // 2))
            ends.append(-(excess - excess // 2))
    return np.array(begins + ends, dtype=np.int64), np.array(ax, dtype=np.int64)


def bind(axes: Sequence[int] | None = None) -> Any:
    """``center_crop_pad`` with its axes fixed, for repeated calls (the ONNX Runtime hook): the copy
    plan is kept per input shape, dtype and target shape. Errors are raised on every call."""

    def _plan(data: np.ndarray, shape: Any) -> Any:
        pads, axes_array = crop_pads(data.shape, shape, axes)
        return prepare_pad(data.shape, data.dtype, pads, None, axes_array, "constant")

    plan = plan_cache(_plan)

    def bound(input_data: Any, shape: Any) -> np.ndarray:
        data = input_data if type(input_data) is np.ndarray else np.asarray(input_data)
        return execute_pad(plan(data, shape), data)

    return bound
