"""compare's inputs: generated from the declared types and shapes (seeded), or read from an .npz file or
an ONNX test-case directory, and checked against the graph inputs; at most :data:`INPUT_LIMIT` bytes, as
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
from customops.errors import CustomOpsError
from customops.eval.cases.testcase import read_inputs
from customops.eval.running.messages import described
from customops.safeio import open_bounded, printable, read_json, write_atomic

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
            flat[start : start + n] = rng.uniform(value_range[0], value_range[1], n)
        else:
            flat[start : start + n] = rng.standard_normal(n)
    return out


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
    return read_npz(p)


def first_iteration(directory: Path) -> Path | None:
    """The first (by name, as Polygraphy orders them) ``*.json`` file of a directory of Polygraphy's
    per-iteration files (``polygraphy run --save-inputs DIR`` or ``--save-outputs DIR``: one file per
    iteration, ``0000000000.json`` first); None when it holds none."""
    try:
        names = [e.name for e in os.scandir(directory) if e.name.lower().endswith(".json")]
    except OSError as exc:
        raise CustomOpsError(f"cannot list {str(directory)!r}: {exc.strerror or exc}") from None
    return directory / min(names) if names else None


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz file, read as untrusted: at most :data:`INPUT_LIMIT` bytes on disk and in
    memory, every header checked before numpy allocates, never unpickled."""
    with open_bounded(path, INPUT_LIMIT, "inputs file") as f:
        return npz_arrays(f, f"{str(path)!r} is not a readable .npz file", repr(str(path)))[0]


def npz_arrays(f: Any, what: str, name: str, spent: int = 0) -> tuple[dict[str, np.ndarray], int]:
    """The arrays of the .npz archive open as ``f`` (a seekable binary file), and the bytes they take in
    memory: every member's header checked before numpy allocates (they and ``spent``, bytes already
    taken, at most :data:`INPUT_LIMIT` together), never unpickled; CustomOpsError naming ``what``
    (``name``: the file, or the array that holds the archive, as the message shows it) otherwise."""
    import zipfile

    try:
        with zipfile.ZipFile(f) as z:
            declared = sum(info.file_size for info in z.infolist())
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise CustomOpsError(f"{what} ({type(exc).__name__}: an .npz is a zip of .npy arrays)") from None
    if declared > INPUT_LIMIT - spent:
        raise CustomOpsError(f"{what}: its arrays take {declared} bytes, over the {INPUT_LIMIT} allowed")
    f.seek(0)
    total = _check_npz_headers(f, what, name, spent)
    f.seek(0)
    return _npz_arrays(f, name, what), total


def npy_declared(fp: Any, available: int) -> int:
    """The bytes the .npy array at ``fp`` will take in memory once read (customops.dtypes.declared_nbytes of
    the shape and dtype its header declares); ValueError when the header declares more data than the
    ``available`` bytes hold, or a dimension that is negative or past int64 (numpy reads any integer
    there, then counts the elements in int64: a traceback, or a wrapped count and an array of another
    shape). numpy allocates what the header declares before reading the data, so a crafted header is
    checked first; a zero-size element type (``<U0``) holds no data but still counts its elements."""
    start = fp.tell()
    version = np.lib.format.read_magic(fp)
    header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = header(fp)
    if not all(0 <= d < 2**63 for d in shape):  # numpy takes any int; its int64 count then overflows or wraps
        raise ValueError(f"its header declares the shape {shape!r}: each dimension from 0 to 2**63 - 1")
    if math.prod(shape) * dtype.itemsize > available - (fp.tell() - start):
        raise ValueError("its header declares more data than it holds")
    return dtypes.declared_nbytes(shape, dtype)


def _check_declared(total: int, what: str) -> None:
    if total > INPUT_LIMIT:
        raise CustomOpsError(
            f"{what}: its arrays would take {total} bytes in memory (a string element counts "
            f"{dtypes.STRING_ELEMENT} bytes and more, any other at least 1), over the {INPUT_LIMIT} allowed"
        )


def _check_npz_headers(f: Any, what: str, name: str, spent: int = 0) -> int:
    """Refuse an .npz member that is not a .npy array or whose header declares more array bytes than the
    member holds, and arrays that would take more than :data:`INPUT_LIMIT` bytes in memory together with
    ``spent``; returns the bytes they take."""
    import zipfile

    total = spent
    try:
        with zipfile.ZipFile(f) as z:
            for info in z.infolist():
                # every member, whatever its name: numpy reads one named 'x' as an array too (as 'x.npy')
                with z.open(info) as member:
                    try:
                        total += npy_declared(member, info.file_size)
                    except ValueError as exc:
                        raise CustomOpsError(f"{what}: {info.filename!r}: {exc}") from None
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise CustomOpsError(f"{what} ({described(exc)})") from None
    _check_declared(total, name)
    return total


