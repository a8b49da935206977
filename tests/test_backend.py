"""The floor: every ONNX backend node test of our operators passes through rewrite + our kernels."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import customops
from customops.conformance import backend_cases

CASES = backend_cases()


def test_all_our_backend_tests_are_collected():
    names = {c.name for c in CASES}
    for prefix in (
        "test_resize_",
        "test_col2im",
        "test_center_crop_pad_",
        "test_wrap_pad",
        "test_upsample_nearest",
        "test_basic_deform_conv",
        "test_deform_conv_with",
        "test_affine_grid_",
        "test_roialign_",
        "test_gridsample",
    ):
        assert any(n.startswith(prefix) for n in names), prefix
    assert len(CASES) >= 73


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backend_case_passes_with_our_kernels(case):
    result = customops.rewrite_model(case.model)
    assert result.changed and not result.skipped, [r.line() for r in result.nodes]
    sess = customops.InferenceSession(result.model, sess_options=ort.SessionOptions())
    input_names = [i.name for i in sess.get_inputs()]
    for inputs, expected in case.data_sets:
        got = sess.run(None, {n: np.asarray(v) for n, v in zip(input_names, inputs, strict=True)})
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
            np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)
