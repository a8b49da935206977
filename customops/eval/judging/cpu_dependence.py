"""Whether a quantized integer node's result depends on the x86 CPU that runs it, on the values its inputs
have: ONNX Runtime's uint8 x int8 GEMM sums pairs of adjacent products in int16 with saturation on CPUs
with AVX2 (or AVX-512 BW) and no VNNI, and exactly on CPUs with AVX-512 VNNI, AVX-VNNI or AMX
(Q-U8S8-PAIR-SATURATION; customops.eval.judging.ort_gemm models both paths). :func:`cpu_dependence`
computes, whatever CPU this runs on, how many of the node's outputs the saturating path gives otherwise
than the exact one, and by how much: int32 units for MatMulInteger, quantization levels of Y for
QLinearMatMul and QLinearConv.

Which nodes take the saturating kernel (read from ORT's sources, checked under qemu Haswell):
MatMulInteger, QLinearMatMul and QLinearConv of uint8 A (X) and int8 B (W). Not uint8 weights (the
u8 x u8 kernel widens before it multiplies), not int8 x int8, not a depthwise QLinearConv (its kernel
widens first), and not ConvInteger: ORT passes its int8 weights as the GEMM's signed A against X's
im2col as unsigned B, MLAS's s8 x u8 GEMM, exact on every x86 CPU. 7-bit weights (onnxruntime's
quantization tool's ``reduce_range=True``) run the kernel but never leave int16: 255 x 64 x 2 = 32640.

The cost is bounded before anything is computed, from the shapes: a node of more than
:data:`NODE_LIMIT` multiply-adds, or whose GEMM's A (a convolution's im2col matrix), B or output would
hold more than :data:`ELEMENT_LIMIT` elements, is not checked, nor is one past what is left of a
:class:`MacBudget` (:data:`BUDGET` per comparison); the result says so and by how much.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from customops.eval.judging import ort_gemm
from customops.eval.judging.facts import QLINEAR_MATMUL

__all__ = ["BUDGET", "ELEMENT_LIMIT", "NODE_LIMIT", "OPS", "CpuDependence", "MacBudget", "cpu_dependence"]

OPS = ("MatMulInteger", "QLinearMatMul", "QLinearConv", "ConvInteger")
"""The ops whose integer GEMM is checked (ConvInteger: always ``not-affected``)."""

NODE_LIMIT = 1 << 28
"""Most multiply-adds of one node's GEMM that are checked (about half a second of the numpy model where
every pair of products can leave int16, on a 2-core VM; no time where none can)."""

ELEMENT_LIMIT = 1 << 23
"""Most elements of the GEMM's A (broadcast; a convolution's im2col matrix), B and output that the check
builds: it holds a few int64 and float64 copies of each (64 MiB a copy at most)."""

BUDGET = 1 << 30
"""Multiply-adds checked per comparison, over all its nodes: the nodes past it are not checked."""

CHECKED = "checked"
NOT_AFFECTED = "not-affected"
TOO_LARGE = "too-large"
UNKNOWN = "unknown"

NO_VNNI = "x86 CPUs without VNNI (AVX2)"
"""How the words name the CPUs whose kernel saturates."""


@dataclass
class MacBudget:
    """The multiply-adds a comparison may still spend on the check (:data:`BUDGET` at first)."""

    left: int = BUDGET


@dataclass(frozen=True)
class CpuDependence:
    """What the saturating u8 x s8 kernel does to one node's output on its inputs. ``status``:
    ``checked`` (the kernel runs this node: ``changed`` of its ``outputs`` differ from the exact path's,
    by up to ``max_change`` in ``unit``, ``int32`` or ``level``; ``clamped_pairs`` pairs of products
    leave int16), ``not-affected`` (no x86 CPU runs a saturating kernel for it: ``reason``),
    ``too-large`` (not checked: ``macs`` multiply-adds beyond ``limit``, or an operand or output of
    more elements than ``limit``; ``reason`` in words) or
    ``unknown`` (not checked: ``reason``)."""

    status: str
    reason: str = ""
    outputs: int = 0
    changed: int = 0
    max_change: int = 0
    unit: str = ""
    clamped_pairs: int = 0
    macs: int = 0
    limit: int = 0

    @property
    def differs(self) -> bool:
        """Whether a CPU without VNNI gives other numbers for this node on these inputs."""
        return self.status == CHECKED and self.changed > 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, found: dict[str, Any]) -> CpuDependence:
        """The result of :meth:`to_json` (the report's ``cpu_dependence``) read back."""
        return cls(**{f.name: found[f.name] for f in fields(cls) if f.name in found})

    def text(self) -> str:
        """The result in words, for the text report and the HTML page."""
        if self.status == NOT_AFFECTED:
            return f"the same on every x86 CPU: {self.reason}"
        if self.status == TOO_LARGE:
            return f"not checked for {NO_VNNI}: too large ({self.reason})"
        if self.status == UNKNOWN:
            return f"not checked for {NO_VNNI}: {self.reason}"
        pairs = f"{self.clamped_pairs:,} pair(s) of products leave int16"
        if not self.changed:
            if not self.clamped_pairs:
                return f"the same on {NO_VNNI}: no pair of products leaves int16"
            return f"the same on {NO_VNNI}: {pairs}, without changing an output"
        unit = " level(s)" if self.unit == "level" else ""
        return (
            f"other numbers on {NO_VNNI}: {self.changed:,} of {self.outputs:,} output(s) differ, by up to "
            f"{self.max_change:,}{unit} ({pairs}; Q-U8S8-PAIR-SATURATION)"
        )


def cpu_dependence(
    op: str, inputs: dict[str, Any], attrs: dict[str, Any], budget: MacBudget
) -> CpuDependence | None:
    """What the saturating kernel does to ``op``'s output (:class:`CpuDependence`; None for an op not in
    :data:`OPS`), from its ``inputs`` by the registry's names (an optional input left out: absent) and its
    ``attrs``. Spends ``budget`` by the multiply-adds checked."""
    check = CHECKS.get(op)
    if check is None:
        return None
    try:
        return check(inputs, attrs, budget)
    except (ValueError, TypeError, IndexError, MemoryError) as error:
        return CpuDependence(UNKNOWN, reason=f"its inputs do not fit ORT's kernel ({error})")


def _types(first: Any, second: Any, names: tuple[str, str]) -> CpuDependence | None:
    """``not-affected`` unless the two GEMM operands are uint8 x int8; ``unknown`` when one is missing."""
    if first is None or second is None:
        return CpuDependence(UNKNOWN, reason=f"no value for {names[0] if first is None else names[1]}")
    a, b = np.asarray(first).dtype, np.asarray(second).dtype
    if a == np.uint8 and b == np.int8:
        return None
    kernel = "the uint8 x uint8 kernel widens before it multiplies" if b == np.uint8 else "an exact kernel"
    return CpuDependence(NOT_AFFECTED, reason=f"{names[0]} {a} x {names[1]} {b} runs {kernel}")


def _afford(sizes: tuple[int, int, int, int], budget: MacBudget) -> CpuDependence | None:
    """``too-large`` when one of the GEMM's A, B and output (``sizes``' first three, elements) exceeds
    :data:`ELEMENT_LIMIT`, or its multiply-adds (the fourth) :data:`NODE_LIMIT` or what is left of
    ``budget``; else None, ``budget`` spent."""
    *elements, macs = sizes
    for what, count in zip(("A", "B", "output"), elements, strict=True):
        if count > ELEMENT_LIMIT:
            reason = f"the GEMM's {what} of {count:,} elements, limit {ELEMENT_LIMIT:,}"
            return CpuDependence(TOO_LARGE, reason=reason, macs=macs, limit=ELEMENT_LIMIT)
    if macs > NODE_LIMIT:
        reason = f"{macs:,} MACs, limit {NODE_LIMIT:,} per node"
        return CpuDependence(TOO_LARGE, reason=reason, macs=macs, limit=NODE_LIMIT)
    if macs > budget.left:
        reason = f"{macs:,} MACs, {budget.left:,} left of the comparison's {BUDGET:,}"
        return CpuDependence(TOO_LARGE, reason=reason, macs=macs, limit=budget.left)
    budget.left -= macs
    return None


def _counted(paths: ort_gemm.Paths, unit: str, macs: int) -> CpuDependence:
    """The ``checked`` result of both paths' outputs."""
    change = np.abs(paths.saturating.astype(np.int64) - paths.exact.astype(np.int64))
    return CpuDependence(
        CHECKED,
        outputs=int(change.size),
        changed=int(np.count_nonzero(change)),
        max_change=int(change.max()) if change.size else 0,
        unit=unit,
        clamped_pairs=paths.clamped_pairs,
        macs=macs,
    )


def _matmul_sizes(a: Any, b: Any, b_zero_point: Any) -> tuple[int, int, int, int]:
    """Elements of MatMulInteger's A and B broadcast to one batch, of its output, and its multiply-adds,
    from the shapes alone (numpy's matmul rules; B's zero point may add batch axes). Raises ValueError on
    shapes that do not fit."""
    a_shape, b_shape = np.shape(a), np.shape(b)
    if not a_shape or not b_shape:
        raise ValueError("MatMulInteger's inputs have at least one axis")
    a_shape = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b_shape = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(f"A's last axis ({a_shape[-1]}) is not B's K ({b_shape[-2]})")
    zero = np.shape(b_zero_point) if b_zero_point is not None else ()
    batch = math.prod(np.broadcast_shapes(a_shape[:-2], b_shape[:-2], zero[:-2]))
    (m, k), n = a_shape[-2:], b_shape[-1]
    return batch * m * k, batch * k * n, batch * m * n, batch * m * k * n


def _matmul_integer(inputs: dict[str, Any], attrs: dict[str, Any], budget: MacBudget) -> CpuDependence:
    a, b = inputs.get("A"), inputs.get("B")
    found = _types(a, b, ("A", "B"))
    if found is not None:
        return found
    zeros = (inputs.get("a_zero_point"), inputs.get("b_zero_point"))
    sizes = _matmul_sizes(a, b, zeros[1])
    found = _afford(sizes, budget)
    if found is not None:
        return found
    return _counted(ort_gemm.matmul_integer_paths(a, b, *zeros), "int32", sizes[-1])


def _qlinear_matmul(inputs: dict[str, Any], attrs: dict[str, Any], budget: MacBudget) -> CpuDependence:
    values = [inputs.get(name) for name in QLINEAR_MATMUL]
    found = _types(values[0], values[3], ("a", "b"))
    if found is not None:
        return found
    missing = [name for name, value in zip(QLINEAR_MATMUL, values, strict=True) if value is None]
    if missing:
        return CpuDependence(UNKNOWN, reason=f"no value for {', '.join(missing)}")
    sizes = _matmul_sizes(values[0], values[3], values[5])
    found = _afford(sizes, budget)
    if found is not None:
        return found
    return _counted(ort_gemm.qlinear_matmul_paths(*values), "level", sizes[-1])


def _qlinear_conv(inputs: dict[str, Any], attrs: dict[str, Any], budget: MacBudget) -> CpuDependence:
    x, w = inputs.get("x"), inputs.get("w")
    found = _types(x, w, ("x", "w"))
    if found is not None:
        return found
    names = [f"{n}_{q}" for n in "xwy" for q in ("scale", "zero_point")]
    missing = [name for name in names if inputs.get(name) is None]
    if missing or x.ndim < 3 or w.ndim != x.ndim:
        return CpuDependence(
            UNKNOWN, reason=f"no value for {', '.join(missing)}" if missing else "its shapes"
        )
    geometry = ort_gemm.ConvGeometry.of_attributes(attrs, tuple(x.shape[2:]), tuple(w.shape[2:]))
    if w.shape[1] == 1 and w.shape[0] == geometry.group:
        return CpuDependence(NOT_AFFECTED, reason="a depthwise convolution, whose kernel widens first")
    sizes = _conv_sizes(x.shape, w.shape, geometry)
    found = _afford(sizes, budget)
    if found is not None:
        return found
    quant = [ort_gemm.QuantParams(inputs[f"{n}_scale"], inputs[f"{n}_zero_point"]) for n in "xwy"]
    paths = ort_gemm.qlinear_conv_paths(x, quant[0], w, quant[1], quant[2], inputs.get("B"), geometry)
    return _counted(paths, "level", sizes[-1])


def _conv_sizes(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], geometry: ort_gemm.ConvGeometry
) -> tuple[int, int, int, int]:
    """A convolution's GEMM as :func:`_matmul_sizes` counts it: the im2col matrix (or X padded, if that is
    larger) as A, W as B, the output, the multiply-adds. Raises ValueError where the kernel does not fit."""
    out = ort_gemm.conv_output_shape(tuple(x_shape[2:]), tuple(w_shape[2:]), geometry)
    if min(out, default=1) <= 0:
        raise ValueError(f"the kernel does not fit the padded input (output shape {out})")
    rank = len(out)
    padded = [n + geometry.pads[i] + geometry.pads[rank + i] for i, n in enumerate(x_shape[2:])]
    n, c, m = x_shape[0], x_shape[1], w_shape[0]
    pixels, taps = math.prod(out), math.prod(w_shape[2:])
    a = max(n * pixels * c * taps, n * c * math.prod(padded))
    return a, math.prod(w_shape), n * pixels * m, n * pixels * math.prod(w_shape)


def _conv_integer(inputs: dict[str, Any], attrs: dict[str, Any], budget: MacBudget) -> CpuDependence:
    found = _types(inputs.get("x"), inputs.get("w"), ("x", "w"))
    if found is not None:
        return found
    return CpuDependence(
        NOT_AFFECTED,
        reason="ORT multiplies its int8 weights by X with MLAS's int8 x uint8 GEMM, exact on x86",
    )


CHECKS = {
    "MatMulInteger": _matmul_integer,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearConv": _qlinear_conv,
    "ConvInteger": _conv_integer,
}
"""The check of each op of :data:`OPS`, by op type."""
