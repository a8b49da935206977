"""``fuzz --jobs N`` starts at most one lane (three worker processes) per usable core and per case,
whatever N is, and says so on stderr.

The pool is wrapped so that a lane count past the cap fails the test before any worker starts: run
against code without the cap, ``--jobs 100000`` stops at the assertion instead of spawning processes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest

import customops.eval.running.runner as runner
from customops.cli.main import main

CORES = len(os.sched_getaffinity(0))


@dataclass
class Lanes:
    """The lane counts pools were made with; a pool of more than ``cap`` lanes is refused unmade."""

    cap: int = 1
    made: list[int] = field(default_factory=list)


@pytest.fixture
def lanes(monkeypatch: Any) -> Lanes:
    seen = Lanes()
    real = runner.Pool

    class Guarded(real):  # type: ignore[misc, valid-type]
        def __init__(self, jobs: int, timeout: float) -> None:
            seen.made.append(jobs)
            assert jobs <= seen.cap, f"{jobs} lanes asked for, at most {seen.cap} useful"
            super().__init__(jobs, timeout)

    monkeypatch.setattr(runner, "Pool", Guarded)
    return seen


@pytest.mark.parametrize(("cases", "jobs"), [(3, "100000"), (1, "8")])
def test_jobs_are_capped_by_cores_and_cases(tmp_path, capsys, lanes, cases, jobs):
    lanes.cap = min(CORES, cases)
    args = ["fuzz", "--op", "Pad", "--opset", "19", "--cases", str(cases), "--shrink-budget", "1"]
    status = main([*args, "--jobs", jobs, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status in (0, 1), err[-2000:]
    assert lanes.made == [lanes.cap]
    notes = [line for line in err.splitlines() if line.startswith("--jobs")]
    assert notes == [f"--jobs {jobs}: using {lanes.cap} ({CORES} core(s), {cases} case(s))"], err[-2000:]


def test_jobs_within_the_cap_are_used_as_given_without_a_note(tmp_path, capsys, lanes):
    status = main(
        ["fuzz", "--op", "Pad", "--opset", "19", "--cases", "2", "--jobs", "1", "--out", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert status in (0, 1), err[-2000:]
    assert lanes.made == [1] and "--jobs" not in err
