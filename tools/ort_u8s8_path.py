"""Which integer GEMM ONNX Runtime takes on this CPU for uint8 x int8, and whether
customops.eval.judging.ort_gemm reproduces it bit for bit (docs/ort-deviations.md, Q-U8S8-PAIR-SATURATION).

    python tools/ort_u8s8_path.py [--cases N] [--seed S]

Runs one-node models on ORT's CPU provider: MatMulInteger (B as input and as initializer, scalar,
per-column and batched per-column zero points, broadcast batches, 1-D A, odd K, M = 1, K up to 899), the same with
uint8 B and with 7-bit B, QLinearMatMul (per-tensor and per-column), QLinearConv (1-D, 2-D and 3-D; the
GEMM path, the symmetric-weight ConvSym path, groups, odd channel counts, pads, strides, dilations;
depthwise), DynamicQuantizeLinear into MatMulInteger, MatMulInteger with the session option
``session.x64quantprecision``, and ConvInteger with int8 weights (its "model" is QLinearConv's GEMM
with saturating pairs: ORT's ConvInteger takes another GEMM, exact, so it matches only where that
does not saturate). Each family's line
says how many cases ORT's output equals the saturating model's, the exact result's, and how many cases
the two differ at all (only those tell the paths apart).

On a CPU with AVX-512 VNNI, AVX-VNNI or AMX, ORT is exact: run it under user-mode emulation of a CPU
with AVX2 and no VNNI to see the saturating path (Debian 12's qemu 7.2 emulates AVX2, not AVX-512)::

    apt-get install -y qemu-user
    qemu-x86_64 -cpu Haswell .venv/bin/python tools/ort_u8s8_path.py

(qemu's warnings about CPUID features TCG lacks are harmless). Exit status 1 when some case matches
neither the model nor the exact result.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from customops.eval.judging.ort_gemm import (
    ConvGeometry,
    QuantParams,
    conv_sums,
    exact_matmul_integer,
    explained_by_u8s8_saturation,
    ort_u8s8_matmul_integer,
    qlinear_conv,
    qlinear_matmul,
)

ELEM = {
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.float32): TensorProto.FLOAT,
}


@dataclass
class Tally:
    """One family's counts: cases, ORT equal to the model, ORT equal to the exact result, cases where the
    model and the exact result differ, outputs compared and outputs where ORT leaves the exact result."""

    name: str
    cases: int = 0
    model: int = 0
    exact: int = 0
    telling: int = 0
    outputs: int = 0
    wrong_outputs: int = 0
    worst: int = 0
    odd: list[str] = field(default_factory=list)

    def add(self, ort_out: np.ndarray, model: np.ndarray, exact: np.ndarray, what: str) -> None:
        self.cases += 1
        self.model += bool(np.array_equal(ort_out, model))
        self.exact += bool(np.array_equal(ort_out, exact))
        self.telling += not np.array_equal(model, exact)
        self.outputs += ort_out.size
        wrong = ort_out.astype(np.int64) != exact.astype(np.int64)
        self.wrong_outputs += int(np.count_nonzero(wrong))
        if wrong.any():
            self.worst = max(self.worst, int(np.abs(ort_out.astype(np.int64) - exact).max()))
        if not (np.array_equal(ort_out, model) or np.array_equal(ort_out, exact)):
            self.odd.append(what)

    def line(self) -> str:
        return (
            f"{self.name:<36} cases {self.cases:4d}  =model {self.model:4d}  =exact {self.exact:4d}  "
            f"model!=exact {self.telling:4d}  ORT wrong {self.wrong_outputs}/{self.outputs} outputs, "
            f"worst {self.worst}"
        )


def run(node, feeds: dict, consts: dict, out_type: int, options: ort.SessionOptions | None = None):
    """ORT's output of a one-node model: ``feeds`` as graph inputs, ``consts`` as initializers."""
    inputs = [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape)) for k, v in feeds.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", out_type, None)], inits
    )
    opsets = [helper.make_opsetid("", 13)]
    model = helper.make_model(graph, opset_imports=opsets)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def u8(rng, shape, low=0, high=256):
    return rng.integers(low, high, shape).astype(np.uint8)


def s8(rng, shape, low=-128, high=128):
    return rng.integers(low, high, shape).astype(np.int8)


