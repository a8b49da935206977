"""How large tensors get their memory: recycled during our runs (the default), glibc's heap
(``CUSTOMOPS_MALLOC=heap``) or neither (``off``)."""

from __future__ import annotations

import contextvars
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import customops
from customops import allocator
from tests.helpers import one_node_model

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name

HANDLER = "customops_recycle_large"
_NUMPYS = get_handler_name()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE = textwrap.dedent(
    """
    import ctypes, json
    import numpy as np
    import customops.runtime
    from customops import allocator

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    before = libc.mallinfo2().hblkhd
    big = np.ones(40 * 2**20 // 4, np.float32)  # above glibc's largest mmap threshold (32 MiB)
    mmapped = libc.mallinfo2().hblkhd - before
    from customops.kernels import _alloc
    print(json.dumps({"policy": allocator.policy(), "mmapped": mmapped, "nbytes": big.nbytes,
                      "recycler": allocator.recycler() is not None, "note": allocator.recycler_state(),
                      "outputs_recycled": _alloc.is_large((big.size,), big.dtype)}))
    """
)


def _glibc_with_mallinfo2() -> bool:
    try:
        libc = ctypes.CDLL(None)
        return hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallinfo2")
    except OSError:
        return False


def _probe(value: str | None) -> dict:
    import json

    env = {k: v for k, v in os.environ.items() if k != "CUSTOMOPS_MALLOC"}
    if value is not None:
        env["CUSTOMOPS_MALLOC"] = value
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="needs glibc >= 2.33")
def test_heap_policy_serves_large_blocks_from_the_heap() -> None:
    heap = _probe("heap")
    assert heap["policy"] == "heap"
    assert heap["mmapped"] == 0  # the 40 MiB array lives in the heap
    default = _probe(None)
    assert default["policy"] == "default"
    assert default["mmapped"] >= default["nbytes"]  # glibc's own choice: a fresh mapping


def test_unknown_value_keeps_the_default_and_says_why() -> None:
    result = _probe("bogus")
    assert result["policy"].startswith("default") and "'bogus'" in result["policy"]
    assert result["recycler"] and result["outputs_recycled"]
    assert _probe("default")["policy"] == "default"


def test_only_the_default_policy_recycles() -> None:
    off = _probe("off")
    assert off["policy"] == "off" and not off["recycler"] and not off["outputs_recycled"]
    assert off["note"].startswith("off")
    heap = _probe("heap")  # glibc's heap keeps freed memory itself
    assert not heap["recycler"] and not heap["outputs_recycled"]


# ---------------------------------------------------------------------------------------------
# The recycling handler (the default policy)

LARGE_INPUT = (1, 10, 1024, 1024)  # 41.9 MB of float32: above glibc's largest mmap threshold


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _in_handler(fn):
    """Run fn() with the recycling handler current, in a copy of this context."""
    var, capsule, _ = allocator.recycler()

    def inside():
        var.set(capsule)
        return fn()

    return contextvars.copy_context().run(inside)


needs_recycler = pytest.mark.skipif(
    allocator.recycler() is None, reason=f"recycling handler {allocator.recycler_state()}"
)


def _spying(session, feed, runs: int) -> tuple[list[np.ndarray], list[tuple[str, int]]]:
    """``runs`` results of ``session``, and for each call of our hook the name of the handler that
    allocated the layer's copy of the first input, and its address."""
    from onnxruntime_extensions import PyCustomOpDef

    from customops import runtime

    seen: list[tuple[str, int]] = []

    def spy(k_id, inputs, attrs):
        seen.append((get_handler_name(inputs[0]), _address(inputs[0])))
        return runtime._invoke(k_id, inputs, attrs)

    PyCustomOpDef.install_hooker(spy)
    try:
        results = [session.run(None, feed)[0] for _ in range(runs)]
    finally:
        PyCustomOpDef.install_hooker(runtime._invoke)
    return results, seen


