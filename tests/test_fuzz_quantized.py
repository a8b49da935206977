"""The fuzzer's spaces of the quantized family (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv): their oracle agrees with our kernels on drawn
cases, they draw what the family needs (every type of every variable, per-axis and blocked scales, ties,
saturation, extreme zero points, empty axes, NaN and ±inf, uint8 255 against int8 -128 along K, invalid
configurations), cases where the three sides agree give no finding, a NaN has its finding, a case of several
element types (narrow ones through Casts) round-trips through the files, and a seeded campaign over the
seven ops finds what ORT refuses of the spec.

Nothing here depends on whether this machine's ORT sums uint8 x int8 products in int16 (no VNNI)."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from collections import Counter

import ml_dtypes
import numpy as np
import pytest

from customops.errors import KernelError
from customops.fuzz.case import Case, Tensor, build_model, case_from_json, case_to_json, output_elems
from customops.fuzz.dispatch import make_case, spaces
from customops.registry import CUSTOM_OPS, OPS, QUANTIZED_OPS
from tests.helpers import NEVER, run_cli, strict_json

FAMILY = tuple(op.name for op in QUANTIZED_OPS)
F32 = np.float32


def _versions(op: str) -> list:
    return [o for o in OPS if o.op == op]


def _drawn(op: str, count: int, seed: int = 3) -> list:
    """The cases of every version of ``op`` for indices below ``count`` (skipped ones left out)."""
    return [
        d for opv in _versions(op) for i in range(count) if (d := make_case(opv, seed, i)).case is not None
    ]


def _ours(case: Case):
    """Our kernel on the case's inputs in their real element types (what the bridge hands it)."""
    module, name = CUSTOM_OPS[case.opv.custom].kernel.split(":")
    kernel = getattr(importlib.import_module(module), name)
    args = [None if case.inputs.get(i.name) is None else case.inputs[i.name].value for i in case.opv.inputs]
    out = kernel(*args, version=case.version, **case.attrs)
    return out[0] if isinstance(out, tuple) else out


def test_every_op_of_the_family_has_its_space():
    assert set(FAMILY) <= set(spaces())
    assert all(spaces()[op].exact for op in FAMILY)


@pytest.mark.parametrize("op", FAMILY)
def test_the_oracle_and_the_kernel_agree_on_drawn_cases(op):
    """Valid cases run on our kernel with the oracle's output shape; invalid ones raise KernelError.
    Cases of rank 0 (x, or the product of two vectors) are left to the campaigns: the kernels of this
    branch return such results 1-D and fail on a float8 one (fixed on the quant branch; a campaign reports
    them as 'custom shape' and 'custom rejects-valid')."""
    reasons: Counter = Counter()
    valid = 0
    for drawn in _drawn(op, 60 if len(_versions(op)) > 2 else 200):
        case, verdict = drawn.case, drawn.verdict
        if case.main.ndim == 0 or verdict.out_shape == ():
            continue
        try:
            out = _ours(case)
        except KernelError as exc:
            assert not verdict.valid, f"{case.describe()}: valid, but our kernel says {exc}"
            reasons[verdict.reason] += 1
            continue
        assert verdict.valid, f"{case.describe()}: {verdict.reason}, but our kernel ran"
        assert np.shape(out) == verdict.out_shape, case.describe()
        valid += 1
    assert valid > 150 and sum(reasons.values()) > 10, (valid, reasons)


def test_the_spaces_draw_what_the_family_needs():
    q = [d.case for d in _drawn("QuantizeLinear", 120)]
    layouts = Counter(_layout(c) for c in q)
    assert min(layouts.values()) > 40, layouts
    per_tensor = [c for c in q if c.inputs["y_scale"].value.ndim == 0]
    assert sum(_quotient_is(c, lambda v: np.abs(v - np.floor(v)) == 0.5) for c in per_tensor) > 10  # ties
    assert sum(_quotient_is(c, lambda v: np.abs(v) > 300) for c in per_tensor) > 10  # saturating
    assert any(np.isnan(c.main.astype(np.float64)).any() for c in q)
    assert any(np.isinf(c.inputs["y_scale"].value.astype(np.float64)).any() for c in q)
    assert any(0 in c.main.shape for c in q)
    for opv in _versions("QuantizeLinear"):  # every output type ORT can Cast, in every version
        seen = {output_elems(c)[0] for c in q if c.version == opv.version}
        wanted = {
            t for t in dict(opv.type_vars)[opv.inputs[2].types[0]] if not t.startswith(("float4", "float6"))
        }
        assert wanted <= seen, (opv.key, wanted - seen)
    dq = [d.case for d in _drawn("DequantizeLinear", 60)]
    assert sum(_extreme(c.inputs["x_zero_point"]) for c in dq) > 20
    # uint8 255 next to 255 along K against int8 -128 next to -128: the pairs that saturate in int16
    assert any(_saturating_pair(d.case) for d in _drawn("MatMulInteger", 300))
    qlc = [d.case for d in _drawn("QLinearConv", 300)]
    assert any(c.dtype == "uint8" and output_elems(c) == ["int8"] for c in qlc)
    assert any(
        c.inputs["w_zero_point"].value.ndim == 1 and c.inputs["w_zero_point"].value.size > 1 for c in qlc
    )


