"""``customops compare``: the arguments, their checks before any work, and where the results go."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from customops.errors import CustomOpsError
from customops.eval.worker import KERNEL_TIME_RUNS, OPTIMIZATION_LEVELS

if TYPE_CHECKING:
    import numpy as np
    from onnx import ModelProto

    from customops.comparison.inputs import InputPlan
    from customops.comparison.pipeline import Comparison


DEFAULT_DIM = 4
"""Default of ``--dim`` (customops.comparison.inputs.DEFAULT_DIM; a test keeps them equal)."""


def add_parser(sub: Any) -> None:
    """Register ``customops compare``."""
    p = sub.add_parser(
        "compare",
        help="run a model with ORT's built-in kernels and with ours, node by node, with onnx.reference as third vote",
        description="Exit status: 0 everything agrees, 1 a disagreement, a side failed to run or --validate found NaN or "
        "inf, 2 bad input.",
    )
    p.add_argument("model", metavar="MODEL", help="the ONNX model")
    p.add_argument(
        "--inputs",
        help="inputs: an .npz file (keys = graph input names), a Polygraphy inputs .json "
        "(polygraphy run --save-inputs) or an ONNX test-case directory",
    )
    p.add_argument(
        "--ops",
        type=lambda s: [t.strip() for t in s.split(",") if t.strip()],
        help="only these op types, comma separated",
    )
    _add_tolerance_options(p)
    p.add_argument("--seed", type=int, default=0, help="seed of generated inputs (default 0)")
    p.add_argument(
        "--providers",
        type=lambda s: [t.strip() for t in s.split(",") if t.strip()],
        metavar="EP[,EP...]",
        help="execution providers of the built-in side, in order of preference: ORT names or cpu, cuda, "
        "tensorrt, dml, openvino, coreml (default cpu); ours always run on CPU",
    )
    _add_input_options(p)
    p.add_argument(
        "--reference-limit",
        type=int,
        help="most work a node may ask of onnx.reference: output elements x taps, RoiAlign's samples, at "
        "least its inputs' elements (default per op, about 5 s of the reference: Resize and Upsample 48M, "
        "Pad and CenterCropPad 50M, AffineGrid 12M, RoiAlign 1M, Col2Im 500k, DeformConv 50k, GridSample 30k)",
    )
    p.add_argument(
        "--reference-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds onnx.reference may take for one node before it is stopped, the node then having no "
        "third vote (default 120)",
    )
    _add_optimization_option(p)
    p.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report with heat maps")
    p.add_argument("--save-repro", metavar="DIR", help="write an ONNX test case for each disagreeing node")
    _add_choice_options(p)
    p.add_argument(
        "--all-rows",
        action="store_true",
        help="a row for every swapped node, not only where a difference starts",
    )
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true", help="print the verdict line only; no progress")
    loud.add_argument(
        "-v", "--verbose", action="store_true", help="show ONNX Runtime's own warnings from both sides"
    )
    p.set_defaults(func=run)


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _add_choice_options(p: Any) -> None:
    """What is compared and how far: --nodes, --exclude, --validate, --fail-fast."""
    p.add_argument("--nodes", type=_names, metavar="NAME[,NAME...]", help="swap and compare only these nodes")
    p.add_argument("--exclude", type=_names, metavar="NAME[,NAME...]", help="leave these nodes unswapped")
    p.add_argument(
        "--validate",
        action="store_true",
        help="look for NaN and inf in every compared tensor on both sides; any found fails the run (exit 1)",
    )
    p.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at the first node where a difference starts or a side fails alone",
    )
    p.add_argument(
        "--kernel-times",
        action="store_true",
        help="profile both sides for per-node kernel times (the A us / B us columns): "
        f"{KERNEL_TIME_RUNS} timed runs after a warm-up; off by default, as they cost runs and profiling",
    )


def _add_optimization_option(p: Any) -> None:
    """ONNX Runtime's graph optimization level of both sides."""
    p.add_argument(
        "--graph-optimization-level",
        choices=OPTIMIZATION_LEVELS,
        default="all",
        help="ONNX Runtime's graph optimization level of every ORT session of both sides (default all, "
        "ORT's own): disable, basic, extended or all",
    )


