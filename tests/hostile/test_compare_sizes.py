"""compare's bounds count what an array really takes: every element of an input, whatever its element
type's size (``<U0`` holds no bytes but 3e8 elements), strings by their encoded bytes in a side's outputs;
values that are not tensors are refused with one line; --val-range, --dim and --input-shape values that
are finite but make generation overflow are refused at parse time."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from customops.cli.main import main
from customops.errors import CustomOpsError
from tests.helpers import NEVER, one_error_line, run_cli


def _identity_model(path: Path, elem: int = TensorProto.STRING, dims: list | None = None) -> Path:
    """Identity of one input ``x`` (``elem``, ``dims``; None: no shape) to ``y``."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", elem, dims)],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def _npy_header_only(dtype: str, shape: tuple[int, ...]) -> bytes:
    """A .npy file that is a header and nothing else (all a zero-size element type needs)."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@pytest.fixture
def small_limit(monkeypatch):
    """The inputs' limit at 1000 bytes: a case over it stays cheap even where the limit would not hold."""
    import customops.comparison.inputs as inputs

    monkeypatch.setattr(inputs, "INPUT_LIMIT", 1000)


# --- zero-size element types and strings count their elements --------------------------------


def test_an_npz_of_a_zero_size_string_type_counts_its_elements(tmp_path, capsys, small_limit):
    inputs = tmp_path / "u0.npz"
    with zipfile.ZipFile(inputs, "w") as z:
        z.writestr("x.npy", _npy_header_only("<U0", (2000,)))
    model = _identity_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(inputs)]) == 2
    line = one_error_line(capsys)
    assert "in memory" in line and "over the 1000 allowed" in line


def test_the_real_limit_refuses_3e8_zero_size_strings_at_once(tmp_path):
    """3e8 zero-size strings against the real limit, not a lowered one: refused from the header, before
    any array is made."""
    inputs = tmp_path / "u0.npz"
    with zipfile.ZipFile(inputs, "w") as z:
        z.writestr("x.npy", _npy_header_only("<U0", (300_000_000,)))
    model = _identity_model(tmp_path / "m.onnx")
    proc = run_cli("compare", str(model), "--inputs", str(inputs), timeout=NEVER)
    assert proc.returncode == 2, proc.stderr
    assert "in memory" in proc.stderr and "Traceback" not in proc.stderr


def test_an_npz_member_not_named_npy_has_its_header_checked_too(tmp_path, capsys):
    """numpy reads a member named 'x' (not 'x.npy') as the array 'x' too, allocating what its header
    declares before reading: the headers' check passed it over, and the header's 8 GB was allocated."""
    inputs = tmp_path / "x.npz"
    with zipfile.ZipFile(inputs, "w") as z:
        z.writestr("x", _npy_header_only("<f4", (2**31,)) + bytes(16))
    model = _identity_model(tmp_path / "m.onnx", TensorProto.FLOAT)
    assert main(["compare", str(model), "--inputs", str(inputs)]) == 2
    line = one_error_line(capsys)
    assert "'x': its header declares more data than it holds" in line


def test_a_polygraphy_file_of_a_zero_size_string_type_counts_its_elements(tmp_path, capsys, small_limit):
    encoded = base64.b64encode(_npy_header_only("<U0", (2000,))).decode()
    inputs = tmp_path / "in.json"
    inputs.write_text(json.dumps([{"x": {"array": encoded, "polygraphy_class": "ndarray"}}]))
    model = _identity_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(inputs)]) == 2
    assert "over the 1000 allowed" in one_error_line(capsys)


def test_a_tensor_file_of_empty_strings_counts_each_string(tmp_path, capsys, small_limit):
    case = tmp_path / "case"
    case.mkdir()
    tensor = helper.make_tensor("x", TensorProto.STRING, [400], [b""] * 400)
    (case / "input_0.pb").write_bytes(tensor.SerializeToString())
    assert (case / "input_0.pb").stat().st_size < 1000  # the file alone is within the limit
    model = _identity_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(case)]) == 2
    assert "in memory" in one_error_line(capsys)


def test_generated_strings_count_what_they_take(tmp_path, capsys, small_limit):
    model = _identity_model(tmp_path / "m.onnx", dims=["n"])
    assert main(["compare", str(model), "--dim", "n=20"]) == 2  # 20 strings: 160 bytes at 8 an element
    assert "generated inputs would take" in one_error_line(capsys)


def test_arrays_handed_to_the_api_are_bounded_by_their_elements(tmp_path, small_limit):
    model = _identity_model(tmp_path / "m.onnx")
    with pytest.raises(CustomOpsError, match="in memory"):
        customops.compare(str(model), {"x": np.empty(2000, "<U0")})


# --- strings count their encoded bytes --------------------------------------------------------


def test_a_bound_on_outputs_counts_the_bytes_of_each_string():
    from customops.eval.running.worker import Reply, bounded

    long = np.array(["\u00e9" * 1000] * 10, dtype=object)  # nbytes: 80; UTF-8: 20000 bytes
    reply = bounded(Reply("ok", {"y": long}), 5000)
    assert reply.status == "error" and "over the 5000 bytes" in reply.message
    assert bounded(Reply("ok", {"y": long}), 30000).status == "ok"


def test_a_side_s_string_outputs_are_bounded_by_their_bytes_on_a_real_run(tmp_path, monkeypatch):
    from customops.eval.running import sides

    model = onnx.load(_identity_model(tmp_path / "m.onnx"))
    monkeypatch.setattr(sides, "OUTPUT_LIMIT", 10_000)
    feed = {"x": np.array(["x" * 5000, "y" * 5000, "z" * 5000], dtype=object)}
    run = sides.run_side(model.SerializeToString(), feed, custom=False)
    assert run.values == {} and "over the 10000 bytes" in (run.error or "")


