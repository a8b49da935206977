"""``customops compare``: the arguments (the work is customops.comparison.command)."""

from __future__ import annotations

import argparse
from typing import Any

from customops.eval.running.worker import KERNEL_TIME_RUNS, OPTIMIZATION_LEVELS

DEFAULT_DIM = 4
"""Default of ``--dim`` (customops.comparison.inputs.DEFAULT_DIM; a test keeps them equal)."""

ORT_LEVEL_NAMES = {
    "ORT_DISABLE_ALL": "disable",
    "ORT_ENABLE_BASIC": "basic",
    "ORT_ENABLE_EXTENDED": "extended",
    "ORT_ENABLE_ALL": "all",
}
"""``--graph-optimization-level`` by ORT's names, as Polygraphy takes them."""

_NOT_TAKEN = {
    "compare runs one feed, each side once in a child process of its own": (
        "--iterations --iters --data-loader-backend-module --data-loader-script --warm-up --use-subprocess "
        "--sequential-runners --check-average"
    ),
    "compare compares the tensors the model computes, whole": (
        "--postprocess --postprocess-func --postprocess-func-script --no-shape-check --save-input-blob"
    ),
    "compare decides by --atol, --rtol and --check-error-stat": (
        "--compare --compare-func --compare-func-script --index-tolerance --l2-threshold --l2-tolerance "
        "--cosine-similarity-threshold --psnr-threshold --psnr-tolerance --snr-threshold --snr-tolerance "
        "--lpips-threshold --lpips-tolerance"
    ),
    "compare's heat maps and histograms are in --html, its figures in --json": (
        "--save-heatmaps --show-heatmaps --save-error-metrics-plot --show-error-metrics-plot --save-accuracy-results"
    ),
    "compare compares every swapped node's output itself; for every tensor of another runtime, "
    "--load-outputs a file of polygraphy run --onnx-outputs mark all": (
        "--onnx-outputs --onnx-exclude-outputs --onnx-outputs-by-type --trt-outputs"
    ),
    "compare's sides are ORT's built-in kernels and ours; --load-outputs stands in another runtime's": (
        "--onnxrt --trt --tf --pluginref"
    ),
}
POLYGRAPHY_ONLY = {option: why for why, options in _NOT_TAKEN.items() for option in options.split()}
"""``polygraphy run`` options whose meaning compare does not take, and why (the error of an unknown
option says it; docs/compare.md has the whole table)."""


