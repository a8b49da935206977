"""Model-wide passes: swap standard nodes into :data:`~customops.registry.DOMAIN` and restore them exactly.

Both passes visit the main graph, every nested subgraph (If / Loop / Scan bodies, at any depth) and every
model-local function. :func:`rewrite_model` reports, for every candidate node, whether it was swapped or
why it was left alone.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import onnx
from google.protobuf.message import DecodeError
from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, helper

from customops.errors import CustomOpsError
from customops.graphs import all_graphs, all_nodes, check_in_memory, node_label, subgraphs, walk_graph
from customops.model import typed
from customops.model.io import load_model_files
from customops.model.translate import HELPER_DOC, Namer, Skip, original_of, translate
from customops.registry import DOMAIN, OP_TYPES, RESTORE_ATTR, layer_string_refusal, lookup
from customops.safeio import printable

STANDARD_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class NodeReport:
    """What happened to one candidate node: ``status`` is 'swapped' or 'skipped' (then ``reason`` says why)."""

    scope: str
    node: str
    op: str
    status: str
    reason: str = ""

    def line(self) -> str:
        where = f"{self.scope}: " if self.scope != "graph" else ""
        tail = f" ({self.reason})" if self.reason else ""
        return printable(f"{self.status:8s} {where}{self.node} [{self.op}]{tail}")


@dataclass
class RewriteResult:
    """A rewritten model and the per-node report."""

    model: ModelProto
    nodes: list[NodeReport] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(r.status == "swapped" for r in self.nodes)

    @property
    def swapped(self) -> list[NodeReport]:
        return [r for r in self.nodes if r.status == "swapped"]

    @property
    def skipped(self) -> list[NodeReport]:
        return [r for r in self.nodes if r.status == "skipped"]


def _names(model: ModelProto) -> set[str]:
    used: set[str] = set()
    for f in model.functions:
        used.update(f.input)
        used.update(f.output)
    graphs = all_graphs(model)
    for g in graphs:
        used.update(v.name for v in (*g.input, *g.output, *g.value_info))
        used.update(t.name for t in g.initializer)
    for node in all_nodes(model):
        used.add(node.name)
        used.update(node.input)
        used.update(node.output)
    used.discard("")
    return used


def value_types(graph: GraphProto, into: dict[str, int]) -> None:
    """Add to ``into`` the element type (a TensorProto enum) of every value of ``graph`` and its subgraphs
    whose type is known: typed inputs, outputs and value_info, initializers and Constant outputs. A name
    already in ``into`` keeps its type."""
    for g in walk_graph(graph):
        for v in (*g.input, *g.output, *g.value_info):
            if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type:
                into.setdefault(v.name, v.type.tensor_type.elem_type)
        for t in g.initializer:
            into.setdefault(t.name, t.data_type)
        for node in g.node:
            if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS and node.output:
                for a in node.attribute:
                    if a.name == "value" and a.type == AttributeProto.TENSOR:
                        into.setdefault(node.output[0], a.t.data_type)


def unknown_inputs(model: ModelProto, types: dict[str, int]) -> list[str]:
    """The values computed by nodes of ``model``'s main graph whose element type ``types`` does not know
    and that feed a node of an op we implement (in the main graph, or in a subgraph of it that reads
    them from the outer scope) or a call of a model-local function that holds one (its types come from
    its call sites). Values computed inside a subgraph or a function are not among them: ORT can be
    asked only for the main graph's values (customops.model.ort_types)."""
    computed = {o for n in model.graph.node for o in n.output if o}
    local = {(f.domain, f.name) for f in model.functions if any(map(_implemented, f.node))}
    found: dict[str, None] = {}
    for g in walk_graph(model.graph):
        for n in g.node:
            if _implemented(n) or (n.domain, n.op_type) in local:
                found.update((i, None) for i in n.input if i in computed and i not in types)
    return list(found)


