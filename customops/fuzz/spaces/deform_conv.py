"""Case space of DeformConv (19, 22): 1 to 3 spatial axes, groups and offset groups, kernels, pads,
strides and dilations, bias and mask present or absent, N, C and oC of 0, offsets that land inside,
between and outside the pixels (integers, halves, normal draws, special values)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    Candidate,
    Space,
    Verdict,
    draw_values,
    generic_features,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

_SPATIAL = ("dilations", "pads", "strides")


@dataclass
class _Config:
    """The geometry of one drawn case."""

    n: int
    group: int
    offset_group: int
    channels: int
    out_channels: int
    spatial: list[int]
    kernel: list[int]
    dil: list[int]
    stride: list[int]
    pads: list[int]

    def out(self) -> list[int]:
        r = len(self.spatial)
        return [
            (self.spatial[i] + self.pads[i] + self.pads[r + i] - (self.dil[i] * (self.kernel[i] - 1) + 1))
            // self.stride[i]
            + 1
            for i in range(r)
        ]


def _draw_config(rng: np.random.Generator) -> _Config:
    r = int(rng.choice([1, 2, 3], p=[0.15, 0.7, 0.15]))
    group = int(rng.choice([1, 1, 2, 3]))
    offset_group = int(rng.choice([1, 1, 2]))
    per = int(rng.choice([0, 1, 1, 2], p=[0.04, 0.48, 0.24, 0.24]))
    channels = group * offset_group * per // math.gcd(group, offset_group)
    out_channels = group * int(rng.choice([0, 1, 2], p=[0.04, 0.6, 0.36]))
    kernel = [int(rng.integers(1, 4)) for _ in range(r)]
    dil = [int(rng.integers(1, 3)) for _ in range(r)] if rng.random() < 0.35 else [1] * r
    stride = [int(rng.integers(1, 3)) for _ in range(r)] if rng.random() < 0.35 else [1] * r
    pads = [int(rng.integers(0, 3)) for _ in range(2 * r)] if rng.random() < 0.4 else [0] * (2 * r)
    spatial = []
    for i in range(r):
        extent = dil[i] * (kernel[i] - 1) + 1
        low = max(0, extent - pads[i] - pads[r + i])
        spatial.append(int(rng.integers(low, low + 4)))
    n = int(rng.choice([0, 1, 1, 1, 2]))
    return _Config(n, group, offset_group, channels, out_channels, spatial, kernel, dil, stride, pads)


def _draw_offsets(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], extent: int) -> np.ndarray:
    """Offsets: whole numbers, halves, normal draws spanning the input, or ordinary values of the type;
    special values in some cases."""
    style = int(rng.integers(0, 5))
    if style == 0:
        raw = rng.integers(-2, 3, size=shape).astype(np.float64)
    elif style == 1:
        raw = rng.integers(-4, 5, size=shape) / 2.0
    elif style == 2:
        raw = rng.standard_normal(shape) * max(1, extent) / 2
    elif style == 3:
        raw = np.round(rng.uniform(-1.5, 1.5, size=shape), 2)
    else:
        return draw_values(rng, dtype, shape)
    values = V.cast(raw, dtype)
    if rng.random() < 0.15:
        values = V.with_specials(rng, values, dtype)
    return values


def _attrs(rng: np.random.Generator, c: _Config) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for name, value, default in (("dilations", c.dil, 1), ("strides", c.stride, 1), ("pads", c.pads, 0)):
        if any(v != default for v in value) or rng.random() < 0.15:
            attrs[name] = list(value)
    for name, value in (("group", c.group), ("offset_group", c.offset_group)):
        if value != 1 or rng.random() < 0.2:
            attrs[name] = value
    if rng.random() < 0.4:
        attrs["kernel_shape"] = list(c.kernel)
    return attrs


def _build(rng: np.random.Generator, opv: OpVersion, dtype: str, c: _Config) -> Case:
    out = c.out()
    taps = math.prod(c.kernel)
    r = len(c.spatial)
    per_group = c.channels // c.group if c.group else 0
    x = draw_values(rng, dtype, (c.n, c.channels, *c.spatial))
    w = V.ordinary(rng, dtype, (c.out_channels, per_group, *c.kernel))
    off_shape = (c.n, c.offset_group * taps * r, *[max(o, 0) for o in out])
    inputs: dict[str, Tensor | None] = {
        "X": Tensor(x),
        "W": Tensor(w, bool(rng.random() < 0.5)),
        "offset": Tensor(_draw_offsets(rng, dtype, off_shape, max(c.spatial, default=1))),
        "B": None,
        "mask": None,
    }
    if rng.random() < 0.5:
        inputs["B"] = Tensor(V.ordinary(rng, dtype, (c.out_channels,)), bool(rng.random() < 0.5))
    if rng.random() < 0.5:
        mask_shape = (c.n, c.offset_group * taps, *[max(o, 0) for o in out])
        raw = rng.random(mask_shape) * 2 - 0.5 if rng.random() < 0.7 else rng.integers(0, 2, mask_shape)
        inputs["mask"] = Tensor(V.cast(np.asarray(raw, np.float64), dtype))
    return Case(opv.op, opv.version, dtype, inputs, _attrs(rng, c))


class DeformConvSpace(Space):
    """DeformConv-19 and DeformConv-22."""

    op = "DeformConv"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        for _ in range(20):
            c = _draw_config(rng)
            if c.n * c.channels * math.prod(c.spatial) <= limit:
                break
        return _build(rng, opv, dtype, c)

    def validate(self, case: Case) -> Verdict:
        return validate(case)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [
            _mutate_kernel_shape,
            _mutate_group,
            _mutate_offset_channels,
            _mutate_mask,
            _mutate_bias,
            _mutate_attr_value,
            _mutate_attr_length,
            _mutate_no_fit,
        ]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        for name in ("B", "mask"):
            if case.inputs.get(name) is not None:
                yield name, case.with_input(name, None)
        off = case.inputs["offset"].value  # type: ignore[union-attr]
        special = V.special_mask(off, case.dtype)
        if special.any():
            yield "offset-special", case.with_input("offset", V.replace_specials(off, case.dtype))
        rounded = _rounded(off, case.dtype)
        if rounded is not None:
            yield "fractional-offsets", case.with_input("offset", rounded)

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        if x.ndim >= 1 and x.shape[0] > 1:
            simpler = case.with_input("X", x[:1])
            for name in ("offset", "mask"):
                t = case.inputs.get(name)
                if t is not None and t.value.ndim and t.value.shape[0] > 1:
                    simpler = simpler.with_input(name, t.value[:1])
            yield "N=1", simpler
        for name in ("B", "mask"):
            if case.inputs.get(name) is not None:
                yield f"no {name}", case.with_input(name, None)
        if "kernel_shape" in case.attrs:
            yield "no kernel_shape", case.with_attrs(kernel_shape=None)
        off = case.inputs["offset"].value  # type: ignore[union-attr]
        if V.special_mask(off, case.dtype).any():
            yield (
                "offset without special values",
                case.with_input("offset", V.replace_specials(off, case.dtype)),
            )
        if off.size and np.any(off != 0):
            yield "zero offsets", case.with_input("offset", np.zeros_like(off))
        rounded = _rounded(off, case.dtype)
        if rounded is not None:
            yield "whole offsets", case.with_input("offset", rounded)
        w = case.inputs["W"].value  # type: ignore[union-attr]
        if w.size and np.any(w != 1):
            yield "W ones", case.with_input("W", V.cast(np.ones(w.shape), case.dtype))
        yield from value_simplifications(case)


def _rounded(off: np.ndarray, dtype: str) -> np.ndarray | None:
    """The offsets rounded to whole numbers (specials kept), or None when they are whole already."""
    f = off.astype(np.float64)
    with np.errstate(invalid="ignore"):
        frac = np.isfinite(f) & (f != np.round(f))
    if not frac.any():
        return None
    return V.cast(np.where(frac, np.round(f), f), dtype)


# ---------------------------------------------------------------------------------------------
# the validity oracle (docs/semantics.md, DeformConv)


def _ints_reason(case: Case, name: str, count: int, minimum: int) -> str | None:
    value = case.attrs.get(name)
    if value is None or len(value) == 0:
        return None
    if len(value) != count:
        return f"attr-length:{name}"
    if any(v < minimum for v in value):
        return f"attr-value:{name}"
    return None


def _geometry(case: Case) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """(spatial, kernel, dilations, strides, pads) with defaults (lengths already checked)."""
    x, w = case.main, case.inputs["W"].value  # type: ignore[union-attr]
    r = x.ndim - 2
    return (
        list(x.shape[2:]),
        list(w.shape[2:]),
        list(case.attrs.get("dilations") or [1] * r),
        list(case.attrs.get("strides") or [1] * r),
        list(case.attrs.get("pads") or [0] * (2 * r)),
    )


def _shape_reason(case: Case) -> str | None:
    x, w = case.main, case.inputs["W"].value  # type: ignore[union-attr]
    if x.ndim < 3 or x.ndim > 12:
        return "x-rank"
    if w.ndim != x.ndim:
        return "w-rank"
    given = case.attrs.get("kernel_shape")
    if given and list(given) != list(w.shape[2:]):
        return "kernel-shape-mismatch"
    if min(w.shape[2:]) < 1:
        return "kernel-empty"
    r = x.ndim - 2
    for name, count, minimum in (("dilations", r, 1), ("strides", r, 1), ("pads", 2 * r, 0)):
        reason = _ints_reason(case, name, count, minimum)
        if reason:
            return reason
    group, offset_group = case.attrs.get("group", 1), case.attrs.get("offset_group", 1)
    if group < 1:
        return "attr-value:group"
    if offset_group < 1:
        return "attr-value:offset_group"
    if w.shape[1] * group != x.shape[1]:
        return "group-channels"
    if w.shape[0] % group:
        return "group-out-channels"
    if x.shape[1] % offset_group:
        return "offset-group-channels"
    return None


def validate(case: Case) -> Verdict:
    """The spec's validity rules as docs/semantics.md reads them, and the output shape."""
    reason = _shape_reason(case)
    if reason:
        return Verdict(reason)
    x, w = case.main, case.inputs["W"].value  # type: ignore[union-attr]
    spatial, kernel, dil, stride, pads = _geometry(case)
    r = len(spatial)
    out = [
        (spatial[i] + pads[i] + pads[r + i] - (dil[i] * (kernel[i] - 1) + 1)) // stride[i] + 1
        for i in range(r)
    ]
    if min(out) < 1:
        return Verdict("kernel-does-not-fit")
    taps = math.prod(kernel)
    og = case.attrs.get("offset_group", 1)
    off = case.inputs["offset"].value  # type: ignore[union-attr]
    if off.shape != (x.shape[0], og * taps * r, *out):
        return Verdict("offset-shape")
    for name, shape in (("B", (w.shape[0],)), ("mask", (x.shape[0], og * taps, *out))):
        t = case.inputs.get(name)
        if t is not None and t.value.size and t.value.shape != shape:
            return Verdict(f"{name.lower()}-shape")
    return Verdict(None, (x.shape[0], w.shape[0], *out))


