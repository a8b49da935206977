"""compare's inputs: generated from the declared types and shapes (seeded), or read from an .npz file, a
Polygraphy inputs file or an ONNX test-case directory (the files' arrays: customops.comparison.array_files),
and checked against the graph inputs; at most :data:`INPUT_LIMIT` bytes, as
customops.dtypes.declared_nbytes counts them (every element counts, whatever its type's size)."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto

from customops import dtypes
from customops.comparison.array_files import (
    check_declared,
    decode_arrays,
    first_iteration,
    polygraphy_class,
    read_npz,
)
from customops.errors import CustomOpsError
from customops.eval.cases.testcase import read_inputs
from customops.safeio import printable, read_json

DEFAULT_DIM = 4
"""Size given to a symbolic dimension without ``--dim``."""

INPUT_LIMIT = 4 * 2**30
"""Most bytes of inputs read from a file or generated, counted as they take memory here
(customops.dtypes.declared_nbytes: a string at 64 bytes and more, any other element at its size and at
least one byte; at least 8 bytes an element while generating): both sides then run the model on them, and
more than this does not fit this tool's purpose on the machines it runs on."""

_DIGITS = 30
"""Most digits of a size in --dim and --input-shape: a longer one is larger than any input may be (and
past 4300 digits Python refuses to read it)."""


def _size(text: str, option: str, item: str) -> int:
    """A non-negative decimal size (already matched as digits) of at most :data:`_DIGITS` digits."""
    digits = text.strip().lstrip("0")
    if len(digits) > _DIGITS:
        raise CustomOpsError(f"{option} {item[:60]!r}...: a size has at most {_DIGITS} digits")
    return int(digits or "0")


def check_tensor_interface(model: ModelProto) -> None:
    """Refuse, before any work, a graph input or output that is not a tensor (a sequence, an optional
    value, a map, a sparse tensor): compare compares tensors element by element (docs/compare.md, What is
    compared). A value whose type is not declared is let through; the sides refuse it if it is not a
    tensor."""
    for kind, values in (("input", graph_inputs(model)), ("output", model.graph.output)):
        for v in values:
            which = v.type.WhichOneof("value")
            if which not in (None, "tensor_type"):
                what = which.removesuffix("_type").replace("_", " ")
                article = "an" if what[0] in "aeiou" else "a"
                raise CustomOpsError(
                    f"graph {kind} {v.name!r} is {article} {what}, not a tensor: compare takes models whose graph "
                    "inputs and outputs are tensors"
                )


def check_seed(seed: int) -> None:
    """Raise CustomOpsError for a negative seed."""
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise CustomOpsError(f"--seed {seed!r} must be at least 0")


def graph_inputs(model: ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in inits]


def _declared(v: onnx.ValueInfoProto) -> tuple[int, list[int | str | None]]:
    t = v.type.tensor_type
    dims: list[int | str | None] = []
    for d in t.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or None))
    return t.elem_type, dims


def parse_dims(items: Sequence[str]) -> dict[str, int]:
    """``["N=1", "H=224"]`` -> ``{"N": 1, "H": 224}``; raises :class:`CustomOpsError` on a malformed item."""
    dims: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not re.fullmatch(r"\d+", value.strip()):
            raise CustomOpsError(f"--dim {item!r} is not NAME=VALUE with a non-negative integer VALUE")
        if name.strip() in dims:
            raise CustomOpsError(f"--dim {name.strip()!r} is given twice")
        dims[name.strip()] = _size(value, "--dim", item)
    return dims


Range = tuple[float, float]


