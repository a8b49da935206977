"""ONNX RoiAlign (opsets 10, 16, 22): bilinear sampling of regions of interest into fixed-size bins.

Each ROI ``[x1, y1, x2, y2]`` (scaled by ``spatial_scale``, shifted by -0.5 under ``half_pixel``) is cut
into ``output_height x output_width`` bins; each bin holds a ``grid_h x grid_w`` grid of sample points
(``sampling_ratio``, or ``ceil(roi_size / output_size)`` when it is 0) whose values come from bilinear
interpolation of the feature map. ``avg`` averages the samples of a bin; ``max`` takes the largest of
the weighted corner terms ``w_k * X[corner_k]`` of the samples of a bin, as ONNX's own test data
(``test_roialign_mode_max``) and every implementation of the operator define it (docs/semantics.md).

Sample points follow the rule of the operator's implementations: a point with y < -1, y > H, x < -1 or
x > W lies outside the map and contributes 0; otherwise negative coordinates are clamped to 0 and
coordinates past the last pixel to it. Under ``output_half_pixel`` (RoiAlign-10's behaviour) ROIs are
at least 1x1. Those decisions (inside or outside, the pixel below a point, whether it sits on a pixel)
are the exact formula's: a point's float64 coordinate carries a bound on its error, and the points
within it of a whole number that a rounding went into are placed again in rational arithmetic (so a
point exactly on -1 is kept, whatever float64 makes of it). Arithmetic is float64 with one rounding at
the end; a weight of 0 makes its term 0 whatever the pixel holds (so an inf or NaN reaches only the
outputs that sample it).

The compiled loop (customops.accel.spatial.roi_align_loops) and the numpy path: ``max`` gives the same bits
(terms ``w_y * (w_x * pixel)``, a zero maximum +0; any NaN for a NaN). ``avg`` sums the same terms in
another order (the numpy path through matrix products, whose order is the BLAS library's), so a finite
bin of ROI r differs between them by at most ``(H + W + 2 grid_h + 2 grid_w + 4) * 2**-52 * A`` plus
one unit in the last place of the output's type, where A is the bin's mean of ``|w_y w_x pixel|``
(``avg`` of ``|X|``) and grid_h x grid_w the ROI's sample points per bin: each float64 result is within
half that of the exact mean (Higham's bound for sums of that many terms). Both give inf and NaN in the
same bins, unless a float64 sum overflows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from customops.accel import jit, parallel
from customops.accel.spatial import roi_align_loops
from customops.errors import KernelError
from customops.kernels import limits
from customops.kernels.args import choice, integer

__all__ = ["bind", "roi_align"]

MODES = ("avg", "max")
COORDINATE_MODES = ("half_pixel", "output_half_pixel")

MAX_AXIS_SAMPLES = 1 << 20
"""The most sample points of one ROI along one axis (output size x grid size): an adaptive grid over a
huge ROI would otherwise be unbounded."""

MAX_TOTAL_SAMPLES = 1 << 21
"""The most sample points of all ROIs together along one axis (bounds the tables)."""

MAX_TERMS = 1 << 24
"""The most weighted corner terms the numpy path of max mode compares for one ROI and channel."""

_ROUNDING = 2.0**-52
"""Twice float64's unit roundoff: one rounding moves a value by at most half of this times its
magnitude; the bounds of :func:`_axis` take the whole of it to cover their second-order terms."""

_TINY = 2.0**-1000
"""An absolute term in each error bound: a product that underflows is off by at most 2^-1075."""

_SPLITTER = float(2**27 + 1)
_SAFE_LOW, _SAFE_HIGH = 2.0**-960, 2.0**990

MAX_SCRATCH = 1 << 24
"""The most elements of a table sized by the map and the output grid: the compiled loop's rows
(H x output_width, one per thread), the numpy path's weight matrices (output_height x H, output_width
x W). Without it, a tall map and a wide output grid ask for far more scratch than output (a 1x1x2000x1
map with output_width 2^17 took 2 GB of rows for a 1 MB output)."""

_BLOCK = 1 << 22
"""Elements of the numpy max path's scratch per block of channels (at least one channel a block)."""


