"""Arrays in files, read as untrusted data and written whole: .npz archives (every member's .npy header
checked before numpy allocates, never unpickled), Polygraphy's JSON encoding of arrays (base64 of a .npy,
an output's lazy array, the per-iteration files of a directory). Every read is bounded by a limit its
caller gives: compare's inputs (customops.comparison.inputs.INPUT_LIMIT) or the outputs it loads
(customops.comparison.saved.LOADED_LIMIT)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from customops import dtypes
from customops.errors import CustomOpsError
from customops.eval.running.messages import described
from customops.safeio import open_bounded, write_atomic


def first_iteration(directory: Path) -> Path | None:
    """The first (by name, as Polygraphy orders them) ``*.json`` file of a directory of Polygraphy's
    per-iteration files (``polygraphy run --save-inputs DIR`` or ``--save-outputs DIR``: one file per
    iteration, ``0000000000.json`` first); None when it holds none."""
    try:
        names = [e.name for e in os.scandir(directory) if e.name.lower().endswith(".json")]
    except OSError as exc:
        raise CustomOpsError(f"cannot list {str(directory)!r}: {exc.strerror or exc}") from None
    return directory / min(names) if names else None


def read_npz(path: Path, limit: int, kind: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file (``kind``: what it holds, for messages), read as untrusted: at most
    ``limit`` bytes on disk and in memory, every header checked before numpy allocates, never
    unpickled."""
    with open_bounded(path, limit, kind) as f:
        return npz_arrays(f, f"{str(path)!r} is not a readable .npz file", repr(str(path)), limit)[0]


def npz_arrays(f: Any, what: str, name: str, limit: int, spent: int = 0) -> tuple[dict[str, np.ndarray], int]:
    """The arrays of the .npz archive open as ``f`` (a seekable binary file), and the bytes they take in
    memory: every member's header checked before numpy allocates (they and ``spent``, bytes already
    taken, at most ``limit`` together), never unpickled; CustomOpsError naming ``what``
    (``name``: the file, or the array that holds the archive, as the message shows it) otherwise."""
    import zipfile

    try:
        with zipfile.ZipFile(f) as z:
            declared = sum(info.file_size for info in z.infolist())
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise CustomOpsError(f"{what} ({type(exc).__name__}: an .npz is a zip of .npy arrays)") from None
    if declared > limit - spent:
        raise CustomOpsError(f"{what}: its arrays take {declared} bytes, over the {limit} allowed")
    f.seek(0)
    total = _check_npz_headers(f, what, name, limit, spent)
    f.seek(0)
    return _npz_arrays(f, name, what), total


def npy_declared(fp: Any, available: int) -> int:
    """The bytes the .npy array at ``fp`` will take in memory once read (customops.dtypes.declared_nbytes of
    the shape and dtype its header declares); ValueError when the header declares more data than the
    ``available`` bytes hold, or a dimension that is negative or past int64 (numpy reads any integer
    there, then counts the elements in int64: a traceback, or a wrapped count and an array of another
    shape). numpy allocates what the header declares before reading the data, so a crafted header is
    checked first; a zero-size element type (``<U0``) holds no data but still counts its elements."""
    start = fp.tell()
    version = np.lib.format.read_magic(fp)
    header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = header(fp)
    if not all(0 <= d < 2**63 for d in shape):  # numpy takes any int; its int64 count then overflows or wraps
        raise ValueError(f"its header declares the shape {shape!r}: each dimension from 0 to 2**63 - 1")
    if math.prod(shape) * dtype.itemsize > available - (fp.tell() - start):
        raise ValueError("its header declares more data than it holds")
    return dtypes.declared_nbytes(shape, dtype)


def check_declared(total: int, what: str, limit: int) -> None:
    """Refuse arrays that would take ``total`` bytes in memory, past ``limit``."""
    if total > limit:
        raise CustomOpsError(
            f"{what}: its arrays would take {total} bytes in memory (a string element counts "
            f"{dtypes.STRING_ELEMENT} bytes and more, any other at least 1), over the {limit} allowed"
        )


def _check_npz_headers(f: Any, what: str, name: str, limit: int, spent: int = 0) -> int:
    """Refuse an .npz member that is not a .npy array or whose header declares more array bytes than the
    member holds, and arrays that would take more than ``limit`` bytes in memory together with
    ``spent``; returns the bytes they take."""
    import zipfile

    total = spent
    try:
        with zipfile.ZipFile(f) as z:
            for info in z.infolist():
                # every member, whatever its name: numpy reads one named 'x' as an array too (as 'x.npy')
                with z.open(info) as member:
                    try:
                        total += npy_declared(member, info.file_size)
                    except ValueError as exc:
                        raise CustomOpsError(f"{what}: {info.filename!r}: {exc}") from None
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise CustomOpsError(f"{what} ({described(exc)})") from None
    check_declared(total, name, limit)
    return total