def _npz_arrays(f: Any, name: str, what: str) -> dict[str, np.ndarray]:
    try:
        with np.load(f, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise CustomOpsError(
                f"{name} holds Python objects, which are never unpickled: save strings as unicode "
                "or bytes arrays (np.str_, np.bytes_)"
            ) from None
        raise CustomOpsError(f"{what} ({described(exc)})") from None
    except Exception as exc:
        raise CustomOpsError(f"{what} ({type(exc).__name__})") from None


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
        _check_declared(total, "the inputs")
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


POLYGRAPHY_CLASS = "polygraphy_class"
"""The key that names the class an object of Polygraphy's JSON files encodes (``ndarray``, ``LazyArray``,
``IterationResult``, ``RunResults``)."""

LAZY_CLASSES = ("LazyArray", "LazyNumpyArray")
"""Polygraphy's wrappers of an output array in a RunResults file (``{"values": <ndarray>,
"polygraphy_class": ...}``): ``LazyArray`` since Polygraphy 0.48, ``LazyNumpyArray`` before."""

_LEGACY_PREFIX, _LEGACY_MARK = "__polygraphy_encoded_", "polygraphy_serialized_json_type"
"""Polygraphy's older way of naming a class: ``{"__polygraphy_encoded_<class>": "polygraphy_serialized_json_type"}``."""


def polygraphy_class(value: Any) -> str | None:
    """The class an object of Polygraphy's JSON files encodes (its ``polygraphy_class``, or the older
    ``__polygraphy_encoded_<class>`` marker); None: a plain object."""
    if not isinstance(value, dict):
        return None
    found = value.get(POLYGRAPHY_CLASS)
    if isinstance(found, str):
        return found
    legacy = (k for k, v in value.items() if str(k).startswith(_LEGACY_PREFIX) and v == _LEGACY_MARK)
    return next((str(k).removeprefix(_LEGACY_PREFIX) for k in legacy), None)


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
    return decode_arrays(feed, what, "input")


def decode_arrays(encoded: dict[str, Any], what: str, noun: str) -> dict[str, np.ndarray]:
    """Polygraphy's encoded arrays ({name: {"array": base64 of a .npy, "polygraphy_class": "ndarray"}},
    each possibly wrapped as an output's lazy array, :data:`LAZY_CLASSES`; older Polygraphy wrote a
    compressed .npz in place of the .npy: its first array), decoded without pickle, at most
    :data:`INPUT_LIMIT` bytes in memory together; CustomOpsError naming ``what`` and the ``noun``
    (input, output) otherwise."""
    import base64
    import binascii

    arrays, total = {}, 0
    for name, value in encoded.items():
        if polygraphy_class(value) in LAZY_CLASSES:
            value = value.get("values")
        data = value.get("array") if isinstance(value, dict) else None
        if not isinstance(data, str):
            torch = isinstance(value, dict) and "tensor" in value
            why = (
                ": a torch tensor (saved by pickle, which is never read): save numpy arrays" if torch else ""
            )
            raise CustomOpsError(f"{what}: {noun} {str(name)!r} is not an encoded array{why}")
        label = f"{what}: {noun} {str(name)!r}"
        try:
            arrays[str(name)], total = _decoded(base64.b64decode(data, validate=True), label, total)
        except (ValueError, binascii.Error) as exc:
            raise CustomOpsError(f"{label} ({described(exc)})") from None
    return arrays


def _decoded(raw: bytes, label: str, spent: int) -> tuple[np.ndarray, int]:
    """The array of one of Polygraphy's encoded arrays (a .npy, or an .npz: its first array), and the
    bytes taken in memory with ``spent``, checked against :data:`INPUT_LIMIT` before numpy allocates."""
    import io

    if raw[:2] == b"PK":  # a zip: the compressed .npz of older Polygraphy
        found, total = npz_arrays(io.BytesIO(raw), label, label, spent)
        if not found:
            raise CustomOpsError(f"{label}: an .npz that holds no array")
        return next(iter(found.values())), total
    total = spent + npy_declared(io.BytesIO(raw), len(raw))
    _check_declared(total, label)
    try:
        return np.load(io.BytesIO(raw), allow_pickle=False), total
    except ValueError:
        raise  # named by the caller (decode_arrays), as a header's faults are
    except Exception as exc:  # numpy on a crafted .npy: anything it raises is this file's fault
        raise CustomOpsError(f"{label} ({type(exc).__name__})") from None


def encoded_array(value: np.ndarray) -> dict[str, str]:
    """One array as Polygraphy's JSON files hold it: base64 of its .npy (strings as a unicode array), of
    class ``ndarray``."""
    import base64
    import io

    buffer = io.BytesIO()
    np.save(buffer, value.astype(str) if value.dtype == object else value, allow_pickle=False)
    return {"array": base64.b64encode(buffer.getvalue()).decode(), POLYGRAPHY_CLASS: "ndarray"}


def save_arrays(path: str | os.PathLike[str], arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` whole or not at all: an .npz (strings as unicode arrays, loadable
    without pickle), or, for a .json path, a Polygraphy inputs file (``polygraphy run --load-inputs``)."""
    import io
    import json

    if str(path).lower().endswith(".json"):
        write_atomic(path, json.dumps([{k: encoded_array(v) for k, v in arrays.items()}]) + "\n")
        return
    buffer = io.BytesIO()
    np.savez(buffer, **{k: (v.astype(str) if v.dtype == object else v) for k, v in arrays.items()})
    write_atomic(path, buffer.getvalue())
