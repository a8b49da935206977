"""The report's verdict line (``summary``) and its clauses, in words: an agreement, the node where the
first difference starts, differences within rounding, differences amplified downstream or made by ORT's
graph optimizer, two sides that stop at different nodes and differences carried in from ORT's own nodes
(docs/compare.md, Verdicts; the verdict against loaded outputs is customops.comparison.loaded's); what
a rerun at a lower graph optimization level found, in the line's words and the table's."""

from __future__ import annotations

from customops.comparison.amplify import Effect
from customops.comparison.carried import CarriedIn
from customops.comparison.failures import FailPoint
from customops.comparison.optimizer import LevelRun, Optimization
from customops.comparison.results import NodeResult, OutputResult, VerdictLine
from customops.model.rewriter import NodeReport
from customops.registry import OP_TYPES

__all__ = [
    "carried_text",
    "nothing_summary",
    "optimizer_text",
    "parted_summary",
    "rerun_outcome",
    "summary_line",
]


def summary_line(
    verdict: str,
    nodes: list[NodeResult],
    outputs: list[OutputResult],
    errors: tuple[str | None, str | None],
    counts: tuple[int, list[Effect]],
) -> VerdictLine:
    """The verdict line of ``verdict``: ``errors`` are the whole-model runs' (built-in, custom; None: it
    ran), ``counts`` the number of swapped nodes (subgraphs and functions included) and the swaps that
    move the outputs."""
    a_error, b_error = errors
    swapped, amplified = counts
    if verdict == "failed":
        side = "built-in" if a_error else "custom"
        return VerdictLine(f"FAILED: the model does not run on the {side} side: {a_error or b_error}")
    bad = [n for n in nodes if n.verdict not in ("agree", "within-rounding")]
    bad_out = [o for o in outputs if o.verdict != "agree"]
    rounding = [n for n in nodes if n.verdict == "within-rounding"]
    if verdict == "agree":
        carried = [n for n in nodes if n.verdict == "disagree"]  # only inside the model: carried in
        clauses = [_rounding_text(rounding)] if rounding else []
        clauses += [_carried_only_text(carried)] if carried else []
        return VerdictLine(
            _agree_text(len(outputs), len(nodes) - len(carried), swapped - len(nodes)), clauses
        )
    head = f"DISAGREE: {len(bad)} node(s), {len(bad_out)} output(s) differ"
    first = next((n for n in bad if n.origin == "starts-here"), None)
    if first is not None:  # never a node that agrees alone or only carries a difference in
        known = f" (known: {', '.join(first.known)})" if first.known else ""
        return VerdictLine(
            head, [f"first difference starts at {first.node!r} [{first.op}]: {first.attribution}{known}"]
        )
    if rounding:  # no kernel leaves the spec: name no side
        return VerdictLine(head, [_rounding_text(rounding)])
    return VerdictLine(head, [_amplified_text(nodes, amplified)])


def _rounding_text(rounding: list[NodeResult]) -> str:
    """The summary's words for nodes where built-in and custom differ only within rounding."""
    first = rounding[0]
    y = (first.isolated or {}).get("yardstick") or {}
    dist, limit = y.get("distance") or {}, y.get("bound")
    more = f" (and {len(rounding) - 1} more node(s))" if len(rounding) > 1 else ""
    figures = ""
    if limit is not None and dist.get("builtin") is not None and dist.get("custom") is not None:
        figures = (
            f" (built-in {dist['builtin']:.3g} from it, ours {dist['custom']:.3g}, "
            f"rounding bound {limit:.3g})"
        )
    return (
        f"built-in and custom differ at {first.node!r} [{first.op}]{more} within-rounding: both are within "
        f"the rounding of their output type of the exact value{figures}; no kernel leaves the spec"
    )


def _carried_only_text(carried: list[NodeResult]) -> str:
    """The words of an agreement for swapped nodes whose values differ inside the model beyond tolerance
    while the node alone agrees: their inputs already differ there (docs/compare.md, the rule)."""
    first = carried[0]
    more = f" (and {len(carried) - 1} more)" if len(carried) > 1 else ""
    verb = "differs" if len(carried) == 1 else "differ"
    text = (
        f"{first.node!r} [{first.op}]{more} {verb} inside the model only, where the inputs already differ: "
        "alone the kernels agree, so no kernel makes that difference"
    )
    if any(n.carried_from == "swapped-nodes" for n in carried):
        text += (
            " (it grows from swapped nodes upstream whose kernels differ alone within tolerance or rounding)"
        )
    return text


def _agree_text(outputs: int, compared: int, inner: int) -> str:
    """The summary of an agreement: how many swapped nodes were compared node by node, and why the
    others were not (inside If/Loop/Scan bodies or functions: compared through the graph outputs)."""
    text = f"AGREE: {outputs} output(s) and {compared} swapped node(s) match"
    if not inner:
        return text
    if not compared:
        text = f"AGREE: {outputs} output(s) match"
    return (
        f"{text}; {inner} more swapped node(s) sit inside subgraphs or functions, where nodes are not "
        "compared one by one: they agree through the graph outputs"
    )