def _npz_arrays(f: Any, name: str, what: str) -> dict[str, np.ndarray]:
    try:
        with np.load(f, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise CustomOpsError(
                f"{name} holds Python objects, which are never unpickled: save strings as unicode "
                "or bytes arrays (np.str_, np.bytes_)"
            ) from None
        raise CustomOpsError(f"{what} ({described(exc)})") from None
    except Exception as exc:
        raise CustomOpsError(f"{what} ({type(exc).__name__})") from None


POLYGRAPHY_CLASS = "polygraphy_class"
"""The key that names the class an object of Polygraphy's JSON files encodes (``ndarray``, ``LazyArray``,
``IterationResult``, ``RunResults``)."""

LAZY_CLASSES = ("LazyArray", "LazyNumpyArray")
"""Polygraphy's wrappers of an output array in a RunResults file (``{"values": <ndarray>,
"polygraphy_class": ...}``): ``LazyArray`` since Polygraphy 0.48, ``LazyNumpyArray`` before."""

_LEGACY_PREFIX, _LEGACY_MARK = "__polygraphy_encoded_", "polygraphy_serialized_json_type"
"""Polygraphy's older way of naming a class: ``{"__polygraphy_encoded_<class>": "polygraphy_serialized_json_type"}``."""


def polygraphy_class(value: Any) -> str | None:
    """The class an object of Polygraphy's JSON files encodes (its ``polygraphy_class``, or the older
    ``__polygraphy_encoded_<class>`` marker); None: a plain object."""
    if not isinstance(value, dict):
        return None
    found = value.get(POLYGRAPHY_CLASS)
    if isinstance(found, str):
        return found
    legacy = (k for k, v in value.items() if str(k).startswith(_LEGACY_PREFIX) and v == _LEGACY_MARK)
    return next((str(k).removeprefix(_LEGACY_PREFIX) for k in legacy), None)


def decode_arrays(encoded: dict[str, Any], what: str, noun: str, limit: int) -> dict[str, np.ndarray]:
    """Polygraphy's encoded arrays ({name: {"array": base64 of a .npy, "polygraphy_class": "ndarray"}},
    each possibly wrapped as an output's lazy array, :data:`LAZY_CLASSES`; older Polygraphy wrote a
    compressed .npz in place of the .npy: its first array), decoded without pickle, at most ``limit``
    bytes in memory together; CustomOpsError naming ``what`` and the ``noun``
    (input, output) otherwise."""
    import base64
    import binascii

    arrays, total = {}, 0
    for name, value in encoded.items():
        if polygraphy_class(value) in LAZY_CLASSES:
            value = value.get("values")
        data = value.get("array") if isinstance(value, dict) else None
        if not isinstance(data, str):
            torch = isinstance(value, dict) and "tensor" in value
            why = (
                ": a torch tensor (saved by pickle, which is never read): save numpy arrays" if torch else ""
            )
            raise CustomOpsError(f"{what}: {noun} {str(name)!r} is not an encoded array{why}")
        label = f"{what}: {noun} {str(name)!r}"
        try:
            arrays[str(name)], total = _decoded(base64.b64decode(data, validate=True), label, total, limit)
        except (ValueError, binascii.Error) as exc:
            raise CustomOpsError(f"{label} ({described(exc)})") from None
    return arrays


def _decoded(raw: bytes, label: str, spent: int, limit: int) -> tuple[np.ndarray, int]:
    """The array of one of Polygraphy's encoded arrays (a .npy, or an .npz: its first array), and the
    bytes taken in memory with ``spent``, checked against ``limit`` before numpy allocates."""
    import io

    if raw[:2] == b"PK":  # a zip: the compressed .npz of older Polygraphy
        found, total = npz_arrays(io.BytesIO(raw), label, label, limit, spent)
        if not found:
            raise CustomOpsError(f"{label}: an .npz that holds no array")
        return next(iter(found.values())), total
    total = spent + npy_declared(io.BytesIO(raw), len(raw))
    check_declared(total, label, limit)
    try:
        return np.load(io.BytesIO(raw), allow_pickle=False), total
    except ValueError:
        raise  # named by the caller (decode_arrays), as a header's faults are
    except Exception as exc:  # numpy on a crafted .npy: anything it raises is this file's fault
        raise CustomOpsError(f"{label} ({type(exc).__name__})") from None


def encoded_array(value: np.ndarray) -> dict[str, str]:
    """One array as Polygraphy's JSON files hold it: base64 of its .npy (strings as a unicode array), of
    class ``ndarray``."""
    import base64
    import io

    buffer = io.BytesIO()
    np.save(buffer, value.astype(str) if value.dtype == object else value, allow_pickle=False)
    return {"array": base64.b64encode(buffer.getvalue()).decode(), POLYGRAPHY_CLASS: "ndarray"}


def save_arrays(path: str | os.PathLike[str], arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` whole or not at all: an .npz (strings as unicode arrays, loadable
    without pickle), or, for a .json path, a Polygraphy inputs file (``polygraphy run --load-inputs``)."""
    import io
    import json

    if str(path).lower().endswith(".json"):
        write_atomic(path, json.dumps([{k: encoded_array(v) for k, v in arrays.items()}]) + "\n")
        return
    buffer = io.BytesIO()
    np.savez(buffer, **{k: (v.astype(str) if v.dtype == object else v) for k, v in arrays.items()})
    write_atomic(path, buffer.getvalue())
