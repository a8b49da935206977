"""Every (op, version) of the registry, on every element type we claim, through a real ORT session.

Each case rewrites a one-node model at that version, runs it with our kernels inside ORT, and checks
the result against the kernel called directly with the version's semantics — so every registration,
filler, cast, attribute encoding and version rule is exercised end to end.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import customops
from customops.bridge.registration import NUMPY_TYPES
from customops.kernels.affine_grid import affine_grid
from customops.kernels.center_crop_pad import center_crop_pad
from customops.kernels.col2im import col2im
from customops.kernels.deform_conv import deform_conv
from customops.kernels.grid_sample import grid_sample
from customops.kernels.max_roi_pool import max_roi_pool
from customops.kernels.pad import pad
from customops.kernels.resize import resize
from customops.kernels.roi_align import roi_align
from customops.kernels.upsample import upsample
from customops.registry import NATIVE_TYPES, OPS
from customops.support import probe_opset
from tests.helpers import one_node_model

F32 = np.float32


def _data(shape, elem):
    dtype = NUMPY_TYPES[elem]
    n = int(np.prod(shape))
    if elem == "string":
        return np.array([f"s{i}" for i in range(n)], dtype=object).reshape(shape)
    if elem == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    values = np.arange(n) * 7 % 11
    return values.astype(dtype).reshape(shape)


def _resize_or_upsample_case(opv, elem, opset):
    x = _data((1, 2, 2, 3), elem)
    scales = np.array([1, 1, 2, 1.5], F32)
    mode = "nearest" if elem == "string" else "linear"
    if opv.op == "Upsample" and opv.version == 7:
        model, feed = one_node_model("Upsample", {"X": x}, opset, scales=scales.tolist(), mode=mode)
        return model, feed, upsample(x, scales, mode=mode)
    if opv.op == "Upsample" or opv.version == 10:
        model, feed = one_node_model(
            opv.op, {"X": x, "scales": scales}, opset, initializers=("scales",), mode=mode
        )
        return model, feed, upsample(x, scales, mode=mode)
    inputs = {"X": x, "roi": np.zeros(0, F32), "scales": scales}
    model, feed = one_node_model("Resize", inputs, opset, initializers=("roi", "scales"), mode=mode)
    return model, feed, resize(x, None, scales, mode=mode)


def _pad_case(opv, elem, opset):
    x = _data((2, 3), elem)
    pads = np.array([1, 0, 0, 2], np.int64)
    if opv.version == 2:
        model, feed = one_node_model("Pad", {"data": x}, opset, pads=pads.tolist(), mode="reflect")
    else:
        model, feed = one_node_model(
            "Pad", {"data": x, "pads": pads}, opset, initializers=("pads",), mode="reflect"
        )
    return model, feed, pad(x, pads, mode="reflect")


def _col2im_case(opv, elem, opset):
    x = _data((1, 4, 4), elem)
    image, block = np.array([3, 3], np.int64), np.array([2, 2], np.int64)
    inputs = {"input": x, "image_shape": image, "block_shape": block}
    model, feed = one_node_model("Col2Im", inputs, opset, initializers=("image_shape", "block_shape"))
    return model, feed, col2im(x, image, block)


def _grid_sample_case(opv, elem, opset):
    x = _data((1, 2, 3, 4), elem)
    grid = np.array([[[[-0.4, 0.3], [1.2, -1.0]], [[0.0, 0.0], [-1.3, 0.9]]]], F32)
    mode = "nearest" if elem == "string" else "cubic"
    name = {"cubic": "bicubic"}.get(mode, mode) if opv.version == 16 else mode
    model, feed = one_node_model(
        "GridSample", {"X": x, "grid": grid}, opset, mode=name, padding_mode="reflection"
    )
    return model, feed, grid_sample(x, grid.astype(np.float64), mode=mode, padding_mode="reflection")


def _deform_conv_case(opv, elem, opset):
    x, w = _data((1, 2, 3, 3), elem), _data((2, 2, 2, 2), elem)
    offset = (_data((1, 8, 3, 3), elem) / 4).astype(x.dtype)
    mask = (_data((1, 4, 3, 3), elem) / 8).astype(x.dtype)
    inputs = {"X": x, "W": w, "offset": offset, "B": None, "mask": mask}
    model, feed = one_node_model("DeformConv", inputs, opset, initializers=("W",), pads=[1, 0, 0, 1])
    return model, feed, deform_conv(x, w, offset, None, mask, pads=[1, 0, 0, 1])


def _roi_align_case(opv, elem, opset):
    x = _data((2, 2, 4, 5), elem)
    rois = np.array([[0.5, 0.25, 3, 2.5], [1, 1, 4, 3]], dtype=x.dtype)
    batch = np.array([1, 0], np.int64)
    inputs = {"X": x, "rois": rois, "batch_indices": batch}
    model, feed = one_node_model("RoiAlign", inputs, opset, initializers=("rois",), output_height=2)
    coord = "output_half_pixel" if opv.version == 10 else "half_pixel"
    return model, feed, roi_align(x, rois, batch, output_height=2, coordinate_transformation_mode=coord)


def _center_crop_pad_case(opv, elem, opset):
    x = _data((2, 3), elem)
    shape = np.array([3, 2], np.int64)
    model, feed = one_node_model(
        "CenterCropPad", {"input_data": x, "shape": shape}, opset, initializers=("shape",)
    )
    return model, feed, center_crop_pad(x, shape)


def _affine_grid_case(opv, elem, opset):
    theta = np.array([[[1, 0.5, 0], [0, 1, 0.25]]], NUMPY_TYPES[elem])
    size = np.array([1, 1, 2, 3], np.int64)
    inputs = {"theta": theta, "size": size}
    model, feed = one_node_model("AffineGrid", inputs, opset, initializers=("size",), out_rank=4)
    return model, feed, affine_grid(theta, size)


def _max_roi_pool_case(opv, elem, opset):
    x = _data((1, 2, 4, 5), elem)
    rois = np.array([[0, 0, 0, 4, 3], [0, 1.5, 0.5, 2, 2]], NUMPY_TYPES[elem])
    model, feed = one_node_model("MaxRoiPool", {"X": x, "rois": rois}, opset, pooled_shape=[2, 2])
    return model, feed, max_roi_pool(x, rois, pooled_shape=[2, 2])


BUILDERS = {
    "Resize": _resize_or_upsample_case,
    "Upsample": _resize_or_upsample_case,
    "Pad": _pad_case,
    "Col2Im": _col2im_case,
    "CenterCropPad": _center_crop_pad_case,
    "GridSample": _grid_sample_case,
    "AffineGrid": _affine_grid_case,
    "RoiAlign": _roi_align_case,
    "MaxRoiPool": _max_roi_pool_case,
    "DeformConv": _deform_conv_case,
}
"""(model, feed, expected) of one (op version, element type), keyed by the custom op that runs it: a
table, so that no op can fall through to another's builder."""