def _layout(case: Case) -> str:
    scale = case.inputs["y_scale"].value
    if "block_size" in case.attrs:
        return "blocked"
    return "axis" if scale.ndim == 1 and scale.size > 1 else "tensor"


def _quotient_is(case: Case, test) -> bool:
    with np.errstate(all="ignore"):
        quotient = case.main.astype(np.float64) / case.inputs["y_scale"].value.astype(np.float64)
        return bool(np.any(test(quotient)))


def _extreme(zero: Tensor | None) -> bool:
    """A zero point holding its type's minimum or maximum."""
    if zero is None or not zero.value.size or not zero.elem.startswith(("int", "uint")):
        return False
    info = ml_dtypes.iinfo(zero.value.dtype)
    return bool(np.isin(zero.value.astype(np.int64), [int(info.min), int(info.max)]).any())


def _saturating_pair(case: Case) -> bool:
    a, b = case.inputs["A"].value, case.inputs["B"].value
    if a.dtype != np.uint8 or b.dtype != np.int8 or a.ndim < 2 or b.ndim < 2 or a.shape[-1] < 2:
        return False
    pairs_a = (a[..., :-1] == 255) & (a[..., 1:] == 255)
    pairs_b = (b[..., :-1, :] == -128) & (b[..., 1:, :] == -128)
    return bool(pairs_a.any() and pairs_b.any())


def test_about_one_case_in_ten_is_invalid_on_purpose():
    for op in FAMILY:
        drawn = _drawn(op, 80 if len(_versions(op)) > 2 else 400)
        share = sum(not d.verdict.valid for d in drawn) / len(drawn)
        assert 0.04 < share < 0.2, (op, share)


# ---------------------------------------------------------------------------------------------
# cases run on the three sides


def _quantize_ties() -> Case:
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5], [1.25, -0.75, 3.0, 200.0, -300.0]], F32)
    inputs = {
        "x": Tensor(x),
        "y_scale": Tensor(np.array([1, 0.5], F32), True),
        "y_zero_point": Tensor(np.array([0, -3], np.int8), True),
    }
    return Case("QuantizeLinear", 13, "float", inputs, {"axis": 0})


def _dequantize_int4_blocked() -> Case:
    inputs = {
        "x": Tensor(np.array([[-8, -1, 0, 7], [3, 2, -5, 1]], ml_dtypes.int4)),
        "x_scale": Tensor(np.array([[0.5, 2.0], [0.25, 1.0]], F32), True),
        "x_zero_point": Tensor(np.array([[1, -2], [0, 3]], ml_dtypes.int4), True),
    }
    return Case("DequantizeLinear", 21, "int4", inputs, {"axis": 1, "block_size": 2})


def _quantize_int4_per_axis() -> Case:
    """An int4 output (Cast to int8 for ORT's Python API) that saturates, +inf included."""
    inputs = {
        "x": Tensor(np.array([[0.5, 1.5, 9, -20], [3, -2.5, 0, math.inf]], F32)),
        "y_scale": Tensor(np.array([1, 0.5], F32)),
        "y_zero_point": Tensor(np.array([1, -2], ml_dtypes.int4), True),
    }
    return Case("QuantizeLinear", 21, "float", inputs, {"axis": 0})


def _dequantize_nan_scale() -> Case:
    inputs = {
        "x": Tensor(np.array([1, 2, 3], np.uint8)),
        "x_scale": Tensor(np.array(math.nan, F32)),
        "x_zero_point": Tensor(np.array(1, np.uint8)),
    }
    return Case("DequantizeLinear", 19, "uint8", inputs, {})


def _matmul_integer() -> Case:
    inputs = {
        "A": Tensor(np.array([[1, 2, 3], [60, 0, 7]], np.uint8)),
        "B": Tensor(np.array([[-3, 4], [5, -60], [0, 1]], np.int8), True),
        "a_zero_point": Tensor(np.array(2, np.uint8)),
        "b_zero_point": Tensor(np.array([1, -1], np.int8)),
    }
    return Case("MatMulInteger", 10, "uint8", inputs, {})


def _dynamic() -> Case:
    return Case(
        "DynamicQuantizeLinear", 11, "float", {"x": Tensor(np.array([-1.5, 0.25, 3.7, 1e-3], F32))}, {}
    )


