"""Outputs the ONNX Runtime layer cannot take.

onnxruntime-extensions copies each of our outputs into a tensor it asks ONNX Runtime for after our
kernel returned; when that allocation fails the C++ exception aborts the process. Every kernel checks
its output size before allocating (kernels.limits.check_output) and the hook checks again before
handing a large result over. Each case runs in a child process whose address space is limited to what
it uses plus 1.5 times the output: room for the kernel's array, not for the layer's copy as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import NEVER

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PRELUDE = """
import os, resource
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper
import customops

MIB = 1 << 20

def limit_to(extra):
    used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + extra, resource.getrlimit(resource.RLIMIT_AS)[1]))

def model(op, inputs, **attrs):
    node = helper.make_node(op, [name for name, _, _ in inputs], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(name, elem, [None] * rank) for name, elem, rank in inputs if name],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return customops.rewrite(m)

def attempt(sess, feed):
    try:
        y = sess.run(None, feed)
        print("ran", y[0].shape, flush=True)
    except customops.KernelError as e:
        print("refused:", e, flush=True)
"""

_F, _I = "TensorProto.FLOAT", "TensorProto.INT64"
_ONE = "np.ones((1, 1, 2, 2), np.float32)"
# (model, warm-up feed, feed whose output is 1x1x4096x8192 float32 = 128 MiB)
_CASES = {
    "Resize": (
        f"model('Resize', [('x', {_F}, 4), ('', 0, 0), ('', 0, 0), ('sizes', {_I}, 1)])",
        f"{{'x': {_ONE}, 'sizes': np.array([1, 1, 4, 4])}}",
        f"{{'x': {_ONE}, 'sizes': np.array([1, 1, 4096, 8192])}}",
    ),
    "Pad": (
        f"model('Pad', [('x', {_F}, 4), ('pads', {_I}, 1)])",
        f"{{'x': {_ONE}, 'pads': np.array([0, 0, 1, 1, 0, 0, 1, 1])}}",
        f"{{'x': {_ONE}, 'pads': np.array([0, 0, 0, 0, 0, 0, 4094, 8190])}}",
    ),
    "Col2Im": (
        f"model('Col2Im', [('x', {_F}, 3), ('image', {_I}, 1), ('block', {_I}, 1)], strides=[8192, 8192])",
        "{'x': np.ones((1, 1, 1), np.float32), 'image': np.array([2, 2]), 'block': np.array([1, 1])}",
        "{'x': np.ones((1, 1, 1), np.float32), 'image': np.array([4096, 8192]), 'block': np.array([1, 1])}",
    ),
}


def _child(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` after the prelude in a child Python (an abort must not take pytest with it)."""
    return subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=NEVER,
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", _ROOT), **env},
    )


@pytest.mark.parametrize("op", sorted(_CASES))
def test_an_output_the_layer_cannot_copy_is_refused_before_it_is_allocated(op):
    build, small, big = _CASES[op]
    proc = _child(
        f"""
        sess = customops.InferenceSession({build})
        attempt(sess, {small})
        limit_to(192 * MIB)
        attempt(sess, {big})
        """
    )
    assert proc.returncode not in (134, -6, 139, -11), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ran"), proc.stdout
    assert lines[1].startswith("refused:"), proc.stdout
    # the message gives the size and the limit
    assert "output 1x1x4096x8192 float32 needs 268435456 bytes" in lines[1], lines[1]
    assert "RLIMIT_AS" in lines[1], lines[1]


def test_a_result_the_layer_cannot_copy_is_refused_even_with_a_planned_shape():
    """The kernel's plan is made while memory is plentiful; later the process has room for the kernel's
    array but not for the layer's copy: the hook refuses the result instead of handing it over."""
    build, _, big = _CASES["Resize"]
    proc = _child(
        f"""
        opts = ort.SessionOptions()
        opts.enable_cpu_mem_arena = False  # ONNX Runtime allocates each output afresh
        sess = customops.InferenceSession({build}, opts)
        attempt(sess, {big})
        limit_to(192 * MIB)
        attempt(sess, {big})
        """,
    )
    assert proc.returncode not in (134, -6, 139, -11), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "ran (1, 1, 4096, 8192)", proc.stdout
    assert lines[1].startswith("refused:"), proc.stdout
    assert "needs 134217728 bytes (ONNX Runtime's copy of it)" in lines[1], lines[1]


