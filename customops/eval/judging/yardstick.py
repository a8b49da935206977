"""The yardstick measured: a high-precision value of the spec formula for one node, and each side
against it within the rounding bound of its output type.

When ORT's built-in kernel and ours differ on a node alone, a majority of three float32 computations
can outvote the exact answer (ORT's RoiAlign and onnx.reference's, a port of it, agree bit for bit and
are further from the exact value than ours). So where a node's arithmetic rounds, each side is judged
against a value of the formula computed in float64: our kernel run on the node's inputs widened to
float64 (the inputs of the op's type T; float64 inputs: our output itself). A side within the bound
(customops.eval.judging.rounding_bound.bound) of it does not leave the spec
(customops.eval.judging.attribution.odd_one_out).

The table per op (customops.eval.judging.yardstick_table.YARDSTICKS, docs/compare.md, "Yardsticks per
op") says what gives the value and whether onnx.reference is a vote. Configurations that do not round
(copies, nearest sampling, maxima) have no yardstick: a difference there is one of formula, and the
three votes decide.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, helper

from customops import dtypes
from customops.eval.judging.attribution import Within
from customops.eval.judging.metrics import compare_arrays
from customops.eval.judging.rounding_bound import TERMS, bound, exact, is_float
from customops.eval.judging.yardstick_table import YARDSTICKS

Run64 = Callable[[ModelProto, dict[str, np.ndarray]], tuple["np.ndarray | None", "str | None"]]
"""Runs a one-node model on our kernels (in the custom side's child): (first output, None) or (None,
the error)."""

MEMORY_LIMIT = 1 << 30
"""Most bytes of float64 the yardstick holds in this process: the widened inputs and the value (each
side's output is widened in turn besides). A node over it has no yardstick (``Measured.error`` says
why) and the votes decide: the values of a model's node are bounded only by the sides' output limit,
and widening float16 takes four times its bytes."""


def widened(model: ModelProto, feed: Mapping[str, np.ndarray]) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """The one-node ``model`` and its ``feed`` with the inputs of the op's type T that are float16,
    bfloat16 or float32 (graph inputs and initializers) made float64: the same numbers, so our kernel on
    them computes the formula in float64 throughout."""
    from customops.registry import lookup

    node = model.graph.node[0]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    opv = lookup(node.op_type, opset)
    tied = {
        name
        for name, spec in zip(node.input, opv.inputs if opv else (), strict=False)
        if name and "T" in spec.types
    }
    out = ModelProto()
    out.CopyFrom(model)
    new_feed = {k: (_wide(v) if k in tied else v) for k, v in feed.items()}
    for vi in out.graph.input:
        if vi.name in tied and vi.name in new_feed and new_feed[vi.name].dtype == np.float64:
            vi.type.tensor_type.elem_type = dtypes.code_of(np.dtype(np.float64))
    from customops.eval.cases.testcase import tensor_proto, tensor_value

    for i, t in enumerate(out.graph.initializer):
        if t.name in tied:
            value = _wide(tensor_value(t, "initializer"))
            if value.dtype == np.float64:
                out.graph.initializer[i].CopyFrom(tensor_proto(value, t.name))
    del out.graph.output[:]
    out.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in node.output if o)
    return out, new_feed


def _wide(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v)
    if str(v.dtype) in ("float16", "float32", "bfloat16"):
        return v.astype(np.float64)
    return v


@dataclass
class Measured:
    """The sides of one node against the yardstick: ``value`` (float64), ``bound`` (for the output's
    type), each side's largest distance from it and whether that is within the bound (None: no output;
    for the reference also when it is no vote for the op)."""

    op: str
    value: np.ndarray | None
    bound: float | np.ndarray | None
    distance: dict[str, float | None] = field(default_factory=dict)
    within: dict[str, bool | None] = field(default_factory=dict)
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.value is not None and self.bound is not None and self.error is None

    def sides_within(self) -> Within | None:
        """Whether each kernel is within its bound (customops.eval.judging.attribution.odd_one_out's
        ``within``); None where the yardstick is not usable or a kernel gave no output."""
        b, c = self.within.get("builtin"), self.within.get("custom")
        if not self.usable or b is None or c is None:
            return None
        return Within(b, c, self.within.get("reference"))

    def to_json(self) -> dict[str, Any]:
        row = YARDSTICKS.get(self.op)
        return {
            "source": row.source if row else None,
            "bound": None if self.bound is None else float(np.max(self.bound, initial=0.0)),
            "distance": self.distance,
            "within": self.within,
            "reference_vote": bool(row and row.reference_vote),
            "error": self.error,
        }


def measure(
    op: str,
    value: np.ndarray | None,
    bound_: float | np.ndarray | None,
    outputs: Mapping[str, np.ndarray | None],
) -> Measured:
    """Each side of ``outputs`` (builtin, custom, reference) against the yardstick ``value``, rounded
    first to the side's output type (its last rounding is allowed; an overflow to inf matches); a bound
    per element where the bound is an array (RoiAlign's: one per roi)."""
    m = Measured(op, value, bound_)
    if value is None or bound_ is None:
        return m
    row = YARDSTICKS.get(op)
    vote, any_type = (row.reference_vote, row.exact_kernel) if row else (False, False)
    for side, out in outputs.items():
        if out is None or (side == "reference" and not vote):
            m.distance[side], m.within[side] = None, None
            continue
        out = np.asarray(out)
        if out.shape != value.shape or not (is_float(out.dtype) or any_type):
            m.distance[side], m.within[side] = None, False
            continue
        if any_type:
            m.distance[side], m.within[side] = exact_distance(out, value)
            continue
        rounded = value.astype(out.dtype).astype(np.float64)
        wide = out.astype(np.float64)
        metrics = compare_arrays(wide, rounded, 0.0, float(np.max(bound_, initial=0.0)))
        m.distance[side], m.within[side] = (
            metrics.max_abs,
            metrics.passed and _each_within(wide, rounded, bound_),
        )
    return m


def exact_distance(out: np.ndarray, value: np.ndarray) -> tuple[float, bool]:
    """A side's output against an exact kernel's ``value``: the largest |difference| (0 where the two
    are one value: NaN at the same place, or the same infinity) and whether every element is ``value``'s
    (in its element type: a bool, integer, float or float8 output of the same type)."""
    if out.dtype != value.dtype:
        return math.inf, False
    a, b = out.astype(np.float64), value.astype(np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if bool(same.all()):
        return 0.0, True
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.abs(a - b)[~same].max()), False


def _each_within(a: np.ndarray, b: np.ndarray, limit: float | np.ndarray) -> bool:
    """Whether every finite difference of ``a`` and ``b`` is within its ``limit`` (NaN and inf places are
    compare_arrays' to match)."""
    if np.ndim(limit) == 0:
        return True
    with np.errstate(invalid="ignore"):
        return not bool(np.any(np.abs(a - b) > limit))


def custom_call(
    rewritten: ModelProto, feed: Mapping[str, np.ndarray]
) -> tuple[str, list[np.ndarray | None], dict[str, Any]] | None:
    """The call of our kernel in the one-node ``rewritten``: its op, inputs (from ``feed``, the rewrite's
    initializers and through its Casts: a bridged type's value has the same shape and numbers; None
    where unknown) and attributes decoded; None for a model with no node of ours."""
    from customops.bridge import attrs as codec
    from customops.eval.cases.testcase import tensor_value
    from customops.registry import CUSTOM_OPS, DOMAIN

    values = {**feed, **{t.name: tensor_value(t, "initializer") for t in rewritten.graph.initializer}}
    for n in rewritten.graph.node:
        if n.domain == DOMAIN and n.op_type in CUSTOM_OPS:
            kinds = dict(CUSTOM_OPS[n.op_type].attributes)
            attrs = {
                a.name: codec.decode(kinds[a.name], a.s.decode()) for a in n.attribute if a.name in kinds
            }
            return n.op_type, [values.get(i) if i else None for i in n.input], attrs
        if n.op_type == "Cast" and n.input[0] in values:
            values[n.output[0]] = values[n.input[0]]
    return None


def judge(
    model: ModelProto, feed: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray | None], run64: Run64
) -> Measured | None:
    """The sides' ``outputs`` of the one-node ``model`` (standard domain) on ``feed`` against its
    yardstick: our kernel on the inputs widened to float64 (:func:`widened`, run by ``run64``; float64
    inputs: our output itself). None where the configuration does not round, the output is not a float,
    or ours gave no output; a :class:`Measured` with ``error`` when the float64 run fails."""
    from customops.model.rewriter import rewrite_model

    ours = outputs.get("custom")
    if ours is None or len(model.graph.node) != 1:  # the fuzzer's narrow types come between Casts
        return None
    rewritten = rewrite_model(model)
    call = None if rewritten.skipped else custom_call(rewritten.model, feed)
    limit = None if call is None else bound(*call, ours.shape, ours.dtype)
    if call is None or limit is None:
        return None
    op = call[0]
    need = 8 * (ours.size + sum(np.asarray(v).size for v in feed.values() if is_float(np.asarray(v).dtype)))
    if need > MEMORY_LIMIT:
        return Measured(op, None, limit, error=f"the yardstick would hold {need} bytes, over {MEMORY_LIMIT}")
    if ours.dtype == np.float64 or TERMS.get(op) is exact:  # the value itself
        return measure(op, ours, limit, outputs)
    value, error = run64(*widened(model, feed))
    if value is None or value.dtype != np.float64 or value.shape != ours.shape:
        got = "no output" if value is None else f"{value.dtype} of shape {value.shape}"
        return Measured(op, None, limit, error=error or f"our kernel on float64 inputs gave {got}")
    return measure(op, value, limit, outputs)
