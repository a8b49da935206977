"""Shared fixtures: the ONNX backend node tests of our operators, collected once per session."""

from __future__ import annotations

import signal

import pytest

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    # started in the background of a non-interactive shell (``pytest &``): Ctrl-C is ignored here, and so in
    # every process the tests start, which the tests of Ctrl-C need delivered
    signal.signal(signal.SIGINT, signal.default_int_handler)

from customops.conformance import backend_cases


@pytest.fixture(scope="session")
def backend():
    return {c.name: c for c in backend_cases()}