# ---------------------------------------------------------------------------------------------
# mutations


def _mutate_kernel_shape(rng: np.random.Generator, case: Case) -> Case | None:
    w = case.inputs["W"].value  # type: ignore[union-attr]
    kernel = [int(k) for k in w.shape[2:]]
    if not kernel:
        return None
    kernel[int(rng.integers(0, len(kernel)))] += 1
    return case.with_attrs(kernel_shape=kernel)


def _mutate_group(rng: np.random.Generator, case: Case) -> Case | None:
    name = str(rng.choice(["group", "offset_group"]))
    value = int(case.attrs.get(name, 1))
    return case.with_attrs(**{name: int(rng.choice([value + 1, 2 * value + 1, 0, -1]))})


def _mutate_offset_channels(rng: np.random.Generator, case: Case) -> Case | None:
    off = case.inputs["offset"].value  # type: ignore[union-attr]
    if off.ndim < 2:
        return None
    extra = V.simple((off.shape[0], 1, *off.shape[2:]), case.dtype)
    return case.with_input("offset", np.concatenate([off, extra], axis=1))


def _mutate_mask(rng: np.random.Generator, case: Case) -> Case | None:
    off = case.inputs["offset"].value  # type: ignore[union-attr]
    if off.ndim < 2:
        return None
    shape = (off.shape[0], off.shape[1] + 1, *off.shape[2:])  # offset's channel count + 1: never the mask's
    return case.with_input(
        "mask", V.simple(shape, case.dtype) if math.prod(shape) else V.simple((1,), case.dtype)
    )