def example() -> None:
    """The measured example: A = [255, 255], B = [-128, -128]."""
    a, b = np.array([[255, 255]], np.uint8), np.array([[-128], [-128]], np.int8)
    got = run(helper.make_node("MatMulInteger", ["a", "b"], ["y"]), {"a": a, "b": b}, {}, TensorProto.INT32)
    print(
        f"example: ORT {got.tolist()}, model {ort_u8s8_matmul_integer(a, b).tolist()}, "
        f"exact {exact_matmul_integer(a, b).tolist()}"
    )
    print(f"  {explained_by_u8s8_saturation(a, b, None, None, got)}")


def matmul_shapes(rng, large: bool = False) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """Random MatMulInteger shapes: plain 2-D, broadcast batches or a 1-D A; ``large``: 2-D, M up to 63 and K
    from 100 to 899 (several of MLAS's K blocks, several row blocks and threads)."""
    if large:
        m, k, n = int(rng.integers(1, 64)), int(rng.integers(100, 900)), int(rng.integers(1, 40))
        return (m, k), (k, n), "2d"
    m, k, n = int(rng.integers(1, 9)), int(rng.integers(1, 41)), int(rng.integers(1, 21))
    kind = rng.choice(["2d", "batch", "vector"])
    if kind == "batch":
        return (2, 1, m, k), (3, k, n), kind
    if kind == "vector":
        return (k,), (k, n), kind
    return (m, k), (k, n), kind


def matmul_zero_points(rng, b_shape, kind):
    """None, scalar, per-column ([N] for 2-D B) or batched per-column zero points."""
    choice = rng.choice(["none", "scalar", "column"])
    if choice == "none":
        return None, None
    a_zp = np.array(rng.integers(0, 256), np.uint8)
    if choice == "scalar":
        return a_zp, np.array(rng.integers(-128, 128), np.int8)
    shape = (b_shape[-1],) if len(b_shape) == 2 else (*b_shape[:-2], 1, b_shape[-1])
    return a_zp, s8(rng, shape)


def matmul_case(rng, tally: Tally, b_const: bool, b_maker: Callable, large: bool = False) -> None:
    """One MatMulInteger case; B (and its zero point) as initializers when ``b_const``."""
    a_shape, b_shape, kind = matmul_shapes(rng, large)
    a, b = u8(rng, a_shape), b_maker(rng, b_shape)
    a_zp, b_zp = matmul_zero_points(rng, b_shape, kind)
    if b.dtype == np.uint8 and b_zp is not None:
        b_zp = np.asarray(b_zp.astype(np.int16) + 128).astype(np.uint8)
    names, feeds, consts = ["a", "b"], {"a": a}, {}
    (consts if b_const else feeds)["b"] = b
    if a_zp is not None:
        names += ["a_zp", "b_zp"]
        feeds["a_zp"] = a_zp
        (consts if b_const else feeds)["b_zp"] = b_zp
    got = run(helper.make_node("MatMulInteger", names, ["y"]), feeds, consts, TensorProto.INT32)
    exact = exact_matmul_integer(a, b, a_zp, b_zp)
    model = ort_u8s8_matmul_integer(a, b, a_zp, b_zp) if b.dtype == np.int8 else exact
    tally.add(got, model, exact, f"MatMulInteger A{a.shape} B{b.shape} {b.dtype} zp {b_zp}")


def qlinear_matmul_case(rng, tally: Tally) -> None:
    """One QLinearMatMul case, B as initializer, per-tensor or per-column B scale and zero point."""
    m, k, n = int(rng.integers(1, 9)), int(rng.integers(1, 41)), int(rng.integers(1, 21))
    a, b = u8(rng, (m, k)), s8(rng, (k, n))
    column = bool(rng.integers(0, 2))
    b_shape = (n,) if column else ()
    q = {
        "a_scale": np.array(rng.uniform(0.001, 0.05), np.float32),
        "a_zp": np.array(rng.integers(0, 256), np.uint8),
        "b_scale": rng.uniform(0.001, 0.05, b_shape).astype(np.float32),
        "b_zp": s8(rng, b_shape, -10, 10),
        "y_scale": np.array(rng.uniform(0.5, 20.0), np.float32),
        "y_zp": np.array(rng.integers(0, 256), np.uint8),
    }
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]
    node = helper.make_node("QLinearMatMul", names, ["y"])
    got = run(node, {"a": a}, {"b": b, **q}, TensorProto.UINT8)
    args = (a, q["a_scale"], q["a_zp"], b, q["b_scale"], q["b_zp"], q["y_scale"], q["y_zp"])
    model, exact = qlinear_matmul(*args), qlinear_matmul(*args, saturating=False)
    tally.add(got, model, exact, f"QLinearMatMul {m}x{k}x{n} column={column}")


