"""Known deviations by name in compare: the node where a difference starts, described as the fuzzer
describes its groups (signature and facts), and labelled by the one matcher (customops.eval.known)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import NodeProto, helper

from customops import dtypes
from customops.eval.known import INDEX_INPUTS, OP_FACTS, Signature, Subject, known_labels, op_facts
from customops.eval.testcase import tensor_value
from customops.registry import lookup

if TYPE_CHECKING:
    from customops.comparison.isolate import Isolated
    from customops.eval.metrics import Metrics

SIDES = {
    "builtin-leaves-spec": "builtin",
    "custom-leaves-spec": "custom",
    "three-way": "three-way",
    "no-third-vote": "unknown",
    "undecided": "unknown",
    "builtin-cannot-run": "builtin",
    "custom-cannot-run": "custom",
    "reference-odd-one-out": "reference",
}
"""compare's attribution -> the side of a fuzz finding (customops.eval.attribution)."""


def labels(
    node: NodeProto, op: str, attribution: str, iso: Isolated, pairs: dict[str, Metrics | None]
) -> list[str]:
    """The known ids a node's difference matches (empty: none, or nothing to label). ``pairs`` are the
    metrics of the node alone by pair of sides (customops.comparison.isolate); the kind of the difference
    comes from the built-in and custom pair, or from custom and reference where the reference is odd."""
    side = SIDES.get(attribution)
    if side is None or "-" not in op:
        return []
    pair = pairs.get("custom_vs_reference" if side == "reference" else "builtin_vs_custom")
    name, version = op.rsplit("-", 1)
    kind = _kind(attribution, pair)
    detail = (iso.errors.get(side) or "") if kind == "rejects-valid" else ""
    attrs = _attributes(node)
    x = _value(iso, node.input[0]) if node.input else None
    elem = dtypes.elem_of(x) if x is not None else "float"
    signature = Signature(name, int(version), side, kind, detail, _features(attrs, elem, x))
    return known_labels(Subject(signature, _facts(node, iso, attrs, elem)))


def _kind(attribution: str, pair: Metrics | None) -> str:
    if attribution.endswith("cannot-run"):
        return "rejects-valid"
    if pair is not None and not pair.shape_match:
        return "shape"
    if pair is not None and not pair.dtype_match:
        return "dtype"
    return "value"


def _attributes(node: NodeProto) -> dict[str, Any]:
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


def _facts(node: NodeProto, iso: Isolated, attrs: dict[str, Any], elem: str) -> dict[str, Any]:
    """What the rules read of a case (customops.eval.known.facts), from the node run alone."""
    x = _value(iso, node.input[0]) if node.input else None
    facts: dict[str, Any] = {"dtype": elem, "attrs": attrs}
    if x is None:
        return facts
    facts.update(rank=int(x.ndim), zero_axes=sum(1 for d in x.shape if d == 0))
    spec = (
        iso.outputs.get("custom") if iso.outputs.get("custom") is not None else iso.outputs.get("reference")
    )
    if spec is not None:
        facts["same_shape"] = tuple(spec.shape) == tuple(x.shape)
        if spec.ndim == x.ndim:
            facts["kept_axes"] = sum(1 for a, b in zip(spec.shape, x.shape, strict=True) if a == b)
            # an axis brought to length 1 (the reference's rules: Resize's one-element outputs)
            facts["resized_to_one"] = any(a == 1 and b != 1 for a, b in zip(spec.shape, x.shape, strict=True))
    built = iso.outputs.get("builtin")
    if built is not None:
        facts["builtin_returns_input"] = built.shape == x.shape and bool(np.array_equal(built, x))
    opv = lookup(node.op_type, _opset(iso))
    names = [i.name for i in opv.inputs] if opv is not None else []
    for position, name in enumerate(names):
        if name in INDEX_INPUTS and position < len(node.input) and node.input[position]:
            value = _value(iso, node.input[position])
            if value is not None:
                facts[f"{name}_elem"] = dtypes.elem_of(value)
                facts[f"{name}_const"] = node.input[position] not in iso.feed
                if name == "image_shape":
                    facts["spatial"] = int(np.asarray(value).size)
    if opv is not None and opv.op in OP_FACTS:
        given = [(p, name) for p, name in enumerate(names) if p < len(node.input) and node.input[p]]
        values = {name: _value(iso, node.input[p]) for p, name in given}
        facts.update(op_facts(opv.op, values, attrs, built))
    return facts


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
