"""Shared fixtures: the ONNX backend node tests of our operators, collected once per session."""

from __future__ import annotations

import pytest

from customops.conformance import backend_cases


@pytest.fixture(scope="session")
def backend():
    return {c.name: c for c in backend_cases()}
