"""ONNX MatMulInteger (version 10): ``(A - a_zero_point) @ (B - b_zero_point)`` as numpy.matmul, in int32.

The products and their sums are exact (:func:`customops.kernels.quantized.arithmetic.exact_matmul`). The
spec's output is int32 and it says "the accumulation may overflow if and only if in 32 bits": an int32
accumulator wraps around in two's complement, and modular sums do not depend on their order, so a sum
beyond int32 is returned as the exact sum modulo 2**32 (what every int32 accumulator gives), not refused.

The zero points (and QLinearMatMul's scales, which share these rules) are one value (a scalar or a
1-element 1-D tensor), or per row of A (``[M]``, or ``[D1, ..., M, 1]`` for A of shape
``[D1, ..., M, K]``) and per column of B (``[N]``, or ``[D1, ..., 1, N]`` for B ``[D1, ..., K, N]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import is_absent
from customops.kernels.quantized.arithmetic import element_of, exact_matmul, shifted, single, version_of
from customops.kernels.quantized.binding import binder

__all__ = ["Operands", "bind", "matmul_integer", "operands", "per_column", "per_row"]

EIGHT_BITS = ("int8", "uint8")


def matmul_integer(
    A: np.ndarray,
    B: np.ndarray,
    a_zero_point: np.ndarray | None = None,
    b_zero_point: np.ndarray | None = None,
    *,
    version: int = 10,
) -> np.ndarray:
    """``(A - a_zero_point) @ (B - b_zero_point)`` of int8 or uint8 tensors (zero points of their
    tensor's type; absent or empty: 0) as numpy.matmul broadcasts it, as a new C-contiguous int32 array:
    the exact sum, modulo 2**32 where it leaves int32. Raises KernelError for every invalid input."""
    version_of("MatMulInteger", version, (10,))
    a, b = np.asarray(A), np.asarray(B)
    a_type = element_of(a, "A", EIGHT_BITS)
    b_type = element_of(b, "B", EIGHT_BITS)
    pair = operands(a, b)
    a_zero = _zero_point(a_zero_point, "a_zero_point", a_type.name)
    b_zero = _zero_point(b_zero_point, "b_zero_point", b_type.name)
    limits.check_output(pair.out_shape, np.int64)
    rows = shifted(pair.a, per_row(a_zero, pair, "a_zero_point"))
    cols = shifted(pair.b, per_column(b_zero, pair, "b_zero_point"))
    product = exact_matmul(rows, cols, dtype=np.int32)
    return np.array(pair.result(product), dtype=np.int32, order="C", copy=None)


def _zero_point(value: np.ndarray | None, name: str, type_name: str) -> np.ndarray:
    if value is None or is_absent(value):
        return np.zeros((), dtype=np.int64)
    value = np.asarray(value)
    element_of(value, name, (type_name,))
    return value.astype(np.int64)


@dataclass(frozen=True)
class Operands:
    """The operands of a numpy.matmul as at least 2-D matrices (a 1-D A is a row [1, K], a 1-D B a
    column [K, 1]; :meth:`result` removes those axes again)."""

    a: np.ndarray
    b: np.ndarray
    a_vector: bool
    b_vector: bool
    out_shape: tuple[int, ...]

    def result(self, product: np.ndarray) -> np.ndarray:
        """The product of the 2-D forms with the axes of 1-D operands removed."""
        if self.b_vector:
            product = product[..., 0]
        if self.a_vector:
            product = product[..., 0, :] if not self.b_vector else product[..., 0]
        return product


def operands(a: np.ndarray, b: np.ndarray) -> Operands:
    """A and B of a numpy.matmul, checked: at least 1-D each, the same K, batch axes that broadcast."""
    if a.ndim == 0 or b.ndim == 0:
        raise KernelError(f"A and B must be at least 1-D, got shapes {a.shape!r} and {b.shape!r}")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise KernelError(
            f"A {a.shape!r} and B {b.shape!r}: A's last axis ({a2.shape[-1]}) must equal B's "
            f"{'only' if b.ndim == 1 else 'second to last'} axis ({b2.shape[-2]})"
        )
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise KernelError(f"the batch axes of A {a.shape!r} and B {b.shape!r} do not broadcast") from None
    full = (*batch, a2.shape[-2], b2.shape[-1])
    out = full[:-2] + full[-2:-1] * (a.ndim > 1) + full[-1:] * (b.ndim > 1)
    return Operands(a2, b2, a.ndim == 1, b.ndim == 1, tuple(out))


def per_row(value: np.ndarray, pair: Operands, name: str) -> np.ndarray:
    """A zero point or scale of A (one value, [M], or A's shape with K replaced by 1) broadcasting
    against the 2-D form of A."""
    if single(value.shape):
        return value.reshape(())
    a = pair.a
    if not pair.a_vector and value.shape == (a.shape[-2],):
        return value.reshape(-1, 1)
    if not pair.a_vector and value.shape == (*a.shape[:-1], 1):
        return value
    raise KernelError(
        f"{name} has shape {value.shape!r}; for A of shape {a.shape if not pair.a_vector else a.shape[1:]!r} "
        "it must be a scalar"
        + ("" if pair.a_vector else f", [M] = {[a.shape[-2]]} or {[*a.shape[:-1], 1]} (per row)")
    )


def per_column(value: np.ndarray, pair: Operands, name: str) -> np.ndarray:
    """A zero point or scale of B (one value, [N], or B's shape with K replaced by 1) broadcasting
    against the 2-D form of B."""
    if single(value.shape):
        return value.reshape(())
    b = pair.b
    if not pair.b_vector and value.shape == (b.shape[-1],):
        return value
    if not pair.b_vector and value.shape == (*b.shape[:-2], 1, b.shape[-1]):
        return value
    raise KernelError(
        f"{name} has shape {value.shape!r}; for B of shape {b.shape if not pair.b_vector else b.shape[:1]!r} "
        "it must be a scalar"
        + (
            ""
            if pair.b_vector
            else f", [N] = {[b.shape[-1]]} or {[*b.shape[:-2], 1, b.shape[-1]]} (per column)"
        )
    )


bind = binder(matmul_integer)
"""The kernel as ONNX Runtime's hook calls it (customops.kernels.quantized.binding)."""
