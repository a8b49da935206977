"""Write the example models bundled in customops/examples/ (``python tools/make_models.py [--out DIR]``).

- ``preprocess_pipeline.onnx`` (opset 19): three preprocessing branches built from the operators
  customops re-implements, on which ONNX Runtime's built-in kernels and ours agree:
  an image branch (uint8 1x3x60x80 -> Cast -> Resize linear/half_pixel to 96x128 by ``sizes`` ->
  Pad reflect 8 -> CenterCropPad to 120x128 -> Mul 1/255, Sub mean, Div std), an audio branch (a
  Whisper-style STFT centring: Pad reflect 200 samples on each side of a 1x1600 waveform) and a
  detection neck (Resize nearest x2, asymmetric + floor, of a 1x16x10x12 feature map, Concat with a
  1x8x20x24 lateral map).
- ``ort_deviation.onnx`` (opset 17, so Resize-13 as a PyTorch or TF export writes it): Mul -> Resize
  linear/align_corners with scales 0.6 on a 1x3x32x48 input -> Add. ORT 1.32 takes ``length_resized``
  in the align_corners formula as the integer output length, the spec (and its backend tests, and
  onnx.reference) as input length x scale (docs/ort-deviations.md, R-ALIGN-CORNERS-INT-LENGTH).

The models hold no random data; every parameter is an initializer, every graph input has a fixed
shape, and the bytes are the same on every run (tests/test_models.py checks the committed files).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRODUCER = "customops tools/make_models.py"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "customops" / "examples"

#: Image branch of the pipeline.
IMAGE_SHAPE = (1, 3, 60, 80)
RESIZED_SHAPE = (1, 3, 96, 128)
IMAGE_PADS = (0, 0, 8, 8, 0, 0, 8, 8)
CROP_SHAPE = (120, 128)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
#: Audio branch: 0.1 s at 16 kHz, centred for an STFT with n_fft = 400 (pad n_fft // 2 per side).
WAVEFORM_SHAPE = (1, 1600)
AUDIO_PAD = 200
#: Detection neck: a coarse map upsampled x2 and concatenated with the finer lateral map.
P5_SHAPE = (1, 16, 10, 12)
P4_SHAPE = (1, 8, 20, 24)

#: The deviation model: align_corners downsampling by 0.6 where input length x 0.6 is fractional.
DEVIATION_SHAPE = (1, 3, 32, 48)
DEVIATION_SCALE = 0.6
DEVIATION_GAIN = 0.5
DEVIATION_BIAS = (0.1, -0.2, 0.3)


def _init(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def _finish(graph: onnx.GraphProto, opset: int, ir_version: int, doc: str) -> onnx.ModelProto:
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=PRODUCER, doc_string=doc
    )
    model.ir_version = ir_version
    onnx.checker.check_model(model, full_check=True)
    return model


def preprocess_pipeline() -> onnx.ModelProto:
    """Image, audio and detection-neck preprocessing on which ORT's kernels and ours agree (opset 19)."""
    n = helper.make_node
    out_h, out_w = CROP_SHAPE
    nodes = [
        n("Cast", ["image"], ["image_f32"], name="image_to_float", to=TensorProto.FLOAT),
        n(
            "Resize",
            ["image_f32", "", "", "resize_sizes"],
            ["image_resized"],
            name="image_resize_bilinear",
            mode="linear",
            coordinate_transformation_mode="half_pixel",
            doc_string="60x80 -> 96x128 (x1.6), bilinear, half_pixel, output size given by sizes",
        ),
        n(
            "Pad",
            ["image_resized", "image_pads"],
            ["image_padded"],
            name="image_pad_reflect",
            mode="reflect",
            doc_string="8 pixels of reflection around the image: 112x144",
        ),
        n(
            "CenterCropPad",
            ["image_padded", "crop_shape"],
            ["image_cropped"],
            name="image_center_crop_pad",
            axes=[2, 3],
            doc_string="to 120x128: height zero-padded by 4+4, width cropped by 8+8",
        ),
        n("Mul", ["image_cropped", "inv_255"], ["image_unit"], name="image_scale"),
        n("Sub", ["image_unit", "mean"], ["image_centred"], name="image_sub_mean"),
        n("Div", ["image_centred", "std"], ["pixels"], name="image_div_std"),
        n(
            "Pad",
            ["waveform", "audio_pads"],
            ["waveform_centred"],
            name="audio_pad_reflect",
            mode="reflect",
            doc_string="STFT centring: n_fft // 2 = 200 reflected samples on each side",
        ),
        n(
            "Resize",
            ["p5", "", "neck_scales"],
            ["p5_up"],
            name="neck_upsample_nearest",
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
            doc_string="nearest x2 as in a YOLO/FPN neck",
        ),
        n("Concat", ["p5_up", "p4"], ["neck"], name="neck_concat", axis=1),
    ]
    initializers = [
        _init("resize_sizes", np.array(RESIZED_SHAPE, np.int64)),
        _init("image_pads", np.array(IMAGE_PADS, np.int64)),
        _init("crop_shape", np.array(CROP_SHAPE, np.int64)),
        _init("inv_255", np.array(1 / 255, np.float32)),
        _init("mean", np.array(MEAN, np.float32).reshape(1, 3, 1, 1)),
        _init("std", np.array(STD, np.float32).reshape(1, 3, 1, 1)),
        _init("audio_pads", np.array([0, AUDIO_PAD, 0, AUDIO_PAD], np.int64)),
        _init("neck_scales", np.array([1, 1, 2, 2], np.float32)),
    ]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "preprocess_pipeline",
        [
            vi("image", TensorProto.UINT8, IMAGE_SHAPE),
            vi("waveform", TensorProto.FLOAT, WAVEFORM_SHAPE),
            vi("p5", TensorProto.FLOAT, P5_SHAPE),
            vi("p4", TensorProto.FLOAT, P4_SHAPE),
        ],
        [
            vi("pixels", TensorProto.FLOAT, [1, 3, out_h, out_w]),
            vi("waveform_centred", TensorProto.FLOAT, [1, WAVEFORM_SHAPE[1] + 2 * AUDIO_PAD]),
            vi("neck", TensorProto.FLOAT, [1, P5_SHAPE[1] + P4_SHAPE[1], *P4_SHAPE[2:]]),
        ],
        initializers,
    )
    return _finish(
        graph,
        opset=19,
        ir_version=9,
        doc="customops example: image / audio / detection-neck preprocessing on which ONNX Runtime's "
        "built-in kernels and customops' agree.",
    )


