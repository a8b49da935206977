"""The workloads of ``customops bench``: one-node standard models and their inputs, at full or --quick size.

Each workload is built on demand (onnx and numpy are imported by the builders, not by this module), so
listing or selecting the suite is cheap. :func:`suite` is the fixed table order; :func:`select` filters it
by name for ``--filter``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from customops.errors import CustomOpsError

Builder = Callable[[bool], tuple[Any, dict[str, Any], str]]
"""quick -> (model, feed, shape text)."""


@dataclass(frozen=True)
class Workload:
    """One benchmark case: a one-node standard model and its input, at full or --quick size."""

    name: str
    op: str
    build: Builder
    small: bool = False
    """A tiny tensor: the case measures per-call overhead."""
    stand_ins: bool = True
    """Whether the stand-in kernels (floor, write-only, copy), the stock path and the memory probe are
    measured: a one-node model of one output. False for a node of several outputs and a whole model,
    where an answer of one array of the output's shape would not fit every call."""


def one_node_model(
    node: Any,
    inputs: list[tuple[str, Any]],
    inits: dict[str, Any],
    opset: int,
    out_rank: int | None = None,
    out_dtype: Any = None,
) -> Any:
    """A model of the one ``node``: graph inputs ``inputs`` (name, array), initializers ``inits``, one output
    of the first input's element type (or the numpy dtype ``out_dtype``) and rank (or ``out_rank``),
    default domain at ``opset``."""
    from onnx import helper, numpy_helper

    from customops.dtypes import code_of

    def elem(a: Any) -> int:
        return code_of(a.dtype)

    out_code = elem(inputs[0][1]) if out_dtype is None else code_of(out_dtype)
    graph = helper.make_graph(
        [node],
        "bench",
        [helper.make_tensor_value_info(name, elem(a), list(a.shape)) for name, a in inputs],
        [helper.make_tensor_value_info(node.output[0], out_code, [None] * (out_rank or inputs[0][1].ndim))],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def random_data(shape: tuple[int, ...], seed: int = 0) -> Any:
    """Standard-normal float32 data of ``shape``, the same for the same seed."""
    import numpy as np

    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _resize(
    mode: str, full: tuple[int, ...], quick_shape: tuple[int, ...], factor: float, **attrs: Any
) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        x = random_data(shape)
        scales = np.array([1, 1, factor, factor], np.float32)
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode, **attrs)
        out = [*shape[:2], *(math.floor(s * factor) for s in shape[2:])]
        text = "x".join(map(str, shape)) + " -> " + "x".join(map(str, out))
        return one_node_model(node, [("x", x)], {"scales": scales}, 19), {"x": x}, text

    return build


def _pad(mode: str, full: tuple[int, ...], quick_shape: tuple[int, ...], width: int) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        x = random_data(shape)
        pads = np.array([0, 0, width, width, 0, 0, width, width], np.int64)
        node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
        text = "x".join(map(str, shape)) + f" pad {width}"
        return one_node_model(node, [("x", x)], {"pads": pads}, 19), {"x": x}, text

    return build


def _col2im(channels: int, image: int, quick_image: int, block: int) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        size = quick_image if quick else image
        pad = block // 2
        x = random_data((1, channels * block * block, size * size))
        node = helper.make_node(
            "Col2Im", ["x", "image_shape", "block_shape"], ["y"], pads=[pad] * 4, strides=[1, 1]
        )
        inits = {
            "image_shape": np.array([size, size], np.int64),
            "block_shape": np.array([block, block], np.int64),
        }
        text = f"{channels}ch {block}x{block} blocks -> {size}x{size}"
        return one_node_model(node, [("x", x)], inits, 18, out_rank=4), {"x": x}, text

    return build


def _center_crop_pad(full: tuple[int, ...], quick_shape: tuple[int, ...], factor: float) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        x = random_data(shape)
        target = [round(s * factor) for s in shape[2:]]
        node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[2, 3])
        text = "x".join(map(str, shape)) + " -> " + "x".join(map(str, [*shape[:2], *target]))
        return one_node_model(node, [("x", x)], {"shape": np.array(target, np.int64)}, 18), {"x": x}, text

    return build


