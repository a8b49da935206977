"""Golden reports of ``customops compare --json`` and ``customops fuzz --json``.

Their JSON reports on fixed inputs are pinned here, field by field, so that a change meant to keep
behaviour can show that both commands give the same reports:

- compare on the bundled example models (customops/examples/: ort_deviation.onnx, preprocess_pipeline.onnx) with their
  generated inputs (default seed 0), and on three tiny models built below: a difference that starts at
  a node and one carried in from upstream, next to a node that agrees (``chain``); a side that cannot run
  the model (``uint16_resize``: ORT has no uint16 Resize kernel); nodes inside an If body
  (``inner_nodes``) and a node skipped by ``--ops`` (``if_body``). Pinned: the whole report and the exit
  status.
- fuzz on two small seeded campaigns with ``--jobs 1``: Pad on every version (seed 3, the README's
  example) and Resize-19 (seed 1, whose 40 cases reach value findings, so float outcomes are pinned
  too). Pinned: the summary printed on stdout, the finding.json of every group directory, the set of
  group directories and the exit status; summary.json on disk must equal stdout.

Each golden file under tests/golden/ holds the normalised document (:func:`normalise`). Everything
else is compared exactly: leaves as JSON text (so 1 is not 1.0 and -0.0 is not 0.0; floats are written by
customops.jsonout, which Python reads back exactly), dicts by key (not key order), lists item by item.
A failure lists the JSON paths that differ.

The installed versions of onnxruntime, onnx, numpy and customops are *kept* in the goldens, not
normalised: the reports hold ORT's and onnx.reference's error texts and ORT's float results, which
legitimately change with those versions, so the goldens are only meaningful for the versions they were
recorded with. A version change therefore fails the test (with a hint); re-record and review the diff.

Regenerate, after checking that every changed value is intended (``git diff tests/golden``):

    CUSTOMOPS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py

Determinism: every value pinned here is computed by the same code on the same inputs, and repeated
runs (also under ``-n 2``, two campaigns and compares at once on two cores) give identical documents;
ORT's kernels here (Resize, Pad) compute each output element independently, so its intra-op thread
count does not change their floats.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import run_cli, strict_json

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE_ENV = "CUSTOMOPS_UPDATE_GOLDEN"
UPDATE = os.environ.get(UPDATE_ENV) == "1"
MAX_LISTED = 40
"""Most differing paths listed in a failure message."""

F32 = np.float32

# ---------------------------------------------------------------------------------------------------------
# normalisation: the one place that says what may vary between runs and machines

TIME_PLACEHOLDER = "<time>"


def normalise(doc: Any, paths: dict[str, str]) -> Any:
    """``doc`` (a parsed report) with what legitimately varies between runs and machines replaced by
    placeholders, and nothing else:

    - timings: compare's ``phase_seconds`` (wall clock per phase) and per-node ``time_us`` (ORT's profiler: each side's number becomes
      ``"<time>"``; a side without a time stays ``null``, as whether the profiler names the node is
      deterministic) and a fuzz campaign's ``seconds`` and ``seconds_cases`` (wall clock);
    - absolute paths: every occurrence, inside any string, of a key of ``paths`` (the --out directory
      and pytest's tmp directory, as given and resolved) becomes its value (``"<OUT>"``, ``"<TMP>"``).

    Not normalised, on purpose: versions (see the module docstring); fuzz's ``jobs`` (the golden
    campaigns pass ``--jobs 1``, and the cap by usable cores and cases can only lower a request, so it
    is 1 on every machine); relative paths such as the bundled models' ``customops/examples/...`` (the command
    runs in the repository root)."""
    order = sorted(paths.items(), key=lambda kv: -len(kv[0]))

    def walk(value: Any, key: str | None) -> Any:
        if key == "time_us" and isinstance(value, dict):
            return {side: None if t is None else TIME_PLACEHOLDER for side, t in value.items()}
        if key in ("seconds", "seconds_cases") and isinstance(value, int | float):
            return TIME_PLACEHOLDER
        if key == "phase_seconds" and isinstance(value, dict):
            return {phase: TIME_PLACEHOLDER for phase in value}
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, str):
            for real, placeholder in order:
                value = value.replace(real, placeholder)
        return value

    return walk(doc, None)


def _path_map(**placeholders: Path) -> dict[str, str]:
    """``{"OUT": path}`` -> every spelling of each path (as given, resolved) -> ``"<OUT>"``."""
    out = {}
    for name, path in placeholders.items():
        for spelling in {str(path), os.path.realpath(path)}:
            out[spelling] = f"<{name}>"
    return out


# ---------------------------------------------------------------------------------------------------------
# comparison with a golden file


def _text(value: Any) -> str:
    return json.dumps(value, allow_nan=False)


def differences(golden: Any, got: Any, path: str = "$") -> list[str]:
    """The JSON paths at which ``got`` differs from ``golden``, one line each (leaves as JSON text)."""
    if isinstance(golden, dict) and isinstance(got, dict):
        lines = []
        for key, value in golden.items():
            sub = f"{path}.{key}"
            if key not in got:
                lines.append(f"{sub}: missing (golden {_short(value)})")
            else:
                lines.extend(differences(value, got[key], sub))
        lines.extend(f"{path}.{key}: unexpected (got {_short(got[key])})" for key in got if key not in golden)
        return lines
    if isinstance(golden, list) and isinstance(got, list):
        lines = []
        for i, (a, b) in enumerate(zip(golden, got, strict=False)):
            lines.extend(differences(a, b, f"{path}[{i}]"))
        if len(golden) != len(got):
            extra = golden[len(got) :] or got[len(golden) :]
            which = "golden" if len(golden) > len(got) else "got"
            lines.append(
                f"{path}: {len(golden)} item(s) in golden, {len(got)} now; extra in {which}: {_short(extra)}"
            )
        return lines
    if _text(golden) != _text(got):
        return [f"{path}: golden {_short(golden)} != got {_short(got)}"]
    return []


def _short(value: Any, limit: int = 160) -> str:
    text = _text(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_golden(name: str, document: Any) -> None:
    """Compare ``document`` with tests/golden/``name``.json, or write it there under
    ``CUSTOMOPS_UPDATE_GOLDEN=1``."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(document, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"no golden file {path.relative_to(ROOT)}: record it with {UPDATE_ENV}=1")
    golden = strict_json(path.read_text(encoding="utf-8"))
    diffs = differences(golden, document)
    if diffs:
        listed = diffs[:MAX_LISTED] + (
            [f"... and {len(diffs) - MAX_LISTED} more"] if diffs[MAX_LISTED:] else []
        )
        hint = ""
        if any(d.split(":")[0].endswith("_version") for d in diffs):
            hint = (
                "\nthe installed versions differ from those recorded: the goldens hold these versions' "
                "error texts and floats, so re-record them for the new versions"
            )
        pytest.fail(
            f"{name}: {len(diffs)} value(s) differ from {path.relative_to(ROOT)} (golden vs now):\n  "
            + "\n  ".join(listed)
            + hint
            + f"\nif the change is intended, regenerate with {UPDATE_ENV}=1 and review git diff tests/golden",
            pytrace=False,
        )


