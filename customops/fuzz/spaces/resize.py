"""Case spaces of Resize (10, 11, 13, 18, 19) and Upsample (7, 9)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    Candidate,
    Space,
    Verdict,
    attr_value,
    draw_axes,
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

_SCALES = (1.0, 1.0, 2.0, 3.0, 0.5, 1.5, 0.75, 0.6, 1 / 3, 4 / 3, 1.25, 0.8, 0.7, 2.5)
_UP_SCALES = (1.0, 1.0, 2.0, 3.0, 1.5, 1.25, 2.5, 4 / 3)


def _draw_scale(rng: np.random.Generator, up_only: bool = False) -> float:
    if rng.random() < 0.2:
        low = 1.0 if up_only else 0.2
        return float(np.float32(round(float(rng.uniform(low, 3.2)), 2)))
    return float(np.float32(rng.choice(_UP_SCALES if up_only else _SCALES)))


def _draw_size(rng: np.random.Generator, n: int) -> int:
    u = rng.random()
    if u < 0.25:
        return n
    if u < 0.4:
        return 1
    if u < 0.55:
        return 2 * n
    if u < 0.65:
        return n // 2
    return int(rng.integers(0, 2 * n + 4))


def _f32(values: list[float]) -> np.ndarray:
    return np.array(values, dtype=np.float32).reshape(len(values))


def _input_optional(case: Case, name: str) -> bool:
    return any(i.name == name and i.optional for i in case.opv.inputs)


def clear_input(case: Case, name: str) -> Case:
    """``case`` without input ``name``: absent if the version makes it optional, else an empty tensor."""
    t = case.inputs.get(name)
    if _input_optional(case, name) or t is None:
        return case.with_input(name, None)
    return case.with_input(name, np.zeros(0, dtype=t.value.dtype))


# ---------------------------------------------------------------------------------------------
# Resize


class ResizeSpace(Space):
    """Resize: every attribute of the version, axes, scales or sizes in both directions, roi."""

    op = "Resize"

    def _fallback(self, case: Case) -> Case:
        """Fallback draw: scales of 1 on a small input."""
        x = case.main.reshape(-1)[:4]
        out = case.clone(attrs={k: v for k, v in case.attrs.items() if k != "axes"})
        out.inputs["X"] = Tensor(x, False)
        if "sizes" in out.inputs:
            out = clear_input(out, "sizes")
        out.inputs["scales"] = Tensor(_f32([1.0]), True)
        if out.inputs.get("roi") is not None:
            out = clear_input(out, "roi")
        return out

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        rank = draw_rank(rng)
        shape = draw_shape(rng, rank, limit)
        x = draw_values(rng, dtype, shape)
        names = [i.name for i in opv.inputs]
        attrs = draw_registry_attrs(rng, opv, skip=("axes",))
        inputs: dict[str, Tensor | None] = {n: None for n in names}
        inputs["X"] = Tensor(x)
        axes = None
        if any(a.name == "axes" for a in opv.attributes) and rng.random() < 0.35:
            axes = draw_axes(rng, rank)
            attrs["axes"] = axes
        resized = [a % rank for a in axes] if axes else list(range(rank))
        count = len(resized)
        use_sizes = "sizes" in names and rng.random() < 0.45
        keep_outer = axes is None and rank >= 3 and rng.random() < 0.5
        scales = [1.0 if keep_outer and i < 2 else _draw_scale(rng, up_only=False) for i in range(count)]
        sizes = [
            shape[a] if keep_outer and i < 2 else _draw_size(rng, shape[a]) for i, a in enumerate(resized)
        ]

        def const() -> bool:
            return bool(rng.random() < 0.6)

        if not use_sizes and attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
            del attrs["keep_aspect_ratio_policy"]  # the policy describes sizes only
        if opv.version == 10:
            inputs["scales"] = Tensor(_f32(scales), const())
        elif use_sizes:  # Resize-11 takes an empty scales tensor, later versions an empty name
            inputs["sizes"] = Tensor(index_array(sizes), const())
            if opv.version == 11:
                inputs["scales"] = Tensor(np.zeros(0, np.float32), const())
        else:
            inputs["scales"] = Tensor(_f32(scales), const())

        if "roi" in names:
            roi_input = next(i for i in opv.inputs if i.name == "roi")
            roi_elem = str(rng.choice(roi_input.types))
            coord = attrs.get(
                "coordinate_transformation_mode", opv.attr("coordinate_transformation_mode").default
            )
            roi: np.ndarray | None = None
            if coord == "tf_crop_and_resize" and (not roi_input.optional or rng.random() < 0.85):
                starts = [
                    0.0 if rng.random() < 0.5 else round(float(rng.uniform(-0.4, 0.9)), 2) for _ in resized
                ]
                ends = [
                    1.0 if rng.random() < 0.5 else round(float(rng.uniform(0.1, 1.4)), 2) for _ in resized
                ]
                roi = V.cast(starts + ends, roi_elem)
            elif coord != "tf_crop_and_resize":  # ignored: Resize-11 needs a tensor, later versions none
                if rng.random() < 0.4:
                    roi = V.cast(np.round(rng.uniform(0, 1, 2 * count), 2).tolist(), roi_elem)
                elif not roi_input.optional:
                    roi = V.cast([], roi_elem)
            if roi is not None:
                inputs["roi"] = Tensor(roi.reshape(-1), const())
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    # -- the oracle -------------------------------------------------------------------------------

    def validate(self, case: Case) -> Verdict:
        reason = enum_reason(case)
        if reason:
            return Verdict(reason)
        x = case.main
        rank = x.ndim
        mode = attr_value(case, "mode")
        if case.dtype == "string" and mode != "nearest":
            return Verdict("string-interpolation")
        if case.version == 10:
            return _validate_upsample_like(case, present(case, "scales"), at_least_one=False)
        axes, why = norm_axes(case.attrs.get("axes"), rank)
        if why:
            return Verdict(why)
        assert axes is not None
        roi, scales, sizes = present(case, "roi"), present(case, "scales"), present(case, "sizes")
        if mode == "cubic" and not math.isfinite(float(attr_value(case, "cubic_coeff_a"))):
            return Verdict("cubic_coeff_a-nonfinite")
        if scales is not None and sizes is not None:
            return Verdict("scales-and-sizes")
        if scales is None and sizes is None:
            return Verdict("no-scales-or-sizes")
        in_lens = [x.shape[i] for i in axes]
        policy = attr_value(case, "keep_aspect_ratio_policy") if case.version >= 18 else "stretch"
        if scales is not None:
            out_lens, fractions, why = _lengths_from_scales(scales, in_lens, policy)
        else:
            assert sizes is not None
            out_lens, fractions, why = _lengths_from_sizes(sizes, in_lens, policy)
        if why:
            return Verdict(why)
        out_shape = list(x.shape)
        for axis, m in zip(axes, out_lens, strict=True):
            out_shape[axis] = m
        empty = math.prod(out_shape) == 0
        if not empty and any(n == 0 and m > 0 for n, m in zip(in_lens, out_lens, strict=True)):
            return Verdict("resize-empty-axis")
        why = _crop_reason(case, roi, empty, in_lens, out_lens, fractions)
        if why:
            return Verdict(why)
        return Verdict(None, tuple(out_shape))

    # -- invalid configurations -------------------------------------------------------------------

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        out = [mutate_enum_attr, _mutate_scales_length, _mutate_scale_nonpositive]
        if opv.version >= 11:
            out += [_mutate_both_given, _mutate_neither_given, _mutate_size_negative, _mutate_roi_length]
        if opv.version >= 18:
            out += [_mutate_axes_repeated, _mutate_axis_out_of_range, _mutate_scales_with_policy]
        return out

    # -- triage -----------------------------------------------------------------------------------

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        for label, simpler in generic_features(case):
            if label == "axes":
                expanded = _without_axes(case)
                if expanded is not None:
                    yield label, expanded
                continue
            yield label, simpler
        coord = attr_value(case, "coordinate_transformation_mode") if case.version > 10 else None
        if present(case, "roi") is not None and coord != "tf_crop_and_resize":
            yield "roi", clear_input(case, "roi")

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        yield from _shape_simplifications(case)
        for name in list(case.attrs):
            if name == "axes":
                expanded = _without_axes(case)
                if expanded is not None:
                    yield "no axes", expanded
            elif not case.opv.attr(name).required:
                yield f"default {name}", case.with_attrs(**{name: None})
        yield from value_simplifications(case)
        for name in ("roi", "scales", "sizes"):
            t = case.inputs.get(name)
            if t is not None and t.value.size == 0:
                yield f"no empty {name}", clear_input(case, name)
        yield from _scale_simplifications(case, "scales")
        sizes = present(case, "sizes")
        if sizes is not None:
            axes, _ = norm_axes(case.attrs.get("axes"), case.main.ndim)
            for i, s in enumerate(sizes.tolist()):
                if axes is None or i >= len(axes):
                    break
                n = case.main.shape[axes[i]]
                for target in (n, 1, 2 * n):
                    if target < s:
                        new = sizes.copy()
                        new[i] = target
                        yield f"sizes[{i}]={target}", case.with_input("sizes", new)
        roi = present(case, "roi")
        if roi is not None:
            half = roi.size // 2
            for i, v in enumerate(roi.astype(np.float64).tolist()):
                target = 0.0 if i < half else 1.0
                if v != target:
                    new = roi.copy()
                    new[i] = target
                    yield f"roi[{i}]={target:g}", case.with_input("roi", new)
        for name, t in case.inputs.items():
            if t is not None and t.const and name != "X":
                yield f"{name} as input", case.with_input(name, t.value, const=False)


_Lengths = tuple[list[int], list[Fraction], str | None]
"""Output lengths and scales of the resized axes, and the reason they cannot be computed (then both are
empty) or None."""


def _lengths_from_scales(scales: np.ndarray, in_lens: list[int], policy: str) -> _Lengths:
    """Resize-11 on, axes of lengths ``in_lens`` resized by ``scales``: floor(scale * n); scales must be
    one per axis, finite and positive, and go with the stretch policy only."""
    if scales.size != len(in_lens):
        return [], [], "scales-length"
    values = [float(s) for s in scales.tolist()]
    if not all(math.isfinite(s) and s > 0 for s in values):
        return [], [], "scale-nonpositive"
    if policy != "stretch":
        return [], [], "scales-with-policy"
    fractions = [Fraction(s) for s in values]
    return [math.floor(f * n) for f, n in zip(fractions, in_lens, strict=True)], fractions, None


def _lengths_from_sizes(sizes: np.ndarray, in_lens: list[int], policy: str) -> _Lengths:
    """Resize-11 on, axes of lengths ``in_lens`` resized to ``sizes`` (one per axis, none negative): the
    sizes themselves when stretching, else one scale for every axis (the smallest ratio for
    not_larger, the largest for not_smaller) and round(scale * n), halves up."""
    if sizes.size != len(in_lens):
        return [], [], "sizes-length"
    wanted = [int(s) for s in sizes.tolist()]
    if any(s < 0 for s in wanted):
        return [], [], "size-negative"
    if policy == "stretch":
        fractions = [Fraction(m, n) if n else Fraction(1) for m, n in zip(wanted, in_lens, strict=True)]
        return wanted, fractions, None
    ratios = [Fraction(m, n) for m, n in zip(wanted, in_lens, strict=True) if n]
    one = (min if policy == "not_larger" else max)(ratios) if ratios else Fraction(1)
    return [math.floor(one * n + Fraction(1, 2)) for n in in_lens], [one] * len(in_lens), None


def _crop_reason(
    case: Case,
    roi: np.ndarray | None,
    empty: bool,
    in_lens: list[int],
    out_lens: list[int],
    fractions: list[Fraction],
) -> str | None:
    """Why tf_crop_and_resize cannot run: a roi of the wrong length or not finite, or a crop that reads
    outside a non-empty input where the element type cannot hold the extrapolation value; else None."""
    count = len(in_lens)
    coord = attr_value(case, "coordinate_transformation_mode")
    bounds = [(0.0, 1.0)] * count
    if coord == "tf_crop_and_resize" and roi is not None:
        if roi.size != 2 * count:
            return "roi-length"
        r = roi.astype(np.float64).tolist()
        if not all(math.isfinite(v) for v in r):
            return "roi-nonfinite"
        bounds = list(zip(r[:count], r[count:], strict=True))
    extrapolation = float(attr_value(case, "extrapolation_value"))
    unfillable = case.dtype == "string" or (
        (V.is_int(case.dtype) or case.dtype == "bool") and math.isnan(extrapolation)
    )
    if coord == "tf_crop_and_resize" and not empty and unfillable:
        for n, m, f, (start, end) in zip(in_lens, out_lens, fractions, bounds, strict=True):
            if _crop_leaves_input(n, m, f, start, end):
                return "extrapolation-type"
    return None


def _crop_leaves_input(n: int, m: int, scale: Fraction, start: float, end: float) -> bool:
    """Whether tf_crop_and_resize reads outside [0, n - 1] on an axis of n -> m (the spec's formula)."""
    if m == 0:
        return False
    fs, fe = Fraction(start), Fraction(end)
    if m == 1:
        xs = [(fs + fe) / 2 * (n - 1)]
    else:
        width = scale * n
        xs = [fs * (n - 1), fs * (n - 1) + (m - 1) * (fe - fs) * (n - 1) / (width - 1)]
    return any(v < 0 or v > n - 1 for v in xs)


def _validate_upsample_like(
    case: Case, scales: np.ndarray | list[float] | None, at_least_one: bool
) -> Verdict:
    """Resize-10 and Upsample: one scale per axis, positive (Upsample: at least 1), floor(n * scale)."""
    x = case.main
    if scales is None:
        return Verdict("no-scales")
    values = [float(s) for s in np.asarray(scales, dtype=np.float64).ravel().tolist()]
    if len(values) != x.ndim:
        return Verdict("scales-length")
    if not all(math.isfinite(s) and s > 0 for s in values):
        return Verdict("scale-nonpositive")
    if at_least_one and any(s < 1 for s in values):
        return Verdict("upsample-scale-below-1")
    out_shape = tuple(math.floor(Fraction(s) * n) for s, n in zip(values, x.shape, strict=True))
    if math.prod(out_shape) and any(n == 0 and m > 0 for n, m in zip(x.shape, out_shape, strict=True)):
        return Verdict("resize-empty-axis")
    return Verdict(None, out_shape)


def _resized(case: Case) -> tuple[list[int], list[str]]:
    """Resized axes (normalized) and the names of the per-axis inputs present (scales/sizes/roi)."""
    axes, _ = norm_axes(case.attrs.get("axes"), case.main.ndim)
    names = [n for n in ("scales", "sizes", "roi") if present(case, n) is not None]
    return axes or [], names


def _without_axes(case: Case) -> Case | None:
    """``case`` without the axes attribute, every other axis given the identity (scale 1, its own size,
    roi [0, 1])."""
    rank = case.main.ndim
    axes, why = norm_axes(case.attrs.get("axes"), rank)
    if why or axes is None:
        return None
    out = case.with_attrs(axes=None)
    for name in ("scales", "sizes", "roi"):
        v = present(case, name)
        if v is None:
            continue
        if name == "roi":
            if v.size != 2 * len(axes):
                return None
            full = np.concatenate([np.zeros(rank), np.ones(rank)]).astype(v.dtype)
            for i, a in enumerate(axes):
                full[a], full[rank + a] = v[i], v[len(axes) + i]
        else:
            if v.size != len(axes):
                return None
            full = (np.ones(rank) if name == "scales" else np.array(case.main.shape)).astype(v.dtype)
            for i, a in enumerate(axes):
                full[a] = v[i]
        out = out.with_input(name, full)
    return out


def _drop_entry(v: np.ndarray, i: int, per_axis: int) -> np.ndarray:
    if v.size == 2 * per_axis:  # roi: starts then ends
        return np.delete(v, [i, per_axis + i])
    return np.delete(v, i)


def _shape_simplifications(case: Case) -> Iterator[Candidate]:
    """Drop an axis of X (with its per-axis entries), halve an axis, or shorten it by one."""
    x = case.main
    rank = x.ndim
    axes, names = _resized(case)
    if case.op == "Upsample" and case.version == 7:
        names = []
    for k in reversed(range(rank)):
        if rank <= 1:
            break
        out = case.with_input("X", drop_main_axis(x, k, case.dtype))
        if "axes" in case.attrs:
            if k in axes:
                if len(axes) == 1:
                    continue
                i = axes.index(k)
                for name in names:
                    out = out.with_input(name, _drop_entry(present(case, name), i, len(axes)))  # type: ignore[arg-type]
                new_axes = [a - (a > k) for a in axes if a != k]
            else:
                new_axes = [a - (a > k) for a in axes]
            out = out.with_attrs(axes=new_axes)
        else:
            for name in names:
                out = out.with_input(name, _drop_entry(present(case, name), k, rank))  # type: ignore[arg-type]
            if case.op == "Upsample" and case.version == 7:
                out = out.with_attrs(scales=[s for i, s in enumerate(case.attrs["scales"]) if i != k])
        yield f"drop axis {k}", out
    for k in range(rank):
        n = x.shape[k]
        for length in sorted({1, n // 2, n - 1}):
            if 0 < length < n:
                yield f"axis {k} to {length}", case.with_input("X", cut_main_axis(x, k, length))


def _scale_simplifications(case: Case, name: str) -> Iterator[Candidate]:
    scales = present(case, name) if name in case.inputs else None
    if scales is None:
        return
    for i, s in enumerate(scales.tolist()):
        for target in (1.0, 2.0 if s > 1 else 0.5):
            if s != target:
                new = scales.copy()
                new[i] = target
                yield f"{name}[{i}]={target:g}", case.with_input(name, new)


# -- mutations into invalid configurations --------------------------------------------------------


def _given(case: Case) -> str | None:
    if present(case, "scales") is not None:
        return "scales"
    if present(case, "sizes") is not None:
        return "sizes"
    return None


def _mutate_scales_length(rng: np.random.Generator, case: Case) -> Case | None:
    name = _given(case)
    if name is None:
        return None
    v = present(case, name)
    assert v is not None
    longer = np.concatenate([v, v[:1] if v.size else np.ones(1, v.dtype)])
    return case.with_input(name, longer if rng.random() < 0.5 or v.size <= 1 else v[:-1])


def _mutate_scale_nonpositive(rng: np.random.Generator, case: Case) -> Case | None:
    v = present(case, "scales")
    if v is None or v.size == 0:
        return None
    new = v.copy()
    new[int(rng.integers(0, v.size))] = rng.choice([0.0, -1.0, -0.5, np.nan, np.inf])
    return case.with_input("scales", new)


def _mutate_both_given(rng: np.random.Generator, case: Case) -> Case | None:
    axes, _ = norm_axes(case.attrs.get("axes"), case.main.ndim)
    if axes is None:
        return None
    if present(case, "scales") is not None:
        return case.with_input("sizes", index_array([case.main.shape[a] for a in axes]), const=True)
    return case.with_input("scales", _f32([1.0] * len(axes)), const=True)


def _mutate_neither_given(rng: np.random.Generator, case: Case) -> Case | None:
    out = case
    for name in ("scales", "sizes"):
        if out.inputs.get(name) is not None:
            out = clear_input(out, name)
    if case.version == 11:
        out = out.with_input("scales", np.zeros(0, np.float32), const=True)
    return out


def _mutate_size_negative(rng: np.random.Generator, case: Case) -> Case | None:
    v = present(case, "sizes")
    if v is None:
        return None
    new = v.copy()
    new[int(rng.integers(0, v.size))] = -int(rng.integers(1, 4))
    return case.with_input("sizes", new)


def _mutate_roi_length(rng: np.random.Generator, case: Case) -> Case | None:
    roi = present(case, "roi")
    if attr_value(case, "coordinate_transformation_mode") != "tf_crop_and_resize" or roi is None:
        return None
    return case.with_input("roi", np.concatenate([roi, roi[:1]]))


def _mutate_scales_with_policy(rng: np.random.Generator, case: Case) -> Case | None:
    if present(case, "scales") is None:
        return None
    return case.with_attrs(keep_aspect_ratio_policy=str(rng.choice(["not_larger", "not_smaller"])))


def _mutate_axes_repeated(rng: np.random.Generator, case: Case) -> Case | None:
    axes = case.attrs.get("axes")
    if not axes:
        return None
    i = int(rng.integers(0, len(axes)))
    dup = axes[i] - case.main.ndim if axes[i] >= 0 else axes[i] + case.main.ndim
    out = case.with_attrs(axes=[*axes, dup])
    for name in ("scales", "sizes", "roi"):
        v = present(case, name)
        if v is None:
            continue
        if name == "roi":
            n = len(axes)
            v = np.concatenate([v[:n], v[i : i + 1], v[n:], v[n + i : n + i + 1]])
        else:
            v = np.concatenate([v, v[i : i + 1]])
        out = out.with_input(name, v)
    return out


def _mutate_axis_out_of_range(rng: np.random.Generator, case: Case) -> Case | None:
    axes = case.attrs.get("axes")
    if not axes:
        return None
    rank = case.main.ndim
    new = list(axes)
    new[int(rng.integers(0, len(new)))] = int(rng.choice([rank, rank + 1, -rank - 1]))
    return case.with_attrs(axes=new)


# ---------------------------------------------------------------------------------------------
# Upsample


class UpsampleSpace(Space):
    """Upsample-7 (scales attribute) and Upsample-9 (scales input): one factor >= 1 per axis."""

    op = "Upsample"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        rank = draw_rank(rng)
        shape = draw_shape(rng, rank, limit)
        x = draw_values(rng, dtype, shape)
        attrs = draw_registry_attrs(rng, opv)
        scales = [_draw_scale(rng, up_only=True) for _ in range(rank)]
        inputs: dict[str, Tensor | None] = {"X": Tensor(x)}
        if opv.version == 7:
            attrs["scales"] = scales
        else:
            inputs["scales"] = Tensor(_f32(scales), bool(rng.random() < 0.6))
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def _scales(self, case: Case) -> np.ndarray | None:
        if case.version == 7:
            s = case.attrs.get("scales")
            return None if s is None else np.array(s, dtype=np.float32)
        return present(case, "scales")

    def validate(self, case: Case) -> Verdict:
        reason = enum_reason(case)
        if reason:
            return Verdict(reason)
        if case.dtype == "string" and attr_value(case, "mode") != "nearest":
            return Verdict("string-interpolation")
        return _validate_upsample_like(case, self._scales(case), at_least_one=True)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [mutate_enum_attr, _mutate_upsample_scales, _mutate_upsample_scales, _mutate_upsample_length]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        yield from _shape_simplifications(case)
        for name in list(case.attrs):
            if not case.opv.attr(name).required:
                yield f"default {name}", case.with_attrs(**{name: None})
        yield from value_simplifications(case)
        if case.version == 7:
            scales = case.attrs["scales"]
            for i, s in enumerate(scales):
                for target in (1.0, 2.0):
                    if s != target:
                        new = list(scales)
                        new[i] = target
                        yield f"scales[{i}]={target:g}", case.with_attrs(scales=new)
        else:
            yield from _scale_simplifications(case, "scales")
            t = case.inputs.get("scales")
            if t is not None and t.const:
                yield "scales as input", case.with_input("scales", t.value, const=False)


def _set_upsample_scales(case: Case, values: list[float]) -> Case:
    if case.version == 7:
        return case.with_attrs(scales=[float(np.float32(v)) for v in values])
    return case.with_input("scales", _f32(values))


def _mutate_upsample_scales(rng: np.random.Generator, case: Case) -> Case | None:
    scales = UpsampleSpace()._scales(case)
    if scales is None or scales.size == 0:
        return None
    new = [float(s) for s in scales.tolist()]
    new[int(rng.integers(0, len(new)))] = float(rng.choice([0.5, 0.75, 0.0, -1.0, np.nan]))
    return _set_upsample_scales(case, new)


def _mutate_upsample_length(rng: np.random.Generator, case: Case) -> Case | None:
    scales = UpsampleSpace()._scales(case)
    if scales is None:
        return None
    new = [float(s) for s in scales.tolist()]
    new = [*new, 1.0] if rng.random() < 0.5 or len(new) <= 1 else new[:-1]
    return _set_upsample_scales(case, new)
