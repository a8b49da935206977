"""The ONNX Runtime layer: registration, the invocation hook, error reporting, element types."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import customops
from tests.helpers import ALL_DTYPES, NEVER, one_node_model, run_builtin, run_custom, run_python

F32 = np.float32


def _resize_model(**attrs):
    x = np.arange(8, dtype=F32).reshape(1, 1, 2, 4)
    return one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 1, 2, 2], F32), "sizes": None},
        19,
        initializers=("scales",),
        **attrs,
    )


def test_session_options_can_be_called_repeatedly_on_the_same_options():
    opts = customops.session_options()
    assert customops.session_options(opts) is opts
    customops.session_options(opts)
    model, feed = _resize_model(mode="nearest")
    sess = ort.InferenceSession(
        customops.rewrite(model).SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    (y,) = sess.run(None, feed)
    assert y.shape == (1, 1, 4, 8)


def test_kernel_error_reaches_the_caller_and_the_process_lives_on():
    x = np.ones((1, 1, 2, 2), F32)
    model, _ = one_node_model(
        "Resize",
        {
            "X": x,
            "roi": None,
            "scales": np.array([1, 1, 2, 2], F32),
            "sizes": np.array([1, 1, 4, 4], np.int64),
        },
        19,
    )
    sess = customops.InferenceSession(customops.rewrite(model))
    bad = {"X": x, "scales": np.array([1, 1, 2, 2], F32), "sizes": np.array([1, 1, 4, 4], np.int64)}
    with pytest.raises(customops.KernelError, match=r"Resize-19 node 'Resize_node'.*(scales|sizes)"):
        sess.run(None, bad)
    # the same session still works for a valid feed
    good = {"X": x, "scales": np.array([], F32), "sizes": np.array([1, 1, 4, 4], np.int64)}
    (y,) = sess.run(None, good)
    assert y.shape == (1, 1, 4, 4)


def test_an_error_after_a_nested_run_still_reaches_the_outer_run(monkeypatch):
    """A kernel that runs a model itself (a nested run on the same thread) and then fails: the outer
    run must still raise the kernel's message, and both sessions keep working."""
    from customops.bridge import hook

    model, feed = _resize_model(mode="nearest")
    outer = customops.InferenceSession(customops.rewrite(model))
    want = outer.run(None, feed)[0]
    pads = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    pad_model, _ = one_node_model("Pad", {"data": feed["X"], "pads": pads}, 19, initializers=("pads",))
    inner = customops.InferenceSession(customops.rewrite(pad_model))
    seen = []

    def nested_then_fail(X, *args, **kwargs):
        seen.append(inner.run(None, {"data": X})[0])
        raise customops.KernelError("failed after a nested run")

    for binding in hook.BINDINGS.values():
        if binding.op.name == "Resize" and binding.elem_type == "float":
            monkeypatch.setattr(binding, "kernel", nested_then_fail)
            monkeypatch.setattr(binding, "bind", None)
            monkeypatch.setattr(binding, "attr_cache", {})
    with pytest.raises(customops.KernelError, match="failed after a nested run"):
        outer.run(None, feed)
    assert len(seen) == 1 and seen[0].shape == (1, 1, 4, 6)
    monkeypatch.undo()
    for binding in hook.BINDINGS.values():
        binding.attr_cache.clear()
    np.testing.assert_array_equal(outer.run(None, feed)[0], want)


def test_wrong_number_of_scales_is_a_short_specific_message():
    x = np.ones((1, 1, 2, 2), F32)
    model, feed = one_node_model("Resize", {"X": x, "roi": None, "scales": np.array([2, 2], F32)}, 13)
    sess = customops.InferenceSession(customops.rewrite(model))
    with pytest.raises(customops.KernelError) as info:
        sess.run(None, feed)
    message = str(info.value)
    assert "scales" in message and len(message) < 300 and "\n" not in message


def test_plain_onnxruntime_session_gets_empty_outputs_and_a_recorded_error():
    x = np.ones((1, 1, 2, 2), F32)
    model, feed = one_node_model("Resize", {"X": x, "roi": None, "scales": np.array([2, 2, 2], F32)}, 13)
    customops.pop_errors()
    sess = ort.InferenceSession(
        customops.rewrite(model).SerializeToString(),
        customops.session_options(),
        providers=["CPUExecutionProvider"],
    )
    (y,) = sess.run(None, feed)
    assert y.size == 0
    errors = customops.pop_errors()
    assert len(errors) == 1 and "scales" in errors[0]
    assert customops.pop_errors() == []


