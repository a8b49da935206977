"""What a model is and what the rewriter would do with it, without running anything: ``customops inspect``.

The model is read by the one loader (:func:`customops.model.io.load_model_files`, with its checks); which
nodes would be swapped, and why the others would not, is the rewriter's own decision
(:func:`customops.model.rewriter.rewrite_model` on a copy; nothing is written). ONNX Runtime is not
imported; as the rewriter does, it is asked in a child process (customops.model.ort_types) for the
element types onnx's inference leaves unknown, and only when there are such values.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import onnx

from customops.dtypes import name_of
from customops.graphs import all_nodes
from customops.model.io import check_model_file, load_model_files
from customops.model.rewriter import NodeReport, is_rewritten, rewrite_model
from customops.registry import DOMAIN
from customops.safeio import printable


@dataclass(frozen=True)
class ValueSummary:
    """A graph input or output: ``dtype`` the element type's ONNX name (or the kind of a non-tensor type),
    ``shape`` one entry per dim (an int, a symbolic dim's name, or None when unknown), None for unknown rank."""

    name: str
    dtype: str
    shape: list[int | str | None] | None


@dataclass(frozen=True)
class SwapGroup:
    """Nodes of one op version, in one graph or function, that the rewriter would swap."""

    op: str
    scope: str
    count: int


@dataclass
class ModelSummary:
    """What ``customops inspect`` reports about one model file."""

    path: str
    file_bytes: int
    ir_version: int
    opset_imports: dict[str, int]
    node_count: int
    inputs: list[ValueSummary]
    outputs: list[ValueSummary]
    checker: str
    rewritten_nodes: int = 0
    swaps: list[SwapGroup] = field(default_factory=list)
    not_swapped: list[NodeReport] = field(default_factory=list)


def _dim(d: onnx.TensorShapeProto.Dimension) -> int | str | None:
    if d.HasField("dim_value"):
        return int(d.dim_value)
    if d.HasField("dim_param") and d.dim_param:
        return d.dim_param
    return None


def value_summary(v: onnx.ValueInfoProto) -> ValueSummary:
    """The element type and shape (symbolic dims by name) of a graph input or output."""
    t = v.type
    kind = t.WhichOneof("value")
    if kind != "tensor_type":
        return ValueSummary(v.name, kind or "unknown", None)
    tt = t.tensor_type
    shape = [_dim(d) for d in tt.shape.dim] if tt.HasField("shape") else None
    dtype = name_of(tt.elem_type) if tt.elem_type else "unknown"
    return ValueSummary(v.name, dtype, shape)


def _checker(path: str) -> str:
    """'ok', or the ONNX checker's one-line complaint (inspect reports it rather than refusing)."""
    from customops.errors import CustomOpsError

    try:
        check_model_file(path)
    except CustomOpsError as exc:
        return str(exc)
    return "ok"


def _swap_groups(reports: list[NodeReport]) -> list[SwapGroup]:
    counts = Counter((r.op, r.scope) for r in reports if r.status == "swapped")
    return [SwapGroup(op, scope, n) for (op, scope), n in sorted(counts.items())]


def inspect_model(path: str | os.PathLike[str]) -> ModelSummary:
    """Summarize the model at ``path``; bad input (not a model, unsafe external data) raises
    :class:`~customops.errors.CustomOpsError`."""
    model, _external, files = load_model_files(path)
    graph = model.graph
    summary = ModelSummary(
        path=str(path),
        file_bytes=sum(os.path.getsize(f) for f in files),
        ir_version=int(model.ir_version),
        opset_imports={o.domain or "ai.onnx": int(o.version) for o in model.opset_import},
        node_count=sum(1 for _ in all_nodes(model)),
        inputs=[value_summary(v) for v in graph.input],
        outputs=[value_summary(v) for v in graph.output],
        checker=_checker(str(path)),
        rewritten_nodes=is_rewritten(model),
    )
    if summary.rewritten_nodes == 0:
        reports = rewrite_model(model).nodes
        summary.swaps = _swap_groups(reports)
        summary.not_swapped = [r for r in reports if r.status == "skipped"]
    return summary


def summary_lines(s: ModelSummary) -> list[str]:
    """The terminal text of a summary, one printable line each (names from the model are untrusted)."""

    def value(v: ValueSummary) -> str:
        shape = (
            "unknown rank"
            if v.shape is None
            else "[" + ", ".join("?" if d is None else str(d) for d in v.shape) + "]"
        )
        return f"  {v.name}: {v.dtype} {shape}"

    opsets = ", ".join(f"{d} {v}" for d, v in s.opset_imports.items())
    lines = [
        f"{s.path}: {s.file_bytes} bytes, IR version {s.ir_version}, opsets: {opsets}, {s.node_count} nodes",
        f"checker: {s.checker}",
        f"inputs ({len(s.inputs)}):",
        *(value(v) for v in s.inputs),
        f"outputs ({len(s.outputs)}):",
        *(value(v) for v in s.outputs),
    ]
    if s.rewritten_nodes:
        lines.append(
            f"already rewritten: {s.rewritten_nodes} node(s) in the {DOMAIN} domain; nothing to swap"
        )
        return [printable(line) for line in lines]
    swapped = sum(g.count for g in s.swaps)
    lines.append(f"would swap {swapped} node(s):")
    lines += [f"  {g.op} x{g.count} in {g.scope}" for g in s.swaps]
    lines.append(f"would not swap {len(s.not_swapped)} node(s):")
    lines += [f"  {r.line()}" for r in s.not_swapped]
    return [printable(line) for line in lines]