def _affine_grid(full: tuple[int, ...], quick_size: tuple[int, ...]) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        size = quick_size if quick else full
        spatial = len(size) - 2
        theta = random_data((size[0], spatial, spatial + 1))
        node = helper.make_node("AffineGrid", ["x", "size"], ["grid"])  # x: theta
        inits = {"size": np.array(size, np.int64)}
        text = f"theta {size[0]}x{spatial}x{spatial + 1} -> " + "x".join(
            map(str, (size[0], *size[2:], spatial))
        )
        model = one_node_model(node, [("x", theta)], inits, 20, out_rank=spatial + 2)
        return model, {"x": theta}, text

    return build


def _max_roi_pool(
    full: tuple[int, ...], quick_shape: tuple[int, ...], boxes: int, quick_boxes: int
) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape, count = (quick_shape, quick_boxes) if quick else (full, boxes)
        x = random_data(shape)
        rng = np.random.default_rng(1)
        scale = 1 / 16  # boxes in image pixels, X a stride-16 feature map (Fast R-CNN's VGG16 setting)
        extent = np.array([shape[3], shape[2]]) / scale
        corner = rng.uniform(0, 0.9, (count, 2)) * extent
        size = rng.uniform(16, 0.4 * extent.min(), (count, 2))
        rois = np.concatenate(
            [np.zeros((count, 1)), corner, np.minimum(corner + size, extent - 1)], axis=1
        ).astype(np.float32)
        node = helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[7, 7], spatial_scale=scale)
        text = "x".join(map(str, shape)) + f", {count} boxes -> 7x7"
        model = one_node_model(node, [("x", x)], {"rois": rois}, 1)
        return model, {"x": x}, text

    return build


def _roi_align(mode: str, channels: int, size: int, boxes: int, quick: tuple[int, int, int]) -> Builder:
    """RoiAlign-16 of ``boxes`` random boxes (4 to 32 pixels a side) on a 1 x channels x size x size map,
    7x7 bins, adaptive sampling; rois and batch_indices are initializers (the feed is X alone, as for
    every workload)."""

    def build(is_quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        c, n, count = quick if is_quick else (channels, size, boxes)
        x = random_data((1, c, n, n))
        rng = np.random.default_rng(1)
        corner = rng.uniform(0, n * 0.75, (count, 2))
        side = rng.uniform(4, n / 2, (count, 2))
        rois = np.concatenate([corner, np.minimum(corner + side, n - 1)], axis=1).astype(np.float32)
        batch = np.zeros(count, np.int64)
        node = helper.make_node(
            "RoiAlign", ["x", "rois", "batch_indices"], ["y"], mode=mode, output_height=7, output_width=7
        )
        inits = {"rois": rois, "batch_indices": batch}
        text = f"1x{c}x{n}x{n}, {count} boxes -> 7x7 {mode}"
        return one_node_model(node, [("x", x)], inits, 16), {"x": x}, text

    return build


def _deform_conv(channels: int, size: int, quick_channels: int, quick_size: int, mask: bool) -> Builder:
    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        from onnx import helper

        c, s = (quick_channels, quick_size) if quick else (channels, size)
        x = random_data((1, c, s, s))
        inits = {
            "w": random_data((c, c, 3, 3), seed=1) * (1.0 / (3 * c**0.5)),
            "offset": random_data((1, 2 * 9, s, s), seed=2),
        }
        names = ["x", "w", "offset"]
        if mask:
            inits["mask"] = 0.5 + 0.5 * random_data((1, 9, s, s), seed=3)
            names += ["", "mask"]
        node = helper.make_node("DeformConv", names, ["y"], pads=[1, 1, 1, 1])
        text = f"1x{c}x{s}x{s}, W {c}x{c}x3x3, pads 1{', mask' if mask else ''}"
        return one_node_model(node, [("x", x)], inits, 22), {"x": x}, text

    return build


def _grid_sample(mode: str, full: tuple[int, ...], quick_shape: tuple[int, ...]) -> Builder:
    """GridSample-20 of X (N, C, H, W) on an (N, H, W, 2) grid (an initializer, as the other workloads'
    small inputs): a slight rotation and zoom with jitter, a few points outside the image."""

    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        shape = quick_shape if quick else full
        n, _, h, w = shape
        x = random_data(shape)
        ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
        angle, zoom = 0.17, 1.08
        gx = zoom * (np.cos(angle) * xs - np.sin(angle) * ys)
        gy = zoom * (np.sin(angle) * xs + np.cos(angle) * ys)
        jitter = np.random.default_rng(1).normal(scale=0.01, size=(n, h, w, 2))
        grid = (np.stack([gx, gy], axis=-1)[None] + jitter).astype(np.float32)
        node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode)
        text = "x".join(map(str, shape)) + " grid " + "x".join(map(str, grid.shape))
        return one_node_model(node, [("x", x)], {"grid": grid}, 20), {"x": x}, text

    return build


