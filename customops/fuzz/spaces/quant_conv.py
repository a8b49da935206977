"""Case spaces of ConvInteger (10) and QLinearConv (10): 1 to 3 spatial axes, groups, kernels, pads,
strides, dilations and every auto_pad, N, C and M of 0, every pair of 8-bit types (uint8 x with an int8
output included), zero points of one value or per output channel (w's: ORT refuses the latter, "Non
per-tensor quantization is not supported now"), per-channel w scales, extreme zero points, operands of
their type's extremes, scales that are powers of two (ties), 0, ±inf and NaN scales, a bias B.

The oracle follows the spec and docs/semantics.md: Conv's geometry rules; each scale and its zero point
have one shape (a per-channel w_scale beside a w_zero_point of one value is invalid); a NaN real value has
no value in the integer output (``nan-into-integer``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import Candidate, Space, Verdict, generic_features
from customops.fuzz.spaces.quant_values import (
    const_features,
    draw_elem,
    draw_quantized,
    finite_floats,
    given,
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

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")
_SCALES = ("x_scale", "w_scale", "y_scale")
_ZEROS = ("x_zero_point", "w_zero_point", "y_zero_point")


@dataclass
class _Draw:
    """The geometry of one drawn case."""

    n: int
    group: int
    channels: int
    out_channels: int
    spatial: list[int]
    kernel: list[int]
    dil: list[int]
    stride: list[int]
    pads: list[int]
    auto_pad: str


def _draw_geometry(rng: np.random.Generator, limit: int) -> _Draw:
    r = int(rng.choice([1, 2, 3], p=[0.2, 0.65, 0.15]))
    group = int(rng.choice([1, 1, 2, 3]))
    channels = group * int(rng.choice([0, 1, 1, 2], p=[0.04, 0.48, 0.24, 0.24]))
    out_channels = group * int(rng.choice([0, 1, 2], p=[0.04, 0.6, 0.36]))
    kernel = [int(rng.integers(1, 4)) for _ in range(r)]
    dil = [int(rng.integers(1, 3)) for _ in range(r)] if rng.random() < 0.35 else [1] * r
    stride = [int(rng.integers(1, 3)) for _ in range(r)] if rng.random() < 0.35 else [1] * r
    auto_pad = str(rng.choice(_AUTO_PADS, p=[0.7, 0.1, 0.1, 0.1]))
    pads = [int(rng.integers(0, 3)) for _ in range(2 * r)] if rng.random() < 0.4 else [0] * (2 * r)
    if auto_pad != "NOTSET":
        pads = [0] * (2 * r)
    spatial = []
    for i in range(r):
        low = max(0, dil[i] * (kernel[i] - 1) + 1 - pads[i] - pads[r + i])
        spatial.append(int(rng.integers(low, low + 4)))
    n = int(rng.choice([0, 1, 1, 1, 2]))
    while n * channels * math.prod(spatial) > limit and max(spatial) > 1:
        i = int(np.argmax(spatial))
        spatial[i] = max(1, spatial[i] // 2)
    return _Draw(n, group, channels, out_channels, spatial, kernel, dil, stride, pads, auto_pad)


def _conv_attrs(rng: np.random.Generator, d: _Draw) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for name, value, default in (("dilations", d.dil, 1), ("strides", d.stride, 1), ("pads", d.pads, 0)):
        if name == "pads" and d.auto_pad != "NOTSET":
            continue
        if any(v != default for v in value) or rng.random() < 0.15:
            attrs[name] = list(value)
    if d.group != 1 or rng.random() < 0.2:
        attrs["group"] = d.group
    if rng.random() < 0.4:
        attrs["kernel_shape"] = list(d.kernel)
    if d.auto_pad != "NOTSET" or rng.random() < 0.1:
        attrs["auto_pad"] = d.auto_pad
    return attrs


def _operands(rng: np.random.Generator, d: _Draw, x_elem: str, w_elem: str) -> tuple[np.ndarray, np.ndarray]:
    """x and w; a uint8 x with an int8 w is sometimes all 255 against -128 and 127."""
    x_shape = (d.n, d.channels, *d.spatial)
    w_shape = (d.out_channels, d.channels // d.group, *d.kernel)
    x, w = draw_quantized(rng, x_elem, x_shape), draw_quantized(rng, w_elem, w_shape)
    if x_elem == "uint8" and w_elem == "int8" and rng.random() < 0.2:
        x = np.full(x_shape, 255, dtype=np.uint8)
        w = np.where(rng.random(w_shape) < 0.7, -128, 127).astype(np.int8)
    return x, w


def _channel_shape(rng: np.random.Generator, channels: int) -> tuple[int, ...]:
    """One value ((), [1]) or one per output channel ([M])."""
    return [(), (), (1,), (channels,)][int(rng.integers(0, 4))]


# ---------------------------------------------------------------------------------------------
# the rules


@dataclass(frozen=True)
class Geometry:
    """A valid convolution's output shape and its padding."""

    out_shape: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]


