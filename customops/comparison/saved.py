"""Compared tensors to and from files: ``compare --save-outputs`` and ``compare --load-outputs``.

``--save-outputs PATH.npz`` writes every tensor compare compared, keyed ``builtin/NAME`` and
``custom/NAME``, NAME the tensor's name in the model: each graph output and each swapped node's output.

``--load-outputs FILE`` reads outputs saved elsewhere, which then stand in for the built-in side (A):
Polygraphy's ``polygraphy run --save-outputs`` JSON (one runner; its first iteration; of a directory of
per-iteration files, the first file), an .npz written
by ``--save-outputs`` (its ``builtin/`` arrays) or an .npz keyed by tensor name. Everything is read as
untrusted: bounded sizes (:data:`LOADED_LIMIT`), never unpickled; every name must
be a value the main graph computes, and every graph output must be there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto

from customops.comparison.array_files import decode_arrays, first_iteration, read_npz
from customops.errors import CustomOpsError
from customops.safeio import read_json

LOADED_LIMIT = 4 * 2**30
"""Most bytes of outputs read from a --load-outputs file, on disk and in memory (counted as
customops.comparison.inputs.INPUT_LIMIT counts inputs, and as large): they stand in for the built-in side's
values, held and compared with ours."""

COMPARED_SIDES = ("builtin", "custom")
"""The two sides a comparison holds values of, as --save-outputs names them."""

RUNNERS = {"builtin": "customops builtin", "custom": "customops custom"}
"""The runners of a Polygraphy RunResults file written by ``--save-outputs PATH.json``, by side."""


@dataclass
class LoadedOutputs:
    """Outputs read from ``path`` (``source`` says what kind of file, and which runner), by tensor name."""

    path: str
    source: str
    values: dict[str, np.ndarray]


def compared_arrays(
    outputs: list[Any],
    nodes: list[Any],
    tensors: dict[str, tuple[Any, Any]],
    several: dict[str, dict[str, tuple[Any, Any]]] | None = None,
) -> dict[str, Any]:
    """``--save-outputs``: every compared tensor of both sides (``side/NAME``; a side without a value
    leaves its key out): the graph outputs (``outputs``: OutputResult) and the swapped nodes' outputs
    (``nodes``: NodeResult, whose tensors are keyed by node name; every output of a node of several, from
    ``several``: by node, then output name)."""
    arrays: dict[str, Any] = {}
    pairs = [(o.name, tensors.get(o.name)) for o in outputs]
    for n in nodes:
        pairs += list(((several or {}).get(n.node) or {n.output: tensors.get(n.node)}).items())
    for name, pair in pairs:
        for side, value in zip(COMPARED_SIDES, pair or (None, None), strict=True):
            if value is not None:
                arrays.setdefault(f"{side}/{name}", value)
    return arrays


def save_run_results(path: str, arrays: dict[str, np.ndarray]) -> None:
    """``--save-outputs PATH.json``: :func:`compared_arrays` (``side/NAME``) as a Polygraphy RunResults
    file of one iteration per side, its runners :data:`RUNNERS` (``polygraphy run --load-outputs``
    compares them; ``compare --load-outputs`` takes the built-in one), written whole or not at all."""
    import json

    from customops.comparison.array_files import POLYGRAPHY_CLASS, encoded_array
    from customops.safeio import write_atomic

    lst = []
    for side in COMPARED_SIDES:
        lazy = {
            k.split("/", 1)[1]: {"values": encoded_array(v), POLYGRAPHY_CLASS: "LazyArray"}
            for k, v in arrays.items()
            if k.startswith(f"{side}/")
        }
        iteration = {
            "outputs": lazy,
            "runtime": None,  # not timed
            "runner_name": RUNNERS[side],
            POLYGRAPHY_CLASS: "IterationResult",
        }
        lst.append([RUNNERS[side], [iteration]])
    write_atomic(path, json.dumps({"lst": lst, POLYGRAPHY_CLASS: "RunResults"}) + "\n")


def _polygraphy_outputs(path: Path, below: Path | None = None) -> tuple[dict[str, np.ndarray], str]:
    """The first iteration of the one runner of a Polygraphy RunResults JSON file, and its runner's name
    (``below``: the directory the user named, read through no link below it)."""
    what = f"{str(path)!r} is not a Polygraphy outputs file"
    data = read_json(path, LOADED_LIMIT // 3 * 4 + (1 << 20), "--load-outputs", max_depth=16, below=below)
    runners = data.get("lst") if isinstance(data, dict) else None
    if not isinstance(runners, list) or not runners:
        raise CustomOpsError(
            f'{what}: expected {{"lst": [[runner, [iteration, ...]], ...]}} (polygraphy run --save-outputs)'
        )
    names = [str(r[0]) if isinstance(r, list) and r else "?" for r in runners]
    if len(runners) != 1 and RUNNERS["builtin"] not in names:
        listed = ", ".join(n[:80] for n in names[:3]) + (", ..." if len(names) > 3 else "")  # one short line
        raise CustomOpsError(f"{what}: it holds {len(runners)} runners ({listed}); save one runner's outputs")
    # one runner, or the built-in side of a file compare --save-outputs wrote
    runner = runners[0] if len(runners) == 1 else runners[names.index(RUNNERS["builtin"])]
    iterations = runner[1] if isinstance(runner, list) and len(runner) == 2 else None
    first = iterations[0] if isinstance(iterations, list) and iterations else None
    outputs = first.get("outputs") if isinstance(first, dict) else None
    if not isinstance(outputs, dict) or not outputs:
        raise CustomOpsError(f"{what}: its runner has no iteration with outputs")
    # each array wrapped as Polygraphy's lazy array: {"values": {"array": ...}, "polygraphy_class": "LazyArray"}
    return decode_arrays(outputs, what, "output", LOADED_LIMIT), f"Polygraphy runner {runner[0]!s}"


def _npz_outputs(path: Path) -> tuple[dict[str, np.ndarray], str]:
    """An .npz's arrays: its ``builtin/`` ones when it was written by ``--save-outputs``, else all."""
    arrays = read_npz(path, LOADED_LIMIT, "outputs file")
    if any(k.startswith("builtin/") for k in arrays):
        return {
            k.removeprefix("builtin/"): v for k, v in arrays.items() if k.startswith("builtin/")
        }, "builtin/ arrays of an .npz"
    return arrays, ".npz"