def parse_input_shapes(items: Sequence[str]) -> dict[str, list[int]]:
    """``["images:1x3x640x480", "mask:[1,640]"]`` -> shapes by input name (Polygraphy's bracket form or
    ``x``-separated); CustomOpsError on a malformed item."""
    shapes: dict[str, list[int]] = {}
    for item in items:
        name, sep, text = item.rpartition(":")
        parts = [p.strip() for p in re.split(r"[x,]", text.strip().strip("[]"))] if text.strip("[] ") else []
        if not sep or not name or not all(re.fullmatch(r"\d+", p) for p in parts):
            raise CustomOpsError(
                f"--input-shape {item!r} is not NAME:DIMS with DIMS like 1x3x640x480 or [1,3,640,480]"
            )
        if name in shapes:
            raise CustomOpsError(f"--input-shape {name!r} is given twice")
        shapes[name] = [_size(p, "--input-shape", item) for p in parts]
    return shapes


def parse_val_ranges(items: Sequence[str]) -> dict[str | None, Range]:
    """``["0,255", "mask:0,1"]`` -> value ranges by input name (None: every other input); LO <= HI,
    both finite and HI - LO finite too (the uniform draw scales by it); CustomOpsError otherwise."""
    ranges: dict[str | None, Range] = {}
    for item in items:
        name, _, text = item.rpartition(":")
        lo_hi = [p.strip() for p in text.strip().strip("[]").split(",")]
        try:
            lo, hi = (float(p) for p in lo_hi)
        except ValueError:
            lo, hi = math.nan, math.nan
        if len(lo_hi) != 2 or not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise CustomOpsError(f"--val-range {item!r} is not [NAME:]LO,HI with finite LO <= HI")
        if not math.isfinite(hi - lo):
            raise CustomOpsError(
                f"--val-range {item!r}: HI - LO overflows a double (at most {sys.float_info.max:.6g} is allowed)"
            )
        key = name or None
        if key in ranges:
            raise CustomOpsError(f"--val-range for {key or 'every input'!r} is given twice")
        ranges[key] = (lo, hi)
    return ranges


def generate_inputs(
    model: ModelProto,
    seed: int = 0,
    dims: dict[str, int] | None = None,
    shapes: dict[str, list[int]] | None = None,
    ranges: dict[str | None, Range] | None = None,
) -> dict[str, np.ndarray]:
    """Seeded inputs from each graph input's declared type and shape: a shape from ``shapes`` (by input
    name), else the declared one with symbolic dimensions from ``dims``, else :data:`DEFAULT_DIM`. Values:
    uniform in the input's range of ``ranges`` (by name, else the None entry: floats in [LO, HI), integers
    in [LO, HI] within the type), else floats standard normal and integers uniform in [0, 16)."""
    check_seed(seed)
    check_tensor_interface(model)
    rng = np.random.default_rng(seed)
    dims, shapes, ranges = dims or {}, shapes or {}, ranges or {}
    _check_names(model, dims, shapes, ranges)
    planned = _planned(model, dims, shapes)
    _check_generated_size(planned)
    return {
        name: _draw(rng, shape, dtype, ranges.get(name, ranges.get(None)))
        for name, (shape, dtype) in planned.items()
    }


def _planned(
    model: ModelProto, dims: dict[str, int], shapes: dict[str, list[int]]
) -> dict[str, tuple[list[int], np.dtype]]:
    """The shape and dtype of each generated input (see :func:`generate_inputs`), checked against the
    declared ones."""
    planned = {}
    for v in graph_inputs(model):
        elem, declared = _declared(v)
        if not elem:
            raise CustomOpsError(f"graph input {v.name!r} has no element type; pass --inputs")
        shape = shapes.get(v.name) or [
            d if isinstance(d, int) else dims.get(d or "", DEFAULT_DIM) for d in declared
        ]
        _check_shape(v.name, shape, declared)
        planned[v.name] = (shape, dtypes.numpy_dtype(elem))
    return planned


def _planned_bytes(planned: dict[str, tuple[list[int], np.dtype]]) -> int:
    """Bytes the generated inputs take, reckoned at 8 bytes an element at least (64 a string)."""
    return sum(
        max(dtypes.declared_nbytes(shape, dtype), math.prod(shape) * 8) for shape, dtype in planned.values()
    )