def _matmul_integer(size: int, quick_size: int) -> Builder:
    """MatMulInteger-10 of uint8 A [size, size] (the feed) and int8 B [size, size] (an initializer, as a
    layer's weights), no zero points."""

    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        n = quick_size if quick else size
        rng = np.random.default_rng(0)
        a = rng.integers(0, 256, (n, n), dtype=np.uint8)
        b = rng.integers(-128, 128, (n, n), dtype=np.int8)
        node = helper.make_node("MatMulInteger", ["x", "b"], ["y"])
        model = one_node_model(node, [("x", a)], {"b": b}, 10, out_dtype=np.int32)
        return model, {"x": a}, f"{n}x{n} u8 @ {n}x{n} s8 -> s32"

    return build


def _qlinear_conv(channels: int, size: int, quick: tuple[int, int]) -> Builder:
    """QLinearConv-10 of uint8 x [1, channels, size, size] (the feed, zero point 128) and int8 w [channels,
    channels, 3, 3] (zero point 0), pads 1, into uint8; scales and zero points are initializers."""

    def build(is_quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        c, s = quick if is_quick else (channels, size)
        rng = np.random.default_rng(0)
        x = rng.integers(0, 256, (1, c, s, s), dtype=np.uint8)
        inits = {
            "x_scale": np.array(0.02, np.float32),
            "x_zero_point": np.array(128, np.uint8),
            "w": rng.integers(-128, 128, (c, c, 3, 3), dtype=np.int8),
            "w_scale": np.array(0.004, np.float32),
            "w_zero_point": np.array(0, np.int8),
            "y_scale": np.array(0.5, np.float32),
            "y_zero_point": np.array(120, np.uint8),
        }
        node = helper.make_node("QLinearConv", ["x", *list(inits)[:6], "y_zero_point"], ["y"], pads=[1] * 4)
        text = f"1x{c}x{s}x{s} u8, W {c}x{c}x3x3 s8, pads 1 -> u8"
        return one_node_model(node, [("x", x)], inits, 10), {"x": x}, text

    return build


def _dynamic_quantize_linear(count: int, quick_count: int) -> Builder:
    """DynamicQuantizeLinear-11 of ``count`` standard-normal floats (y, its scale and zero point; the
    graph's output is y)."""

    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import numpy as np
        from onnx import helper

        n = quick_count if quick else count
        x = random_data((n,))
        node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"])
        model = one_node_model(node, [("x", x)], {}, 11, out_dtype=np.uint8)
        return model, {"x": x}, f"{n:,} floats -> u8"

    return build


def _dynamic_int8_model(frames: int, quick_frames: int) -> Builder:
    """A small float model of a TTS-like shape, quantized by onnxruntime.quantization.quantize_dynamic
    (weights int8, per tensor): x [1, 80, frames] (mel frames) through two Conv1d layers (80 -> 256 ->
    256, kernel 5, pads 2) with Relu, transposed to [1, frames, 256], a feed-forward block (MatMul 256 ->
    1024, Relu, MatMul 1024 -> 256, residual Add) and a MatMul 256 -> 80. Every Conv and MatMul becomes
    DynamicQuantizeLinear of its input, ConvInteger or MatMulInteger, and float scaling."""

    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        import tempfile
        from pathlib import Path

        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        from onnxruntime import quantization

        t = quick_frames if quick else frames
        rng = np.random.default_rng(0)
        shapes = {
            "c1": (256, 80, 5),
            "c2": (256, 256, 5),
            "w1": (256, 1024),
            "w2": (1024, 256),
            "w3": (256, 80),
        }
        weights = [
            numpy_helper.from_array(
                (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name
            )
            for name, shape in shapes.items()
        ]
        nodes = [
            helper.make_node("Conv", ["x", "c1"], ["a1"], pads=[2, 2]),
            helper.make_node("Relu", ["a1"], ["r1"]),
            helper.make_node("Conv", ["r1", "c2"], ["a2"], pads=[2, 2]),
            helper.make_node("Relu", ["a2"], ["r2"]),
            helper.make_node("Transpose", ["r2"], ["h"], perm=[0, 2, 1]),
            helper.make_node("MatMul", ["h", "w1"], ["f1"]),
            helper.make_node("Relu", ["f1"], ["g1"]),
            helper.make_node("MatMul", ["g1", "w2"], ["f2"]),
            helper.make_node("Add", ["h", "f2"], ["res"]),
            helper.make_node("MatMul", ["res", "w3"], ["y"]),
        ]
        graph = helper.make_graph(
            nodes,
            "bench",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 80, t])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, t, 80])],
            weights,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        with tempfile.TemporaryDirectory(prefix="customops-bench-") as directory:
            source, target = Path(directory) / "float.onnx", Path(directory) / "int8.onnx"
            onnx.save(model, source)
            quantization.quantize_dynamic(source, target, weight_type=quantization.QuantType.QInt8)
            quantized = onnx.load(target)
        x = random_data((1, 80, t))
        return quantized, {"x": x}, f"1x80x{t}: 2 Conv1d k5 (80->256->256), FFN 256->1024->256, 256->80"

    return build


