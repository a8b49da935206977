"""``customops compare``: one model with ORT's built-in kernels (side A, *builtin*) and with ours (side B,
*custom*), node by node, with onnx.reference as the third vote.

For every swapped node of the main graph the report says whether its output differs inside the model,
whether the difference starts at that node (the node alone, fed A's own inputs to it, still differs) or
was carried in from upstream, and which side leaves the spec (the side the reference does not agree with).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, helper

from customops import dtypes
from customops.errors import CustomOpsError
from customops.eval import sides
from customops.eval.attribution import attribution
from customops.eval.messages import described
from customops.eval.metrics import DEFAULT_TOLERANCES, compare_arrays, tolerance_for
from customops.eval.sides import SideRun
from customops.eval.testcase import read_inputs, tensor_proto, tensor_value, write_test_case
from customops.safeio import (
    atomic_dir,
    open_bounded,
    printable,
    safe_component,
)

REFERENCE_LIMIT = 200_000
"""Inputs with more elements than this are not given to onnx.reference (it interpolates element by element)."""

DEFAULT_DIM = 4
"""Size given to a symbolic dimension without ``--dim``."""

INPUT_LIMIT = 4 * 2**30
"""Most bytes of inputs read from a file or generated (reckoned at 8 bytes an element while generating):
both sides then run the model on them, and more than this does not fit this tool's purpose on the
machines it runs on."""


def log(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------
# inputs


def _graph_inputs(model: ModelProto) -> list[onnx.ValueInfoProto]:
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
        dims[name.strip()] = int(value)
    return dims


def check_settings(
    *, rtol: float | None = None, atol: float | None = None, reference_limit: int = 0, seed: int = 0
) -> None:
    """Raise CustomOpsError, naming the option, for a tolerance that is negative or not finite, or a
    negative reference limit or seed."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise CustomOpsError(f"--{name} {value!r} must be a finite number at least 0")
    if reference_limit < 0:
        raise CustomOpsError(f"--reference-limit {reference_limit!r} must be at least 0")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise CustomOpsError(f"--seed {seed!r} must be at least 0")


def generate_inputs(
    model: ModelProto, seed: int = 0, dims: dict[str, int] | None = None
) -> dict[str, np.ndarray]:
    """Seeded inputs from each graph input's declared type and shape; symbolic dimensions take their value
    from ``dims``, else :data:`DEFAULT_DIM`. Floats are standard normal, integers uniform in [0, 16)."""
    check_settings(seed=seed)
    rng = np.random.default_rng(seed)
    dims = dims or {}
    symbolic = {d for v in _graph_inputs(model) for d in _declared(v)[1] if isinstance(d, str)}
    for name in dims:
        if name not in symbolic:
            raise CustomOpsError(
                f"--dim {name!r} names no symbolic dimension of the graph inputs "
                f"(they have: {', '.join(repr(d) for d in sorted(symbolic)) or 'none'})"
            )
    shapes = {}
    for v in _graph_inputs(model):
        elem, declared = _declared(v)
        if not elem:
            raise CustomOpsError(f"graph input {v.name!r} has no element type; pass --inputs")
        shape = [d if isinstance(d, int) else dims.get(d or "", DEFAULT_DIM) for d in declared]
        shapes[v.name] = (shape, dtypes.numpy_dtype(elem))
    _check_generated_size(shapes)
    return {name: _draw(rng, shape, dtype) for name, (shape, dtype) in shapes.items()}


def _check_generated_size(shapes: dict[str, tuple[list[int], np.dtype]]) -> None:
    """Refuse, before drawing anything, a negative size and inputs that would take more than
    :data:`INPUT_LIMIT` bytes (every dimension is checked, so that a zero cannot hide a huge one)."""
    total = 0
    for name, (shape, dtype) in shapes.items():
        for d in shape:
            if d < 0 or d * 8 > INPUT_LIMIT:
                raise CustomOpsError(
                    f"graph input {name!r} declares a dimension of {d}: each must be at least 0 and the "
                    f"inputs at most {INPUT_LIMIT / 2**30:.0f} GiB; pass --inputs"
                )
        total += math.prod(shape) * max(dtype.itemsize, 8)
    if total > INPUT_LIMIT:
        raise CustomOpsError(
            f"the generated inputs would take {total / 2**30:.1f} GiB, over the {INPUT_LIMIT / 2**30:.0f} GiB "
            "allowed: give smaller --dim sizes, or pass --inputs"
        )