def _mutate_bias(rng: np.random.Generator, case: Case) -> Case | None:
    w = case.inputs["W"].value  # type: ignore[union-attr]
    return case.with_input("B", V.simple((w.shape[0] + 1,), case.dtype))


def _mutate_attr_value(rng: np.random.Generator, case: Case) -> Case | None:
    r = case.main.ndim - 2
    name = str(rng.choice(_SPATIAL))
    default = 0 if name == "pads" else 1
    count = 2 * r if name == "pads" else r
    value = list(case.attrs.get(name) or [default] * count)
    if not value:
        return None
    value[int(rng.integers(0, count))] = -1 if name == "pads" else int(rng.choice([0, -1]))
    return case.with_attrs(**{name: value})


def _mutate_attr_length(rng: np.random.Generator, case: Case) -> Case | None:
    r = case.main.ndim - 2
    name = str(rng.choice(_SPATIAL))
    default = 0 if name == "pads" else 1
    count = 2 * r if name == "pads" else r
    value = list(case.attrs.get(name) or [default] * count)
    return case.with_attrs(**{name: [*value, default] if rng.random() < 0.5 or count <= 1 else value[:-1]})


def _mutate_no_fit(rng: np.random.Generator, case: Case) -> Case | None:
    """X cut along spatial axis 0 to fewer pixels than the kernel, with no pads or dilations: the kernel
    does not fit. The offset and mask keep their shapes but get 0 or 1 output rows along that axis (what
    an output size computed with truncating division would give)."""
    x = case.main
    w = case.inputs["W"].value  # type: ignore[union-attr]
    if x.ndim < 3 or w.ndim != x.ndim or w.shape[2] < 2:
        return None
    r = x.ndim - 2
    rows = int(rng.integers(0, 2))
    out = case.with_input("X", x[:, :, : w.shape[2] - 1]).with_attrs(pads=[0] * (2 * r), dilations=None)
    for name in ("offset", "mask"):
        t = case.inputs.get(name)
        if t is not None and t.value.ndim == x.ndim:
            shape = (*t.value.shape[:2], rows, *t.value.shape[3:])
            out = out.with_input(
                name, V.simple(shape, case.dtype) if math.prod(shape) else np.zeros(shape, t.value.dtype)
            )
    return out