def _large_pad():
    x = np.random.default_rng(0).standard_normal(LARGE_INPUT, dtype=np.float32)
    model, feed = one_node_model(
        "Pad",
        {"data": x, "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1])},
        19,
        initializers=("pads",),
        mode="reflect",
    )
    return customops.InferenceSession(customops.rewrite(model)), feed


@needs_recycler
def test_a_session_run_copies_large_inputs_into_recycled_blocks() -> None:
    """In a run whose inputs are large, the layer's copy of a large input comes from our handler and
    lands in the block the previous run freed; the results stay right, and outside runs numpy's own
    handler is back."""
    session, feed = _large_pad()
    x = feed["data"]
    before = allocator.recycled_counts()
    results, seen = _spying(session, feed, 3)
    after = allocator.recycled_counts()
    assert [name for name, _ in seen] == [HANDLER] * 3
    assert seen[1][1] == seen[2][1]  # the same block, freed by one run and taken by the next
    assert after["hits"] - before["hits"] >= 2
    expected = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    for y in results:
        np.testing.assert_array_equal(y, expected)
    assert get_handler_name() != HANDLER


@needs_recycler
def test_a_large_tensor_met_inside_the_model_turns_recycling_on_from_the_next_run() -> None:
    """Small inputs, a large intermediate (our Resize's output, copied by the layer into our Pad's
    input): the first run goes without the handler, every later one with it, reusing the block."""
    from onnx import TensorProto, helper

    x = np.random.default_rng(3).standard_normal((1, 10, 512, 512), dtype=np.float32)  # 10.5 MB
    nodes = [
        helper.make_node("Resize", ["x", "", "scales"], ["big"], mode="nearest"),  # 41.9 MB
        helper.make_node("Pad", ["big", "pads"], ["y"], mode="edge"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2]),
            helper.make_tensor("pads", TensorProto.INT64, [8], [0, 0, 1, 1, 0, 0, 1, 1]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    session = customops.InferenceSession(customops.rewrite(model))
    results, seen = _spying(session, {"x": x}, 3)
    assert [name for name, _ in seen] == [_NUMPYS, _NUMPYS, HANDLER, HANDLER, HANDLER, HANDLER]
    assert seen[3][1] == seen[5][1]  # the Pad's input copy: the block the previous run freed
    expected = np.pad(x.repeat(2, axis=2).repeat(2, axis=3), [(0, 0), (0, 0), (1, 1), (1, 1)], mode="edge")
    for y in results:
        np.testing.assert_array_equal(y, expected)


@needs_recycler
def test_sessions_whose_nodes_meet_only_small_tensors_never_set_the_handler() -> None:
    """Setting numpy's variable costs 1-2 us a run, which tiny nodes would pay for nothing."""
    f32 = np.float32
    model, feed = one_node_model(
        "Resize",
        {"X": np.ones((1, 3, 8, 8), f32), "roi": None, "scales": np.array([1, 1, 2, 2], f32)},
        19,
        initializers=("scales",),
    )
    session = customops.InferenceSession(customops.rewrite(model))
    _, seen = _spying(session, feed, 3)
    assert [name for name, _ in seen] == [_NUMPYS] * 3 and not session._recycling


@needs_recycler
def test_a_failing_run_puts_numpys_handler_back() -> None:
    f32 = np.float32
    model, feed = one_node_model(
        "Resize", {"X": np.ones((1, 1, 2, 2), f32), "roi": None, "scales": np.ones(4, f32), "sizes": None}, 19
    )
    session = customops.InferenceSession(customops.rewrite(model))
    session._recycling = True  # as after a run that met a large tensor
    feed["scales"] = np.array([1, 1, -2, 2], f32)  # scales must be positive
    with pytest.raises(customops.KernelError, match=r"scale -2\.0"):
        session.run(None, feed)
    assert get_handler_name() != HANDLER


_KEPT: list = []  # the other handler's struct and capsule name live as long as the process


def _other_handler():
    """A handler named 'other' made of numpy's own functions, as a caller could install it."""
    get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi)
    )
    new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
        ("PyCapsule_New", ctypes.pythonapi)
    )
    numpys = allocator._Handler.from_address(get_pointer(allocator.recycler().delegate, b"mem_handler"))
    handler = allocator._Handler(b"other", 1, numpys.allocator)
    name = ctypes.create_string_buffer(b"mem_handler")
    _KEPT.extend([handler, name])
    return new_capsule(ctypes.addressof(handler), name, None)


