"""Models already in our domain are untrusted input too.

onnxruntime-extensions' Python-op layer decodes every attribute we declared for a registration as UTF-8
on each run, before our hook is called; bytes that are not UTF-8 raise inside its C++ code and abort the
process (exit 134). customops.InferenceSession checks every node of our domain, in every graph, subgraph
and model-local function, before ONNX Runtime sees the model, whether it is given as a ModelProto, bytes
or a path. What could abort runs in a child process (tests.helpers.run_python).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.bridge import attrs as codec
from customops.bridge import domain
from customops.registry import DOMAIN
from tests.helpers import run_python

F32 = np.float32


def pad_model(where: str = "main") -> onnx.ModelProto:
    """A model whose one Pad (rewritten into our domain) sits in the main graph, in both branches of an If
    (``if``), in a Loop's body (``loop``) or in a model-local function (``function``)."""
    pad = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant", name="p")
    pads = helper.make_node(
        "Constant", [], ["pads"], value=onnx.numpy_helper.from_array(np.array([1, 1], np.int64))
    )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    functions, nodes = [], [pads, pad]
    if where == "function":
        functions = [
            helper.make_function("local", "PadIt", ["x"], ["y"], nodes, [helper.make_opsetid("", 19)])
        ]
        nodes = [helper.make_node("PadIt", ["x"], ["y"], domain="local")]
    elif where == "if":
        branch = helper.make_graph(nodes, "branch", [], [y])
        cond = helper.make_node(
            "Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])
        )
        nodes = [cond, helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)]
    elif where == "loop":
        body = helper.make_graph(
            [helper.make_node("Identity", ["cond_in"], ["cond_out"]), *nodes],
            "body",
            [
                helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            ],
            [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), y],
        )
        trip = helper.make_node(
            "Constant", [], ["n"], value=helper.make_tensor("n", TensorProto.INT64, [], [1])
        )
        nodes = [trip, helper.make_node("Loop", ["n", ""], ["ys"], body=body)]
        y = helper.make_tensor_value_info("ys", TensorProto.FLOAT, None)
    opsets = [helper.make_opsetid("", 19)] + ([helper.make_opsetid("local", 1)] if functions else [])
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y]), opset_imports=opsets, functions=functions
    )
    model.ir_version = 9
    return customops.rewrite(model)


def our_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    from customops.graphs import all_nodes

    return [n for n in all_nodes(model) if n.domain == DOMAIN]


def set_attr(model: onnx.ModelProto, name: str, value: object) -> onnx.ModelProto:
    """``model`` with attribute ``name`` of each of our nodes replaced by ``value`` (None: removed)."""
    for node in our_nodes(model):
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(kept)
        if value is not None:
            node.attribute.append(helper.make_attribute(name, value))
    return model


_CHILD = """
import json, sys, onnx, numpy as np
import customops
from tests.hostile.test_domain_models import pad_model, set_attr
where, name, path = sys.argv[1], sys.argv[2], sys.argv[3]
model = set_attr(pad_model(where), name, b"\\xff\\xfeUTF-8 it is not")
onnx.save(model, path)
said = []
for given in (model, model.SerializeToString(), path):
    try:
        sess = customops.InferenceSession(given)
        sess.run(None, {"x": np.ones(2, np.float32)})
        said.append("ran")
    except customops.CustomOpsError as exc:
        said.append(str(exc))
print(json.dumps(said))
"""


@pytest.mark.parametrize(
    ("where", "name"),
    [("main", "mode"), ("if", "customops_node"), ("loop", "customops_origin"), ("function", "mode")],
)
def test_an_attribute_that_is_not_utf8_is_refused_before_the_layer_aborts(tmp_path, where, name):
    """Today's abort (pybind11::error_already_set, exit 134) on the first run, for a kernel attribute
    and for the markers, wherever the node sits: refused with CustomOpsError for every form of model."""
    proc = run_python("-c", _CHILD, where, name, str(tmp_path / "m.onnx"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = json.loads(proc.stdout)
    assert len(said) == 3
    for message in said:
        assert "node 'p' (customops::Pad)" in message and f"attribute {name!r} is not UTF-8" in message


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("mode", None, "lacks attribute(s) mode"),
        ("customops_node", None, "lacks attribute(s) customops_node"),
        ("mode", 3, "attribute 'mode' is of type INT"),
        ("mode", ["constant"], "attribute 'mode' is of type STRINGS"),
        ("stray", "x", "has attribute 'stray', which it does not take"),
        ("stray\x1b[2J", "x", "has attribute 'stray\\x1b[2J'"),
        ("customops_restore", b"\xff", "attribute 'customops_restore' is not UTF-8"),
    ],
)
def test_attributes_are_exactly_the_declared_strings(name, value, rule):
    model = set_attr(pad_model("if"), name, value)
    with pytest.raises(customops.CustomOpsError, match="node 'p' \\(customops::Pad\\)") as info:
        customops.InferenceSession(model)
    assert rule in str(info.value)