def _ints_reason(case: Case, name: str, count: int, minimum: int) -> str | None:
    value = case.attrs.get(name)
    if value is None or len(value) == 0:
        return None
    if len(value) != count:
        return f"attr-length:{name}"
    return f"attr-value:{name}" if any(v < minimum for v in value) else None


def _shape_reason(case: Case, x: np.ndarray, w: np.ndarray) -> str | None:
    """Conv's rules on the shapes and attributes, before the output's size."""
    if x.ndim < 3:
        return "x-rank"
    if w.ndim != x.ndim:
        return "w-rank"
    given_kernel = case.attrs.get("kernel_shape")
    if given_kernel and list(given_kernel) != list(w.shape[2:]):
        return "kernel-shape-mismatch"
    r = x.ndim - 2
    for name, count, minimum in (("dilations", r, 1), ("strides", r, 1), ("pads", 2 * r, 0)):
        reason = _ints_reason(case, name, count, minimum)
        if reason:
            return reason
    group = int(case.attrs.get("group", 1))
    auto_pad = case.attrs.get("auto_pad", "NOTSET")
    if group < 1:
        return "attr-value:group"
    if auto_pad not in _AUTO_PADS:
        return "attr-value:auto_pad"
    if auto_pad != "NOTSET" and case.attrs.get("pads"):
        return "pads-with-auto-pad"
    if w.shape[1] * group != x.shape[1]:
        return "group-channels"
    return "group-out-channels" if w.shape[0] % group else None


