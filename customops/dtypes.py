"""The one map between ONNX element types and numpy dtypes.

An element type is named as in the registry and in reports: the lower-case name of ``TensorProto``'s
enum (``float``, ``double``, ``int64``, ``string``, ``bfloat16``, ``float8e4m3fn``, ...). Its numpy dtype
comes from onnx's own table (ml_dtypes types for the narrow floats and the 4-bit integers); strings are
numpy object arrays, as ONNX Runtime and onnx.reference hand them over.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

CODE: dict[str, int] = {k.lower(): v for k, v in TensorProto.DataType.items()}
"""Element type name -> TensorProto data type code."""

NAME: dict[int, str] = {v: k for k, v in CODE.items()}
"""TensorProto data type code -> element type name."""


def name_of(code: int) -> str:
    """The name of data type ``code`` (``type<N>`` for a code this onnx does not know)."""
    return NAME.get(code, f"type{code}")


def numpy_dtype(elem: str | int) -> np.dtype:
    """The numpy dtype of an element type, by name or by code (object for strings). Raises KeyError or
    ValueError for a type numpy cannot hold (``undefined``, an unknown code)."""
    code = CODE[elem] if isinstance(elem, str) else int(elem)
    if code == TensorProto.STRING:
        return np.dtype(object)
    return np.dtype(helper.tensor_dtype_to_np_dtype(code))


def code_of(dtype: np.dtype) -> int:
    """The data type code of a numpy dtype (object and unicode/bytes arrays: STRING)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(dtype)


def elem_of(array: np.ndarray) -> str:
    """The element type name of a numpy array."""
    return NAME[code_of(np.asarray(array).dtype)]
