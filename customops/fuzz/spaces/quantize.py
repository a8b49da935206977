"""Case spaces of QuantizeLinear and DequantizeLinear (10, 13, 19, 21, 23, 24, 25, 28) and
DynamicQuantizeLinear (11): every element type each version allows for each type variable, scales per
tensor (a scalar or [1]), per axis and blocked, zero points absent, 0, extreme or any, the output type from
the zero point, ``output_dtype`` or the default, ``saturate`` and ``precision``; x values that fall on
rounding ties (x.5 exactly after scaling), that saturate the output type, NaN and ±inf, empty axes.

The validity oracle follows docs/semantics.md ("Quantization"): NaN has no value in an integer output (nor
in float4e2m1), so a case whose quotient is NaN there is invalid (``nan-into-integer``), as are
DynamicQuantizeLinear's NaN or infinite x and a range whose scale underflows to 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.dtypes import CODE
from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor, output_elems
from customops.fuzz.spaces.base import (
    Candidate,
    Space,
    Verdict,
    draw_rank,
    draw_shape,
    draw_values,
    generic_features,
)
from customops.fuzz.spaces.quant_values import (
    beyond,
    const_features,
    draw_elem,
    draw_quantized,
    draw_scales,
    draw_zero_points,
    elem,
    finite_floats,
    given,
    has_no_nan,
    pair_reason,
    parameter_simplifications,
    scale_features,
    single,
    ties,
    type_reason,
    types_of,
    zero_point_features,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

PRECISIONS = ("float", "float16", "bfloat16", "int32")
"""The types QuantizeLinear-23 and later may divide in (its ``precision`` attribute)."""


@dataclass(frozen=True)
class Layout:
    """How a scale covers x: one value (``tensor``), one per index of ``axis``, or one per ``block``
    consecutive indices of ``axis`` (``blocked``)."""

    kind: str
    axis: int = 0
    block: int = 0

    def shape(self, x_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The scale's shape for x of ``x_shape`` (per tensor: a scalar)."""
        if self.kind == "tensor":
            return ()
        if self.kind == "axis":
            return (x_shape[self.axis],)
        return tuple(-(-d // self.block) if i == self.axis else d for i, d in enumerate(x_shape))

    def spread(self, param: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
        """``param`` repeated to x's shape."""
        if self.kind == "tensor":
            return np.broadcast_to(param.reshape(()), x_shape)
        if self.kind == "axis":
            shape = [-1 if i == self.axis else 1 for i in range(len(x_shape))]
            return np.broadcast_to(param.reshape(shape), x_shape)
        full = np.repeat(param, self.block, axis=self.axis)
        return full[(slice(None),) * self.axis + (slice(0, x_shape[self.axis]),)]


def kinds_of(version: int) -> tuple[str, ...]:
    """The layouts a version of QuantizeLinear or DequantizeLinear allows."""
    return ("tensor",) + (("axis",) if version >= 13 else ()) + (("blocked",) if version >= 21 else ())


def draw_layout(rng: np.random.Generator, x_shape: tuple[int, ...], version: int) -> Layout:
    """Per tensor, per axis (13+) or blocked (21+) for x of ``x_shape``."""
    kinds = [k for k in kinds_of(version) if k == "tensor" or x_shape]
    kind = str(rng.choice(kinds, p=_weights(len(kinds))))
    if kind == "tensor":
        return Layout("tensor")
    axis = int(rng.integers(0, len(x_shape)))
    if kind == "axis":
        return Layout("axis", axis)
    return Layout("blocked", axis, int(rng.choice([1, 2, 3, 4, 16])))


def _weights(n: int) -> list[float]:
    return {1: [1.0], 2: [0.5, 0.5], 3: [0.4, 0.35, 0.25]}[n]


def layout_attrs(rng: np.random.Generator, layout: Layout, rank: int, version: int) -> dict[str, Any]:
    """axis (negative sometimes; left at its default 1 when that is it; now and then given beside a scale
    of one value, which ignores it) and block_size of ``layout``."""
    attrs: dict[str, Any] = {}
    if layout.kind != "tensor" and (layout.axis != 1 or rng.random() < 0.3):
        attrs["axis"] = layout.axis - rank if rng.random() < 0.3 else layout.axis
    elif layout.kind == "tensor" and rank and version >= 13 and rng.random() < 0.15:
        attrs["axis"] = int(rng.integers(-rank, rank))
    if layout.kind == "blocked":
        attrs["block_size"] = layout.block
    return attrs


def layout_of(case: Case, x_shape: tuple[int, ...], scale_shape: tuple[int, ...]) -> Layout | str:
    """The layout of a scale of ``scale_shape`` over x, or the rule it breaks: one value is per tensor;
    without block_size a 1-D scale is per axis (13+), of the axis's length; with block_size B > 0 (21+)
    the scale has x's rank and shape but ceil(D / B) along the axis."""
    block = int(case.attrs.get("block_size", 0))
    axis = int(case.attrs.get("axis", 1))
    rank = len(x_shape)
    if block < 0:
        return "attr-value:block_size"
    if block == 0 and single(scale_shape):
        return Layout("tensor")
    if block == 0 and (len(scale_shape) != 1 or case.version < 13):
        return "scale-shape"
    if not -rank <= axis < rank:
        return "axis-out-of-range"
    layout = Layout("axis" if block == 0 else "blocked", axis % rank, block)
    return layout if layout.shape(x_shape) == tuple(scale_shape) else "scale-shape"


def cut_layout(case: Case, x_name: str, k: int, params: tuple[str, ...]) -> Case | None:
    """``case`` with axis ``k`` of x cut to length 1 and its scale and zero point cut along with it;
    None where the layout is not known (an invalid case) or the axis is short already."""
    x = case.inputs[x_name].value  # type: ignore[union-attr]
    scale = given(case, params[0])
    layout = layout_of(case, x.shape, () if scale is None else scale.shape)
    if isinstance(layout, str) or x.shape[k] <= 1:
        return None
    out = case.with_input(x_name, x[(slice(None),) * k + (slice(0, 1),)])
    if layout.kind == "tensor" or (layout.kind == "axis" and layout.axis != k):
        return out
    for name in params:
        p = given(case, name)
        if p is not None:
            index = (slice(None),) * (k if layout.kind == "blocked" else 0) + (slice(0, 1),)
            out = out.with_input(name, p[index])
    return out


def draw_x(
    rng: np.random.Generator, dtype: str, shape: tuple[int, ...], scale: np.ndarray, out: str
) -> np.ndarray:
    """x for QuantizeLinear: ordinary values (special ones sometimes), rounding ties of the output type
    times the scale (exact for scales that are powers of two), or values past the output type's range."""
    style = rng.choice(["ordinary", "ties", "saturating"], p=[0.5, 0.3, 0.2])
    if style == "ordinary":
        return draw_values(rng, dtype, shape)
    quotient = ties(rng, out, shape) if style == "ties" else beyond(rng, out, shape)
    with np.errstate(all="ignore"):
        return V.cast(quotient * finite_floats(scale), dtype)


# ---------------------------------------------------------------------------------------------
# QuantizeLinear


class QuantizeLinearSpace(Space):
    """QuantizeLinear 10 to 28."""

    op = "QuantizeLinear"
    exact = True

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        shape = draw_shape(rng, draw_rank(rng, 1, 4), limit) if rng.random() < 0.95 else ()
        layout = draw_layout(rng, shape, opv.version)
        scale_elem = dtype if opv.version in (19, 21) else draw_elem(rng, types_of(opv, "y_scale"))
        out = draw_elem(rng, types_of(opv, "y_zero_point"))
        pshape = layout.shape(shape) if layout.kind != "tensor" or rng.random() < 0.7 else (1,)
        scale = draw_scales(rng, scale_elem, pshape)
        x = draw_x(rng, dtype, shape, layout.spread(scale, shape), out)
        attrs = {**layout_attrs(rng, layout, len(shape), opv.version), **_q_attrs(rng, opv, scale_elem)}
        inputs: dict[str, Tensor | None] = {
            "x": Tensor(x),
            "y_scale": Tensor(scale, bool(rng.random() < 0.5)),
            "y_zero_point": None,
        }
        if opv.version < 21 or rng.random() < 0.7:
            zero = draw_zero_points(rng, out, pshape)
            inputs["y_zero_point"] = Tensor(zero, bool(rng.random() < 0.5))
            if opv.version >= 21 and rng.random() < 0.15:
                attrs["output_dtype"] = CODE[out]
        elif out != "uint8" or rng.random() < 0.3:
            attrs["output_dtype"] = CODE[out]
        if opv.version < 21 and rng.random() < 0.2:
            inputs["y_zero_point"] = None
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def validate(self, case: Case) -> Verdict:
        return validate_quantize(case)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        found = [mutate_scale_length, mutate_zero_point_shape, mutate_nan]
        if opv.version >= 13:
            found.append(mutate_axis)
        if opv.version >= 21:
            found += [mutate_block, mutate_output_dtype]
        if opv.version in (19, 21):
            found.append(_mutate_scale_type)
        if opv.version >= 23:
            found.append(_mutate_precision)
        return found

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from parameter_features(case, "y_scale", "y_zero_point")

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        yield from parameter_cuts(case, "y_scale", "y_zero_point")
        yield from value_simplifications(case)
        yield from parameter_simplifications(case, ("y_scale",), ("y_zero_point",))


def _q_attrs(rng: np.random.Generator, opv: OpVersion, scale_elem: str) -> dict[str, Any]:
    """saturate (19+) and precision (23+; always with a float8e8m0 scale)."""
    attrs: dict[str, Any] = {}
    if opv.version >= 19 and rng.random() < 0.4:
        attrs["saturate"] = int(rng.integers(0, 2))
    if opv.version >= 23 and (scale_elem == "float8e8m0" or rng.random() < 0.25):
        attrs["precision"] = CODE[str(rng.choice(PRECISIONS))]
    return attrs


def validate_quantize(case: Case) -> Verdict:
    """QuantizeLinear's rules (docs/semantics.md, "Quantization") and the output shape (x's)."""
    x, scale, zero = case.main, given(case, "y_scale"), given(case, "y_zero_point")
    if scale is None:
        return Verdict("scale-missing")
    reason = type_reason(case, ("x", "y_scale", "y_zero_point"))
    reason = reason or _output_reason(case) or _precision_reason(case)
    reason = reason or pair_reason(scale, zero, "y")
    if reason:
        return Verdict(reason)
    layout = layout_of(case, x.shape, scale.shape)
    if isinstance(layout, str):
        return Verdict(layout)
    if has_no_nan(output_elems(case)[0]):
        with np.errstate(all="ignore"):
            quotient = finite_floats(x) / finite_floats(layout.spread(scale, x.shape))
        if np.isnan(quotient).any():
            return Verdict("nan-into-integer")
    return Verdict(None, tuple(x.shape))


def _output_reason(case: Case) -> str | None:
    """output_dtype naming a type the version does not allow, or another type than the zero point's."""
    code = int(case.attrs.get("output_dtype", 0))
    zero = elem(case, "y_zero_point")
    allowed = [CODE[t] for t in types_of(case.opv, "y_zero_point") if t in CODE]
    if code and (code not in allowed or (zero is not None and CODE[zero] != code)):
        return "attr-value:output_dtype"
    return None


def _precision_reason(case: Case) -> str | None:
    """precision (23+) naming no division type, or a float8e8m0 scale without it."""
    code = int(case.attrs.get("precision", 0))
    if code and code not in [CODE[t] for t in PRECISIONS]:
        return "attr-value:precision"
    if not code and elem(case, "y_scale") == "float8e8m0":
        return "scale-e8m0-without-precision"
    return None


# ---------------------------------------------------------------------------------------------
# DequantizeLinear


class DequantizeLinearSpace(Space):
    """DequantizeLinear 10 to 28."""

    op = "DequantizeLinear"
    exact = True

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        shape = draw_shape(rng, draw_rank(rng, 1, 4), limit) if rng.random() < 0.95 else ()
        layout = draw_layout(rng, shape, opv.version)
        scale_elem = draw_elem(rng, types_of(opv, "x_scale"))
        pshape = layout.shape(shape) if layout.kind != "tensor" or rng.random() < 0.7 else (1,)
        inputs: dict[str, Tensor | None] = {
            "x": Tensor(draw_quantized(rng, dtype, shape)),
            "x_scale": Tensor(draw_scales(rng, scale_elem, pshape), bool(rng.random() < 0.5)),
            "x_zero_point": None,
        }
        if rng.random() < 0.7:
            inputs["x_zero_point"] = Tensor(draw_zero_points(rng, dtype, pshape), bool(rng.random() < 0.5))
        attrs = layout_attrs(rng, layout, len(shape), opv.version)
        if opv.version >= 23 and (scale_elem == "float8e8m0" or rng.random() < 0.35):
            attrs["output_dtype"] = CODE[draw_elem(rng, types_of(opv, "x_scale")[:3])]
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def validate(self, case: Case) -> Verdict:
        return validate_dequantize(case)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        found = [mutate_scale_length, mutate_zero_point_shape]
        if opv.version >= 13:
            found.append(mutate_axis)
        if opv.version >= 21:
            found.append(mutate_block)
        if opv.version >= 23:
            found.append(mutate_output_dtype)
        return found

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from parameter_features(case, "x_scale", "x_zero_point")

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        yield from parameter_cuts(case, "x_scale", "x_zero_point")
        yield from value_simplifications(case)
        yield from parameter_simplifications(case, ("x_scale",), ("x_zero_point",))


def validate_dequantize(case: Case) -> Verdict:
    """DequantizeLinear's rules and the output shape (x's)."""
    x, scale, zero = case.main, given(case, "x_scale"), given(case, "x_zero_point")
    if scale is None:
        return Verdict("scale-missing")
    reason = type_reason(case, ("x", "x_scale", "x_zero_point"))
    code = int(case.attrs.get("output_dtype", 0))
    if code and code not in [CODE[t] for t in ("float", "float16", "bfloat16")]:
        reason = reason or "attr-value:output_dtype"
    if not code and elem(case, "x_scale") == "float8e8m0":
        reason = reason or "scale-e8m0-without-output-dtype"
    reason = reason or pair_reason(scale, zero, "x")
    if reason:
        return Verdict(reason)
    layout = layout_of(case, x.shape, scale.shape)
    if isinstance(layout, str):
        return Verdict(layout)
    return Verdict(None, tuple(x.shape))


# ---------------------------------------------------------------------------------------------
# shared by QuantizeLinear and DequantizeLinear


def parameter_features(case: Case, scale: str, zero: str) -> Iterator[tuple[str, Case]]:
    yield from generic_features(case)
    yield from zero_point_features(case, (zero,))
    yield from scale_features(case, (scale,))
    yield from const_features(case, (scale, zero))
    if given(case, zero) is not None and case.op == "DequantizeLinear":
        yield zero, case.with_input(zero, None)


def parameter_cuts(case: Case, scale: str, zero: str) -> Iterator[Candidate]:
    """Each axis of x cut to length 1 (the scale and zero point with it), and the scale made per
    tensor."""
    x = case.main
    for k in range(x.ndim):
        cut = cut_layout(case, "x", k, (scale, zero))
        if cut is not None:
            yield f"x axis {k} length 1", cut
    s, z = given(case, scale), given(case, zero)
    if s is not None and not single(s.shape) and s.size:
        simpler = case.with_input(scale, s.reshape(-1)[:1].reshape(())).with_attrs(axis=None, block_size=None)
        if z is not None and z.size:
            simpler = simpler.with_input(zero, z.reshape(-1)[:1].reshape(()))
        yield "per tensor", simpler


def mutate_axis(rng: np.random.Generator, case: Case) -> Case | None:
    """axis out of range (only a scale that is not one value reads it)."""
    rank = case.main.ndim
    return case.with_attrs(axis=int(rng.choice([rank, -rank - 1, rank + 2])))


def mutate_scale_length(rng: np.random.Generator, case: Case) -> Case | None:
    """A 1-D scale (and zero point) one entry longer than its axis, or 2-D without block_size."""
    scale_name, zero_name = case.opv.inputs[1].name, case.opv.inputs[2].name
    s = given(case, scale_name)
    if s is None:
        return None
    longer = (
        np.concatenate([s.reshape(-1), s.reshape(-1)[:1]])
        if s.size
        else V.simple((2,), elem(case, scale_name) or "float")
    )
    if rng.random() < 0.3:
        longer = np.stack([longer, longer])
    out = case.with_input(scale_name, longer).with_attrs(block_size=None)
    z = given(case, zero_name)
    if z is not None:
        zz = np.resize(z.reshape(-1) if z.size else np.zeros(1, z.dtype), longer.size).reshape(longer.shape)
        out = out.with_input(zero_name, zz.astype(z.dtype))
    return out


def mutate_zero_point_shape(rng: np.random.Generator, case: Case) -> Case | None:
    """A zero point of another shape than its scale."""
    scale_name, zero_name = case.opv.inputs[1].name, case.opv.inputs[2].name
    s, z = given(case, scale_name), given(case, zero_name)
    if s is None or z is None:
        return None
    shape = (2,) if single(s.shape) else ()
    return case.with_input(
        zero_name, np.resize(z.reshape(-1) if z.size else np.zeros(1, z.dtype), shape).astype(z.dtype)
    )


def mutate_block(rng: np.random.Generator, case: Case) -> Case | None:
    """block_size given with a scale of one value or 1-D, or negative."""
    value = -1 if rng.random() < 0.3 else int(rng.integers(1, 4))
    s = given(case, case.opv.inputs[1].name)
    if s is not None and s.ndim == case.main.ndim and s.ndim > 1 and value > 0:
        value = -1  # a blocked scale would fit some block_size: a negative one fits none
    return case.with_attrs(block_size=value)


def mutate_output_dtype(rng: np.random.Generator, case: Case) -> Case | None:
    """output_dtype naming a type the version does not allow here (int64, double), or another type than
    the zero point's."""
    zero = elem(case, case.opv.inputs[2].name)
    if case.op == "QuantizeLinear" and zero is not None and rng.random() < 0.5:
        other = "int8" if zero != "int8" else "uint8"
        return case.with_attrs(output_dtype=CODE[other])
    return case.with_attrs(output_dtype=CODE[str(rng.choice(["int64", "double"]))])


def mutate_nan(rng: np.random.Generator, case: Case) -> Case | None:
    """NaN in a float x quantized to an integer type (the spec gives it no value)."""
    x = case.main
    if not V.has_nan(case.dtype) or not x.size or not has_no_nan(output_elems(case)[0]):
        return None
    out = x.copy().reshape(-1)
    out[int(rng.integers(0, out.size))] = V.cast(np.array([math.nan]), case.dtype)[0]
    return case.with_input("x", out.reshape(x.shape))


def _mutate_scale_type(rng: np.random.Generator, case: Case) -> Case | None:
    """A y_scale of another type than x (they share T1 in versions 19 and 21)."""
    s = given(case, "y_scale")
    other = [t for t in ("float", "float16") if t != case.dtype]
    if s is None or not other:
        return None
    return case.with_input("y_scale", V.cast(finite_floats(s), other[0]))


def _mutate_precision(rng: np.random.Generator, case: Case) -> Case | None:
    """precision naming a type a division cannot be computed in (int8, double)."""
    return case.with_attrs(precision=CODE[str(rng.choice(["int8", "double"]))])


# ---------------------------------------------------------------------------------------------
# DynamicQuantizeLinear


class DynamicQuantizeLinearSpace(Space):
    """DynamicQuantizeLinear-11: its three outputs (y, y_scale, y_zero_point) compared together."""

    op = "DynamicQuantizeLinear"
    exact = True

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        shape = draw_shape(rng, draw_rank(rng, 1, 4), limit) if rng.random() < 0.9 else ()
        style = rng.choice(
            ["ordinary", "zeros", "positive", "negative", "tiny", "huge"], p=[0.35, 0.05, 0.2, 0.2, 0.1, 0.1]
        )
        x = V.ordinary(rng, dtype, shape).astype(np.float64)
        unit = x / max(float(np.abs(x).max(initial=0.0)), 1e-30)  # at most 1 in magnitude
        x = {
            "zeros": np.zeros(shape),
            "positive": np.abs(x),
            "negative": -np.abs(x),
            "tiny": unit * 1e-43,  # subnormal: a range whose scale may underflow to 0
            "huge": unit * 3e38,  # a range that overflows float32
        }.get(str(style), x)
        values = V.cast(x, dtype)
        if rng.random() < 0.1:
            values = V.with_specials(rng, values, dtype)
        return Case(opv.op, opv.version, dtype, {"x": Tensor(values)}, {})

    def validate(self, case: Case) -> Verdict:
        return validate_dynamic(case)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [_mutate_nonfinite, _mutate_underflow]

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        for k in range(x.ndim):
            if x.shape[k] > 1:
                yield f"x axis {k} length 1", case.with_input("x", x[(slice(None),) * k + (slice(0, 1),)])
        yield from value_simplifications(case)


def validate_dynamic(case: Case) -> Verdict:
    """DynamicQuantizeLinear's rules: its function body's float32 arithmetic must give every output a
    uint8 value (no NaN or ±inf in x, no range whose scale underflows to 0); the output shape is y's."""
    x = case.main.astype(np.float32)
    if np.isnan(x).any():
        return Verdict("x-nan")
    if np.isinf(x).any():
        return Verdict("x-inf")
    low = min(np.float32(0), x.min()) if x.size else np.float32(0)
    high = max(np.float32(0), x.max()) if x.size else np.float32(0)
    with np.errstate(over="ignore"):
        span = np.float32(high - low)
    if span != 0 and np.float32(span / np.float32(255)) == 0:
        return Verdict("scale-underflow")
    return Verdict(None, tuple(x.shape))


def _mutate_nonfinite(rng: np.random.Generator, case: Case) -> Case | None:
    x = case.main
    if not x.size:
        return None
    out = x.copy().reshape(-1)
    out[int(rng.integers(0, out.size))] = float(rng.choice([math.nan, math.inf, -math.inf]))
    return case.with_input("x", out.reshape(x.shape))


def _mutate_underflow(rng: np.random.Generator, case: Case) -> Case | None:
    """x of subnormal values only, whose range divided by 255 is 0 in float32."""
    x = case.main
    if not x.size:
        return None
    steps = rng.integers(1, 61, x.shape)  # a range below 127 steps of 2**-149: divided by 255, 0
    tiny = np.where(rng.random(x.shape) < 0.5, 1, -1) * np.float32(2.0**-149) * steps
    return case.with_input("x", tiny.astype(np.float32))
