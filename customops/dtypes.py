"""The one map between ONNX element types and numpy dtypes.

An element type is named as in the registry and in reports: the lower-case name of ``TensorProto``'s
enum (``float``, ``double``, ``int64``, ``string``, ``bfloat16``, ``float8e4m3fn``, ...). Its numpy dtype
comes from onnx's own table (ml_dtypes types for the narrow floats and the 4-bit integers); strings are
numpy object arrays, as ONNX Runtime and onnx.reference hand them over.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

CODE: dict[str, int]
"""Element type name -> TensorProto data type code."""

NAME: dict[int, str]
"""TensorProto data type code -> element type name."""


def __getattr__(name: str) -> Any:
    """:data:`CODE` and :data:`NAME`, made on first use: onnx is imported only then, as its import takes
    a second and ONNX Runtime's side's child, which sizes its outputs with this module, never needs it."""
    if name not in ("CODE", "NAME"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from onnx import TensorProto

    code = {k.lower(): v for k, v in TensorProto.DataType.items()}
    globals().update(CODE=code, NAME={v: k for k, v in code.items()})
    return globals()[name]


def name_of(code: int) -> str:
    """The name of data type ``code`` (``type<N>`` for a code this onnx does not know)."""
    return __getattr__("NAME").get(code, f"type{code}")


def numpy_dtype(elem: str | int) -> np.dtype:
    """The numpy dtype of an element type, by name or by code (object for strings). Raises KeyError or
    ValueError for a type numpy cannot hold (``undefined``, an unknown code)."""
    from onnx import TensorProto, helper

    code = __getattr__("CODE")[elem] if isinstance(elem, str) else int(elem)
    if code == TensorProto.STRING:
        return np.dtype(object)
    return np.dtype(helper.tensor_dtype_to_np_dtype(code))


def code_of(dtype: np.dtype) -> int:
    """The data type code of a numpy dtype (object and unicode/bytes arrays: STRING)."""
    from onnx import TensorProto, helper

    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(dtype)


def native_order(array: np.ndarray) -> np.ndarray:
    """``array`` in this machine's byte order (a copy when it is not: an array saved on a big-endian
    machine holds the same values, but its dtype, ``>f4``, is not ``float32``)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def elem_of(array: np.ndarray) -> str:
    """The element type name of a numpy array."""
    return __getattr__("NAME")[code_of(np.asarray(array).dtype)]


STRING_ELEMENT = 64
"""Bytes counted for each element of a string array besides its characters: the pointer of an object
array and the Python string it points to (49 bytes and more in CPython), which is what every string costs
once compare or ONNX Runtime's Python API holds it, whatever its width in a unicode or bytes array (even
zero: ``<U0``)."""


def declared_nbytes(shape: tuple[int, ...] | list[int], dtype: np.dtype) -> int:
    """The bytes an array of ``shape`` and ``dtype`` takes in memory, before its characters are known
    (exact Python integers, nothing overflows): a string element (object, unicode or bytes) at
    :data:`STRING_ELEMENT` plus its fixed width, every other element at its itemsize and at least one
    byte, so that no element type (``<U0``, ``V0``) hides how many elements there are."""
    count = math.prod(int(d) for d in shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "O":
        return count * STRING_ELEMENT
    if dtype.kind in "US":
        return count * (STRING_ELEMENT + dtype.itemsize)
    return count * max(dtype.itemsize, 1)


def real_nbytes(array: np.ndarray) -> int:
    """The bytes ``array`` really holds: :func:`declared_nbytes` plus, for an object array, the UTF-8
    bytes of each string (``nbytes`` counts 8 bytes a string, whatever its length). Every bound on the size
    of an array handed over or read (a side's outputs, inputs) counts with this."""
    total = declared_nbytes(array.shape, array.dtype)
    if array.dtype.kind == "O":
        total += sum(_content_bytes(item) for item in array.flat)
    return total


def _content_bytes(item: object) -> int:
    if isinstance(item, str):
        return len(item.encode("utf-8", "surrogatepass"))
    if isinstance(item, bytes):
        return len(item)
    if isinstance(item, np.ndarray):
        return real_nbytes(item)
    return sys.getsizeof(item)
