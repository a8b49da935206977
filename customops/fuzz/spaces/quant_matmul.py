"""Case spaces of MatMulInteger (10) and QLinearMatMul (10, 21): numpy.matmul shapes (1-D operands,
batch axes that broadcast, M, K or N of 0), every pair of element types (uint8 A with int8 B, float8 on
21), zero points and scales of one value, per row of A ([M] or [..., M, 1]) and per column of B ([N] or
[..., 1, N]), extreme zero points, operands of their type's extremes (uint8 255 next to int8 -128 along K:
the pairs whose sum saturates in int16 on x86 CPUs without VNNI), scales that are powers of two (the real
value lands on x.5 ties), 0, ±inf and NaN scales, constant or fed weights.

The oracle follows the spec and docs/semantics.md: a NaN real value has no value in an integer output
(``nan-into-integer``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor, output_elems
from customops.fuzz.spaces.base import Candidate, Space, Verdict, draw_dim, generic_features
from customops.fuzz.spaces.quant_values import (
    const_features,
    draw_elem,
    draw_quantized,
    finite_floats,
    given,
    has_no_nan,
    mutate_nan_scale,
    optional_zero_point,
    pair_reason,
    parameter_simplifications,
    scale_features,
    scales_and_zero_points,
    single,
    type_reason,
    types_of,
    zero_point_features,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

_ROWS = {"MatMulInteger": ("A", "a_zero_point"), "QLinearMatMul": ("a", "a_zero_point")}
_COLS = {"MatMulInteger": ("B", "b_zero_point"), "QLinearMatMul": ("b", "b_zero_point")}
_SCALES = ("a_scale", "b_scale", "y_scale")


def draw_shapes(rng: np.random.Generator, limit: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes of A and B: 1-D to 4-D, batch axes that broadcast (1 against any), M, K, N of 0 now and
    then, each operand at most ``limit`` elements (batch axes dropped, then the longest of M, K, N
    halved, until both fit)."""
    dims = [draw_dim(rng, 5, zero=0.05, one=0.2) for _ in range(3)]
    batch = [int(rng.choice([1, 2, 3])) for _ in range(int(rng.choice([0, 0, 1, 2])))]
    ones = [[rng.random() < 0.3 for _ in batch] for _ in range(2)]
    drop = [int(rng.integers(0, len(batch) + 1)) for _ in range(2)]
    vector = [rng.random() < 0.1 for _ in range(2)]
    while True:
        m, k, n = dims
        a_batch = [1 if one else d for d, one in zip(batch, ones[0], strict=True)][drop[0] :]
        b_batch = [1 if one else d for d, one in zip(batch, ones[1], strict=True)][drop[1] :]
        a = (k,) if vector[0] else (*a_batch, m, k)
        b = (k,) if vector[1] else (*b_batch, k, n)
        if max(math.prod(a), math.prod(b)) <= limit:
            return a, b
        if batch:
            batch, ones = batch[1:], [o[1:] for o in ones]
            drop = [max(0, d - 1) for d in drop]
        else:
            i = int(np.argmax(dims))
            dims[i] = max(1, dims[i] // 2)


def row_shapes(rng: np.random.Generator, a: tuple[int, ...]) -> tuple[int, ...]:
    """A scale's or zero point's shape for A: one value ((), [1]) or per row ([M], [..., M, 1])."""
    options: list[tuple[int, ...]] = [(), (), (1,)]
    if len(a) >= 2:
        options += [(a[-2],), (*a[:-1], 1)]
    return options[int(rng.integers(0, len(options)))]


def column_shapes(rng: np.random.Generator, b: tuple[int, ...]) -> tuple[int, ...]:
    """A scale's or zero point's shape for B: one value or per column ([N], [..., 1, N])."""
    options: list[tuple[int, ...]] = [(), (), (1,)]
    if len(b) >= 2:
        options += [(b[-1],), (*b[:-2], 1, b[-1])]
    return options[int(rng.integers(0, len(options)))]


def draw_operands(
    rng: np.random.Generator, a_elem: str, b_elem: str, shapes: tuple[tuple[int, ...], tuple[int, ...]]
) -> tuple[np.ndarray, np.ndarray]:
    """A and B; a uint8 A with an int8 B is sometimes all 255 against -128 and 127 (the int16 sums of
    adjacent products along K saturate on CPUs without VNNI)."""
    a, b = draw_quantized(rng, a_elem, shapes[0]), draw_quantized(rng, b_elem, shapes[1])
    if a_elem == "uint8" and b_elem == "int8" and rng.random() < 0.2:
        a = np.full(shapes[0], 255, dtype=np.uint8)
        b = np.where(rng.random(shapes[1]) < 0.7, -128, 127).astype(np.int8)
    return a, b


# ---------------------------------------------------------------------------------------------
# the rules


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | str:
    """numpy.matmul's output shape, or the rule A and B break."""
    if not a or not b:
        return "operand-rank"
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return "k-mismatch"
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        return "batch-broadcast"
    return (*batch, *a2[-2:-1][: len(a) - 1], *b2[-1:][: len(b) - 1])


def per_row(value: np.ndarray, a: tuple[int, ...]) -> np.ndarray | None:
    """A's scale or zero point as float64 broadcasting against A's 2-D form's rows, or None when its
    shape is none of one value, [M] or [..., M, 1]."""
    f = finite_floats(value)
    if single(value.shape):
        return f.reshape(())
    if len(a) >= 2 and value.shape == (a[-2],):
        return f.reshape(-1, 1)
    return f if len(a) >= 2 and value.shape == (*a[:-1], 1) else None


def per_column(value: np.ndarray, b: tuple[int, ...]) -> np.ndarray | None:
    """B's scale or zero point as float64 broadcasting against B's 2-D form's columns, or None."""
    f = finite_floats(value)
    if single(value.shape):
        return f.reshape(())
    if len(b) >= 2 and value.shape in ((b[-1],), (*b[:-2], 1, b[-1])):
        return f
    return None


def _parameter_reason(case: Case) -> str | None:
    """Zero points (and QLinearMatMul's scales) of A per row and of B per column; y's one value."""
    a_name, a_zero = _ROWS[case.op]
    b_name, b_zero = _COLS[case.op]
    a, b = case.inputs[a_name].value.shape, case.inputs[b_name].value.shape  # type: ignore[union-attr]
    rows = (a_zero, "a_scale") if case.op == "QLinearMatMul" else (a_zero,)
    cols = (b_zero, "b_scale") if case.op == "QLinearMatMul" else (b_zero,)
    for name in rows:
        if given(case, name) is not None and per_row(given(case, name), a) is None:  # type: ignore[arg-type]
            return f"per-row-shape:{name}"
    for name in cols:
        if given(case, name) is not None and per_column(given(case, name), b) is None:  # type: ignore[arg-type]
            return f"per-column-shape:{name}"
    for name in ("y_scale", "y_zero_point"):
        value = given(case, name)
        if case.op == "QLinearMatMul" and value is not None and not single(value.shape):
            return f"not-one-value:{name}"
    return None


def validate_matmul(case: Case) -> Verdict:
    """The rules of both ops: every input required by the op present, types of their variables, the
    matmul shapes, the parameters' shapes; QLinearMatMul: a NaN real value into an integer output."""
    missing = [i.name for i in case.opv.inputs if not i.optional and case.inputs.get(i.name) is None]
    if missing:
        return Verdict(f"input-missing:{missing[0]}")
    reason = type_reason(case, tuple(i.name for i in case.opv.inputs))
    if case.op == "QLinearMatMul":
        for prefix in "aby":
            scale, zero = given(case, f"{prefix}_scale"), given(case, f"{prefix}_zero_point")
            reason = reason or pair_reason(scale, zero, prefix)  # type: ignore[arg-type]
    if reason:
        return Verdict(reason)
    a, b = (case.inputs[n[0]].value for n in (_ROWS[case.op], _COLS[case.op]))  # type: ignore[union-attr]
    shape = matmul_shape(a.shape, b.shape)
    if isinstance(shape, str):
        return Verdict(shape)
    reason = _parameter_reason(case)
    if reason:
        return Verdict(reason)
    if case.op == "QLinearMatMul" and has_no_nan(output_elems(case)[0]) and np.isnan(real_values(case)).any():
        return Verdict("nan-into-integer")
    return Verdict(None, shape)


def real_values(case: Case) -> np.ndarray:
    """QLinearMatMul's real value before the zero point, ``(a - a_zp) @ (b - b_zp) * a_scale * b_scale /
    y_scale``, in float64 on the 2-D forms (a sum that is exactly 0 is 0: integer and float8 differences
    summed exactly), for the NaN rule."""
    a, b = (case.inputs[n].value for n in ("a", "b"))  # type: ignore[union-attr]
    da = finite_floats(a) - per_row(given(case, "a_zero_point"), a.shape)  # type: ignore[arg-type, operator]
    db = finite_floats(b) - per_column(given(case, "b_zero_point"), b.shape)  # type: ignore[arg-type, operator]
    da = da.reshape(1, -1) if a.ndim == 1 else da
    db = db.reshape(-1, 1) if b.ndim == 1 else db
    with np.errstate(all="ignore"):
        real = np.matmul(da, db)
        exact = np.matmul(_exact(da), _exact(db)).astype(np.float64)
        total = np.where(np.isfinite(real), exact, real)
        num = per_row(given(case, "a_scale"), a.shape) * per_column(given(case, "b_scale"), b.shape)  # type: ignore[arg-type, operator]
        return total * num / finite_floats(given(case, "y_scale")).reshape(())  # type: ignore[arg-type]


def _exact(values: np.ndarray) -> np.ndarray:
    """Finite float64 differences of quantized values as exact Python integers (times 2**40: every
    float8 difference is a multiple of 2**-17), 0 where not finite."""
    scaled = np.where(np.isfinite(values), values, 0.0) * 2.0**40
    return np.array([int(v) for v in scaled.ravel().tolist()], dtype=object).reshape(values.shape)


# ---------------------------------------------------------------------------------------------
# the spaces


class _MatMulSpace(Space):
    """What MatMulInteger's and QLinearMatMul's spaces share."""

    exact = True

    def validate(self, case: Case) -> Verdict:
        return validate_matmul(case)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        found = [_mutate_k, _mutate_batch, _mutate_row_shape, _mutate_rank]
        return found + ([mutate_nan_scale] if opv.op == "QLinearMatMul" else [])

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        yield from zero_point_features(case, ("a_zero_point", "b_zero_point", "y_zero_point"))
        yield from scale_features(case, _SCALES)
        yield from const_features(case, (_COLS[case.op][0],))
        b_name = _COLS[case.op][0]
        b = case.inputs[b_name].value  # type: ignore[union-attr]
        if V.special_mask(b, case.inputs[b_name].elem).any():  # type: ignore[union-attr]
            fixed = V.replace_specials(b, case.inputs[b_name].elem)  # type: ignore[union-attr]
            yield f"{b_name}-special-values", case.with_input(b_name, fixed)

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        yield from matmul_cuts(case)
        yield from value_simplifications(case)
        zeros = ("a_zero_point", "b_zero_point", "y_zero_point")
        yield from parameter_simplifications(case, _SCALES if case.op == "QLinearMatMul" else (), zeros)


class MatMulIntegerSpace(_MatMulSpace):
    """MatMulInteger-10."""

    op = "MatMulInteger"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        shapes = draw_shapes(rng, limit)
        b_elem = draw_elem(rng, types_of(opv, "B"))
        a, b = draw_operands(rng, dtype, b_elem, shapes)
        inputs: dict[str, Tensor | None] = {"A": Tensor(a), "B": Tensor(b, bool(rng.random() < 0.5))}
        inputs["a_zero_point"] = optional_zero_point(rng, dtype, lambda: row_shapes(rng, shapes[0]))
        inputs["b_zero_point"] = optional_zero_point(rng, b_elem, lambda: column_shapes(rng, shapes[1]))
        return Case(opv.op, opv.version, dtype, inputs, {})


class QLinearMatMulSpace(_MatMulSpace):
    """QLinearMatMul 10 and 21 (u8 a with s8 output, float8 and float16 scales on 21 included)."""

    op = "QLinearMatMul"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        shapes = draw_shapes(rng, limit)
        b_elem, y_elem = draw_elem(rng, types_of(opv, "b")), draw_elem(rng, types_of(opv, "y_zero_point"))
        scale_elem = draw_elem(rng, types_of(opv, "a_scale"))
        a, b = draw_operands(rng, dtype, b_elem, shapes)
        a_shape, b_shape = row_shapes(rng, shapes[0]), column_shapes(rng, shapes[1])
        y_shape = () if rng.random() < 0.8 else (1,)
        params = {
            "a": (a_shape, dtype),
            "b": (b_shape, b_elem),
            "y": (y_shape, y_elem),
        }
        inputs: dict[str, Tensor | None] = {"a": Tensor(a), "b": Tensor(b, bool(rng.random() < 0.5))}
        inputs.update(scales_and_zero_points(rng, params, scale_elem))
        order = [i.name for i in opv.inputs]
        return Case(opv.op, opv.version, dtype, {n: inputs[n] for n in order}, {})


# ---------------------------------------------------------------------------------------------
# simplifications and mutations


def _with(case: Case, name: str, value: np.ndarray | None) -> Case:
    return case if value is None else case.with_input(name, value)


def matmul_cuts(case: Case) -> Iterator[Candidate]:
    """M, N or K cut to 1 and a leading batch axis dropped, the parameters per row or column cut with
    them (a candidate the rules reject is skipped by the shrinker)."""
    a_name, b_name = _ROWS[case.op][0], _COLS[case.op][0]
    a, b = case.inputs[a_name].value, case.inputs[b_name].value  # type: ignore[union-attr]
    if a.ndim >= 2 and a.shape[-2] > 1:
        out = case.with_input(a_name, a[..., :1, :])
        for name in ("a_zero_point", "a_scale"):
            p = given(case, name)
            if p is not None and not single(p.shape):
                out = _with(out, name, p[..., :1, :] if p.ndim == a.ndim else p[:1])
        yield "M=1", out
    if b.ndim >= 2 and b.shape[-1] > 1:
        out = case.with_input(b_name, b[..., :1])
        for name in ("b_zero_point", "b_scale"):
            p = given(case, name)
            if p is not None and not single(p.shape):
                out = _with(out, name, p[..., :1])
        yield "N=1", out
    if a.shape[-1] > 1:
        cut_b = b[:1] if b.ndim == 1 else b[..., :1, :]
        yield "K=1", case.with_input(a_name, a[..., :1]).with_input(b_name, cut_b)
    if a.ndim > 2:
        yield "A without its first batch axis", case.with_input(a_name, a[0])
    if b.ndim > 2:
        yield "B without its first batch axis", case.with_input(b_name, b[0])


def _mutate_k(rng: np.random.Generator, case: Case) -> Case | None:
    """B with one row more along K."""
    b_name = _COLS[case.op][0]
    b = case.inputs[b_name].value  # type: ignore[union-attr]
    axis = 0 if b.ndim == 1 else b.ndim - 2
    if b.shape[axis]:
        extra = np.take(b, [0], axis=axis)
    else:
        extra = np.zeros((*b.shape[:axis], 1, *b.shape[axis + 1 :]), b.dtype)
    return case.with_input(b_name, np.concatenate([b, extra], axis=axis))


def _mutate_batch(rng: np.random.Generator, case: Case) -> Case | None:
    """A and B with batch axes of 2 and 3, which do not broadcast."""
    a_name, b_name = _ROWS[case.op][0], _COLS[case.op][0]
    a, b = case.inputs[a_name].value, case.inputs[b_name].value  # type: ignore[union-attr]
    if a.ndim < 2 or b.ndim < 2:
        return None
    return case.with_input(a_name, np.stack([a, a])).with_input(b_name, np.stack([b, b, b]))


def _mutate_row_shape(rng: np.random.Generator, case: Case) -> Case | None:
    """A zero point (and scale) of A with one entry more than A's rows (or than one value)."""
    a_name, a_zero = _ROWS[case.op]
    a = case.inputs[a_name].value  # type: ignore[union-attr]
    rows = (a.shape[-2] if a.ndim >= 2 else 1) + 1
    out = case
    for name in (a_zero, "a_scale") if case.op == "QLinearMatMul" else (a_zero,):
        t = case.inputs.get(name)
        base = t.value.reshape(-1) if t is not None and t.value.size else np.zeros(1, a.dtype)
        out = out.with_input(name, np.resize(base, rows).astype(base.dtype))
    return out


def _mutate_rank(rng: np.random.Generator, case: Case) -> Case | None:
    """A as a scalar."""
    a_name = _ROWS[case.op][0]
    a = case.inputs[a_name].value  # type: ignore[union-attr]
    return case.with_input(a_name, a.reshape(-1)[:1].reshape(()) if a.size else V.simple((), case.dtype))