_DRAW_CHUNK = 1 << 20
"""Values drawn at a time: the stream is the same as in one draw, without a float64 copy of a whole input."""


def _draw(rng: np.random.Generator, shape: list[int], dtype: np.dtype) -> np.ndarray:
    """One generated input: strings s0, s1, ...; booleans fair coins; integers uniform in [0, 16); floats
    standard normal (drawn in float64, then rounded to ``dtype``)."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for start in range(0, flat.size, _DRAW_CHUNK):
        n = min(_DRAW_CHUNK, flat.size - start)
        if dtype.kind == "O":
            flat[start : start + n] = [f"s{i}" for i in range(start, start + n)]
        elif dtype.kind == "b":
            flat[start : start + n] = rng.random(n) < 0.5
        elif dtype.kind in "iu":
            flat[start : start + n] = rng.integers(0, 16, size=n)
        else:
            flat[start : start + n] = rng.standard_normal(n)
    return out


def load_inputs(path: str | os.PathLike[str], model: ModelProto) -> dict[str, np.ndarray]:
    """Inputs from an .npz file (keys = graph input names; never unpickled: strings as unicode or bytes
    arrays) or an ONNX test-case directory (input_N.pb, directly or in test_data_set_0/); at most
    :data:`INPUT_LIMIT` bytes in all."""
    p = Path(path)
    if not p.exists():
        raise CustomOpsError(f"inputs {str(p)!r} do not exist")
    if p.is_dir():
        sub = p / "test_data_set_0"
        names = [v.name for v in _graph_inputs(model)]
        return read_inputs(sub if sub.is_dir() else p, names, INPUT_LIMIT)
    return _read_npz(p)


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    import zipfile

    what = f"{str(path)!r} is not a readable .npz file"
    with open_bounded(path, INPUT_LIMIT, "inputs file") as f:
        try:
            with zipfile.ZipFile(f) as z:
                declared = sum(info.file_size for info in z.infolist())
        except (OSError, zipfile.BadZipFile, ValueError) as exc:
            raise CustomOpsError(f"{what} ({type(exc).__name__}: an .npz is a zip of .npy arrays)") from None
        if declared > INPUT_LIMIT:
            raise CustomOpsError(f"{what}: its arrays take {declared} bytes, over the {INPUT_LIMIT} allowed")
        f.seek(0)
        return _npz_arrays(f, path, what)


def _npz_arrays(f: Any, path: Path, what: str) -> dict[str, np.ndarray]:
    try:
        with np.load(f, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise CustomOpsError(
                f"{str(path)!r} holds Python objects, which are never unpickled: save strings as unicode "
                "or bytes arrays (np.str_, np.bytes_)"
            ) from None
        raise CustomOpsError(f"{what} ({described(exc)})") from None
    except Exception as exc:
        raise CustomOpsError(f"{what} ({type(exc).__name__})") from None


def check_inputs(model: ModelProto, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validate names, element types and fixed dimensions of ``feed`` against the graph inputs."""
    expected = {v.name: v for v in _graph_inputs(model)}
    for name in feed:
        if name not in expected:
            raise CustomOpsError(
                f"input {name!r} is not a graph input (graph inputs: {', '.join(map(repr, expected)) or 'none'})"
            )
    out: dict[str, np.ndarray] = {}
    for name, v in expected.items():
        if name not in feed:
            raise CustomOpsError(f"graph input {name!r} has no value in the given inputs")
        value = np.asarray(feed[name])
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


# ---------------------------------------------------------------------------------------------------------
# running


def _with_outputs(model: ModelProto, names: Sequence[str], types: dict[str, int]) -> ModelProto:
    out = ModelProto()
    out.CopyFrom(model)
    present = {o.name for o in out.graph.output}
    for name in names:
        if name and name not in present:
            elem = types.get(name)
            if elem:
                out.graph.output.append(helper.make_tensor_value_info(name, elem, None))
            else:
                out.graph.output.append(helper.make_empty_tensor_value_info(name))
            present.add(name)
    return out


def run_side(model: ModelProto, feed: dict[str, np.ndarray], custom: bool, repeats: int = 0) -> SideRun:
    """Run ``model`` on one side, in that side's child process (customops.eval.sides): a crash is the side's
    error; with ``repeats`` > 0 also profile that many runs for per-node times."""
    return sides.run_side(model.SerializeToString(), feed, custom, repeats)