def _implemented(node: NodeProto) -> bool:
    """Whether ``node`` is of a standard op we implement (a candidate of the rewrite)."""
    return node.domain in STANDARD_DOMAINS and node.op_type in OP_TYPES


def _string_constants(model: ModelProto) -> dict[str, list[bytes]]:
    """The elements of every string initializer and string Constant of the model, by value name."""
    found: dict[str, list[bytes]] = {}
    for g in all_graphs(model):
        for t in g.initializer:
            if t.data_type == onnx.TensorProto.STRING:
                found[t.name] = list(t.string_data)
    for node in all_nodes(model):
        if node.op_type != "Constant" or node.domain not in STANDARD_DOMAINS or not node.output:
            continue
        for a in node.attribute:
            if (
                a.name == "value"
                and a.type == AttributeProto.TENSOR
                and a.t.data_type == onnx.TensorProto.STRING
            ):
                found[node.output[0]] = list(a.t.string_data)
            elif a.name == "value_string":
                found[node.output[0]] = [a.s]
            elif a.name == "value_strings":
                found[node.output[0]] = list(a.strings)
    return found


def _string_problem(node: NodeProto, strings: dict[str, list[bytes]]) -> str | None:
    """Why a constant string input of ``node`` cannot cross onnxruntime-extensions' Python layer exactly
    (:func:`registry.layer_string_refusal`), or None."""
    for name in node.input:
        for i, value in enumerate(strings.get(name, ())):
            reason = layer_string_refusal(value)
            if reason:
                return f"element {i} of constant string input {name!r} {reason}"
    return None


_BIG_TENSOR = 1 << 20


def without_big_data(model: ModelProto) -> ModelProto:
    """A copy whose large initializers keep their type and dims but not their data (for inference only)."""
    from customops.graphs import model_tensors

    probe = ModelProto()
    probe.CopyFrom(model)
    for t in model_tensors(probe):
        if t.ByteSize() > _BIG_TENSOR:
            for name in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(name)
            del t.external_data[:]
            t.data_location = onnx.TensorProto.DEFAULT
    return probe


def infer_types(model: ModelProto) -> ModelProto:
    """A copy of ``model`` with inferred value types (large tensor data left out, so models over 2 GB work
    too); ``model`` itself when inference fails (type information is best effort)."""
    try:
        return onnx.shape_inference.infer_shapes(without_big_data(model), check_type=False, strict_mode=False)
    except Exception:  # type information is best effort
        return model


def _function_types(model: ModelProto, fn: FunctionProto, graph_types: dict[str, int]) -> dict[str, int]:
    """Element types inside ``fn``, inferred from the types its call sites pass in (when they agree)."""
    calls = [n for n in all_nodes(model) if n.op_type == fn.name and n.domain == fn.domain]
    formal: dict[str, int] = {}
    for call in calls:
        for name, actual in zip(fn.input, call.input, strict=False):
            code = graph_types.get(actual)
            if code is None:
                continue
            if formal.setdefault(name, code) != code:
                formal[name] = 0  # call sites disagree: unknown
    formal = {k: v for k, v in formal.items() if v}
    inputs = [helper.make_tensor_value_info(n, formal[n], None) for n in fn.input if n in formal]
    body = helper.make_graph(
        list(fn.node), "fn", inputs, [helper.make_value_info(n, onnx.TypeProto()) for n in fn.output]
    )
    probe = helper.make_model(body, opset_imports=list(fn.opset_import), functions=list(model.functions))
    probe.ir_version = model.ir_version
    types = dict(formal)
    value_types(infer_types(probe).graph, types)
    return types


def _opset(imports: Iterable[onnx.OperatorSetIdProto]) -> int | None:
    for o in imports:
        if o.domain in STANDARD_DOMAINS:
            return o.version
    return None


def _ensure_domain(imports: Iterable[onnx.OperatorSetIdProto], container: object) -> None:
    if not any(o.domain == DOMAIN for o in imports):
        container.opset_import.append(helper.make_opsetid(DOMAIN, 1))  # type: ignore[attr-defined]


