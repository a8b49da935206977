"""``customops fuzz``: a differential fuzzer of ONNX Runtime's built-in kernels, ours and onnx.reference.

Layout: :mod:`.case` (a case as data and as a one-node model), :mod:`.values` (ordinary and special
values of every element type), :mod:`.space` and ``spaces_*`` (per operator: generation from the registry,
the validity oracle, invalid mutations, simplifications; :mod:`.simplifications` holds the ones they
share), :mod:`.dispatch` (which space serves an op, and a case drawn from it), :mod:`.worker` and
:mod:`.runner` (one worker process per side, crash and hang recovery), :mod:`.triage` (classification,
signatures, shrinking), :mod:`.campaign` (plans, shards, grouping), :mod:`.output` (reproducers, summary,
merge), :mod:`.files` (summary.json and finding.json read as untrusted data, against a schema),
:mod:`.known` (labels of documented deviations) and :mod:`.command` (the CLI).

Importing this package is cheap: numpy, onnx and onnxruntime are imported by the command itself.
"""

from __future__ import annotations

from typing import Any


def add_parser(subparsers: Any) -> None:
    """Register ``customops fuzz`` with the ``customops`` command's subparsers."""
    from customops.fuzz.command import add_parser as add

    add(subparsers)
