"""One fuzz case: a standard node of one (op, version) with its inputs, as data, and as an ONNX model.

A :class:`Case` keeps the node's inputs by their registry names (``X``, ``roi``, ``scales``, ...) so that
the generator, the validity oracle and the shrinker can reason about them; :func:`build_model` turns it
into the one-node model every side runs. Element types ONNX Runtime's Python API cannot pass in or out
(bfloat16, float8, int4, ...) travel as a wider *carrier* type through Cast nodes around the node; the
casts are exact for every value of the narrow type.

A case has one element type T (``dtype``, its main input's). The quantized family's ops have several type
variables: each input then has its own element type (its array's), and the output's follows the op's
rule (:func:`output_elems`). A node with several outputs (DynamicQuantizeLinear) gives one graph output,
:data:`PACKED`.
"""

from __future__ import annotations

import base64
import functools
import math
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from onnx import ModelProto, helper

from customops.dtypes import CODE, elem_of, numpy_dtype
from customops.errors import CustomOpsError
from customops.eval.cases.testcase import tensor_proto
from customops.model.translate import Skip
from customops.model.typed import output_types
from customops.registry import OPS, PYTHON_FEEDS, OpVersion, python_carrier, type_support
from customops.safeio import inflate_bounded

MAIN_OUTPUT = "Y"

PACKED = "double"
"""The element type of the one graph output of a case whose node has several outputs: each output
flattened, Cast to it (exactly: it holds every value of the quantized family's output types) and
concatenated in the node's order."""

MAX_ARRAY_BYTES = 1 << 20
"""Largest input array a case read from a file may decode to (bytes; also its most elements, and the
longest dimension). Cases are drawn with at most 240 input elements (customops.fuzz.spaces.base.IN_LIMIT), 2 kB
of float64, and shrinking only makes them smaller: 1 MiB is 500 times that, and bounds what a crafted
finding.json makes us allocate or inflate (its compressed payload never expands further)."""

MAX_RANK = 16
"""Highest rank of an array read from a file; the fuzzer draws ranks 1 to 6."""


def opv_of(op: str, version: int) -> OpVersion:
    """The registry entry of (op, version)."""
    for o in OPS:
        if o.op == op and o.version == version:
            return o
    raise KeyError(f"{op}-{version}")


def opset_of(opv: OpVersion) -> int:
    """The opset a case of ``opv`` imports: its own version, at least 7 (ORT loads nothing older)."""
    from customops.support import probe_opset

    return probe_opset(opv)


def ir_version_of(opset: int) -> int:
    """IR version of a case model (what the tests of this project use, and ORT 1.32 loads)."""
    return 10 if opset >= 21 else 8


@dataclass
class Tensor:
    """An input value: the array (of its logical element type) and whether it is an initializer."""

    value: np.ndarray
    const: bool = False

    @property
    def elem(self) -> str:
        return elem_of(self.value)


@dataclass
class Case:
    """One node of (op, version): element type of T, inputs by registry name (None: absent, the name is
    left empty), and the attributes written on the node (absent ones take the spec default)."""

    op: str
    version: int
    dtype: str
    inputs: dict[str, Tensor | None]
    attrs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    index: int | None = None

    @property
    def opv(self) -> OpVersion:
        return opv_of(self.op, self.version)

    @property
    def key(self) -> str:
        return f"{self.op}-{self.version}"

    @property
    def main(self) -> np.ndarray:
        """The value of the main input (X, data, input, input_data)."""
        t = self.inputs[self.opv.inputs[0].name]
        assert t is not None
        return t.value

    def clone(self, **changes: Any) -> Case:
        """A copy sharing no mutable containers with this case (arrays are never mutated in place)."""
        changes.setdefault("inputs", self.inputs)
        changes.setdefault("attrs", self.attrs)
        changes["inputs"] = {
            k: (None if v is None else Tensor(v.value, v.const)) for k, v in changes["inputs"].items()
        }
        changes["attrs"] = {k: (list(v) if isinstance(v, list) else v) for k, v in changes["attrs"].items()}
        return replace(self, **changes)

    def with_input(self, name: str, value: np.ndarray | None, const: bool | None = None) -> Case:
        """A copy with input ``name`` set to ``value`` (None: absent); keeps its const flag by default."""
        out = self.clone()
        old = out.inputs.get(name)
        if value is None:
            out.inputs[name] = None
        else:
            out.inputs[name] = Tensor(
                value, old.const if (old is not None and const is None) else bool(const)
            )
        return out

    def with_attrs(self, **attrs: Any) -> Case:
        """A copy with these attributes set (a value of None removes the attribute)."""
        out = self.clone()
        for k, v in attrs.items():
            if v is None:
                out.attrs.pop(k, None)
            else:
                out.attrs[k] = v
        return out

    @property
    def types(self) -> str:
        """The case's element types in a word: T, or for an op of several type variables the type each
        variable is bound to by the inputs given, and the output's (``T1=uint8 T2=int8 T3=int8 ->
        int8``)."""
        opv = self.opv
        if not opv.type_vars:
            return self.dtype
        bound: dict[str, str] = {}
        for inp in opv.inputs:
            t = self.inputs.get(inp.name)
            var = inp.types[0]
            if t is not None and len(dict(opv.type_vars).get(var, ())) > 1:
                bound.setdefault(var, t.elem)
        words = [f"{var}={elem}" for var, elem in bound.items()] or [self.dtype]
        return " ".join([*words, "->", ",".join(output_elems(self))])

    def size(self) -> int:
        """Total number of elements over all inputs."""
        return sum(int(t.value.size) for t in self.inputs.values() if t is not None)

    def describe(self) -> str:
        """One line: op-version, dtype, shapes and attributes (and, for an op of several type variables,
        each input's element type and the output's)."""
        opv = self.opv
        parts = [f"{self.key} {self.dtype}"]
        for name, t in self.inputs.items():
            if t is None:
                continue
            v = t.value
            shown = "x".join(map(str, v.shape)) if v.size > 8 or v.ndim > 1 else _short_list(v)
            typed = opv.type_vars or any(i.name == name and len(i.types) > 1 for i in opv.inputs)
            label = f"{name}:{t.elem}" if typed else name
            parts.append(f"{label}{'(init)' if t.const else ''}={shown}")
        if opv.type_vars:
            parts.append("->" + ",".join(output_elems(self)))
        parts.extend(f"{k}={_fmt_attr(v)}" for k, v in sorted(self.attrs.items()))
        return " ".join(parts)


