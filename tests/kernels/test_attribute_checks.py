"""The attribute checks every kernel shares (customops.kernels.args): one rule for an integer attribute (a
Python or numpy integer, never a bool or a float), so each kernel refuses ``True`` and ``2.7`` alike with
a KernelError naming the attribute, called directly and through its module's ``bind``; and the values the
bridge decodes pass them, so a real session runs each op with its integer attributes set."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from customops.errors import KernelError
from customops.kernels import args
from customops.registry import CUSTOM_OPS
from tests.helpers import one_node_model, run_custom

F32, I64 = np.float32, np.int64


def kernel_module(name: str) -> Any:
    """The module of the registry's kernel ``name`` (``customops.kernels.FAMILY.NAME:NAME``)."""
    path = next(op.kernel for op in CUSTOM_OPS.values() if op.kernel.endswith(":" + name))
    return importlib.import_module(path.partition(":")[0])


def test_integer_takes_python_and_numpy_integers_only() -> None:
    assert args.integer(2, "n") == 2 and type(args.integer(np.int64(2), "n")) is int
    for bad in (True, False, np.bool_(True), 2.7, 2.0, np.float32(2.0), "2", None, [2]):
        with pytest.raises(KernelError, match=r"^n .* is not an integer$"):
            args.integer(bad, "n")
    with pytest.raises(KernelError, match="n is 0; it must be >= 1"):
        args.integer(0, "n", 1)


def test_flag_choice_and_ints_follow_the_same_rule() -> None:
    assert args.flag(np.int8(1), "f") is True and args.flag(0, "f") is False
    for bad in (True, 1.0, 2, -1):
        with pytest.raises(KernelError, match=r"f .* is not the integer 0 or 1"):
            args.flag(bad, "f")
    assert args.choice(b"max", "mode", ("avg", "max")) == "max"
    with pytest.raises(KernelError, match="mode 'sum' is not one of 'avg', 'max'"):
        args.choice("sum", "mode", ("avg", "max"))
    assert args.ints(None, "pads", 2, 0, 0) == [0, 0] and args.ints(np.array([1, 2]), "pads", 2, 0, 0) == [
        1,
        2,
    ]
    for bad in ([True, 1], [2.7, 1], [2.0, 1], np.array([1.0, 2.0])):
        with pytest.raises(KernelError, match="pads"):
            args.ints(bad, "pads", 2, 0, 0)
    assert args.normalize_axes([], 3) == [0, 1, 2] and args.normalize_axes([], 3, empty_is_all=False) == []


def _inputs(op: str) -> tuple[Any, ...]:
    """Valid inputs of each kernel, as its function takes them positionally."""
    rng = np.random.default_rng(3)
    image = rng.standard_normal((1, 4, 5, 5)).astype(F32)
    return {
        "resize": (image, None, np.array([1, 1, 0.5, 0.5], F32), None),
        "col2im": (rng.standard_normal((1, 4, 4)).astype(F32), np.array([3, 3], I64), np.array([2, 2], I64)),
        "center_crop_pad": (image, np.array([3, 4], I64)),
        "affine_grid": (rng.standard_normal((1, 2, 3)).astype(F32), np.array([1, 1, 3, 4], I64)),
        "max_roi_pool": (image, np.array([[0, 0, 0, 4, 4]], F32)),
        "roi_align": (image, np.array([[0, 0, 4, 4]], F32), np.array([0], I64)),
        "deform_conv": (
            image,
            rng.standard_normal((4, 2, 3, 3)).astype(F32),
            rng.standard_normal((1, 36, 3, 3)).astype(F32),
        ),
        "grid_sample": (image, rng.uniform(-1, 1, (1, 3, 3, 2)).astype(F32)),
    }[op]


# (kernel, the other attributes it needs, the integer attribute, True in its place, 2.7 in its place)
_INTEGER_ATTRIBUTES = [
    ("resize", {}, "antialias", True, 2.7),
    ("resize", {}, "exclude_outside", True, 2.7),
    ("resize", {}, "axes", [True, 3], [2.7, 3]),
    ("col2im", {}, "strides", [True, 1], [2.7, 1]),
    ("col2im", {}, "pads", [True, 0, 0, 0], [2.7, 0, 0, 0]),
    ("col2im", {}, "dilations", [1, True], [1, 2.7]),
    ("center_crop_pad", {}, "axes", [True, 2], [2.7, 2]),
    ("affine_grid", {}, "align_corners", True, 2.7),
    ("max_roi_pool", {}, "pooled_shape", [True, 2], [2.7, 2]),
    ("roi_align", {}, "output_height", True, 2.7),
    ("roi_align", {}, "output_width", True, 2.7),
    ("roi_align", {}, "sampling_ratio", True, 2.7),
    ("deform_conv", {"pads": [1, 1, 1, 1], "strides": [2, 2]}, "group", True, 2.7),
    ("deform_conv", {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]}, "offset_group", True, 2.7),
    ("deform_conv", {"group": 2, "pads": [1, 1, 1, 1]}, "strides", [True, 2], [2.7, 2]),
    ("deform_conv", {"group": 2, "strides": [2, 2]}, "pads", [True, 1, 1, 1], [2.7, 1, 1, 1]),
    ("deform_conv", {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]}, "dilations", [True, 1], [1, 2.7]),
    ("grid_sample", {}, "align_corners", True, 2.7),
]