class _Rewriter:
    def __init__(
        self,
        model: ModelProto,
        ops: set[str] | None,
        nodes: set[str] | None,
        exclude: set[str],
    ) -> None:
        self.model = model
        self.ops = ops
        self.nodes = nodes
        self.exclude = exclude
        self.namer = Namer(_names(model))
        self.strings = _string_constants(model)
        self.reports: list[NodeReport] = []

    def _selected(self, node: NodeProto) -> str | None:
        label = node_label(node)
        if self.ops is not None and node.op_type not in self.ops:
            return f"op type not selected (selected: {', '.join(sorted(self.ops))})"
        if self.nodes is not None and label not in self.nodes:
            return "node not selected"
        if label in self.exclude:
            return "excluded"
        return None

    def rewrite_nodes(
        self, container: GraphProto | FunctionProto, scope: str, opset: int | None, types: dict[str, int]
    ) -> bool:
        """Rewrite the nodes of a graph or function (and their subgraphs) in place; whether anything changed."""
        changed = False
        new_nodes: list[NodeProto] = []
        for node in container.node:
            for attr_name, sub in subgraphs(node):
                changed |= self.rewrite_nodes(
                    sub, f"{scope}/{node.name or node.op_type}.{attr_name}", opset, types
                )
            replacement = self.node(node, scope, opset, types, container)
            if replacement is None:
                new_nodes.append(node)
            else:
                new_nodes.extend(replacement)
                changed = True
        if changed:
            del container.node[:]
            container.node.extend(new_nodes)
        return changed

    def node(
        self,
        node: NodeProto,
        scope: str,
        opset: int | None,
        types: dict[str, int],
        container: GraphProto | FunctionProto,
    ) -> list[NodeProto] | None:
        if node.domain not in STANDARD_DOMAINS or node.op_type not in OP_TYPES:
            return None
        label = node_label(node, node.op_type)
        opv = lookup(node.op_type, opset) if opset is not None else None
        op_label = opv.key if opv is not None else f"{node.op_type}@opset{opset}"
        unselected = self._selected(node)
        if unselected:
            self.reports.append(NodeReport(scope, label, op_label, "skipped", unselected))
            return None
        if opv is None:
            self.reports.append(
                NodeReport(
                    scope,
                    label,
                    op_label,
                    "skipped",
                    f"no supported version of {node.op_type} at opset {opset}",
                )
            )
            return None
        shaped = _shaped_value_info(container, node.output)
        try:
            problem = _string_problem(node, self.strings)
            if problem:
                raise Skip(problem)
            kept = [base64.b64encode(v.SerializeToString()).decode("ascii") for v in shaped]
            how = typed.translate if opv.type_vars else translate
            tr = how(node, opv, opset or 0, types.get, self.namer, kept)  # type: ignore[arg-type]
        except Skip as why:
            self.reports.append(NodeReport(scope, label, op_label, "skipped", str(why)))
            return None
        for v in shaped:
            v.type.tensor_type.ClearField("shape")
        self.reports.append(NodeReport(scope, label, op_label, "swapped"))
        return tr.nodes


def _shaped_value_info(
    container: GraphProto | FunctionProto, names: Iterable[str]
) -> list[onnx.ValueInfoProto]:
    """The value_info entries of ``container`` that give one of the values ``names`` (a node's outputs) a
    tensor shape.

    ONNX Runtime cannot infer shapes through our ops, so it takes these shapes on trust for their outputs
    and plans buffer reuse from them: a symbolic dim an exporter shared with another tensor then makes it
    hand our node a buffer of the wrong size, and the error it raises inside the custom-op callback
    aborts the process. The rewriter clears these shapes (keeping the element type) and restore puts
    them back."""
    wanted = {n for n in names if n}
    return [
        v
        for v in container.value_info
        if v.name in wanted and v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")
    ]