def _check_names(model: ModelProto, dims: dict, shapes: dict, ranges: dict) -> None:
    """Every --dim names a symbolic dimension, every --input-shape and --val-range NAME a graph input."""
    symbolic = {d for v in graph_inputs(model) for d in _declared(v)[1] if isinstance(d, str)}
    for name in dims:
        if name not in symbolic:
            raise CustomOpsError(
                f"--dim {name!r} names no symbolic dimension of the graph inputs "
                f"(they have: {', '.join(repr(d) for d in sorted(symbolic)) or 'none'})"
            )
    inputs = [v.name for v in graph_inputs(model)]
    for option, names in (("--input-shape", shapes), ("--val-range", [n for n in ranges if n is not None])):
        for name in names:
            if name not in inputs:
                raise CustomOpsError(
                    f"{option} {name!r} names no graph input (graph inputs: {', '.join(map(repr, inputs)) or 'none'})"
                )


def check_dims_against_shapes(model: ModelProto, dims: dict[str, int], shapes: dict[str, list[int]]) -> None:
    """Refuse a ``--dim`` that an ``--input-shape`` contradicts: an input whose whole shape is given
    uses that symbolic dimension at another size (the shape wins there, so the --dim would be ignored
    for it, or the inputs would give one dimension two sizes)."""
    for v in graph_inputs(model):
        shape = shapes.get(v.name)
        if shape is None:
            continue
        for axis, d in enumerate(_declared(v)[1]):
            if isinstance(d, str) and d in dims and axis < len(shape) and shape[axis] != dims[d]:
                given = "x".join(map(str, shape))
                raise CustomOpsError(
                    f"--dim {d}={dims[d]} contradicts --input-shape {v.name}:{given}, which gives {d!r} "
                    f"(axis {axis}) the size {shape[axis]}: give that size in one of them, or the same in both"
                )


def _check_shape(name: str, shape: list[int], declared: list[int | str | None]) -> None:
    """A shape given for ``name`` has the declared rank and keeps its fixed dimensions."""
    if declared and len(shape) != len(declared):
        raise CustomOpsError(
            f"--input-shape {name!r} has rank {len(shape)}, the model declares {len(declared)}"
        )
    for axis, (got, dim) in enumerate(zip(shape, declared, strict=False)):
        if isinstance(dim, int) and dim != got:
            raise CustomOpsError(
                f"--input-shape {name!r} gives {got} on axis {axis}, the model declares {dim}"
            )


def _check_generated_size(shapes: dict[str, tuple[list[int], np.dtype]]) -> None:
    """Refuse, before drawing anything, a negative size and inputs that would take more than
    :data:`INPUT_LIMIT` bytes (every dimension is checked, so that a zero cannot hide a huge one)."""
    for name, (shape, _) in shapes.items():
        for d in shape:
            if d < 0 or d * 8 > INPUT_LIMIT:
                raise CustomOpsError(
                    f"graph input {name!r} declares a dimension of {d}: each must be at least 0 and the "
                    f"inputs at most {INPUT_LIMIT / 2**30:.0f} GiB; pass --inputs"
                )
    total = _planned_bytes(shapes)
    if total > INPUT_LIMIT:
        raise CustomOpsError(
            f"the generated inputs would take {total / 2**30:.1f} GiB, over the {INPUT_LIMIT / 2**30:.0f} GiB "
            "allowed: give smaller --dim sizes, or pass --inputs"
        )


LADDER = (32, 64, 320)
"""Sizes compare tries, in order, for the symbolic dimensions it chose itself (no ``--dim``, no
``--input-shape``) when both sides fail on generated inputs at :data:`DEFAULT_DIM`: 32 and its multiples
fit strided models (a detector's stride-32 pyramid), 320 a detector's smallest usual input."""

LADDER_LIMIT = 256 * 2**20
"""Most bytes of inputs a size of the ladder may take (reckoned as :data:`INPUT_LIMIT` is): sizes nobody
asked for stay cheap to run twice; a larger step is not tried."""

_BATCH_NAMES = re.compile(r"(?i)^(n|b|bs|.*batch.*)$")