def test_a_failing_kernel_never_aborts_the_process():
    # In a child process, so that an abort (exit 134) would show as a failure instead of killing pytest.
    code = textwrap.dedent(
        """
        import numpy as np, customops
        from tests.helpers import one_node_model
        x = np.ones((1, 1, 2, 2), np.float32)
        model, feed = one_node_model("Resize", {"X": x, "roi": None, "scales": np.array([0, 1, 1, 1], np.float32)}, 13)
        sess = customops.InferenceSession(customops.rewrite(model))
        try:
            sess.run(None, feed)
        except customops.KernelError as e:
            print("raised:", e)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=NEVER)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "raised:" in proc.stdout


def test_ops_of_other_domains_are_handed_to_the_stock_handler():
    from onnxruntime_extensions import PyCustomOpDef, onnx_op

    @onnx_op(
        op_type="customops.test.other::Twice",
        inputs=[PyCustomOpDef.dt_float],
        outputs=[PyCustomOpDef.dt_float],
    )
    def twice(x):
        return x * 2

    node = helper.make_node("Twice", ["x"], ["y"], domain="customops.test.other")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("customops.test.other", 1)]
    )
    model.ir_version = 8
    sess = customops.InferenceSession(model)
    (y,) = sess.run(None, {"x": np.array([1, 2, 3], F32)})
    np.testing.assert_array_equal(y, [2, 4, 6])


def test_float_attributes_pass_with_all_their_digits():
    # ORT's Python op layer prints floats with 6 significant digits; ours must arrive exactly.
    x = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    value = 0.123456789
    model, feed = one_node_model(
        "Resize",
        {
            "X": x,
            "roi": np.array([0, 0, -0.5, -0.5, 1, 1, 1.5, 1.5], F32),
            "scales": None,
            "sizes": np.array([1, 1, 3, 3], np.int64),
        },
        19,
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=value,
    )
    (y,) = run_custom(model, feed)
    assert y[0, 0, 0, 0] == F32(value)


# the types onnxruntime-extensions passes through to numpy (no float16, complex or strings)
NATIVE = [d for d in ALL_DTYPES if np.dtype(d).kind in "biuf" and d is not np.float16]


@pytest.mark.parametrize("dtype", NATIVE, ids=lambda d: np.dtype(d).name)
def test_nearest_resize_runs_every_native_type(dtype):
    x = (np.arange(6).reshape(1, 2, 3) % 2 if dtype is np.bool_ else np.arange(6).reshape(1, 2, 3)).astype(
        dtype
    )
    model, feed = one_node_model(
        "Resize",
        {"X": x, "roi": None, "scales": np.array([1, 2, 2], F32)},
        13,
        initializers=("scales",),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    (y,) = run_custom(model, feed)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, np.repeat(np.repeat(x, 2, axis=1), 2, axis=2))


def test_strings_run_through_resize_pad_and_center_crop_pad():
    x = np.array([["a", "b"], ["c", "d"]], dtype=object)
    model, feed = one_node_model(
        "Resize", {"X": x, "roi": None, "scales": np.array([2, 1], F32)}, 13, initializers=("scales",)
    )
    (y,) = run_custom(model, feed)
    assert y.tolist() == [["a", "b"], ["a", "b"], ["c", "d"], ["c", "d"]]

    model, feed = one_node_model(
        "Pad",
        {"data": x, "pads": np.array([0, 1, 0, 0], np.int64), "constant_value": np.array("z", dtype=object)},
        18,
        initializers=("pads",),
    )
    (y,) = run_custom(model, feed)
    assert y.tolist() == [["z", "a", "b"], ["z", "c", "d"]]

    model, feed = one_node_model(
        "Pad", {"data": x, "pads": np.array([1, 0, 0, 0], np.int64)}, 18, initializers=("pads",)
    )
    (y,) = run_custom(model, feed)
    assert y.tolist() == [["", ""], ["a", "b"], ["c", "d"]]

    model, feed = one_node_model(
        "CenterCropPad", {"input_data": x, "shape": np.array([1, 3], np.int64)}, 18, initializers=("shape",)
    )
    (y,) = run_custom(model, feed)
    assert y.shape == (1, 3)


def _wrapped(op_builder, inner_type: int, opset: int):
    """x(float) -> Cast(inner) -> op -> Cast(float) -> y, so ORT itself produces the exotic type."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Cast", ["x"], ["xi"], to=inner_type),
        *op_builder("xi", "yi"),
        helper.make_node("Cast", ["yi"], ["y"], to=TensorProto.FLOAT),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", opset)]
    )
    model.ir_version = 10 if opset >= 21 else 8
    return model


