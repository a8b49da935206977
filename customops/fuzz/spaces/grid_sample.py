"""Case space of GridSample (16, 20, 22): 1 to 3 spatial axes (16: 2), every mode, padding mode and
align_corners, grids inside, on and far outside the borders, NaN and ±Inf in the grid, axes of length 0."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    IN_LIMIT,
    OUT_LIMIT,
    Candidate,
    Space,
    Verdict,
    attr_value,
    draw_dim,
    draw_registry_attrs,
    draw_values,
    enum_reason,
    generic_features,
    mutate_enum_attr,
)
from customops.fuzz.spaces.simplifications import cut_main_axis, drop_main_axis, value_simplifications
from customops.registry import OpVersion

_GRID_SPECIALS = (math.nan, math.inf, -math.inf, 1e30, -1e30)


def _grid_values(rng: np.random.Generator, shape: tuple[int, ...], elem: str) -> np.ndarray:
    """Normalized coordinates: mostly in [-1.3, 1.3] on a coarse lattice (borders and pixel centres hit
    exactly), sometimes far outside, sometimes NaN or ±Inf."""
    size = math.prod(shape)
    u = rng.random()
    if u < 0.45:
        values = np.round(rng.uniform(-1.3, 1.3, size) * 8) / 8
    elif u < 0.8:
        values = rng.uniform(-1.2, 1.2, size)
    else:
        values = rng.uniform(-6.0, 6.0, size)
    if size and rng.random() < 0.2:
        values[int(rng.integers(0, size))] = float(rng.choice([-1.0, 1.0, 0.0]))
    if size and rng.random() < 0.12:
        values[int(rng.integers(0, size))] = float(rng.choice(_GRID_SPECIALS))
    return V.cast(values.reshape(shape), elem)


def _grid(case: Case) -> np.ndarray:
    t = case.inputs["grid"]
    assert t is not None
    return t.value


def _undefined_locations(case: Case) -> bool:
    """Whether the grid has a location without value: NaN, or ±Inf under reflection."""
    g = _grid(case).astype(np.float64)
    if attr_value(case, "padding_mode") == "reflection":
        return bool((~np.isfinite(g)).any())
    return bool(np.isnan(g).any())


class GridSampleSpace(Space):
    """GridSample 16, 20, 22."""

    op = "GridSample"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        r = 2 if opv.version == 16 else int(rng.choice([1, 2, 3], p=[0.2, 0.6, 0.2]))
        n = int(rng.choice([0, 1, 1, 1, 2], p=[0.04, 0.32, 0.32, 0.16, 0.16]))
        c = int(rng.choice([0, 1, 2, 3], p=[0.04, 0.46, 0.3, 0.2]))
        spatial = [draw_dim(rng, 5, zero=0.03, one=0.22) for _ in range(r)]
        out = [draw_dim(rng, 4, zero=0.03, one=0.22) for _ in range(r)]
        while n * c * math.prod(spatial) > limit and max(spatial) > 1:
            i = int(np.argmax(spatial))
            spatial[i] //= 2
        x = draw_values(rng, dtype, (n, c, *spatial))
        grid_elem = str(rng.choice(opv.inputs[1].types))
        grid = _grid_values(rng, (n, *out, r), grid_elem)
        attrs = draw_registry_attrs(rng, opv)
        if dtype == "string":
            attrs["mode"] = "nearest"
        inputs: dict[str, Tensor | None] = {"X": Tensor(x), "grid": Tensor(grid, bool(rng.random() < 0.3))}
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def validate(self, case: Case) -> Verdict:
        reason = enum_reason(case)
        if reason:
            return Verdict(reason)
        x, g = case.main, _grid(case)
        if case.version == 16 and x.ndim != 4:
            return Verdict("x-rank-16")
        if x.ndim < 3:
            return Verdict("x-rank")
        if g.ndim != x.ndim:
            return Verdict("grid-rank")
        if g.shape[0] != x.shape[0]:
            return Verdict("grid-batch")
        if g.shape[-1] != x.ndim - 2:
            return Verdict("grid-last-axis")
        if case.dtype == "string" and attr_value(case, "mode") not in ("nearest",):
            return Verdict("string-interpolation")
        out_shape = (x.shape[0], x.shape[1], *g.shape[1:-1])
        empty = math.prod(out_shape) == 0
        if not empty and 0 in x.shape[2:] and attr_value(case, "padding_mode") != "zeros":
            return Verdict("empty-image-padding")
        if not empty and not V.is_float(case.dtype) and _undefined_locations(case):
            return Verdict("undefined-location")
        return Verdict(None, out_shape)

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [mutate_enum_attr, _mutate_grid_last_axis, _mutate_grid_batch, _mutate_rank]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        g = _grid(case)
        f = g.astype(np.float64)
        if (~np.isfinite(f)).any() or (np.abs(f) >= 1e30).any():
            yield "grid-specials", case.with_input("grid", _ordinary_grid(g))
        if (np.abs(f[np.isfinite(f)]) > 1).any():
            yield "grid-out-of-bound", case.with_input("grid", _inside_grid(g))
        if _grid_elem(case) != "float":
            yield f"grid={_grid_elem(case)}", case.with_input("grid", V.cast(f, "float"))

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x, g = case.main, _grid(case)
        if x.ndim < 3 or g.ndim != x.ndim:
            yield from value_simplifications(case)
            return
        if x.shape[0] > 1 and g.shape[0] == x.shape[0]:
            yield "N=1", case.with_input("X", x[:1]).with_input("grid", g[:1])
        if x.shape[1] > 1:
            yield "C=1", case.with_input("X", x[:, :1])
        r = x.ndim - 2
        if case.version != 16 and r > 1 and g.shape[-1] == r:
            for a in range(r):
                # drop spatial axis a of X, its output axis and its coordinate (grid's r-1-a)
                simpler = case.with_input("X", drop_main_axis(x, 2 + a, case.dtype))
                gg = _drop_grid_axis(g, 1 + a)
                yield f"drop spatial axis {a}", simpler.with_input("grid", np.delete(gg, r - 1 - a, axis=-1))
        for a in range(2, x.ndim):
            for length in sorted({1, x.shape[a] // 2, x.shape[a] - 1}):
                if 0 < length < x.shape[a]:
                    yield f"X axis {a}={length}", case.with_input("X", cut_main_axis(x, a, length))
        for a in range(1, g.ndim - 1):
            for length in sorted({1, g.shape[a] - 1}):
                if 0 < length < g.shape[a]:
                    yield f"grid axis {a}={length}", case.with_input("grid", cut_main_axis(g, a, length))
        for name in ("align_corners", "padding_mode", "mode"):
            if name in case.attrs:
                yield f"default {name}", case.with_attrs(**{name: None})
        yield from _grid_simplifications(case, g)
        yield from value_simplifications(case)


def _grid_elem(case: Case) -> str:
    t = case.inputs["grid"]
    assert t is not None
    return t.elem


def _drop_grid_axis(g: np.ndarray, k: int) -> np.ndarray:
    if g.shape[k]:
        return np.take(g, 0, axis=k)
    return np.zeros(tuple(d for i, d in enumerate(g.shape) if i != k), g.dtype)


def _ordinary_grid(g: np.ndarray) -> np.ndarray:
    f = g.astype(np.float64)
    f[~np.isfinite(f) | (np.abs(f) >= 1e30)] = 0.5
    return f.astype(g.dtype)


def _inside_grid(g: np.ndarray) -> np.ndarray:
    f = g.astype(np.float64)
    return np.where(np.isfinite(f), np.clip(f, -1.0, 1.0), f).astype(g.dtype)


def _grid_simplifications(case: Case, g: np.ndarray) -> Iterator[Candidate]:
    f = g.astype(np.float64)
    if _grid_elem(case) != "float":
        yield "grid float", case.with_input("grid", V.cast(f, "float"))
    rounded = np.where(np.isfinite(f), np.round(f * 4) / 4, f)
    if not np.array_equal(rounded, f, equal_nan=True):
        yield "grid on quarters", case.with_input("grid", rounded.astype(g.dtype))
    if case.inputs["grid"] is not None and case.inputs["grid"].const:  # type: ignore[union-attr]
        yield "grid as input", case.with_input("grid", g, const=False)


# ---------------------------------------------------------------------------------------------
# mutations


def _mutate_grid_last_axis(rng: np.random.Generator, case: Case) -> Case | None:
    g = _grid(case)
    if g.ndim < 2:
        return None
    extra = np.zeros((*g.shape[:-1], 1), dtype=g.dtype)
    longer = np.concatenate([g, extra], axis=-1)
    return case.with_input("grid", longer if rng.random() < 0.5 or g.shape[-1] <= 1 else g[..., :-1])


def _mutate_grid_batch(rng: np.random.Generator, case: Case) -> Case | None:
    g = _grid(case)
    return case.with_input(
        "grid", np.concatenate([g, g[:1] if g.shape[0] else np.zeros((1, *g.shape[1:]), g.dtype)])
    )


def _mutate_rank(rng: np.random.Generator, case: Case) -> Case | None:
    """X and grid one spatial axis more (for 16: not 4-D any more) or X alone one axis less."""
    x, g = case.main, _grid(case)
    if rng.random() < 0.5 and x.size <= IN_LIMIT // 2 and g.size * 3 <= OUT_LIMIT:
        wider = np.stack([x, x], axis=2)
        gg = np.stack([g], axis=1)
        gg = np.concatenate([gg, np.zeros((*gg.shape[:-1], 1), gg.dtype)], axis=-1)
        return case.with_input("X", wider).with_input("grid", gg)
    if x.ndim <= 1:
        return None
    return case.with_input("X", drop_main_axis(x, x.ndim - 1, case.dtype))