def _short_list(v: np.ndarray) -> str:
    if v.dtype == object:
        return "[" + ",".join(repr(s) for s in v.ravel().tolist()) + "]"
    return "[" + ",".join(_fmt_num(x) for x in v.ravel().astype(np.float64).tolist()) + "]"


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _fmt_attr(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ",".join(_fmt_num(float(x)) if not isinstance(x, str) else x for x in v) + "]"
    if isinstance(v, float):
        return _fmt_num(v)
    return str(v)


def output_elems(case: Case) -> list[str]:
    """The element type of each output of the case's node: T, or for an op of several type variables
    the op's rule (customops.model.typed.output_types) on the types of the inputs given. Where an invalid
    case breaks the rule (an output_dtype its version does not allow, a required input missing), the
    rule without output_dtype, else T: the type the graph declares for a node no side should run."""
    opv = case.opv
    if not opv.type_vars:
        return [case.dtype]
    variables: dict[str, str] = {}
    for inp in opv.inputs:
        t = case.inputs.get(inp.name)
        if t is not None:
            variables.setdefault(inp.types[0], t.elem)
    plain = {k: v for k, v in case.attrs.items() if k != "output_dtype"}
    for attrs in (case.attrs, plain):
        try:
            return output_types(opv, attrs, variables)
        except (Skip, KeyError):
            continue
    return [case.dtype]


def carriable(case: Case) -> tuple[bool, str]:
    """Whether every side can run ``case`` at all: (True, '') or (False, why it is skipped)."""
    how, why = type_support(case.opv, case.dtype)
    if how == "no":
        return False, why or f"element type {case.dtype} is not supported"
    elems = [t.elem for t in case.inputs.values() if t is not None] + output_elems(case)
    for elem in elems:
        if not known_elem(elem):
            return False, f"element type {elem} has no numpy type here"
        if elem not in PYTHON_FEEDS and not cast_available(elem, opset_of(case.opv)):
            return False, f"ONNX Runtime {_ort_version()} cannot Cast to or from {elem}"
    return True, ""


def _ort_version() -> str:
    import onnxruntime as ort

    return ort.__version__


@functools.cache
def cast_available(elem: str, opset: int) -> bool:
    """Whether ONNX Runtime can Cast between ``elem`` and its carrier at ``opset`` (probed once)."""
    import onnxruntime as ort

    carrier = CODE[python_carrier(elem)]
    nodes = [
        helper.make_node("Cast", ["x"], ["n"], to=CODE[elem]),
        helper.make_node("Cast", ["n"], ["y"], to=carrier),
    ]
    graph = helper.make_graph(
        nodes,
        "probe",
        [helper.make_tensor_value_info("x", carrier, [1])],
        [helper.make_tensor_value_info("y", carrier, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(opset, 19))])
    model.ir_version = ir_version_of(max(opset, 19))
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


@dataclass
class Built:
    """The one-node model of a case and its feed (carrier arrays, by graph input name)."""

    model: ModelProto
    feed: dict[str, np.ndarray]
    output_elem: str
    """Element type of the node's output (the logical one; the graph output may be its carrier), or
    :data:`PACKED` for a node of several outputs."""


@dataclass
class _Graph:
    """A case's model as it is built: graph inputs, initializers, feed and nodes."""

    inputs: list[Any] = field(default_factory=list)
    inits: list[Any] = field(default_factory=list)
    feed: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: list[Any] = field(default_factory=list)

    def cast(self, source: str, target: str, elem: str, name: str) -> None:
        self.nodes.append(helper.make_node("Cast", [source], [target], name=name, to=CODE[elem]))

    def add_input(self, name: str, t: Tensor) -> None:
        """Input ``name`` of the node: an initializer or a graph input, through its carrier and a Cast for
        a narrow type (so any ORT loads a constant of it too)."""
        elem, value = t.elem, t.value
        carrier = python_carrier(elem)
        source = name if elem == carrier else f"{name}_carrier"
        if elem != carrier:
            value = value.astype(numpy_dtype(carrier))
            self.cast(source, name, elem, f"cast_{name}")
        if t.const:
            self.inits.append(tensor_proto(value, source))
        else:
            self.inputs.append(helper.make_tensor_value_info(source, CODE[carrier], list(value.shape)))
            self.feed[source] = value

    def add_outputs(self, node_outputs: list[str], elems: list[str]) -> str:
        """The graph output ``Y`` from the node's outputs: its one output (Cast to its carrier), or each of
        several flattened, Cast to :data:`PACKED` and concatenated; returns Y's element type."""
        if len(elems) == 1:
            if node_outputs[0] != MAIN_OUTPUT:
                self.cast(node_outputs[0], MAIN_OUTPUT, python_carrier(elems[0]), "cast_Y")
            return python_carrier(elems[0])
        shape = f"{MAIN_OUTPUT}_flat_shape"
        self.inits.append(tensor_proto(np.array([-1], dtype=np.int64), shape))
        flat = []
        for i, (out, elem) in enumerate(zip(node_outputs, elems, strict=True)):
            if elem != PACKED:
                self.cast(out, f"{out}_{PACKED}", PACKED, f"cast_{out}")
                out = f"{out}_{PACKED}"
            flat.append(f"{MAIN_OUTPUT}_{i}_flat")
            self.nodes.append(helper.make_node("Reshape", [out, shape], [flat[-1]], name=f"flatten_{i}"))
        self.nodes.append(helper.make_node("Concat", flat, [MAIN_OUTPUT], name="concat_Y", axis=0))
        return PACKED


def build_model(case: Case, declare_output_shape: list[Any] | None = None) -> Built:
    """The model with the node alone in its standard domain (plus carrier Casts for narrow types, and the
    packing of several outputs into one)."""
    opv = case.opv
    opset = opset_of(opv)
    g = _Graph()
    names = []
    for inp in opv.inputs:
        t = case.inputs.get(inp.name)
        names.append("" if t is None else inp.name)
        if t is not None:
            g.add_input(inp.name, t)
    while names and names[-1] == "":
        names.pop()
    elems = output_elems(case)
    if len(elems) == 1:
        outs = [MAIN_OUTPUT if python_carrier(elems[0]) == elems[0] else f"{MAIN_OUTPUT}_{elems[0]}"]
    else:
        outs = [f"{MAIN_OUTPUT}_{i}" for i in range(len(elems))]
    g.nodes.append(helper.make_node(case.op, names, outs, name=f"{case.op}_node", **case.attrs))
    out_type = g.add_outputs(outs, elems)
    out_info = helper.make_tensor_value_info(MAIN_OUTPUT, CODE[out_type], declare_output_shape)
    graph = helper.make_graph(g.nodes, f"fuzz_{case.key}", g.inputs, [out_info], g.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="customops fuzz"
    )
    model.ir_version = ir_version_of(opset)
    return Built(model, g.feed, elems[0] if len(elems) == 1 else PACKED)


# ---------------------------------------------------------------------------------------------
# JSON form (summary examples, replays)


def _array_json(a: np.ndarray) -> dict[str, Any]:
    elem = elem_of(a)
    if elem == "string":
        data: Any = [str(s) for s in a.ravel().tolist()]
    else:
        raw = np.ascontiguousarray(a).tobytes()
        data = base64.b64encode(zlib.compress(raw)).decode("ascii")
    return {"elem": elem, "shape": list(a.shape), "data": data}


def known_elem(elem: str) -> bool:
    """Whether ``elem`` names an ONNX element type that has a numpy dtype here."""
    try:
        numpy_dtype(elem)
    except (KeyError, ValueError, TypeError):
        return False
    return elem != "undefined"


def array_from_json(d: dict[str, Any], what: str) -> np.ndarray:
    """Inverse of :func:`_array_json` for a field checked by customops.fuzz.files (elem known, shape a list
    of at most MAX_RANK dimensions): the payload must hold exactly shape x dtype, at most
    :data:`MAX_ARRAY_BYTES`, checked before any array is made or any byte inflated past that."""
    shape, elem = [int(n) for n in d["shape"]], str(d["elem"])
    count = math.prod(shape)
    if elem == "string":
        if not isinstance(d["data"], list) or len(d["data"]) != count:
            raise CustomOpsError(f"{what}: a string tensor of shape {shape} needs a list of {count} strings")
        return np.array([str(s) for s in d["data"]], dtype=object).reshape(shape)
    dtype = numpy_dtype(elem)
    need = count * dtype.itemsize
    if need > MAX_ARRAY_BYTES:
        raise CustomOpsError(
            f"{what}: shape {shape} of {elem} takes {need} bytes; at most {MAX_ARRAY_BYTES} are allowed"
        )
    if not isinstance(d["data"], str):
        raise CustomOpsError(f"{what}: data of a {elem} tensor must be a base64 string of zlib data")
    try:
        packed = base64.b64decode(d["data"], validate=True)
    except (ValueError, TypeError):
        raise CustomOpsError(f"{what}: data is not base64") from None
    raw = inflate_bounded(packed, need, what)
    if len(raw) != need:
        raise CustomOpsError(f"{what}: data holds {len(raw)} bytes; shape {shape} of {elem} needs {need}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def case_to_json(case: Case) -> dict[str, Any]:
    """A JSON-able form of ``case`` that :func:`case_from_json` restores exactly."""
    return {
        "op": case.op,
        "version": case.version,
        "dtype": case.dtype,
        "seed": case.seed,
        "index": case.index,
        "attrs": case.attrs,
        "inputs": {
            k: (None if t is None else {"const": t.const, **_array_json(t.value)})
            for k, t in case.inputs.items()
        },
    }


def case_from_json(d: dict[str, Any], what: str = "case") -> Case:
    """Inverse of :func:`case_to_json`, for a case checked by customops.fuzz.files (fields of the right
    JSON types): the op, its inputs and attributes must be the registry's, every array is decoded within
    bounds. Raises CustomOpsError prefixed by ``what``."""
    opv = _registry_opv(str(d["op"]), int(d["version"]), what)
    if d["dtype"] not in opv.types:
        raise CustomOpsError(
            f"{what}: dtype {d['dtype']!r} is not one of {opv.key}'s ({', '.join(opv.types)})"
        )
    names = [i.name for i in opv.inputs]
    inputs: dict[str, Tensor | None] = {}
    for k, t in d["inputs"].items():
        if k not in names:
            raise CustomOpsError(
                f"{what}: {opv.key} has no input {k[:40]!r} (its inputs: {', '.join(names)})"
            )
        inputs[k] = None if t is None else Tensor(array_from_json(t, f"{what}: input {k}"), bool(t["const"]))
    if inputs.get(names[0]) is None:
        raise CustomOpsError(f"{what}: input {names[0]!r} of {opv.key} must be present")
    attrs = {k: attr_from_json(opv, k, v, what) for k, v in d["attrs"].items()}
    return Case(opv.op, opv.version, str(d["dtype"]), inputs, attrs, d.get("seed"), d.get("index"))


def _registry_opv(op: str, version: int, what: str) -> OpVersion:
    try:
        return opv_of(op, version)
    except KeyError:
        known = ", ".join(o.key for o in OPS)
        raise CustomOpsError(f"{what}: {op}-{version} is not an op this customops knows ({known})") from None


_FLOAT_MAX = float(np.finfo(np.float64).max)

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
"""How strict JSON writes non-finite floats (customops.jsonout)."""


def attr_from_json(opv: OpVersion, name: str, value: Any, what: str) -> Any:
    """An attribute value read from JSON, checked against the registry's kind of ``name``."""
    try:
        kind = opv.attr(name).kind
    except KeyError:
        allowed = ", ".join(a.name for a in opv.attributes)
        raise CustomOpsError(
            f"{what}: {opv.key} has no attribute {name[:40]!r} (its attributes: {allowed})"
        ) from None
    many = kind in ("ints", "floats")
    if many:
        out = [_attr_item(kind[:-1], v) for v in value] if isinstance(value, list) else [None]
    else:
        out = [_attr_item(kind, value)]
    if any(v is None for v in out):
        raise CustomOpsError(f"{what}: attribute {name!r} of {opv.key} must be of kind {kind}")
    return out if many else out[0]


def _attr_item(kind: str, value: Any) -> Any:
    """``value`` as one item of an attribute of ``kind`` ('int', 'float', 'string'), or None."""
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
        return value if ok else None
    if kind == "float":
        if isinstance(value, str):
            return _NONFINITE.get(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value) if abs(value) <= _FLOAT_MAX else None  # float() of 10**400 raises
        return value if isinstance(value, float) else None
    return value if isinstance(value, str) else None
