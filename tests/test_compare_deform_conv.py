"""customops compare on ORT's DeformConv deviations (docs/ort-deviations.md, DeformConv): each is flagged,
blamed on ORT, labelled with its id, and our side gives the spec answer (computed by hand below)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from customops.comparison.pipeline import compare_model
from tests.helpers import Deviation, check_deviation, run_custom

F32 = np.float32


def _plane() -> np.ndarray:
    x = np.arange(1, 10, dtype=F32).reshape(1, 1, 3, 3)
    x[0, 0, 0, 0] = np.inf
    return x


DEVIATIONS = [
    Deviation(
        # a 1x1 kernel with zero offsets reads each pixel once: the output is X itself
        "DC-NONFINITE-SPREAD",
        "DeformConv",
        {"X": _plane(), "W": np.ones((1, 1, 1, 1), F32), "offset": np.zeros((1, 2, 3, 3), F32)},
        22,
        {},
        ("W",),
        spec=_plane(),
    ),
    Deviation(
        # 1-D: X [1, 2, 3, 4, 5], W [1, 1], offset 0.5 everywhere: taps at x + 0.5 and x + 1.5, i.e.
        # (x[i] + x[i+1]) / 2 + (x[i+1] + x[i+2]) / 2, with x[5] = 0 (outside): 4, 6, 8, 4.5 + 2.5
        "DC-2D-ONLY",
        "DeformConv",
        {
            "X": np.arange(1, 6, dtype=F32).reshape(1, 1, 5),
            "W": np.ones((1, 1, 2), F32),
            "offset": np.full((1, 2, 4), 0.5, F32),
        },
        22,
        {},
        ("W",),
        ("builtin-cannot-run", "builtin-failed", "builtin-fails"),
        spec=np.array([4, 6, 8, 7], F32).reshape(1, 1, 4),
    ),
    Deviation(
        # no input channel: every output is the bias
        "DC-EMPTY-AXIS",
        "DeformConv",
        {
            "X": np.ones((1, 0, 3, 3), F32),
            "W": np.ones((2, 0, 2, 2), F32),
            "offset": np.zeros((1, 8, 2, 2), F32),
            "B": np.array([1, 2], F32),
        },
        19,
        {},
        ("W", "B"),
        ("builtin-cannot-run", "builtin-failed", "builtin-fails"),
        spec=np.array([1, 2], F32).reshape(1, 2, 1, 1) * np.ones((1, 2, 2, 2), F32),
    ),
]


@pytest.mark.parametrize("dev", DEVIATIONS, ids=lambda d: d.id)
def test_known_ort_deviation_is_flagged_attributed_and_ours_gives_the_spec_answer(dev):
    check_deviation(dev)


def _bfloat16_model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """DeformConv on bfloat16, float inputs Cast to bfloat16 around it (ORT's Python API takes no
    bfloat16 feed)."""
    names = ("X", "W", "offset")
    nodes = [helper.make_node("Cast", [n], [f"{n}_bf"], to=TensorProto.BFLOAT16) for n in names]
    nodes.append(helper.make_node("DeformConv", [f"{n}_bf" for n in names], ["Y_bf"], name="dc"))
    nodes.append(helper.make_node("Cast", ["Y_bf"], ["Y"], to=TensorProto.FLOAT))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    x = np.arange(1, 10, dtype=F32).reshape(1, 1, 3, 3)
    return model, {"X": x, "W": np.ones((1, 1, 2, 2), F32), "offset": np.zeros((1, 8, 2, 2), F32)}


def test_bfloat16_is_missing_in_ort_and_runs_bridged():
    # compare does not isolate a node on a side that cannot load the model, so the label is checked on
    # ORT's own message, as the fuzzer sees it
    import onnxruntime as ort

    from customops.eval.judging.deviations import known_labels
    from customops.eval.judging.signature import Signature, Subject

    model, feed = _bfloat16_model()
    with pytest.raises(Exception, match="Could not find an implementation for DeformConv") as failure:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    subject = Subject(Signature("DeformConv", 22, "builtin", "rejects-valid", str(failure.value)))
    assert "T-DEFORMCONV" in known_labels(subject)
    assert compare_model(model, feed).exit_status == 1
    # sums of 2x2 windows: 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9
    assert run_custom(model, feed)[0].ravel().tolist() == [12, 16, 24, 28]
