"""customops fuzz: cases depend on (seed, index) alone, findings do not depend on --jobs, shards merge into
the whole, a crashing or hanging side is recorded and the campaign goes on, shrinking keeps the signature,
reproducers reproduce, bad arguments exit 2 with one line, and a small Resize campaign rediscovers known
deviations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from customops.fuzz.case import Case, Tensor, case_to_json
from customops.fuzz.dispatch import make_case
from customops.registry import lookup
from tests.helpers import HANG_LIMIT, NEVER, run_cli, strict_json

RESIZE_DEVIATIONS = {
    "T-RESIZE",
    "R-LINEAR-RANK",
    "R-LINEAR-OUTER-AXIS",
    "R-CUBIC-RANK",
    "R-CUBIC-NHWC-DOWN",
    "R-CUBIC-INT-RUNTIME-ERROR",
    "R-SAME-SHAPE-NO-OP",
    "R-INT-TRUNCATION",
    "R-ALIGN-CORNERS-INT-LENGTH",
}
"""Ids of docs/ort-deviations.md (pinned by hand in tests/test_compare.py) a Resize-19 campaign can find."""


def _groups(summary: dict) -> list:
    """The parts of a summary that must not depend on --jobs or sharding."""
    return sorted(
        (g["id"], g["count"], g["examples"], g["dtypes"], g["dir"], g["representative"]["case"])
        for g in summary["groups"]
    )


def _counts(summary: dict) -> dict:
    return {k: v for k, v in summary["cases"].items()}


def test_a_case_depends_on_seed_and_index_alone():
    opv = lookup("Resize", 19)
    assert opv is not None
    a = [make_case(opv, 7, i) for i in range(30)]
    b = [make_case(opv, 7, i) for i in reversed(range(30))][::-1]
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.skipped == y.skipped
        if x.case is not None:
            assert json.dumps(case_to_json(x.case)) == json.dumps(case_to_json(y.case))
    assert any(
        json.dumps(case_to_json(x.case)) != json.dumps(case_to_json(y.case))
        for x, y in zip(a, [make_case(opv, 8, i) for i in range(30)], strict=True)
        if x.case is not None and y.case is not None
    )


def test_same_findings_for_any_jobs_and_shards_merge_into_the_whole(tmp_path):
    base = [
        "fuzz",
        "--op",
        "Pad",
        "--opset",
        "19",
        "--cases",
        "30",
        "--seed",
        "5",
        "--shrink-budget",
        "4",
        "--json",
    ]
    whole = run_cli(*base, "--jobs", "1", "--out", str(tmp_path / "whole"))
    assert whole.returncode in (0, 1), whole.stderr
    two = run_cli(*base, "--jobs", "2", "--out", str(tmp_path / "two"))
    shards = [run_cli(*base, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")) for i in range(2)]
    assert all(p.returncode in (0, 1) for p in (two, *shards)), [p.stderr[-500:] for p in (two, *shards)]
    s_whole, s_two = strict_json(whole.stdout), strict_json(two.stdout)
    assert s_whole["groups"], "the campaign should find something on Pad-19"
    assert _groups(s_whole) == _groups(s_two) and _counts(s_whole) == _counts(s_two)
    merged = run_cli(
        "fuzz",
        "merge",
        str(tmp_path / "s0"),
        str(tmp_path / "s1"),
        "--out",
        str(tmp_path / "merged"),
        "--json",
    )
    assert merged.returncode == whole.returncode, merged.stderr
    s_merged = strict_json(merged.stdout)
    assert _groups(s_merged) == _groups(s_whole) and _counts(s_merged) == _counts(s_whole)
    for g in s_merged["groups"]:
        assert (tmp_path / "merged" / g["dir"] / "model.onnx").is_file()
    assert "fuzz: " in whole.stderr  # progress goes to stderr

    # labels are those of the rules at merge time, in the summary and in each group's finding.json
    stale = tmp_path / "whole" / s_whole["groups"][0]["dir"] / "finding.json"
    record = strict_json(stale.read_text())
    stale.write_text(json.dumps({**record, "known": ["STALE"]}, indent=1))
    # a campaign directory moved after its run still merges with commands that name the merged copies
    (tmp_path / "whole").rename(tmp_path / "moved")
    again = run_cli("fuzz", "merge", str(tmp_path / "moved"), "--out", str(tmp_path / "m2"), "--json")
    assert again.returncode == whole.returncode, again.stderr
    for g in strict_json(again.stdout)["groups"]:
        here = str(tmp_path / "m2" / g["dir"])
        assert g["rerun"][0] == f"customops fuzz replay {here}"
        for name in ("README.txt", "finding.json"):
            text = (tmp_path / "m2" / g["dir"] / name).read_text()
            assert here in text and str(tmp_path / "whole") not in text, name
        assert strict_json((tmp_path / "m2" / g["dir"] / "finding.json").read_text())["known"] == g["known"]


def _runnable_indices(op: str, version: int, count: int) -> list[int]:
    opv = lookup(op, version)
    assert opv is not None
    out = []
    for i in range(200):
        drawn = make_case(opv, 0, i)
        if drawn.case is not None and drawn.verdict is not None and drawn.verdict.valid:
            out.append(i)
        if len(out) == count:
            return out
    raise AssertionError("not enough runnable cases")


def test_a_crashing_and_a_hanging_side_are_recorded_and_the_campaign_goes_on(tmp_path):
    crash, hang, after = _runnable_indices("Pad", 19, 3)
    indices = ",".join(map(str, (crash, hang, after)))
    args = f"fuzz --op Pad --opset 19 --index {indices} --case-timeout {HANG_LIMIT:g} --shrink-budget 3 --json".split()
    inject = {"CUSTOMOPS_FUZZ_INJECT": f"abort:builtin:{crash},hang:custom:{hang}"}
    # the same cases once without faults first: on a cold numba cache (a fresh clone) the custom worker's
    # first compilation of these loops can take longer than the time limit and would read as a hang
    run_cli(*args, "--out", str(tmp_path / "warm"))
    proc = run_cli(*args, "--out", str(tmp_path / "out"), env=inject)
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = strict_json(proc.stdout)
    assert summary["cases"]["run"] == 3
    by_kind = {g["signature"]["kind"]: g for g in summary["groups"]}
    assert by_kind["crash"]["signature"]["side"] == "builtin" and by_kind["crash"]["examples"] == [crash]
    assert "SIGABRT" in by_kind["crash"]["signature"]["detail"]
    assert by_kind["hang"]["signature"]["side"] == "custom" and by_kind["hang"]["examples"] == [hang]
    # the injected faults fire only in campaign runs: the triage's rerun says they do not reproduce
    assert by_kind["crash"]["representative"]["reproduced"] is False


def test_shrinking_keeps_the_signature_and_makes_the_case_smaller():
    from customops.eval.running.runner import Pool
    from customops.fuzz.triage import cost, evaluate, holds, shrink, signature_of

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    case = Case(
        "Resize",
        19,
        "float",
        {
            "X": Tensor(x),
            "roi": None,
            "scales": Tensor(np.array([1, 1, 0.6, 0.75], np.float32), const=True),
            "sizes": None,
        },
        {
            "mode": "linear",
            "coordinate_transformation_mode": "align_corners",
            "extrapolation_value": 2.5,
            "nearest_mode": "floor",
        },
    )
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
        (finding,) = [f for f in ev.findings if f.counts]
        assert (finding.side, finding.kind) == ("builtin", "value")
        sig = signature_of(pool, ev, finding)
        assert "coordinate_transformation_mode=align_corners" in sig.features
        assert "extrapolation_value" not in sig.features and "nearest_mode=floor" not in sig.features
        result = shrink(pool, sig, case, budget=80)
        small = result.evaluation.case
        assert result.reproduced and holds(sig, evaluate(pool, small))
    assert cost(small) < cost(case) and small.size() < case.size() and result.steps
    assert "extrapolation_value" not in small.attrs
    assert small.attrs["coordinate_transformation_mode"] == "align_corners"


def test_small_resize_campaign_rediscovers_known_deviations_with_reproducers_that_reproduce(tmp_path):
    out = tmp_path / "resize"
    args = [
        "fuzz",
        "--op",
        "Resize",
        "--opset",
        "19",
        "--cases",
        "60",
        "--seed",
        "0",
        "--shrink-budget",
        "40",
    ]
    proc = run_cli(*args, "--out", str(out), "--markdown", str(tmp_path / "findings.md"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = strict_json((out / "summary.json").read_text())
    known = {label for g in summary["groups"] for label in g["known"]}
    assert len(known & RESIZE_DEVIATIONS) >= 2, known
    assert proc.stdout.strip().splitlines()[-1].startswith(f"{len(summary['groups'])} group(s)")
    assert "| Resize-19 | builtin |" in (tmp_path / "findings.md").read_text()
    for g in summary["groups"]:
        case_dir = out / g["dir"]
        assert (case_dir / "model.onnx").is_file() and (case_dir / "test_data_set_0" / "input_0.pb").is_file()
        assert not list(out.glob(".tmp-*"))
    # every reproducer replays; one that ORT rejects also fails `customops compare` on its own
    replay = run_cli("fuzz", "replay", *(str(out / g["dir"]) for g in summary["groups"]))
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert replay.stdout.count("REPRODUCES") == len(summary["groups"]), replay.stdout
    # where a group lists `customops compare`, that command exits 1 on the reproducer alone
    by_kind = {}
    for g in summary["groups"]:
        command = next((c for c in g["rerun"] if c.startswith("customops compare")), None)
        if command is not None:
            by_kind.setdefault(g["signature"]["kind"], command)
    assert "rejects-valid" in by_kind, summary["groups"]
    for command in by_kind.values():
        compare = run_cli(*command.split()[1:])
        assert compare.returncode == 1, command + "\n" + compare.stdout + compare.stderr


def test_a_col2im_campaign_labels_findings_whose_output_rank_differs(tmp_path):
    """Col2Im's output has one axis more than its input: labelling a value finding must not end
    the campaign in a traceback (seed 1 reaches one within 60 cases)."""
    out = tmp_path / "col2im"
    proc = run_cli(
        "fuzz", "--op", "Col2Im", "--cases", "60", "--seed", "1", "--shrink-budget", "20", "--out", str(out)
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    summary = strict_json((out / "summary.json").read_text())
    value = [g for g in summary["groups"] if g["signature"]["kind"] == "value"]
    assert value and all(g["facts"]["rank"] == 3 and g["facts"]["same_shape"] is False for g in value)


def test_recorded_decisions_found_by_the_fuzzer():
    # docs/semantics.md, "Found by the fuzzer": the oracle's reading and what our kernel does
    from customops.errors import KernelError
    from customops.fuzz.dispatch import space_of
    from customops.kernels.resampling.resize import resize

    x = np.array([[1, 2, 3]], np.float32)
    scales = np.array([1, 2], np.float32)
    base = Case("Resize", 19, "float", {"X": Tensor(x), "roi": None, "scales": Tensor(scales), "sizes": None})
    oracle = space_of("Resize")
    assert (
        oracle.validate(base.with_attrs(keep_aspect_ratio_policy="not_larger")).reason == "scales-with-policy"
    )
    assert resize(x, scales=scales, keep_aspect_ratio_policy="not_larger").shape == (1, 6)  # policy ignored
    cubic = base.with_attrs(mode="cubic", cubic_coeff_a=float("inf"))
    assert oracle.validate(cubic).reason == "cubic_coeff_a-nonfinite"
    assert oracle.validate(base.with_attrs(cubic_coeff_a=float("inf"))).valid  # nearest does not use it
    with pytest.raises(KernelError, match="cubic_coeff_a"):
        resize(x, scales=scales, mode="cubic", cubic_coeff_a=float("inf"))
    empty = np.zeros((4, 0), np.float32)
    assert resize(empty, sizes=np.array([8, 0]), keep_aspect_ratio_policy="not_larger").shape == (8, 0)
    # a negative size is invalid even where not_smaller's larger ratio would hide it
    square = np.ones((2, 2), np.float32)
    sizes = Tensor(np.array([-3, 4], np.int64), const=True)
    hidden = Case("Resize", 19, "float", {"X": Tensor(square), "roi": None, "scales": None, "sizes": sizes})
    assert (
        oracle.validate(hidden.with_attrs(keep_aspect_ratio_policy="not_smaller")).reason == "size-negative"
    )
    with pytest.raises(KernelError, match="-3 is negative"):
        resize(square, sizes=np.array([-3, 4]), keep_aspect_ratio_policy="not_smaller")


def test_ort_accepting_a_negative_size_under_a_policy_is_labelled():
    from customops.eval.judging.deviations import known_labels
    from customops.eval.judging.facts import facts
    from customops.eval.running.runner import Pool
    from customops.fuzz.summary import GroupSummary
    from customops.fuzz.triage import evaluate, observed, signature_of

    sizes = Tensor(np.array([-3, 4], np.int64), const=True)
    case = Case(
        "Resize",
        19,
        "float",
        {"X": Tensor(np.ones((2, 2), np.float32)), "roi": None, "scales": None, "sizes": sizes},
        {"keep_aspect_ratio_policy": "not_smaller"},
    )
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
        (finding,) = [f for f in ev.findings if f.counts]
        assert (finding.side, finding.kind, finding.detail) == ("builtin", "accepts-invalid", "size-negative")
        sig = signature_of(pool, ev, finding)
    assert ev.outcomes["builtin"].status == "ok" and np.asarray(ev.outcomes["builtin"].value).shape == (4, 4)
    assert known_labels(GroupSummary(sig.id, None, sig, 1, [], facts=facts(observed(ev)))) == [
        "F-POLICY-NEGATIVE-SIZE"
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cases", "0"], "--cases '0' must be at least 1"),
        (["--cases", "many"], "is not an integer"),
        (["--op", "Conv"], "unknown op 'Conv'"),
        (["--op", "Col2Im", "--opset", "11"], "no version of Col2Im is in force at opset 11"),
        (["--opset", "999"], "--opset '999' is past the newest opset of the installed onnx"),
        (["--shard", "2/2"], "is not I/N"),
        (["--jobs", "0"], "--jobs '0' must be at least 1"),
        (["--time-budget", "-3"], "must be a positive number of seconds"),
        (["--out", "no/such/dir"], "--out 'no/such/dir': directory"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["merge", "nowhere"], "'nowhere' is not a directory"),
        (["merge"], "the following arguments are required: DIR"),
        (["replay", "."], "holds no finding.json"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, monkeypatch, capsys, args, needle):
    from customops.cli.main import main

    monkeypatch.chdir(tmp_path)
    try:
        status = main(["fuzz", *args])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())  # nothing written


def test_committed_findings_are_whole_reproducers():
    """findings/ keeps one reproducer per known id (tools/prune_findings.py; tests/test_findings_dir.py
    checks the rule and the page); each kept one is a whole ONNX test case the summary lists."""
    root = Path(__file__).resolve().parent.parent
    summary = strict_json((root / "findings" / "summary.json").read_text())
    listed = {g["dir"] for g in summary["groups"]}
    kept = [d for d in (root / "findings").iterdir() if d.is_dir()]
    assert kept
    for d in kept:
        assert d.name in listed, d.name
        assert (d / "model.onnx").is_file(), d.name
        assert (d / "test_data_set_0" / "input_0.pb").is_file(), d.name
    assert "| not found |" not in (root / "docs" / "findings.md").read_text()


def test_values_past_a_float_types_range_become_inf_without_a_warning():
    import warnings

    from customops.fuzz.values import cast

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = cast([1e300, -1e300, 1.5], "float")
        h = cast([1e10], "float16")
    assert y.dtype == np.float32 and y.tolist() == [np.inf, -np.inf, 1.5] and h.tolist() == [np.inf]


def test_a_group_whose_first_case_had_two_causes_is_labelled_by_what_its_representative_shows(tmp_path):
    """Seed 51, index 7465 of Resize-18: a three-way difference with two causes, non-finite inputs and
    tf_crop_and_resize's boundary arithmetic. Each alone keeps the finding, so the signature needs
    neither; shrinking kept the non-finite one, and the label must come from what the representative
    needs."""
    out = tmp_path / "two"
    args = ["fuzz", "--op", "Resize", "--opset", "18", "--seed", "51", "--index", "7465", "--out", str(out)]
    proc = run_cli(*args)
    assert proc.returncode == 1, proc.stderr[-2000:]
    (group,) = [g for g in strict_json((out / "summary.json").read_text())["groups"] if g["counts"]]
    assert group["signature"]["side"] == "three-way" and group["signature"]["kind"] == "value"
    assert "special-values" not in group["signature"]["features"]  # what made the label go missing
    assert "special-values" in group["facts"]["needs"]
    assert "semantics: inf / NaN inputs" in group["known"]


def test_ort_rounding_tf_half_pixel_for_nn_coordinates_in_float32_is_labelled():
    """Seed 81: X [-7, 1, 6], scale 1/3 (float32 0.33333334), tf_half_pixel_for_nn, round_prefer_ceil.
    The exact coordinate 0.5 / 0.33333334 is just under 1.5, so the nearest pixel is 1 (value 1); ORT's
    float32 quotient rounds to 1.5, a tie it breaks up (value 6)."""
    from customops.eval.judging.deviations import known_labels
    from customops.eval.judging.facts import facts
    from customops.eval.running.runner import Pool
    from customops.fuzz.summary import GroupSummary
    from customops.fuzz.triage import evaluate, observed, signature_of

    case = Case(
        "Resize",
        13,
        "float",
        {
            "X": Tensor(np.array([-7, 1, 6], np.float32)),
            "roi": None,
            "scales": Tensor(np.array([1 / 3], np.float32), const=True),
            "sizes": None,
        },
        {"coordinate_transformation_mode": "tf_half_pixel_for_nn", "nearest_mode": "round_prefer_ceil"},
    )
    with Pool(1, NEVER) as pool:
        ev = evaluate(pool, case)
        (finding,) = [f for f in ev.findings if f.counts]
        sig = signature_of(pool, ev, finding)
    assert np.asarray(ev.outcomes["custom"].value).tolist() == [1.0]
    assert np.asarray(ev.outcomes["builtin"].value).tolist() == [6.0]
    assert "semantics: coordinate arithmetic" in known_labels(
        GroupSummary(sig.id, None, sig, 1, [], facts=facts(observed(ev)))
    )