def is_rewritten(model: ModelProto) -> int:
    """How many nodes of ``model`` (main graph, subgraphs, functions) are in :data:`DOMAIN`: 0 for a model
    :func:`rewrite` has not been run on."""
    return sum(1 for n in all_nodes(model) if n.domain == DOMAIN)


def already_rewritten(count: int, how: str = "customops.restore(model)") -> str:
    """The message refusing to rewrite a model that has ``count`` nodes in our domain; ``how`` says how
    to restore it first."""
    return (
        f"the model is already rewritten ({count} node(s) in the {DOMAIN} domain): "
        f"restore it first with {how}, then rewrite"
    )


def _check_selection(
    model: ModelProto, ops: Iterable[str] | None, nodes: Iterable[str] | None, exclude: Iterable[str]
) -> None:
    for op in ops or ():
        if op not in OP_TYPES:
            raise CustomOpsError(f"unknown op {op!r} (supported: {', '.join(OP_TYPES)})")
    wanted = [*(nodes or ()), *exclude]
    if wanted:
        present = {n.name for n in all_nodes(model)} | {n.output[0] for n in all_nodes(model) if n.output}
        for name in wanted:
            if name not in present:
                raise CustomOpsError(
                    f"no node named {name!r} in the model (--nodes and --exclude take node names, or "
                    "the first output of a node without a name)"
                )


def as_model(model: Any) -> ModelProto:
    """``model`` as a ModelProto: one as is, serialized bytes parsed, a path loaded (external data
    included); anything else, a file or bytes that hold no model, text that is not UTF-8, or external
    data in a model given without its path, raises CustomOpsError."""
    if isinstance(model, (str, os.PathLike)):
        return load_model_files(model)[0]
    if isinstance(model, ModelProto):
        check_in_memory(model, "the ModelProto given")
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        out = ModelProto()
        try:
            out.ParseFromString(bytes(model))
        except DecodeError as exc:
            raise CustomOpsError(f"the bytes given are not a serialized ONNX model ({exc})") from None
        check_in_memory(out, "the model bytes given")
        return out
    raise CustomOpsError(
        f"model {type(model).__name__!r} is not an onnx.ModelProto, serialized bytes or a path to a model"
    )


def rewrite_model(
    model: Any,
    *,
    ops: Iterable[str] | None = None,
    nodes: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    ort_types: bool = True,
) -> RewriteResult:
    """Swap every supported standard node (or only those of ``ops`` / named in ``nodes``, minus ``exclude``)
    into :data:`DOMAIN`, everywhere in the model; returns the new model and a report per candidate node.

    ``model`` is an onnx.ModelProto (not modified), serialized bytes or a path (:func:`as_model`).
    Element types come from the model and onnx's type inference; with ``ort_types``, those it leaves
    unknown (:func:`unknown_inputs`: downstream of ORT's contrib ops) are asked of ONNX Runtime in a
    child process (customops.model.ort_types), which starts only when there is such a value.
    """
    model = as_model(model)
    count = is_rewritten(model)
    if count:
        raise CustomOpsError(already_rewritten(count))
    _check_selection(model, ops, nodes, exclude or ())
    out = ModelProto()
    out.CopyFrom(model)
    rw = _Rewriter(
        out,
        set(ops) if ops is not None else None,
        set(nodes) if nodes is not None else None,
        set(exclude or ()),
    )
    types: dict[str, int] = {}
    value_types(infer_types(out).graph, types)
    value_types(out.graph, types)
    if ort_types:
        from customops.model.ort_types import learn

        types.update(learn(out, unknown_inputs(out, types)))
    changed = rw.rewrite_nodes(out.graph, "graph", _opset(out.opset_import), types)
    for fn in out.functions:
        if rw.rewrite_nodes(
            fn, f"function {fn.name}", _opset(fn.opset_import), _function_types(out, fn, types)
        ):
            _ensure_domain(fn.opset_import, fn)
            changed = True
    if changed:
        _ensure_domain(out.opset_import, out)
    return RewriteResult(out, rw.reports)


