"""Reading and writing models safely: clear errors for bad files, external data kept external, atomic writes."""

from __future__ import annotations

import math
import os
import secrets
import shutil
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import NoReturn

import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto

from customops.dtypes import numpy_dtype
from customops.errors import CustomOpsError
from customops.graphs import check_text, external_location, model_tensors, sparse_tensors
from customops.safeio import check_output_file

_TWO_GB = 2**31

SPARSE_DENSE_LIMIT = 1 << 30
"""The most bytes a model's sparse tensors may take made dense, all together: ONNX Runtime makes every
sparse initializer and sparse Constant dense when it loads a model (in each of compare's sides), so a
file of a few hundred bytes could otherwise ask for terabytes. Real models hold few or none."""


def load_model(path: str | os.PathLike[str]) -> ModelProto:
    """Load a model with its external data; raise :class:`CustomOpsError` naming the problem."""
    return load_model_info(path)[0]


def load_model_info(path: str | os.PathLike[str]) -> tuple[ModelProto, bool]:
    """Like :func:`load_model`; also says whether the file kept any tensor in external data."""
    model, external, _ = load_model_files(path)
    return model, external


def load_model_files(path: str | os.PathLike[str]) -> tuple[ModelProto, bool, list[Path]]:
    """Like :func:`load_model_info`; also lists the files read: the model and its external data files.

    The one loader of every model file customops reads. External data is read only from inside the
    model's directory (see :func:`_external_file`), and only as many bytes as each tensor declares, in all
    no more than the data files hold (tensors whose stored bytes overlap could ask for any amount)."""
    p = Path(path)
    _check_model_path(p)
    try:
        model = onnx.load_model(str(p), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, TypeError) as exc:
        raise CustomOpsError(
            f"{str(p)!r} is not a readable ONNX model ({type(exc).__name__}: {exc})"
        ) from None
    except OSError as exc:
        raise CustomOpsError(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None
    if not model.HasField("graph"):
        raise CustomOpsError(f"{str(p)!r} is not an ONNX model (no graph)")
    check_text(model, repr(str(p)))
    files = [p]
    external = False
    stored: dict[tuple[int, int], int] = {}  # each data file's (device, inode): its size
    read = 0
    for tensor in model_tensors(model):
        if external_location(tensor) is None:
            continue
        external = True
        source = _load_external(p, tensor)
        if source not in files:
            files.append(source)
        _count_stored(p, source, stored)
        read += len(tensor.raw_data)
        if read > sum(stored.values()):
            raise CustomOpsError(
                f"{str(p)!r}: its tensors ask for {read} bytes of external data from files holding "
                f"{sum(stored.values())}; tensors may not share stored bytes (a few bytes on disk would "
                "take any amount of memory)"
            )
    _check_sparse(model, p)
    return model, external, files


def _check_sparse(model: ModelProto, p: Path) -> None:
    """Refuse a model whose sparse tensors take more than :data:`SPARSE_DENSE_LIMIT` bytes made dense."""
    total = 0
    for sparse in sparse_tensors(model):
        if any(d < 0 for d in sparse.dims):
            raise CustomOpsError(f"{str(p)!r}: a sparse tensor has a negative dimension {list(sparse.dims)}")
        dense = onnx.TensorProto(data_type=sparse.values.data_type, dims=sparse.dims)
        total += _declared_bytes(dense) or 8 * math.prod(sparse.dims)
        if total > SPARSE_DENSE_LIMIT:
            raise CustomOpsError(
                f"{str(p)!r}: its sparse tensors take more than {SPARSE_DENSE_LIMIT} bytes made dense "
                f"(ONNX Runtime makes them dense when it loads the model); at most {SPARSE_DENSE_LIMIT} "
                "are taken"
            )


def _count_stored(model_path: Path, source: Path, stored: dict[tuple[int, int], int]) -> None:
    """Add the data file ``source`` to ``stored`` (its identity: its size) once, whatever its spelling."""
    try:
        st = source.stat()
    except OSError as exc:
        raise CustomOpsError(
            f"{str(model_path)!r}: cannot read {str(source)!r}: {exc.strerror or exc}"
        ) from None
    stored.setdefault((st.st_dev, st.st_ino), st.st_size)


def _check_model_path(p: Path) -> None:
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise CustomOpsError(f"model file {str(p)!r} does not exist") from None
    except OSError as exc:
        raise CustomOpsError(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise CustomOpsError(f"model path {str(p)!r} is a directory, not an ONNX file")
    if not stat.S_ISREG(mode):
        raise CustomOpsError(f"model path {str(p)!r} is not a regular file (a device, FIFO or socket)")


_SUB_BYTE_BITS = {
    onnx.TensorProto.INT4: 4,
    onnx.TensorProto.UINT4: 4,
    onnx.TensorProto.FLOAT4E2M1: 4,
    getattr(onnx.TensorProto, "INT2", -1): 2,
    getattr(onnx.TensorProto, "UINT2", -1): 2,
}


def _declared_bytes(tensor: onnx.TensorProto) -> int | None:
    """How many bytes the data of ``tensor`` takes by its element type and dims (None: not fixed)."""
    count = math.prod(tensor.dims)
    bits = _SUB_BYTE_BITS.get(tensor.data_type)
    if bits is not None:
        return (count * bits + 7) // 8
    if tensor.data_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED):
        return None
    try:
        return count * numpy_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError, TypeError):
        return None


