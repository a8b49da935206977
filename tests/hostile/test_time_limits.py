"""Every time limit a user gives (compare's --reference-timeout, fuzz's --case-timeout and --time-budget,
customops.compare's reference_timeout) follows one rule, checked before any work: a number of seconds
above 0 and at most runner.MAX_SECONDS. A huge finite value (1e308, 1e10) passed the old checks and
overflowed later, in poll(2)'s milliseconds or Python's clock, with a traceback."""

from __future__ import annotations

import time

import numpy as np
import pytest

from customops.errors import CustomOpsError
from customops.eval.running.runner import MAX_SECONDS, checked_seconds
from tests.helpers import DEVIATION, run_cli

HUGE = ("1e308", "1e10", "1000001")
"""Finite values past the bound: the first two overflowed, the last is just past it."""


@pytest.mark.parametrize("value", [*HUGE, "0", "-1", "nan", "inf"])
def test_compare_refuses_a_reference_timeout_out_of_range_with_one_line(value):
    proc = run_cli("compare", str(DEVIATION), "--reference-timeout", value)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--reference-timeout" in lines[0] and "at most 1000000" in lines[0], lines


@pytest.mark.parametrize(
    "args",
    [
        ["--case-timeout", "1e308"],
        ["--case-timeout", "1e10"],
        ["--time-budget", "1e308"],
        ["--time-budget", "1000001"],
        ["replay", ".", "--case-timeout", "1e10"],
    ],
)
def test_fuzz_refuses_seconds_out_of_range_with_one_line(tmp_path, monkeypatch, capsys, args):
    from customops.cli.main import main

    monkeypatch.chdir(tmp_path)
    status = main(["fuzz", "--op", "Pad", "--cases", "1", *args] if args[0] != "replay" else ["fuzz", *args])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "at most 1000000" in lines[0] and "--" in lines[0], lines


def test_the_api_refuses_a_reference_timeout_out_of_range():
    import customops

    for value in (1e308, 1e10, float("nan"), 0, True, "5"):
        with pytest.raises(CustomOpsError, match="reference-timeout"):
            customops.compare(str(DEVIATION), reference_timeout=value)


def test_the_bound_itself_is_allowed():
    assert checked_seconds(MAX_SECONDS, "--x") == MAX_SECONDS
    assert checked_seconds(1, "--x") == 1.0
    assert checked_seconds(np.float32(0.5), "--x") == 0.5


def test_a_side_waits_on_a_deadline_past_the_bound_without_overflowing():
    """Inside the package a deadline may lie further than a user's limit (a caller of run_sides): the
    wait on the child is taken in steps poll(2) can count, and the answer comes back."""
    from customops.eval.running.runner import SideProcess
    from customops.eval.running.worker import Request
    from tests.helpers import one_node_model

    model, feed = one_node_model(
        "Pad", {"data": np.zeros((1, 1, 2, 2), np.float32), "pads": np.zeros(8, np.int64)}, 19
    )
    worker = SideProcess("builtin")
    try:
        for far in (1e10, 1e308):
            job = worker.submit(Request(model.SerializeToString(), feed))
            reply = worker.result(job, time.perf_counter() + far)
            assert reply.status == "ok", reply
    finally:
        worker.close()