def _add_tolerance_options(p: Any) -> None:
    """The options that decide whether a tensor passes."""
    p.add_argument(
        "--rtol",
        action="append",
        metavar="[NAME:]R",
        help="relative tolerance of every float tensor, or of the tensor NAME (default: per dtype, see docs)",
    )
    p.add_argument(
        "--atol",
        action="append",
        metavar="[NAME:]A",
        help="absolute tolerance of every float tensor, or of the tensor NAME (default: per dtype)",
    )
    p.add_argument(
        "--check-error-stat",
        choices=("elemwise", "max", "mean", "median"),
        default="elemwise",
        help="what decides a tensor: each element (default), or the max, mean or median error against "
        "--atol or --rtol, as Polygraphy's",
    )


def _add_input_options(p: Any) -> None:
    """The options that shape generated inputs, and where the inputs and outputs used are saved."""
    p.add_argument(
        "--dim",
        action="append",
        metavar="NAME=VALUE",
        help=f"size of a symbolic dimension (default {DEFAULT_DIM}; then 32, 64, 320 while both sides fail alike)",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME:DIMS",
        help="shape of a generated input, e.g. images:1x3x640x480 or images:[1,3,640,480]",
    )
    p.add_argument(
        "--val-range",
        action="append",
        metavar="[NAME:]LO,HI",
        help="values of generated inputs (of NAME, else all): floats in [LO, HI), integers in [LO, HI]",
    )
    p.add_argument(
        "--save-inputs", metavar="PATH", help="write the inputs used: .npz, or .json as Polygraphy reads them"
    )
    p.add_argument(
        "--save-outputs",
        metavar="PATH.npz",
        help="write every compared tensor of both sides (builtin/NAME, custom/NAME): graph outputs and "
        "swapped nodes' outputs",
    )
    p.add_argument(
        "--load-outputs",
        metavar="FILE",
        help="compare against saved outputs in place of running the built-in side: Polygraphy's "
        "'polygraphy run --save-outputs' JSON or an .npz (ours, or keyed by tensor name)",
    )


def check_destinations(args: Any, files: list[Path]) -> None:
    """Before any work: every destination can be written, none is an input, no two are the same file."""
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
        ("--save-outputs", args.save_outputs, (".npz",)),
    ):
        if target and not str(target).lower().endswith(suffixes):
            raise CustomOpsError(f"{option} {str(target)!r} must end in {' or '.join(suffixes)}")
    for option, target in outputs:
        check_output_file(target, option)
        check_output_spares_input(target, files, external=False)
    check_distinct(outputs)
    if args.save_repro:
        check_output_dir(args.save_repro, "--save-repro")
        if args.inputs and Path(args.inputs).is_dir() and inside(args.save_repro, args.inputs):
            raise CustomOpsError(
                f"--save-repro {str(args.save_repro)!r} is inside --inputs {str(args.inputs)!r}; the input is "
                "never modified: choose a directory outside it"
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
        write_atomic(args.json, jsonout.dumps(comparison.report, indent=1) + "\n")
    if args.html:
        from customops.comparison.html import render

        write_atomic(args.html, render(comparison.report, comparison.tensors))
    if args.save_inputs:  # the inputs compared: generated ones at the sizes the verdict used
        from customops.comparison.inputs import save_arrays

        save_arrays(args.save_inputs, comparison.feed)
    if args.save_repro:
        cases = save_repros(comparison, args.save_repro)
        for case in cases:
            if not args.quiet:
                log(f"reproducer: {case}")
        if not cases:
            log(nothing_saved(comparison))  # even with -q: an output asked for and not written
    if args.save_outputs:
        from customops.comparison.inputs import save_arrays
        from customops.comparison.saved import compared_arrays

        result = comparison.result
        save_arrays(args.save_outputs, compared_arrays(result.outputs, result.nodes, comparison.tensors))


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
    from customops.comparison.pipeline import check_settings, compare_model, log
    from customops.comparison.report import format_table
    from customops.eval import sides
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
        check_error_stat=args.check_error_stat,
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
        printable(comparison.result.summary) if args.quiet else format_table(comparison.report, args.all_rows)
    )
    write_outputs(args, comparison)
    if not args.quiet:
        started = getattr(args, "started", None) or time.perf_counter()  # the command's start: its process's
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
