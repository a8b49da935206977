"""ONNX Runtime's uint8 x int8 integer GEMM on x86 CPUs without VNNI, as numpy: what MLAS's AVX2 (and
AVX-512 Core) u8 x s8 kernels compute, next to the exact result, and whether a built-in result is
explained by the difference (the deviation Q-U8S8-PAIR-SATURATION). tools/ort_u8s8_path.py checks the
model against ORT 1.32 run under emulation of an AVX2 CPU without VNNI: bit for bit on every case.

How MLAS computes ``(A - a_zp) @ (B - b_zp)`` with A uint8 and B int8 (read from onnxruntime's
``core/mlas/lib``: qgemm.h, qgemm_kernel_avx2.cpp, x86_64/QgemmU8S8KernelAvx2.S, QgemmU8X8KernelAvx2.S,
QgemvU8S8KernelAvx2.S, ConvSymKernelAvx2.S; described here in our words):

- The GEMM runs on the raw bytes: neither zero point is subtracted first. A's rows are packed with K
  padded with zeros to a multiple of 4, B's columns in groups of 4 consecutive K (the pad is zero too),
  so every group holds K positions 4g..4g+3 (K is cut in blocks of 128 or 384, multiples of 4).
- ``VPMADDUBSW`` multiplies the unsigned bytes of A by the signed bytes of B and adds adjacent products,
  K positions (2j, 2j + 1), into a signed 16-bit word **with saturation**; ``VPMADDWD`` by ones widens the
  two words of a group to 32 bits exactly and ``VPADDD`` accumulates (32-bit, wrapping). A pair of
  products can reach 2 * 255 * -128 = -65280 or 2 * 255 * 127 = 64770, so a pair is clamped to
  [-32768, 32767]; nothing else is inexact. The M = 1 kernel (GEMV, taken when both zero points are 0)
  pairs the same positions.
- The zero points come in exactly, in 32 bits: the accumulator starts at ``-b_zp[n] * sum_k A[m, k] -
  a_zp * sum_k B[k, n] + K * a_zp * b_zp[n]`` (the row sums scaled by the per-tensor or per-column zero
  point of B), so the result is ``sat_dot(A, B) - b_zp * rowsum(A) - a_zp * colsum(B) + K a_zp b_zp``
  modulo 2**32: the saturation depends on the raw bytes of A and B, never on the zero points.
- QLinearMatMul, QLinearConv (both its GEMM path and its symmetric-weight "ConvSym" path),
  DynamicQuantizeMatMul, MatMulIntegerToFloat, QGemm and QAttention reach the same kernels; the
  depthwise convolution kernels widen to 32 bits first and are exact. ConvInteger with int8 weights
  multiplies them as the GEMM's signed A against X's im2col as its unsigned B (conv_integer.cc): MLAS's
  s8 x u8 GEMM, which an x86 CPU runs with AVX-VNNI-INT8 or else in portable C, exact either way (ORT 1.32
  under qemu Haswell gives the exact sums where this model of QLinearConv's GEMM saturates).
  The AVX-512 BW kernel of CPUs without VNNI uses the same instruction pair (read, not run: qemu does not
  emulate AVX-512). With AVX-512 VNNI, AVX-VNNI or AMX the four products of a group are added in 32 bits
  (VPDPBUSDS; exact below the int32 range); uint8 B runs the u8 x u8 kernel, which widens to 16 bits
  before multiplying (exact); CPUs without AVX2 run an SSE2 kernel that widens too (exact).
- Requantization (QLinearMatMul, QLinearConv): ``float32(acc + bias) * float32(scale)``, clamped to the
  output range shifted by the zero point, rounded half to even, plus the zero point; the scale is
  ``a_scale * b_scale[n] / y_scale`` in float32.

QLinearConv's GEMM sees its input in channels-last im2col order: K = (kernel position, input channel of
the group), kernel positions in row-major order of the kernel's spatial axes, padding filled with X's
zero point (whose raw bytes enter the pairs too). With an odd number of channels a pair straddles two
kernel positions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

INT16_MIN = -32768
INT16_MAX = 32767
PAIR_CHUNK_ELEMENTS = 1 << 22
"""Pair sums held at once while the saturating dot product is summed (bounds the model's memory)."""


@dataclass(frozen=True)
class GemmOperands:
    """MatMulInteger's operands as MLAS sees them: A [..., M, K] and B [..., K, N] as int64 raw values
    broadcast to one batch shape, A's zero point, B's zero point as an int64 array broadcastable to the
    output ([..., 1, N]), and the output axes numpy's matmul drops for a 1-D A or B."""

    a: np.ndarray
    b: np.ndarray
    a_zero_point: int
    b_zero_point: np.ndarray
    drop_axes: tuple[int, ...]

    @property
    def k(self) -> int:
        return int(self.a.shape[-1])


@dataclass(frozen=True)
class SaturationExplanation:
    """Whether a built-in MatMulInteger result is ORT's saturating u8 x s8 kernel's (``explained``), and
    why not when it is not (``reason``, in the manner of onnxscript's ``MatchResult.fail``). The counts
    describe the model: pairs of products it clamps, outputs where it differs from the exact result, and
    the largest such difference."""

    explained: bool
    reason: str = ""
    saturated_pairs: int = 0
    differing_outputs: int = 0
    max_abs_error: int = 0

    def __bool__(self) -> bool:
        return self.explained

    @classmethod
    def fail(cls, reason: str, saturated_pairs: int = 0) -> SaturationExplanation:
        return cls(False, reason, saturated_pairs)


def _wrap_int32(values: np.ndarray) -> np.ndarray:
    """int64 values modulo 2**32 as int32 (what 32-bit accumulation gives)."""
    return ((values.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _scalar_zero_point(zero_point: object, name: str) -> int:
    """A per-tensor zero point (None: 0): a scalar or a 1-element 1-D tensor, as ORT accepts it."""
    if zero_point is None:
        return 0
    value = np.asarray(zero_point)
    if value.ndim > 1 or value.size != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D tensor of one element, not shape {value.shape}")
    return int(value.reshape(-1)[0])


def per_column(value: object, b_shape: tuple[int, ...], name: str) -> np.ndarray:
    """A quantization parameter of B as ORT accepts it (scalar or one element; [N] for a 2-D B; B's shape
    with 1 as its second to last axis), as an array broadcastable to the output [..., 1, N]."""
    array = np.asarray(value)
    if array.ndim == 0 or (array.ndim == 1 and array.size == 1):
        return array.reshape(1, 1)
    if array.ndim == 1 and len(b_shape) == 2 and array.shape[0] == b_shape[1]:
        return array.reshape(1, -1)
    expected = (*b_shape[:-2], 1, b_shape[-1]) if len(b_shape) >= 2 else None
    if array.shape != expected:
        raise ValueError(
            f"{name} of shape {array.shape} does not fit B of shape {b_shape}: a scalar, "
            "[N] for a 2-D B, or B's shape with 1 as its second to last axis"
        )
    return array


def matmul_operands(
    a: np.ndarray, b: np.ndarray, a_zero_point: object = None, b_zero_point: object = None
) -> GemmOperands:
    """MatMulInteger's inputs checked and laid out as MLAS multiplies them (numpy matmul's broadcasting of
    the leading axes; a 1-D A or B as numpy promotes it). Raises ValueError on shapes that do not fit."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("MatMulInteger's inputs have at least one axis")
    drop = ((-2,) if a.ndim == 1 else ()) + ((-1,) if b.ndim == 1 else ())
    zero = np.zeros((), np.int64) if b_zero_point is None else b_zero_point
    column_zp = per_column(zero, b.shape, "B's zero point").astype(np.int64)
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"A's last axis ({a2.shape[-1]}) is not B's K ({b2.shape[-2]})")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2], column_zp.shape[:-2])
    return GemmOperands(
        np.broadcast_to(a2.astype(np.int64), (*batch, *a2.shape[-2:])),
        np.broadcast_to(b2.astype(np.int64), (*batch, *b2.shape[-2:])),
        _scalar_zero_point(a_zero_point, "A's zero point"),
        column_zp,
        drop,
    )


def _dropped(result: np.ndarray, operands: GemmOperands) -> np.ndarray:
    """The output with the axes a 1-D operand leaves out (numpy's matmul), last first."""
    for axis in sorted(operands.drop_axes):
        result = np.squeeze(result, axis=axis)
    return result


def exact_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of int64 A [..., M, K] and B [..., K, N] exactly, as int64: through float64 (BLAS) where
    K * max|A| * max|B| stays below 2**53, so that every product and partial sum is an exact integer
    whatever the order of the additions (8-bit operands: any K below 2**37); numpy's integer matmul
    beyond."""
    if a.size == 0 or b.size == 0:
        return np.matmul(a, b)
    bound = int(np.abs(a).max()) * int(np.abs(b).max()) * int(a.shape[-1])
    if bound >= 2**53:
        return np.matmul(a, b)
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)


def _risky_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pairs j (positions 2j and 2j + 1 of an even K) whose sum of two products can leave int16 for
    some row of A and column of B: max|A[..., 2j]| max|B[..., 2j, :]| + max|A[..., 2j + 1]| max|B[...,
    2j + 1, :]| beyond 32767 (no other pair can be clamped)."""
    k = a.shape[-1]
    if a.size == 0 or b.size == 0:
        return np.zeros(0, np.int64)
    a_top = np.abs(a.reshape(-1, k)).max(axis=0)
    b_top = np.abs(np.swapaxes(b, -1, -2).reshape(-1, k)).max(axis=0)
    bound = (a_top * b_top).reshape(-1, 2).sum(axis=1)
    return np.flatnonzero(bound > INT16_MAX)


def pair_correction(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray | None, int]:
    """What the saturating kernel adds to the exact ``a @ b`` for int64 A [..., M, K] and B [..., K, N] of
    one batch shape (K padded with a zero when odd): the sum over pairs j of clamp(s, int16) - s, s =
    a[..., m, 2j] b[..., 2j, n] + a[..., m, 2j+1] b[..., 2j+1, n], as int64 [..., M, N], and the number of
    pairs clamped; None (and 0) when no pair can leave int16 (:func:`_risky_pairs`: only those pairs are
    summed). Memory is bounded by :data:`PAIR_CHUNK_ELEMENTS` pair sums at a time."""
    if a.shape[-1] % 2:
        a = np.concatenate([a, np.zeros((*a.shape[:-1], 1), a.dtype)], axis=-1)
        b = np.concatenate([b, np.zeros((*b.shape[:-2], 1, b.shape[-1]), b.dtype)], axis=-2)
    risky = _risky_pairs(a, b)
    if risky.size == 0:
        return None, 0
    *batch, m, k = a.shape
    n = b.shape[-1]
    a_pairs = a.reshape(*batch, m, k // 2, 2)[..., risky, :].astype(np.int32)  # pair sums fit int32
    b_pairs = b.reshape(*batch, k // 2, 2, n)[..., risky, :, :].astype(np.int32)
    correction = np.zeros((*batch, m, n), np.int64)
    clamped = 0
    step = max(1, PAIR_CHUNK_ELEMENTS // max(1, int(np.prod(batch, dtype=np.int64)) * m * n))
    for start in range(0, risky.size, step):
        sums = np.einsum(
            "...mjt,...jtn->...mjn",
            a_pairs[..., start : start + step, :],
            b_pairs[..., start : start + step, :, :],
        )
        cut = np.clip(sums, INT16_MIN, INT16_MAX) - sums
        clamped += int(np.count_nonzero(cut))
        correction += cut.sum(axis=-2, dtype=np.int64)
    return correction, clamped


def saturating_dot(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """sum over j of clamp(a[..., m, 2j] b[..., 2j, n] + a[..., m, 2j+1] b[..., 2j+1, n], int16) for int64
    A [..., M, K] and B [..., K, N] of one batch shape (K padded with a zero when odd), as int64, and the
    number of pairs clamped: the exact product (:func:`exact_dot`) plus :func:`pair_correction`."""
    correction, clamped = pair_correction(a, b)
    exact = exact_dot(a, b)
    return (exact if correction is None else exact + correction), clamped


def _with_zero_points(dot: np.ndarray, operands: GemmOperands) -> np.ndarray:
    """MLAS's zero-point terms added to a raw dot product: -b_zp rowsum(A) - a_zp colsum(B) + K a_zp b_zp."""
    a_zp, b_zp = operands.a_zero_point, operands.b_zero_point
    row_sums = operands.a.sum(axis=-1, keepdims=True)
    column_sums = operands.b.sum(axis=-2, keepdims=True)
    return dot - b_zp * row_sums - a_zp * column_sums + operands.k * a_zp * b_zp


def exact_matmul_integer(
    a: np.ndarray, b: np.ndarray, a_zero_point: object = None, b_zero_point: object = None
) -> np.ndarray:
    """MatMulInteger as the spec defines it, ``(A - a_zp) @ (B - b_zp)``, exactly, as int64 (any element
    types; zero points as ORT accepts them)."""
    operands = matmul_operands(a, b, a_zero_point, b_zero_point)
    return _dropped(_with_zero_points(np.matmul(operands.a, operands.b), operands), operands)


def ort_u8s8_matmul_integer(
    a: np.ndarray, b: np.ndarray, a_zero_point: object = None, b_zero_point: object = None
) -> np.ndarray:
    """MatMulInteger of uint8 A and int8 B as ORT computes it on an x86 CPU with AVX2 (or AVX-512 BW) and
    no VNNI: adjacent products summed with int16 saturation, the rest exact, 32-bit wrapping; int32."""
    operands = matmul_operands(a, b, a_zero_point, b_zero_point)
    dot, _ = saturating_dot(operands.a, operands.b)
    return _dropped(_wrap_int32(_with_zero_points(dot, operands)), operands)


def _first_difference(builtin: np.ndarray, model: np.ndarray, exact: np.ndarray) -> str:
    """Where a built-in result first leaves the model: index and the three values."""
    index = tuple(int(i) for i in np.argwhere(builtin != model)[0])
    return f"first at index {index}: built-in {builtin[index]}, model {model[index]}, exact {exact[index]}"


def explained_by_u8s8_saturation(
    a: np.ndarray,
    b: np.ndarray,
    a_zero_point: object,
    b_zero_point: object,
    builtin: np.ndarray,
) -> SaturationExplanation:
    """Whether ``builtin`` (ORT's MatMulInteger output for these inputs) is what the saturating u8 x s8
    kernel computes while the exact result differs; otherwise why not (the first reason that applies)."""
    a, b, builtin = np.asarray(a), np.asarray(b), np.asarray(builtin)
    if a.dtype != np.uint8 or b.dtype != np.int8:
        return SaturationExplanation.fail(
            f"A is {a.dtype} and B is {b.dtype}: only uint8 A with int8 B runs the saturating kernel"
        )
    try:
        operands = matmul_operands(a, b, a_zero_point, b_zero_point)
    except ValueError as error:
        return SaturationExplanation.fail(f"not a MatMulInteger ORT runs: {error}")
    dot, clamped = saturating_dot(operands.a, operands.b)
    model = _dropped(_wrap_int32(_with_zero_points(dot, operands)), operands)
    if builtin.dtype != np.int32 or builtin.shape != model.shape:
        return SaturationExplanation.fail(
            f"the built-in result is {builtin.dtype} {builtin.shape}, MatMulInteger gives int32 {model.shape}",
            clamped,
        )
    exact = _wrap_int32(_dropped(_with_zero_points(np.matmul(operands.a, operands.b), operands), operands))
    if clamped == 0:
        return SaturationExplanation.fail(
            "no pair of adjacent products leaves int16: the kernel is exact here"
        )
    differing = model != exact
    if not differing.any():
        return SaturationExplanation.fail(
            "the clamped pairs cancel out: the model equals the exact result", clamped
        )
    if not (builtin != exact).any():
        return SaturationExplanation.fail(
            "the built-in result is exact: this CPU's kernel does not saturate (VNNI, AMX or not x86)",
            clamped,
        )
    if (builtin != model).any():
        count = int(np.count_nonzero(builtin != model))
        return SaturationExplanation.fail(
            f"{count} of {model.size} outputs differ from the saturating model too, "
            + _first_difference(builtin, model, exact),
            clamped,
        )
    error = int(np.abs(model.astype(np.int64) - exact.astype(np.int64)).max())
    return SaturationExplanation(True, "", clamped, int(np.count_nonzero(differing)), error)


def output_scales(a_scale: object, b_scale: np.ndarray, y_scale: object) -> np.ndarray:
    """The requantization scale ORT computes once per column of B: ``a_scale * b_scale / y_scale`` in
    float32, left to right."""
    a = np.float32(np.asarray(a_scale, np.float32).reshape(-1)[0])
    y = np.float32(np.asarray(y_scale, np.float32).reshape(-1)[0])
    return (a * np.asarray(b_scale, np.float32)) / y


def requantize(
    acc: np.ndarray,
    scale: np.ndarray,
    zero_point: int,
    dtype: type[np.integer] = np.uint8,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """MLAS's requantization of int32 accumulators (MlasRequantizeOutput, the ConvSym kernels' epilogue):
    ``float32(acc + bias) * scale``, clamped to [min - zp, max - zp] of ``dtype`` (a NaN becomes the
    lower end, as MAXPS does), rounded half to even, plus the zero point."""
    total = acc.astype(np.int64) if bias is None else acc.astype(np.int64) + np.asarray(bias, np.int64)
    value = _wrap_int32(total).astype(np.float32) * np.asarray(scale, np.float32)
    info = np.iinfo(dtype)
    low, high = np.float32(info.min - zero_point), np.float32(info.max - zero_point)
    value = np.where(value > low, value, low)
    value = np.where(value < high, value, high)
    return (np.rint(value).astype(np.int32) + zero_point).astype(dtype)


def _accumulators(operands: GemmOperands, saturating: bool) -> np.ndarray:
    """The int32 GEMM result before any axis is dropped: the saturating kernel's or the exact one."""
    if saturating:
        dot, _ = saturating_dot(operands.a, operands.b)
    else:
        dot = exact_dot(operands.a, operands.b)
    return _wrap_int32(_with_zero_points(dot, operands))


@dataclass(frozen=True)
class Paths:
    """A node's output on both of ORT's x86 paths for uint8 x int8: ``saturating``, the kernel of CPUs with
    AVX2 (or AVX-512 BW) and no VNNI, and ``exact``, the kernel of CPUs with AVX-512 VNNI, AVX-VNNI or AMX
    (one shape and element type), and the pairs of products the saturating kernel clamps."""

    saturating: np.ndarray
    exact: np.ndarray
    clamped_pairs: int


def _both_sums(operands: GemmOperands) -> tuple[np.ndarray, np.ndarray, int]:
    """The GEMM's sums with the zero points applied, int64, not wrapped, on the saturating path and the
    exact one, and the pairs clamped (the exact product computed once)."""
    exact = exact_dot(operands.a, operands.b)
    correction, clamped = pair_correction(operands.a, operands.b)
    saturated = exact if correction is None else exact + correction
    return _with_zero_points(saturated, operands), _with_zero_points(exact, operands), clamped


def matmul_integer_paths(
    a: np.ndarray, b: np.ndarray, a_zero_point: object = None, b_zero_point: object = None
) -> Paths:
    """MatMulInteger of uint8 A and int8 B on both paths (:class:`Paths`), int32. Raises ValueError on
    shapes or zero points that do not fit."""
    operands = matmul_operands(a, b, a_zero_point, b_zero_point)
    saturated, exact, clamped = _both_sums(operands)
    return Paths(_dropped(_wrap_int32(saturated), operands), _dropped(_wrap_int32(exact), operands), clamped)


def qlinear_matmul_paths(
    a: np.ndarray,
    a_scale: object,
    a_zero_point: object,
    b: np.ndarray,
    b_scale: object,
    b_zero_point: object,
    y_scale: object,
    y_zero_point: object,
) -> Paths:
    """QLinearMatMul of uint8 A and int8 B on both paths (:class:`Paths`), each requantized as
    :func:`qlinear_matmul` does. Raises ValueError on inputs that do not fit."""
    operands = matmul_operands(a, b, a_zero_point, b_zero_point)
    scale = output_scales(a_scale, per_column(b_scale, np.shape(b), "B's scale"), y_scale)
    zero, dtype = _scalar_zero_point(y_zero_point, "Y's zero point"), _output_type(y_zero_point)
    saturated, exact, clamped = _both_sums(operands)
    outputs = [
        _dropped(requantize(_wrap_int32(acc), scale, zero, dtype), operands) for acc in (saturated, exact)
    ]
    return Paths(*outputs, clamped)


def qlinear_matmul(
    a: np.ndarray,
    a_scale: object,
    a_zero_point: object,
    b: np.ndarray,
    b_scale: object,
    b_zero_point: object,
    y_scale: object,
    y_zero_point: object,
    *,
    saturating: bool = True,
) -> np.ndarray:
    """QLinearMatMul as ORT computes it: the GEMM (the u8 x s8 kernel's saturating pairs where A is uint8
    and B int8, or exact with ``saturating=False``; the other types' kernels are exact) requantized by
    MLAS's arithmetic into Y's zero point's type (uint8 or int8)."""
    operands = matmul_operands(a, b, a_zero_point, b_zero_point)
    scale = output_scales(a_scale, per_column(b_scale, np.shape(b), "B's scale"), y_scale)
    pairs = saturating and np.asarray(a).dtype == np.uint8 and np.asarray(b).dtype == np.int8
    acc = _accumulators(operands, pairs)
    zero = _scalar_zero_point(y_zero_point, "Y's zero point")
    return _dropped(requantize(acc, scale, zero, _output_type(y_zero_point)), operands)


def _output_type(y_zero_point: object) -> type[np.integer]:
    """The element type of a QLinear output: int8 for an int8 zero point, else uint8 (a Python int too)."""
    return np.int8 if np.asarray(y_zero_point).dtype == np.int8 else np.uint8


IM2COL_LIMIT = 1 << 26
"""Largest im2col matrix (elements) :func:`qlinear_conv` builds."""


@dataclass(frozen=True)
class ConvGeometry:
    """A convolution's attributes as ORT reads them (explicit pads only: begins then ends)."""

    group: int
    strides: tuple[int, ...]
    pads: tuple[int, ...]
    dilations: tuple[int, ...]

    @classmethod
    def of(cls, rank: int, group=1, strides=None, pads=None, dilations=None) -> ConvGeometry:
        return cls(
            int(group),
            tuple(strides or (1,) * rank),
            tuple(pads or (0,) * (2 * rank)),
            tuple(dilations or (1,) * rank),
        )

    @classmethod
    def of_attributes(cls, attrs: dict, spatial: tuple[int, ...], kernel: tuple[int, ...]) -> ConvGeometry:
        """A QLinearConv's or ConvInteger's attributes as ONNX defines them (``auto_pad`` SAME_UPPER or
        SAME_LOWER: the pads that keep ceil(length / stride); VALID: none) for an input of ``spatial``
        axes and a kernel of ``kernel`` taps."""
        rank = len(kernel)
        strides = tuple(attrs.get("strides") or (1,) * rank)
        dilations = tuple(attrs.get("dilations") or (1,) * rank)
        pad = str(attrs.get("auto_pad") or "NOTSET")
        pads = tuple(attrs.get("pads") or (0,) * (2 * rank)) if pad == "NOTSET" else (0,) * (2 * rank)
        if pad in ("SAME_UPPER", "SAME_LOWER"):
            total = [
                max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
                for n, s, k, d in zip(spatial, strides, kernel, dilations, strict=True)
            ]
            begins = [t // 2 if pad == "SAME_UPPER" else t - t // 2 for t in total]
            pads = (*begins, *(t - b for t, b in zip(total, begins, strict=True)))
        return cls(int(attrs.get("group") or 1), strides, pads, dilations)


def im2col_channels_last(
    x: np.ndarray, kernel_shape: tuple[int, ...], geometry: ConvGeometry, pad_value: int
) -> tuple[np.ndarray, tuple[int, ...]]:
    """X [N, C, *spatial] as the rows QLinearConv's GEMM multiplies: [N, group, output pixels, K] with
    K = (kernel position, channel of the group), kernel positions in row-major order, padding filled with
    ``pad_value`` (X's zero point); and the output's spatial shape."""
    rank = len(kernel_shape)
    begins, ends = geometry.pads[:rank], geometry.pads[rank:]
    padded = np.pad(x, [(0, 0), (0, 0), *zip(begins, ends, strict=True)], constant_values=pad_value)
    out = conv_output_shape(tuple(x.shape[2:]), kernel_shape, geometry)
    n, c = x.shape[:2]
    if min(out, default=1) <= 0:
        raise ValueError(f"the kernel does not fit the padded input (output shape {out})")
    if n * c * int(np.prod(kernel_shape)) * int(np.prod(out)) > IM2COL_LIMIT:
        raise ValueError(f"the im2col matrix would exceed {IM2COL_LIMIT} elements")
    taps = []
    for position in itertools.product(*(range(k) for k in kernel_shape)):
        window = tuple(
            slice(p * d, p * d + s * (o - 1) + 1, s)
            for p, d, s, o in zip(position, geometry.dilations, geometry.strides, out, strict=True)
        )
        taps.append(padded[(slice(None), slice(None), *window)].reshape(n, c, -1))
    cols = np.stack(taps, axis=2)  # [N, C, kernel positions, pixels]
    g = geometry.group
    cols = cols.reshape(n, g, c // g, len(taps), -1).transpose(0, 1, 4, 3, 2)
    return cols.reshape(n, g, cols.shape[2], -1), out


def conv_output_shape(
    spatial: tuple[int, ...], kernel_shape: tuple[int, ...], geometry: ConvGeometry
) -> tuple[int, ...]:
    """The output's spatial shape of a convolution of an input of ``spatial`` axes (no check that it is
    positive)."""
    rank = len(kernel_shape)
    return tuple(
        (
            spatial[i]
            + geometry.pads[i]
            + geometry.pads[rank + i]
            - geometry.dilations[i] * (kernel_shape[i] - 1)
            - 1
        )
        // geometry.strides[i]
        + 1
        for i in range(rank)
    )


def conv_weights_as_b(w: np.ndarray, group: int) -> np.ndarray:
    """W [M, C/group, *kernel] as the GEMM's B per group: [group, K, M/group], K ordered as the im2col's."""
    m, cg = w.shape[:2]
    taps = int(np.prod(w.shape[2:]))
    return w.reshape(group, m // group, cg, taps).transpose(0, 3, 2, 1).reshape(group, taps * cg, m // group)


@dataclass(frozen=True)
class QuantParams:
    """A tensor's scale and zero point as an ONNX node receives them."""

    scale: object
    zero_point: object


def qlinear_conv(
    x: np.ndarray,
    x_q: QuantParams,
    w: np.ndarray,
    w_q: QuantParams,
    y_q: QuantParams,
    bias: np.ndarray | None = None,
    geometry: ConvGeometry | None = None,
    *,
    saturating: bool = True,
) -> np.ndarray:
    """QLinearConv of X [N, C, *spatial] and W [M, C/group, *kernel] as ORT computes it: per group the
    GEMM of :func:`im2col_channels_last`'s rows (:func:`conv_sums`: the u8 x s8 kernel's saturating pairs
    where X is uint8 and W int8, or exact with ``saturating=False``; a depthwise convolution and the
    other types' kernels are always exact), requantized per output channel into Y's zero point's type.
    W's zero point must be one value for all channels, as ORT requires."""
    geometry = geometry or ConvGeometry.of(w.ndim - 2)
    depthwise = w.shape[1] == 1 and w.shape[0] == geometry.group
    pairs = saturating and not depthwise and x.dtype == np.uint8 and w.dtype == np.int8
    acc, out = conv_sums(x, x_q, w, w_q, geometry, pairs)
    scale = output_scales(x_q.scale, np.asarray(w_q.scale, np.float32).reshape(-1), y_q.scale)
    y_zero = _scalar_zero_point(y_q.zero_point, "Y's zero point")
    y = requantize(_wrap_int32(acc), scale, y_zero, _output_type(y_q.zero_point), bias=bias)
    return _conv_layout(y, x.shape[0], out, w.shape[0])


def _conv_layout(y: np.ndarray, n: int, out: tuple[int, ...], m: int) -> np.ndarray:
    """A convolution's output [N, output pixels, M] as [N, M, *out]."""
    return np.moveaxis(y.reshape(n, *out, m), -1, 1)


def qlinear_conv_paths(
    x: np.ndarray,
    x_q: QuantParams,
    w: np.ndarray,
    w_q: QuantParams,
    y_q: QuantParams,
    bias: np.ndarray | None = None,
    geometry: ConvGeometry | None = None,
) -> Paths:
    """QLinearConv of uint8 X and int8 W through the GEMM on both paths (:class:`Paths`), each requantized
    as :func:`qlinear_conv` does (a depthwise convolution runs neither: ORT's depthwise kernels widen first
    and are exact). Raises ValueError on inputs that do not fit."""
    geometry = geometry or ConvGeometry.of(w.ndim - 2)
    operands, out = conv_operands(x, x_q, w, w_q, geometry)
    scale = output_scales(x_q.scale, np.asarray(w_q.scale, np.float32).reshape(-1), y_q.scale)
    zero, dtype = _scalar_zero_point(y_q.zero_point, "Y's zero point"), _output_type(y_q.zero_point)
    saturated, exact, clamped = _both_sums(operands)
    n, m = x.shape[0], w.shape[0]
    outputs = [
        _conv_layout(requantize(_wrap_int32(_conv_rows(acc, n, m)), scale, zero, dtype, bias=bias), n, out, m)
        for acc in (saturated, exact)
    ]
    return Paths(*outputs, clamped)


def conv_sums(
    x: np.ndarray, x_q: QuantParams, w: np.ndarray, w_q: QuantParams, geometry: ConvGeometry, saturating: bool
) -> tuple[np.ndarray, tuple[int, ...]]:
    """A QLinearConv's (or ConvInteger's) integer sums as int64, not wrapped, [N, output pixels, M] (the
    u8 x s8 kernel's saturating pairs with ``saturating``, else exact), and the output's spatial shape.
    W's zero point must be one value for all channels, as ORT requires."""
    operands, out = conv_operands(x, x_q, w, w_q, geometry)
    dot = saturating_dot(operands.a, operands.b)[0] if saturating else exact_dot(operands.a, operands.b)
    return _conv_rows(_with_zero_points(dot, operands), x.shape[0], w.shape[0]), out


def conv_operands(
    x: np.ndarray, x_q: QuantParams, w: np.ndarray, w_q: QuantParams, geometry: ConvGeometry
) -> tuple[GemmOperands, tuple[int, ...]]:
    """A convolution's GEMM as MLAS multiplies it: :func:`im2col_channels_last`'s rows [N, group, output
    pixels, K] as A, the weights per group (:func:`conv_weights_as_b`) as B, the zero points; and the
    output's spatial shape. W's zero point must be one value for all channels, as ORT requires."""
    w_zero = np.unique(np.asarray(w_q.zero_point).reshape(-1))
    if w_zero.size != 1:
        raise ValueError("ORT requires one zero point for all of W's channels")
    x_zero = _scalar_zero_point(x_q.zero_point, "X's zero point")
    cols, out = im2col_channels_last(x, tuple(w.shape[2:]), geometry, x_zero)
    return matmul_operands(cols, conv_weights_as_b(w, geometry.group), x_zero, w_zero[0]), out


def _conv_rows(acc: np.ndarray, n: int, m: int) -> np.ndarray:
    """The GEMM's sums per group [N, group, pixels, M/group] as [N, pixels, M]."""
    return acc.transpose(0, 2, 1, 3).reshape(n, acc.shape[2], m)
