"""``customops conformance``: ONNX's own backend node tests of our operators, on both sides (the
command's arguments are customops.cli.conformance)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

from customops.errors import CustomOpsError
from customops.registry import CUSTOM_OPS, UNSUPPORTED_TYPES

BACKEND_PREFIXES = tuple(prefix for op in CUSTOM_OPS.values() for prefix in op.backend_tests)
"""Name prefixes of the backend node tests of our operators (customops.registry.CustomOp.backend_tests)."""

CASE_MODULES = tuple(sorted(op.case_module for op in CUSTOM_OPS.values() if op.case_module))
"""onnx's case modules (``onnx/backend/test/case/node/<name>.py``, in the order onnx collects them) that
define the tests named by :data:`BACKEND_PREFIXES`."""


def backend_cases() -> list[Any]:
    """The backend node test cases of our operators from the installed onnx (function expansions left out),
    in onnx's order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = cases_of_our_modules()
        if cases is None:
            cases = all_cases()
    # an expansion's name ends in _expanded, or _expanded_verN for the activations' function bodies
    return [c for c in cases if c.name.startswith(BACKEND_PREFIXES) and "_expanded" not in c.name]


def all_cases() -> list[Any]:
    """Every node test case of the installed onnx, through its public collection (seconds: it runs the
    exports of every operator)."""
    from onnx.backend.test.case import node

    return list(node.collect_testcases(None))


def cases_of_our_modules() -> list[Any] | None:
    """The node test cases collected so far once the case modules of our operators (:data:`CASE_MODULES`)
    are imported, or None when this onnx is not laid out so (the caller then takes :func:`all_cases`).

    Why: onnx's public ``collect_testcases`` imports every case module, and importing one runs all of its
    ``export*`` functions, which compute the expected outputs with numpy: seconds for about 1,900 cases
    of which we use about 57 (its ``op_type`` filter only skips building the other models). Importing
    our five modules runs theirs alone. Beyond the public API this relies on two things of onnx's: those
    module names, and ``onnx.backend.test.case.node._NodeTestCases``, the list that ``expect`` appends
    every case to (``collect_testcases`` returns that same list). Anything unexpected (a module missing,
    no such list, a prefix of ours matching no case) falls back to the full collection; a test compares
    the two.
    """
    import importlib

    try:
        from onnx.backend.test.case import node

        for name in CASE_MODULES:
            importlib.import_module(f"{node.__name__}.{name}")
        cases = vars(node).get("_NodeTestCases")
    except Exception:  # a layout of onnx other than the one this function knows
        return None
    if not isinstance(cases, list):
        return None
    names = [getattr(c, "name", "") for c in cases]
    if not all(any(n.startswith(prefix) for n in names) for prefix in BACKEND_PREFIXES):
        return None
    return list(cases)


def carried(model: Any) -> Any:
    """``model`` whose graph inputs and outputs of a type ONNX Runtime's Python API cannot feed or fetch
    are given in their carrier (customops.registry.python_carrier) and Cast exactly to and from the real
    type inside the graph; the data sets' arrays are converted with :func:`to_carrier`."""
    from onnx import helper

    from customops import dtypes
    from customops.registry import python_carrier

    out = type(model)()
    out.CopyFrom(model)
    graph, before = out.graph, []
    for value in [*graph.input, *graph.output]:
        elem = dtypes.name_of(value.type.tensor_type.elem_type)
        if python_carrier(elem) == elem:
            continue
        real, wide = value.name, f"{value.name}__carried"
        is_input = any(v is value for v in graph.input)
        value.name = wide
        value.type.tensor_type.elem_type = dtypes.CODE[python_carrier(elem)]
        if is_input:
            before.append(helper.make_node("Cast", [wide], [real], to=dtypes.CODE[elem]))
        else:
            graph.node.append(helper.make_node("Cast", [real], [wide], to=value.type.tensor_type.elem_type))
    nodes = [*before, *graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    return out


def to_carrier(value: Any) -> np.ndarray:
    """A data set's value (an array, or a TensorProto) in the type :func:`carried`'s model takes or gives for it."""
    from onnx import TensorProto, numpy_helper

    from customops import dtypes
    from customops.registry import python_carrier

    # onnx keeps a narrow type's test data as the TensorProto itself (numpy has no such type)
    arr = numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)
    try:
        elem = dtypes.name_of(dtypes.code_of(arr.dtype))
    except (KeyError, ValueError, TypeError):
        return arr
    return arr if python_carrier(elem) == elem else arr.astype(dtypes.numpy_dtype(python_carrier(elem)))


