"""Reproduce this test case with ONNX Runtime alone: python repro.py

Runs model.onnx with ONNX Runtime's CPU kernels on test_data_set_0/input_N.pb and compares the result
with test_data_set_0/output_0.pb, the output the ONNX specification gives (written by customops, a
spec-exact second implementation). Without output_0.pb the specification rejects the case, and ONNX
Runtime should refuse it. Prints the versions, both outputs where they differ, and exits 1 while ONNX
Runtime disagrees (0 once it agrees). Needs only onnx, onnxruntime and numpy; paths are relative to this
file, so the directory can be attached to an issue as it is.

The files are read as data from someone else: only regular files of this directory, never through a
symbolic link, and a tensor anywhere in them that points at external data (another file, which onnx
and ONNX Runtime would look for in the current directory) is refused (exit 2).
"""

import os
import platform
import stat
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
DATA = HERE / "test_data_set_0"
TOLERANCES = {"float64": (1e-12, 1e-12), "float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3)}
"""(rtol, atol) per float type; other types must match exactly."""


def versions() -> str:
    return (
        f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}, "
        f"Python {platform.python_version()}, {platform.platform()}"
    )


class Refused(Exception):
    """A file of this directory that is not read (exit 2)."""


def read(path: Path) -> bytes:
    """The bytes of ``path``, a regular file of this directory reached through no symbolic link."""
    if DATA.is_symlink() and DATA in path.parents:
        raise Refused(f"{DATA.name} is a symbolic link")
    flags = (
        os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Refused(f"cannot read {path.name}: {exc.strerror} (symbolic links are not followed)") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused(f"{path.name} is not a regular file")
        return f.read()


def self_contained(message: object, where: str) -> None:
    """Refuse ``message`` if a tensor anywhere in it (initializers, attributes, subgraphs, functions)
    points at external data."""
    todo = [message]
    while todo:
        item = todo.pop()
        if isinstance(item, onnx.TensorProto) and (
            item.data_location == onnx.TensorProto.EXTERNAL or len(item.external_data)
        ):
            raise Refused(f"{where}: tensor {item.name!r} points at external data, which is not read")
        for field, value in item.ListFields():
            if field.message_type is not None:  # a message, or a list of them
                todo.extend([value] if hasattr(value, "ListFields") else value)


def tensor(path: Path) -> np.ndarray:
    proto = onnx.TensorProto()
    proto.ParseFromString(read(path))
    self_contained(proto, path.name)
    value = numpy_helper.to_array(proto)
    if value.dtype == object:  # ONNX strings are bytes; onnxruntime takes str
        value = np.vectorize(lambda b: b.decode("utf-8", "replace"), otypes=[object])(value)
    return value


def feeds(model: onnx.ModelProto) -> dict:
    constants = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in constants]
    return {name: tensor(DATA / f"input_{i}.pb") for i, name in enumerate(names)}


def mismatches(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where ``got`` and ``want`` (of one shape) differ beyond the tolerance of their type."""
    if got.dtype.kind in "fc":
        rtol, atol = TOLERANCES.get(want.dtype.name, (0.0, 0.0))
        with np.errstate(all="ignore"):
            return ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return np.asarray(got != want)


def main() -> int:
    print(f"versions: {versions()}")
    try:
        model = onnx.load_model_from_string(read(HERE / "model.onnx"))
        self_contained(model, "model.onnx")
        inputs = feeds(model)
    except Exception as exc:  # files from someone else: refused, or not what they should be
        print(f"repro.py: refused: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    expected = DATA / "output_0.pb"
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got = np.asarray(session.run(None, inputs)[0])
    except Exception as exc:
        print(f"ONNX Runtime refuses the case: {type(exc).__name__}: {exc}")
        if os.path.lexists(expected):
            print("the specification gives an output for it (test_data_set_0/output_0.pb): DISAGREE")
            return 1
        print("the specification rejects it too: AGREE")
        return 0
    if not os.path.lexists(expected):
        print(
            f"ONNX Runtime accepts the case (output shape {list(got.shape)}); the specification rejects it: DISAGREE"
        )
        return 1
    try:
        want = tensor(expected)
    except Exception as exc:
        print(f"repro.py: refused: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(f"ONNX Runtime: {list(got.shape)} {got.dtype}; specification: {list(want.shape)} {want.dtype}")
    if got.shape != want.shape or got.dtype != want.dtype:
        print("DISAGREE: shape or element type")
        return 1
    wrong = mismatches(got, want)
    if not wrong.any():
        print("AGREE")
        return 0
    for at in np.argwhere(wrong)[:10]:
        where = tuple(int(i) for i in at)
        print(f"  at {list(where)}: ONNX Runtime {got[where]!s}, specification {want[where]!s}")
    print(f"DISAGREE: {int(np.count_nonzero(wrong))} of {wrong.size} element(s) differ")
    return 1


if __name__ == "__main__":
    sys.exit(main())
