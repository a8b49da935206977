"""compare's whole-model runs: the model on both sides at once, then with the values inside it exposed as
outputs (:func:`run_whole`); the node where each failing side stopped (:func:`fail_points`); when both
fail through the inputs' fault and the inputs were generated, the sizes of the ladder tried in turn
(:func:`runs_that_fit`); when they stop at different nodes, each side's values up to there
(:func:`values_before_failures`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from onnx import ModelProto

from customops.comparison.failures import FailPoint, fail_point, parted
from customops.comparison.flow import before_failure
from customops.comparison.inputs import InputPlan, InputsUsed, sizes_text
from customops.comparison.prepared import Prepared, WholeRuns, with_outputs
from customops.comparison.settings import Settings
from customops.errors import CustomOpsError
from customops.eval.running import sides
from customops.eval.running.sides import SideRun

__all__ = [
    "fail_points",
    "inputs_at_fault",
    "note_defaults",
    "run_whole",
    "runs_that_fit",
    "values_before_failures",
]


def run_whole(p: Prepared, feed: dict[str, np.ndarray], s: Settings, say: Callable[[str], None]) -> WholeRuns:
    """Run the model on both sides (the built-in one on ``s.providers``); when it runs on neither, no
    exposed values (:func:`runs_that_fit` decides what that means)."""
    say("running the model with ORT's built-in kernels")
    say("running the model with customops kernels")  # at once: each side in its child
    a, b = _both_sides((p.model, p.rewritten), feed, s, s.repeats)
    if a.error and b.error:
        return WholeRuns(a, b, SideRun(), SideRun())
    pairs = ((p.model, a), (p.rewritten, b))
    exposed = [with_outputs(m, p.exposed, p.types) if p.exposed and not r.error else None for m, r in pairs]
    a_exposed, b_exposed = _both_sides(exposed, feed, s, 0)
    return WholeRuns(a, b, a_exposed, b_exposed)


def _both_sides(
    models: Sequence[ModelProto | None], feed: dict[str, np.ndarray], s: Settings, repeats: int
) -> list[SideRun]:
    """The built-in side's run of ``models[0]`` and the custom side's of ``models[1]`` at once (each in its
    child: customops.eval.running.sides.run_sides); an empty run for a model that is None."""
    jobs = [
        sides.whole_request(m, feed, custom, repeats, s.providers, s.optimization)
        for custom, m in zip((False, True), models, strict=True)
        if m is not None
    ]
    ran = iter(sides.run_sides(jobs))
    return [SideRun() if m is None else next(ran) for m in models]


def fail_points(p: Prepared, runs: WholeRuns) -> dict[str, FailPoint | None]:
    """The node where each side's whole-model run stopped (None: it ran, or its error names no node of
    the model; customops.comparison.failures)."""
    swapped = {r.node: r.op for r in p.swapped}
    return {
        "builtin": fail_point(runs.a.error, p.nodes, swapped) if runs.a.error else None,
        "custom": fail_point(runs.b.error, p.nodes, swapped) if runs.b.error else None,
    }


def inputs_at_fault(p: Prepared, runs: WholeRuns) -> bool:
    """Both sides fail, and not at two different nodes of the model: both stop at the same node, or one
    of them names no node (the model or the inputs refused), so nothing tells the sides apart
    (docs/compare.md, Outputs and exit status)."""
    if not (runs.a.error and runs.b.error):
        return False
    points = fail_points(p, runs)
    return not parted(points["builtin"], points["custom"])


def runs_that_fit(
    p: Prepared, feed: dict[str, np.ndarray], s: Settings, plan: InputPlan | None, say: Callable[[str], None]
) -> tuple[WholeRuns, dict[str, np.ndarray], InputsUsed]:
    """The whole-model runs (:func:`run_whole`) on ``feed``; when both sides fail on it through the
    inputs' fault and it was generated (``plan``), again at each size of the ladder
    (customops.comparison.inputs.LADDER) until they do not. Still at fault: CustomOpsError naming the
    node, the errors and the sizes tried. Both failing at different nodes: each side's values up to
    where it stopped (:func:`values_before_failures`)."""
    note_defaults(plan, say)
    runs = run_whole(p, feed, s, say)
    used = InputsUsed.of(feed, plan)
    for step in plan.ladder() if plan is not None else []:
        if not inputs_at_fault(p, runs):
            break
        tried = [*used.tried, used.dims]
        say(
            f"both sides fail on the generated inputs with {sizes_text(used.dims)}: trying {sizes_text(step)}"
        )
        feed = plan.generate(step)  # type: ignore[union-attr]  # the ladder is empty without a plan
        runs = run_whole(p, feed, s, say)
        used = InputsUsed.of(feed, plan, step)
        used.tried = tried
    if inputs_at_fault(p, runs):
        raise CustomOpsError(_neither_text(p, runs, used))
    if used.tried:
        say(f"the comparison uses the generated inputs with {sizes_text(used.dims)}")
    if runs.a.error and runs.b.error:
        runs = values_before_failures(p, feed, runs, s)
    return runs, feed, used


def note_defaults(plan: InputPlan | None, say: Callable[[str], None]) -> None:
    """Before the first run, once every option is checked: which symbolic dimensions of generated
    inputs took the default size, and how to set them (customops.comparison.inputs.InputPlan)."""
    note = None if plan is None else plan.defaults_note()
    if note:
        say(note)


def _neither_text(p: Prepared, runs: WholeRuns, used: InputsUsed) -> str:
    """The one line of a model that runs on neither side through its inputs' fault."""
    points = fail_points(p, runs)
    a, b = points["builtin"], points["custom"]
    where = ""
    if a is not None and b is not None and a.node is not None and a.node == b.node:
        where = f": both sides stop at {a.where()}"
    sizes = ""
    if used.dims:
        tried = "".join(f", then {sizes_text(t)}" for t in [*used.tried[1:], used.dims])
        first = used.tried[0] if used.tried else used.dims
        sizes = (
            f" with generated inputs whose symbolic dims are {sizes_text(first)}{tried if used.tried else ''}"
        )
    hint = "; give sizes that fit the model with --dim NAME=VALUE or --input-shape NAME:DIMS" if sizes else ""
    return f"the model runs on neither side{sizes}{where} (built-in: {runs.a.error}; custom: {runs.b.error}){hint}"


def values_before_failures(
    p: Prepared, feed: dict[str, np.ndarray], runs: WholeRuns, s: Settings
) -> WholeRuns:
    """Both sides stopped, at different nodes: each side's exposed values that do not depend on the node
    it stopped at, from the model cut before that node (customops.comparison.flow.before_failure), so
    that the swapped nodes up to there are compared, and judged alone on the custom side's values."""
    points = fail_points(p, runs)
    exposed = []
    for side, model, custom in (("builtin", p.model, False), ("custom", p.rewritten, True)):
        point = points[side]
        cut = before_failure(model, p.model, point.node, p.exposed, p.types) if point and point.node else None
        run = (
            None
            if cut is None
            else sides.run_side(cut, feed, custom=custom, providers=s.providers, optimization=s.optimization)
        )
        exposed.append(SideRun() if run is None else run)
    return WholeRuns(runs.a, runs.b, *exposed)
