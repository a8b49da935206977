"""Shared fixtures: the ONNX backend node tests of our operators, collected once per session."""

from __future__ import annotations

import warnings

import pytest

BACKEND_PREFIXES = (
    "test_resize",
    "test_upsample",
    "test_constant_pad",
    "test_edge_pad",
    "test_reflect_pad",
    "test_wrap_pad",
    "test_col2im",
    "test_center_crop_pad",
)


def backend_cases() -> list:
    """The ONNX backend node test cases of our operators (function expansions left out)."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    return [c for c in cases if c.name.startswith(BACKEND_PREFIXES) and not c.name.endswith("_expanded")]


@pytest.fixture(scope="session")
def backend():
    return {c.name: c for c in backend_cases()}
