"""ONNX test cases on disk, the layout of onnx's backend node tests, written and read in one place for
compare's ``--save-repro`` and the fuzzer's reproducers::

    model.onnx
    test_data_set_0/input_0.pb ... input_N.pb   (the graph inputs, in order)
    test_data_set_0/output_0.pb                 (the expected output, when there is one)
    repro.py                                    (reruns it on ONNX Runtime alone; exits 1 while it differs)

Strings are TensorProto strings (bytes; a Python str is written as UTF-8, read back as str when it is
valid UTF-8). A tensor file never points at external data.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import Message
from onnx import ModelProto, TensorProto, helper, numpy_helper

from customops import dtypes
from customops.errors import CustomOpsError
from customops.graphs import model_tensors
from customops.safeio import read_bounded

DATA_SET = "test_data_set_0"


def tensor_proto(value: np.ndarray, name: str) -> TensorProto:
    """A TensorProto of ``value`` named ``name`` (object arrays as strings: bytes kept, str as UTF-8)."""
    value = np.asarray(value)
    if value.dtype == object:
        items = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in value.ravel()]
        return helper.make_tensor(name, TensorProto.STRING, value.shape, items)
    return numpy_helper.from_array(value, name)


def points_outside(tensor: TensorProto) -> bool:
    """Whether ``tensor`` points at external data (by its data location or by any external-data entry):
    onnx and ONNX Runtime would read it from a file named by the data, resolved against the model's
    directory or, for a tensor or a model read from bytes, the current directory."""
    return tensor.data_location == TensorProto.EXTERNAL or len(tensor.external_data) > 0


def check_self_contained(data: bytes, name: str, where: str) -> None:
    """Raise CustomOpsError unless ``data``, the file ``name`` of a test case (``model.onnx``, else an
    ``input_N.pb`` or ``output_0.pb`` tensor), parses and keeps no tensor in external data: a test case's
    files may not point at other files (repro.py, ``onnx.load`` and ONNX Runtime would follow them)."""
    proto: Message = ModelProto() if name.endswith(".onnx") else TensorProto()
    try:
        proto.ParseFromString(data)
    except Exception:  # protobuf's DecodeError, or its recursion limit, on bytes from a file
        raise CustomOpsError(f"{where} is not a {type(proto).__name__}") from None
    for tensor in model_tensors(proto):
        if points_outside(tensor):
            raise CustomOpsError(
                f"{where}: tensor {tensor.name!r} points at external data; a test case's files may not"
            )


def tensor_value(tensor: TensorProto, where: str) -> np.ndarray:
    """The array of a TensorProto read from a file: strings kept as bytes where they are not UTF-8 (ONNX
    strings are bytes), external data refused (a tensor file may not point at other files)."""
    if points_outside(tensor):
        raise CustomOpsError(f"{where}: tensor {tensor.name!r} points at external data, which is not read")
    if tensor.data_type == TensorProto.STRING:
        items = list(tensor.string_data)
        try:
            values: list[Any] = [b.decode("utf-8") for b in items]
        except UnicodeDecodeError:
            values = items
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array.reshape(tuple(tensor.dims))
    return numpy_helper.to_array(tensor)


def write_test_case(
    into: Path, model: ModelProto, feed: dict[str, np.ndarray], expected: np.ndarray | None
) -> None:
    """Write ``model`` and its inputs (``feed`` by graph input name) into the directory ``into``, with
    ``expected`` as output_0.pb when given. ``into`` is the caller's fresh directory (safeio.atomic_dir)."""
    data = into / DATA_SET
    data.mkdir()
    (into / "model.onnx").write_bytes(model.SerializeToString())
    for i, inp in enumerate(model.graph.input):
        (data / f"input_{i}.pb").write_bytes(tensor_proto(feed[inp.name], inp.name).SerializeToString())
    if expected is not None:
        name = model.graph.output[0].name
        (data / "output_0.pb").write_bytes(tensor_proto(expected, name).SerializeToString())
    (into / REPRO_SCRIPT).write_text(repro_script())


