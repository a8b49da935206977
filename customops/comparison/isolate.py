"""One node alone on the three sides: a one-node model fed the values the node saw in the model, run by
ORT's built-in kernel, by ours and by onnx.reference, and who leaves the spec
(customops.eval.judging.attribution)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, helper

from customops import dtypes
from customops.eval.cases.testcase import tensor_proto
from customops.eval.judging.attribution import Within, attribution
from customops.eval.judging.metrics import Criterion, Metrics, compare_arrays, tolerance_for
from customops.eval.judging.yardstick import Measured, custom_call, judge
from customops.eval.running import sides
from customops.eval.running.worker import SIDES
from customops.registry import CUSTOM_OPS, CustomOp


def reference_limit_of(op: str, override: int | None) -> int:
    """The reference limit of ``op``: ``override`` (``--reference-limit``) when given, else the registry's
    (customops.registry.CustomOp.reference_limit: measured per op, about 5 s of onnx.reference)."""
    if override is not None:
        return override
    custom = CUSTOM_OPS.get(op)
    return custom.reference_limit if custom is not None else CustomOp.reference_limit


def node_model(
    node: NodeProto,
    values: dict[str, np.ndarray],
    opset_imports: Sequence[Any],
    ir_version: int,
    constants: frozenset[str] = frozenset(),
) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """``node`` alone in a model fed ``values`` (by the node's input names); inputs named in ``constants``
    (the original model's initializers) stay initializers, as runtimes treat constants differently."""
    inputs, feed, inits = [], {}, []
    for name in node.input:
        if not name or name in feed or name in {t.name for t in inits}:
            continue
        value = np.asarray(values[name])
        if name in constants:
            inits.append(tensor_proto(value, name))
            continue
        elem = dtypes.code_of(value.dtype)
        inputs.append(helper.make_tensor_value_info(name, elem, list(value.shape)))
        feed[name] = value
    outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    clean = NodeProto()
    clean.CopyFrom(node)
    graph = helper.make_graph([clean], "isolated", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[o for o in opset_imports if o.domain in ("", "ai.onnx")])
    model.ir_version = ir_version
    return model, feed


def reference_work_of(rewritten: ModelProto, feed: dict[str, np.ndarray]) -> float:
    """The work onnx.reference would do for the one node of ``rewritten`` (customops.kernels.work), from
    :func:`custom_call`. A model with no node of ours: its inputs' elements."""
    from customops.kernels.work import reference_work

    call = custom_call(rewritten, feed)
    if call is None:
        return float(sum(int(np.asarray(v).size) for v in feed.values()))
    return reference_work(*call)


def _reference_refusal(op: str, rewritten: Any, feed: dict[str, np.ndarray], limit: int | None) -> str | None:
    """Why onnx.reference is not asked to run the one-node model (None: it is): the work the node asks of
    it (from ``rewritten``, our form of it) over the op's reference limit (``limit`` overrides)."""
    work = float(sum(int(v.size) for v in feed.values())) if rewritten.skipped else None
    work = reference_work_of(rewritten.model, feed) if work is None else work
    most = reference_limit_of(op, limit)
    if work <= most:
        return None
    return (
        f"not run: the node asks onnx.reference for about {work:.3g} steps (lines of its Python, elements "
        f"of its arrays), "
        f"over the reference limit {most}"
    )


@dataclass
class Isolated:
    """The node alone on A's inputs: each side's output (its first; :meth:`of` another) or error."""

    model: ModelProto
    feed: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray | None]
    errors: dict[str, str | None]
    yardstick: Measured | None = None
    """The sides against the yardstick (:func:`add_yardstick`), where it was needed."""
    every: dict[str, dict[str, np.ndarray | None]] = field(default_factory=dict)
    """Each output of the node by name, in the node's order: each side's value (None: it gave none)."""

    def of(self, name: str) -> Isolated:
        """The node alone seen through its output ``name``: ``outputs`` that output's values (the same
        errors, no yardstick yet); ``every`` that output alone."""
        values = self.every.get(name, {})
        return Isolated(
            self.model, self.feed, {s: values.get(s) for s in SIDES}, self.errors, None, {name: values}
        )


def _by_output(
    names: list[str], runs: dict[str, dict[str, np.ndarray]]
) -> dict[str, dict[str, np.ndarray | None]]:
    """Each of the node's outputs ``names``: each side's value from its run's values (by name, else by
    position: a side's model may name its outputs otherwise)."""
    every: dict[str, dict[str, np.ndarray | None]] = {name: {} for name in names}
    for side, values in runs.items():
        listed = list(values.values())
        for i, name in enumerate(names):
            every[name][side] = values.get(name, listed[i] if i < len(listed) else None)
    return every


def run_isolated(
    node: NodeProto,
    values: dict[str, np.ndarray],
    model: ModelProto,
    reference_limit: int | None = None,
    providers: list[str] | None = None,
    reference_timeout: float = sides.REFERENCE_TIMEOUT,
    optimization: str = "all",
) -> Isolated:
    """Run ``node`` alone on the built-in side (on ``providers``; None: CPU), on ours and with onnx.reference,
    the three at once, each in its side's child process; ORT's two at the graph optimization level
    ``optimization``; the reference only when the work the node asks of it is within ``reference_limit``
    (None: the op's, customops.registry), and for ``reference_timeout`` seconds at most. A reference that does
    not run, or is cut by a bound, is no third vote, with its reason in ``errors``."""
    from customops.model.rewriter import rewrite_model

    constants = frozenset(t.name for t in model.graph.initializer)
    one, feed = node_model(node, values, model.opset_import, model.ir_version, constants)
    rewritten = rewrite_model(one)
    errors: dict[str, str | None] = {"builtin": None, "custom": None, "reference": None}
    serialized = one.SerializeToString()
    jobs = [sides.whole_request(serialized, feed, False, 0, providers, optimization)]
    if rewritten.skipped:
        errors["custom"] = f"not swapped: {rewritten.skipped[0].reason}"
    else:
        jobs.append(
            sides.whole_request(rewritten.model.SerializeToString(), feed, True, 0, None, optimization)
        )
    errors["reference"] = _reference_refusal(node.op_type, rewritten, feed, reference_limit)
    if errors["reference"] is None:
        jobs.append(sides.reference_request(serialized, feed))
    runs = dict(
        zip([side for side, _ in jobs], sides.run_sides(jobs, {"reference": reference_timeout}), strict=True)
    )
    values: dict[str, dict[str, np.ndarray]] = {}
    for side, run in runs.items():
        if side == "reference":
            values[side], errors[side] = sides.reference_values(run, reference_timeout)
        elif run.error:
            errors[side] = run.error
        else:
            values[side] = run.values
    every = _by_output([o for o in node.output if o], values)
    first = next(iter(every.values()), {})
    return Isolated(one, feed, {s: first.get(s) for s in SIDES}, errors, None, every)


def metrics_of(
    a: np.ndarray | None,
    b: np.ndarray | None,
    rtol: float | None,
    atol: float | None,
    stat: str | Criterion = "elemwise",
) -> Metrics | None:
    """``a`` against ``b``, the spec side (the reference where it is one of the two, else ours): the
    relative error and rtol divide by ``b``; at the tolerances (None: ``b``'s dtype's default) and
    error statistic; None when either is missing."""
    if a is None or b is None:
        return None
    r, t = tolerance_for(np.asarray(b).dtype, rtol, atol)
    return compare_arrays(a, b, r, t, stat)


def yardstick_of(iso: Isolated) -> Measured | None:
    """The sides of ``iso`` against the yardstick (customops.eval.judging.yardstick.judge): our kernel on the
    node's inputs widened to float64, run in the custom side's child."""

    from customops.model.rewriter import rewrite_model

    def run64(model: ModelProto, feed: dict[str, np.ndarray]) -> tuple[np.ndarray | None, str | None]:
        rewritten = rewrite_model(model)  # the custom side runs a model already in our domain
        if rewritten.skipped or not rewritten.swapped:
            why = rewritten.skipped[0].reason if rewritten.skipped else "no node to swap"
            return None, f"our kernel cannot take the float64 inputs: {why}"
        run = sides.run_side(rewritten.model, feed, custom=True)
        return (None, run.error) if run.error else (next(iter(run.values.values()), None), None)

    return judge(iso.model, iso.feed, iso.outputs, run64)


def add_yardstick(
    iso: Isolated, rtol: float | None, atol: float | None, stat: str | Criterion = "elemwise"
) -> None:
    """Measure ``iso`` against the yardstick (:func:`yardstick_of`) when built-in and custom both ran and
    differ at the tolerances: only then does it decide anything."""
    o = iso.outputs
    if iso.yardstick is not None or any(iso.errors[s] for s in ("builtin", "custom")):
        return
    pair = metrics_of(o["builtin"], o["custom"], rtol, atol, stat)
    if pair is not None and not pair.passed:
        iso.yardstick = yardstick_of(iso)


def within_of(iso: Isolated) -> Within | None:
    """Whether each side is within its bound of the yardstick, where it was measured."""
    return None if iso.yardstick is None else iso.yardstick.sides_within()


def attribute(
    iso: Isolated, rtol: float | None, atol: float | None, stat: str | Criterion = "elemwise"
) -> tuple[str, dict[str, Metrics | None]]:
    """Who leaves the spec on the isolated node (customops.eval.judging.attribution), judged against its
    yardstick where :func:`add_yardstick` measured one: returns the attribution and the three pairwise
    metrics."""
    o, e = iso.outputs, iso.errors
    pairs = {
        "builtin_vs_custom": metrics_of(o["builtin"], o["custom"], rtol, atol, stat),
        "builtin_vs_reference": metrics_of(o["builtin"], o["reference"], rtol, atol, stat),
        "custom_vs_reference": metrics_of(o["custom"], o["reference"], rtol, atol, stat),
    }
    failed = {side: bool(e[side]) for side in ("builtin", "custom")}
    if any(failed.values()):
        return attribution(failed, False, None, None), pairs

    def passes(key: str) -> bool | None:
        m = pairs[key]
        return None if m is None else m.passed

    verdict = attribution(
        failed,
        bool(passes("builtin_vs_custom")),
        passes("builtin_vs_reference"),
        passes("custom_vs_reference"),
        within_of(iso),
    )
    return verdict, pairs
