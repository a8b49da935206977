"""ONNX's backend node tests of the activations, each node's data run through the kernel directly."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from customops.kernels.activations import gaussian, logistic, piecewise
from tests.helpers import backend_cases

KERNELS = {
    "Sigmoid": logistic.sigmoid,
    "Tanh": logistic.tanh,
    "Softplus": logistic.softplus,
    "Mish": logistic.mish,
    "Swish": logistic.swish,
    "Erf": gaussian.erf,
    "Gelu": gaussian.gelu,
    "HardSigmoid": piecewise.hard_sigmoid,
    "HardSwish": piecewise.hard_swish,
    "Elu": piecewise.elu,
    "Selu": piecewise.selu,
    "Celu": piecewise.celu,
}
_GENERATORS = {op: op.lower() for op in KERNELS}
CASES = [
    case
    for op, generator in _GENERATORS.items()
    for case in backend_cases(f"test_{generator}", generator=generator)
    if len(case.model.graph.node) == 1 and case.model.graph.node[0].op_type == op
]


def test_every_op_has_backend_cases() -> None:
    assert {c.model.graph.node[0].op_type for c in CASES} == set(KERNELS)
    assert {"test_celu_float16", "test_celu_bfloat16", "test_gelu_tanh_2", "test_swish"} <= {
        c.name for c in CASES
    }


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backend_case(case) -> None:
    node = case.model.graph.node[0]
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for inputs, outputs in case.data_sets:
        x = np.asarray(inputs[0])
        got = KERNELS[node.op_type](x, **attributes)
        want = np.asarray(outputs[0])
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=case.rtol, atol=case.atol
        )