@pytest.mark.parametrize(
    ("op", "others", "name", "as_true", "as_float"),
    _INTEGER_ATTRIBUTES,
    ids=[f"{op}-{name}" for op, _, name, _, _ in _INTEGER_ATTRIBUTES],
)
def test_true_and_a_float_are_refused_alike(op, others, name, as_true, as_float) -> None:
    module = kernel_module(op)
    kernel = getattr(module, op)
    inputs = _inputs(op)
    if op == "resize" and name == "axes":  # scales for the two axes named
        inputs = (inputs[0], None, np.array([0.5, 0.5], F32), None)
    for bad in (as_true, as_float):
        attrs = {**others, name: bad}
        with pytest.raises(KernelError, match=rf"^{name}\b"):
            kernel(*inputs, **attrs)
        with pytest.raises(KernelError, match=rf"^{name}\b"):
            module.bind(**attrs)(*inputs)


# (op, opset, kernel, inputs given as initializers, attributes away from their defaults)
_SESSIONS = [
    ("Resize", 18, "resize", (), {"antialias": 1, "axes": [2, 3], "mode": "linear"}),
    ("Col2Im", 18, "col2im", ("image_shape", "block_shape"), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("CenterCropPad", 18, "center_crop_pad", ("shape",), {"axes": [2, 3]}),
    ("AffineGrid", 20, "affine_grid", ("size",), {"align_corners": 1}),
    ("MaxRoiPool", 22, "max_roi_pool", (), {"pooled_shape": [2, 3], "spatial_scale": 0.5}),
    ("RoiAlign", 16, "roi_align", (), {"output_height": 2, "output_width": 3, "sampling_ratio": 2}),
    (
        "DeformConv",
        19,
        "deform_conv",
        (),
        {"group": 2, "offset_group": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]},
    ),
    ("GridSample", 20, "grid_sample", (), {"align_corners": 1}),
]

_INPUT_NAMES = {
    "Resize": ("X", "roi", "scales", "sizes"),
    "Col2Im": ("input", "image_shape", "block_shape"),
    "CenterCropPad": ("input_data", "shape"),
    "AffineGrid": ("theta", "size"),
    "MaxRoiPool": ("X", "rois"),
    "RoiAlign": ("X", "rois", "batch_indices"),
    "DeformConv": ("X", "W", "offset"),
    "GridSample": ("X", "grid"),
}


@pytest.mark.parametrize(
    ("op", "opset", "kernel", "initializers", "attrs"), _SESSIONS, ids=[s[0] for s in _SESSIONS]
)
def test_a_session_passes_its_decoded_integers_to_each_kernel(op, opset, kernel, initializers, attrs) -> None:
    inputs = _inputs(kernel)
    if op == "Resize":
        inputs = (inputs[0], None, np.array([0.5, 0.5], F32), None)
    model, feed = one_node_model(
        op, dict(zip(_INPUT_NAMES[op], inputs, strict=True)), opset, initializers=initializers, **attrs
    )
    module = kernel_module(kernel)
    want = getattr(module, kernel)(*inputs, **attrs)
    np.testing.assert_array_equal(run_custom(model, feed)[0], want)


@pytest.mark.parametrize("op", sorted(CUSTOM_OPS))
def test_every_registered_kernel_module_offers_bind(op) -> None:
    name, _, function = CUSTOM_OPS[op].kernel.partition(":")
    module = importlib.import_module(name)
    assert "bind" in module.__all__ and function in module.__all__
    custom = CUSTOM_OPS[op]
    if "types" in dict(custom.attributes):  # the quantized family: told the real types and the version
        ins, outs = custom.typed(custom.registrations()[0])
        assert callable(module.bind(types=f"{' '.join(ins)} -> {' '.join(outs)}", version=10))
    else:
        assert callable(module.bind())