class Unsupported(Exception):
    """The rewriter leaves the test's node alone for a reason the support table gives
    (customops.registry.UNSUPPORTED_TYPES: a type ONNX Runtime's custom-op layer cannot carry)."""


def _verdict(run: Any, case: Any) -> tuple[str, str]:
    """('pass' | 'fail' | 'error', detail) for one side on every data set of ``case``."""
    try:
        sess = run(carried(case.model))
        names = [i.name for i in sess.get_inputs()]
        worst = 0.0
        for inputs, expected in case.data_sets:
            expected = [to_carrier(e) for e in expected]
            got = sess.run(None, {n: to_carrier(v) for n, v in zip(names, inputs, strict=True)})
            for g, e in zip(got, expected, strict=True):
                if g.shape != e.shape or g.dtype != e.dtype:
                    return "fail", f"shape/dtype {g.shape} {g.dtype} != {e.shape} {e.dtype}"
                if not np.allclose(g, e, rtol=case.rtol, atol=case.atol):
                    worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))))
        return ("fail", f"max abs error {worst:.3g}") if worst else ("pass", "")
    except Unsupported as exc:
        return "unsupported", str(exc)
    except Exception as exc:
        return "error", str(exc).strip().splitlines()[0][:160]


def run_conformance() -> list[dict[str, str]]:
    """One row per backend test: its name and each side's verdict and detail."""
    import onnxruntime as ort

    import customops

    quiet = ort.SessionOptions()
    quiet.log_severity_level = 4  # a test ORT fails is a row of the table, not ORT's log on stderr

    def builtin(model: Any) -> Any:
        return ort.InferenceSession(model.SerializeToString(), quiet, providers=["CPUExecutionProvider"])

    def custom(model: Any) -> Any:
        result = customops.rewrite_model(model)
        for r in result.skipped:
            raise (Unsupported if r.reason in UNSUPPORTED_TYPES.values() else CustomOpsError)(r.reason)
        return customops.InferenceSession(result.model, quiet)

    rows = []
    for case in backend_cases():
        b, b_detail = _verdict(builtin, case)
        c, c_detail = _verdict(custom, case)
        rows.append(
            {
                "test": case.name,
                "builtin": b,
                "builtin_detail": b_detail,
                "custom": c,
                "custom_detail": c_detail,
            }
        )
    return rows


def report(as_json: bool = False) -> int:
    """Run the tests and print one row per test (a table, or JSON rows on stdout) and the pass counts;
    returns the exit status: 0 when every test passes on our side (a test of a type the layer cannot carry,
    customops.registry.UNSUPPORTED_TYPES, is listed as unsupported), else 1."""
    rows = run_conformance()
    if as_json:
        from customops import jsonout

        jsonout.dump(rows, sys.stdout, indent=1)
        print()
    else:
        width = max(len(r["test"]) for r in rows)
        print(f"{'test':{width}s}  built-in  custom")
        for r in rows:
            detail = "; ".join(
                f"{side}: {r[side + '_detail']}" for side in ("builtin", "custom") if r[side + "_detail"]
            )
            print(f"{r['test']:{width}s}  {r['builtin']:8s}  {r['custom']:6s}  {detail}".rstrip())
    passed_c = sum(r["custom"] == "pass" for r in rows)
    unsupported = sum(r["custom"] == "unsupported" for r in rows)
    passed_b = sum(r["builtin"] == "pass" for r in rows)
    refused = f" ({unsupported} of a type ONNX Runtime's custom-op layer cannot carry)" if unsupported else ""
    print(
        f"custom: {passed_c}/{len(rows) - unsupported} pass{refused}; built-in: {passed_b}/{len(rows)} pass",
        file=sys.stderr if as_json else sys.stdout,
    )
    return 0 if passed_c + unsupported == len(rows) else 1