def _case(opv, elem):
    return BUILDERS[opv.custom](opv, elem, probe_opset(opv))


def test_every_custom_op_has_a_builder():
    assert set(BUILDERS) == {opv.custom for opv in OPS}


CASES = [(opv, elem) for opv in OPS for elem in opv.types if elem in NATIVE_TYPES]


@pytest.mark.parametrize(("opv", "elem"), CASES, ids=[f"{o.key}-{e}" for o, e in CASES])
def test_every_registration_runs_end_to_end(opv, elem):
    model, feed, expected = _case(opv, elem)
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes] == ["swapped"], [r.line() for r in result.nodes]
    (got,) = customops.InferenceSession(result.model).run(None, feed)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tolist() == expected.tolist()


def test_resize_10_nearest_rounds_down_when_growing_and_up_when_shrinking():
    # ONNX 1.5's own Resize-10 test data: [[1,2,3,4],[5,6,7,8]] at scales (1, 1, 0.6, 0.6) -> [[1, 3]]
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], F32)
    scales = np.array([1, 1, 0.6, 0.6], F32)
    model, feed = one_node_model("Resize", {"X": x, "scales": scales}, 10, initializers=("scales",))
    (y,) = customops.InferenceSession(customops.rewrite(model)).run(None, feed)
    assert y.tolist() == [[[[1, 3]]]]
    # and Upsample's: [[1, 2], [3, 4]] at (1, 1, 2, 3) repeats, rounding down
    x = np.array([[[[1, 2], [3, 4]]]], F32)
    scales = np.array([1, 1, 2, 3], F32)
    model, feed = one_node_model("Resize", {"X": x, "scales": scales}, 10, initializers=("scales",))
    (y,) = customops.InferenceSession(customops.rewrite(model)).run(None, feed)
    assert y.tolist() == [[[[1, 1, 1, 2, 2, 2], [1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4], [3, 3, 3, 4, 4, 4]]]]


def test_resize_11_roi_of_float16_is_cast_to_double():
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    roi = np.array([0, 0, 0.25, 0.25, 1, 1, 0.75, 0.75], np.float16)
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": roi, "scales": np.array([1, 1, 1, 1], F32)},
        11,
        initializers=("roi", "scales"),
        coordinate_transformation_mode="tf_crop_and_resize",
        mode="linear",
    )
    (y,) = customops.InferenceSession(customops.rewrite(model)).run(None, feed)
    expected = resize(
        x,
        roi.astype(np.float64),
        np.array([1, 1, 1, 1], F32),
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
    )
    np.testing.assert_array_equal(y, expected)


def test_center_crop_pad_int32_shape_and_col2im_int32_index_inputs_are_cast():
    x = np.arange(12, dtype=F32).reshape(3, 4)
    shape = np.array([1, 6], np.int32)
    model, feed = one_node_model(
        "CenterCropPad", {"input_data": x, "shape": shape}, 18, initializers=("shape",)
    )
    (y,) = customops.InferenceSession(customops.rewrite(model)).run(None, feed)
    np.testing.assert_array_equal(y, center_crop_pad(x, shape.astype(np.int64)))
    assert any(n.op_type == "Cast" for n in customops.rewrite(model).graph.node)


def test_pad_2_float16_value_attribute():
    x = np.array([1.5, 2.5], np.float16)
    node = helper.make_node("Pad", ["x"], ["y"], pads=[1, 1], value=0.25)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    model.ir_version = 8
    (y,) = customops.InferenceSession(customops.rewrite(model)).run(None, {"x": x})
    assert y.dtype == np.float16 and y.tolist() == [0.25, 1.5, 2.5, 0.25]