def conv_geometry(case: Case, x: np.ndarray, w: np.ndarray) -> Geometry | str:
    """The output shape and padding of Conv of x and w by the case's attributes, or the rule broken."""
    reason = _shape_reason(case, x, w)
    if reason:
        return reason
    r = x.ndim - 2
    dil = list(case.attrs.get("dilations") or [1] * r)
    stride = list(case.attrs.get("strides") or [1] * r)
    pads = list(case.attrs.get("pads") or [0] * (2 * r))
    auto_pad = case.attrs.get("auto_pad", "NOTSET")
    out, begin, end = [], [], []
    for i in range(r):
        extent = dil[i] * (w.shape[2 + i] - 1) + 1
        size, before, after = x.shape[2 + i], pads[i], pads[r + i]
        if auto_pad.startswith("SAME"):
            count = -(-size // stride[i])
            total = max(0, (count - 1) * stride[i] + extent - size)
            before = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            after = total - before
        else:
            count = (size + before + after - extent) // stride[i] + 1
            if count < 1:
                return "kernel-does-not-fit"
        out.append(count)
        begin.append(before)
        end.append(after)
    return Geometry((x.shape[0], w.shape[0], *out), tuple(begin), tuple(end))


def conv_sums(xs: np.ndarray, ws: np.ndarray, case: Case, geo: Geometry) -> np.ndarray:
    """The convolution of float64 ``xs`` and ``ws`` (integers: exact) by ``geo``, [N, M, o...]."""
    group = int(case.attrs.get("group", 1))
    r = xs.ndim - 2
    dil = list(case.attrs.get("dilations") or [1] * r)
    stride = list(case.attrs.get("strides") or [1] * r)
    padded = np.pad(xs, [(0, 0), (0, 0), *((b, max(e, 0)) for b, e in zip(geo.begin, geo.end, strict=True))])
    out = np.zeros(geo.out_shape)
    if not out.size:
        return out
    per, oc = xs.shape[1] // group, ws.shape[0] // group
    for offset in itertools.product(*(range(k) for k in ws.shape[2:])):
        taps = tuple(
            slice(
                offset[i] * dil[i], offset[i] * dil[i] + (geo.out_shape[2 + i] - 1) * stride[i] + 1, stride[i]
            )
            for i in range(r)
        )
        for g in range(group):
            window = padded[(slice(None), slice(g * per, (g + 1) * per), *taps)]
            weights = ws[(slice(g * oc, (g + 1) * oc), slice(None), *offset)]
            out[:, g * oc : (g + 1) * oc] += np.einsum("mc,nc...->nm...", weights, window)
    return out


def validate_conv(case: Case) -> Verdict:
    """ConvInteger's and QLinearConv's rules, and the output shape."""
    missing = [i.name for i in case.opv.inputs if not i.optional and case.inputs.get(i.name) is None]
    if missing:
        return Verdict(f"input-missing:{missing[0]}")
    reason = type_reason(case, tuple(i.name for i in case.opv.inputs))
    if case.op == "QLinearConv":
        for prefix in "xwy":
            scale, zero = given(case, f"{prefix}_scale"), given(case, f"{prefix}_zero_point")
            reason = reason or pair_reason(scale, zero, prefix)  # type: ignore[arg-type]
    x, w = case.main, case.inputs["w"].value  # type: ignore[union-attr]
    geo = reason or conv_geometry(case, x, w)
    if isinstance(geo, str):
        return Verdict(geo)
    reason = _parameter_reason(case, w.shape[0] if w.ndim else 0)
    if reason:
        return Verdict(reason)
    if case.op == "QLinearConv" and np.isnan(real_values(case, geo)).any():
        return Verdict("nan-into-integer")
    return Verdict(None, geo.out_shape)


def _parameter_reason(case: Case, channels: int) -> str | None:
    """x's and y's scales and zero points one value each, w's one value or [M]; B an [M]."""
    for name in ("x_zero_point", "x_scale", "y_scale", "y_zero_point"):
        value = given(case, name)
        if value is not None and not single(value.shape):
            return f"not-one-value:{name}"
    for name in ("w_zero_point", "w_scale"):
        value = given(case, name)
        if value is not None and not single(value.shape) and value.shape != (channels,):
            return f"per-channel-shape:{name}"
    bias = given(case, "B")
    if bias is not None and bias.size and bias.shape != (channels,):
        return "b-shape"
    return None


def real_values(case: Case, geo: Geometry) -> np.ndarray:
    """QLinearConv's real value before the zero point, ``(sum + B) * x_scale * w_scale / y_scale``, in
    float64 (the sums of 8-bit integers are exact), for the NaN rule."""
    x, w = case.main, case.inputs["w"].value  # type: ignore[union-attr]
    xs = finite_floats(x) - finite_floats(given(case, "x_zero_point")).reshape(())  # type: ignore[arg-type]
    ws = finite_floats(w) - _per_channel(given(case, "w_zero_point"), w.ndim - 1)  # type: ignore[arg-type]
    acc = conv_sums(xs, ws, case, geo)
    bias = given(case, "B")
    trailing = len(geo.out_shape) - 2
    if bias is not None and bias.size:
        acc = acc + _per_channel(bias, trailing)
    x_scale = finite_floats(given(case, "x_scale")).reshape(())  # type: ignore[arg-type]
    with np.errstate(all="ignore"):
        num = x_scale * _per_channel(given(case, "w_scale"), trailing)  # type: ignore[arg-type]
        return acc * num / finite_floats(given(case, "y_scale")).reshape(())  # type: ignore[arg-type]


def _per_channel(value: np.ndarray, trailing: int) -> np.ndarray:
    """One value, or one per output channel shaped as the first of 1 + ``trailing`` axes, as float64."""
    f = finite_floats(value)
    return f.reshape(()) if single(value.shape) else f.reshape((-1,) + (1,) * trailing)


# ---------------------------------------------------------------------------------------------
# the spaces


class _ConvSpace(Space):
    """What ConvInteger's and QLinearConv's spaces share."""

    exact = True

    def validate(self, case: Case) -> Verdict:
        return validate_conv(case)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        found = [_mutate_kernel_shape, _mutate_group, _mutate_pads, _mutate_no_fit, _mutate_w_zero]
        if opv.op == "QLinearConv":
            found += [_mutate_scale_pair, _mutate_bias, mutate_nan_scale]
        else:
            found.append(_mutate_x_zero)
        return found

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        yield from zero_point_features(case, _ZEROS)
        yield from scale_features(case, _SCALES)
        yield from const_features(case, ("w",))
        w = case.inputs["w"]
        if w is not None and V.special_mask(w.value, w.elem).any():
            yield "w-special-values", case.with_input("w", V.replace_specials(w.value, w.elem))
        if given(case, "B") is not None:
            yield "B", case.with_input("B", None)

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        if x.ndim >= 1 and x.shape[0] > 1:
            yield "N=1", case.with_input("x", x[:1])
        if given(case, "B") is not None:
            yield "no B", case.with_input("B", None)
        for name in ("pads", "strides", "dilations", "kernel_shape", "auto_pad"):
            if name in case.attrs:
                yield f"no {name}", case.with_attrs(**{name: None})
        for i in range(2, x.ndim):
            if x.shape[i] > 1:
                cut = x[(slice(None),) * i + (slice(0, x.shape[i] - 1),)]
                yield f"x axis {i} one shorter", case.with_input("x", cut)
        yield from value_simplifications(case)
        scales = _SCALES if case.op == "QLinearConv" else ()
        yield from parameter_simplifications(case, scales, _ZEROS)


class ConvIntegerSpace(_ConvSpace):
    """ConvInteger-10."""

    op = "ConvInteger"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        d = _draw_geometry(rng, limit)
        w_elem = draw_elem(rng, types_of(opv, "w"))
        x, w = _operands(rng, d, dtype, w_elem)
        inputs: dict[str, Tensor | None] = {"x": Tensor(x), "w": Tensor(w, bool(rng.random() < 0.5))}
        inputs["x_zero_point"] = optional_zero_point(rng, dtype, lambda: [(), (1,)][int(rng.integers(0, 2))])
        inputs["w_zero_point"] = optional_zero_point(rng, w_elem, lambda: _channel_shape(rng, d.out_channels))
        return Case(opv.op, opv.version, dtype, inputs, _conv_attrs(rng, d))


class QLinearConvSpace(_ConvSpace):
    """QLinearConv-10 (uint8 x with an int8 output included)."""

    op = "QLinearConv"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        d = _draw_geometry(rng, limit)
        w_elem, y_elem = draw_elem(rng, types_of(opv, "w")), draw_elem(rng, types_of(opv, "y_zero_point"))
        x, w = _operands(rng, d, dtype, w_elem)
        inputs: dict[str, Tensor | None] = {"x": Tensor(x), "w": Tensor(w, bool(rng.random() < 0.5))}
        shapes = {"x": ((), dtype), "w": (_channel_shape(rng, d.out_channels), w_elem), "y": ((), y_elem)}
        inputs.update(scales_and_zero_points(rng, shapes, "float"))
        inputs["B"] = None
        if rng.random() < 0.4:
            bias = rng.integers(-1000, 1001, size=d.out_channels) if rng.random() < 0.8 else None
            bias = np.asarray(bias if bias is not None else [2**31 - 1] * d.out_channels)
            inputs["B"] = Tensor(bias.astype(np.int32), bool(rng.random() < 0.5))
        order = [i.name for i in opv.inputs]
        return Case(opv.op, opv.version, dtype, {n: inputs[n] for n in order}, _conv_attrs(rng, d))


# ---------------------------------------------------------------------------------------------
# mutations


def _mutate_kernel_shape(rng: np.random.Generator, case: Case) -> Case | None:
    w = case.inputs["w"].value  # type: ignore[union-attr]
    kernel = [int(k) for k in w.shape[2:]]
    if not kernel:
        return None
    kernel[int(rng.integers(0, len(kernel)))] += 1
    return case.with_attrs(kernel_shape=kernel)


def _mutate_group(rng: np.random.Generator, case: Case) -> Case | None:
    value = int(case.attrs.get("group", 1))
    return case.with_attrs(group=int(rng.choice([value + 1, 2 * value + 1, 0, -1])))


def _mutate_pads(rng: np.random.Generator, case: Case) -> Case | None:
    """pads of the wrong length, negative, or given with a SAME auto_pad."""
    r = max(case.main.ndim - 2, 1)
    choice = int(rng.integers(0, 3))
    if choice == 0:
        return case.with_attrs(pads=[0] * (2 * r + 1))
    if choice == 1:
        return case.with_attrs(pads=[-1] + [0] * (2 * r - 1), auto_pad=None)
    return case.with_attrs(pads=[1] * (2 * r), auto_pad="SAME_UPPER")


def _mutate_no_fit(rng: np.random.Generator, case: Case) -> Case | None:
    """x cut along its first spatial axis to fewer positions than the kernel, with no padding."""
    x, w = case.main, case.inputs["w"].value  # type: ignore[union-attr]
    if x.ndim < 3 or w.ndim != x.ndim or w.shape[2] < 2:
        return None
    r = x.ndim - 2
    return case.with_input("x", x[:, :, : w.shape[2] - 1]).with_attrs(
        pads=[0] * (2 * r), dilations=None, auto_pad=None
    )


def _mutate_w_zero(rng: np.random.Generator, case: Case) -> Case | None:
    """A w zero point (and w scale) with one entry more than w's output channels."""
    w = case.inputs["w"].value  # type: ignore[union-attr]
    channels = (w.shape[0] if w.ndim else 0) + 1
    out = case
    for name in ("w_zero_point", "w_scale") if case.op == "QLinearConv" else ("w_zero_point",):
        t = case.inputs.get(name)
        base = t.value.reshape(-1) if t is not None and t.value.size else np.zeros(1, w.dtype)
        out = out.with_input(name, np.resize(base, channels).astype(base.dtype))
    return out


def _mutate_x_zero(rng: np.random.Generator, case: Case) -> Case | None:
    """An x zero point per input channel (x's is one value)."""
    x = case.main
    channels = max(x.shape[1] if x.ndim >= 2 else 2, 2)
    return case.with_input("x_zero_point", V.simple((channels,), case.dtype))


def _mutate_scale_pair(rng: np.random.Generator, case: Case) -> Case | None:
    """A per-channel w_scale beside a w_zero_point of one value (ORT accepts it)."""
    w = case.inputs["w"].value  # type: ignore[union-attr]
    zero = given(case, "w_zero_point")
    if zero is None or w.ndim < 1 or w.shape[0] < 2:
        return None
    scales = V.cast(np.full(w.shape[0], 0.5), "float")
    return case.with_input("w_scale", scales).with_input("w_zero_point", zero.reshape(-1)[:1].reshape(()))


def _mutate_bias(rng: np.random.Generator, case: Case) -> Case | None:
    """B with one entry more than the output channels."""
    w = case.inputs["w"].value  # type: ignore[union-attr]
    return case.with_input("B", np.arange((w.shape[0] if w.ndim else 0) + 1, dtype=np.int32))