def _amplified_text(nodes: list[NodeResult], amplified: list[Effect]) -> str:
    """The summary's words when no swapped node differs alone."""
    if not amplified:
        return "no swapped node differs alone, and none moves an output past its tolerance by itself"
    top = amplified[0]
    where = ", ".join(f"{n!r} [{op}]" for n, op in zip(top.nodes, top.ops, strict=True))
    node = next((n for n in nodes if [n.node] == top.nodes), None)
    if node is None:  # a group, or a node inside a subgraph or function (not compared alone)
        return f"the outputs move by up to {top.size:.3g} with only {where} swapped (not compared alone)"
    text = (
        f"no swapped node differs alone: within-tolerance differences at {where} are amplified downstream "
        f"(swapped alone, the outputs move by up to {top.size:.3g})"
    )
    ulps = _ulps(node)
    if ulps is not None:
        text += f"; its built-in value is {ulps[0]} ulp from the reference, ours {ulps[1]}"
    return text


def _ulps(node: NodeResult) -> tuple[int, int] | None:
    iso = node.isolated or {}
    b, c = iso.get("builtin_vs_reference"), iso.get("custom_vs_reference")
    if not b or not c or b.get("max_ulp") is None or c.get("max_ulp") is None:
        return None
    return int(b["max_ulp"]), int(c["max_ulp"])


def nothing_summary(skipped: list[NodeReport]) -> str:
    """The verdict line when no node is swapped (``skipped``: the nodes of our ops left out, and why):
    both sides would run ORT's built-in kernels alone, so neither is run (docs/compare.md, Outputs and
    exit status)."""
    head = "NOTHING TO COMPARE: no node is swapped, so neither side was run"
    if not skipped:
        return (
            f"{head}: the model has no node of an op customops implements ({', '.join(OP_TYPES)}; "
            "'customops ops' lists their versions and element types)"
        )
    first = skipped[0]
    more = f"; and {len(skipped) - 1} more" if len(skipped) > 1 else ""
    return (
        f"{head}: each of the model's {len(skipped)} node(s) of an op customops implements is left out "
        f"({first.node!r} [{first.op}]: {first.reason}{more})"
    )


def parted_summary(a: FailPoint, b: FailPoint, nodes: list[NodeResult]) -> str:
    """The verdict line of two sides that stop at different nodes: the one whose kernel refuses a node
    the other side runs, with its attribution and known ids, first."""
    by_node = {n.node: n for n in nodes}
    for side, point, other, name, other_name in (
        ("builtin", a, b, "built-in", "custom"),
        ("custom", b, a, "custom", "built-in"),
    ):
        entry = by_node.get(point.node or "")
        if entry is not None and entry.attribution == f"{side}-cannot-run":
            known = f" (known: {', '.join(entry.known)})" if entry.known else ""
            return (
                f"FAILED: the {name} side stops at {point.where()}, which the {other_name} side runs: "
                f"{entry.attribution}{known}; the {other_name} side stops at {other.where()}"
            )
    return f"FAILED: the sides part ways before they fail: the built-in side stops at {a.where()}, the custom side at {b.where()}"


def carried_text(carried: CarriedIn, nodes: list[NodeResult]) -> str:
    """The verdict line's words for differences carried in from ORT's own nodes."""
    first = next(n for n in nodes if n.node == carried.nodes[0])
    more = f" (and {len(carried.nodes) - 1} more)" if len(carried.nodes) > 1 else ""
    text = (
        f"the inputs of {first.node!r} [{first.op}]{more} already differ, carried in from ORT's own nodes "
        "(no swapped node upstream makes a difference of its own)"
    )
    level = carried.optimization.vanishes_at
    if level is None:
        tried = ", ".join(r.level for r in carried.optimization.reruns)
        return text + (f"; they still differ at --graph-optimization-level {tried}" if tried else "")
    return (
        f"{text}; at --graph-optimization-level {level} {_vanished(carried.optimization, 'they')}: ORT's "
        f"graph optimizations (level {carried.optimization.level}) made them, not a kernel"
    )


def optimizer_text(found: Optimization) -> str:
    """The verdict line's reason when the difference of the outputs vanishes at a lower level
    (customops.comparison.optimizer): no kernel is named."""
    return (
        f"no swapped node differs alone, and at --graph-optimization-level {found.vanishes_at} "
        f"{_vanished(found, 'the outputs')}: the difference comes from ORT's graph optimizations (level "
        f"{found.level}) around the swapped nodes, which ORT cannot fuse or change the layout through, not "
        "from a kernel"
    )


def _vanished(found: Optimization, subject: str) -> str:
    """How ``subject`` match at the level where the difference vanishes."""
    return rerun_outcome(
        next(r for r in found.reruns if r.level == found.vanishes_at), subject, figures=False
    )


def rerun_outcome(run: LevelRun, subject: str, figures: bool = True) -> str:
    """What a rerun at a lower graph optimization level found of ``subject`` ('the outputs', 'they'): a
    side's error, a match bit for bit, or whether they pass, with the largest difference (``figures``;
    without, a pass is a match within tolerance)."""
    if run.error:
        return f"a side failed: {run.error}"
    if run.identical:
        return f"{subject} match bit for bit"
    if run.passes and not figures:
        return f"{subject} match within tolerance"
    largest = max((v for v in run.max_abs.values() if v is not None), default=None)
    shown = "-" if largest is None else format(largest, ".3g") if isinstance(largest, float) else str(largest)
    return f"{subject} {'pass' if run.passes else 'still differ'} (max abs {shown})"