# --- the activation family: one block (other families add their rows elsewhere) --------------

ACTIVATION_SHAPE, ACTIVATION_QUICK = (1, 64, 160, 160), (1, 8, 40, 40)
"""The activations' workloads: a feature map of 1.6M float32 values (--quick: 12,800)."""

ACTIVATIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("sigmoid", "Sigmoid", {}),
    ("tanh", "Tanh", {}),
    ("erf", "Erf", {}),
    ("gelu", "Gelu", {}),
    ("gelu-tanh", "Gelu", {"approximate": "tanh"}),
    ("softplus", "Softplus", {}),
    ("mish", "Mish", {}),
    ("swish", "Swish", {}),
    ("hardsigmoid", "HardSigmoid", {}),
    ("hardswish", "HardSwish", {}),
    ("elu", "Elu", {}),
    ("selu", "Selu", {}),
    ("celu", "Celu", {}),
)
"""(workload name, op, attributes) of each activation workload."""


def _activation(op: str, attributes: dict[str, Any]) -> Builder:
    """The activation on standard-normal data times 4 (both tails and the middle), at the newest opset
    of the family (24: Swish; Celu-12)."""

    def build(quick: bool) -> tuple[Any, dict[str, Any], str]:
        from onnx import helper

        shape = ACTIVATION_QUICK if quick else ACTIVATION_SHAPE
        x = random_data(shape) * 4
        node = helper.make_node(op, ["x"], ["y"], **attributes)
        return one_node_model(node, [("x", x)], {}, 24), {"x": x}, "x".join(map(str, shape))

    return build


def activation_workloads() -> list[Workload]:
    """A workload per activation (two for Gelu's forms)."""
    return [Workload(f"act-{name}", op, _activation(op, attributes)) for name, op, attributes in ACTIVATIONS]


# ---------------------------------------------------------------------------------------------