def test_a_fuzz_case_s_string_output_is_bounded_by_its_bytes_in_the_child(tmp_path):
    from customops.eval.running.runner import SideProcess
    from customops.eval.running.worker import Request

    model = onnx.load(_identity_model(tmp_path / "m.onnx"))
    feed = {"x": np.array(["x" * 5000] * 4, dtype=object)}
    worker = SideProcess("reference")
    try:
        reply = worker.result(worker.submit(Request(model.SerializeToString(), feed, limit=10_000)))
    finally:
        worker.close()
    assert reply.status == "error" and "over the 10000 bytes" in reply.message


def test_inputs_handed_to_the_api_count_the_bytes_of_each_string(tmp_path, small_limit):
    model = _identity_model(tmp_path / "m.onnx")
    with pytest.raises(CustomOpsError, match="in memory"):
        customops.compare(str(model), {"x": np.array(["x" * 2000], dtype=object)})


# --- values that overflow generation are refused at parse time -------------------------------


def _symbolic_float_model(path: Path) -> Path:
    """A Pad (a node of ours, so that the model is compared) of a float input ``x`` of symbolic dims n, m."""
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "m"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


@pytest.mark.parametrize(
    "args, words",
    [
        (["--val-range=-1e308,1e308"], "HI - LO overflows"),
        (["--val-range=x:-1.7e308,1.7e308"], "HI - LO overflows"),
        (["--dim", "n=" + "9" * 5000], "at most 30 digits"),
        (["--input-shape", "x:" + "9" * 5000 + "x2"], "at most 30 digits"),
        (["--input-shape", "x:0x" + "9" * 40], "at most 30 digits"),
        (["--input-shape", "x:0x" + "9" * 30], "dimension of"),
    ],
)
def test_finite_values_that_overflow_generation_give_one_line(tmp_path, args, words):
    model = _symbolic_float_model(tmp_path / "m.onnx")
    proc = run_cli("compare", str(model), *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert words in lines[0]


def test_the_widest_range_whose_width_is_finite_still_draws(tmp_path):
    model = _symbolic_float_model(tmp_path / "m.onnx")
    proc = run_cli("compare", str(model), "--val-range=-8e307,8e307", "-q")
    assert proc.returncode == 0, proc.stderr


# --- values that are not tensors ----------------------------------------------------------------


def _sequence_model(path: Path, declared: bool = True) -> Path:
    """SplitToSequence of a float input into ragged pieces [1, 2] (plus a Pad the rewriter swaps): the
    graph output ``seq`` is a sequence of tensors, declared as one or without a type."""
    split = onnx.numpy_helper.from_array(np.array([1, 2], np.int64), "split")
    pads = onnx.numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    seq = (
        helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
        if declared
        else helper.make_empty_tensor_value_info("seq")
    )
    graph = helper.make_graph(
        [
            helper.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=0),
            helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant", name="pad"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [seq, helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [split, pads],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_a_declared_sequence_output_is_refused_before_the_work(tmp_path, capsys):
    model = _sequence_model(tmp_path / "m.onnx")
    assert main(["compare", str(model)]) == 2
    line = one_error_line(capsys)
    assert "'seq' is a sequence" in line and "tensors" in line
    assert "running the model" not in capsys.readouterr().err


@pytest.mark.parametrize("side", ["builtin", "custom", "reference"])
def test_a_side_names_a_sequence_output_instead_of_dying_on_it(tmp_path, side):
    """Past the check before the work (a model given as a ModelProto to the sides, a fuzz case): each
    side's child answers with an error naming the output, and lives on."""
    from customops.eval.running.runner import SideProcess
    from customops.eval.running.worker import Request

    model = onnx.load(_sequence_model(tmp_path / "m.onnx"))
    feed = {"x": np.arange(3, dtype=np.float32)}
    worker = SideProcess(side)
    try:
        for whole in (True, False):  # the custom side rewrites a case itself, a whole model comes rewritten
            sent = customops.rewrite(model) if side == "custom" and whole else model
            reply = worker.result(worker.submit(Request(sent.SerializeToString(), feed, whole=whole)))
            assert reply.status == "error", (reply.status, reply.message, reply.tail)
            assert "output 'seq' is a sequence, not a tensor" in reply.message
            assert worker.restarts == 0
    finally:
        worker.close()


def test_a_sequence_input_is_refused_with_one_line(tmp_path, capsys):
    graph = helper.make_graph(
        [helper.make_node("SequenceAt", ["s", "i"], ["y"])],
        "g",
        [
            helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    assert main(["compare", str(model)]) == 2
    assert "graph input 's' is a sequence" in one_error_line(capsys)
    with pytest.raises(CustomOpsError, match="graph input 's' is a sequence"):
        customops.compare(str(model), {"s": np.zeros(2, np.float32), "i": np.array(0)})


def test_an_optional_output_is_refused_with_one_line(tmp_path, capsys):
    optional = helper.make_value_info(
        "o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    )
    graph = helper.make_graph(
        [helper.make_node("Optional", ["x"], ["o"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [optional],
    )
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), model)
    assert main(["compare", str(model)]) == 2
    assert "graph output 'o' is a optional" not in (line := one_error_line(capsys))
    assert "graph output 'o' is an optional" in line