def _node_model(
    node: NodeProto,
    values: dict[str, np.ndarray],
    opset_imports: Sequence[Any],
    ir_version: int,
    constants: frozenset[str] = frozenset(),
) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """``node`` alone in a model fed ``values`` (by the node's input names); inputs named in ``constants``
    (the original model's initializers) stay initializers, as runtimes treat constants differently."""
    inputs, feed, inits = [], {}, []
    for name in node.input:
        if not name or name in feed or name in {t.name for t in inits}:
            continue
        value = np.asarray(values[name])
        if name in constants:
            inits.append(tensor_proto(value, name))
            continue
        elem = dtypes.code_of(value.dtype)
        inputs.append(helper.make_tensor_value_info(name, elem, list(value.shape)))
        feed[name] = value
    outputs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    clean = NodeProto()
    clean.CopyFrom(node)
    graph = helper.make_graph([clean], "isolated", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[o for o in opset_imports if o.domain in ("", "ai.onnx")])
    model.ir_version = ir_version
    return model, feed


def _run_reference(model: ModelProto, feed: dict[str, np.ndarray]) -> np.ndarray:
    """The node's output on onnx.reference. Its numpy warnings (NaN and inf arithmetic on such inputs) are
    silenced: they are not ours to report, and under ``-W error`` they cost the third vote."""
    import warnings

    from onnx.reference import ReferenceEvaluator

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(ReferenceEvaluator(model).run(None, feed)[0])


@dataclass
class Isolated:
    """The node alone on A's inputs: each side's output or error."""

    model: ModelProto
    feed: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray | None]
    errors: dict[str, str | None]


def run_isolated(
    node: NodeProto, values: dict[str, np.ndarray], model: ModelProto, reference_limit: int = REFERENCE_LIMIT
) -> Isolated:
    """Run ``node`` alone on the built-in side, on ours and with onnx.reference."""
    from customops.model.rewriter import rewrite_model

    constants = frozenset(t.name for t in model.graph.initializer)
    one, feed = _node_model(node, values, model.opset_import, model.ir_version, constants)
    outputs: dict[str, np.ndarray | None] = {"builtin": None, "custom": None, "reference": None}
    errors: dict[str, str | None] = {"builtin": None, "custom": None, "reference": None}
    b = run_side(one, feed, custom=False)
    if b.error:
        errors["builtin"] = b.error
    else:
        outputs["builtin"] = next(iter(b.values.values()))
    rewritten = rewrite_model(one)
    if rewritten.skipped:
        errors["custom"] = f"not swapped: {rewritten.skipped[0].reason}"
    else:
        c = run_side(rewritten.model, feed, custom=True)
        if c.error:
            errors["custom"] = c.error
        else:
            outputs["custom"] = next(iter(c.values.values()))
    size = sum(int(np.asarray(v).size) for v in feed.values())
    if size > reference_limit:
        errors["reference"] = (
            f"not run: the inputs have {size} elements, over the reference limit {reference_limit}"
        )
    else:
        try:
            outputs["reference"] = _run_reference(one, feed)
        except Exception as exc:
            errors["reference"] = described(exc)
    return Isolated(one, feed, outputs, errors)


# ---------------------------------------------------------------------------------------------------------
# verdicts


def _metrics(
    a: np.ndarray | None, b: np.ndarray | None, rtol: float | None, atol: float | None
) -> dict[str, Any] | None:
    if a is None or b is None:
        return None
    r, t = tolerance_for(np.asarray(b).dtype, rtol, atol)
    return compare_arrays(a, b, r, t)


def attribute(iso: Isolated, rtol: float | None, atol: float | None) -> tuple[str, dict[str, Any]]:
    """Who leaves the spec on the isolated node (customops.eval.attribution): returns the attribution and
    the three pairwise metrics."""
    o, e = iso.outputs, iso.errors
    pairs = {
        "builtin_vs_custom": _metrics(o["builtin"], o["custom"], rtol, atol),
        "builtin_vs_reference": _metrics(o["builtin"], o["reference"], rtol, atol),
        "custom_vs_reference": _metrics(o["custom"], o["reference"], rtol, atol),
    }
    failed = {side: bool(e[side]) for side in ("builtin", "custom")}
    if any(failed.values()):
        return attribution(failed, False, None, None), pairs

    def passes(key: str) -> bool | None:
        m = pairs[key]
        return None if m is None else bool(m["pass"])

    verdict = attribution(
        failed,
        bool(passes("builtin_vs_custom")),
        passes("builtin_vs_reference"),
        passes("custom_vs_reference"),
    )
    return verdict, pairs