def ort_deviation() -> onnx.ModelProto:
    """Mul -> Resize (linear, align_corners, scales 0.6) -> Add, opset 17: ORT 1.32 leaves the spec."""
    n = helper.make_node
    out_h, out_w = (int(np.floor(d * np.float64(np.float32(DEVIATION_SCALE)))) for d in DEVIATION_SHAPE[2:])
    nodes = [
        n("Mul", ["image", "gain"], ["scaled"], name="scale_input"),
        n(
            "Resize",
            ["scaled", "", "scales"],
            ["resized"],
            name="downsample_align_corners",
            mode="linear",
            coordinate_transformation_mode="align_corners",
            doc_string="bilinear, align_corners, scales 0.6: 32x48 -> 19x28 (32 x 0.6 = 19.2, 48 x 0.6 = 28.8)",
        ),
        n("Add", ["resized", "bias"], ["output"], name="add_bias"),
    ]
    initializers = [
        _init("gain", np.array(DEVIATION_GAIN, np.float32)),
        _init("scales", np.array([1, 1, DEVIATION_SCALE, DEVIATION_SCALE], np.float32)),
        _init("bias", np.array(DEVIATION_BIAS, np.float32).reshape(1, 3, 1, 1)),
    ]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "ort_deviation",
        [vi("image", TensorProto.FLOAT, DEVIATION_SHAPE)],
        [vi("output", TensorProto.FLOAT, [*DEVIATION_SHAPE[:2], out_h, out_w])],
        initializers,
    )
    return _finish(
        graph,
        opset=17,
        ir_version=8,
        doc="customops example: Resize with align_corners and fractional downsampling scales, on which "
        "ONNX Runtime 1.32 uses the integer output length where the ONNX spec uses input length x scale "
        "(docs/ort-deviations.md, R-ALIGN-CORNERS-INT-LENGTH).",
    )


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "preprocess_pipeline.onnx": preprocess_pipeline,
    "ort_deviation.onnx": ort_deviation,
}


def write_models(out: Path) -> list[Path]:
    """Write every model of :data:`MODELS` into the directory ``out`` (created if needed)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in MODELS.items():
        path = out / name
        path.write_bytes(build().SerializeToString(deterministic=True))
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--out DIR`` (default: the package's customops/examples/)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output directory (default: customops/examples/)"
    )
    args = parser.parse_args(argv)
    for path in write_models(args.out):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
