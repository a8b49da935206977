"""The fuzzer's DeformConv space: its oracle agrees with our kernel on every drawn case (valid ones run,
invalid ones raise KernelError), mutations break the rule they name, and a small campaign labels every
group it finds."""

from __future__ import annotations

import numpy as np

from customops.dtypes import numpy_dtype
from customops.errors import KernelError
from customops.fuzz.dispatch import make_case
from customops.kernels.spatial.deform_conv import deform_conv
from customops.registry import lookup
from tests.helpers import run_cli, strict_json


def _run_ours(case):
    """Our kernel on the case's values, as the bridge would give them (bridged types as float)."""
    compute = np.float32 if case.dtype in ("float16", "bfloat16") else numpy_dtype(case.dtype)
    args = []
    for name in ("X", "W", "offset", "B", "mask"):
        t = case.inputs.get(name)
        args.append(None if t is None else np.asarray(t.value).astype(compute))
    return deform_conv(*args, **case.attrs)


def test_the_oracle_and_the_kernel_agree_on_drawn_cases():
    seen = {"valid": 0, "invalid": 0}
    reasons = set()
    for version in (19, 22):
        opv = lookup("DeformConv", version)
        for index in range(300):
            drawn = make_case(opv, 5, index)
            if drawn.case is None:
                continue
            if drawn.verdict.valid:
                out = _run_ours(drawn.case)
                assert out.shape == drawn.verdict.out_shape, drawn.case.describe()
                seen["valid"] += 1
            else:
                reasons.add(drawn.verdict.reason)
                try:
                    _run_ours(drawn.case)
                except KernelError:
                    seen["invalid"] += 1
                else:
                    raise AssertionError(f"{drawn.case.describe()}: {drawn.verdict.reason} ran")
    assert seen["valid"] > 400 and seen["invalid"] > 30
    assert {"kernel-shape-mismatch", "offset-shape", "kernel-does-not-fit"} <= reasons


def test_a_small_campaign_labels_every_group(tmp_path):
    out = tmp_path / "dc"
    proc = run_cli(
        "fuzz",
        "--op",
        "DeformConv",
        "--cases",
        "120",
        "--seed",
        "0",
        "--shrink-budget",
        "20",
        "--out",
        str(out),
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    summary = strict_json((out / "summary.json").read_text())
    assert summary["groups"]
    assert all(g["known"] for g in summary["groups"]), [
        g["text"] for g in summary["groups"] if not g["known"]
    ]
    labels = {k for g in summary["groups"] for k in g["known"]}
    assert {"DC-2D-ONLY", "T-DEFORMCONV"} <= labels