# ---------------------------------------------------------------------------------------------------------
# the comparison


@dataclass
class Comparison:
    """The report (JSON-able), the tensors behind it (key -> (A, B)) and the isolated runs by node."""

    report: dict[str, Any]
    tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]]
    isolated: dict[str, Isolated]

    @property
    def exit_status(self) -> int:
        return 0 if self.report["verdict"] == "agree" else 1


def compare_model(
    model: ModelProto,
    feed: dict[str, np.ndarray],
    *,
    ops: Sequence[str] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    repeats: int = 3,
    reference_limit: int = REFERENCE_LIMIT,
    model_name: str = "<model>",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Compare ``model`` on ``feed`` between ORT's built-in kernels and ours; see the module docstring.
    ``rtol`` and ``atol`` (default: per dtype) must be finite and at least 0, ``reference_limit`` at
    least 0 (0: onnx.reference is given empty inputs only)."""
    check_settings(rtol=rtol, atol=atol, reference_limit=reference_limit)
    import onnxruntime as ort

    import customops
    from customops.model.rewriter import infer_types, is_rewritten, restore, rewrite_model, value_types

    say = progress or (lambda _m: None)
    count = is_rewritten(model)
    if count:
        say(
            f"the model is already rewritten ({count} node(s) in the customops domain): comparing its restored form"
        )
        model = restore(model)
    result = rewrite_model(model, ops=ops)
    rewritten = result.model
    types: dict[str, int] = {}
    value_types(infer_types(model).graph, types)
    main_nodes = {(n.name or (n.output[0] if n.output else "")): n for n in model.graph.node}

    swapped = [r for r in result.swapped if r.scope == "graph" and r.node in main_nodes]
    exposed: list[str] = []
    for r in swapped:
        node = main_nodes[r.node]
        exposed.extend(node.output[:1])
        exposed.extend(i for i in node.input if i)
    inits = {t.name: tensor_value(t, "initializer") for t in model.graph.initializer}
    exposed = [n for n in dict.fromkeys(exposed) if n not in inits and n not in feed]

    say("running the model with ORT's built-in kernels")
    a_pure = run_side(model, feed, custom=False, repeats=repeats)
    say("running the model with customops kernels")
    b_pure = run_side(rewritten, feed, custom=True, repeats=repeats)
    if a_pure.error and b_pure.error:
        raise CustomOpsError(
            f"the model runs on neither side (built-in: {a_pure.error}; custom: {b_pure.error})"
        )
    a_exp = (
        run_side(_with_outputs(model, exposed, types), feed, custom=False)
        if exposed and not a_pure.error
        else SideRun()
    )
    b_exp = (
        run_side(_with_outputs(rewritten, exposed, types), feed, custom=True)
        if exposed and not b_pure.error
        else SideRun()
    )

    tensors: dict[str, tuple[np.ndarray | None, np.ndarray | None]] = {}
    outputs = []
    for o in model.graph.output:
        a = a_pure.values.get(o.name)
        b = b_pure.values.get(o.name)
        m = _metrics(b, a, rtol, atol)
        tensors[o.name] = (a, b)
        outputs.append(
            {
                "name": o.name,
                "metrics": m,
                "verdict": "side-failed" if m is None else ("agree" if m["pass"] else "disagree"),
            }
        )

    nodes = []
    isolated: dict[str, Isolated] = {}
    known_values = {**inits, **feed, **a_exp.values}
    if a_pure.error:  # no value from A: feed the isolated node B's values instead (said in the report)
        known_values = {**inits, **feed, **b_exp.values}
    for i, r in enumerate(swapped):
        node = main_nodes[r.node]
        say(f"node {i + 1}/{len(swapped)}: {r.node} [{r.op}] alone on three sides")
        out_name = node.output[0]
        a_val, b_val = a_exp.values.get(out_name), b_exp.values.get(out_name)
        tensors[r.node] = (a_val, b_val)
        in_model = _metrics(b_val, a_val, rtol, atol)
        entry: dict[str, Any] = {
            "node": r.node,
            "op": r.op,
            "output": out_name,
            "scope": r.scope,
            "in_model": in_model,
            "isolated": None,
            "origin": "unknown",
            "attribution": "unknown",
            "verdict": "agree",
            "time_us": {"builtin": a_pure.times.get(node.name), "custom": b_pure.times.get(node.name)},
            "fed_from": "builtin" if not a_pure.error else "custom",
        }
        if all(n in known_values for n in node.input if n):
            iso = run_isolated(node, known_values, model, reference_limit)
            isolated[r.node] = iso
            attribution, pairs = attribute(iso, rtol, atol)
            entry["isolated"] = {**pairs, "errors": iso.errors}
            entry["attribution"] = attribution
            starts = attribution not in ("agree", "reference-odd-one-out")
            in_model_differs = in_model is not None and not in_model["pass"]
            entry["origin"] = "starts-here" if starts else ("carried-in" if in_model_differs else "none")
            if attribution.endswith("cannot-run"):
                entry["verdict"] = "agree" if attribution == "both-cannot-run" else "side-failed"
            elif starts or in_model_differs:
                entry["verdict"] = "disagree"
        elif in_model is not None and not in_model["pass"]:
            entry["verdict"] = "disagree"
        if in_model is None and (a_exp.error or b_exp.error) and entry["verdict"] == "agree":
            entry["verdict"] = "side-failed"
        nodes.append(entry)

    inner = [
        {
            "node": r.node,
            "op": r.op,
            "scope": r.scope,
            "note": "inside a subgraph or function: compared through the graph outputs only",
        }
        for r in result.swapped
        if r not in swapped
    ]
    skipped = [{"node": r.node, "op": r.op, "reason": r.reason, "scope": r.scope} for r in result.skipped]

    failed_side = bool(a_pure.error or b_pure.error)
    disagreements = [n for n in nodes if n["verdict"] != "agree"] + [
        o for o in outputs if o["verdict"] != "agree"
    ]
    verdict = "failed" if failed_side else ("disagree" if disagreements else "agree")
    summary = _summary(verdict, nodes, outputs, a_pure, b_pure, len(result.swapped))
    tolerance_doc = {k: {"rtol": v[0], "atol": v[1]} for k, v in DEFAULT_TOLERANCES.items()}
    if rtol is not None or atol is not None:
        tolerance_doc = {"all": {"rtol": rtol, "atol": atol}}
    report = {
        "model": model_name,
        "ort_version": ort.__version__,
        "customops_version": customops.__version__,
        "seed": seed,
        "verdict": verdict,
        "summary": summary,
        "tolerances": tolerance_doc,
        "sides": {
            "builtin": {"ok": not a_pure.error, "error": a_pure.error},
            "custom": {"ok": not b_pure.error, "error": b_pure.error},
        },
        "outputs": outputs,
        "nodes": nodes,
        "inner_nodes": inner,
        "skipped": skipped,
    }
    return Comparison(report, tensors, isolated)


def _summary(
    verdict: str, nodes: list[dict], outputs: list[dict], a: SideRun, b: SideRun, swapped: int
) -> str:
    if verdict == "failed":
        side = "built-in" if a.error else "custom"
        return f"FAILED: the model does not run on the {side} side: {a.error or b.error}"
    bad = [n for n in nodes if n["verdict"] != "agree"]
    bad_out = [o for o in outputs if o["verdict"] != "agree"]
    if verdict == "agree":
        return f"AGREE: {len(outputs)} output(s) and {len(nodes)} swapped node(s) match ({swapped} swapped in all)"
    parts = []
    first = next((n for n in bad if n["origin"] == "starts-here"), bad[0] if bad else None)
    if first is not None:
        parts.append(f"first difference starts at {first['node']!r} [{first['op']}]: {first['attribution']}")
    return "; ".join([f"DISAGREE: {len(bad)} node(s), {len(bad_out)} output(s) differ", *parts])


# ---------------------------------------------------------------------------------------------------------
# output


def _fmt(x: Any, spec: str = ".3g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return format(x, spec)
    return str(x)


def format_table(report: dict[str, Any]) -> str:
    """The human-readable table of a report, ending with the one-line verdict."""
    head = ("node / output", "op", "shape", "dtype", "max abs", "max rel", "mism.", "ulp", "verdict")
    rows: list[tuple[str, ...]] = [(*head, "attribution", "starts", "A µs", "B µs")]

    def row(name: str, op: str, m: dict[str, Any], verdict: str, more: tuple[str, ...], times: dict) -> None:
        stats = (m.get("max_abs"), m.get("max_rel"), m.get("mismatches"), m.get("max_ulp"))
        shape = "x".join(map(str, m.get("shape_b", []))) or "-"
        timing = (_fmt(times.get("builtin"), ".0f"), _fmt(times.get("custom"), ".0f")) if times else ("", "")
        rows.append((name, op, shape, m.get("dtype_b", "-"), *map(_fmt, stats), verdict, *more, *timing))

    for o in report["outputs"]:
        row(o["name"], "(graph output)", o["metrics"] or {}, o["verdict"], ("", ""), {})
    for n in report["nodes"]:
        m = n["in_model"] or ((n["isolated"] or {}).get("builtin_vs_custom") or {})
        row(n["node"], n["op"], m, n["verdict"], (n["attribution"], n["origin"]), n["time_us"])
    rows = [tuple(printable(c) for c in r) for r in rows]  # names from the model: no control characters
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for n in report["nodes"]:
        errors = (n["isolated"] or {}).get("errors") or {}
        for side, err in errors.items():
            if err and not (side == "reference" and n["verdict"] == "agree"):
                lines.append(f"  {n['node']}: {side}: {err}")
    for s in report["skipped"]:
        lines.append(f"  skipped {s['node']} [{s['op']}]: {s['reason']}")
    for side, info in report["sides"].items():
        if info["error"]:
            lines.append(f"  {side} side failed: {info['error']}")
    lines.append(report["summary"])
    return "\n".join(printable(line) for line in lines)


def save_repros(comparison: Comparison, directory: str | os.PathLike[str]) -> list[Path]:
    """For each node where a disagreement starts or a side fails: an ONNX test-case directory (model.onnx
    with the node alone in its standard domain, test_data_set_0/input_N.pb, output_0.pb with the spec
    side's output) and the command that reproduces the comparison (in README.txt). Each directory is named
    after its node as one safe path component inside ``directory`` (customops.safeio), and appears whole
    or not at all. Returns the directories written."""
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CustomOpsError(f"cannot make --save-repro {str(root)!r}: {exc.strerror or exc}") from None
    used = {p.name.lower() for p in root.iterdir()}
    written = []
    for n in comparison.report["nodes"]:
        iso = comparison.isolated.get(n["node"])
        if n["verdict"] == "agree" or iso is None or n["origin"] == "carried-in":
            continue  # a difference carried in from upstream does not reproduce on the node alone
        case = root / safe_component(n["node"], used, fallback="node")
        with atomic_dir(case) as tmp:
            _write_repro(tmp, case, n, iso)
        written.append(case)
    return written


def _write_repro(into: Path, final: Path, n: dict[str, Any], iso: Isolated) -> None:
    spec_side = "reference" if n["attribution"] == "custom-leaves-spec" else "custom"
    expected = iso.outputs.get(spec_side)
    if expected is None:
        spec_side, expected = "reference", iso.outputs.get("reference")
    write_test_case(into, _typed_outputs(iso.model, expected), iso.feed, expected)
    command = f"customops compare {final / 'model.onnx'} --inputs {final}"
    (into / "README.txt").write_text(
        f"{n['node']!r} [{n['op']}]: {n['attribution']} ({n['verdict']})\n"
        f"output_0.pb holds the {spec_side} side's output (the spec side).\n"
        f"Reproduce:\n  {command}\n"
    )


def _typed_outputs(model: ModelProto, expected: np.ndarray | None) -> ModelProto:
    """``model`` with its output declared (type and rank), so the saved test case passes the checker."""
    out = ModelProto()
    out.CopyFrom(model)
    first = out.graph.input[0].type.tensor_type
    if expected is not None:
        value = np.asarray(expected)
        elem = dtypes.code_of(value.dtype)
        dims: list[Any] = list(value.shape)
    else:
        elem, dims = first.elem_type, [f"d{i}" for i in range(len(first.shape.dim))]
    name = out.graph.output[0].name
    del out.graph.output[:]
    out.graph.output.append(helper.make_tensor_value_info(name, elem, dims))
    return out