def rewrite(
    model: Any,
    *,
    ops: Iterable[str] | None = None,
    nodes: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    ort_types: bool = True,
) -> ModelProto:
    """Return a new model in which every supported standard node (or only ``ops`` op types / ``nodes`` node
    names, minus ``exclude``) is replaced by its equivalent in :data:`DOMAIN`; see :func:`rewrite_model`
    (``model`` may also be serialized bytes or a path; ``ort_types``: ask ONNX Runtime for the element
    types onnx's inference leaves unknown)."""
    return rewrite_model(model, ops=ops, nodes=nodes, exclude=exclude, ort_types=ort_types).model


def _restore_nodes(container: GraphProto | FunctionProto, orphans: list[str]) -> bool:
    """Put back the original nodes of ``container`` (and its subgraphs) and their output shapes; add to
    ``orphans`` the nodes in our domain that carry no restore information."""
    nodes = list(container.node)
    found = [original_of(n) for n in nodes]  # every node's restore information is checked first
    helpers = {h for o in found if o is not None for h in o.helpers}
    out: list[NodeProto] = []
    changed = False
    for node, original in zip(nodes, found, strict=True):
        for _, sub in subgraphs(node):
            changed |= _restore_nodes(sub, orphans)
        if original is not None:
            out.append(original.node)
            _restore_value_info(container, original.node.output[0], original.value_info)
            changed = True
        elif node.name in helpers and node.doc_string == HELPER_DOC:
            changed = True
        else:
            if node.domain == DOMAIN:
                label = node_label(node)
                orphans.append(f"{label!r} [{node.op_type}]")
            out.append(node)
    if changed:
        del container.node[:]
        container.node.extend(out)
    return changed


def _restore_value_info(
    container: GraphProto | FunctionProto, name: str, kept: list[onnx.ValueInfoProto]
) -> None:
    """Give the value_info entries of ``name`` back what the rewriter took off them, in order."""
    entries = [v for v in container.value_info if v.name == name]
    for entry, original in zip(entries, kept, strict=False):
        entry.CopyFrom(original)


def _drop_domain(container: object) -> None:
    imports = container.opset_import  # type: ignore[attr-defined]
    keep = [o for o in imports if o.domain != DOMAIN]
    del imports[:]
    imports.extend(keep)


def restore(model: Any) -> ModelProto:
    """The inverse of :func:`rewrite`: every node we swapped goes back to the original standard node,
    helpers the rewriter added are removed, and our opset import is dropped once nothing uses it.
    ``model`` is an onnx.ModelProto (not modified), serialized bytes or a path (:func:`as_model`).

    A node in :data:`DOMAIN` without restore information (not made by :func:`rewrite`, or its record
    removed) cannot be put back: CustomOpsError names every such node, and nothing is restored."""
    out = ModelProto()
    out.CopyFrom(as_model(model))
    orphans: list[str] = []
    _restore_nodes(out.graph, orphans)
    for fn in out.functions:
        _restore_nodes(fn, orphans)
        if not any(n.domain == DOMAIN for n in fn.node):
            _drop_domain(fn)
    if orphans:
        shown = ", ".join(orphans[:5]) + (f" and {len(orphans) - 5} more" if len(orphans) > 5 else "")
        raise CustomOpsError(
            f"{len(orphans)} node(s) in the {DOMAIN} domain cannot be restored: {shown} carry no "
            f"{RESTORE_ATTR} record (not made by customops.rewrite, or the record was removed); "
            "nothing was restored"
        )
    if not any(n.domain == DOMAIN for n in all_nodes(out)):
        _drop_domain(out)
    return out


__all__ = [
    "NodeReport",
    "RewriteResult",
    "is_rewritten",
    "restore",
    "rewrite",
    "rewrite_model",
    "unknown_inputs",
]