# ---------------------------------------------------------------------------------------------------------
# tiny hand-built models


def _model(nodes: list, inputs: list, outputs: list, inits: list, opset: int = 19) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "golden", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9  # graph outputs without a shape: compare relaxes the checker on this, as ORT does
    return model


def _init(name: str, values: list, dtype: type) -> TensorProto:
    return numpy_helper.from_array(np.array(values, dtype), name)


def chain_model() -> onnx.ModelProto:
    """X -> Resize linear/align_corners x0.6 (ORT's deviation R-ALIGN-CORNERS-INT-LENGTH: the difference
    starts here) -> Pad reflect (agrees alone: the difference is carried in); X -> Pad edge (agrees)."""
    nodes = [
        helper.make_node(
            "Resize",
            ["X", "", "scales"],
            ["shrunk"],
            name="shrink_align_corners",
            mode="linear",
            coordinate_transformation_mode="align_corners",
        ),
        helper.make_node("Pad", ["shrunk", "pads"], ["Y"], name="pad_reflect", mode="reflect"),
        helper.make_node("Pad", ["X", "pads"], ["Z"], name="pad_edge", mode="edge"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 5, 8])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, None),
        ],
        [
            _init("scales", [1, 1, 0.6, 0.6], F32),
            _init("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64),
        ],
    )