def _qlinear_conv() -> Case:
    inputs = {
        "x": Tensor(np.arange(18, dtype=np.uint8).reshape(1, 2, 3, 3)),
        "x_scale": Tensor(np.array(0.5, F32)),
        "x_zero_point": Tensor(np.array(3, np.uint8)),
        "w": Tensor(np.arange(1, 9, dtype=np.uint8).reshape(2, 2, 2, 1), True),
        "w_scale": Tensor(np.array([0.25, 0.125], F32), True),
        "w_zero_point": Tensor(np.array([0, 0], np.uint8), True),
        "y_scale": Tensor(np.array(0.3, F32)),
        "y_zero_point": Tensor(np.array(0, np.uint8)),
        "B": None,
    }
    return Case("QLinearConv", 10, "uint8", inputs, {})


def test_cases_the_three_sides_agree_on_give_no_finding():
    """Ties rounded to even per axis, an int4 output and int4 blocked inputs through Casts, a NaN scale into a float output
    (NaN everywhere on every side), mixed uint8 x int8 with a per-column zero point, the three outputs
    of DynamicQuantizeLinear packed in one, a per-channel QLinearConv."""
    from customops.eval.running.runner import Pool
    from customops.fuzz.triage import evaluate

    cases = [
        _quantize_ties(),
        _quantize_int4_per_axis(),
        _dequantize_int4_blocked(),
        _dequantize_nan_scale(),
        _matmul_integer(),
        _dynamic(),
        _qlinear_conv(),
    ]
    with Pool(1, NEVER) as pool:
        for case in cases:
            ev = evaluate(pool, case)
            assert ev.verdict.valid and ev.findings == [], (case.describe(), ev.findings, ev.outcomes)
            assert all(o.status == "ok" for o in ev.outcomes.values()), ev.outcomes
    packed = build_model(_dynamic())
    assert packed.output_elem == "double" and output_elems(_dynamic()) == ["uint8", "float", "uint8"]
    (graph_output,) = packed.model.graph.output
    assert graph_output.type.tensor_type.elem_type == 11  # DOUBLE: y's 4 values, y_scale, y_zero_point


def test_outputs_are_compared_exactly():
    """int32 x times a float scale: ORT and onnx.reference round x to float32 and then the product (two
    roundings), ours rounds the exact product once; one ulp apart, which the float32 tolerance of other ops
    would let pass."""
    from customops.eval.running.runner import Pool
    from customops.fuzz.triage import evaluate

    inputs = {
        "x": Tensor(np.array([-166982471, 4], np.int32)),
        "x_scale": Tensor(np.array(1.5, F32)),
        "x_zero_point": None,
    }
    case = Case("DequantizeLinear", 13, "int32", inputs, {})
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
    ours, ort = (np.asarray(ev.outcomes[s].value) for s in ("custom", "builtin"))
    assert ours[0] == np.float32(-250473712) and ort[0] == np.float32(-250473696) and ours[1] == ort[1] == 6
    # onnx.reference has no version 13, but the family's yardstick is exact (our output, a bound of 0:
    # customops.eval.judging.yardstick): the side one rounding off it is named
    assert [(f.side, f.kind) for f in ev.findings] == [("builtin", "value")]


def test_a_nan_into_an_integer_type_is_an_invalid_case_ort_accepts():
    from customops.eval.running.runner import Pool
    from customops.fuzz.triage import evaluate

    inputs = {
        "x": Tensor(np.array([1.0, math.nan], F32)),
        "y_scale": Tensor(np.array(1, F32)),
        "y_zero_point": Tensor(np.array(0, np.uint8)),
    }
    case = Case("QuantizeLinear", 13, "float", inputs, {})
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
    assert ev.verdict.reason == "nan-into-integer"
    assert ev.outcomes["custom"].status == "error" and "NaN" in ev.outcomes["custom"].message
    assert [(f.side, f.kind, f.detail) for f in ev.findings if f.counts] == [
        ("builtin", "accepts-invalid", "nan-into-integer")
    ]


def _float8_with_zero_point() -> Case:
    """DequantizeLinear-21: float8 x and zero point (not 0), a float16 scale per axis: ORT refuses a float8
    zero point that is not 0, the spec's formula applies it."""
    inputs = {
        "x": Tensor(np.array([[1.5, -2, 0.25], [448, -0.5, 3]], ml_dtypes.float8_e4m3fn)),
        "x_scale": Tensor(np.array([0.5, 2.0, 0.25], np.float16), True),
        "x_zero_point": Tensor(np.array([0.5, 0, -1], ml_dtypes.float8_e4m3fn), True),
    }
    return Case("DequantizeLinear", 21, "float8e4m3fn", inputs, {"axis": 1})


