"""Small builders shared by the tests: one-node models and runs through our kernels and ORT's."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

import customops

ALL_DTYPES = (
    np.float32,
    np.float64,
    np.float16,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
    np.complex64,
    np.complex128,
    object,
)
"""Every element type the kernels take (object: strings)."""

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The repository's root."""
DEVIATION = os.path.join(ROOT, "customops", "examples", "ort_deviation.onnx")
"""The bundled model on which ORT leaves the spec (the README's quickstart)."""

NEVER = 1800.0
"""A time limit (seconds) for work that is not about time: correct code on a loaded 2-core machine never
reaches it, so a test using it cannot fail by the clock (a hang still ends, as a failure)."""

HANG_LIMIT = 30.0
"""The case timeout of tests that inject a hang that never finishes: long enough that the sides that do
answer (a fresh child's first run, loading compiled loops from the cache) answer well within it on a
loaded machine; every second of it is waited out once, by the hanging side."""


def backend_cases(*prefixes: str, generator: str | None = None) -> list:
    """ONNX's backend node test cases whose names start with one of ``prefixes`` (function expansions
    left out), sorted by name. ``generator``, a module of onnx.backend.test.case.node, is imported alone
    when given (much faster than collecting every case); all cases are collected otherwise or when
    onnx's private list moves."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # generators of unrelated operators warn about overflows
        try:
            if generator is None:
                raise ImportError
            importlib.import_module(f"onnx.backend.test.case.node.{generator}")
            cases = list(node._NodeTestCases)
        except (ImportError, AttributeError):
            cases = node.collect_testcases(None)
    found = {c.name: c for c in cases if c.name.startswith(prefixes) and not c.name.endswith("_expanded")}
    return [found[name] for name in sorted(found)]


NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.uint16): TensorProto.UINT16,
    np.dtype(np.uint32): TensorProto.UINT32,
    np.dtype(np.uint64): TensorProto.UINT64,
    np.dtype(np.bool_): TensorProto.BOOL,
    np.dtype(object): TensorProto.STRING,
}


def one_node_model(
    op: str,
    inputs: dict[str, np.ndarray | None],
    opset: int,
    out_type: int | None = None,
    initializers: tuple[str, ...] = (),
    out_rank: int | None = None,
    **attrs: object,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A model with one ``op`` node; ``None`` inputs are left empty; names in ``initializers`` become
    initializers, the rest graph inputs; the output has the first input's element type (``out_type``
    when given) and rank (``out_rank`` when given). Returns the model and its feed."""
    names = [name if value is not None else "" for name, value in inputs.items()]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["Y"], name=f"{op}_node", **attrs)
    graph_inputs, inits, feed = [], [], {}
    for name, value in inputs.items():
        if value is None:
            continue
        value = np.asarray(value)
        elem = NP_TO_ONNX[value.dtype]
        if name in initializers:
            if value.dtype == object:
                inits.append(helper.make_tensor(name, elem, value.shape, [s.encode() for s in value.ravel()]))
            else:
                inits.append(onnx.numpy_helper.from_array(value, name))
        else:
            graph_inputs.append(
                helper.make_tensor_value_info(name, elem, [f"{name}_{i}" for i in range(value.ndim)])
            )
            feed[name] = value
    first = np.asarray(next(v for v in inputs.values() if v is not None))
    y_type = out_type if out_type is not None else NP_TO_ONNX[first.dtype]
    y_dims = [f"Y_{i}" for i in range(first.ndim if out_rank is None else out_rank)]
    graph = helper.make_graph(
        [node], "g", graph_inputs, [helper.make_tensor_value_info("Y", y_type, y_dims)], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    return model, feed


def run_custom(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Rewrite ``model`` into our domain (every node must swap) and run it with our kernels."""
    result = customops.rewrite_model(model)
    assert not result.skipped, [r.line() for r in result.skipped]
    sess = customops.InferenceSession(result.model)
    return sess.run(None, feed)


def run_builtin(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run ``model`` with ORT's built-in CPU kernels."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def sides_differ_at_level_all(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> bool:
    """Whether ``model`` run by ORT's built-in kernels and, rewritten, by ours (both at ORT's default
    optimization level, all) gives other bits on this machine. Tests about a difference ORT's optimizer
    makes around a swapped node start from it: its usual source, ORT's blocked NCHWc layout, exists only
    on CPUs with AVX2 or AVX-512, and its block (8 or 16 channels) decides which nodes it takes."""
    return any(
        not np.array_equal(a, b)
        for a, b in zip(run_builtin(model, feed), run_custom(model, feed), strict=True)
    )


def strict_json(text: str):
    """``json.loads`` that rejects Python's ``Infinity``, ``-Infinity`` and ``NaN``, which are not JSON:
    every JSON customops writes must parse here (customops.jsonout)."""

    def reject(constant: str):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=reject)


WRONG_KERNEL_ENV = "CUSTOMOPS_TEST_WRONG_KERNEL"
"""Read by the ``sitecustomize.py`` of :func:`wrong_kernel_dir`: ``MODULE:HOW`` makes the kernel
``MODULE`` wrong (the registry's kernel of that name, ``customops.kernels.FAMILY.MODULE:MODULE``),
``HOW`` being ``add1`` (1 added to its output, same dtype), ``add1f32`` (1 added to float32 outputs
only: its float64 run, compare's yardstick, stays right) or ``raise`` (it always fails)."""

_WRONG_KERNEL_SITE = '''\
"""Test-only (tests.helpers.wrong_kernel_dir): a deliberately wrong customops kernel, when asked for."""

import os


def _install(spec):
    import importlib

    from customops.registry import CUSTOM_OPS

    name, _, how = spec.partition(":")
    path = next(op.kernel for op in CUSTOM_OPS.values() if op.kernel.endswith(":" + name))
    module = importlib.import_module(path.partition(":")[0])
    original = getattr(module, name)
    original_bind = module.bind

    def wrong(result):
        if how == "raise":
            raise ValueError("deliberately wrong kernel (test)")
        import numpy

        result = numpy.asarray(result)
        if how == "add1f32" and result.dtype != numpy.float32:
            return result
        return (result + 1).astype(result.dtype)

    def kernel(*args, **kwargs):
        return wrong(original(*args, **kwargs))

    def bind(**kwargs):
        bound = original_bind(**kwargs)
        return lambda *args: wrong(bound(*args))

    setattr(module, name, kernel)
    module.bind = bind


if os.environ.get("CUSTOMOPS_TEST_WRONG_KERNEL"):
    _install(os.environ["CUSTOMOPS_TEST_WRONG_KERNEL"])
'''


def wrong_kernel_dir(directory) -> str:
    """Write into ``directory`` a ``sitecustomize.py`` that, in every Python process started with
    ``directory`` on PYTHONPATH and :data:`WRONG_KERNEL_ENV` set, replaces one of our kernels with a
    deliberately wrong one before anything runs. Test-only: the side processes of compare
    (customops.eval.running.sides) load their kernels by name (customops.bridge.registration), so they pick up
    the wrong one; an in-process monkeypatch would not reach them. Returns the directory."""
    import pathlib

    path = pathlib.Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / "sitecustomize.py").write_text(_WRONG_KERNEL_SITE)
    return str(path)


def one_error_line(capsys) -> str:
    """The one line a refused command wrote on stderr (captured by pytest's ``capsys``), no traceback."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def run_cli(
    *args: str, cwd: object = None, env: dict[str, str] | None = None, timeout: float = NEVER
) -> subprocess.CompletedProcess:
    """``customops ARGS`` in a child process (``cwd`` its working directory, ``env`` added to ours)."""
    return subprocess.run(
        [sys.executable, "-m", "customops.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def polygraphy(*args: str, cwd: object, check: bool = True) -> subprocess.CompletedProcess:
    """The real ``polygraphy ARGS`` in ``cwd`` (the script installed beside this Python: Polygraphy has
    no ``python -m`` entry; it is in the ``test`` extra), which must succeed unless ``check`` is False:
    the files it writes are the interop tests' fixtures."""
    script = os.path.join(os.path.dirname(sys.executable), "polygraphy")
    proc = subprocess.run(
        [script if os.path.exists(script) else "polygraphy", *args],
        capture_output=True,
        text=True,
        timeout=NEVER,
        cwd=cwd,
    )
    assert proc.returncode == 0 or not check, f"polygraphy {' '.join(args)}:\n{proc.stdout}{proc.stderr}"
    return proc


def run_python(
    *args: str, env: dict[str, str] | None = None, timeout: float = NEVER
) -> subprocess.CompletedProcess:
    """``python ARGS`` in a child process started in the repository's root, which is on its path (a
    ``-c`` script may import customops and tests.helpers); ``env`` added to ours."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", ROOT), **(env or {})},
    )


@dataclass
class Deviation:
    """One reproduced deviation (docs/ort-deviations.md): a one-node model and what compare must say."""

    id: str
    op: str
    inputs: dict
    opset: int
    attrs: dict = field(default_factory=dict)
    constants: tuple[str, ...] = ()
    attribution: tuple[str, ...] = ("builtin-leaves-spec",)
    spec: object = None  # the spec answer our side must give (array-like)
    out_rank: int | None = None  # the output's rank when it is not the first input's


def check_deviation(dev: Deviation) -> None:
    """compare flags the deviation ``dev``, blames the side it names, labels it with its id, and our side
    gives the spec answer."""
    from customops.comparison.pipeline import compare_model

    model, feed = one_node_model(
        dev.op, dev.inputs, dev.opset, initializers=dev.constants, out_rank=dev.out_rank, **dev.attrs
    )
    comparison = compare_model(model, feed, model_name=dev.id)
    report = comparison.report
    assert report.verdict in ("disagree", "failed"), report.summary
    assert comparison.exit_status == 1
    (node,) = report.nodes
    assert node.attribution in dev.attribution, (node.attribution, node.isolated["errors"])
    assert node.origin == "starts-here" or node.verdict == "side-failed"
    # named by the matcher the fuzzer labels its groups with (T-RESIZE names T-RESIZE-UINT16's kind)
    assert any(dev.id.startswith(known) for known in node.known), node.known
    ours = comparison.isolated[node.node].outputs["custom"]
    spec = np.asarray(dev.spec)
    # every operator here gives its output the element type of its data input (the first one)
    data_dtype = np.asarray(next(v for v in dev.inputs.values() if v is not None)).dtype
    assert ours.dtype == data_dtype, (ours.dtype, data_dtype)
    assert ours.shape == spec.shape
    if spec.dtype == object:
        assert ours.tolist() == spec.tolist()
    else:
        np.testing.assert_allclose(ours.astype(np.float64), spec.astype(np.float64), rtol=1e-6, atol=1e-6)


FAR = 1e7
"""A roi coordinate far off a 64x64 map (:func:`roi_align_model`)."""


def roi_align_model(far: bool) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """RoiAlign-16 on a 64x64 map of values up to about 250 with two ROIs on it, and with ``far`` a third
    at (FAR, FAR): it reads only zeros on every side."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((1, 4, 64, 64)) * 60).astype(np.float32)
    rois = [[3.3, 5.1, 61.7, 58.9], [10.2, 0.7, 40.9, 33.3]] + ([[FAR, FAR, FAR + 9, FAR + 9]] if far else [])
    boxes = np.array(rois, np.float32)
    attrs = {"coordinate_transformation_mode": "output_half_pixel", "output_height": 7, "output_width": 7}
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], name="roi", sampling_ratio=2, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, list(boxes.shape)),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [len(boxes)]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    return model, {"x": x, "rois": boxes, "idx": np.zeros(len(boxes), np.int64)}
