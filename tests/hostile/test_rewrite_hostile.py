"""The rewriter on hostile models: exporter shapes ORT would trust for our outputs, corrupt restore
information, bridges below opset 6, already-rewritten models, string constants that cannot cross
onnxruntime-extensions' Python layer. Sessions that might abort run in a subprocess."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import AttributeProto, TensorProto, helper

import customops
from tests.helpers import NEVER, run_cli

F = TensorProto.FLOAT
ABORTS = (134, 139, -6, -11)


# ---------------------------------------------------------------------------------------------
# value_info of our outputs must not reach ORT's buffer planner


def _fpn_nodes(prefix: str = "") -> list[onnx.NodeProto]:
    """A detector's top-down step: the deep feature ``x`` (made to wait for the skip path) is resized x2
    and concatenated with the skip connection ``u``; the exporter gave the Resize output the skip's
    symbolic dims, so ORT plans to put it in the buffer ``t`` frees."""
    p = prefix
    return [
        helper.make_node("Sin", ["s"], [p + "t"], name=p + "sin1"),
        helper.make_node("Sin", [p + "t"], [p + "u"], name=p + "sin2"),
        helper.make_node("ReduceMean", [p + "u"], [p + "k"], name=p + "mean"),
        helper.make_node("Mul", ["x", p + "k"], [p + "xa"], name=p + "mul"),
        helper.make_node("Resize", [p + "xa", "", "scales"], [p + "r"], name=p + "resize", mode="nearest"),
        helper.make_node("Concat", [p + "u", p + "r"], [p + "y"], name=p + "concat", axis=1),
    ]


def _shared_dims_model(in_subgraph: bool = False) -> onnx.ModelProto:
    skip_dims = [1, 4, "h", "w"]
    vi = [helper.make_tensor_value_info(n, F, skip_dims) for n in ("t", "u", "r")]
    inputs = [
        helper.make_tensor_value_info("x", F, [1, 4, "H", "W"]),
        helper.make_tensor_value_info("s", F, skip_dims),
    ]
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    y = helper.make_tensor_value_info("y", F, [1, 8, "h", "w"])
    if not in_subgraph:
        graph = helper.make_graph(_fpn_nodes(), "fpn", inputs, [y], [scales], value_info=vi)
    else:
        then = helper.make_graph(_fpn_nodes(), "then", [], [y], value_info=vi)
        other = helper.make_graph(
            [helper.make_node("Concat", ["s", "s"], ["e"], axis=1)], "else", [], [_vi("e")]
        )
        node = helper.make_node("If", ["c"], ["out"], name="if", then_branch=then, else_branch=other)
        cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
        graph = helper.make_graph([node], "fpn", [*inputs, cond], [_vi("out")], [scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _vi(name, elem=F):
    return helper.make_tensor_value_info(name, elem, None)


_RUN = """
import sys, numpy as np, customops

print("customops from", customops.__file__)
feed = dict(np.load(sys.argv[2]))
sess = customops.InferenceSession(sys.argv[1])
try:
    np.save(sys.argv[3], sess.run(None, feed)[0])
    print("ran")
except Exception as exc:
    print("error:", " ".join(str(exc).split()))