def _load_external(model_path: Path, tensor: onnx.TensorProto) -> Path:
    """Read the external data of ``tensor`` into it (raw_data) and return the file it came from; raise
    CustomOpsError naming the tensor and the rule when its location or size is not acceptable."""
    info = {e.key: e.value for e in tensor.external_data}

    def refuse(rule: str) -> NoReturn:
        raise CustomOpsError(f"{str(model_path)!r}: external data of tensor {tensor.name!r}: {rule}")

    source = _external_file(model_path, info.get("location", ""), refuse)
    try:
        offset, length = int(info.get("offset", 0)), info.get("length")
        length = None if length is None else int(length)
    except ValueError:
        refuse("offset and length must be integers")
    declared = _declared_bytes(tensor)
    if declared is None:
        refuse(f"element type {tensor.data_type} cannot be kept in external data")
    size = source.stat().st_size
    available = size - offset if length is None else length
    if offset < 0 or available < 0 or offset + available > size:
        refuse(f"offset {offset} and length {length} lie outside {str(source.name)!r} ({size} bytes)")
    if available != declared:
        refuse(f"{available} bytes stored where the tensor declares {declared} (dims {list(tensor.dims)})")
    try:
        with open(source, "rb") as f:
            f.seek(offset)
            tensor.raw_data = f.read(declared)
    except OSError as exc:
        refuse(f"cannot read {str(source)!r}: {exc.strerror or exc}")
    tensor.ClearField("data_location")  # as if it had never been external
    del tensor.external_data[:]
    return source


def _external_file(model_path: Path, location: str, refuse: Callable[[str], NoReturn]) -> Path:
    """The file ``location`` names: relative, inside the model's directory (no '..', no symlink leading
    out of it), a regular file."""
    if not location:
        refuse("no location")
    if "\x00" in location or len(location) > 4096:
        refuse(f"location {location[:80]!r} holds a NUL character or is over 4096 characters long")
    rel = PurePosixPath(location.replace("\\", "/"))
    if rel.is_absolute() or PureWindowsPath(location).drive:
        refuse(f"location {location!r} is absolute; it must be relative to the model's directory")
    if ".." in rel.parts:
        refuse(f"location {location!r} leads out of the model's directory ('..')")
    base = model_path.absolute().parent
    target = base.joinpath(*rel.parts)
    try:
        real_base, real = base.resolve(), target.resolve()
        is_file, exists = target.is_file(), target.exists()
    except (OSError, ValueError) as exc:
        refuse(f"location {location[:80]!r} cannot be used: {getattr(exc, 'strerror', None) or exc}")
    if real != real_base and real_base not in real.parents:
        refuse(f"location {location!r} is a symlink leading out of the model's directory")
    if not is_file:
        refuse(f"location {location!r} {'is not a regular file' if exists else 'does not exist'}")
    return target


