"""Models that lie about where their data is, what their text is and what they hold: external data reached
through sparse tensors and attributes the loader did not look at, models in memory that point at external
data, text that is not UTF-8, names that drive the terminal, and nodes of our domain that restore cannot
put back. Commands run in a child process whose working directory is the model's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.graphs import model_tensors
from customops.model.io import load_model_files
from tests.helpers import ROOT, run_cli

DECOY = np.array([1.5, 2.5, 3.5, 4.5], np.float32)
"""What the model's own directory holds under the location the model names."""


def _to_external(tensor: onnx.TensorProto, location: str) -> None:
    for name in ("raw_data", "float_data", "int64_data", "int32_data"):
        tensor.ClearField(name)
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location


def _sparse(location: str | None, part: str = "values") -> onnx.SparseTensorProto:
    """A sparse float tensor of dense shape [4] (4 values, indices [4, 1]) whose ``part`` is kept at
    ``location`` (None: in the model)."""
    values = onnx.numpy_helper.from_array(np.zeros(4, np.float32), "sv")
    indices = onnx.numpy_helper.from_array(np.arange(4, dtype=np.int64).reshape(4, 1), "si")
    if location is not None:
        _to_external(values if part == "values" else indices, location)
    return helper.make_sparse_tensor(values, indices, [4])


def _sparse_constant_model(location: str) -> onnx.ModelProto:
    """Constant(sparse_value) -> Pad: the Constant's values kept at ``location``."""
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const", sparse_value=_sparse(location)),
        helper.make_node("Pad", ["c", "pads"], ["y"], name="pad"),
    ]
    pads = onnx.numpy_helper.from_array(np.array([0, 0], np.int64), "pads")
    graph = helper.make_graph(
        nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [pads]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_compare_reads_sparse_external_data_from_the_model_s_directory_never_the_package_s(tmp_path):
    # 'pyproject.toml' exists both in the model's directory (the decoy) and in the package's checkout,
    # where compare's children start: only the model's own may come back
    (tmp_path / "pyproject.toml").write_bytes(DECOY.tobytes())
    onnx.save(_sparse_constant_model("pyproject.toml"), tmp_path / "m.onnx")
    proc = run_cli("compare", "m.onnx", "--save-outputs", "out.npz", "--quiet", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    package_bytes = (Path(ROOT) / "pyproject.toml").read_bytes()[:16]
    with np.load(tmp_path / "out.npz") as saved:
        for side in ("builtin", "custom"):
            got = saved[f"{side}/y"]
            assert got.tobytes() != package_bytes
            np.testing.assert_array_equal(got, DECOY)


@pytest.mark.parametrize("location", ["pyproject.toml", "../outside.bin"])
def test_the_api_refuses_sparse_external_data_that_is_not_in_the_model_s_directory(tmp_path, location):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside.bin").write_bytes(DECOY.tobytes())
    onnx.save(_sparse_constant_model(location), work / "m.onnx")
    for call in (customops.compare, customops.rewrite, customops.restore):
        with pytest.raises(customops.CustomOpsError, match=r"external data of tensor 'sv'"):
            call(str(work / "m.onnx"))


def _graph_with(nodes=(), initializers=(), sparse=()) -> onnx.GraphProto:
    return helper.make_graph(
        list(nodes),
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        list(initializers),
        sparse_initializer=list(sparse),
    )


def _dense(location: str) -> onnx.TensorProto:
    tensor = onnx.numpy_helper.from_array(np.zeros(4, np.float32), "dense")
    _to_external(tensor, location)
    return tensor


def _placed(place: str, location: str) -> onnx.ModelProto:
    """A model holding one tensor with external data at ``location``, in the place ``place``."""
    dense, functions, training = _dense(location), [], []
    make = helper.make_node
    graphs = {
        "initializer": lambda: _graph_with(initializers=[dense]),
        "sparse-initializer-values": lambda: _graph_with(sparse=[_sparse(location)]),
        "sparse-initializer-indices": lambda: _graph_with(sparse=[_sparse(location, "indices")]),
        "constant-value": lambda: _graph_with([make("Constant", [], ["y"], value=dense)]),
        "constant-sparse-values": lambda: _graph_with(
            [make("Constant", [], ["y"], sparse_value=_sparse(location))]
        ),
        "constant-sparse-indices": lambda: _graph_with(
            [make("Constant", [], ["y"], sparse_value=_sparse(location, "indices"))]
        ),
        "tensors-attribute": lambda: _graph_with([make("Foo", [], ["y"], domain="x", ts=[dense])]),
        "sparse-tensors-attribute": lambda: _graph_with(
            [make("Foo", [], ["y"], domain="x", sts=[_sparse(None), _sparse(location)])]
        ),
        "subgraph": lambda: _graph_with(
            [
                make(
                    "If",
                    ["c"],
                    ["y"],
                    then_branch=_graph_with(initializers=[dense]),
                    else_branch=_graph_with(),
                )
            ]
        ),
    }
    if place == "function":
        body = [make("Constant", [], ["y"], sparse_value=_sparse(location))]
        functions = [helper.make_function("x", "F", [], ["y"], body, [helper.make_opsetid("", 13)])]
        graph = _graph_with([make("F", [], ["y"], domain="x")])
    elif place == "training-graph":
        graph = _graph_with()
        training = [onnx.TrainingInfoProto(initialization=_graph_with(initializers=[dense]))]
    else:
        graph = graphs[place]()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], functions=functions)
    model.training_info.extend(training)
    return model


