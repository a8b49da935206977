"""compare on the quantized integer family, on real ORT sessions: every output of a node compared (in the
model and alone), the exact yardstick (our output, a bound of 0 on every output type), the deviation
Q-U8S8-PAIR-SATURATION recognized by values (from customops.eval.judging.ort_gemm's numpy model of ORT's
uint8 x int8 GEMM without VNNI: this machine's ORT may take either path, so no test here depends on
which), and the configurations ORT refuses, each with its id of docs/ort-deviations.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from polygraphy.comparator import RunResults

from customops.comparison.pipeline import compare_model
from customops.comparison.table import format_table
from customops.eval.judging import ort_gemm
from customops.eval.judging.attribution import odd_one_out
from customops.eval.judging.deviations import MACHINE_DEPENDENT, documented_ids, known_labels
from customops.eval.judging.facts import QLINEAR_MATMUL, Given, Observed, facts
from customops.eval.judging.rounding_bound import TERMS, bound, exact
from customops.eval.judging.signature import Signature, Subject
from customops.eval.judging.yardstick import measure
from customops.eval.judging.yardstick_table import EXACT_SOURCE, YARDSTICKS
from tests.helpers import Deviation, one_node_model, run_cli, strict_json

U8, S8, F32 = np.uint8, np.int8, np.float32
FAMILY = (
    "MatMulInteger",
    "ConvInteger",
    "QLinearMatMul",
    "QLinearConv",
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
)


def _dql_chain() -> onnx.ModelProto:
    """DynamicQuantizeLinear (y, y_scale, y_zp: values inside the model) into DequantizeLinear."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zp"], name="dql"),
        helper.make_node("DequantizeLinear", ["y", "y_scale", "y_zp"], ["back"], name="dq"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("back", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


# ---------------------------------------------------------------------------------------------------------
# every output of a node


def test_every_output_of_a_node_is_compared_in_the_model_and_alone_and_the_worst_is_shown(tmp_path):
    """x all zeros: ORT's y_scale is 1, the spec's (0 - 0) / 255 is 0, y and y_zp agree. The difference is
    in DynamicQuantizeLinear's second output: judged alone on it, with the exact yardstick, ORT leaves
    the spec (docs/semantics.md records the row); its first output alone would show nothing."""
    model_path, inputs = tmp_path / "m.onnx", tmp_path / "x.npz"
    onnx.save(_dql_chain(), model_path)
    np.savez(inputs, x=np.zeros((2, 3), F32))
    report, saved, repro, page = (
        tmp_path / "r.json",
        tmp_path / "o.npz",
        tmp_path / "repro",
        tmp_path / "p.html",
    )
    files = (
        "--json",
        str(report),
        "--save-outputs",
        str(saved),
        "--save-repro",
        str(repro),
        "--html",
        str(page),
    )
    proc = run_cli("compare", str(model_path), "--inputs", str(inputs), *files)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "first difference starts at 'dql' [DynamicQuantizeLinear-11]: builtin-leaves-spec" in proc.stdout
    doc = strict_json(report.read_text())
    dql, dq = doc["nodes"]
    assert (dql["output"], dql["origin"], dql["verdict"]) == ("y_scale", "starts-here", "disagree")
    assert dql["known"] == ["semantics: DynamicQuantizeLinear: x all zeros, or empty"]
    assert [(o["output"], o["attribution"]) for o in dql["outputs"]] == [
        ("y", "agree"),
        ("y_scale", "builtin-leaves-spec"),
        ("y_zp", "agree"),
    ]
    assert [o["in_model"]["pass"] for o in dql["outputs"]] == [True, False, True]
    assert dql["in_model"]["max_abs"] == 1.0 and dql["isolated"]["builtin_vs_custom"]["max_abs"] == 1.0
    stick = dql["isolated"]["yardstick"]
    assert stick["source"] == EXACT_SOURCE and stick["bound"] == 0.0 and not stick["reference_vote"]
    assert stick["distance"] == {"builtin": 1.0, "custom": 0.0, "reference": None}
    assert "outputs" not in dq  # a node of one output: its report as before
    with np.load(saved) as data:
        assert {"builtin/y", "builtin/y_scale", "builtin/y_zp", "custom/y_scale", "custom/back"} <= set(
            data.files
        )
        assert (data["builtin/y_scale"], data["custom/y_scale"]) == (1.0, 0.0)
    html = page.read_text()
    assert "output y_scale isolated (builtin-leaves-spec): builtin vs custom" in html
    assert "output y_zp in the model: builtin vs custom" in html
    case = onnx.load(repro / "dql" / "model.onnx")  # the reproducer declares the output it shows
    assert [o.name for o in case.graph.output] == ["y_scale"]
    expected = numpy_helper.to_array(onnx.load_tensor(str(repro / "dql" / "test_data_set_0" / "output_0.pb")))
    assert expected.tolist() == 0.0


def test_a_node_of_several_outputs_that_agree_shows_its_first_and_lists_each_in_the_table():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(F32)
    comparison = compare_model(_dql_chain(), {"x": x})
    assert comparison.report.verdict == "agree", comparison.report.summary
    dql = comparison.report.nodes[0]
    assert dql.output == "y" and [o.name for o in dql.each] == ["y", "y_scale", "y_zp"]
    assert all(o.attribution == "agree" and o.in_model.passed for o in dql.each)
    assert set(comparison.several["dql"]) == {"y", "y_scale", "y_zp"}
    lines = format_table(comparison.report.to_json(), all_rows=True).splitlines()
    rows = [line.split()[:3] for line in lines if line.startswith("  output ")]
    assert rows == [
        ["output", "y", "(alone)"],
        ["output", "y_scale", "(alone)"],
        ["output", "y_zp", "(alone)"],
    ]


# ---------------------------------------------------------------------------------------------------------
# the exact yardstick


def test_the_family_s_yardstick_is_exact_on_every_output_type():
    for op in FAMILY:
        row = YARDSTICKS[op]
        assert row.exact_kernel and row.source == EXACT_SOURCE and TERMS[op] is exact, op
        for dtype in (np.int32, np.uint8, np.float32):
            assert bound(op, [np.zeros(2, dtype)], {}, (2,), dtype) == 0.0, (op, dtype)
    votes = {op for op in FAMILY if YARDSTICKS[op].reference_vote}
    assert votes == {"MatMulInteger", "ConvInteger"}  # onnx.reference's own exact int32 implementations
    assert (
        bound("Resize", [np.zeros((1, 1, 2, 2), np.uint8)], {"mode": "linear"}, (1, 1, 4, 4), np.uint8)
        is None
    )


def _within(op: str, builtin: np.ndarray, ours: np.ndarray, reference: np.ndarray) -> object:
    return measure(op, ours, 0.0, {"builtin": builtin, "custom": ours, "reference": reference}).sides_within()


def test_a_side_that_differs_from_an_exact_kernel_leaves_the_spec_unless_a_voting_reference_says_ours_is_wrong():
    ours = np.array([[-65280, 7]], np.int32)
    other = np.array([[-32768, 7]], np.int32)
    # the reference (a vote for MatMulInteger) agrees with ours: the built-in kernel leaves the spec
    within = _within("MatMulInteger", other, ours, ours)
    assert (within.builtin, within.custom, within.reference) == (False, True, True)
    assert odd_one_out(False, False, True, within) == "builtin"
    # it agrees with the built-in kernel instead: the three votes decide, against ours
    within = _within("MatMulInteger", other, ours, other)
    assert within.reference is False and odd_one_out(False, True, False, within) == "custom"
    # QLinearMatMul's reference is no vote: agreeing with the built-in kernel it names nobody
    ours, other = np.array([1, 2, 3], U8), np.array([0, 2, 2], U8)
    within = _within("QLinearMatMul", other, ours, other)
    assert within.reference is None and odd_one_out(False, True, False, within) == "unknown"
    assert _within("DequantizeLinear", np.float32([np.nan]), np.float32([np.nan]), None).builtin  # NaN is NaN


def _qlinear(a, scales, b, zero, y_zero) -> dict[str, np.ndarray]:
    """QLinearMatMul's inputs: ``a``, ``b``, the scales (a, b, y), zero points of 0 in the types given."""
    sa, sb, sy = (F32(s) for s in scales)
    return {"a": a, "sa": sa, "za": zero, "b": b, "sb": sb, "zb": zero, "sy": sy, "zy": y_zero}


SHARED_FORMULA = {
    # a_scale float32(1/3) x 3 / 2: sums 1, 3, 5 are just above 0.5, 1.5, 2.5 (1, 2, 3); ORT and the
    # reference round the multiplier to float32 (exactly 0.5) first and give 0, 2, 2
    "float32-multiplier": (
        _qlinear(np.array([[1], [3], [5]], S8), (1 / 3, 3, 2), np.array([[1]], S8), S8(0), S8(0)),
        "semantics: QLinearMatMul, QLinearConv: requantization",
    ),
    # 255 x 255 x 33100 leaves int32: ORT and the reference wrap it (0), the real value is 128.29
    "int32-wrap": (
        _qlinear(np.full((1, 33100), 255, U8), (1, 1, 2**24), np.full((33100, 1), 255, U8), U8(0), U8(0)),
        "semantics: QLinearMatMul, QLinearConv: sums beyond int32",
    ),
}


@pytest.mark.parametrize("case", list(SHARED_FORMULA))
def test_where_ort_and_the_reference_share_a_formula_ours_is_not_outvoted_and_no_side_is_named(case):
    inputs, known = SHARED_FORMULA[case]
    model, feed = one_node_model("QLinearMatMul", inputs, 10, initializers=tuple(inputs)[1:])
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    assert (node.attribution, node.origin) == ("undecided", "starts-here"), node.isolated["errors"]
    assert node.known == [known]
    stick = node.isolated["yardstick"]
    assert stick["bound"] == 0.0 and stick["within"] == {"builtin": False, "custom": True, "reference": None}
    iso = comparison.isolated[node.node]
    assert np.array_equal(iso.outputs["builtin"], iso.outputs["reference"])  # one formula, ORT's


# ---------------------------------------------------------------------------------------------------------
# Q-U8S8-PAIR-SATURATION, recognized by values


A255 = np.full((2, 8), 255, U8)
B128 = np.full((8, 3), -128, S8)


def _labels(op: str, inputs: dict[str, np.ndarray], builtin: np.ndarray, **attrs: object) -> list[str]:
    """The known ids of ``op``'s difference where ORT's output is ``builtin`` (a value difference whose odd
    side is ORT's), as compare and the fuzzer describe it."""
    x = next(iter(inputs.values()))
    given = {name: Given(value, str(value.dtype), False) for name, value in inputs.items()}
    seen = Observed(op, x, str(x.dtype), dict(attrs), given, builtin.shape, builtin)
    return known_labels(Subject(Signature(op, 10, "builtin", "value"), facts(seen)))


def test_matmul_integer_saturation_is_recognized_by_values_of_the_numpy_model():
    zeros = {"a_zero_point": U8(3), "b_zero_point": S8(-2)}
    inputs = {"A": A255, "B": B128, **zeros}
    saturated = ort_gemm.ort_u8s8_matmul_integer(A255, B128, *zeros.values())
    exact_value = ort_gemm.exact_matmul_integer(A255, B128, *zeros.values())
    assert not np.array_equal(saturated, exact_value)
    assert "Q-U8S8-PAIR-SATURATION" in _labels("MatMulInteger", inputs, saturated)
    assert "Q-U8S8-PAIR-SATURATION" not in _labels("MatMulInteger", inputs, saturated + 1)  # another error
    seven_bit = {"A": A255, "B": np.full((8, 3), -64, S8)}  # no pair leaves int16: nothing saturates
    value = ort_gemm.exact_matmul_integer(A255, seven_bit["B"]).astype(np.int32) + 1
    assert "Q-U8S8-PAIR-SATURATION" not in _labels("MatMulInteger", seven_bit, value)


def test_qlinear_saturation_is_recognized_by_values_and_ort_s_own_rounding_is_told_apart():
    q = {"a_scale": F32(0.01), "a_zero_point": U8(0), "b_scale": F32(0.01), "b_zero_point": S8(0)}
    inputs = {"a": A255, **q, "b": B128, "y_scale": F32(1.0), "y_zero_point": U8(255)}
    inputs = {k: inputs[k] for k in QLINEAR_MATMUL}  # the op's order
    saturated = ort_gemm.qlinear_matmul(*inputs.values())
    exact_path = ort_gemm.qlinear_matmul(*inputs.values(), saturating=False)
    assert saturated.tolist() != exact_path.tolist()
    assert _labels("QLinearMatMul", inputs, saturated) == ["Q-U8S8-PAIR-SATURATION"]
    # ORT's arithmetic with an exact GEMM (a float32 multiplier): the semantics row, not the deviation
    assert _labels("QLinearMatMul", inputs, exact_path) == [
        "semantics: QLinearMatMul, QLinearConv: requantization"
    ]


def test_qlinear_conv_saturation_is_recognized_by_values_with_its_attributes():
    x, w = np.full((1, 2, 3, 3), 255, U8), np.full((2, 2, 2, 2), -128, S8)
    quant = [ort_gemm.QuantParams(F32(0.01), U8(0)), ort_gemm.QuantParams(F32(0.01), S8(0))]
    y_q = ort_gemm.QuantParams(F32(1.0), U8(255))
    attrs = {"pads": [1, 1, 0, 0], "strides": [1, 2]}
    geometry = ort_gemm.ConvGeometry.of_attributes(attrs, (3, 3), (2, 2))
    saturated = ort_gemm.qlinear_conv(x, quant[0], w, quant[1], y_q, None, geometry)
    assert saturated.shape == (1, 2, 3, 2)
    assert not np.array_equal(
        saturated, ort_gemm.qlinear_conv(x, quant[0], w, quant[1], y_q, None, geometry, saturating=False)
    )
    inputs = {"x": x, "x_scale": quant[0].scale, "x_zero_point": quant[0].zero_point, "w": w}
    inputs.update(w_scale=quant[1].scale, w_zero_point=quant[1].zero_point)
    inputs.update(y_scale=y_q.scale, y_zero_point=y_q.zero_point)
    assert _labels("QLinearConv", inputs, saturated, **attrs) == ["Q-U8S8-PAIR-SATURATION"]
    assert _labels("QLinearConv", inputs, saturated, pads=[0, 0, 1, 1], strides=[1, 2]) == []  # other pads


def test_the_saturation_id_is_documented_and_not_expected_of_the_fuzzer_s_campaigns():
    text = Path(__file__).resolve().parent.parent.joinpath("docs", "ort-deviations.md").read_text()
    assert "#### Q-U8S8-PAIR-SATURATION" in text and "| Q-U8S8-PAIR-SATURATION |" in text
    assert "Q-U8S8-PAIR-SATURATION" in MACHINE_DEPENDENT and "Q-U8S8-PAIR-SATURATION" not in documented_ids()


def _saturating_chain() -> tuple[onnx.ModelProto, dict[str, np.ndarray], np.ndarray]:
    """DynamicQuantizeLinear of x (its values 0 to 1: y is 255 where x is 1) into MatMulInteger with int8
    weights of -128: each pair of products is -65280, past int16. Returns the model, its inputs and the
    graph output as ORT computes it without VNNI (the numpy model on the quantized x)."""
    weights = np.full((8, 3), -128, S8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="quantize"),
        helper.make_node("MatMulInteger", ["xq", "w", "xz"], ["acc"], name="gemm"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("acc", TensorProto.INT32, None)],
        [numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.ones((2, 8), F32)
    x[1, ::3] = 0
    xq = np.where(x == 1, 255, 0).astype(U8)
    saturated = ort_gemm.ort_u8s8_matmul_integer(xq, weights, U8(0))
    assert not np.array_equal(saturated, ort_gemm.exact_matmul_integer(xq, weights, U8(0)))
    return model, {"x": x}, saturated


@pytest.mark.parametrize("kind", ["npz", "polygraphy"])
def test_load_outputs_saved_without_vnni_names_the_node_and_the_id(tmp_path, kind):
    """Outputs as an AVX2 machine without VNNI saves them (every tensor, as with --onnx-outputs mark all):
    the quantized values agree with ours, MatMulInteger's output is the saturating kernel's. compare says
    where the difference starts and which deviation it is."""
    model, feed, saturated = _saturating_chain()
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "x.npz", **feed)
    xq = np.where(feed["x"] == 1, 255, 0).astype(U8)
    values = {"xq": xq, "xs": np.array(1 / 255, F32), "xz": np.array(0, U8), "acc": saturated}
    if kind == "npz":
        path = tmp_path / "avx2.npz"
        np.savez(path, **values)
    else:
        path = tmp_path / "avx2.json"
        results = RunResults()
        results.add([values], runner_name="onnxrt-runner-avx2")
        results.save(str(path))  # Polygraphy's own writer
    report = tmp_path / "r.json"
    args = ("--inputs", str(tmp_path / "x.npz"), "--load-outputs", str(path), "--json", str(report))
    proc = run_cli("compare", str(tmp_path / "m.onnx"), *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = proc.stdout.splitlines()[0]
    assert (
        "the difference starts at 'gemm' [MatMulInteger-10]" in line and "Q-U8S8-PAIR-SATURATION" in line
    ), line
    doc = strict_json(report.read_text())
    quantize, gemm = doc["nodes"]
    assert quantize["verdict"] == "agree" and [o["output"] for o in quantize["outputs"]] == ["xq", "xs", "xz"]
    assert (gemm["origin"], gemm["known"]) == ("starts-here", ["Q-U8S8-PAIR-SATURATION"])
    assert "unknown (Q-U8S8-PAIR-SATURATION)" in proc.stdout  # the table's attribution column
    # against loaded outputs no node runs here: whether its result depends on the CPU is not said
    assert gemm["cpu_dependence"] is None and "integer node" not in line


# ---------------------------------------------------------------------------------------------------------
# what ORT refuses, with known ids


REFUSED = [
    Deviation(
        "Q-MATMULINTEGER-ROW-ZERO-POINT",
        "MatMulInteger",
        {
            "A": np.arange(6, dtype=U8).reshape(2, 3),
            "B": np.ones((3, 2), S8),
            "a_zero_point": np.array([1, 2], U8),
        },
        10,
        attribution=("builtin-cannot-run",),
        spec=[[0, 0], [6, 6]],  # the rows 0 1 2 less 1 and 3 4 5 less 2, summed
    ),
    Deviation(
        "Q-CONVINTEGER-CHANNEL-ZERO-POINT",
        "ConvInteger",
        {
            "x": np.full((1, 2, 1, 1), 3, U8),
            "w": np.ones((2, 2, 1, 1), S8),
            "x_zp": U8(1),
            "w_zp": np.array([0, 2], S8),
        },
        10,
        attribution=("builtin-cannot-run",),
        spec=[[[[4]], [[-4]]]],  # (3 - 1) x (1 - w_zp) summed over two channels
    ),
]


@pytest.mark.parametrize("dev", REFUSED, ids=lambda d: d.id)
def test_zero_points_the_spec_allows_and_ort_refuses(dev):
    """As tests.helpers.check_deviation, for an op whose output is int32 (not its first input's type)."""
    model, feed = one_node_model(dev.op, dev.inputs, dev.opset, out_type=TensorProto.INT32)
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    assert (node.attribution, node.verdict, node.known) == ("builtin-cannot-run", "side-failed", [dev.id])
    assert comparison.exit_status == 1
    assert comparison.isolated[node.node].outputs["custom"].tolist() == dev.spec


MISSING = [
    ("T-QLINEARMATMUL", "QLinearMatMul", 21, TensorProto.INT8),  # uint8 A into an int8 output
    ("T-QLINEARCONV", "QLinearConv", 10, TensorProto.INT8),
    ("T-QUANTIZELINEAR", "QuantizeLinear", 28, TensorProto.UINT8),  # no kernel at 28
    ("T-DEQUANTIZELINEAR", "DequantizeLinear", 28, TensorProto.FLOAT),
]


def _missing_inputs(op: str) -> dict[str, np.ndarray]:
    one = F32(0.5)
    if op == "QLinearMatMul":
        return {
            "a": np.ones((2, 3), U8),
            "sa": one,
            "za": U8(1),
            "b": np.ones((3, 2), S8),
            "sb": one,
            "zb": S8(0),
            "sy": one,
            "zy": S8(1),
        }
    if op == "QLinearConv":
        return {
            "x": np.ones((1, 2, 2, 2), U8),
            "sx": one,
            "zx": U8(1),
            "w": np.ones((2, 2, 1, 1), S8),
            "sw": one,
            "zw": S8(0),
            "sy": one,
            "zy": S8(1),
        }
    if op == "QuantizeLinear":
        return {"x": np.array([1.0, 2.6], F32), "s": one, "z": U8(0)}
    return {"x": np.array([1, 2], U8), "s": one, "z": U8(0)}


@pytest.mark.parametrize(("ident", "op", "opset", "out_type"), MISSING, ids=[m[0] for m in MISSING])
def test_types_and_versions_ort_has_no_kernel_for(ident, op, opset, out_type):
    model, feed = one_node_model(op, _missing_inputs(op), opset, out_type=out_type)
    comparison = compare_model(model, feed)
    (node,) = comparison.report.nodes
    assert (node.attribution, node.known) == ("builtin-cannot-run", [ident]), node.isolated["errors"]
    assert "Could not find an implementation" in node.isolated["errors"]["builtin"]
    assert comparison.isolated[node.node].outputs["custom"] is not None