@dataclass
class InputPlan:
    """How compare's inputs are generated (:func:`generate_inputs`' arguments), so that they can be drawn
    again at other sizes of the symbolic dimensions left to the default."""

    model: ModelProto
    seed: int = 0
    dims: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)
    ranges: dict[str | None, Range] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_dims_against_shapes(self.model, self.dims, self.shapes)

    def generate(self, sizes: dict[str, int] | None = None) -> dict[str, np.ndarray]:
        """The inputs, with ``sizes`` for some symbolic dimensions besides ``dims``."""
        return generate_inputs(
            self.model, self.seed, {**self.dims, **(sizes or {})}, self.shapes, self.ranges
        )

    def positions(self) -> dict[str, list[tuple[int, int]]]:
        """Each symbolic dimension of the inputs whose shape is not given whole: (axis, rank) of its uses."""
        out: dict[str, list[tuple[int, int]]] = {}
        for v in graph_inputs(self.model):
            if v.name in self.shapes:
                continue
            declared = _declared(v)[1]
            for axis, d in enumerate(declared):
                if isinstance(d, str):
                    out.setdefault(d, []).append((axis, len(declared)))
        return out

    def sizes(self, chosen: dict[str, int] | None = None) -> dict[str, int]:
        """The size each symbolic dimension takes: ``chosen``, else ``--dim``, else :data:`DEFAULT_DIM`."""
        given = {**self.dims, **(chosen or {})}
        return {d: given.get(d, DEFAULT_DIM) for d in self.positions()}

    def defaults_note(self) -> str | None:
        """The progress line naming the symbolic dimensions left to :data:`DEFAULT_DIM` (no ``--dim``,
        their inputs' shapes not given) and how to set them; None when there is none."""
        left = {d: DEFAULT_DIM for d in self.positions() if d not in self.dims}
        if not left:
            return None
        return (
            f"generated inputs: symbolic dims {sizes_text(left)} (default {DEFAULT_DIM}; set with "
            "--dim NAME=VALUE or --input-shape NAME:DIMS)"
        )

    def ladder(self) -> list[dict[str, int]]:
        """The sizes to try after :data:`DEFAULT_DIM` (:data:`LADDER`) for the dimensions left to it, a
        batch-like one (named batch, N, B or bs, or the first axis of an input of rank 4 or more) at 1;
        a step whose inputs would take over :data:`LADDER_LIMIT` bytes ends the ladder."""
        free = {d: uses for d, uses in self.positions().items() if d not in self.dims}
        if not free:
            return []
        steps = []
        for size in LADDER:
            step = {d: 1 if _batch_like(d, uses) else size for d, uses in free.items()}
            planned = _planned(self.model, {**self.dims, **step}, self.shapes)
            if _planned_bytes(planned) > LADDER_LIMIT:
                break
            steps.append(step)
        return steps


def _batch_like(name: str, uses: list[tuple[int, int]]) -> bool:
    """A symbolic dimension that looks like the batch: by its name, or as the first axis of inputs of
    rank 4 or more (images, volumes) wherever it is used."""
    return bool(_BATCH_NAMES.match(name)) or all(axis == 0 and rank >= 4 for axis, rank in uses)


def sizes_text(sizes: dict[str, int]) -> str:
    """``batch=1, height=32`` (names escaped for a terminal line)."""
    return ", ".join(f"{printable(name)}={size}" for name, size in sizes.items())


@dataclass
class InputsUsed:
    """The inputs a comparison ran on: each one's shape and dtype; for generated ones the size of each
    symbolic dimension and the sizes tried before at which both sides failed (:data:`LADDER`)."""

    shapes: dict[str, list[int]]
    dtypes: dict[str, str]
    generated: bool
    dims: dict[str, int] = field(default_factory=dict)
    tried: list[dict[str, int]] = field(default_factory=list)

    @classmethod
    def of(
        cls, feed: dict[str, np.ndarray], plan: InputPlan | None, chosen: dict[str, int] | None = None
    ) -> InputsUsed:
        shapes = {k: [int(d) for d in np.shape(v)] for k, v in feed.items()}
        types = {k: str(np.asarray(v).dtype) for k, v in feed.items()}
        return cls(shapes, types, plan is not None, plan.sizes(chosen) if plan is not None else {})

    def to_json(self) -> dict[str, Any]:
        return {
            "shapes": self.shapes,
            "dtypes": self.dtypes,
            "generated": self.generated,
            "dims": self.dims,
            "tried": self.tried,
        }