PLACES = [
    "initializer",
    "sparse-initializer-values",
    "sparse-initializer-indices",
    "constant-value",
    "constant-sparse-values",
    "constant-sparse-indices",
    "tensors-attribute",
    "sparse-tensors-attribute",
    "subgraph",
    "function",
    "training-graph",
]


@pytest.mark.parametrize("place", PLACES)
def test_every_tensor_a_model_can_hold_goes_through_the_one_check(tmp_path, place):
    (tmp_path / "outside.bin").write_bytes(DECOY.tobytes())
    (tmp_path / "work").mkdir()
    onnx.save(_placed(place, "../outside.bin"), tmp_path / "work" / "m.onnx")
    with pytest.raises(customops.CustomOpsError, match=r"leads out of the model's directory"):
        load_model_files(tmp_path / "work" / "m.onnx")
    # inside the directory it is read, and nothing external is left
    data = np.arange(4, dtype=np.int64 if "indices" in place else np.float32)
    (tmp_path / "work" / "in.bin").write_bytes(data.tobytes())
    onnx.save(_placed(place, "in.bin"), tmp_path / "work" / "ok.onnx")
    model, external, files = load_model_files(tmp_path / "work" / "ok.onnx")
    assert external and files[1] == tmp_path / "work" / "in.bin"
    assert all(t.data_location != TensorProto.EXTERNAL for t in model_tensors(model))


def _in_memory_entries():
    return {
        "rewrite": customops.rewrite,
        "rewrite_model": customops.rewrite_model,
        "restore": customops.restore,
        "compare": customops.compare,
        "InferenceSession": customops.InferenceSession,
    }


@pytest.mark.parametrize("form", ["ModelProto", "bytes"])
@pytest.mark.parametrize("entry", ["rewrite", "rewrite_model", "restore", "compare", "InferenceSession"])
def test_a_model_in_memory_that_points_at_external_data_is_refused(tmp_path, monkeypatch, form, entry):
    # the current directory holds the file: ORT would read it from there
    (tmp_path / "pyproject.toml").write_bytes(DECOY.tobytes())
    monkeypatch.chdir(tmp_path)
    model = _sparse_constant_model("pyproject.toml")
    given = model if form == "ModelProto" else model.SerializeToString()
    with pytest.raises(customops.CustomOpsError, match=r"tensor 'sv' keeps its data in external data"):
        _in_memory_entries()[entry](given)


# ---------------------------------------------------------------------------------------------
# Text that is not UTF-8

MARK = "QQMARKQQ"