def check_output_spares_input(output: str | os.PathLike[str], inputs: list[Path], *, external: bool) -> None:
    """Raise CustomOpsError when writing ``output`` (and ``<output>.data`` with ``external``) would
    replace one of ``inputs``, the files a command reads (the model first)."""
    targets = [Path(output)]
    if external:
        targets.append(Path(str(output) + ".data"))
    for target in targets:
        for source in inputs:
            try:
                same = target.exists() and source.exists() and os.path.samefile(target, source)
            except OSError:
                same = False
            if same:
                what = "the input model" if source == inputs[0] else f"also an input ({str(source)!r})"
                raise CustomOpsError(
                    f"output {str(target)!r} is {what}; the input is never modified: choose another path"
                )


def _unshaped(model: ModelProto) -> list[onnx.ValueInfoProto]:
    """Main-graph inputs and outputs of tensor type without a shape field (unknown rank)."""
    return [
        v
        for v in (*model.graph.input, *model.graph.output)
        if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")
    ]


def check_model_file(path: str | os.PathLike[str]) -> None:
    """Run the ONNX checker on a model file; raise :class:`CustomOpsError` with its message, on one line,
    on failure.

    One rule is relaxed: the checker wants a shape on every main-graph input and output, which ONNX
    Runtime does not (``make_tensor_value_info(name, type, None)`` leaves it out). A model whose only
    fault is that passes. (With external data the relaxed check cannot run in memory; the message then
    names the values without a shape.)
    """
    try:
        onnx.checker.check_model(str(path))
        return
    except onnx.checker.ValidationError as exc:
        message = str(exc).strip()
    model = onnx.load_model(str(path), load_external_data=False)
    unshaped = _unshaped(model)
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in model_tensors(model))
    note = ""
    if unshaped and not external:  # checked in memory, where external data could not be found
        for v in unshaped:
            v.type.tensor_type.shape.SetInParent()  # any shape will do for the checker
        try:
            onnx.checker.check_model(model)
            return
        except onnx.checker.ValidationError as exc:
            message = str(exc).strip()  # another fault: report that one
    elif unshaped:
        note = f" (without a shape: {', '.join(repr(v.name) for v in unshaped)})"
    text = " ".join(message.split()) or "ValidationError"  # one line, all of it (the checker wraps)
    if len(text) > 300:
        text = text[:297] + "..."
    raise CustomOpsError(f"{str(path)!r} fails the ONNX checker: {text}{note}") from None


def save_model(model: ModelProto, path: str | os.PathLike[str], *, external: bool | None = None) -> None:
    """Write ``model`` to ``path`` atomically: it appears complete or not at all.

    With ``external`` (default: when the model is 2 GB or more) tensors of 1 KiB and more go to
    ``<name>.data`` beside ``path``. An existing ``path`` (or data file) that is not a regular file (a
    device, a FIFO) is refused, never replaced. The work happens in a hidden directory beside ``path``
    that is removed whatever happens, an interruption (KeyboardInterrupt, SystemExit) included.
    """
    out = Path(path)
    if external is None:
        external = model.ByteSize() >= _TWO_GB
    check_output_file(out, "output")
    if external:
        check_output_file(Path(str(out) + ".data"), "output data file")
    tmpdir: Path | None = None
    try:
        # named before it is made, so that an interruption at any point after it exists removes it
        tmpdir = out.absolute().parent / f".customops-{secrets.token_hex(8)}"
        try:
            tmpdir.mkdir(mode=0o700)
        except FileExistsError:
            tmpdir = None  # not ours
            raise
        _write_into(model, tmpdir, out, external)
    except CustomOpsError:
        raise
    except (OSError, ValueError) as exc:
        raise CustomOpsError(f"cannot write {str(out)!r}: {exc}") from None
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _write_into(model: ModelProto, tmpdir: Path, out: Path, external: bool) -> None:
    """Save ``model`` in ``tmpdir`` and move it (and its data file) to ``out``."""
    tmp_model = tmpdir / out.name
    if not external:
        onnx.save_model(model, str(tmp_model))
        os.replace(tmp_model, out)
        return
    data_name = out.name + ".data"
    copy = ModelProto()
    copy.CopyFrom(model)
    onnx.save_model(
        copy,
        str(tmp_model),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data_name,
        size_threshold=1024,
    )
    if (tmpdir / data_name).exists():
        os.replace(tmpdir / data_name, out.absolute().parent / data_name)
    os.replace(tmp_model, out)
