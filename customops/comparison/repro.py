"""compare's ``--save-repro``: an ONNX test case for each node where a disagreement starts or a side
fails (customops.eval.testcase), named after the node as one safe path component."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import ModelProto, helper

from customops import dtypes
from customops.errors import CustomOpsError
from customops.eval.testcase import first_differences, versions_line, write_test_case
from customops.safeio import atomic_dir, safe_component

if TYPE_CHECKING:
    from customops.comparison.isolate import Isolated
    from customops.comparison.pipeline import Comparison


def save_repros(comparison: Comparison, directory: str | os.PathLike[str]) -> list[Path]:
    """For each node where a disagreement starts or a side fails: an ONNX test-case directory (model.onnx
    with the node alone in its standard domain, test_data_set_0/input_N.pb, output_0.pb with the spec
    side's output) and the command that reproduces the comparison (in README.txt). Each directory is named
    after its node as one safe path component inside ``directory`` (customops.safeio), and appears whole
    or not at all. Returns the directories written."""
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CustomOpsError(f"cannot make --save-repro {str(root)!r}: {exc.strerror or exc}") from None
    used = {p.name.lower() for p in root.iterdir()}
    written = []
    for n in comparison.report["nodes"]:
        iso = comparison.isolated.get(n["node"])
        if n["verdict"] in ("agree", "within-rounding") or iso is None or n["origin"] == "carried-in":
            continue  # carried in from upstream: not on the node alone; within rounding: no departure
        case = root / safe_component(n["node"], used, fallback="node")
        with atomic_dir(case) as tmp:
            _write_repro(tmp, case, n, iso)
        written.append(case)
    return written


def _write_repro(into: Path, final: Path, n: dict[str, Any], iso: Isolated) -> None:
    spec_side = "reference" if n["attribution"] == "custom-leaves-spec" else "custom"
    expected = iso.outputs.get(spec_side)
    if expected is None:
        spec_side, expected = "reference", iso.outputs.get("reference")
    write_test_case(into, _typed_outputs(iso.model, expected), iso.feed, expected)
    lines = [
        f"{n['node']!r} [{n['op']}]: {n['attribution']} ({n['verdict']})"
        + (f", known: {', '.join(n['known'])}" if n.get("known") else ""),
        f"output_0.pb holds the {spec_side} side's output (the spec side).",
        *(f"  {line}" for line in first_differences(iso.outputs.get("builtin"), expected)),
        versions_line(),
        "Reproduce, in this directory:",
        "  python repro.py                                  # ONNX Runtime alone; exits 1 while it differs",
        "  customops compare model.onnx --inputs .           # the three sides",
    ]
    (into / "README.txt").write_text("\n".join(lines) + "\n")


def _typed_outputs(model: ModelProto, expected: np.ndarray | None) -> ModelProto:
    """``model`` with its output declared (type and rank), so the saved test case passes the checker."""
    out = ModelProto()
    out.CopyFrom(model)
    first = out.graph.input[0].type.tensor_type
    if expected is not None:
        value = np.asarray(expected)
        elem = dtypes.code_of(value.dtype)
        dims: list[Any] = list(value.shape)
    else:
        elem, dims = first.elem_type, [f"d{i}" for i in range(len(first.shape.dim))]
    name = out.graph.output[0].name
    del out.graph.output[:]
    out.graph.output.append(helper.make_tensor_value_info(name, elem, dims))
    return out