def add_parser(sub: Any) -> None:
    """Register ``customops compare``."""
    p = sub.add_parser(
        "compare",
        help="run a model with ORT's built-in kernels and with ours, node by node, with onnx.reference as third vote",
        description="Exit status: 0 everything agrees, 1 a disagreement, a side failed to run or --validate found NaN or "
        "inf, 2 bad input or nothing to compare (no node of an op customops implements swapped).",
    )
    p.add_argument("model", metavar="MODEL", help="the ONNX model")
    _add_side_options(p)
    _add_tolerance_options(p)
    p.add_argument("--seed", type=int, default=0, help="seed of generated inputs (default 0)")
    _add_input_options(p)
    p.add_argument(
        "--reference-limit",
        type=int,
        help="most work a node may ask of onnx.reference: lines of its Python loops or elements of its "
        "arrays, at least its inputs' elements (default per op, about 5 s of the reference: Resize 500M, "
        "Upsample 48M, Pad and CenterCropPad 50M, AffineGrid 600M, RoiAlign 100M, Col2Im 30M, DeformConv 30M, "
        "GridSample 40M)",
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
    p.refusals = POLYGRAPHY_ONLY  # read by customops.cli.main.OneLineParser for an unknown option


def _add_side_options(p: Any) -> None:
    """Where the inputs come from, the ops swapped, the built-in side's providers."""
    p.add_argument(
        "--inputs",
        "--load-inputs",
        "--load-input-data",
        help="inputs: an .npz file (keys = graph input names), a Polygraphy inputs .json or directory "
        "(polygraphy run --save-inputs) or an ONNX test-case directory",
    )
    p.add_argument(
        "--ops",
        type=lambda s: [t.strip() for t in s.split(",") if t.strip()],
        help="only these op types, comma separated",
    )
    p.add_argument(
        "--providers",
        "--execution-providers",
        action=_Names,
        nargs="+",
        metavar="EP[,EP...]",
        help="execution providers of the built-in side, in order of preference: ORT names or cpu, cuda, "
        "tensorrt, dml, openvino, coreml (default cpu); ours always run on CPU",
    )


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


class _Names(argparse.Action):
    """Names given comma separated, space separated (Polygraphy's way) or in several options: one list."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        found = getattr(namespace, self.dest, None) or []
        setattr(namespace, self.dest, [*found, *(n for v in values for n in _names(v))])


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
        type=lambda text: ORT_LEVEL_NAMES.get(text, text),
        default="all",
        help="ONNX Runtime's graph optimization level of every ORT session of both sides (default all, "
        "ORT's own): disable, basic, extended or all (or ORT's names, ORT_DISABLE_ALL ... ORT_ENABLE_ALL)",
    )


def _add_tolerance_options(p: Any) -> None:
    """The options that decide whether a tensor passes."""
    p.add_argument(
        "--rtol",
        "--rel-tol",
        action="extend",
        nargs="+",
        metavar="[NAME:]R",
        help="relative tolerance of every float tensor, or of the tensor NAME (default: per dtype, see docs)",
    )
    p.add_argument(
        "--atol",
        "--abs-tol",
        action="extend",
        nargs="+",
        metavar="[NAME:]A",
        help="absolute tolerance of every float tensor, or of the tensor NAME (default: per dtype)",
    )
    p.add_argument(
        "--check-error-stat",
        action="extend",
        nargs="+",
        metavar="[NAME:]STAT",
        help="what decides every tensor, or the tensor NAME: each element (elemwise, the default), or the "
        "max, mean, median or quantile (--error-quantile) error against --atol or --rtol, as Polygraphy's",
    )
    p.add_argument(
        "--error-quantile",
        action="extend",
        nargs="+",
        metavar="[NAME:]Q",
        help="the quantile (0 to 1, default 0.99) of --check-error-stat quantile, of every tensor or of NAME",
    )
    p.add_argument(
        "--infinities-compare-equal",
        action="store_true",
        help="matching infinities count as errors of 0 in a --check-error-stat statistic (element by "
        "element they always pass)",
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
        "--input-shapes",
        action="extend",
        nargs="+",
        metavar="NAME:DIMS",
        help="shape of a generated input, e.g. images:1x3x640x480 or images:[1,3,640,480]",
    )
    p.add_argument(
        "--val-range",
        action="extend",
        nargs="+",
        metavar="[NAME:]LO,HI",
        help="values of generated inputs (of NAME, else all): floats in [LO, HI), integers in [LO, HI]",
    )
    p.add_argument(
        "--save-inputs",
        "--save-input-data",
        metavar="PATH",
        help="write the inputs used: .npz, or .json as Polygraphy reads them",
    )
    p.add_argument(
        "--save-outputs",
        "--save-results",
        metavar="PATH.npz|PATH.json",
        help="write every compared tensor of both sides (builtin/NAME, custom/NAME): graph outputs and "
        "swapped nodes' outputs; .json: as Polygraphy saves outputs, a runner per side",
    )
    p.add_argument(
        "--load-outputs",
        "--load-results",
        metavar="FILE",
        help="compare against saved outputs in place of running the built-in side: Polygraphy's "
        "'polygraphy run --save-outputs' JSON or an .npz (ours, or keyed by tensor name)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the comparison (imported here: the parser stays cheap)."""
    from customops.comparison import command

    return command.run(args)
