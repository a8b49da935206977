"""Case space of RoiAlign (10, 16, 22): feature maps with size-0/1 axes, ROIs inside, across and outside
the map (reversed, degenerate, non-finite), every mode, coordinate mode, output size, sampling ratio and
spatial scale, batches of several images."""

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
    attr_value,
    draw_values,
    generic_features,
    index_array,
    mutate_enum_attr,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

MAX_AXIS_SAMPLES = 1 << 20
"""The kernel's bound on sample points along one axis of one ROI (customops.kernels.spatial.roi_align)."""

_SCALES = (1.0, 1.0, 1.0, 0.5, 0.25, 2.0, 0.0625)


def _draw_rois(rng: np.random.Generator, count: int, h: int, w: int, scale: float, dtype: str) -> np.ndarray:
    """``count`` boxes [x1, y1, x2, y2] in input-image coordinates: mostly quarter steps across and
    around the map, some reversed or degenerate, some arbitrary, rarely a non-finite coordinate."""
    span = np.array([w, h, w, h], dtype=np.float64) / (scale if scale > 0 else 1.0)
    boxes = np.zeros((count, 4))
    for i in range(count):
        u = rng.random()
        a = np.round(rng.uniform(-0.3, 1.1, 2) * span[:2] * 4) / 4
        b = a + np.round(rng.uniform(0.0, 1.0, 2) * span[:2] * 4) / 4
        if u < 0.1:
            b = a.copy()  # degenerate: a point
        elif u < 0.2:  # reversed along x, y or both
            flip = [[True, False], [False, True], [True, True]][int(rng.integers(0, 3))]
            a, b = np.where(flip, b, a), np.where(flip, a, b)
        elif u < 0.3:
            a = rng.uniform(-2, 1.2, 2) * span[:2]
            b = a + rng.uniform(-0.2, 1.0, 2) * span[:2]
        boxes[i] = [a[0], a[1], b[0], b[1]]
    if count and rng.random() < 0.05:
        boxes.reshape(-1)[int(rng.integers(0, boxes.size))] = float(
            rng.choice([math.nan, math.inf, -math.inf])
        )
    return V.cast(boxes, dtype)


def _ratio(rng: np.random.Generator) -> int:
    return int(rng.choice([0, 0, 0, 1, 2, 3]))