def _read(p: Path) -> tuple[dict[str, np.ndarray], str]:
    """The arrays of ``--load-outputs`` ``p`` by tensor name, and what kind of file held them."""
    if p.is_dir():  # polygraphy run --save-outputs DIR: one RunResults file per iteration
        first = first_iteration(p)
        if first is None:
            raise CustomOpsError(
                f"--load-outputs {str(p)!r} is a directory without .json files (Polygraphy's per-iteration "
                "outputs, polygraphy run --save-outputs DIR)"
            )
        values, source = _polygraphy_outputs(first, below=p)
        return values, f"{source}, iteration file {first.name}"
    if not p.is_file():
        raise CustomOpsError(f"--load-outputs {str(p)!r} is not a file")
    return _polygraphy_outputs(p) if p.suffix.lower() == ".json" else _npz_outputs(p)


def _tensor_array(name: str, value: np.ndarray, path: str) -> np.ndarray:
    """A loaded array of an element type some ONNX tensor has, in this machine's byte order (a file written
    on a big-endian one); CustomOpsError for any other dtype (structured, void, datetime, float128: no
    output of a model holds one, and comparing it failed with a traceback)."""
    from customops import dtypes

    native = dtypes.native_order(value)
    try:
        dtypes.code_of(native.dtype)
    except (KeyError, ValueError, TypeError):
        raise CustomOpsError(
            f"--load-outputs {path!r}: {name!r} has dtype {value.dtype}, which no ONNX tensor has"
        ) from None
    return native


def load_outputs(path: str, model: ModelProto) -> LoadedOutputs:
    """``--load-outputs FILE`` for ``model``: CustomOpsError (bad input) for a file that is not one of the
    kinds above, an array of a dtype no ONNX tensor has, a name that is no value of the main graph, or a
    graph output it lacks."""
    p = Path(path)
    values, source = _read(p)
    values = {name: _tensor_array(name, v, path) for name, v in values.items()}
    computed = {o for n in model.graph.node for o in n.output if o}
    graph_outputs = [o.name for o in model.graph.output]
    unknown = [k for k in values if k not in computed and k not in graph_outputs]
    if unknown:
        raise CustomOpsError(
            f"--load-outputs {path!r}: {unknown[0]!r} is not a value the model's main graph computes "
            f"(graph outputs: {', '.join(map(repr, graph_outputs))})"
        )
    missing = [o for o in graph_outputs if o not in values]
    if missing:
        raise CustomOpsError(
            f"--load-outputs {path!r} lacks graph output {missing[0]!r}; it must hold every graph output"
        )
    return LoadedOutputs(str(path), source, values)
