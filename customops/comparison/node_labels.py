"""compare's node where a difference starts, described for the rules of known deviations: its signature
(customops.eval.judging.signature) and the case the facts are computed from
(customops.eval.judging.facts.Observed), from the node run alone; labelled by
customops.eval.judging.deviations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import ModelProto, NodeProto, helper

from customops import dtypes
from customops.eval.cases.testcase import tensor_value
from customops.eval.judging.deviations import known_labels
from customops.eval.judging.facts import Given, Observed, facts
from customops.eval.judging.signature import Signature, Subject
from customops.registry import lookup

if TYPE_CHECKING:
    from customops.comparison.isolate import Isolated
    from customops.eval.judging.metrics import Metrics

SIDE_OF_ATTRIBUTION = {
    "builtin-leaves-spec": "builtin",
    "custom-leaves-spec": "custom",
    "three-way": "three-way",
    "no-third-vote": "unknown",
    "undecided": "unknown",
    "builtin-cannot-run": "builtin",
    "custom-cannot-run": "custom",
    "reference-odd-one-out": "reference",
    "unknown": "unknown",
}
"""compare's attribution -> the side of a fuzz finding (customops.eval.judging.attribution); ``unknown``:
a node compared against loaded outputs, never run alone (:func:`loaded_labels`)."""


def labels(
    node: NodeProto, op: str, attribution: str, iso: Isolated, pairs: dict[str, Metrics | None]
) -> list[str]:
    """The known ids a node's difference matches (empty: none, or nothing to label, or the node's data
    could not be described: labels only name a difference, they never change compare's verdict)."""
    try:
        found = subject(node, op, attribution, iso, pairs)
    except (ArithmeticError, LookupError, TypeError, ValueError, MemoryError):
        return []
    return known_labels(found) if found is not None else []


def loaded_labels(
    node: NodeProto,
    op: str,
    values: dict[str, np.ndarray],
    model: ModelProto,
    compared: tuple[np.ndarray, np.ndarray | None, Metrics | None],
) -> list[str]:
    """The known ids of a node where a difference against loaded outputs starts (customops.comparison.
    loaded): no side is named (``unknown``), the facts read the node's inputs in ``values`` (the file's
    values, the graph inputs, ``model``'s initializers as its constants) and the file's output as ORT's.
    ``compared``: the file's output, ours and their metrics."""
    from customops.comparison.isolate import Isolated, node_model

    loaded, ours, pair = compared
    try:
        constants = frozenset(t.name for t in model.graph.initializer)
        one, feed = node_model(node, values, model.opset_import, model.ir_version, constants)
    except (LookupError, TypeError, ValueError):
        return []
    iso = Isolated(one, feed, {"builtin": loaded, "custom": ours, "reference": None}, {})
    return labels(node, op, "unknown", iso, {"builtin_vs_custom": pair})


def subject(
    node: NodeProto, op: str, attribution: str, iso: Isolated, pairs: dict[str, Metrics | None]
) -> Subject | None:
    """The node's difference as the rules read it (None: nothing to label). ``pairs`` are the metrics of
    the node alone by pair of sides (customops.comparison.isolate); the kind of the difference comes from
    the built-in and custom pair, or from custom and reference where the reference is odd."""
    side = SIDE_OF_ATTRIBUTION.get(attribution)
    if side is None or "-" not in op:
        return None
    pair = pairs.get("custom_vs_reference" if side == "reference" else "builtin_vs_custom")
    name, version = op.rsplit("-", 1)
    kind = _kind(attribution, pair)
    detail = (iso.errors.get(side) or "") if kind == "rejects-valid" else ""
    seen = observed(node, iso)
    signature = Signature(name, int(version), side, kind, detail, _features(seen.attrs, seen.dtype, seen.x))
    return Subject(signature, facts(seen, reference=side == "reference"))


def observed(node: NodeProto, iso: Isolated) -> Observed:
    """The node alone as customops.eval.judging.facts reads a case: X, its element type, the inputs with a
    value here by the registry's names (constant: not fed), the attributes, the spec side's output shape
    (ours, else the reference's) and ORT's output."""
    x = _value(iso, node.input[0]) if node.input else None
    opv = lookup(node.op_type, _opset(iso))
    names = [i.name for i in opv.inputs] if opv is not None else []
    inputs = {}
    for position, name in enumerate(names):
        if position < len(node.input) and node.input[position]:
            value = x if position == 0 else _value(iso, node.input[position])
            if value is not None:
                inputs[name] = Given(value, dtypes.elem_of(value), node.input[position] not in iso.feed)
    custom, reference = iso.outputs.get("custom"), iso.outputs.get("reference")
    spec = custom if custom is not None else reference
    return Observed(
        op=node.op_type,
        x=x,
        dtype=dtypes.elem_of(x) if x is not None else "float",
        attrs=attributes(node),
        inputs=inputs,
        out_shape=tuple(spec.shape) if spec is not None else None,
        builtin=iso.outputs.get("builtin"),
    )


def _kind(attribution: str, pair: Metrics | None) -> str:
    if attribution.endswith("cannot-run"):
        return "rejects-valid"
    if pair is not None and not pair.shape_match:
        return "shape"
    if pair is not None and not pair.dtype_match:
        return "dtype"
    return "value"


def attributes(node: NodeProto) -> dict[str, Any]:
    """A node's attributes by name, as Python values (strings decoded)."""
    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        out[a.name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return out


def _features(attrs: dict[str, Any], elem: str, x: np.ndarray | None) -> tuple[str, ...]:
    """The node's features as the fuzzer names them: each attribute set, T other than float, special
    values in X (a superset of what a shrunk fuzz group needs)."""
    features = [k if isinstance(v, (list, float)) else f"{k}={v}" for k, v in attrs.items()]
    if elem != "float":
        features.append(f"dtype={elem}")
    if x is not None and x.dtype.kind in "fc" and not np.isfinite(x).all():
        features.append("special-values")
    return tuple(features)


def _opset(iso: Isolated) -> int:
    """The default-domain opset of the node's one-node model."""
    return next((o.version for o in iso.model.opset_import if o.domain in ("", "ai.onnx")), 1)


def _value(iso: Isolated, name: str) -> np.ndarray | None:
    """An input of the node alone: fed, or one of its initializers (the model's constants)."""
    if name in iso.feed:
        return np.asarray(iso.feed[name])
    for t in iso.model.graph.initializer:
        if t.name == name:
            return tensor_value(t, "initializer")
    return None
