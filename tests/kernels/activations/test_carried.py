"""The activations' ``bind`` (what ONNX Runtime's hook calls): X's real element type told, one rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from customops.errors import KernelError
from customops.kernels.activations import hard_sigmoid, sigmoid, swish


def test_bfloat16_carried_as_float_is_rounded_once_to_bfloat16():
    x = np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    x = x[np.isfinite(x.astype(np.float32))]
    want = hard_sigmoid.hard_sigmoid(x, alpha=0.3)
    got = hard_sigmoid.bind(alpha=0.3, beta=0.5, elem_type="bfloat16")(x.astype(np.float32))
    assert got.dtype == np.float32
    assert (got.astype(ml_dtypes.bfloat16).view(np.uint16) == want.view(np.uint16)).all()
    twice = hard_sigmoid.hard_sigmoid(x.astype(np.float32), alpha=0.3).astype(ml_dtypes.bfloat16)
    assert (twice.view(np.uint16) != want.view(np.uint16)).any()  # the double rounding the bind avoids


def test_float_and_double_are_taken_as_they_come():
    x = np.linspace(-30, 30, 101)
    assert sigmoid.bind(elem_type="double")(x).tolist() == sigmoid.sigmoid(x).tolist()
    assert (
        swish.bind(alpha=0.5, elem_type="float")(x.astype(np.float32)).tolist()
        == swish.swish(x.astype(np.float32), 0.5).tolist()
    )


def test_an_element_type_the_translator_never_writes_is_refused():
    with pytest.raises(KernelError, match="elem_type 'int8'"):
        sigmoid.bind(elem_type="int8")