def uint16_resize_model() -> onnx.ModelProto:
    """A uint16 Resize: ORT has no built-in kernel for it, so the built-in side cannot run the model."""
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], name="upscale_uint16", mode="nearest")
    return _model(
        [node],
        [helper.make_tensor_value_info("X", TensorProto.UINT16, [1, 1, 2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.UINT16, None)],
        [_init("scales", [1, 1, 2, 2], F32)],
    )


def if_body_model() -> onnx.ModelProto:
    """A Pad in the main graph (compared with ``--ops Resize``: skipped), then an If whose branches
    resize its output (swapped inside the bodies: inner nodes). The generated ``cond`` (seed 0) is
    false: the else branch runs, an align_corners Resize on which ORT deviates, so the graph output
    differs while no node of the main graph is compared."""

    def branch(name: str, scales: list[float], **attrs: Any) -> onnx.GraphProto:
        node = helper.make_node("Resize", ["padded", "", f"{name}_scales"], [f"{name}_y"], name=name, **attrs)
        return helper.make_graph(
            [node],
            f"{name}_body",
            [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)],
            [_init(f"{name}_scales", scales, F32)],
        )

    nodes = [
        helper.make_node("Pad", ["X", "pads"], ["padded"], name="main_pad", mode="constant"),
        helper.make_node(
            "If",
            ["cond"],
            ["Y"],
            name="branch",
            then_branch=branch("then_upsample", [1, 1, 2, 2], mode="nearest"),
            else_branch=branch(
                "else_downsample",
                [1, 1, 0.6, 0.6],
                mode="linear",
                coordinate_transformation_mode="align_corners",
            ),
        ),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 3, 4]),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [_init("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)],
    )


BUILT: dict[str, Callable[[], onnx.ModelProto]] = {
    "chain": chain_model,
    "uint16_resize": uint16_resize_model,
    "if_body": if_body_model,
}

# name -> (model: a path relative to the repository root, or a builder of BUILT; extra arguments)
COMPARES: dict[str, tuple[str, list[str]]] = {
    "ort_deviation": ("customops/examples/ort_deviation.onnx", []),
    "preprocess_pipeline": ("customops/examples/preprocess_pipeline.onnx", []),
    "chain": ("chain", []),
    "uint16_resize": ("uint16_resize", []),
    "if_body": ("if_body", ["--ops", "Resize"]),
}

FUZZES: dict[str, list[str]] = {
    "pad_seed3": ["--op", "Pad", "--cases", "40", "--seed", "3", "--jobs", "1"],
    "resize19_seed1": ["--op", "Resize", "--opset", "19", "--cases", "40", "--seed", "1", "--jobs", "1"],
}


# ---------------------------------------------------------------------------------------------------------
# the tests


@pytest.mark.parametrize("name", list(COMPARES))
def test_compare_json_matches_golden(name, tmp_path):
    model_arg, extra = COMPARES[name]
    if model_arg in BUILT:
        model_path = tmp_path / f"{model_arg}.onnx"
        onnx.save(BUILT[model_arg](), model_path)
        model_arg = str(model_path)
    report_path = tmp_path / "report.json"
    proc = run_cli("compare", model_arg, *extra, "--json", str(report_path), cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    report = strict_json(report_path.read_text())
    document = {
        "command": ["customops", "compare", model_arg, *extra],
        "exit_status": proc.returncode,
        "report": report,
    }
    check_golden(f"compare_{name}", normalise(document, _path_map(TMP=tmp_path)))


@pytest.mark.parametrize("name", list(FUZZES))
def test_fuzz_json_matches_golden(name, tmp_path):
    out = tmp_path / "out"
    proc = run_cli("fuzz", *FUZZES[name], "--out", str(out), "--json", cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    summary = strict_json(proc.stdout)
    assert strict_json((out / "summary.json").read_text()) == summary, "summary.json differs from stdout"
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert dirs == sorted(g["dir"] for g in summary["groups"]), "group directories differ from the summary"
    document = {
        "command": ["customops", "fuzz", *FUZZES[name], "--out", "<OUT>", "--json"],
        "exit_status": proc.returncode,
        "summary": summary,
        "findings": {d: strict_json((out / d / "finding.json").read_text()) for d in dirs},
    }
    check_golden(f"fuzz_{name}", normalise(document, _path_map(OUT=out, TMP=tmp_path)))


def test_the_comparison_is_exact_and_names_each_path():
    """The comparer itself: leaves compare as JSON text, missing and unexpected keys and list lengths are
    named by path, normalisation replaces only timings and the given paths."""
    golden = {"a": 1, "b": [0.0, 2.5, "x"], "c": {"d": True}, "gone": None}
    got = {"a": 1.0, "b": [-0.0, 2.5000000000000004], "c": {"d": 1}, "new": 0}
    assert differences(golden, golden) == []
    assert differences(golden, got) == [
        "$.a: golden 1 != got 1.0",
        "$.b[0]: golden 0.0 != got -0.0",
        "$.b[1]: golden 2.5 != got 2.5000000000000004",
        '$.b: 3 item(s) in golden, 2 now; extra in golden: ["x"]',
        "$.c.d: golden true != got 1",
        "$.gone: missing (golden null)",
        "$.new: unexpected (got 0)",
    ]
    doc = {
        "time_us": {"builtin": 12.0, "custom": None},
        "campaigns": [{"seconds": 3.9, "seconds_cases": 2, "jobs": 1, "cases": 40}],
        "rerun": ["customops fuzz replay /t/x/out/G", "see /t/x/m.onnx"],
        "max_abs": 1.5,
    }
    assert normalise(doc, {"/t/x/out": "<OUT>", "/t/x": "<TMP>"}) == {
        "time_us": {"builtin": "<time>", "custom": None},
        "campaigns": [{"seconds": "<time>", "seconds_cases": "<time>", "jobs": 1, "cases": 40}],
        "rerun": ["customops fuzz replay <OUT>/G", "see <TMP>/m.onnx"],
        "max_abs": 1.5,
    }
