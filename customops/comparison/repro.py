"""compare's ``--save-repro``: an ONNX test case for each node where a disagreement starts or a side
fails (customops.eval.cases.testcase), named after the node as one safe path component."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import ModelProto, helper

from customops import dtypes
from customops.errors import CustomOpsError
from customops.eval.cases.testcase import first_differences, versions_line, write_test_case
from customops.safeio import atomic_dir, safe_component

if TYPE_CHECKING:
    from customops.comparison.isolate import Isolated
    from customops.comparison.results import Comparison, NodeResult


def save_repros(comparison: Comparison, directory: str | os.PathLike[str]) -> list[Path]:
    """For each node where a disagreement starts or a side fails: an ONNX test-case directory (model.onnx
    with the node alone in its standard domain, test_data_set_0/input_N.pb, output_0.pb with the spec
    side's output) and the command that reproduces the comparison (in README.txt). Each directory is named
    after its node as one safe path component inside ``directory`` (customops.safeio), and appears whole
    or not at all. Returns the directories written; with none to write, ``directory`` is not made."""
    cases = [(n, comparison.isolated[n.node]) for n in comparison.report.nodes if reproduces(n, comparison)]
    if not cases:
        return []
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CustomOpsError(f"cannot make --save-repro {str(root)!r}: {exc.strerror or exc}") from None
    used = {p.name.lower() for p in root.iterdir()}
    written = []
    for n, iso in cases:
        case = root / safe_component(n.node, used, fallback="node")
        with atomic_dir(case) as tmp:
            _write_repro(tmp, case, n, iso)
        written.append(case)
    return written


def reproduces(node: NodeResult, comparison: Comparison) -> bool:
    """Whether ``node`` (a report's entry) gets a reproducer: a difference starts there or a side fails
    on it alone (a difference carried in from upstream does not reproduce on the node alone)."""
    isolated = comparison.isolated.get(node.node) is not None
    departs = node.verdict not in ("agree", "within-rounding")  # within rounding: no departure
    return departs and isolated and node.origin != "carried-in"


def nothing_saved(comparison: Comparison) -> str:
    """Why ``--save-repro`` wrote nothing (:func:`save_repros` found no node to write), in one line."""
    if comparison.report.verdict == "agree":
        why = "the two sides agree"
    elif not comparison.report.nodes and not comparison.report.outputs:
        why = "nothing was compared (see the verdict)"
    else:
        why = "no swapped node of the main graph differs or fails alone (see the verdict)"
    return f"--save-repro wrote nothing: {why}; reproducers are of nodes where a difference starts or a side fails"


def _write_repro(into: Path, final: Path, n: NodeResult, iso: Isolated) -> None:
    """The test case of node ``n`` alone: its model declaring the output the node shows (for a node of
    several outputs, the worst one's), the inputs, the spec side's value of that output, README.txt."""
    iso = iso.of(n.output) if n.output in iso.every else iso
    spec_side = "reference" if n.attribution == "custom-leaves-spec" else "custom"
    expected = iso.outputs.get(spec_side)
    if expected is None:
        spec_side, expected = "reference", iso.outputs.get("reference")
    write_test_case(into, _typed_outputs(iso.model, expected, n.output), iso.feed, expected)
    known = f" (known: {', '.join(n.known)})" if n.known else ""
    lines = [
        f"{n.node!r} [{n.op}]: {n.attribution}{known} ({n.verdict})",
        f"output_0.pb holds the {spec_side} side's output (the spec side).",
        *(f"  {line}" for line in first_differences(iso.outputs.get("builtin"), expected)),
        versions_line(),
        "Reproduce, in this directory:",
        "  python repro.py                                  # ONNX Runtime alone; exits 1 while it differs",
        "  customops compare model.onnx --inputs .           # the three sides",
    ]
    (into / "README.txt").write_text("\n".join(lines) + "\n")


def _typed_outputs(model: ModelProto, expected: np.ndarray | None, shown: str) -> ModelProto:
    """``model`` with one output declared (type and rank), so the saved test case passes the checker: the
    one ``shown`` when it is one of the model's, else its first."""
    out = ModelProto()
    out.CopyFrom(model)
    first = out.graph.input[0].type.tensor_type
    if expected is not None:
        value = np.asarray(expected)
        elem = dtypes.code_of(value.dtype)
        dims: list[Any] = list(value.shape)
    else:
        elem, dims = first.elem_type, [f"d{i}" for i in range(len(first.shape.dim))]
    names = [o.name for o in out.graph.output]
    name = shown if shown in names else names[0]
    del out.graph.output[:]
    out.graph.output.append(helper.make_tensor_value_info(name, elem, dims))
    return out
