"""Every (op, version) of the registry, on every element type we claim, through a real ORT session.

Each case rewrites a one-node model at that version, runs it with our kernels inside ORT, and checks
the result against the kernel called directly with the version's semantics — so every registration,
filler, cast, attribute encoding and version rule is exercised end to end.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper

import customops
from customops.bridge.registration import NUMPY_TYPES
from customops.kernels.padding.center_crop_pad import center_crop_pad
from customops.kernels.padding.col2im import col2im
from customops.kernels.padding.pad import pad
from customops.kernels.quantized.conv_integer import conv_integer
from customops.kernels.quantized.dequantize_linear import dequantize_linear
from customops.kernels.quantized.dynamic_quantize_linear import dynamic_quantize_linear
from customops.kernels.quantized.matmul_integer import matmul_integer
from customops.kernels.quantized.qlinear_conv import qlinear_conv
from customops.kernels.quantized.qlinear_matmul import qlinear_matmul
from customops.kernels.quantized.quantize_linear import quantize_linear
from customops.kernels.resampling.resize import resize
from customops.kernels.resampling.upsample import upsample
from customops.kernels.spatial.affine_grid import affine_grid
from customops.kernels.spatial.deform_conv import deform_conv
from customops.kernels.spatial.grid_sample import grid_sample
from customops.kernels.spatial.max_roi_pool import max_roi_pool
from customops.kernels.spatial.roi_align import roi_align
from customops.registry import ACTIVATION_OPS, CUSTOM_OPS, NATIVE_TYPES, OPS
from customops.support import probe_opset
from tests.helpers import NP_TO_ONNX, one_node_model

F32 = np.float32
I8 = np.int8


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


def _zero(elem, value=3):
    """A zero point of element type ``elem`` (one value)."""
    return np.array(value, NUMPY_TYPES[elem])


def _matmul_integer_case(opv, elem, opset):
    a, b = _data((2, 3), elem), _data((3, 4), "int8")
    inputs = {"A": a, "B": b, "a_zero_point": _zero(elem), "b_zero_point": np.array(-2, I8)}
    model, feed = one_node_model(
        "MatMulInteger", inputs, opset, out_type=TensorProto.INT32, initializers=("B",)
    )
    return model, feed, matmul_integer(*inputs.values(), version=opv.version)


def _conv_integer_case(opv, elem, opset):
    x, w = _data((1, 2, 3, 3), elem), _data((2, 2, 2, 2), "int8")
    inputs = {"x": x, "w": w, "x_zero_point": _zero(elem), "w_zero_point": np.array([1, -2], I8)}
    model, feed = one_node_model(
        "ConvInteger", inputs, opset, out_type=TensorProto.INT32, initializers=("w",), pads=[1, 0, 0, 1]
    )
    return model, feed, conv_integer(*inputs.values(), pads=[1, 0, 0, 1], version=opv.version)


def _qlinear_matmul_case(opv, elem, opset):
    inputs = {"a": _data((2, 3), elem), "a_scale": np.array(0.5, F32), "a_zero_point": _zero(elem)}
    inputs.update(b=_data((3, 4), "int8"), b_scale=np.array(0.25, F32), b_zero_point=np.array(-2, I8))
    inputs.update(y_scale=np.array(0.75, F32), y_zero_point=_zero(elem, 5))
    model, feed = one_node_model("QLinearMatMul", inputs, opset, initializers=("b",))
    return model, feed, qlinear_matmul(*inputs.values(), version=opv.version)


def _qlinear_conv_case(opv, elem, opset):
    inputs = {"x": _data((1, 2, 3, 3), elem), "x_scale": np.array(0.5, F32), "x_zero_point": _zero(elem)}
    inputs.update(w=_data((2, 2, 2, 2), "int8"), w_scale=np.array([0.25, 0.5], F32))
    inputs.update(w_zero_point=np.array([0, 0], I8), y_scale=np.array(0.75, F32))
    inputs.update(y_zero_point=_zero(elem, 5), B=np.array([7, -9], np.int32))
    model, feed = one_node_model("QLinearConv", inputs, opset, initializers=("w", "B"), pads=[1, 0, 0, 1])
    return model, feed, qlinear_conv(*inputs.values(), pads=[1, 0, 0, 1], version=opv.version)


def _quantize_linear_case(opv, elem, opset):
    x = _data((2, 3), elem) - NUMPY_TYPES[elem].type(5)
    # the scale has x's type where the version says so (19, 21), float32 elsewhere
    scale = np.array(2, x.dtype if opv.version in (19, 21) else F32)
    zero = np.array(-3, I8) if elem == "float" else np.array(3, np.uint8)
    inputs = {"x": x, "y_scale": scale, "y_zero_point": zero}
    model, feed = one_node_model("QuantizeLinear", inputs, opset, out_type=NP_TO_ONNX[zero.dtype])
    return model, feed, quantize_linear(*inputs.values(), version=opv.version)


def _dequantize_linear_case(opv, elem, opset):
    # an int32 x has no zero point but 0 in every version
    zero = None if elem == "int32" else _zero(elem)
    inputs = {"x": _data((2, 3), elem), "x_scale": np.array(0.375, F32), "x_zero_point": zero}
    model, feed = one_node_model("DequantizeLinear", inputs, opset, out_type=TensorProto.FLOAT)
    return model, feed, dequantize_linear(*inputs.values(), version=opv.version)


def _dynamic_quantize_linear_case(opv, elem, opset):
    x = (_data((2, 3), elem) - 4) / 3
    model, feed = one_node_model("DynamicQuantizeLinear", {"x": x}, opset, out_type=TensorProto.UINT8)
    node = model.graph.node[0]
    node.output.extend(["Y_scale", "Y_zero_point"])
    model.graph.output.extend(
        helper.make_tensor_value_info(name, code, [])
        for name, code in (("Y_scale", TensorProto.FLOAT), ("Y_zero_point", TensorProto.UINT8))
    )
    return model, feed, dynamic_quantize_linear(x, version=opv.version)


_ACTIVATION_ATTRIBUTES = {
    "Gelu": {"approximate": "tanh"},
    "Swish": {"alpha": 0.7},
    "HardSigmoid": {"alpha": 0.3, "beta": 0.4},
    "Elu": {"alpha": 0.1},
    "Selu": {"alpha": 1.5, "gamma": 0.9},
    "Celu": {"alpha": 2.5},
}
"""Attributes away from their defaults (each a float32 value's shortest text but 0.1, 0.3, 0.7 and 0.9,
which are not float32 values: the kernel takes their float32 rounding, as ONNX stores them)."""


def _activation_case(opv, elem, opset):
    """The activation on values across its branches (tails, -3..3, zeros), against the kernel called
    directly with the node's attributes."""
    x = np.array([-120.0, -20.0, -3.5, -3.0, -1.0, -0.0, 0.0, 0.25, 1.0, 3.0, 20.0, 95.0]).astype(
        NUMPY_TYPES[elem]
    )
    attrs = _ACTIVATION_ATTRIBUTES.get(opv.op, {})
    input_name = opv.inputs[0].name
    model, feed = one_node_model(opv.op, {input_name: x.reshape(3, 4)}, opset, **attrs)
    module = importlib.import_module(CUSTOM_OPS[opv.custom].kernel.partition(":")[0])
    return (
        model,
        feed,
        getattr(module, CUSTOM_OPS[opv.custom].kernel.partition(":")[2])(x.reshape(3, 4), **attrs),
    )


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
    "MatMulInteger": _matmul_integer_case,
    "ConvInteger": _conv_integer_case,
    "QLinearMatMul": _qlinear_matmul_case,
    "QLinearConv": _qlinear_conv_case,
    "QuantizeLinear": _quantize_linear_case,
    "DequantizeLinear": _dequantize_linear_case,
    "DynamicQuantizeLinear": _dynamic_quantize_linear_case,
    **{op.name: _activation_case for op in ACTIVATION_OPS},
}
"""(model, feed, expected) of one (op version, element type), keyed by the custom op that runs it: a
table, so that no op can fall through to another's builder."""