@pytest.mark.parametrize("inner", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["float16", "bfloat16"])
def test_half_types_are_bridged_through_float(inner):
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])

    def build(i, o):
        return [
            helper.make_node("Constant", [], ["s"], value=scales),
            helper.make_node("Resize", [i, "", "s"], [o], mode="linear"),
        ]

    model = _wrapped(build, inner, 19)
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes] == ["swapped"]
    x = np.array([[[[0.0, 1.0], [2.0, 3.0]]]], F32)
    (ours,) = customops.InferenceSession(result.model).run(None, {"x": x})
    # ORT has no bfloat16 Resize: the float32 result, rounded to the narrow type, is the expectation
    (theirs,) = run_builtin(_wrapped(build, TensorProto.FLOAT, 19), {"x": x})
    np.testing.assert_allclose(ours, theirs, rtol=1e-2)
    assert ours.shape == (1, 1, 4, 4)


@pytest.mark.parametrize(
    ("inner", "opset"),
    [
        (TensorProto.FLOAT8E4M3FN, 21),
        (TensorProto.FLOAT8E5M2, 21),
        (TensorProto.INT4, 21),
        (TensorProto.UINT4, 21),
    ],
    ids=["float8e4m3fn", "float8e5m2", "int4", "uint4"],
)
def test_pad_bridges_the_narrow_types_of_pad_21(inner, opset):
    pads = helper.make_tensor("pads", TensorProto.INT64, [2], [1, 2])

    def build(i, o):
        return [
            helper.make_node("Constant", [], ["p"], value=pads),
            helper.make_node("Pad", [i, "p"], [o], mode="edge"),
        ]

    model = _wrapped(build, inner, opset)
    result = customops.rewrite_model(model)
    assert [r.status for r in result.nodes] == ["swapped"], [r.line() for r in result.nodes]
    x = np.array([1.0, 2.0, 3.0], F32)
    (ours,) = customops.InferenceSession(result.model).run(None, {"x": x})
    np.testing.assert_array_equal(ours, [1, 1, 2, 3, 3, 3])


def test_complex_nodes_are_skipped_with_the_reason():
    x = helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [2])
    pads = helper.make_tensor("pads", TensorProto.INT64, [2], [1, 1])
    node = helper.make_node("Pad", ["x", "pads"], ["y"])
    graph = helper.make_graph(
        [node], "g", [x], [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, None)], [pads]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    result = customops.rewrite_model(model)
    assert not result.changed
    assert "complex" in result.skipped[0].reason


def test_empty_tensors_give_empty_results():
    x = np.zeros((0, 3), F32)
    model, feed = one_node_model(
        "Resize", {"X": x, "roi": None, "scales": np.array([2, 2], F32)}, 13, initializers=("scales",)
    )
    (y,) = run_custom(model, feed)
    assert y.shape == (0, 6)
    model, feed = one_node_model(
        "Pad", {"data": x, "pads": np.array([1, 0, 1, 0], np.int64)}, 18, initializers=("pads",)
    )
    (y,) = run_custom(model, feed)
    assert y.shape == (2, 3) and not y.any()


def test_rewritten_model_passes_the_full_checker():
    model, _ = _resize_model(mode="cubic")
    onnx.checker.check_model(customops.rewrite(model), full_check=True)


def test_loading_our_ops_leaves_the_environment_that_children_inherit_as_it_was():
    """onnxruntime-extensions' import sets PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python: every process
    started after it (compare's and the fuzzer's sides) parsed models with protobuf's pure-Python code,
    which also treats text that is not UTF-8 otherwise. Neither the API nor the command line may pass
    that on."""
    script = textwrap.dedent(
        """
        import json, os, subprocess, sys
        os.environ.pop("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", None)  # as set by nobody
        before = dict(os.environ)
        import customops
        customops.session_options()
        from customops.signals import import_held
        import_held()
        changed = sorted(k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k))
        child = subprocess.run(
            [sys.executable, "-c", "from google.protobuf.internal import api_implementation as a; print(a.Type())"],
            capture_output=True, text=True, check=True,
        )
        print(json.dumps([changed, child.stdout.strip()]))
        """
    )
    proc = run_python("-c", script)
    assert proc.returncode == 0, proc.stderr
    changed, implementation = json.loads(proc.stdout)
    assert changed == [] and implementation == "upb", (changed, implementation)
