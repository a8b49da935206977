"""Sparse tensors are made dense by ONNX Runtime when it loads a model: a file of a few hundred bytes can
declare terabytes. The loader refuses a model whose sparse tensors, made dense, pass
model.io.SPARSE_DENSE_LIMIT (exit 2, one line, nothing written), wherever they sit; a small one runs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from customops.model.io import SPARSE_DENSE_LIMIT
from tests.helpers import run_cli


def _sparse(name: str, size: int) -> onnx.SparseTensorProto:
    values = numpy_helper.from_array(np.array([1.0], np.float32), name)
    return helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([7], np.int64), ""), [size])


def _model(size: int, where: str) -> onnx.ModelProto:
    """x + s, where s is a sparse float tensor of ``size`` elements: a sparse initializer of the main
    graph, or a sparse Constant inside an If's branch."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])
    if where == "initializer":
        graph = helper.make_graph([helper.make_node("Add", ["x", "s"], ["y"])], "g", [x], [y])
        graph.sparse_initializer.append(_sparse("s", size))
    else:
        branch = helper.make_graph(
            [helper.make_node("Constant", [], ["s"], sparse_value=_sparse("s", size))],
            "b",
            [],
            [helper.make_tensor_value_info("s", TensorProto.FLOAT, [size])],
        )
        cond = helper.make_tensor("c", TensorProto.BOOL, [], [True])
        nodes = [
            helper.make_node("If", ["c"], ["s"], then_branch=branch, else_branch=branch),
            helper.make_node("Add", ["x", "s"], ["y"]),
        ]
        graph = helper.make_graph(nodes, "g", [x], [y], [cond])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("where", ["initializer", "constant in a subgraph"])
@pytest.mark.parametrize("command", ["compare", "inspect", "rewrite"])
def test_a_huge_sparse_tensor_is_refused_before_onnx_runtime_sees_it(tmp_path, where, command) -> None:
    path = tmp_path / "sparse.onnx"
    onnx.save(_model(2**40, where), path)
    out = tmp_path / "out.onnx"
    args = [command, str(path), *([str(out)] if command == "rewrite" else [])]
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sparse tensors take more than" in lines[0], proc.stderr
    assert str(SPARSE_DENSE_LIMIT) in lines[0] and not out.exists()


def test_a_small_sparse_initializer_still_runs(tmp_path) -> None:
    path = tmp_path / "sparse.onnx"
    onnx.save(_model(16, "initializer"), path)
    proc = run_cli("compare", str(path), "-q", cwd=tmp_path)
    assert proc.returncode == 2 and "NOTHING TO COMPARE" in proc.stdout + proc.stderr, (
        proc.stdout + proc.stderr
    )
