"""Independent answers for the quantized kernels' tests: exact rational rounding to every element type,
naive loops for the integer products, ONNX's backend cases as numpy arrays, one-node ORT sessions."""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

from tests.helpers import backend_cases

FLOAT8 = {
    "float8e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8e5m2": ml_dtypes.float8_e5m2,
    "float8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
}
FLOATS = {"float": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
PRECISION = {"float": (24, -126), "float16": (11, -14), "bfloat16": (8, -126)}
"""Significand bits and smallest normal exponent of the float types."""
INTS = {
    "uint8": (np.uint8, 0, 255),
    "int8": (np.int8, -128, 127),
    "uint16": (np.uint16, 0, 65535),
    "int16": (np.int16, -32768, 32767),
    "uint4": (ml_dtypes.uint4, 0, 15),
    "int4": (ml_dtypes.int4, -8, 7),
    "uint2": (ml_dtypes.uint2, 0, 3),
    "int2": (ml_dtypes.int2, -2, 1),
}


def cases(prefix: str, generator: str) -> list[Any]:
    """ONNX's backend node cases of ``prefix`` (their module ``generator``)."""
    return backend_cases(prefix, generator=generator)


def as_array(value: Any) -> np.ndarray:
    """A backend case's tensor (numpy, or a TensorProto for the narrow types) as a numpy array."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def attributes(case: Any) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in case.model.graph.node[0].attribute}


def round_float(value: Fraction, name: str) -> Fraction | None:
    """``value`` rounded to nearest, ties to even, in the float type ``name`` with an unbounded exponent
    above (None: the result exceeds the type's largest finite value)."""
    bits, emin = PRECISION[name]
    if value == 0:
        return Fraction(0)
    exponent = max(math.floor(math.log2(abs(value))), emin)
    while Fraction(2) ** exponent > abs(value):  # log2 of a fraction may be off by one
        exponent -= 1
    exponent = max(exponent, emin)
    quantum = Fraction(2) ** (exponent - bits + 1)
    result = round(value / quantum) * quantum  # Python rounds a Fraction half to even
    top = (
        Fraction(float(np.finfo(FLOATS[name]).max)) if name != "bfloat16" else Fraction(3.3895313892515355e38)
    )
    return None if abs(result) > top else result


@functools.cache
def _narrow_table(name: str) -> tuple[list[tuple[Fraction, int]], Fraction, int, Fraction]:
    """The finite values of a float8 or float4 type with their codes, its largest value and code, and the
    spacing below it."""
    dtype = FLOAT8.get(name, ml_dtypes.float4_e2m1fn)
    codes = np.arange(256 if name in FLOAT8 else 16, dtype=np.uint8)
    values = codes.view(dtype).astype(np.float64)
    finite = sorted(
        (Fraction(float(v)), int(c)) for v, c in zip(values, codes, strict=True) if np.isfinite(v)
    )
    top, top_code = finite[-1]
    return finite, top, top_code, top - max(f for f, _ in finite if f < top)


def round_narrow(value: Fraction, name: str) -> tuple[Fraction | None, bool]:
    """``value`` rounded to nearest, ties to the even code, among the finite values of the float8 or
    float4 type ``name``, as if its exponent were unbounded above: (the value, whether it overflows)."""
    finite, top, top_code, step = _narrow_table(name)
    beyond = abs(value) - (top + step / 2)  # the spacing at the top, continued past it
    if beyond > 0 or (beyond == 0 and top_code & 1):  # a tie goes to the even code
        return None, True
    at = bisect.bisect_left(finite, (value, -1))
    near = finite[max(0, at - 2) : at + 2]  # the neighbours either side (and both zeros)
    best = min(near, key=lambda fc: (abs(fc[0] - value), fc[1] & 1))
    return best[0], False


def int_rounded(value: Fraction, zero: int, name: str) -> int:
    """saturate(round_half_even(value) + zero) in the integer type ``name``."""
    _, low, high = INTS[name]
    return min(max(round(value) + zero, low), high)


def naive_conv(
    x: np.ndarray,
    w: np.ndarray,
    pads: list[int],
    strides: list[int],
    dilations: list[int],
    group: int,
) -> np.ndarray:
    """Conv of integer arrays by its definition: an explicitly zero-padded input and one Python-int sum per
    output element (slow; small cases)."""
    r = x.ndim - 2
    padded = np.pad(x.astype(object), [(0, 0), (0, 0), *((pads[i], pads[r + i]) for i in range(r))])
    n, c = x.shape[:2]
    m = w.shape[0]
    kernel = w.shape[2:]
    out = [(padded.shape[2 + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1 for i in range(r)]
    y = np.zeros((n, m, *out), dtype=object)
    per, oc = c // group, m // group
    for b, j in itertools.product(range(n), range(m)):
        g = j // oc
        for o in itertools.product(*(range(s) for s in out)):
            total = 0
            for ci, k in itertools.product(range(per), itertools.product(*(range(s) for s in kernel))):
                pos = tuple(o[i] * strides[i] + k[i] * dilations[i] for i in range(r))
                total += int(padded[(b, g * per + ci, *pos)]) * int(w[(j, ci, *k)])
            y[(b, j, *o)] = total
    return y


def ort_session(
    op: str, opset: int, inputs: list[tuple[str, int]], outputs: list[tuple[str, int]], **attrs: Any
) -> Any:
    """An ORT session (CPU) of one ``op`` node with graph inputs and outputs of the given element types."""
    import onnxruntime as ort

    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def reference_run(
    op: str, opset: int, inputs: dict[str, np.ndarray | None], **attrs: Any
) -> list[np.ndarray]:
    """onnx.reference's result for one ``op`` node (None inputs left out)."""
    from onnx.reference import ReferenceEvaluator

    names = [n if v is not None else "" for n, v in inputs.items()]
    node = helper.make_node(op, names, ["y"], **attrs)
    evaluator = ReferenceEvaluator(node, opsets={"": opset})
    return evaluator.run(None, {n: v for n, v in inputs.items() if v is not None})