def conv_geometry(rng, rank: int, kernel: tuple[int, ...], group: int) -> ConvGeometry:
    strides = tuple(int(rng.integers(1, 3)) for _ in range(rank))
    dilations = tuple(int(rng.integers(1, 3)) for _ in range(rank))
    pads = tuple(int(rng.integers(0, 2)) for _ in range(2 * rank))
    return ConvGeometry(group, strides, pads, dilations)


def conv_shapes(rng, path: str):
    """(rank, N, C, M, group, kernel) for a QLinearConv path: gemm (any), sym (ConvSym: group 1, C % 4 == 0,
    M >= 16 and M % 8 == 0, weight zero point 0) or depthwise."""
    rank = int(rng.choice([1, 2, 2, 3]))
    kernel = tuple(int(rng.integers(1, 4)) for _ in range(rank))
    if path == "sym":
        return rank, 1, 4 * int(rng.integers(1, 5)), 16, 1, kernel
    if path == "depthwise":
        c = int(rng.choice([3, 16]))
        return rank, 1, c, c, c, kernel
    group = int(rng.choice([1, 1, 2]))
    c = group * int(rng.integers(1, 6))
    return rank, int(rng.integers(1, 3)), c, group * int(rng.integers(1, 5)), group, kernel


def qlinear_conv_case(rng, tally: Tally, path: str) -> None:
    """One QLinearConv case on the given path; W is an initializer (an input for the gemm path, half the
    time); each spatial axis of X is 0 to 4 longer than the dilated kernel."""
    rank, n, c, m, group, kernel = conv_shapes(rng, path)
    geometry = conv_geometry(rng, rank, kernel, group)
    spatial = (
        d * (k - 1) + 1 + int(rng.integers(0, 5)) for d, k in zip(geometry.dilations, kernel, strict=True)
    )
    x = u8(rng, (n, c, *spatial))
    w = s8(rng, (m, c // group, *kernel))
    w_zero = 0 if path == "sym" else int(rng.integers(-5, 6))
    per_channel = bool(rng.integers(0, 2))
    xq = QuantParams(np.array(rng.uniform(0.005, 0.05), np.float32), np.array(rng.integers(0, 256), np.uint8))
    w_scale = rng.uniform(0.005, 0.05, (m,) if per_channel else ()).astype(np.float32)
    wq = QuantParams(w_scale, np.full(w_scale.shape, w_zero, np.int8))
    yq = QuantParams(np.array(rng.uniform(0.5, 8.0), np.float32), np.array(rng.integers(0, 256), np.uint8))
    bias = rng.integers(-2000, 2000, m).astype(np.int32)
    attrs = dict(
        group=group,
        strides=list(geometry.strides),
        pads=list(geometry.pads),
        dilations=list(geometry.dilations),
        kernel_shape=list(kernel),
    )
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"]
    consts = {
        "xs": xq.scale,
        "xz": xq.zero_point,
        "ws": wq.scale,
        "wz": wq.zero_point,
        "ys": yq.scale,
        "yz": yq.zero_point,
        "bias": bias,
    }
    feeds = {"x": x}
    (feeds if path == "gemm" and rng.integers(0, 2) else consts)["w"] = w
    got = run(helper.make_node("QLinearConv", names, ["y"], **attrs), feeds, consts, TensorProto.UINT8)
    args = (x, xq, w, wq, yq, bias, geometry)
    model, exact = qlinear_conv(*args), qlinear_conv(*args, saturating=False)
    tally.add(got, model, exact, f"QLinearConv {path} X{x.shape} W{w.shape} {geometry}")


def dynamic_quantize_case(rng, tally: Tally) -> None:
    """float X through DynamicQuantizeLinear (uint8, computed scale and zero point) into MatMulInteger with
    constant int8 B; the model reads the quantized X and its zero point back from ORT."""
    m, k, n = int(rng.integers(1, 9)), int(rng.integers(2, 41)), int(rng.integers(1, 21))
    x = rng.normal(0, 1, (m, k)).astype(np.float32)
    b = s8(rng, (k, n))
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "b", "xz"], ["y"]),
    ]
    outputs = [
        helper.make_tensor_value_info(name, t, None)
        for name, t in (("y", TensorProto.INT32), ("xq", TensorProto.UINT8), ("xz", TensorProto.UINT8))
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        outputs,
        [numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got, xq, xz = session.run(None, {"x": x})
    model_out = ort_u8s8_matmul_integer(xq, b, xz)
    tally.add(got, model_out, exact_matmul_integer(xq, b, xz), f"DynamicQuantizeLinear {m}x{k}x{n}")


def precision_option_case(rng, tally: Tally) -> None:
    """MatMulInteger with constant int8 B and session.x64quantprecision = 1 (ORT converts B to uint8)."""
    m, k, n = int(rng.integers(1, 9)), int(rng.integers(2, 41)), int(rng.integers(1, 21))
    a, b = u8(rng, (m, k)), s8(rng, (k, n))
    options = ort.SessionOptions()
    options.add_session_config_entry("session.x64quantprecision", "1")
    got = run(
        helper.make_node("MatMulInteger", ["a", "b"], ["y"]), {"a": a}, {"b": b}, TensorProto.INT32, options
    )
    tally.add(
        got, ort_u8s8_matmul_integer(a, b), exact_matmul_integer(a, b), f"x64quantprecision {m}x{k}x{n}"
    )


def conv_integer_case(rng, tally: Tally) -> None:
    """One ConvInteger case of uint8 X and int8 W (an initializer), per-tensor zero points: ORT's output
    against the saturating and the exact sums of the convolution's GEMM, wrapped to int32."""
    rank, n, c, m, group, kernel = conv_shapes(rng, "gemm")
    geometry = conv_geometry(rng, rank, kernel, group)
    spatial = (
        d * (k - 1) + 1 + int(rng.integers(0, 5)) for d, k in zip(geometry.dilations, kernel, strict=True)
    )
    x, w = u8(rng, (n, c, *spatial)), s8(rng, (m, c // group, *kernel))
    xq, wq = QuantParams(1.0, np.array(rng.integers(0, 256), np.uint8)), QuantParams(1.0, s8(rng, ()))
    attrs = dict(
        group=group,
        strides=list(geometry.strides),
        pads=list(geometry.pads),
        dilations=list(geometry.dilations),
    )
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
    got = run(node, {"x": x}, {"w": w, "xz": xq.zero_point, "wz": wq.zero_point}, TensorProto.INT32)

    def sums(saturating: bool) -> np.ndarray:
        acc, out = conv_sums(x, xq, w, wq, geometry, saturating)
        wrapped = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
        return np.moveaxis(wrapped.reshape(n, *out, m), -1, 1)

    tally.add(got, sums(True), sums(False), f"ConvInteger X{x.shape} W{w.shape} {geometry}")


def families(cases: int) -> list[tuple[str, Callable, int]]:
    """(name, case function taking rng and tally, number of cases) of every family."""
    return [
        ("MatMulInteger B input", lambda r, t: matmul_case(r, t, False, s8), cases),
        ("MatMulInteger B initializer", lambda r, t: matmul_case(r, t, True, s8), cases),
        (
            "MatMulInteger large K",
            lambda r, t: matmul_case(r, t, bool(r.integers(0, 2)), s8, True),
            cases // 4,
        ),
        ("MatMulInteger uint8 B", lambda r, t: matmul_case(r, t, False, u8), cases // 4),
        (
            "MatMulInteger 7-bit B",
            lambda r, t: matmul_case(r, t, True, lambda g, s: s8(g, s, -64, 64)),
            cases // 4,
        ),
        ("QLinearMatMul", qlinear_matmul_case, cases),
        ("QLinearConv GEMM path", lambda r, t: qlinear_conv_case(r, t, "gemm"), cases),
        ("QLinearConv ConvSym path", lambda r, t: qlinear_conv_case(r, t, "sym"), cases // 2),
        ("QLinearConv depthwise", lambda r, t: qlinear_conv_case(r, t, "depthwise"), cases // 4),
        ("DynamicQuantizeLinear+MatMulInteger", dynamic_quantize_case, cases // 4),
        ("x64quantprecision, const B", precision_option_case, cases // 4),
        ("ConvInteger int8 W", conv_integer_case, cases // 2),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100, help="cases per family (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}")
    example()
    odd = []
    for name, case, count in families(args.cases):
        tally = Tally(name)
        for _ in range(count):
            case(rng, tally)
        print(tally.line())
        odd += tally.odd
    for what in odd[:20]:
        print(f"neither model nor exact: {what}")
    return 1 if odd else 0


if __name__ == "__main__":
    sys.exit(main())