def test_a_case_of_several_element_types_round_trips_through_the_files(tmp_path):
    """Written as a reproducer (finding.json, the ONNX test case, repro.py), read back exactly (each
    input's element type and bits), replayed on the three sides, and rerun by repro.py on ORT alone."""
    from customops.eval.running.runner import Pool
    from customops.fuzz.campaign import CaseRecord, Group, group_summary
    from customops.fuzz.files import read_finding
    from customops.fuzz.groups import group_dirname, write_group
    from customops.fuzz.triage import Shrunk, evaluate, signature_of

    case = _float8_with_zero_point()
    assert case.types == "T1=float8e4m3fn T2=float16 -> float16"
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
        (finding,) = [f for f in ev.findings if f.counts]
        assert (finding.side, finding.kind) == ("builtin", "rejects-valid"), ev.findings
        sig = signature_of(pool, ev, finding)
    record = CaseRecord(0, case.key, case.types, "run", True, None, ev.findings, ev)
    info = group_summary(Group(sig, [record], Shrunk(ev)), 0, [])
    path = write_group(tmp_path, group_dirname(sig), sig, ev, info)
    written = strict_json((path / "finding.json").read_text())
    assert written["dtypes"] == {case.types: 1}
    back = read_finding(path).case
    assert json.dumps(case_to_json(back)) == json.dumps(case_to_json(case))
    for name, t in case.inputs.items():
        assert back.inputs[name].elem == t.elem and back.inputs[name].value.tobytes() == t.value.tobytes()
    assert build_model(back).model.SerializeToString() == build_model(case).model.SerializeToString()
    replay = run_cli("fuzz", "replay", str(path))
    assert replay.returncode == 1 and replay.stdout.startswith("REPRODUCES"), replay.stdout + replay.stderr
    repro = subprocess.run(
        [sys.executable, "repro.py"], cwd=path, capture_output=True, text=True, timeout=NEVER
    )
    assert repro.returncode == 1 and "refuses" in repro.stdout, repro.stdout + repro.stderr
    again = case_from_json(json.loads(json.dumps(case_to_json(case))))
    assert again.inputs["x"].value.dtype == ml_dtypes.float8_e4m3fn


def test_a_seeded_campaign_over_the_family_finds_what_ort_refuses_of_the_spec(tmp_path):
    """ORT refuses a per-channel ConvInteger weight zero point ("Non per-tensor quantization is not supported
    now"), has no QLinearMatMul or QLinearConv kernel for a uint8 input with an int8 output, and computes
    NaN into integers; the reproducers of those groups replay, and merge into another directory keeps
    every case as it was."""
    out = tmp_path / "quantized"
    proc = run_cli(
        "fuzz",
        "--op",
        ",".join(FAMILY),
        "--cases",
        "280",
        "--seed",
        "1",
        "--shrink-budget",
        "8",
        "--out",
        str(out),
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    summary = strict_json((out / "summary.json").read_text())
    groups = summary["groups"]
    kinds = {(g["signature"]["op"], g["signature"]["side"], g["signature"]["kind"]) for g in groups}
    assert {(op,) for op, _, _ in kinds} == {(op,) for op in FAMILY}, kinds
    per_channel = [
        g for g in groups if g["signature"]["detail"] == "Non per-tensor quantization is not supported now"
    ]
    assert per_channel and per_channel[0]["signature"]["op"] == "ConvInteger"
    for op in ("QLinearMatMul", "QLinearConv"):
        missing = [
            g
            for g in groups
            if g["signature"]["op"] == op
            and g["signature"]["kind"] == "rejects-valid"
            and "Could not find an implementation" in g["signature"]["detail"]
        ]
        assert any(any("T1=uint8" in t and t.endswith("-> int8") for t in g["dtypes"]) for g in missing), op
    reasons = summary["cases"]["invalid_reasons"]
    assert reasons.get("nan-into-integer", 0) + reasons.get("x-nan", 0) > 0, reasons
    assert any(r.endswith("cannot Cast to or from float4e2m1") for r in summary["cases"]["skipped"])
    refused = [
        out / g["dir"] for g in groups if g["signature"]["kind"] in ("rejects-valid", "accepts-invalid")
    ]
    replay = run_cli("fuzz", "replay", *map(str, refused))
    assert replay.stdout.count("REPRODUCES") == len(refused), replay.stdout + replay.stderr[-2000:]
    merged = tmp_path / "merged"
    proc = run_cli("fuzz", "merge", str(out), "--out", str(merged))
    assert proc.returncode == 1, proc.stderr[-2000:]
    for g in groups:
        cases = [strict_json((d / g["dir"] / "finding.json").read_text())["case"] for d in (out, merged)]
        assert cases[0] == cases[1], g["dir"]
