"""customops compare on AffineGrid: each deviation of ORT's kernel (docs/ort-deviations.md) is flagged,
attributed to ORT and labelled with its id, and our side gives the spec answer computed by hand."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import customops
from tests.helpers import Deviation, check_deviation

F32 = np.float32
IDENTITY_2D = np.array([[[1, 0, 0], [0, 1, 0]]], F32)

DEVIATIONS = [
    Deviation(
        "AG-ALIGN-CORNERS-SIZE-1",
        "AffineGrid",
        {"theta": IDENTITY_2D, "size": np.array([1, 1, 1, 3], np.int64)},
        20,
        {"align_corners": 1},
        ("size",),
        ("three-way",),  # onnx.reference gives y = -1 (its arange of step 2 / 0 stops at the start)
        # one row: its centre is both -1 and 1, so y = 0 (PyTorch's answer); x = -1, 0, 1
        spec=[[[[-1, 0], [0, 0], [1, 0]]]],
        out_rank=4,
    ),
    Deviation(
        "AG-ALIGN-CORNERS-SIZE-1",
        "AffineGrid",
        {
            "theta": np.array([[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]], F32),
            "size": np.array([1, 1, 1, 2, 2]),
        },
        20,
        {"align_corners": 1},
        ("size",),
        ("three-way",),
        # 3-D, one slice: its centre is both -1 and 1, so z = 0; x and y = -1, 1
        spec=[[[[[-1, -1, 0], [1, -1, 0]], [[-1, 1, 0], [1, 1, 0]]]]],
        out_rank=5,
    ),
    Deviation(
        "AG-ZERO-SIZE",
        "AffineGrid",
        {"theta": IDENTITY_2D, "size": np.array([1, 1, 0, 3], np.int64)},
        20,
        {},
        ("size",),
        ("builtin-cannot-run",),
        spec=np.zeros((1, 0, 3, 2), F32),
        out_rank=4,
    ),
    Deviation(
        "AG-FLOAT16-FUNCTION",
        "AffineGrid",
        {"theta": IDENTITY_2D.astype(np.float16), "size": np.array([1, 1, 2, 3], np.int64)},
        20,
        {},
        ("size",),
        ("builtin-cannot-run",),
        # align_corners=0: x = (2i + 1 - 3) / 3 = -2/3, 0, 2/3 and y = (2j + 1 - 2) / 2 = -1/2, 1/2
        spec=np.array(
            [[[[-2 / 3, -0.5], [0, -0.5], [2 / 3, -0.5]], [[-2 / 3, 0.5], [0, 0.5], [2 / 3, 0.5]]]],
            np.float16,
        ),
        out_rank=4,
    ),
]


@pytest.mark.parametrize("dev", DEVIATIONS, ids=lambda d: d.id)
def test_known_ort_deviation_is_flagged_attributed_and_ours_gives_the_spec_answer(dev):
    check_deviation(dev)


def _bfloat16_model():
    """A bfloat16 AffineGrid between Casts (ORT's Python API cannot feed bfloat16)."""
    nodes = [
        helper.make_node("Cast", ["theta"], ["t16"], to=TensorProto.BFLOAT16),
        helper.make_node("AffineGrid", ["t16", "size"], ["g16"]),
        helper.make_node("Cast", ["g16"], ["grid"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("theta", TensorProto.FLOAT, [1, 2, 3]),
            helper.make_tensor_value_info("size", TensorProto.INT64, [4]),
        ],
        [helper.make_tensor_value_info("grid", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    return model


def test_t_affinegrid_bfloat16_has_no_kernel_in_ort_and_runs_bridged_here():
    model = _bfloat16_model()
    with pytest.raises(Exception, match="Could not find an implementation"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (grid,) = customops.InferenceSession(customops.rewrite(model)).run(
        None, {"theta": np.array([[[2, 0, 1], [0, 1, 0]]], F32), "size": np.array([1, 1, 1, 2], np.int64)}
    )
    # x = -1/2, 1/2 -> 2x + 1 = 0, 2; y = 0 (align_corners=0, one row)
    assert grid.tolist() == [[[[0, 0], [2, 0]]]]