"""


def _run_isolated(tmp_path, model, feed):
    """Run ``model`` on ``feed`` in a child process: (exit code, stdout, output or None)."""
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    np.savez(tmp_path / "feed.npz", **feed)
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, "m.onnx", "feed.npz", "out.npy"],
        cwd=tmp_path,  # not the repository: PYTHONPATH decides which customops runs
        capture_output=True,
        text=True,
        timeout=NEVER,
    )
    out = np.load(tmp_path / "out.npy", allow_pickle=True) if "ran" in proc.stdout else None
    return proc.returncode, proc.stdout + proc.stderr, out


def _feed(side, skip, in_subgraph):
    rng = np.random.default_rng(0)
    feed = {
        "x": rng.standard_normal((1, 4, side, side)).astype(np.float32),
        "s": rng.standard_normal((1, 4, skip, skip)).astype(np.float32),
    }
    if in_subgraph:
        feed["c"] = np.array(True)
    return feed


@pytest.mark.parametrize("in_subgraph", [False, True], ids=["graph", "if-branch"])
def test_a_bad_image_size_raises_ort_s_error_instead_of_aborting(tmp_path, in_subgraph):
    model = _shared_dims_model(in_subgraph)
    rewritten = customops.rewrite(model)
    # 7x7 skip, 4x4 deep feature: the x2 Resize makes 8x8 where the exporter's dims say 7x7
    code, out, _ = _run_isolated(tmp_path, rewritten, _feed(4, 7, in_subgraph))
    assert code not in ABORTS, out
    assert code == 0 and "error:" in out and "Concat" in out, out
    assert "re-use buffer" not in out


@pytest.mark.parametrize("in_subgraph", [False, True], ids=["graph", "if-branch"])
def test_a_good_image_size_gives_the_right_answer(tmp_path, in_subgraph):
    model = _shared_dims_model(in_subgraph)
    feed = _feed(4, 8, in_subgraph)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, feed
    )[0]
    code, out, got = _run_isolated(tmp_path, customops.rewrite(model), feed)
    assert code == 0 and got is not None, out
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("in_subgraph", [False, True], ids=["graph", "if-branch"])
def test_restore_gives_back_the_exporter_s_value_info_exactly(in_subgraph):
    model = _shared_dims_model(in_subgraph)
    rewritten = customops.rewrite(model)
    assert customops.restore(rewritten).SerializeToString() == model.SerializeToString()


def _all_value_info(model):
    graphs = [model.graph]
    for g in graphs:
        for node in g.node:
            graphs.extend(a.g for a in node.attribute if a.type == AttributeProto.GRAPH)
    return {v.name: v for g in graphs for v in g.value_info}


def test_our_outputs_keep_their_element_type_and_lose_their_shape():
    rewritten = customops.rewrite(_shared_dims_model(in_subgraph=True))
    infos = _all_value_info(rewritten)
    assert infos["r"].type.tensor_type.elem_type == F
    assert not infos["r"].type.tensor_type.HasField("shape")
    assert infos["u"].type.tensor_type.shape.dim[2].dim_param == "h"  # other values keep theirs


def _bridged_model():
    """float16 Resize (bridged through float) whose output feeds built-in nodes in the graph and in an
    If branch (outer scope); the exporter gave every value a shape."""
    h = TensorProto.FLOAT16
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    then = helper.make_graph([helper.make_node("Add", ["r", "r"], ["a"])], "then", [], [_vi("a", h)])
    other = helper.make_graph([helper.make_node("Neg", ["r"], ["b"])], "else", [], [_vi("b", h)])
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["r"], name="resize"),
        helper.make_node("If", ["c"], ["i"], then_branch=then, else_branch=other),
        helper.make_node("Cast", ["i"], ["y"], to=TensorProto.DOUBLE),
    ]
    graph = helper.make_graph(
        nodes,
        "bridged",
        [helper.make_tensor_value_info("x", h, [1, 1, "h", "w"]), _vi("c", TensorProto.BOOL)],
        [_vi("y", TensorProto.DOUBLE)],
        [scales],
        value_info=[helper.make_tensor_value_info("r", h, [1, 1, "h", "w"])],  # wrong, as exported
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_bridged_output_keeps_its_type_for_the_built_in_nodes_after_it(tmp_path):
    model = _bridged_model()
    rewritten = customops.rewrite(model)
    casts = [n for n in rewritten.graph.node if n.op_type == "Cast" and n.output[0] == "r"]
    assert casts, "the bridge's Cast back produces the original output"
    r = _all_value_info(rewritten)["r"]
    assert r.type.tensor_type.elem_type == TensorProto.FLOAT16 and not r.type.tensor_type.HasField("shape")
    feed = {"x": np.arange(4, dtype=np.float16).reshape(1, 1, 2, 2), "c": np.array(True)}
    code, out, got = _run_isolated(tmp_path, rewritten, feed)
    assert code == 0 and got is not None, out
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, feed
    )[0]
    np.testing.assert_array_equal(got, expected)
    assert customops.restore(rewritten).SerializeToString() == model.SerializeToString()


# ---------------------------------------------------------------------------------------------
# Corrupt restore information


def _rewritten_pad():
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")
    pads = onnx.numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", F, [1, 2])], [_vi("y")], [pads]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return customops.rewrite(model)


def _restore_info(text):
    return json.dumps({"node": text, "helpers": []})


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


CORRUPTIONS = {
    "not-json": helper.make_attribute("customops_restore", "!!!!"),
    "non-base64-node": helper.make_attribute("customops_restore", _restore_info("!!!!")),
    "base64-of-garbage": helper.make_attribute("customops_restore", _restore_info(_b64(b"\xff\x00garbage"))),
    "empty-node": helper.make_attribute("customops_restore", _restore_info(_b64(b""))),
    "unknown-op": helper.make_attribute(
        "customops_restore",
        _restore_info(_b64(helper.make_node("NoSuchOp", ["x"], ["y"]).SerializeToString())),
    ),
    "helpers-not-a-list": helper.make_attribute(
        "customops_restore",
        json.dumps({"node": _b64(helper.make_node("Pad", ["x"], ["y"]).SerializeToString()), "helpers": 3}),
    ),
    "wrong-attribute-type": helper.make_attribute("customops_restore", 7),
    "nested-too-deeply": helper.make_attribute("customops_restore", "[" * 200_000),
}


def _corrupt(kind):
    model = _rewritten_pad()
    custom = next(n for n in model.graph.node if n.domain == customops.DOMAIN)
    keep = [a for a in custom.attribute if a.name != "customops_restore"]
    del custom.attribute[:]
    custom.attribute.extend([*keep, CORRUPTIONS[kind]])
    return model


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_restore_refuses_corrupt_restore_information_naming_the_node(kind):
    with pytest.raises(
        customops.CustomOpsError, match=r"node 'pad': its customops_restore attribute is corrupt"
    ):
        customops.restore(_corrupt(kind))


@pytest.mark.parametrize("kind", ["not-json", "non-base64-node", "empty-node", "wrong-attribute-type"])
def test_the_restore_command_exits_2_with_one_line_and_writes_nothing(tmp_path, kind):
    onnx.save(_corrupt(kind), tmp_path / "in.onnx")
    proc = run_cli("restore", "in.onnx", "out.onnx", cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'pad'" in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.onnx").exists()


# ---------------------------------------------------------------------------------------------
# Pad-2 float16 needs a Cast bridge, and ORT has no Cast kernel before opset 6


def _pad2_float16(opset):
    node = helper.make_node("Pad", ["x"], ["y"], name="pad", pads=[0, 1, 0, 1], value=1.5)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 2])], [_vi("y", 10)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 3
    return model


@pytest.mark.parametrize("opset", [2, 3, 4, 5])
def test_pad_2_float16_below_opset_6_is_left_alone_with_the_reason(opset):
    model = _pad2_float16(opset)
    result = customops.rewrite_model(model)
    (report,) = result.nodes
    assert report.status == "skipped", report.line()
    assert "no Cast kernel before opset 6" in report.reason and f"opset {opset}" in report.reason
    assert result.model.SerializeToString() == model.SerializeToString()


@pytest.mark.parametrize("opset", [6, 7, 8, 9, 10])
def test_pad_2_float16_from_opset_6_is_bridged_and_runs(tmp_path, opset):
    model = _pad2_float16(opset)
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes] == ["swapped"]
    for cast in (n for n in result.model.graph.node if n.op_type == "Cast"):
        (to,) = cast.attribute
        assert to.type == AttributeProto.INT
    code, out, got = _run_isolated(tmp_path, result.model, {"x": np.array([[1, 2]], np.float16)})
    assert code == 0 and got is not None, out
    np.testing.assert_array_equal(got, np.array([[1.5, 1, 2, 1.5]], np.float16))


def test_the_registry_and_support_table_say_where_the_bridge_stops():
    from customops.registry import lookup, type_support
    from customops.support import support_table

    pad2 = lookup("Pad", 10)
    assert type_support(pad2, "float16", 5)[0] == "no"
    assert type_support(pad2, "float16", 6) == ("bridged", "float")
    (row,) = [
        r for r in support_table(probe=False) if (r.op, r.version, r.elem_type) == ("Pad", 2, "float16")
    ]
    assert "opset 6" in row.note
    assert not [r for r in support_table(probe=False) if r.note and r.version >= 6]


# ---------------------------------------------------------------------------------------------
# An already-rewritten model


def test_rewrite_refuses_a_rewritten_model_and_counts_its_nodes():
    from customops.model.rewriter import is_rewritten

    rewritten = _rewritten_pad()
    assert is_rewritten(rewritten) == 1
    assert is_rewritten(customops.restore(rewritten)) == 0
    with pytest.raises(customops.CustomOpsError) as info:
        customops.rewrite_model(rewritten)
    message = str(info.value)
    assert "already rewritten (1 node(s) in the customops domain)" in message
    assert "customops.restore(model)" in message and "\n" not in message


def test_the_rewrite_command_says_to_restore_first(tmp_path):
    onnx.save(_rewritten_pad(), tmp_path / "in.onnx")
    proc = run_cli("rewrite", "in.onnx", "out.onnx", cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "already rewritten (1 node(s) in the customops domain)" in line
    assert "customops restore in.onnx OUT" in line
    assert not (tmp_path / "out.onnx").exists()


# ---------------------------------------------------------------------------------------------
# Constant strings onnxruntime-extensions' Python layer cannot carry exactly


def _string_model(value: bytes, as_constant: bool):
    data = helper.make_tensor("data", TensorProto.STRING, [2], [b"ok", value])
    pads = onnx.numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    nodes = [helper.make_node("Pad", ["data", "pads"], ["y"], name="pad", mode="edge")]
    inits = [pads]
    if as_constant:
        nodes.insert(0, helper.make_node("Constant", [], ["data"], value=data))
    else:
        inits.append(data)
    graph = helper.make_graph(nodes, "g", [], [_vi("y", TensorProto.STRING)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("as_constant", [False, True], ids=["initializer", "constant"])
@pytest.mark.parametrize(
    ("value", "why"), [(b"\xff\xfe", "not valid UTF-8"), (b"a\x00b", "NUL")], ids=["invalid-utf8", "nul"]
)
def test_a_string_constant_that_cannot_cross_is_left_alone_with_the_reason(value, why, as_constant):
    model = _string_model(value, as_constant)
    result = customops.rewrite_model(model)
    (report,) = result.nodes
    assert report.status == "skipped" and why in report.reason and "'data'" in report.reason
    assert result.model.SerializeToString() == model.SerializeToString()


def test_a_valid_string_constant_is_still_swapped_and_runs(tmp_path):
    result = customops.rewrite_model(_string_model("é".encode(), as_constant=True))
    assert [r.status for r in result.nodes] == ["swapped"]
    code, out, got = _run_isolated(tmp_path, result.model, {})
    assert code == 0 and got is not None, out
    assert got.tolist() == ["ok", "ok", "é", "é"]
