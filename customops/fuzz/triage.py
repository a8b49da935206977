"""Triage: what each case's three outcomes mean, the signature of each finding, grouping, shrinking.

A *finding* (customops.eval.judging.signature.Finding) says which side is the odd one out
(customops.eval.judging.attribution, the rule compare uses too: ``builtin``, ``custom``, ``three-way``,
``unknown`` when the reference could not vote or agrees with both, ``reference`` for the reference's own
deviations, which are notes, not findings) and its kind: ``value``, ``shape``, ``dtype`` (both ran, outputs
differ), ``rejects-valid``, ``accepts-invalid``, ``crash``, ``hang``. Its *detail* is the normalized error
(rejections, crashes) or the rule an invalid case breaks. For the three output kinds the signature also names
the features of the case that matter: each non-default attribute, T, the special values and the optional
inputs is set to its simplest form in turn, and the ones whose simplification makes the finding go away are
kept.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from customops.eval.judging.attribution import Within, odd_one_out
from customops.eval.judging.facts import Given, Observed
from customops.eval.judging.metrics import Metrics, compare_arrays, default_tolerance
from customops.eval.judging.signature import Finding, Signature
from customops.eval.running.runner import Outcome, Pool
from customops.eval.running.worker import SIDES, Request
from customops.fuzz import values as V
from customops.fuzz.case import Case, build_model
from customops.fuzz.dispatch import space_of
from customops.fuzz.spaces.base import OUT_LIMIT, Space, Verdict
from customops.registry import GRID_SAMPLE_16_MODES

OUTPUT_KINDS = ("value", "shape", "dtype")
KINDS = (*OUTPUT_KINDS, "rejects-valid", "accepts-invalid", "crash", "hang")


# ---------------------------------------------------------------------------------------------
# classification


def tolerance(elem: str) -> tuple[float, float]:
    """(rtol, atol) for outputs of element type ``elem``: the dtype's
    :func:`~customops.eval.judging.metrics.default_tolerance` (compare's defaults, the type's epsilon for
    the narrow floats, exact for the rest)."""
    from customops.dtypes import numpy_dtype

    return default_tolerance(numpy_dtype(elem)) if V.is_float(elem) else (0.0, 0.0)


Tolerance = str | tuple[float, float]
"""How outputs are compared: the element type whose :func:`tolerance` applies, or (rtol, atol) given."""

EXACT: Tolerance = (0.0, 0.0)


def _agree(a: Any, b: Any, tol: Tolerance, magnitude: float = 0.0) -> Metrics:
    rtol, atol = tolerance(tol) if isinstance(tol, str) else tol
    return compare_arrays(a, b, rtol, atol + rtol * magnitude)


def _relative(op: str, elem: str) -> Tolerance:
    """The tolerance of ``op``'s outputs of element type ``elem``: the type's, with no absolute part for a
    correctly rounded op (customops.eval.judging.yardstick_table.alone_atol, as compare's node alone)."""
    from customops.eval.judging.yardstick_table import alone_atol

    return elem if alone_atol(op, None) is None else (tolerance(elem)[0], 0.0)


def magnitude(case: Case) -> float:
    """For interpolating Resize, Upsample and GridSample on floats: a bound on what the input values add up to
    in one output (4 times the largest finite |x|). Rounding errors of a weighted sum scale with it, not with
    the result, so the absolute tolerance grows by rtol times this (cancellation is not a deviation)."""
    if case.op not in ("Resize", "Upsample", "GridSample") or not V.is_float(case.dtype):
        return 0.0
    mode = case.attrs.get("mode", "linear" if case.op == "GridSample" else "nearest")
    if GRID_SAMPLE_16_MODES.get(mode, mode) not in ("linear", "cubic"):
        return 0.0
    x = case.main.astype(np.float64)
    finite = x[np.isfinite(x)]
    return 4.0 * float(np.abs(finite).max()) if finite.size else 0.0


def _kind(m: Metrics) -> str:
    if not m.shape_match:
        return "shape"
    if not m.dtype_match:
        return "dtype"
    return "value"


_NUMBER = re.compile(r"(?<![A-Za-z_\d.])-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf|nan)(?![A-Za-z_])")
_SOURCE = re.compile(r"\S*\.(?:cc|h|cpp|hpp):\d+ ")


def error_key(message: str) -> str:
    """The stable part of an error message: without the stage (load or run: ORT checks constant inputs
    at load and the same inputs fed at run time), source locations, C++ signatures, node names and
    numbers; at most 120 characters."""
    stage, _, text = message.partition(": ")
    if stage not in ("load", "run", "rewrite"):
        text = message
    text = re.sub(r"^\w+: ", "", text)  # exception class
    text = re.sub(r"^[A-Z_]+ : ", "", text)  # ORT status code
    text = re.sub(
        r"^Non-zero status code returned while running \w+ node\. Name:'[^']*' Status Message: ", "", text
    )
    text = re.sub(r"^Exception during initialization: ", "", text)
    text = re.sub(r"^Node \(\w*\) Op \(\w+\) ", "", text)  # ORT's shape inference prefix
    text = re.sub(r"^\S+-\d+ node '[^']*': ", "", text)  # customops KernelError prefix
    pieces = _SOURCE.split(text)
    if len(pieces) > 1:
        tail = pieces[-1]
        if "was false." in tail:
            tail = tail.rsplit("was false.", 1)[1]
        else:
            tail = re.sub(r"^[^()]*::[^()]*\([^)]*\)(?: const)?(?: \[with [^\]]*\])? ", "", tail)
            tail = re.sub(r"^[A-Z][A-Za-z]+ ", "", tail)
        text = tail
    text = re.sub(r"\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ", "", text)
    text = re.sub(r"\bN\d+onnxruntime\w+", "<type>", text)  # mangled C++ type names
    text = re.sub(r"\{[\d,\s]*\}", "{…}", text)
    text = re.sub(r"array\([^()]*\)", "array(…)", text)  # numpy reprs in Python errors
    text = _NUMBER.sub("#", text)
    text = re.sub(r"\[[#\s,]*\]", "[…]", text)  # lists of numbers
    text = re.sub(r"\((?:#\s*,\s*)+#?\s*\)", "(…)", text)  # tuples of numbers
    text = " ".join(text.split()).strip(" .")
    return text[:120]


def classify(
    dtype: Tolerance,
    verdict: Verdict,
    outcomes: dict[str, Outcome],
    scale: float = 0.0,
    within: Within | None = None,
) -> list[Finding]:
    """The findings of one case (several when several sides crash or hang, or when the reference alone
    does while ORT's kernel or ours has a finding too), its outputs compared at ``dtype``'s tolerance
    (or the (rtol, atol) given); ``scale`` widens the absolute tolerance (see
    :func:`magnitude`); ``within``: the sides against the case's yardstick, where measured
    (:func:`yardstick_within`): built-in and custom both within rounding of it is no finding."""
    found = [
        Finding(s, o.status, error_key(o.message))
        for s, o in outcomes.items()
        if o.status in ("crash", "hang")
    ]
    if any(f.side != "reference" for f in found):
        return found
    if found:  # the reference alone crashed or hung: it cannot vote, ORT's kernel and ours still compare
        compared = _compared(dtype, verdict, outcomes, scale, within)
        return found + [f for f in compared if f.side != "reference"]
    return _compared(dtype, verdict, outcomes, scale, within)


def _compared(
    dtype: Tolerance, verdict: Verdict, outcomes: dict[str, Outcome], scale: float, within: Within | None
) -> list[Finding]:
    """The findings of a case on which no side crashed or hung, except perhaps the reference."""
    b, c, r = (outcomes[s] for s in SIDES)
    ok_b, ok_c, ok_r = (o.status == "ok" for o in (b, c, r))
    if verdict.valid:
        if ok_b and ok_c:
            return _judged(b, c, r, dtype, scale, within)
        # each side that rejects a valid case is a finding of its own (both may, for different reasons)
        out = [
            Finding(s, "rejects-valid", error_key(o.message))
            for s, o in (("builtin", b), ("custom", c))
            if o.status != "ok"
        ]
        if not ok_r:
            out.append(Finding("reference", "rejects-valid", error_key(r.message)))
        return out
    reason = verdict.reason or ""
    return [Finding(s, "accepts-invalid", reason) for s, o in outcomes.items() if o.status == "ok"]


def _judged(
    b: Outcome, c: Outcome, r: Outcome, dtype: Tolerance, scale: float, within: Within | None = None
) -> list[Finding]:
    """The finding of a valid case both ORT's kernel and ours ran: the side that leaves the spec
    (customops.eval.judging.attribution, against the yardstick where ``within`` is given) with the kind of its
    difference."""
    m = _agree(b.value, c.value, dtype, scale)
    if r.status != "ok":  # the reference cannot vote: its refusal of a valid case is a note of its own
        if m.passed:
            return [Finding("reference", "rejects-valid", error_key(r.message))]
        odd = odd_one_out(False, None, None, within)
        return [] if odd == "rounding" else [Finding(odd or "unknown", _kind(m))]
    mc = _agree(c.value, r.value, dtype, scale)  # relative to the reference, as compare's
    mb = _agree(b.value, r.value, dtype, scale)
    odd = odd_one_out(m.passed, mb.passed, mc.passed, within)
    if odd is None or odd == "rounding":
        return []
    return [Finding(odd, _kind(mc if odd == "reference" else m))]


@dataclass
class Evaluation:
    """A case run on the three sides: the oracle's verdict, the outcomes and the findings."""

    case: Case
    verdict: Verdict
    outcomes: dict[str, Outcome]
    findings: list[Finding]


def observed(ev: Evaluation) -> Observed:
    """A case run on the three sides as customops.eval.judging.facts reads it: X, T, the inputs given, the
    attributes, the oracle's output shape and ORT's output (None when ORT failed)."""
    case = ev.case
    b = ev.outcomes.get("builtin")
    return Observed(
        op=case.op,
        x=case.main,
        dtype=case.dtype,
        attrs=case.attrs,
        inputs={name: Given(t.value, t.elem, t.const) for name, t in case.inputs.items() if t is not None},
        out_shape=ev.verdict.out_shape,
        builtin=b.value if b is not None and b.status == "ok" else None,
    )


def evaluate(pool: Pool, case: Case, verdict: Verdict | None = None, tag: str = "triage") -> Evaluation:
    """Run ``case`` on the three sides and classify: the outputs compared at the tolerance of the node's
    output type, or exactly for a space of exact outputs (:attr:`Space.exact`)."""
    space = space_of(case.op)
    verdict = verdict or space.validate(case)
    built = build_model(case)
    index = case.index if case.index is not None else -1
    request = Request(built.model.SerializeToString(), built.feed, index=index, tag=tag)
    outcomes = pool.run(request)
    scale = magnitude(case)
    tol = EXACT if space.exact else _relative(case.op, built.output_elem)
    within = yardstick_within(pool, built.model, built.feed, outcomes, (tol, scale), index)
    return Evaluation(case, verdict, outcomes, classify(tol, verdict, outcomes, scale, within))


def yardstick_within(
    pool: Pool,
    model: Any,
    feed: dict[str, Any],
    outcomes: dict[str, Outcome],
    tol: tuple[Tolerance, float],
    index: int = -1,
) -> Within | None:
    """Built-in and custom against the case's yardstick (customops.eval.judging.yardstick.judge, compare's
    rule), measured only when both ran and differ at the fuzzer's tolerance (``tol``: the element type
    and :func:`magnitude`); our float64 run goes to a custom worker of the pool. None when not measured
    or the case has no yardstick."""
    from customops.eval.judging.yardstick import judge

    b, c = outcomes["builtin"], outcomes["custom"]
    if b.status != "ok" or c.status != "ok" or _agree(b.value, c.value, *tol).passed:
        return None

    def run64(wide: Any, wide_feed: dict[str, Any]) -> tuple[Any, str | None]:
        out = pool.run_side("custom", Request(wide.SerializeToString(), wide_feed, index=index))
        return (out.value, None) if out.status == "ok" else (None, out.message or out.status)

    r = outcomes["reference"]
    values = {"builtin": b.value, "custom": c.value, "reference": r.value if r.status == "ok" else None}
    measured = judge(model, feed, {k: None if v is None else np.asarray(v) for k, v in values.items()}, run64)
    return None if measured is None else measured.sides_within()


# ---------------------------------------------------------------------------------------------
# signatures


def feature_labels(case: Case) -> set[str]:
    """Labels of the case's features (as :meth:`Space.features` names them), without running anything."""
    return {label for label, _ in space_of(case.op).features(case)}


def signature_of(pool: Pool, ev: Evaluation, finding: Finding) -> Signature:
    """The signature of ``finding`` on ``ev.case``: for output kinds, the features it needs."""
    case = ev.case
    features = needed_features(pool, case, finding)[0] if finding.kind in OUTPUT_KINDS else ()
    return Signature(case.op, case.version, finding.side, finding.kind, finding.detail, features)


def needed_features(pool: Pool, case: Case, finding: Finding) -> tuple[tuple[str, ...], int]:
    """The features of ``case`` (as :meth:`Space.features` names them) without which ``finding`` goes
    away, sorted, and the runs that took. A feature whose removal leaves an invalid or too large case
    counts as needed. A case with two causes of one finding needs neither cause's feature."""
    space = space_of(case.op)
    needed = []
    runs = 0
    for label, simpler in space.features(case):
        verdict = space.validate(simpler)
        if not verdict.valid or math.prod(verdict.out_shape or ()) > OUT_LIMIT:
            needed.append(label)  # cannot be tested alone: keep it
            continue
        again = evaluate(pool, simpler, verdict)
        runs += 1
        if finding not in again.findings:
            needed.append(label)
    return tuple(sorted(needed)), runs


def holds(sig: Signature, ev: Evaluation) -> bool:
    """Whether ``ev`` still shows the finding of ``sig`` with every feature it needs."""
    if sig.finding not in ev.findings:
        return False
    return set(sig.features) <= feature_labels(ev.case)


# ---------------------------------------------------------------------------------------------
# shrinking


def cost(case: Case) -> int:
    """How big and how unusual a case is; every accepted simplification lowers it."""
    total = 0
    main_name = case.opv.inputs[0].name
    for name, t in case.inputs.items():
        if t is None:
            continue
        total += 8 * int(t.value.size)
        if name == main_name:
            total += 16 * int(V.special_mask(t.value, case.dtype).sum()) + V.value_complexity(
                t.value, case.dtype
            )
        elif t.value.dtype.kind in "iu":
            total += int(np.abs(t.value.astype(np.int64)).sum())
        elif t.value.dtype.kind == "f" or V.is_float(t.elem):
            f = t.value.astype(np.float64)
            total += 4 * int(np.count_nonzero(~np.isin(f, (0.0, 1.0)))) + 4 * int(
                np.count_nonzero(~np.isin(f, (0.0, 0.5, 1.0, 2.0)))
            )
    for value in case.attrs.values():
        total += 40
        if isinstance(value, list):
            total += int(
                sum(abs(float(v)) for v in value if isinstance(v, int | float) and math.isfinite(float(v)))
            )
    if case.dtype != "float":
        total += 30
    return total


@dataclass
class Shrunk:
    """The result of shrinking: the smallest case found that keeps the signature, and how."""

    evaluation: Evaluation
    steps: list[str] = field(default_factory=list)
    runs: int = 0
    reproduced: bool = True
    needs: tuple[str, ...] = ()
    """For output kinds, the features the shrunk case needs to show the finding (:func:`needed_features`):
    the group's signature may need fewer, when its first case had two causes and shrinking kept one."""


def shrink(pool: Pool, sig: Signature, case: Case, budget: int, space: Space | None = None) -> Shrunk:
    """Greedy shrinking: try the space's simplifications in order, keep the first that lowers the cost,
    stays in the same validity class and keeps the signature; repeat until none does or ``budget`` runs
    are spent. The first run checks that the original still shows the finding."""
    space = space or space_of(case.op)
    current = evaluate(pool, case)
    runs = 1
    if not holds(sig, current):
        return Shrunk(current, [], runs, reproduced=False)
    steps: list[str] = []
    reason = current.verdict.reason
    seen: set[str] = set()
    progress = True
    while progress and runs < budget:
        progress = False
        here = cost(current.case)
        for label, candidate in space.simplifications(current.case):
            if cost(candidate) >= here:
                continue
            verdict = space.validate(candidate)
            if verdict.reason != reason or (verdict.valid and math.prod(verdict.out_shape or ()) > OUT_LIMIT):
                continue
            fingerprint = json.dumps(_fingerprint(candidate))
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
            again = evaluate(pool, candidate, verdict)
            runs += 1
            if holds(sig, again):
                current = again
                steps.append(label)
                progress = True
                break
            if runs >= budget:
                break
    needs: tuple[str, ...] = ()
    if sig.kind in OUTPUT_KINDS:
        needs, more = needed_features(pool, current.case, sig.finding)
        runs += more
    return Shrunk(current, steps, runs, needs=needs)


def _fingerprint(case: Case) -> Any:
    from customops.fuzz.case import case_to_json

    d = case_to_json(case)
    d.pop("index", None)
    d.pop("seed", None)
    return d
