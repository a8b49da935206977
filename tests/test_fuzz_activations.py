"""The fuzzer's space of the activation family: its oracle agrees with our kernels on drawn cases, it draws
what the family needs (values at the points where ORT's approximations switch branches, subnormals, huge
magnitudes, ±inf, NaN, -0, attributes away from their defaults), and a seeded campaign over the twelve ops
runs cleanly, every group named by a rule of docs/ort-deviations.md or docs/semantics.md."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from customops.errors import KernelError
from customops.fuzz.dispatch import make_case, spaces
from customops.fuzz.spaces.activations import SWITCHES, switches
from customops.registry import ACTIVATION_OPS, CUSTOM_OPS, OPS
from tests.helpers import run_cli, strict_json

FAMILY = tuple(op.name for op in ACTIVATION_OPS)


def _drawn(op: str, count: int, seed: int = 5) -> list:
    return [
        d
        for opv in OPS
        if opv.op == op
        for i in range(count)
        if (d := make_case(opv, seed, i)).case is not None
    ]


def _ours(case):
    module, name = CUSTOM_OPS[case.opv.custom].kernel.split(":")
    return getattr(importlib.import_module(module), name)(case.main, **case.attrs)


def test_every_op_of_the_family_has_its_space():
    assert set(FAMILY) == set(SWITCHES) and set(FAMILY) <= set(spaces())
    assert not any(spaces()[op].exact for op in FAMILY)  # compared at the type's relative tolerance


@pytest.mark.parametrize("op", FAMILY)
def test_the_oracle_and_the_kernel_agree_on_drawn_cases(op):
    drawn = _drawn(op, 40)
    assert drawn
    for d in drawn:
        if d.verdict.valid:
            out = _ours(d.case)
            assert out.shape == d.verdict.out_shape and out.dtype == d.case.main.dtype
        elif d.verdict.reason.startswith(("attr-not-finite", "celu-alpha-zero")):
            with pytest.raises(KernelError):
                _ours(d.case)


def test_the_cases_crowd_at_the_switch_points_and_hold_the_special_values():
    values = np.concatenate(
        [d.case.main.astype(np.float64).ravel() for d in _drawn("Sigmoid", 120) if d.case.dtype == "float"]
    )
    assert ((values > -18.001) & (values < -17.999)).sum() >= 5  # ORT's zeroed tail starts here
    finite = values[np.isfinite(values)]
    assert np.isnan(values).any() and np.isposinf(values).any() and np.isneginf(values).any()
    assert ((finite != 0) & (np.abs(finite) < 2.0**-126)).any()  # subnormal
    assert (np.abs(finite) > 1e30).any() and ((finite == 0) & np.signbit(finite)).any()
    corners = np.concatenate([d.case.main.astype(np.float64).ravel() for d in _drawn("HardSwish", 60)])
    assert (np.abs(np.abs(corners) - 3) < 1e-5).sum() >= 5


def test_the_switch_points_move_with_the_attributes():
    assert switches("HardSigmoid", {"alpha": 0.25, "beta": 0.5}) == [-2.0, 2.0]
    assert switches("Swish", {"alpha": 2.0})[0] == SWITCHES["Swish"][0] / 2
    assert switches("Celu", {"alpha": 3.0})[0] == SWITCHES["Celu"][0] * 3
    attributes = [d.case.attrs for d in _drawn("Selu", 60)]
    assert any(a.get("alpha") not in (None, 1.6732631921768188) for a in attributes)
    assert all(a.get("alpha") != 0 for d in _drawn("Celu", 60) for a in [d.case.attrs])


def test_a_seeded_campaign_over_the_family_runs_cleanly_and_names_every_group(tmp_path):
    out = tmp_path / "activations"
    proc = run_cli(
        "fuzz",
        "--op",
        ",".join(FAMILY),
        "--cases",
        "240",
        "--seed",
        "0",
        "--shrink-budget",
        "8",
        "--out",
        str(out),
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    summary = strict_json((out / "summary.json").read_text())
    groups = summary["groups"]
    assert not [g for g in groups if g["signature"]["kind"] in ("crash", "hang")]
    assert not [g for g in groups if g["signature"]["side"] == "custom"], groups
    unnamed = [g["dir"] for g in groups if not g["known"]]
    assert not unnamed, unnamed
    known = {k for g in groups for k in g["known"]}
    assert {"A-SIGMOID-ZERO-TAIL", "T-ACTIVATIONS"} <= known, known