def suite() -> list[Workload]:
    """The fixed benchmark suite, in table order."""
    img, img_q = (1, 3, 512, 512), (1, 3, 96, 96)
    big, big_q = (1, 3, 1024, 1024), (1, 3, 128, 128)
    feat, feat_q = (1, 64, 256, 256), (1, 8, 48, 48)
    tiny = (1, 3, 8, 8)
    return [
        Workload("resize-nearest-x2", "Resize", _resize("nearest", img, img_q, 2)),
        Workload("resize-linear-x2", "Resize", _resize("linear", img, img_q, 2)),
        Workload("resize-cubic-x2", "Resize", _resize("cubic", img, img_q, 2)),
        Workload("resize-linear-antialias-div4", "Resize", _resize("linear", big, big_q, 0.25, antialias=1)),
        Workload("resize-cubic-antialias-div4", "Resize", _resize("cubic", big, big_q, 0.25, antialias=1)),
        Workload(
            "resize-nearest-x2-asymmetric-floor",
            "Resize",
            _resize(
                "nearest",
                (1, 128, 80, 80),
                (1, 16, 20, 20),
                2,
                coordinate_transformation_mode="asymmetric",
                nearest_mode="floor",
            ),
        ),
        Workload("pad-constant", "Pad", _pad("constant", feat, feat_q, 3)),
        Workload("pad-reflect", "Pad", _pad("reflect", feat, feat_q, 3)),
        Workload("pad-edge", "Pad", _pad("edge", feat, feat_q, 3)),
        Workload("pad-wrap", "Pad", _pad("wrap", feat, feat_q, 3)),
        Workload("col2im-16ch-3x3", "Col2Im", _col2im(16, 256, 32, 3)),
        Workload("centercroppad-crop", "CenterCropPad", _center_crop_pad(big, big_q, 0.75)),
        Workload("centercroppad-pad", "CenterCropPad", _center_crop_pad(big, big_q, 1.25)),
        Workload("affinegrid-2d", "AffineGrid", _affine_grid((8, 3, 256, 256), (2, 3, 32, 32))),
        Workload("affinegrid-3d", "AffineGrid", _affine_grid((2, 1, 32, 64, 64), (1, 1, 8, 16, 16))),
        Workload("maxroipool-7x7", "MaxRoiPool", _max_roi_pool((1, 256, 64, 64), (1, 16, 32, 32), 200, 20)),
        Workload("roialign-avg", "RoiAlign", _roi_align("avg", 256, 64, 200, (16, 32, 20))),
        Workload("roialign-max", "RoiAlign", _roi_align("max", 256, 64, 200, (16, 32, 20))),
        Workload(
            "gridsample-bilinear", "GridSample", _grid_sample("linear", (1, 64, 128, 128), (1, 8, 32, 32))
        ),
        Workload("gridsample-cubic", "GridSample", _grid_sample("cubic", (1, 64, 128, 128), (1, 8, 32, 32))),
        Workload("small-resize-nearest-x2", "Resize", _resize("nearest", tiny, tiny, 2), small=True),
        Workload("small-resize-linear-x2", "Resize", _resize("linear", tiny, tiny, 2), small=True),
        Workload("small-resize-cubic-x2", "Resize", _resize("cubic", tiny, tiny, 2), small=True),
        Workload("small-pad-reflect", "Pad", _pad("reflect", tiny, tiny, 1), small=True),
        Workload("small-col2im", "Col2Im", _col2im(2, 8, 8, 3), small=True),
        Workload("small-centercroppad", "CenterCropPad", _center_crop_pad(tiny, tiny, 0.75), small=True),
        Workload("small-gridsample-bilinear", "GridSample", _grid_sample("linear", tiny, tiny), small=True),
        Workload("deformconv-64ch-3x3", "DeformConv", _deform_conv(64, 64, 16, 16, mask=False)),
        Workload("deformconv-64ch-3x3-mask", "DeformConv", _deform_conv(64, 64, 16, 16, mask=True)),
        Workload("int8-matmulinteger-512", "MatMulInteger", _matmul_integer(512, 64)),
        Workload("int8-qlinearconv-64ch-3x3", "QLinearConv", _qlinear_conv(64, 56, (8, 16))),
        Workload(
            "int8-dynamicquantizelinear-1m",
            "DynamicQuantizeLinear",
            _dynamic_quantize_linear(1 << 20, 1 << 12),
            stand_ins=False,
        ),
        Workload("int8-dynamic-model", "model", _dynamic_int8_model(200, 16), stand_ins=False),
        *activation_workloads(),
    ]


def select(filter_text: str | None) -> list[Workload]:
    """The workloads whose name contains ``filter_text`` (case-insensitive); all of them by default."""
    workloads = suite()
    if not filter_text:
        return workloads
    wanted = filter_text.lower()
    chosen = [w for w in workloads if wanted in w.name]
    if not chosen:
        names = ", ".join(w.name for w in workloads)
        raise CustomOpsError(f"--filter {filter_text!r} matches no workload; the workloads are: {names}")
    return chosen
