"""``customops examples [NAME]``: the example models installed with the package (customops/examples/,
written by tools/make_models.py), so that the README's first command runs from any installation: the
list (name, path, what it shows), or one model's path alone, for ``customops compare "$(customops
examples ort_deviation)"``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from customops.errors import CustomOpsError

EXAMPLES = {
    "ort_deviation": "ORT's Resize with align_corners leaves the spec; compare exits 1 and names the node",
    "preprocess_pipeline": "image, audio and detection-neck preprocessing on which both sides agree",
}
"""Each example model (customops/examples/NAME.onnx) and what comparing it shows; its README.md says more."""


def examples_dir() -> Path:
    """The directory of the example models, beside the package's modules."""
    return Path(__file__).resolve().parent.parent / "examples"


def example_path(name: str) -> Path:
    """The path of the example model ``name``; CustomOpsError for a name that is none."""
    if name not in EXAMPLES:
        raise CustomOpsError(f"no example model {name!r} (examples: {', '.join(EXAMPLES)})")
    return examples_dir() / f"{name}.onnx"


def add_parser(sub: Any) -> None:
    """Register ``customops examples``."""
    p = sub.add_parser(
        "examples",
        help="the example models installed with customops: names, paths and what they show",
        description="Without NAME: each example model's name, path and what comparing it shows. With NAME: "
        'its path alone, e.g. customops compare "$(customops examples ort_deviation)".',
    )
    p.add_argument("name", metavar="NAME", nargs="?", help=f"one of: {', '.join(EXAMPLES)}")
    p.set_defaults(func=run_examples)


def run_examples(args: argparse.Namespace) -> int:
    """``customops examples [NAME]``: on stdout, every example or the path of one; exit 2 for a NAME
    that is no example."""
    if args.name is not None:
        print(example_path(args.name))
        return 0
    width = max(map(len, EXAMPLES))
    for name, what in EXAMPLES.items():
        print(f"{name:{width}}  {example_path(name)}\n{'':{width}}  {what}")
    return 0
