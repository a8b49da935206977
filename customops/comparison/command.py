"""``customops compare``: what the command does with its parsed arguments (customops.cli.compare): the
checks of its options before any work, the input feed, the comparison, what it prints, the files it
writes (``--json``, ``--html``, ``--save-*``) and its exit status."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from customops.errors import CustomOpsError
from customops.eval.running.worker import KERNEL_TIME_RUNS

if TYPE_CHECKING:
    import numpy as np
    from onnx import ModelProto

    from customops.comparison.inputs import InputPlan
    from customops.comparison.results import Comparison


def check_destinations(args: Any, files: list[Path]) -> None:
    """Before any work: every destination can be written, none is an input or inside an input directory,
    no two are the same file."""
    from customops.model.io import check_output_spares_input
    from customops.safeio import check_distinct, check_output_dir, check_output_file, inside

    options = (
        ("--json", args.json),
        ("--html", args.html),
        ("--save-inputs", args.save_inputs),
        ("--save-outputs", args.save_outputs),
    )
    outputs = [(option, target) for option, target in options if target]
    for option, target, suffixes in (
        ("--save-inputs", args.save_inputs, (".npz", ".json")),
        ("--save-outputs", args.save_outputs, (".npz", ".json")),
    ):
        if target and not str(target).lower().endswith(suffixes):
            raise CustomOpsError(f"{option} {str(target)!r} must end in {' or '.join(suffixes)}")
    for option, target in outputs:
        check_output_file(target, option)
        check_output_spares_input(target, files, external=False)
    check_distinct(outputs)
    if args.save_repro:
        check_output_dir(args.save_repro, "--save-repro")
        for option, target in outputs:  # the reproducers' directory holds only them
            if inside(target, args.save_repro):
                raise CustomOpsError(
                    f"{option} {str(target)!r} is --save-repro's directory or inside it: choose another path"
                )
        outputs.append(("--save-repro", args.save_repro))
    # a directory given as input (a test case, Polygraphy's per-iteration files) gains no file either
    for option, directory in (("--inputs", args.inputs), ("--load-outputs", args.load_outputs)):
        for output, target in outputs if directory and Path(directory).is_dir() else ():
            if inside(target, directory):
                raise CustomOpsError(
                    f"{output} {str(target)!r} is inside {option} {str(directory)!r}; the input is never "
                    "modified: choose a path outside it"
                )


def feed_of(args: Any, model: ModelProto) -> tuple[dict[str, np.ndarray], InputPlan | None]:
    """The inputs: read from ``--inputs`` or generated (``--seed``, ``--dim``, ``--input-shape``,
    ``--val-range``), checked against the model; and how they were generated (None: read)."""
    from customops.comparison import inputs as gen

    dims = gen.parse_dims(args.dim or [])
    shapes = gen.parse_input_shapes(args.input_shape or [])
    ranges = gen.parse_val_ranges(args.val_range or [])
    if args.inputs:
        for option, given, verb in (
            ("--dim", dims, "sizes"),
            ("--input-shape", shapes, "shapes"),
            ("--val-range", ranges, "draws"),
        ):
            if given:
                raise CustomOpsError(f"{option} {verb} generated inputs; it has no effect with --inputs")
        return gen.check_inputs(model, gen.load_inputs(args.inputs, model)), None
    plan = gen.InputPlan(model, args.seed, dims, shapes, ranges)
    return gen.check_inputs(model, plan.generate()), plan


def write_outputs(args: Any, comparison: Comparison) -> None:
    """``--json``, ``--html`` and ``--save-repro``, each written whole or not at all."""
    from customops import jsonout
    from customops.comparison.pipeline import log
    from customops.comparison.repro import nothing_saved, save_repros
    from customops.safeio import write_atomic

    if args.json:
        write_atomic(args.json, jsonout.dumps(comparison.report.to_json(), indent=1) + "\n")
    if args.html:
        from customops.comparison.html import render

        write_atomic(args.html, render(comparison.report.to_json(), comparison.tensors))
    if args.save_inputs:  # the inputs compared: generated ones at the sizes the verdict used
        from customops.comparison.array_files import save_arrays

        save_arrays(args.save_inputs, comparison.feed)
    if args.save_repro:
        cases = save_repros(comparison, args.save_repro)
        for case in cases:
            if not args.quiet:
                log(f"reproducer: {case}")
        if not cases:
            log(nothing_saved(comparison))  # even with -q: an output asked for and not written
    if args.save_outputs:
        from customops.comparison.array_files import save_arrays
        from customops.comparison.saved import compared_arrays, save_run_results

        report = comparison.report
        arrays = compared_arrays(report.outputs, report.nodes, comparison.tensors, comparison.several)
        json_path = str(args.save_outputs).lower().endswith(".json")
        (save_run_results if json_path else save_arrays)(args.save_outputs, arrays)


def loaded_outputs(args: Any, model: ModelProto) -> Any:
    """``--load-outputs``: the saved outputs that stand in for the built-in side (None without it);
    ``--providers`` choose where that side runs, so they are refused with it."""
    if not args.load_outputs:
        return None
    if args.providers:
        raise CustomOpsError(
            "--providers run the built-in side, which --load-outputs replaces: give one of them"
        )
    from customops.comparison.saved import load_outputs

    return load_outputs(args.load_outputs, model)


def run(args: Any) -> int:
    """The ``customops compare`` command."""
    from customops.comparison.choices import Choices
    from customops.comparison.pipeline import compare_model, log
    from customops.comparison.settings import check_settings
    from customops.comparison.table import format_table
    from customops.eval.running import sides
    from customops.model.io import check_model_file, load_model_files
    from customops.registry import OP_TYPES
    from customops.safeio import printable

    rtol, atol, by_name = tolerances(args.rtol or [], args.atol or [])
    check_settings(rtol=rtol, atol=atol, reference_limit=args.reference_limit, seed=args.seed)
    for op in args.ops or ():
        if op not in OP_TYPES:
            raise CustomOpsError(f"unknown op {op!r} in --ops (supported: {', '.join(OP_TYPES)})")
    model, _, files = load_model_files(args.model)
    if args.inputs:
        files.append(Path(args.inputs))
    if args.load_outputs:
        files.append(Path(args.load_outputs))
    check_destinations(args, files)
    check_model_file(args.model)
    feed, plan = feed_of(args, model)
    loaded = loaded_outputs(args, model)
    if args.verbose:
        os.environ[sides.VERBOSE_ENV] = "1"
    comparison = compare_model(
        model,
        feed,
        ops=args.ops,
        rtol=rtol,
        atol=atol,
        tolerances=by_name,
        **error_checks(args.check_error_stat or [], args.error_quantile or [], args.infinities_compare_equal),
        model_name=str(args.model),
        seed=args.seed,
        progress=None if args.quiet else log,
        reference_limit=args.reference_limit,
        reference_timeout=sides.REFERENCE_TIMEOUT
        if args.reference_timeout is None
        else args.reference_timeout,
        providers=args.providers,
        graph_optimization_level=args.graph_optimization_level,
        plan=plan,
        started=getattr(args, "started", None),
        loaded=loaded,
        choices=Choices(args.nodes, args.exclude or [], args.validate, args.fail_fast),
        repeats=KERNEL_TIME_RUNS if args.kernel_times else 0,
    )
    print(
        printable(comparison.report.summary)
        if args.quiet
        else format_table(comparison.report.to_json(), args.all_rows)
    )
    write_outputs(args, comparison)
    if not args.quiet:
        started = getattr(args, "started", None) or time.perf_counter()  # the interpreter's start
        log(f"compare took {time.perf_counter() - started:.1f} s")
    return comparison.exit_status


def tolerances(
    rtols: list[str], atols: list[str]
) -> tuple[float | None, float | None, dict[str, tuple[float | None, float | None]]]:
    """``--rtol`` and ``--atol`` items (``R`` for every tensor, ``NAME:R`` for one): the global rtol and
    atol and the (rtol, atol) of each named tensor; CustomOpsError for a malformed or repeated item."""
    found: dict[tuple[str, str | None], float] = {}
    for option, items in (("--rtol", rtols), ("--atol", atols)):
        for item in items:
            name, _, text = item.rpartition(":")
            try:
                value = float(text)
            except ValueError:
                raise CustomOpsError(f"{option} {item!r} is not a number or NAME:NUMBER") from None
            key = (option, name or None)
            if key in found:
                raise CustomOpsError(f"{option} for {name or 'every tensor'!r} is given twice")
            found[key] = value
    names = sorted({name for _, name in found if name is not None})
    by_name = {n: (found.get(("--rtol", n)), found.get(("--atol", n))) for n in names}
    return found.get(("--rtol", None)), found.get(("--atol", None)), by_name


def error_checks(stats: list[str], quantiles: list[str], infinities_equal: bool) -> dict[str, Any]:
    """``--check-error-stat`` and ``--error-quantile`` items (``VALUE`` for every tensor, ``NAME:VALUE``
    for one) and ``--infinities-compare-equal``, as customops.comparison.pipeline.compare_model's keywords
    (by tensor name, ``""`` for every tensor; checked there); CustomOpsError for a quantile that is no
    number or an item given twice."""
    by_stat: dict[str, str] = {}
    by_quantile: dict[str, float] = {}
    for option, items, found in (
        ("--check-error-stat", stats, by_stat),
        ("--error-quantile", quantiles, by_quantile),
    ):
        for item in items:
            name, _, text = item.rpartition(":")
            if name in found:
                raise CustomOpsError(f"{option} for {name or 'every tensor'!r} is given twice")
            if found is by_quantile:
                try:
                    by_quantile[name] = float(text)
                except ValueError:
                    raise CustomOpsError(f"{option} {item!r} is not a number or NAME:NUMBER") from None
            else:
                by_stat[name] = text
    return {
        "check_error_stat": by_stat or "elemwise",
        "error_quantile": by_quantile or None,
        "infinities_compare_equal": infinities_equal,
    }