class RoiAlignSpace(Space):
    """RoiAlign-10/16/22."""

    op = "RoiAlign"

    def _draw(self, rng: np.random.Generator, opv: OpVersion, dtype: str, limit: int) -> Case:
        n = int(rng.choice([1, 1, 1, 2, 3]))
        c = int(rng.choice([0, 1, 1, 2, 3, 4], p=[0.03, 0.37, 0.15, 0.2, 0.15, 0.1]))
        h = int(rng.choice([1, 2, 3, 4, 5, 6, 8]))
        w = int(rng.choice([1, 2, 3, 4, 5, 6, 8]))
        while n * c * h * w > limit and (h > 1 or w > 1):
            h, w = max(1, h // 2), max(1, w // 2)
        if rng.random() < 0.02:
            h = 0
        attrs: dict = {}
        for a in opv.attributes:
            if a.allowed is not None and rng.random() < 0.67:
                attrs[a.name] = str(rng.choice(a.allowed))
        if rng.random() < 0.8:
            attrs["output_height"] = int(rng.integers(1, 5))
        if rng.random() < 0.8:
            attrs["output_width"] = int(rng.integers(1, 5))
        if rng.random() < 0.7:
            attrs["sampling_ratio"] = _ratio(rng)
        scale = float(rng.choice(_SCALES))
        if rng.random() < 0.03:
            scale = float(rng.choice([0.0, -1.0, math.nan, math.inf]))
        if scale != 1.0 or rng.random() < 0.2:
            attrs["spatial_scale"] = scale
        r = int(rng.choice([0, 1, 1, 2, 2, 3, 4], p=[0.06, 0.24, 0.2, 0.2, 0.1, 0.1, 0.1]))
        inputs: dict[str, Tensor | None] = {
            "X": Tensor(draw_values(rng, dtype, (n, c, h, w))),
            "rois": Tensor(
                _draw_rois(rng, r, h, w, scale if math.isfinite(scale) else 1.0, dtype), rng.random() < 0.3
            ),
            "batch_indices": Tensor(index_array([int(v) for v in rng.integers(0, n, r)]), rng.random() < 0.3),
        }
        return Case(opv.op, opv.version, dtype, inputs, attrs)

    def validate(self, case: Case) -> Verdict:
        x = case.main
        rois = case.inputs["rois"].value  # type: ignore[union-attr]
        batch = case.inputs["batch_indices"].value  # type: ignore[union-attr]
        if x.ndim != 4:
            return Verdict("input-rank")
        if rois.ndim != 2 or rois.shape[1] != 4:
            return Verdict("rois-shape")
        if batch.ndim != 1 or batch.shape[0] != rois.shape[0]:
            return Verdict("batch-indices-shape")
        for a in case.opv.attributes:
            if a.allowed is not None and a.name in case.attrs and case.attrs[a.name] not in a.allowed:
                return Verdict(f"attr-value:{a.name}")
        oh, ow = int(attr_value(case, "output_height")), int(attr_value(case, "output_width"))
        if oh < 1 or ow < 1:
            return Verdict("output-size-nonpositive")
        if int(attr_value(case, "sampling_ratio")) < 0:
            return Verdict("sampling-ratio-negative")
        if ((batch < 0) | (batch >= x.shape[0])).any():
            return Verdict("batch-index-out-of-range")
        r, c = rois.shape[0], x.shape[1]
        if r and c and (x.shape[2] == 0 or x.shape[3] == 0):
            return Verdict("feature-map-empty")
        if self._too_many_samples(case, rois, oh, ow):
            return Verdict("too-many-samples")
        return Verdict(None, (r, c, oh, ow))

    @staticmethod
    def _too_many_samples(case: Case, rois: np.ndarray, oh: int, ow: int) -> bool:
        """Whether an adaptive grid needs more points along an axis than the kernel computes."""
        if int(attr_value(case, "sampling_ratio")) != 0 or rois.size == 0:
            return False
        scale = float(attr_value(case, "spatial_scale"))
        with np.errstate(invalid="ignore", over="ignore"):
            boxes = rois.astype(np.float64) * scale
            extent = np.abs(boxes[:, 2:] - boxes[:, :2]) / np.array([ow, oh])
        extent = extent[np.isfinite(extent)]
        return bool(extent.size) and float(extent.max()) * max(oh, ow) > MAX_AXIS_SAMPLES

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [
            mutate_enum_attr,
            _mutate_output_size,
            _mutate_ratio,
            _mutate_batch_index,
            _mutate_rois_shape,
            _mutate_empty_map,
        ]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        yield from generic_features(case)
        rois = case.inputs["rois"].value  # type: ignore[union-attr]
        if rois.size and not np.isfinite(rois.astype(np.float64)).all():
            fixed = np.where(np.isfinite(rois.astype(np.float64)), rois.astype(np.float64), 1.0)
            yield "rois-nonfinite", case.with_input("rois", V.cast(fixed, case.dtype))
        if rois.ndim == 2 and rois.shape[1] == 4 and rois.size:
            f = rois.astype(np.float64)
            if ((f[:, 2:] < f[:, :2]) & np.isfinite(f[:, 2:])).any():
                ordered = np.concatenate(
                    [np.minimum(f[:, :2], f[:, 2:]), np.maximum(f[:, :2], f[:, 2:])], axis=1
                )
                yield "rois-reversed", case.with_input("rois", V.cast(ordered, case.dtype))

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        rois_t, batch_t = case.inputs["rois"], case.inputs["batch_indices"]
        assert rois_t is not None and batch_t is not None
        rois, batch = rois_t.value, batch_t.value
        if rois.ndim == 2 and batch.ndim == 1 and len(rois) == len(batch) and len(rois) > 1:
            for i in range(len(rois)):
                yield (
                    f"only ROI {i}",
                    case.with_input("rois", rois[i : i + 1]).with_input("batch_indices", batch[i : i + 1]),
                )
        if x.ndim == 4 and x.shape[0] > 1 and batch.ndim == 1 and batch.size and (batch == batch[0]).all():
            b = int(batch[0])
            if 0 <= b < x.shape[0]:
                one = case.with_input("X", x[b : b + 1]).with_input("batch_indices", np.zeros_like(batch))
                yield "one image", one
        if x.ndim == 4 and x.shape[1] > 1:
            yield "C=1", case.with_input("X", x[:, :1])
        for name in ("output_height", "output_width", "sampling_ratio", "spatial_scale", "mode"):
            if name in case.attrs:
                yield f"default {name}", case.with_attrs(**{name: None})
        for name in ("output_height", "output_width"):
            if int(case.attrs.get(name, 1)) > 1:
                yield f"{name}=1", case.with_attrs(**{name: 1})
        if x.ndim == 4:
            for axis in (2, 3):
                if x.shape[axis] > 1:
                    yield (
                        f"axis {axis} halved",
                        case.with_input("X", np.take(x, range(x.shape[axis] // 2 + 1), axis=axis)),
                    )
        if rois.size and np.isfinite(rois.astype(np.float64)).all():
            rounded = np.round(rois.astype(np.float64) * 2) / 2
            if not np.array_equal(rounded, rois.astype(np.float64)):
                yield "rois rounded to halves", case.with_input("rois", V.cast(rounded, case.dtype))
        yield from value_simplifications(case)


# ---------------------------------------------------------------------------------------------
# mutations


def _mutate_output_size(rng: np.random.Generator, case: Case) -> Case | None:
    name = str(rng.choice(["output_height", "output_width"]))
    return case.with_attrs(**{name: int(rng.choice([0, -1]))})


def _mutate_ratio(rng: np.random.Generator, case: Case) -> Case | None:
    return case.with_attrs(sampling_ratio=-1)


def _mutate_batch_index(rng: np.random.Generator, case: Case) -> Case | None:
    batch = case.inputs["batch_indices"].value  # type: ignore[union-attr]
    if batch.size == 0:
        return None
    bad = batch.copy()
    bad[int(rng.integers(0, bad.size))] = case.main.shape[0] if rng.random() < 0.5 else -1
    return case.with_input("batch_indices", bad)


def _mutate_rois_shape(rng: np.random.Generator, case: Case) -> Case | None:
    rois = case.inputs["rois"].value  # type: ignore[union-attr]
    if rng.random() < 0.5:
        wider = np.concatenate([rois, V.simple((rois.shape[0], 1), case.dtype)], axis=1)
        return case.with_input("rois", wider)
    return case.with_input(
        "batch_indices", np.concatenate([case.inputs["batch_indices"].value, [0]]).astype(np.int64)
    )  # type: ignore[union-attr]


def _mutate_empty_map(rng: np.random.Generator, case: Case) -> Case | None:
    x = case.main
    if x.ndim != 4 or case.inputs["rois"].value.shape[0] == 0 or x.shape[1] == 0:  # type: ignore[union-attr]
        return None
    return case.with_input("X", x[:, :, :0] if rng.random() < 0.5 else x[:, :, :, :0])
