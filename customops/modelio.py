"""Reading and writing models safely: clear errors for bad files, external data kept external, atomic writes."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto

from customops.errors import CustomOpsError

_TWO_GB = 2**31


def load_model(path: str | os.PathLike[str]) -> ModelProto:
    """Load a model with its external data; raise :class:`CustomOpsError` naming the problem."""
    return load_model_info(path)[0]


def load_model_info(path: str | os.PathLike[str]) -> tuple[ModelProto, bool]:
    """Like :func:`load_model`; also says whether the file kept any tensor in external data."""
    model, external, _ = load_model_files(path)
    return model, external


def load_model_files(path: str | os.PathLike[str]) -> tuple[ModelProto, bool, list[Path]]:
    """Like :func:`load_model_info`; also lists the files read: the model and its external data files."""
    p = Path(path)
    if not p.exists():
        raise CustomOpsError(f"model file {str(p)!r} does not exist")
    if p.is_dir():
        raise CustomOpsError(f"model path {str(p)!r} is a directory, not an ONNX file")
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
    locations = _external_locations(model)
    external = bool(locations)
    files = [p]
    for location in locations:
        if location and p.parent / location not in files:
            files.append(p.parent / location)
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(p.parent))
    except (OSError, ValueError) as exc:
        raise CustomOpsError(f"cannot read the external data of {str(p)!r}: {exc}") from None
    return model, external, files


def _external_locations(model: ModelProto) -> list[str]:
    """The ``location`` of every tensor kept in external data ("" where a tensor names none)."""
    return [
        next((e.value for e in t.external_data if e.key == "location"), "")
        for t in onnx.external_data_helper._get_all_tensors(model)
        if t.data_location == onnx.TensorProto.EXTERNAL
    ]


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
    external = bool(_external_locations(model))
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
    ``<name>.data`` beside ``path``.
    """
    out = Path(path)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise CustomOpsError(f"output directory {str(parent)!r} does not exist")
    if out.is_dir():
        raise CustomOpsError(f"output path {str(out)!r} is a directory")
    if external is None:
        external = model.ByteSize() >= _TWO_GB
    tmpdir = Path(tempfile.mkdtemp(prefix=".customops-", dir=parent))
    try:
        tmp_model = tmpdir / out.name
        if external:
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
                os.replace(tmpdir / data_name, parent / data_name)
        else:
            onnx.save_model(model, str(tmp_model))
        os.replace(tmp_model, out)
    except CustomOpsError:
        raise
    except (OSError, ValueError) as exc:
        raise CustomOpsError(f"cannot write {str(out)!r}: {exc}") from None
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