def versions_line() -> str:
    """The versions a test case was made with, for its README.txt (an ORT issue asks for them)."""
    import platform

    import onnx
    import onnxruntime as ort

    import customops

    return (
        f"made with customops {customops.__version__}, onnx {onnx.__version__}, onnxruntime "
        f"{ort.__version__}, numpy {np.__version__}, Python {platform.python_version()}, {platform.platform()}"
    )


def first_differences(got: np.ndarray | None, want: np.ndarray | None, count: int = 5) -> list[str]:
    """Up to ``count`` lines ``at [i, j]: ONNX Runtime X, specification Y`` where ``got`` (ORT's output)
    and ``want`` (the spec's) differ; none when either is missing or their shapes differ."""
    if got is None or want is None:
        return []
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return [f"shapes differ: ONNX Runtime {list(got.shape)}, specification {list(want.shape)}"]
    if got.dtype.kind in "fc" and want.dtype.kind in "fc":
        with np.errstate(all="ignore"):
            wrong = ~np.isclose(got, want, rtol=0.0, atol=0.0, equal_nan=True)
    else:
        wrong = np.asarray(got != want)
    lines = []
    for at in np.argwhere(wrong)[:count]:
        where = tuple(int(i) for i in at)
        lines.append(f"at {list(where)}: ONNX Runtime {got[where]!s}, specification {want[where]!s}")
    return lines


REPRO_SCRIPT = "repro.py"
"""The script beside each test case that reproduces it with onnx, onnxruntime and numpy alone."""


def repro_script() -> str:
    """The text of :data:`REPRO_SCRIPT` (customops.eval.cases.repro_script, a standalone program)."""
    return (Path(__file__).with_name("repro_script.py")).read_text(encoding="utf-8")


def _in_memory(tensor: TensorProto, size: int, budget: int, path: Path) -> int:
    """The bytes ``tensor`` (read from ``size`` bytes of ``path``) takes once an array: at least its file's
    size, and for strings their bytes plus customops.dtypes.STRING_ELEMENT each (two bytes of a file make
    an empty string); CustomOpsError when that is over ``budget``, before the array is made."""
    need = size
    if tensor.data_type == TensorProto.STRING:
        need = len(tensor.string_data) * dtypes.STRING_ELEMENT + size
    if need > budget:
        raise CustomOpsError(
            f"{str(path)!r}: its tensor would take {need} bytes in memory (a string counts "
            f"{dtypes.STRING_ELEMENT} bytes and more), over the {budget} left of the inputs' limit"
        )
    return need


def read_inputs(directory: Path, names: list[str], limit: int) -> dict[str, np.ndarray]:
    """The input_N.pb files of ``directory`` by graph input name (a tensor's own name when it is one of
    ``names``, else the N-th name), at most ``limit`` bytes in all as they take memory (strings counted by
    customops.dtypes.STRING_ELEMENT each too); CustomOpsError for a file that is not a TensorProto."""
    files = sorted(directory.glob("input_*.pb"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    if not files:
        raise CustomOpsError(f"no input_N.pb files in {str(directory)!r}")
    feed: dict[str, np.ndarray] = {}
    budget = limit
    for i, path in enumerate(files):
        raw = read_bounded(path, budget, "input file")
        tensor = TensorProto()
        try:
            tensor.ParseFromString(raw)
            budget -= _in_memory(tensor, len(raw), budget, path)
            value = tensor_value(tensor, str(path))
        except CustomOpsError:
            raise
        except Exception as exc:
            raise CustomOpsError(f"{str(path)!r} is not a TensorProto ({type(exc).__name__})") from None
        name = (
            tensor.name
            if tensor.name in names
            else (names[i] if i < len(names) else tensor.name or path.stem)
        )
        feed[name] = value
    return feed