def roi_align(
    X: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    coordinate_transformation_mode: str = "half_pixel",
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> np.ndarray:
    """Pool each ROI of ``rois`` [R, 4] over image ``batch_indices[r]`` of ``X`` [N, C, H, W] into
    [R, C, output_height, output_width] of X's dtype (C-contiguous). Raises KernelError on an invalid
    configuration (a message naming the rule)."""
    mode = choice(mode, "mode", MODES)
    half = (
        choice(coordinate_transformation_mode, "coordinate_transformation_mode", COORDINATE_MODES)
        == "half_pixel"
    )
    x, boxes, batch = _check(X, rois, batch_indices)
    oh, ow, ratio = _sizes(output_height, output_width, sampling_ratio)
    _, c, h, w = x.shape
    out_shape = (boxes.shape[0], c, oh, ow)
    limits.check_output(out_shape, x.dtype)
    if math.prod(out_shape) == 0:
        return np.zeros(out_shape, dtype=x.dtype)
    if h == 0 or w == 0:
        raise KernelError(f"X has an empty spatial axis (shape {x.shape!r}): there is nothing to sample")
    for what, size in (
        ("H x output_width", h * ow),
        ("output_height x H", oh * h),
        ("output_width x W", ow * w),
    ):
        if size > MAX_SCRATCH:
            raise KernelError(
                f"{what} is {size}: the tables of this map and output grid would hold more than the "
                f"{MAX_SCRATCH} elements this kernel allows"
            )
    scale = float(spatial_scale)
    ys = _axis(boxes[:, 1], boxes[:, 3], scale, half, oh, ratio, h, "height")
    xs = _axis(boxes[:, 0], boxes[:, 2], scale, half, ow, ratio, w, "width")
    loop = jit.get("roi_align_bins", roi_align_loops) if x.dtype in jit.FLOATS else None
    if loop is not None:
        return _compiled(loop, np.ascontiguousarray(x), batch, ys, xs, out_shape, mode == "max")
    return _numpy(x, batch, ys, xs, out_shape, mode == "max")


def _numpy(
    x: np.ndarray, batch: np.ndarray, ys: _Samples, xs: _Samples, out_shape: tuple[int, ...], use_max: bool
) -> np.ndarray:
    """The numpy path: one ROI at a time (avg as two matrix products, max over gathered terms)."""
    out = np.zeros(out_shape, dtype=np.float64)
    images = x.astype(np.float64, copy=False)
    pool = _maximum if use_max else _average
    for i in range(out_shape[0]):
        if ys.nonfinite[i] or xs.nonfinite[i]:
            out[i] = np.nan
        elif ys.grid[i] and xs.grid[i]:
            out[i] = pool(images[batch[i]], ys.of(i), xs.of(i))
    return out.astype(x.dtype)


def _compiled(
    loop: Callable[..., None],
    x: np.ndarray,
    batch: np.ndarray,
    ys: _Samples,
    xs: _Samples,
    out_shape: tuple[int, int, int, int],
    use_max: bool,
) -> np.ndarray:
    """The compiled loop over every ROI (customops.accel.spatial.roi_align_loops)."""
    meta = np.stack(
        [
            ys.offset,
            ys.grid,
            xs.offset,
            xs.grid,
            (ys.nonfinite | xs.nonfinite).astype(np.int64),
            ys.first,
            ys.last,
            xs.first,
            xs.last,
        ],
        axis=1,
    )
    out = np.empty(out_shape, dtype=x.dtype)
    per_roi = ys.grid * xs.grid * 4 * out_shape[1] * out_shape[2] * out_shape[3]
    parallel.run(
        loop,
        out_shape[0],
        int(per_roi.sum()),
        x,
        out,
        batch,
        ys.tab,
        ys.w,
        xs.tab,
        xs.w,
        meta,
        use_max,
        bool(np.isfinite(x).all()),
    )
    return out


def _check(X: Any, rois: Any, batch_indices: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The inputs as arrays (rois in float64, indices in int64), checked against each other."""
    x = np.asarray(X)
    if x.dtype.kind != "f":
        raise KernelError(f"X has element type {x.dtype}; RoiAlign takes float16, float or double")
    if x.ndim != 4:
        raise KernelError(f"X must be 4-D (N, C, H, W), got shape {x.shape!r}")
    boxes = np.asarray(rois)
    if boxes.dtype.kind != "f":
        raise KernelError(f"rois has element type {boxes.dtype}; it must be a float type like X")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise KernelError(f"rois must have shape (num_rois, 4), got {boxes.shape!r}")
    batch = np.asarray(batch_indices)
    if batch.dtype.kind not in "iu":
        raise KernelError(f"batch_indices has element type {batch.dtype}; it must be int64")
    if batch.ndim != 1 or batch.shape[0] != boxes.shape[0]:
        raise KernelError(
            f"batch_indices must have shape (num_rois,) = ({boxes.shape[0]},), got {batch.shape!r}"
        )
    n = x.shape[0]
    bad = (batch < 0) | (batch >= n)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise KernelError(
            f"batch_indices[{k}] = {int(batch[k])} is out of range for a batch of {n} (0 to {n - 1})"
        )
    return x, boxes.astype(np.float64), batch.astype(np.int64)


def _sizes(output_height: Any, output_width: Any, sampling_ratio: Any) -> tuple[int, int, int]:
    return (
        integer(output_height, "output_height", 1),
        integer(output_width, "output_width", 1),
        integer(sampling_ratio, "sampling_ratio", 0),
    )


class _Samples:
    """The sample points of every ROI along one axis, ROI after ROI and bin after bin: for each point
    its two neighbouring pixels ``tab`` (low, high) and their weights ``w`` (0 for points outside the
    map). ROI r has ``grid[r]`` points per bin starting at ``offset[r]``, refers to pixels
    ``first[r]..last[r]``, and ``nonfinite[r]`` when a coordinate is not finite (no points then)."""

    def __init__(
        self,
        tab: np.ndarray,
        w: np.ndarray,
        grid: np.ndarray,
        offset: np.ndarray,
        nonfinite: np.ndarray,
        bins: int,
    ):
        self.tab, self.w, self.grid, self.offset, self.nonfinite = tab, w, grid, offset, nonfinite
        self.bins = bins
        # a ROI's points are monotone in its coordinate, so its first and last points bound its pixels
        empty = grid == 0
        head = np.where(empty, 0, offset)
        tail = np.where(empty, 0, offset + bins * grid - 1)
        if len(tab) == 0:
            self.first = self.last = np.zeros_like(grid)
        else:
            self.first = np.where(empty, 0, np.minimum(tab[head, 0], tab[tail, 0]))
            self.last = np.where(empty, 0, np.maximum(tab[head, 1], tab[tail, 1]))

    def of(self, r: int) -> _Samples:
        """ROI r's points alone."""
        lo, hi = self.offset[r], self.offset[r] + self.bins * self.grid[r]
        return _Samples(
            self.tab[lo:hi],
            self.w[lo:hi],
            self.grid[r : r + 1],
            np.zeros(1, np.int64),
            self.nonfinite[r : r + 1],
            self.bins,
        )

    def matrix(self, length: int) -> np.ndarray:
        """[bins, length] of one ROI's points: the summed weight each bin gives each pixel."""
        base = np.repeat(np.arange(self.bins, dtype=np.int64) * length, int(self.grid[0]))
        m = np.bincount(base + self.tab[:, 0], self.w[:, 0], minlength=self.bins * length)
        m += np.bincount(base + self.tab[:, 1], self.w[:, 1], minlength=self.bins * length)
        return m.reshape(self.bins, length)


@dataclass
class _Extents:
    """Each ROI along one axis: its start and end, the float64 products ``a = start * scale`` and ``ea =
    end * scale``, where its sample points begin (``a - shift``) and how far they extend (``extent``:
    ``ea - a``, at least 1 under ``output_half_pixel``), and a bound on how far a point computed from
    them in float64 lies from its exact place (``point_err``; see :func:`_axis`). The exact values, as
    fractions, come from :meth:`exact`."""

    start: np.ndarray
    end: np.ndarray
    scale: float
    shift: float
    half: bool
    a: np.ndarray
    ea: np.ndarray
    begin: np.ndarray
    raw: np.ndarray
    extent: np.ndarray
    extent_err: np.ndarray
    point_err: np.ndarray
    nonfinite: np.ndarray

    @classmethod
    def of(cls, start: np.ndarray, end: np.ndarray, scale: float, half: bool) -> _Extents:
        shift = 0.5 if half else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            a, ea = start * scale, end * scale
            begin = a - shift
            raw = ea - a  # the shift cancels: (end * scale - shift) - (start * scale - shift)
            nonfinite = ~(np.isfinite(begin) & np.isfinite(raw))
            begin[nonfinite] = raw[nonfinite] = 0.0
            extent = raw if half else np.maximum(raw, 1.0)  # RoiAlign-10's rule: ROIs are at least 1x1
            a_err = _ROUNDING * np.abs(a) + _TINY
            begin_err = a_err + _ROUNDING * np.abs(begin)
            extent_err = a_err + _ROUNDING * (np.abs(ea) + np.abs(raw)) + _TINY
            # a point: fl(begin + fl(fl(m * extent) / d)) with 0 < m < d
            point_err = begin_err + extent_err + _ROUNDING * (np.abs(begin) + 3.0 * np.abs(extent)) + _TINY
        point_err[nonfinite] = extent_err[nonfinite] = 0.0
        return cls(
            start, end, scale, shift, half, a, ea, begin, raw, extent, extent_err, point_err, nonfinite
        )

    @cached_property
    def computed_exactly(self) -> np.ndarray:
        """Whether each ROI's float64 begin and extent are exact: no product or difference that made
        them rounded."""
        n = len(self.start)
        with np.errstate(invalid="ignore", over="ignore"):  # one call of each check for both ends
            ok = _product_exact(
                np.concatenate([self.start, self.end]),
                np.full(2 * n, self.scale),
                np.concatenate([self.a, self.ea]),
            )
            ok &= _sum_exact(
                np.concatenate([self.a, self.ea]),
                np.concatenate([np.full(n, -self.shift), -self.a]),
                np.concatenate([self.begin, self.raw]),
            )
        return ok[:n] & ok[n:]

    def exact(self, rois: np.ndarray) -> dict[int, tuple[int, int, int]]:
        """Each of ``rois``' begin and extent, exactly: ``(B, E, D)`` with begin ``B / D`` and extent
        ``E / D``. Every float64 is a whole number over a power of two, so these are integers, and the
        placing of a point is integer arithmetic with no Python call per point (a hostile set of ROIs
        can send all the points one axis allows there)."""
        rois = np.unique(rois)
        kn, kd = float(self.scale).as_integer_ratio()
        out = {}
        for r, start, end in zip(
            rois.tolist(), self.start[rois].tolist(), self.end[rois].tolist(), strict=True
        ):
            sn, sd = start.as_integer_ratio()
            en, ed = end.as_integer_ratio()
            d = 2 * max(sd, ed) * kd  # a power of two that each term's denominator divides (0.5 too)
            a = sn * kn * (d // (sd * kd))
            extent = en * kn * (d // (ed * kd)) - a
            out[r] = (a - int(self.shift * 2) * (d // 2), extent if self.half else max(extent, d), d)
        return out


def _axis(
    start: np.ndarray,
    end: np.ndarray,
    scale: float,
    half: bool,
    size: int,
    ratio: int,
    length: int,
    name: str,
) -> _Samples:
    """The sample points of every ROI along one axis of ``length`` pixels cut into ``size`` bins.

    Point k of bin p of a ROI lies at ``begin + (2 g p + 2 k + 1) * extent / (2 g size)`` (g points per
    bin). Computed in float64, a point can land a rounding away from where the formula puts it: on the
    wrong side of -1 or ``length`` (a sample dropped or kept), or of a whole pixel (a corner of weight 0
    given a tiny weight, which lets an inf there in). So the points within their error bound of a whole
    number that were not computed without rounding are placed exactly (:func:`_place_exactly`)."""
    ext = _Extents.of(start, end, scale, half)
    grid = _grid(ext, size, ratio, name)
    counts = size * grid
    if int(counts.sum()) > MAX_TOTAL_SAMPLES:
        raise KernelError(
            f"the ROIs need {int(counts.sum())} sample points along the {name}, more than the "
            f"{MAX_TOTAL_SAMPLES} this kernel computes"
        )
    offset = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    roi = np.repeat(np.arange(len(start)), counts)
    m = 2 * (np.arange(int(counts.sum()), dtype=np.int64) - offset[roi]) + 1
    d = 2.0 * size * grid[roi]
    with np.errstate(invalid="ignore", over="ignore"):
        num = m * ext.extent[roi]
        q = num / d
        coord = ext.begin[roi] + q
        err = ext.point_err[roi]
        near = (np.abs(coord - np.rint(coord)) <= err) & (coord >= -1.0 - err) & (coord <= length + err)
    tab, w = _neighbours(coord, length)
    pick = np.flatnonzero(near)
    if pick.size:
        r, k = roi[pick], pick.size
        with np.errstate(invalid="ignore", over="ignore"):  # num = m * extent, q * d = num, begin + q
            products = _product_exact(
                np.concatenate([m[pick].astype(np.float64), q[pick]]),
                np.concatenate([ext.extent[r], d[pick]]),
                np.concatenate([num[pick], num[pick]]),
            )
            exact = ext.computed_exactly[r] & products[:k] & products[k:] & (q[pick] * d[pick] == num[pick])
            exact &= _sum_exact(ext.begin[r], q[pick], coord[pick])
        _place_exactly(tab, w, ext, pick[~exact], roi, m, counts, length)
    return _Samples(tab, w, grid, offset, ext.nonfinite, size)


def _grid(ext: _Extents, size: int, ratio: int, name: str) -> np.ndarray:
    """The sample points per bin of each ROI: ``sampling_ratio``, or ``ceil(extent / size)`` (at least 0)
    when it is 0, exact where the float64 quotient lies within its error of a whole number."""
    if ratio > 0:
        if size * ratio > MAX_AXIS_SAMPLES:
            raise KernelError(
                f"{size} bins of {ratio} x {ratio} sample points (sampling_ratio {ratio}) need {size * ratio} "
                f"points along the {name} of each ROI, more than the {MAX_AXIS_SAMPLES} this kernel computes"
            )
        grid = np.full(len(ext.start), ratio, dtype=np.int64)
        grid[ext.nonfinite] = 0
        return grid
    with np.errstate(invalid="ignore", over="ignore"):
        bin_size = ext.extent / size
        wanted = np.maximum(np.ceil(bin_size), 0.0)
        err = ext.extent_err / size + _ROUNDING * np.abs(bin_size) + _TINY
        near = np.flatnonzero((np.abs(bin_size - np.rint(bin_size)) <= err) & ~ext.nonfinite)
        if near.size:  # the quotient is exact when extent is and bin_size * size gives it back exactly
            b, e = bin_size[near], ext.extent[near]
            exact = ext.computed_exactly[near] & _product_exact(b, np.full_like(b, size), e) & (b * size == e)
    for r, (_, extent, den) in ext.exact(near[~exact]).items() if near.size else ():
        wanted[r] = max(-(-extent // (den * size)), 0)
    too_many = wanted * size > MAX_AXIS_SAMPLES
    if too_many.any():
        k = int(np.flatnonzero(too_many)[0])
        raise KernelError(
            f"ROI {k}'s {name} {float(ext.extent[k])!r} needs {size} x {int(wanted[k])} sample points with "
            f"sampling_ratio 0, more than the {MAX_AXIS_SAMPLES} this kernel computes along one axis"
        )
    grid = wanted.astype(np.int64)
    grid[ext.nonfinite] = 0
    return grid


def _place_exactly(
    tab: np.ndarray,
    w: np.ndarray,
    ext: _Extents,
    points: np.ndarray,
    roi: np.ndarray,
    m: np.ndarray,
    counts: np.ndarray,
    length: int,
) -> None:
    """Set the pixels and weights of ``points`` from their exact coordinates (rational arithmetic):
    inside the map or not, the pixel below, and whether they sit on it."""
    rois = roi[points]
    exact = ext.exact(rois)
    low, inside, frac = [], [], []
    for r, k, twice in zip(rois.tolist(), m[points].tolist(), (2 * counts[rois]).tolist(), strict=True):
        begin, extent, den = exact[r]
        num, den = begin * twice + extent * k, den * twice  # the point is at num / den
        clipped = min(max(num, 0), (length - 1) * den)
        below = min(clipped // den, length - 1)
        low.append(below)
        frac.append((clipped - below * den) / den)  # correctly rounded, as float(Fraction) is
        inside.append(-den <= num <= length * den)
    below, f = np.asarray(low, np.int64).reshape(-1), np.asarray(frac, np.float64).reshape(-1)
    tab[points] = np.stack([below, np.minimum(below + 1, length - 1)], axis=1)
    w[points] = np.where(np.asarray(inside, bool).reshape(-1, 1), np.stack([1.0 - f, f], axis=1), 0.0)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split of float64 values into two halves of 26 bits each (a = hi + lo exactly)."""
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def _product_exact(a: np.ndarray, b: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Whether each float64 ``p`` (computed as ``a * b``) is the exact product: Dekker's error of the
    product is 0. False where a product that is not 0 lies outside [2^-960, 2^990] (an underflow or
    overflow of the partial products would make that error itself inexact), or a factor overflows
    the split."""
    ah, al = _split(a)
    bh, bl = _split(b)
    error = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    mag = np.abs(p)
    return (error == 0) & (((mag >= _SAFE_LOW) & (mag <= _SAFE_HIGH)) | (a == 0) | (b == 0))


def _sum_exact(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Whether each float64 ``s`` (computed as ``a + b``) is the exact sum: Knuth's two-sum error is 0
    (an error-free transformation for every finite a, b without overflow)."""
    bb = s - a
    error = (a - (s - bb)) + (b - bb)
    return (error == 0) & np.isfinite(s)


def _neighbours(coord: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(pixels, weights), each [points, 2] (low, high): the rule of the operator's implementations
    (outside when < -1 or > length; clamped to [0, length - 1] otherwise)."""
    inside = (coord >= -1.0) & (coord <= length)
    coord = np.clip(coord, 0.0, length - 1)
    low = np.minimum(np.floor(coord), length - 1).astype(np.int64)
    high = np.minimum(low + 1, length - 1)
    frac = coord - low
    tab = np.stack([low, high], axis=1)
    w = np.stack([np.where(inside, 1.0 - frac, 0.0), np.where(inside, frac, 0.0)], axis=1)
    return tab, w


def _average(image: np.ndarray, y: _Samples, x: _Samples) -> np.ndarray:
    """[C, oh, ow]: the mean of each bin's bilinear samples, as A_y @ image @ A_x^T restricted to the
    rows and columns the ROI touches (the sum of weight x pixel over every sample and corner)."""
    c, h, w = image.shape
    ay = y.matrix(h)
    ax = x.matrix(w)
    rows = np.flatnonzero(ay.any(axis=0))
    cols = np.flatnonzero(ax.any(axis=0))
    oh, ow = ay.shape[0], ax.shape[0]
    if rows.size == 0 or cols.size == 0:
        return np.zeros((c, oh, ow))
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    crop = image[:, r0:r1, c0:c1]
    if not np.isfinite(crop).all():
        return _average_masked(crop, ay[:, r0:r1], ax[:, c0:c1]) / (y.grid[0] * x.grid[0])
    return _sums(crop, ay[:, r0:r1], ax[:, c0:c1]) / (y.grid[0] * x.grid[0])


def _sums(crop: np.ndarray, ay: np.ndarray, ax: np.ndarray) -> np.ndarray:
    """[C, oh, ow]: ay @ crop[c] @ ax^T for each channel, a block of channels at a time (the x pass
    holds channels x rows x ow, not all C at once)."""
    c, rows, cols = crop.shape
    oh, ow = ay.shape[0], ax.shape[0]
    step = max(1, _BLOCK // (rows * max(ow, cols)))
    out = np.empty((c, oh, ow))
    for lo in range(0, c, step):
        part = crop[lo : lo + step]
        t = (part.reshape(-1, cols) @ ax.T).reshape(part.shape[0], rows, ow)
        out[lo : lo + step] = np.einsum("ph,chq->cpq", ay, t)
    return out


def _average_masked(crop: np.ndarray, ay: np.ndarray, ax: np.ndarray) -> np.ndarray:
    """The sums of :func:`_average` where the crop holds inf or NaN: a pixel enters a bin only with a
    non-zero weight, so a weight of 0 never turns inf into NaN. The finite pixels are summed as usual
    (the others as 0); then each bin that gives a NaN, +inf or -inf pixel a non-zero weight gets that
    value added (weights are > 0: w * inf is inf), which IEEE makes NaN for NaN or both infinities."""
    special = ~np.isfinite(crop)
    out = _sums(np.where(special, 0.0, crop), ay, ax)
    touch_y, touch_x = (ay != 0).astype(np.float64), (ax != 0).astype(np.float64)
    with np.errstate(invalid="ignore"):
        for value, where in ((np.nan, np.isnan(crop)), (np.inf, crop == np.inf), (-np.inf, crop == -np.inf)):
            if where.any():
                out[_sums(where.astype(np.float64), touch_y, touch_x) > 0] += value
    return out


def _maximum(image: np.ndarray, y: _Samples, x: _Samples) -> np.ndarray:
    """[C, oh, ow]: per bin, the largest weighted corner term w_y * (w_x * pixel) over its samples and
    their four corners (a term with a weight 0 counts as 0; a zero maximum is +0), rounded as the
    compiled loop rounds them: the same bits."""
    c = image.shape[0]
    iy, wy, ix, wx = y.tab.ravel(), y.w.ravel(), x.tab.ravel(), x.w.ravel()  # point-major, then corner
    oh, ow, gy, gx = y.bins, x.bins, int(y.grid[0]), int(x.grid[0])
    size = wy.size * wx.size
    if size > MAX_TERMS:  # before the gathered pixels, which would be that large
        raise KernelError(
            f"max mode would compare {size} weighted terms per channel of one ROI, more than {MAX_TERMS}"
        )
    zero_y, zero_x = (wy == 0)[:, None], wx == 0
    out = np.empty((c, oh, ow))
    step = max(1, _BLOCK // max(size, 1))
    for lo in range(0, c, step):
        pixels = image[lo : lo + step][:, iy][:, :, ix]
        if np.isfinite(pixels).all():
            block = (pixels * wx) * wy[:, None]
        else:
            with np.errstate(invalid="ignore"):
                block = np.where(zero_y, 0.0, np.where(zero_x, 0.0, pixels * wx) * wy[:, None])
        block = block.reshape(block.shape[0], oh, 2 * gy, ow, 2 * gx)
        out[lo : lo + step] = block.max(axis=(2, 4)) + 0.0  # -0.0 + 0.0 is +0.0
    return out


def bind(**attrs: Any) -> Callable[..., np.ndarray]:
    """``roi_align`` with its attributes fixed (the ONNX Runtime hook calls it once per node)."""

    def bound(X: Any, rois: Any, batch_indices: Any) -> np.ndarray:
        return roi_align(X, rois, batch_indices, **attrs)

    return bound
