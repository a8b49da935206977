"""Shared fixtures: the ONNX backend node tests of our operators, collected once per session; a wrong
kernel on the custom side of the sides' children (``wrong_kernel``)."""

from __future__ import annotations

import os
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


@pytest.fixture
def wrong_kernel(tmp_path, monkeypatch):
    """``wrong_kernel("pad:add1")`` makes the custom side's kernel of Pad add 1 to its output (``raise``:
    fail) in the side processes started from now on, and in commands run as subprocesses
    (tests.helpers.wrong_kernel_dir)."""
    from customops.eval.running import sides
    from tests.helpers import WRONG_KERNEL_ENV, wrong_kernel_dir

    def install(spec: str) -> None:
        site = wrong_kernel_dir(tmp_path / "site")
        monkeypatch.setenv("PYTHONPATH", f"{site}:{os.environ.get('PYTHONPATH', '')}".rstrip(":"))
        monkeypatch.setenv(WRONG_KERNEL_ENV, spec)
        sides.close_all()  # the side children restart with the wrong kernel

    sides.close_all()
    yield install
    sides.close_all()  # and without it after the test
