"""Strings the ONNX Runtime layer cannot carry exactly.

onnxruntime-extensions hands a string tensor to a Python op as NUL-terminated UTF-8 (``a\\x00b`` arrives
as ``a``) and decodes it strictly (invalid UTF-8 aborts the process); it takes our string outputs back
the same way. customops.InferenceSession refuses such feeds before the run, and our kernels' string
outputs raise KernelError rather than cross cut or abort.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import customops
from customops.bridge import hook, session
from tests.helpers import NEVER, one_node_model

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _string_resize() -> customops.InferenceSession:
    x = np.array([["a", "b"], ["c", "d"]], dtype=object)
    model, _ = one_node_model(
        "Resize", {"X": x, "roi": None, "scales": np.array([1, 2], np.float32)}, 13, initializers=("scales",)
    )
    return customops.InferenceSession(customops.rewrite(model))


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=NEVER,
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", _ROOT)},
    )


def test_invalid_utf8_feed_is_refused_before_the_run_instead_of_aborting():
    proc = _child(
        """
        import numpy as np, customops
        from tests.hostile.test_strings import _string_resize
        sess = _string_resize()
        try:
            sess.run(None, {"X": np.array([[b"\\xff", b"b"], [b"c", b"d"]])})
            print("ran")
        except customops.CustomOpsError as e:
            print("refused:", e)
        """
    )
    assert proc.returncode not in (134, -6, 139, -11), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("refused: input 'X'"), proc.stdout
    assert "not UTF-8" in proc.stdout


@pytest.mark.parametrize(
    "value",
    [
        np.array([["a\x00b", "b"], ["c", "d"]], dtype=object),
        np.array([["a\x00b", "b"], ["c", "d"]]),
        np.array([[b"a\x00b", b"b"], [b"c", b"d"]]),
    ],
    ids=["object", "unicode", "bytes"],
)
def test_a_string_with_a_nul_is_refused_not_cut(value):
    sess = _string_resize()
    with pytest.raises(customops.CustomOpsError, match=r"input 'X': string .*NUL"):
        sess.run(None, {"X": value})
    ortvalue = _string_ortvalue([b"a\x00b", b"b", b"c", b"d"])
    with pytest.raises(customops.CustomOpsError, match=r"input 'X': string .*NUL"):
        sess.run_with_ort_values(["Y"], {"X": ortvalue})
    # text the layer carries exactly still runs
    (y,) = sess.run(None, {"X": np.array([["é", "b"], ["c", "d"]], dtype=object)})
    assert y.tolist() == [["é", "é", "b", "b"], ["c", "c", "d", "d"]]


def _string_ortvalue(items: list[bytes]) -> ort.OrtValue:
    """A 2x2 string OrtValue holding ``items`` byte for byte (ONNX Runtime makes none from numpy): the
    output of a plain session whose only node is a Constant."""
    value = helper.make_tensor("v", TensorProto.STRING, [2, 2], items)
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["y"], value=value)],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run_with_ort_values(["y"], {})[0]


def test_check_layer_strings_is_public_and_names_the_input():
    check = session.check_layer_strings
    check("x", np.array(["fine", "ünïcode"], dtype=object))
    check("n", np.arange(3.0))
    check("l", ["a", "b"])
    for value, reason in (
        (np.array(["a\x00"], dtype=object), "NUL"),
        (np.array(["\ud800"], dtype=object), "surrogate"),
        (np.array([b"\xc3"]), "not UTF-8"),
        (["ok", "x\x00y"], "NUL"),
    ):
        with pytest.raises(customops.CustomOpsError, match=rf"^input 'feed': string .*{reason}") as info:
            check("feed", value)
        assert "\n" not in str(info.value)


def _replace_string_resize(monkeypatch, result):
    for binding in hook.BINDINGS.values():
        if binding.op.name == "Resize" and binding.elem_type == "string":
            monkeypatch.setattr(binding, "kernel", lambda *args, **kwargs: result)
            monkeypatch.setattr(binding, "bind", None)
            monkeypatch.setattr(binding, "attr_cache", {})


def test_a_string_output_with_a_nul_raises_instead_of_being_cut(monkeypatch):
    sess = _string_resize()
    feed = {"X": np.array([["a", "b"]], dtype=object)}
    _replace_string_resize(monkeypatch, np.array(["a\x00b", "c"], dtype=object))
    with pytest.raises(customops.KernelError, match="NUL"):
        sess.run(None, feed)
    # bytes the kernel returns cross as their text, not as their repr
    _replace_string_resize(monkeypatch, np.array([b"ab", b"c"]))
    (y,) = sess.run(None, feed)
    assert y.tolist() == ["ab", "c"]


def test_a_string_output_utf8_cannot_encode_raises_instead_of_aborting():
    proc = _child(
        """
        import numpy as np, customops
        from customops.bridge import hook
        from tests.hostile.test_strings import _string_resize
        sess = _string_resize()
        for binding in hook.BINDINGS.values():
            if binding.op.name == "Resize" and binding.elem_type == "string":
                binding.kernel = lambda *a, **k: np.array(["\\ud800"], dtype=object)
                binding.bind = None
                binding.attr_cache.clear()
        try:
            sess.run(None, {"X": np.array([["a", "b"]], dtype=object)})
            print("ran")
        except customops.KernelError as e:
            print("raised:", e)
        """
    )
    assert proc.returncode not in (134, -6, 139, -11), proc.stderr[-2000:]
    assert proc.stdout.startswith("raised:") and "surrogate" in proc.stdout, proc.stdout + proc.stderr[-2000:]