_DRAW_CHUNK = 1 << 20
"""Values drawn at a time: the stream is the same as in one draw, without a float64 copy of a whole input."""


def _draw(
    rng: np.random.Generator, shape: list[int], dtype: np.dtype, value_range: Range | None
) -> np.ndarray:
    """One generated input: strings s0, s1, ...; booleans fair coins; integers uniform in [0, 16) and
    floats standard normal (drawn in float64, then rounded to ``dtype``), or both uniform in
    ``value_range``."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for start in range(0, flat.size, _DRAW_CHUNK):
        n = min(_DRAW_CHUNK, flat.size - start)
        if dtype.kind == "O":
            flat[start : start + n] = [f"s{i}" for i in range(start, start + n)]
        elif dtype.kind == "b":
            flat[start : start + n] = rng.random(n) < 0.5
        elif dtype.kind in "iu":
            flat[start : start + n] = _integers(rng, n, dtype, value_range)
        elif value_range is not None:
            flat[start : start + n] = rng.uniform(*_float_range(value_range, dtype), n)
        else:
            flat[start : start + n] = rng.standard_normal(n)
    return out


def _float_range(value_range: Range, dtype: np.dtype) -> tuple[float, float]:
    """``value_range`` within the finite values of the float ``dtype`` (as integers keep to their type's:
    a float16 input of --val-range -1e30,1e30 is drawn in [-65504, 65504], never rounded to inf)."""
    info = np.finfo(dtype) if dtype.kind == "f" else None
    if info is None:
        return value_range[0], value_range[1]
    lo, hi = max(value_range[0], float(info.min)), min(value_range[1], float(info.max))
    if lo > hi:
        raise CustomOpsError(
            f"--val-range {value_range[0]:g},{value_range[1]:g} holds no finite {dtype} value"
        )
    return lo, hi


def _integers(rng: np.random.Generator, n: int, dtype: np.dtype, value_range: Range | None) -> np.ndarray:
    if value_range is None:
        return rng.integers(0, 16, size=n)
    info = np.iinfo(dtype)
    lo = max(math.ceil(value_range[0]), int(info.min))
    hi = min(math.floor(value_range[1]), int(info.max))
    if lo > hi:
        raise CustomOpsError(f"--val-range {value_range[0]:g},{value_range[1]:g} holds no {dtype} value")
    return rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if dtype != np.uint64 else np.uint64)


def load_inputs(path: str | os.PathLike[str], model: ModelProto) -> dict[str, np.ndarray]:
    """Inputs from an .npz file (keys = graph input names; never unpickled: strings as unicode or bytes
    arrays), a Polygraphy inputs file (.json, as ``polygraphy run --save-inputs`` writes it), a directory
    of Polygraphy's per-iteration inputs files (``--save-inputs DIR``: its first) or an ONNX test-case
    directory (input_N.pb, directly or in test_data_set_0/); at most :data:`INPUT_LIMIT` bytes in all."""
    p = Path(path)
    if not p.exists():
        shape = re.fullmatch(r".+:\[[\d, ]*\]", str(path))  # Polygraphy's --inputs NAME:[DIMS]: shapes
        hint = ": a shape NAME:[DIMS] goes to --input-shapes (Polygraphy's --inputs)" if shape else ""
        raise CustomOpsError(f"inputs {str(p)!r} do not exist{hint}")
    if p.suffix.lower() == ".json":
        return read_polygraphy_json(p)
    if p.is_dir():
        sub = p / "test_data_set_0"
        if not sub.is_dir() and not any(p.glob("input_*.pb")):
            first = first_iteration(p)
            if first is not None:
                return read_polygraphy_json(first, below=p)
        names = [v.name for v in graph_inputs(model)]
        return read_inputs(sub if sub.is_dir() else p, names, INPUT_LIMIT)
    return read_npz(p, INPUT_LIMIT, "inputs file")


def check_inputs(model: ModelProto, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validate names, element types and fixed dimensions of ``feed`` against the graph inputs (tensors
    only), and its size: at most :data:`INPUT_LIMIT` bytes (customops.dtypes.real_nbytes), counted before
    strings are made Python objects."""
    check_tensor_interface(model)
    expected = {v.name: v for v in graph_inputs(model)}
    defaults = {t.name for t in model.graph.initializer}
    for name in feed:
        if name in defaults:
            raise CustomOpsError(
                f"input {name!r} has a value in the model (an initializer of that name): compare runs the "
                "model's value, and does not take another for it"
            )
        if name not in expected:
            raise CustomOpsError(
                f"input {name!r} is not a graph input (graph inputs: {', '.join(map(repr, expected)) or 'none'})"
            )
    out: dict[str, np.ndarray] = {}
    total = 0
    for name, v in expected.items():
        if name not in feed:
            raise CustomOpsError(f"graph input {name!r} has no value in the given inputs")
        value = dtypes.native_order(np.asarray(feed[name]))
        total += dtypes.real_nbytes(value)
        check_declared(total, "the inputs", INPUT_LIMIT)
        elem, declared = _declared(v)
        want = dtypes.numpy_dtype(elem) if elem else value.dtype
        if value.dtype.kind in "US" and want.kind == "O":
            value = _strings(name, value)
        if value.dtype != want:
            raise CustomOpsError(f"input {name!r} has dtype {value.dtype}, the model declares {want}")
        if v.type.tensor_type.HasField("shape"):
            if value.ndim != len(declared):
                raise CustomOpsError(
                    f"input {name!r} has shape {value.shape!r}, the model declares rank {len(declared)}"
                )
            for axis, (got, dim) in enumerate(zip(value.shape, declared, strict=True)):
                if isinstance(dim, int) and dim != got:
                    raise CustomOpsError(
                        f"input {name!r} has shape {value.shape!r}, the model declares {dim} on axis {axis}"
                    )
        out[name] = value
    return out