@needs_recycler
def test_a_handler_installed_by_someone_else_stays_in_charge() -> None:
    """A run does not put ours in place of a handler the caller chose."""
    var = allocator.recycler().var
    model, feed = one_node_model(
        "Pad", {"data": np.ones((2, 3), np.float32), "pads": np.array([0, 1, 0, 1])}, 19
    )
    session = customops.InferenceSession(customops.rewrite(model))
    session._recycling = True  # as after a run that met a large tensor
    seen = []

    def spy_run():
        from onnxruntime_extensions import PyCustomOpDef

        from customops import runtime

        def spy(k_id, inputs, attrs):
            seen.append(get_handler_name(inputs[0]))
            return runtime._invoke(k_id, inputs, attrs)

        PyCustomOpDef.install_hooker(spy)
        try:
            session.run(None, feed)
        finally:
            PyCustomOpDef.install_hooker(runtime._invoke)

    spy_run()

    def with_other():
        var.set(_other_handler())
        spy_run()

    contextvars.copy_context().run(with_other)
    assert seen == [HANDLER, "other"]


@needs_recycler
def test_only_freed_blocks_of_the_same_size_are_handed_out_again() -> None:
    nbytes = (40 << 20) + 4096 * 3  # a size no other test allocates

    def scenario():
        start = allocator.recycled_counts()
        a = np.empty(nbytes, np.uint8)
        a[:] = 7
        b = np.empty(nbytes, np.uint8)  # a is held: a new block
        assert _address(b) != _address(a)
        first = _address(a)
        del a
        c = np.empty(nbytes + 4096, np.uint8)  # another size: not a's block
        assert _address(c) != first
        d = np.empty(nbytes, np.uint8)  # a's block
        assert _address(d) == first
        small = np.empty(1000, np.uint8)  # small blocks go to numpy's allocator
        assert get_handler_name(small) == HANDLER
        del b, c, d, small
        end = allocator.recycled_counts()
        return {key: end[key] - start[key] for key in ("hits", "kept")}

    assert _in_handler(scenario) == {"hits": 1, "kept": 4}


@needs_recycler
def test_kept_blocks_are_bounded_in_number_and_bytes() -> None:
    from customops import _recycler

    def scenario():
        start = allocator.recycled_counts()
        blocks = [np.empty((33 << 20) + 4096 * i, np.uint8) for i in range(_recycler.KEEP + 3)]
        del blocks  # more blocks than slots: the oldest go back
        middle = allocator.recycled_counts()
        huge = np.empty(_recycler.KEEP_BYTES + 4096, np.uint8)  # never written: costs no memory
        del huge  # larger than the whole budget: never kept
        end = allocator.recycled_counts()
        return start, middle, end

    start, middle, end = _in_handler(scenario)
    assert middle["kept"] - start["kept"] == _recycler.KEEP + 3
    assert middle["released"] - start["released"] >= 3
    assert middle["held_bytes"] <= _recycler.KEEP_BYTES
    assert end["kept"] == middle["kept"] and end["held_bytes"] == middle["held_bytes"]


@needs_recycler
def test_zeroed_and_resized_blocks_keep_their_contents_right() -> None:
    def scenario():
        a = np.empty(40 << 20, np.uint8)
        a[:] = 255
        del a  # kept, full of 255
        z = np.zeros(40 << 20, np.uint8)  # calloc: never a kept block
        assert not z.any()
        r = np.ones(33 << 20, np.uint8)
        r.resize(34 << 20, refcheck=False)  # realloc through numpy's allocator
        assert r[: 33 << 20].all() and not r[33 << 20 :].any()
        return True

    assert _in_handler(scenario)