def _resize_model() -> onnx.ModelProto:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", name="r")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], F32), "scales")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return customops.rewrite(model)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("axes", '{"1": 2}'),  # decoded leniently, this was [1]
        ("axes", "[1.5]"),
        ("axes", "[true]"),
        ("axes", "[9223372036854775808]"),  # beyond int64
        ("axes", "[" * 5000),
        ("antialias", "1_0"),
        ("antialias", " 1"),
        ("antialias", "99999999999999999999"),
        ("cubic_coeff_a", "nope"),
        ("extrapolation_value", ""),
    ],
)
def test_kernel_attributes_must_decode_as_the_codec_writes_them(name, text):
    model = set_attr(_resize_model(), name, text)
    with pytest.raises(
        customops.CustomOpsError, match=f"node 'r' \\(customops::Resize\\) attribute '{name}'"
    ):
        customops.InferenceSession(model)


def test_arity_and_op_names_of_our_domain():
    for change, rule in [
        (lambda n: n.input.append("x"), "must have 4 inputs"),
        (lambda n: n.input.__setitem__(1, ""), "must have 4 inputs, none of them empty"),
        (lambda n: n.output.append("z"), "must have exactly 1 output(s), each named"),
        (lambda n: setattr(n, "op_type", "NotOurs"), "is not one of the ops of domain 'customops'"),
    ]:
        model = _resize_model()
        change(our_nodes(model)[0])
        with pytest.raises(customops.CustomOpsError, match="node 'r'") as info:
            customops.InferenceSession(model.SerializeToString())
        assert rule in str(info.value)


def test_models_the_rewriter_writes_pass_and_run():
    for where in ("main", "if", "loop", "function"):
        model = pad_model(where)
        domain.check_model(model)
        (y,) = customops.InferenceSession(model).run(None, {"x": np.ones(2, F32)})
        assert y.ravel().tolist() == [0, 1, 1, 0]


def test_the_codec_reads_back_what_it_writes():
    for kind, value in [("int", -(2**63)), ("ints", [2**63 - 1, 0]), ("floats", []), ("ints", None)]:
        assert codec.decode(kind, codec.encode(kind, value)) == value


def test_a_model_file_that_is_not_an_onnx_model_is_refused(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x08\x07\xff\xff\xff")
    with pytest.raises(customops.CustomOpsError, match="is not an ONNX model"):
        customops.InferenceSession(str(path))
    with pytest.raises(customops.CustomOpsError, match="is not a regular file"):
        customops.InferenceSession(str(tmp_path))


_REF_CHILD = """
import json, sys, onnx, numpy as np
from onnx import helper
import customops
from tests.hostile.test_domain_models import pad_model
name = sys.argv[1]
model = pad_model("function")
model.functions[0].attribute.append("m")
for node in model.functions[0].node:
    for a in node.attribute:
        if node.domain == "customops" and a.name == name:
            a.ClearField("s")
            a.ref_attr_name = "m"
model.graph.node[0].attribute.append(helper.make_attribute("m", b"\\xff\\xfenot UTF-8"))
try:
    customops.InferenceSession(model).run(None, {"x": np.ones(2, np.float32)})
    print(json.dumps("ran"))
except customops.CustomOpsError as exc:
    print(json.dumps(str(exc)))
"""


@pytest.mark.parametrize("name", ["mode", "customops_node"])
def test_an_attribute_of_ours_taken_from_a_function_caller_is_refused(name):
    """A node of ours in a model-local function whose attribute refers to one of the function's own
    (``ref_attr_name``) gets its value from the calling node, which the check of our nodes does not see:
    ONNX Runtime put the caller's bytes that are not UTF-8 there and the layer aborted (exit 134)."""
    proc = run_python("-c", _REF_CHILD, name)
    assert proc.returncode == 0, proc.stderr[-2000:]
    message = json.loads(proc.stdout)
    assert "node 'p' (customops::Pad)" in message
    assert f"attribute {name!r} refers to attribute 'm' of a function's caller" in message
