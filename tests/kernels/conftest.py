"""Fixtures of the kernel tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from customops.accel import jit


@pytest.fixture
def compiled_calls(monkeypatch) -> Counter[str]:
    """Counts the calls of every compiled loop the kernels fetch during the test, by loop name: each
    loop :func:`customops.accel.jit.get` answers is wrapped in a counter (what the kernel then calls,
    directly, through its kept plan or through customops.accel.parallel). A test that switches the
    compiled paths off can prove the numpy path ran: the counts do not move."""
    calls: Counter[str] = Counter()
    real = jit.get

    def counting_get(name: str, module: Any) -> Callable[..., Any] | None:
        loop = real(name, module)
        if loop is None:
            return None

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return loop(*args, **kwargs)

        return counted

    monkeypatch.setattr(jit, "get", counting_get)
    return calls