def _strings(name: str, value: np.ndarray) -> np.ndarray:
    """A unicode or bytes array as the object array of str that ONNX Runtime's Python API takes (it would
    carry a bytes element as its repr)."""
    if value.dtype.kind == "U":
        return value.astype(object)
    try:
        return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value)
    except UnicodeDecodeError:
        raise CustomOpsError(
            f"input {name!r} holds bytes that are not UTF-8, which ONNX Runtime's Python API cannot pass "
            "exactly: give UTF-8 strings"
        ) from None


def read_polygraphy_json(path: Path, below: Path | None = None) -> dict[str, np.ndarray]:
    """The first feed of a Polygraphy inputs file: a JSON list of feeds (``polygraphy run --save-inputs
    FILE.json``) or one feed (each file of ``--save-inputs DIR``), a feed being {name: {"array": base64
    of a .npy, "polygraphy_class": "ndarray"}} (never unpickled: a .npy of Python objects is refused);
    ``below``: the directory the user named, read through no link below it."""
    what = f"{str(path)!r} is not a Polygraphy inputs file"
    data = read_json(path, INPUT_LIMIT // 3 * 4 + (1 << 20), "inputs file", max_depth=16, below=below)
    if polygraphy_class(data) == "RunResults":
        raise CustomOpsError(
            f"{what}: it holds a runner's outputs (polygraphy run --save-outputs); inputs are saved with --save-inputs"
        )
    feed = (data[0] if data else None) if isinstance(data, list) else data
    if not isinstance(feed, dict) or not feed:
        raise CustomOpsError(f"{what}: expected a list of {{input name: array}} objects, or one of them")
    return decode_arrays(feed, what, "input", INPUT_LIMIT)