def _marked_model(place: str) -> onnx.ModelProto:
    """A Pad model whose text field ``place`` holds :data:`MARK` (replaced by bytes that are not UTF-8)."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")
    pads = onnx.numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [pads],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    if place == "node-name":
        node = model.graph.node[0]
        node.name = MARK
    elif place == "value-name":
        model.graph.node[0].output[0] = MARK
        model.graph.output[0].name = MARK
    elif place == "doc-string":
        model.graph.node[0].doc_string = MARK
    elif place == "metadata":
        helper.set_model_props(model, {"author": MARK})
    elif place == "dim-param":
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = MARK
    return model


TEXT_PLACES = {
    "node-name": "graph.node[0].name",
    "value-name": ("graph.node[0].output[0]", "graph.output[0].name"),
    "doc-string": "graph.node[0].doc_string",
    "metadata": "metadata_props[0].value",
    "dim-param": "graph.input[0].type.tensor_type.shape.dim[0].dim_param",
}


def _names_place(message: str, place: str) -> bool:
    """Whether ``message`` names the field of ``place`` (a value name sits in two fields: either)."""
    where = TEXT_PLACES[place]
    return any(w in message for w in ((where,) if isinstance(where, str) else where))


def _not_utf8(place: str) -> bytes:
    data = _marked_model(place).SerializeToString()
    assert data.count(MARK.encode()) >= 1
    return data.replace(MARK.encode(), b"QQ\xff\xfeRKQQ")


@pytest.mark.parametrize("place", sorted(TEXT_PLACES))
def test_text_that_is_not_utf8_is_our_error_naming_the_field(place):
    data = _not_utf8(place)
    parsed = onnx.ModelProto.FromString(data)
    for call in (customops.rewrite_model, customops.restore):
        for given in (data, parsed):
            with pytest.raises(customops.CustomOpsError) as info:
                call(given)
            assert _names_place(str(info.value), place) and "not UTF-8" in str(info.value)


@pytest.mark.parametrize("command", ["rewrite", "restore", "compare"])
@pytest.mark.parametrize("place", ["node-name", "value-name", "doc-string"])
def test_the_commands_refuse_text_that_is_not_utf8_with_one_line(tmp_path, command, place):
    (tmp_path / "in.onnx").write_bytes(_not_utf8(place))
    args = ["in.onnx"] if command == "compare" else ["in.onnx", "out.onnx"]
    proc = run_cli(command, *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert _names_place(line, place) and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.onnx").exists()


# ---------------------------------------------------------------------------------------------
# Names that would drive the terminal

NASTY = "pad\x1b[2J\x1b]0;owned\x07\nfake line\r"


def _nasty_model() -> onnx.ModelProto:
    model = _marked_model("node-name")
    model.graph.node[0].name = NASTY
    return model


def _clean(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\r"), repr(text)


@pytest.mark.parametrize("dry_run", [False, True])
def test_rewrite_s_report_lines_escape_names_from_the_model(tmp_path, dry_run):
    onnx.save(_nasty_model(), tmp_path / "in.onnx")
    proc = run_cli("rewrite", "in.onnx", "out.onnx", *(["--dry-run"] if dry_run else []), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _clean(proc.stdout)
    swapped = [line for line in proc.stdout.splitlines() if line.startswith("swapped")]
    assert swapped == ["swapped  pad\\x1b[2J\\x1b]0;owned\\x07\\nfake line\\r [Pad-13]"]


def test_compare_s_progress_and_report_escape_names_from_the_model(tmp_path):
    onnx.save(_nasty_model(), tmp_path / "in.onnx")
    proc = run_cli("compare", "in.onnx", "--all-rows", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _clean(proc.stdout + proc.stderr)
    assert "node 1/1: pad\\x1b[2J\\x1b]0;owned\\x07\\nfake line\\r [Pad-13]" in proc.stderr
    assert not any(line.startswith("fake line") for line in (proc.stdout + proc.stderr).splitlines())


# ---------------------------------------------------------------------------------------------
# Nodes of our domain that restore cannot put back


def _with_orphans(count: int = 1) -> onnx.ModelProto:
    """A rewritten Pad model whose custom node lost its restore record, with ``count - 1`` more nodes
    of our domain that never had one."""
    model = customops.rewrite(_marked_model("none"))
    custom = next(n for n in model.graph.node if n.domain == customops.DOMAIN)
    keep = [a for a in custom.attribute if a.name != "customops_restore"]
    del custom.attribute[:]
    custom.attribute.extend(keep)
    for i in range(count - 1):
        model.graph.node.append(
            helper.make_node("Pad", [], [f"o{i}"], name=f"orphan{i}", domain=customops.DOMAIN)
        )
    return model


def test_restore_names_the_nodes_it_cannot_put_back_and_restores_nothing():
    with pytest.raises(customops.CustomOpsError) as info:
        customops.restore(_with_orphans(8))
    message = str(info.value)
    assert message.startswith("8 node(s) in the customops domain cannot be restored: 'pad' [Pad]")
    assert "'orphan3' [Pad]" in message and "and 3 more" in message


def test_the_restore_command_exits_2_and_writes_nothing_when_a_node_cannot_be_restored(tmp_path):
    onnx.save(_with_orphans(), tmp_path / "in.onnx")
    proc = run_cli("restore", "in.onnx", "out.onnx", cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "1 node(s) in the customops domain cannot be restored: 'pad' [Pad]" in line
    assert "restored" not in proc.stdout and not (tmp_path / "out.onnx").exists()


def test_the_restore_command_counts_what_it_restored(tmp_path):
    onnx.save(customops.rewrite(_marked_model("none")), tmp_path / "in.onnx")
    onnx.save(_marked_model("none"), tmp_path / "plain.onnx")
    proc = run_cli("restore", "in.onnx", "out.onnx", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("restored 1 node(s)"), proc.stderr
    assert onnx.load(tmp_path / "out.onnx") == _marked_model("none")
    proc = run_cli("restore", "plain.onnx", "out2.onnx", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("nothing to restore"), proc.stderr