def test_string_tensors_are_limited_to_what_the_layer_can_index():
    from customops.kernels import limits

    with pytest.raises(Exception, match="at most 2147483647"):
        limits.check_output((2**31,), object)
    limits.check_output((3,), object)


def _fake_machine(tmp_path, kind: str) -> str:
    """Files of a machine under memory pressure for the seam of customops.kernels.limits (MEMINFO,
    SELF_CGROUP, CGROUP_ROOT): 200 MiB left, told by /proc/meminfo or a cgroup v2 or v1 limit (a limit
    of a cgroup above this process's binds too); returns the code that points the seam at them."""
    mib = 1 << 20
    meminfo, cgroup, root = tmp_path / "meminfo", tmp_path / "cgroup", tmp_path / "mount"
    available = 200 * mib if kind == "meminfo" else 8 << 30
    meminfo.write_text(f"MemTotal: {16 << 20} kB\nMemAvailable: {available // 1024} kB\nSwapFree: 0 kB\n")
    if kind == "meminfo":
        cgroup.write_text("0::/\n")  # no memory limit at the root
    elif kind == "cgroup v2":
        cgroup.write_text("0::/outer/inner\n")
        (root / "outer" / "inner").mkdir(parents=True)
        (root / "memory.max").write_text("max\n")
        (root / "outer" / "memory.max").write_text(f"{300 * mib}\n")
        (root / "outer" / "memory.current").write_text(f"{100 * mib}\n")
        (root / "outer" / "inner" / "memory.max").write_text("max\n")
        (root / "outer" / "inner" / "memory.current").write_text(f"{50 * mib}\n")
    else:
        cgroup.write_text("5:cpu,cpuacct:/x\n4:memory:/box\n")
        (root / "memory" / "box").mkdir(parents=True)
        (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        (root / "memory" / "memory.usage_in_bytes").write_text(f"{4 << 30}\n")
        (root / "memory" / "box" / "memory.limit_in_bytes").write_text(f"{1000 * mib}\n")
        (root / "memory" / "box" / "memory.usage_in_bytes").write_text(f"{800 * mib}\n")
    return (
        "from customops.kernels import limits\n"
        f"limits.MEMINFO, limits.SELF_CGROUP, limits.CGROUP_ROOT = {str(meminfo)!r}, {str(cgroup)!r}, {str(root)!r}\n"
    )


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("meminfo", "the memory available now (MemAvailable)"),
        ("cgroup v2", "outer/memory.max"),
        ("cgroup v1", "memory/box/memory.limit_in_bytes"),
    ],
)
def test_an_output_past_what_the_machine_can_give_now_is_refused_before_it_is_allocated(
    tmp_path, kind, named
):
    """Other processes hold most of the memory: no rlimit and no strict overcommit say so, but
    /proc/meminfo's MemAvailable or a memory cgroup's limit less its usage does. A 2.3 GB output was once
    made there and the layer's copy of it aborted with std::bad_alloc; now it is refused, naming what
    said so (the machine is played through the files the seam reads)."""
    build, small, big = _CASES["Pad"]
    proc = _child(
        _fake_machine(tmp_path, kind)
        + f"""
sess = customops.InferenceSession({build})
attempt(sess, {small})
attempt(sess, {big})
"""
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ran") and lines[1].startswith("refused:"), proc.stdout
    assert "needs 268435456 bytes" in lines[1] and "can allocate 209715200 more" in lines[1], lines[1]
    assert named in lines[1], lines[1]


def test_a_huge_output_is_refused_with_an_exception_on_this_machine():
    """The real readings: an output of 0.6 x (RAM + swap) needs 1.2 x that with the layer's copy, more
    than the machine can give whoever holds what (and within the one allocation heuristic overcommit
    grants, so only the reading of what is available now refuses it): a KernelError, not an abort."""
    proc = _child(
        """
from customops.kernels import limits
info = limits._meminfo()
total = info["MemTotal"] + info.get("SwapTotal", 0)
width = 8192
height = int(total * 0.6) // 4 // width
sess = customops.InferenceSession(model('Pad', [('x', TensorProto.FLOAT, 4), ('pads', TensorProto.INT64, 1)]))
attempt(sess, {'x': np.ones((1, 1, 1, 1), np.float32), 'pads': np.array([0, 0, 0, 0, 0, 0, height - 1, width - 1])})
"""
    )
    assert proc.returncode not in (134, -6, 139, -11), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    (line,) = proc.stdout.splitlines()
    assert line.startswith("refused:") and ("MemAvailable" in line or "cgroup" in line), line
