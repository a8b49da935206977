"""The output guard's reading of the memory left (kernels.limits): a fresh reading answers for outputs
far below it, and anything else reads again, so a large output is always checked against a new one."""

from __future__ import annotations

import numpy as np
import pytest

from customops.errors import KernelError
from customops.kernels import limits


@pytest.fixture
def machine(monkeypatch):
    """headroom() played: the bytes it says are left, and how often it was read."""
    state = {"left": 1 << 40, "reads": 0}

    def headroom():
        state["reads"] += 1
        return state["left"], "a machine under test"

    monkeypatch.setattr(limits, "headroom", headroom)
    return state


def test_a_fresh_reading_answers_for_small_outputs(machine) -> None:
    shape = (1 << 20,)  # 4 MiB of float32: checked against the memory left (CHECKED is 1 MiB)
    limits.check_output(shape, np.float32)
    limits.check_output(shape, np.float32, allocated=True)
    assert machine["reads"] == 1


def test_an_output_near_the_reading_reads_again_and_is_refused(machine) -> None:
    machine["left"] = 100 << 20
    limits.check_output((1 << 18,), np.float32)  # 1 MiB, needs 2: far below the reading
    machine["left"] = 6 << 20  # the machine filled up since
    limits.check_output((1 << 18,), np.float32)  # still answered by the fresh reading
    assert machine["reads"] == 1
    with pytest.raises(KernelError, match="can allocate 6291456 more"):
        limits.check_output((1 << 21,), np.float32)  # needs 16 MiB: more than 1/MARGIN of 100 MiB
    assert machine["reads"] == 2


def test_an_old_reading_is_not_used(machine, monkeypatch) -> None:
    limits.check_output((1 << 20,), np.float32)
    monkeypatch.setattr(limits, "FRESH", 0.0)
    limits.check_output((1 << 20,), np.float32)
    assert machine["reads"] == 2


def test_other_sources_read_again(machine, monkeypatch, tmp_path) -> None:
    limits.check_output((1 << 20,), np.float32)
    monkeypatch.setattr(limits, "MEMINFO", str(tmp_path / "meminfo"))
    limits.check_output((1 << 20,), np.float32)
    assert machine["reads"] == 2
