"""Case space of MaxRoiPool (1, 22): rois inside, across and outside the image, malformed rois, half-pixel
corners, several batch images, spatial scales below and above 1, empty rois and empty images."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from customops.fuzz import values as V
from customops.fuzz.case import Case, Tensor
from customops.fuzz.spaces.base import (
    Candidate,
    Space,
    Verdict,
    draw_dim,
    draw_values,
    generic_features,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

_SCALES = (0.5, 0.25, 0.0625, 2.0, 1.5, 0.3)


def _draw_rois(rng: np.random.Generator, count: int, n: int, h: int, w: int, scale: float) -> np.ndarray:
    """``count`` rois on images of h x w seen at ``scale``: corners on a grid of quarter pixels (exact in
    every float type), mostly inside, some across the border or outside, some with x2 < x1."""
    rows = []
    for _ in range(count):
        batch = float(rng.integers(0, max(n, 1)))
        corners = []
        for extent in (w, h):
            top = (extent + 2) / scale
            a = float(rng.uniform(-2 / scale, top))
            b = (
                a + float(rng.uniform(-1 / scale, top))
                if rng.random() < 0.85
                else a - float(rng.uniform(0, 3))
            )
            corners.append((a, b))
        (x1, x2), (y1, y2) = corners
        rows.append([batch, x1, y1, x2, y2])
    grid = np.round(np.array(rows, dtype=np.float64).reshape(count, 5) * 4) / 4
    return grid


class MaxRoiPoolSpace(Space):
    """MaxRoiPool-1 and MaxRoiPool-22."""

    op = "MaxRoiPool"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        n = int(rng.choice([1, 1, 2, 3]))
        c = int(rng.choice([0, 1, 1, 2, 3]))
        h, w = draw_dim(rng, 7), draw_dim(rng, 7)
        while n * c * h * w > limit and max(h, w) > 1:
            h, w = max(1, h // 2), max(1, w // 2)
        attrs: dict = {"pooled_shape": [int(rng.integers(1, 4)), int(rng.integers(1, 4))]}
        scale = 1.0
        if rng.random() < 0.5:
            scale = float(np.float32(rng.choice(_SCALES)))
            attrs["spatial_scale"] = scale
        count = int(rng.choice([0, 1, 2, 3, 4]))
        rois = _draw_rois(rng, count, n, h, w, scale)
        if count and rng.random() < 0.08:
            # Fast R-CNN's 7 bins over a wide roi that ends inside the image: spans such as 57 are where
            # float32 bin edges go wrong (MRP-FLOAT-BIN-EDGE)
            w = max(w, 8)
            attrs["pooled_shape"][1] = 7
            span = int(rng.choice([57, 29, 47, 60]))
            end = int(rng.integers(0, w - 1))
            rois[0, 1], rois[0, 3] = (end - span + 1) / scale, end / scale
        rois = V.cast(rois, dtype)
        inputs: dict[str, Tensor | None] = {
            "X": Tensor(draw_values(rng, dtype, (n, c, h, w))),
            "rois": Tensor(rois, bool(rng.random() < 0.3)),
        }
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def validate(self, case: Case) -> Verdict:
        x = case.main
        rois = case.inputs["rois"].value.astype(np.float64)  # type: ignore[union-attr]
        if x.ndim != 4:
            return Verdict("x-rank")
        if rois.ndim != 2 or rois.shape[1] != 5:
            return Verdict("rois-shape")
        pooled = list(case.attrs.get("pooled_shape", []))
        if len(pooled) != 2 or min(pooled) < 1:
            return Verdict("attr-value:pooled_shape")
        scale = float(case.attrs.get("spatial_scale", 1.0))
        if not (math.isfinite(scale) and scale > 0):
            return Verdict("attr-value:spatial_scale")
        if not np.isfinite(rois[:, 1:]).all():
            return Verdict("roi-nonfinite")
        batch = rois[:, 0]
        if not (batch == np.floor(batch)).all():
            return Verdict("batch-index-fraction")
        if ((batch < 0) | (batch >= x.shape[0])).any():
            return Verdict("batch-index-range")
        return Verdict(None, (rois.shape[0], x.shape[1], pooled[0], pooled[1]))

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [
            _mutate_batch_fraction,
            _mutate_batch_range,
            _mutate_roi_nonfinite,
            _mutate_pooled,
            _mutate_scale,
        ]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        rois = case.inputs["rois"]
        if rois is not None and rois.value.ndim == 2 and rois.value.shape[0] > 1:
            yield "several rois", case.with_input("rois", rois.value[:1])

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        t = case.inputs["rois"]
        assert t is not None
        rois = t.value
        if rois.ndim == 2 and rois.shape[0] > 1:
            for i in range(rois.shape[0]):
                yield f"roi {i} only", case.with_input("rois", rois[i : i + 1])
        if x.ndim == 4:
            if x.shape[1] > 1:
                for c in range(x.shape[1]):
                    yield f"channel {c} only", case.with_input("X", x[:, c : c + 1])
            if x.shape[0] > 1 and rois.ndim == 2 and rois.shape[1] == 5 and (rois[:, 0] == 0).all():
                yield "N=1", case.with_input("X", x[:1])
        pooled = list(case.attrs.get("pooled_shape", []))
        for i, v in enumerate(pooled):
            if v > 1:
                new = list(pooled)
                new[i] = 1
                yield f"pooled_shape[{i}]=1", case.with_attrs(pooled_shape=new)
        if "spatial_scale" in case.attrs:
            yield "spatial_scale default", case.with_attrs(spatial_scale=None)
        yield from value_simplifications(case)
        if t.const:
            yield "rois as input", case.with_input("rois", rois, const=False)


def _with_roi_value(case: Case, column: int, value: float) -> Case | None:
    rois = case.inputs["rois"].value  # type: ignore[union-attr]
    if rois.ndim != 2 or rois.shape[0] == 0:
        rois = V.cast(np.array([[0, 0, 0, 1, 1]], dtype=np.float64), case.dtype)
    changed = rois.copy()
    changed[0, column] = V.cast(np.array([value]), case.dtype)[0]
    return case.with_input("rois", changed)


def _mutate_batch_fraction(rng: np.random.Generator, case: Case) -> Case | None:
    return _with_roi_value(case, 0, float(rng.choice([0.5, 0.25, -0.5])))


def _mutate_batch_range(rng: np.random.Generator, case: Case) -> Case | None:
    return _with_roi_value(case, 0, float(rng.choice([-1.0, case.main.shape[0]])))


def _mutate_roi_nonfinite(rng: np.random.Generator, case: Case) -> Case | None:
    return _with_roi_value(case, int(rng.integers(1, 5)), float(rng.choice([math.nan, math.inf, -math.inf])))


def _mutate_pooled(rng: np.random.Generator, case: Case) -> Case | None:
    pooled = list(case.attrs.get("pooled_shape", [1, 1]))
    if rng.random() < 0.3:
        return case.with_attrs(pooled_shape=[*pooled, 1])
    pooled[int(rng.integers(0, len(pooled)))] = int(rng.choice([0, -1]))
    return case.with_attrs(pooled_shape=pooled)


def _mutate_scale(rng: np.random.Generator, case: Case) -> Case | None:
    return case.with_attrs(spatial_scale=float(rng.choice([0.0, -1.0, math.inf, math.nan])))