def _case(opv, elem):
    return BUILDERS[opv.custom](opv, elem, probe_opset(opv))


def test_every_custom_op_has_a_builder():
    assert set(BUILDERS) == {opv.custom for opv in OPS}


CASES = [
    (opv, elem)
    for opv in OPS
    for elem in opv.types
    if elem in NATIVE_TYPES and (not opv.kernel_types or elem in opv.kernel_types)
]


@pytest.mark.parametrize(("opv", "elem"), CASES, ids=[f"{o.key}-{e}" for o, e in CASES])
def test_every_registration_runs_end_to_end(opv, elem):
    model, feed, expected = _case(opv, elem)
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes] == ["swapped"], [r.line() for r in result.nodes]
    outputs = customops.InferenceSession(result.model).run(None, feed)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tolist() == want.tolist()


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


def test_a_float16_activation_is_rounded_once_to_float16_through_the_layer():
    # float16 crosses the layer as float: ours rounds to float16 once, where rounding the correctly rounded
    # float32 value again gives another float16 on these inputs (its float32 value sits on a midpoint)
    x = np.array([0.00293, 0.006836, 0.01074], np.float16)
    from customops.kernels.activations.sigmoid import sigmoid

    want = sigmoid(x)
    assert (want != sigmoid(x.astype(F32)).astype(np.float16)).all()
    model, feed = one_node_model("Sigmoid", {"X": x}, 13)
    result = customops.rewrite_model(model)
    got = customops.InferenceSession(result.model).run(None, feed)[0]
    assert got.dtype == np.float16 and got.view(np.uint16).tolist() == want.view(np.uint16).tolist()


@pytest.mark.parametrize(
    "opv", [o for o in OPS if o.custom in {op.name for op in ACTIVATION_OPS}], ids=lambda o: o.key
)
def test_an_activation_rewrites_and_restores_exactly_with_its_attributes(opv):
    elem = "float16" if "float16" in opv.types else "float"
    model, _, _ = _activation_case(opv, "float", probe_opset(opv))
    if elem == "float16":  # a bridged type: Casts around our node, elem_type told
        for value in (*model.graph.input, *model.graph.output):
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes] == ["swapped"], [r.line() for r in result.nodes]
    custom = next(n for n in result.model.graph.node if n.domain == "customops")
    told = {a.name: a.s.decode() for a in custom.attribute}
    assert told["elem_type"] == elem
    for name, value in _ACTIVATION_ATTRIBUTES.get(opv.op, {}).items():
        assert told[name] == (value if isinstance(value, str) else repr(float(np.float32(value))))
    assert customops.restore(result.model).SerializeToString() == model.SerializeToString()
