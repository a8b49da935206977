"""Element types that onnx's type inference leaves unknown, learned from ONNX Runtime, in a child process.

onnx's inference knows nothing of ORT's contrib ops (``com.microsoft``: QLinearAdd, QLinearConcat,
QLinearGlobalAveragePool, QGemm, ... which quantize_static's QOperator format writes), so every value
downstream of one has no element type, and the rewriter could not swap a node fed by it. ORT, which
runs such models, knows them: it types every value when it resolves the graph. :func:`learn` asks it.

The question is a *probe*, a copy of the main graph whose outputs are the values asked, declared without
a type, with every initializer of more than :data:`KEPT_ELEMENTS` elements (or past :data:`KEPT_TOTAL`
bytes kept in all) and every sparse initializer or Constant (which ORT would make dense) turned into a
graph input of its type and shape (a subgraph's: an empty tensor of its type): types never depend on a
tensor's values, so a multi-GB model's probe holds its graph and its small constants (scales, zero
points, shapes) and no weights. A child,
``python -m customops.model.ort_types``, reads the probe on stdin, makes a session of it at
ORT_DISABLE_ALL (one thread, ORT's log off; nothing is run) and writes each output's type as JSON on
stdout. Whatever the model does to ORT there (an error, an abort, a hang) ends only the child: no
answer, a non-zero exit or none within :data:`TIMEOUT` seconds (the child is then killed; it also ends
itself :data:`TIMEOUT` seconds after it starts, should this process be gone) means nothing is learned,
and the values stay unknown. Answers are kept for the process by the probe's digest (compare's culprit
search rewrites the same model once per swap it tries).

Test hook (environment): ``CUSTOMOPS_ORT_TYPES_INJECT=abort`` (or ``hang``) makes the child abort (or
sleep) before it answers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the child imports onnxruntime alone: onnx's import would double its start
    from onnx import GraphProto, ModelProto

TIMEOUT = 120.0
"""Seconds the child may take to start, load the probe and answer."""

KEPT_ELEMENTS = 1024
"""Most elements of an initializer kept as a constant in the probe; larger ones become graph inputs
(counted from its dims: a large tensor's data is never touched, which alone costs a copy of it)."""

KEPT_TOTAL = 64 << 20
"""Most bytes of initializers kept as constants in one probe, whatever their number (strings)."""

ANSWER_LIMIT = 64 << 20
"""Most bytes of the child's answer read."""

INJECT_ENV = "CUSTOMOPS_ORT_TYPES_INJECT"

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The child starts in the directory holding this package, so that ``python -m`` finds it and never a
``customops`` directory where the user runs."""

_ANSWERS: dict[str, dict[str, int]] = {}
_KEEP_ANSWERS = 16


def learn(model: ModelProto, names: Iterable[str]) -> dict[str, int]:
    """The element type (a TensorProto enum) ORT gives each value of ``names`` (values computed by nodes
    of ``model``'s main graph) when it loads ``model``; a value ORT does not type as a tensor, or every
    value when ORT cannot load the model, is left out. Nothing is started for no names."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    try:
        data = probe(model, wanted).SerializeToString()
    except ValueError:  # over protobuf's 2 GB even without its large initializers
        return {}
    key = hashlib.sha256(data).hexdigest()
    if key not in _ANSWERS:
        if len(_ANSWERS) >= _KEEP_ANSWERS:
            _ANSWERS.pop(next(iter(_ANSWERS)))
        _ANSWERS[key] = _parsed(_ask(data), set(wanted))
    return dict(_ANSWERS[key])


def probe(model: ModelProto, names: list[str]) -> ModelProto:
    """The question put to ORT (module docstring): ``model``'s main graph with ``names`` as its outputs,
    untyped, and its large initializers as typed graph inputs."""
    from onnx import ModelProto, TypeProto, helper

    out = ModelProto()
    out.ir_version = model.ir_version
    out.opset_import.extend(model.opset_import)
    out.functions.extend(model.functions)
    g, source = out.graph, model.graph
    g.name = source.name
    g.node.extend(source.node)
    g.input.extend(source.input)
    g.value_info.extend(source.value_info)
    _constants(source, g)
    g.output.extend(helper.make_value_info(n, TypeProto()) for n in names)
    _no_sparse(out)
    return out


def _no_sparse(probe: ModelProto) -> None:
    """Nothing sparse left in ``probe``: ORT makes every sparse tensor dense when it loads a model (a few
    bytes could ask for TBs). A main-graph Constant holding one becomes a typed graph input; elsewhere
    (subgraphs, functions) a sparse initializer or Constant becomes an empty tensor of its type."""
    from onnx import TensorProto, helper

    from customops.graphs import all_graphs, all_nodes

    main = probe.graph
    for node in [n for n in main.node if n.op_type == "Constant" and n.domain in ("", "ai.onnx")]:
        sparse = next((a.sparse_tensor for a in node.attribute if a.name == "sparse_value"), None)
        if sparse is not None:
            main.node.remove(node)
            main.input.append(
                helper.make_tensor_value_info(node.output[0], sparse.values.data_type, sparse.dims)
            )
    for g in all_graphs(probe):
        for sparse in g.sparse_initializer:
            g.initializer.append(
                TensorProto(name=sparse.values.name, data_type=sparse.values.data_type, dims=[0])
            )
        del g.sparse_initializer[:]
    for node in all_nodes(probe):
        for a in node.attribute:
            if a.name == "sparse_value" and a.HasField("sparse_tensor"):
                empty = TensorProto(data_type=a.sparse_tensor.values.data_type, dims=[0])
                a.ClearField("sparse_tensor")
                a.name, a.type = "value", a.TENSOR
                a.t.CopyFrom(empty)


def _constants(source: GraphProto, g: GraphProto) -> None:
    """``source``'s initializers into ``g``: small dense ones as they are, the others as typed graph
    inputs."""
    from onnx import helper

    declared = {v.name for v in source.input}
    kept = 0
    for t in source.initializer:
        size = t.ByteSize() if math.prod(t.dims) <= KEPT_ELEMENTS else KEPT_TOTAL + 1
        if kept + size <= KEPT_TOTAL:
            g.initializer.append(t)
            kept += size
        elif t.name not in declared:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    for s in source.sparse_initializer:  # ORT makes each dense on load: a few bytes could ask for TBs
        if s.values.name not in declared:
            g.input.append(helper.make_tensor_value_info(s.values.name, s.values.data_type, list(s.dims)))


def _ask(data: bytes) -> bytes:
    """The child's answer to the serialized probe ``data``, or b"" when it gives none."""
    if not sys.executable:  # an embedding interpreter that cannot start another
        return b""
    try:
        run = subprocess.run(
            [sys.executable, "-m", "customops.model.ort_types"],
            input=data,
            capture_output=True,
            timeout=TIMEOUT,
            cwd=PACKAGE_ROOT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):  # could not start, or no answer in time (killed)
        return b""
    return run.stdout if run.returncode == 0 else b""


def _parsed(answer: bytes, wanted: set[str]) -> dict[str, int]:
    """The element types of ``wanted`` in the child's answer (``{name: "tensor(uint8)"}``); nothing for
    an answer that is not such JSON."""
    from onnx import TensorProto

    from customops.dtypes import CODE

    if not answer or len(answer) > ANSWER_LIMIT:
        return {}
    try:
        given = json.loads(answer)
    except ValueError:
        return {}
    if not isinstance(given, dict):
        return {}
    found: dict[str, int] = {}
    for name, kind in given.items():
        if name in wanted and isinstance(kind, str) and kind.startswith("tensor(") and kind.endswith(")"):
            code = CODE.get(kind[len("tensor(") : -1], TensorProto.UNDEFINED)
            if code != TensorProto.UNDEFINED:
                found[name] = code
    return found


def answer() -> None:
    """The child: the probe from stdin, the types of its outputs as JSON on stdout."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and then ends us
    if hasattr(signal, "alarm"):  # and end ourselves should the parent be gone
        signal.alarm(int(TIMEOUT) + 5)
    data = sys.stdin.buffer.read()
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    action = os.environ.get(INJECT_ENV)
    if action == "abort":
        os.abort()
    if action == "hang":
        time.sleep(3600)
    json.dump({o.name: o.type for o in sess.get_outputs()}, sys.stdout)


if __name__ == "__main__":
    answer()
