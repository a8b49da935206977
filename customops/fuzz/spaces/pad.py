"""Case spaces of Pad (2, 11, 13, 18, 19, 21, 23, 24, 25) and CenterCropPad (18)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    Candidate,
    Space,
    Verdict,
    attr_value,
    draw_axes,
    draw_float_attr,
    draw_rank,
    draw_registry_attrs,
    draw_shape,
    draw_values,
    enum_reason,
    generic_features,
    index_array,
    mutate_enum_attr,
    norm_axes,
    present,
)
from customops.fuzz.spaces.simplifications import cut_main_axis, drop_main_axis, value_simplifications
from customops.registry import OpVersion


def _draw_pad(rng: np.random.Generator, n: int) -> int:
    u = rng.random()
    if u < 0.35:
        return 0
    if u < 0.62:
        return int(rng.integers(1, 4))
    if u < 0.85:
        return -int(rng.integers(1, max(n, 1) + 1))
    return int(rng.integers(max(n, 1), n + 4))


def _index_elem(case: Case, name: str) -> str:
    t = case.inputs.get(name)
    return t.elem if t is not None else "int64"


# ---------------------------------------------------------------------------------------------
# Pad


class PadSpace(Space):
    """Pad: every mode of the version, pads with negative entries, constant values, axes (18+)."""

    op = "Pad"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        rank = draw_rank(rng)
        shape = draw_shape(rng, rank, limit)
        x = draw_values(rng, dtype, shape)
        attrs = draw_registry_attrs(rng, opv, skip=("pads", "value"))
        names = [i.name for i in opv.inputs]
        inputs: dict[str, Tensor | None] = {n: None for n in names}
        inputs["data"] = Tensor(x)
        axes = None
        if "axes" in names and rng.random() < 0.35:
            axes = draw_axes(rng, rank)
            elem = str(rng.choice(next(i for i in opv.inputs if i.name == "axes").types))
            inputs["axes"] = Tensor(index_array(axes, elem), bool(rng.random() < 0.6))
        padded = [a % rank for a in axes] if axes else list(range(rank))
        begins = [_draw_pad(rng, shape[a]) for a in padded]
        ends = [_draw_pad(rng, shape[a]) for a in padded]
        for i, a in enumerate(padded):  # keep every output length >= 0
            ends[i] = max(ends[i], -shape[a] - begins[i])
        pads = begins + ends
        if opv.version == 2:
            attrs["pads"] = pads
            if rng.random() < 0.5:
                attrs["value"] = draw_float_attr(rng, opv.attr("value"))
        else:
            inputs["pads"] = Tensor(index_array(pads), bool(rng.random() < 0.6))
            if rng.random() < 0.45:
                inputs["constant_value"] = Tensor(draw_values(rng, dtype, ()), bool(rng.random() < 0.6))
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def _pads(self, case: Case) -> np.ndarray | None:
        if case.version == 2:
            p = case.attrs.get("pads")
            return None if p is None else np.array(p, dtype=np.int64)
        t = case.inputs.get("pads")
        return None if t is None else t.value

    def validate(self, case: Case) -> Verdict:
        reason = enum_reason(case)
        if reason:
            return Verdict(reason)
        x = case.main
        rank = x.ndim
        pads = self._pads(case)
        if pads is None:
            return Verdict("pads-missing")
        axes, why = norm_axes(present(case, "axes"), rank)
        if why:
            return Verdict(why)
        assert axes is not None
        values = [int(v) for v in pads.tolist()]
        if len(values) != 2 * len(axes):
            return Verdict("pads-length")
        begins, ends = [0] * rank, [0] * rank
        for i, a in enumerate(axes):
            begins[a], ends[a] = values[i], values[len(axes) + i]
        out = tuple(n + b + e for n, b, e in zip(x.shape, begins, ends, strict=True))
        if any(m < 0 for m in out):
            return Verdict("pads-negative-size")
        if attr_value(case, "mode") != "constant":  # docs/semantics.md: even when the output is empty
            for n, b, e in zip(x.shape, begins, ends, strict=True):
                kept = n - max(0, -b) - max(0, -e)
                if (b > 0 or e > 0) and kept <= 0:
                    return Verdict("pad-empty-axis")
        cv = present(case, "constant_value")
        if cv is not None and cv.size != 1:
            return Verdict("constant-value-shape")
        return Verdict(None, out)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        out = [mutate_enum_attr, _mutate_pads_length, _mutate_pads_negative_size, _mutate_pad_empty_axis]
        if any(i.name == "axes" for i in opv.inputs):
            out += [_mutate_pad_axes]
        return out

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        if present(case, "constant_value") is not None:
            yield "constant_value", case.with_input("constant_value", None)
        if present(case, "axes") is not None:
            expanded = _pad_without_axes(self, case)
            if expanded is not None:
                yield "axes", expanded

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        rank = x.ndim
        pads = self._pads(case)
        axes, _ = norm_axes(present(case, "axes"), rank)
        if pads is not None and axes is not None and pads.size == 2 * len(axes):
            for k in reversed(range(rank)):
                if rank <= 1:
                    break
                out = case.with_input("data", drop_main_axis(x, k, case.dtype))
                if present(case, "axes") is not None:
                    if k in axes:
                        if len(axes) == 1:
                            continue
                        i = axes.index(k)
                        new_pads = np.delete(pads, [i, len(axes) + i])
                        new_axes = [a - (a > k) for a in axes if a != k]
                    else:
                        new_pads, new_axes = pads, [a - (a > k) for a in axes]
                    out = out.with_input("axes", index_array(new_axes, _index_elem(case, "axes")))
                else:
                    new_pads = np.delete(pads, [k, rank + k])
                out = self._with_pads(out, new_pads)
                yield f"drop axis {k}", out
        for k in range(rank):
            n = x.shape[k]
            for length in sorted({1, n // 2, n - 1}):
                if 0 < length < n:
                    yield f"axis {k} to {length}", case.with_input("data", cut_main_axis(x, k, length))
        if present(case, "axes") is not None:
            expanded = _pad_without_axes(self, case)
            if expanded is not None:
                yield "no axes", expanded
        for name in list(case.attrs):
            if not case.opv.attr(name).required:
                yield f"default {name}", case.with_attrs(**{name: None})
        if case.inputs.get("constant_value") is not None:
            yield "no constant_value", case.with_input("constant_value", None)
        yield from value_simplifications(case)
        if pads is not None:
            for i, v in enumerate(pads.tolist()):
                for target in sorted({0, int(np.sign(v)), v // 2}, key=abs):
                    if abs(target) < abs(v):
                        new = pads.copy()
                        new[i] = target
                        yield f"pads[{i}]={target}", self._with_pads(case, new)
        for name, t in case.inputs.items():
            if t is not None and t.const and name != "data":
                yield f"{name} as input", case.with_input(name, t.value, const=False)

    def _with_pads(self, case: Case, pads: np.ndarray) -> Case:
        if case.version == 2:
            return case.with_attrs(pads=[int(v) for v in pads.tolist()])
        return case.with_input("pads", np.asarray(pads, dtype=np.int64))


def _pad_without_axes(space: PadSpace, case: Case) -> Case | None:
    rank = case.main.ndim
    axes, why = norm_axes(present(case, "axes"), rank)
    pads = space._pads(case)
    if why or axes is None or pads is None or pads.size != 2 * len(axes):
        return None
    full = np.zeros(2 * rank, dtype=np.int64)
    for i, a in enumerate(axes):
        full[a], full[rank + a] = pads[i], pads[len(axes) + i]
    return space._with_pads(case.with_input("axes", None), full)


def _mutate_pads_length(rng: np.random.Generator, case: Case) -> Case | None:
    space = PadSpace()
    pads = space._pads(case)
    if pads is None:
        return None
    new = np.concatenate([pads, [0]]) if rng.random() < 0.5 or pads.size == 0 else pads[:-1]
    return space._with_pads(case, new)


def _mutate_pads_negative_size(rng: np.random.Generator, case: Case) -> Case | None:
    space = PadSpace()
    pads = space._pads(case)
    axes, _ = norm_axes(present(case, "axes"), case.main.ndim)
    if pads is None or axes is None or pads.size != 2 * len(axes) or not axes:
        return None
    i = int(rng.integers(0, len(axes)))
    n = case.main.shape[axes[i]]
    new = pads.copy()
    new[i] = -(n + max(int(new[len(axes) + i]), 0) + int(rng.integers(1, 3)))
    return space._with_pads(case, new)


def _mutate_pad_empty_axis(rng: np.random.Generator, case: Case) -> Case | None:
    space = PadSpace()
    pads = space._pads(case)
    axes, _ = norm_axes(present(case, "axes"), case.main.ndim)
    if pads is None or axes is None or pads.size != 2 * len(axes) or not axes:
        return None
    modes = [m for m in case.opv.attr("mode").allowed or () if m != "constant"]
    i = int(rng.integers(0, len(axes)))
    n = case.main.shape[axes[i]]
    new = pads.copy()
    new[i], new[len(axes) + i] = -n, int(rng.integers(1, 3))
    return space._with_pads(case, new).with_attrs(mode=str(rng.choice(modes)))


def _mutate_pad_axes(rng: np.random.Generator, case: Case) -> Case | None:
    rank = case.main.ndim
    space = PadSpace()
    pads = space._pads(case)
    axes = present(case, "axes")
    if pads is None:
        return None
    elem = _index_elem(case, "axes")
    if rng.random() < 0.5:  # an axis twice
        base = [int(a) for a in axes.tolist()] if axes is not None else [0]
        if axes is None:
            pads = np.array([pads[0], pads[rank]]) if pads.size == 2 * rank else np.zeros(2, np.int64)
        n = len(base)
        dup = base[0] - rank if base[0] >= 0 else base[0] + rank
        new_pads = np.concatenate([pads[:n], pads[:1], pads[n:], pads[n : n + 1]])
        return space._with_pads(case.with_input("axes", index_array([*base, dup], elem)), new_pads)
    base = [int(a) for a in axes.tolist()] if axes is not None else list(range(rank))
    base[int(rng.integers(0, len(base)))] = int(rng.choice([rank, rank + 2, -rank - 1]))
    return case.with_input("axes", index_array(base, elem))


# ---------------------------------------------------------------------------------------------
# CenterCropPad


class CenterCropPadSpace(Space):
    """CenterCropPad: target sizes below, at and above each axis length, axes with negative values,
    shape as int32 or int64, constant or not."""

    op = "CenterCropPad"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        rank = draw_rank(rng)
        shape = draw_shape(rng, rank, limit)
        x = draw_values(rng, dtype, shape)
        attrs: dict = {}
        axes = None
        if rng.random() < 0.4:
            axes = draw_axes(rng, rank)
            attrs["axes"] = axes
        chosen = [a % rank for a in axes] if axes else list(range(rank))
        targets = [shape[a] if rng.random() < 0.3 else int(rng.integers(0, 2 * shape[a] + 3)) for a in chosen]
        elem = str(rng.choice(opv.inputs[1].types))
        inputs: dict[str, Tensor | None] = {
            "input_data": Tensor(x),
            "shape": Tensor(index_array(targets, elem), bool(rng.random() < 0.6)),
        }
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def validate(self, case: Case) -> Verdict:
        x = case.main
        axes, why = norm_axes(case.attrs.get("axes"), x.ndim)
        if why:
            return Verdict(why)
        assert axes is not None
        t = case.inputs.get("shape")
        if t is None:
            return Verdict("shape-missing")
        targets = [int(v) for v in t.value.tolist()]
        if len(targets) != len(axes):
            return Verdict("shape-length")
        if any(v < 0 for v in targets):
            return Verdict("shape-negative")
        out = list(x.shape)
        for a, v in zip(axes, targets, strict=True):
            out[a] = v
        return Verdict(None, tuple(out))

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [_mutate_ccp_length, _mutate_ccp_negative, _mutate_ccp_axes]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        for label, simpler in generic_features(case):
            if label == "axes":
                expanded = _ccp_without_axes(case)
                if expanded is not None:
                    yield label, expanded
                continue
            yield label, simpler

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        rank = x.ndim
        t = case.inputs["shape"]
        assert t is not None
        targets = [int(v) for v in t.value.tolist()]
        axes, _ = norm_axes(case.attrs.get("axes"), rank)
        if axes is not None and len(targets) == len(axes):
            for k in reversed(range(rank)):
                if rank <= 1:
                    break
                out = case.with_input("input_data", drop_main_axis(x, k, case.dtype))
                if "axes" in case.attrs:
                    if k in axes:
                        if len(axes) == 1:
                            continue
                        i = axes.index(k)
                        new_targets = targets[:i] + targets[i + 1 :]
                        new_axes = [a - (a > k) for a in axes if a != k]
                    else:
                        new_targets, new_axes = targets, [a - (a > k) for a in axes]
                    out = out.with_attrs(axes=new_axes)
                else:
                    new_targets = targets[:k] + targets[k + 1 :]
                out = out.with_input("shape", index_array(new_targets, t.elem))
                yield f"drop axis {k}", out
            for i, a in enumerate(axes):
                n = x.shape[a]
                for target in sorted({n, n + 1, max(n - 1, 0)}, key=lambda v: abs(v - n)):
                    if abs(target - n) < abs(targets[i] - n):
                        new = list(targets)
                        new[i] = target
                        yield f"shape[{i}]={target}", case.with_input("shape", index_array(new, t.elem))
        for k in range(rank):
            n = x.shape[k]
            for length in sorted({1, n // 2, n - 1}):
                if 0 < length < n:
                    yield f"axis {k} to {length}", case.with_input("input_data", cut_main_axis(x, k, length))
        if "axes" in case.attrs:
            expanded = _ccp_without_axes(case)
            if expanded is not None:
                yield "no axes", expanded
        yield from value_simplifications(case)
        if t.const:
            yield "shape as input", case.with_input("shape", t.value, const=False)


def _ccp_without_axes(case: Case) -> Case | None:
    x = case.main
    axes, why = norm_axes(case.attrs.get("axes"), x.ndim)
    t = case.inputs["shape"]
    if why or axes is None or t is None or t.value.size != len(axes):
        return None
    full = list(x.shape)
    for a, v in zip(axes, t.value.tolist(), strict=True):
        full[a] = int(v)
    return case.with_attrs(axes=None).with_input("shape", index_array(full, t.elem))


def _mutate_ccp_length(rng: np.random.Generator, case: Case) -> Case | None:
    t = case.inputs["shape"]
    assert t is not None
    v = [int(a) for a in t.value.tolist()]
    v = [*v, 1] if rng.random() < 0.5 or len(v) <= 1 else v[:-1]
    return case.with_input("shape", index_array(v, t.elem))


def _mutate_ccp_negative(rng: np.random.Generator, case: Case) -> Case | None:
    t = case.inputs["shape"]
    assert t is not None
    if t.value.size == 0:
        return None
    v = [int(a) for a in t.value.tolist()]
    v[int(rng.integers(0, len(v)))] = -int(rng.integers(1, 4))
    return case.with_input("shape", index_array(v, t.elem))


def _mutate_ccp_axes(rng: np.random.Generator, case: Case) -> Case | None:
    rank = case.main.ndim
    t = case.inputs["shape"]
    assert t is not None
    axes = list(case.attrs.get("axes") or range(rank))
    targets = [int(a) for a in t.value.tolist()]
    if len(targets) != len(axes):
        return None
    if rng.random() < 0.5:
        dup = axes[0] - rank if axes[0] >= 0 else axes[0] + rank
        return case.with_attrs(axes=[*axes, dup]).with_input(
            "shape", index_array([*targets, targets[0]], t.elem)
        )
    axes[int(rng.integers(0, len(axes)))] = int(rng.choice([rank, rank + 1, -rank - 1]))
    return case.with_attrs(axes=axes)
