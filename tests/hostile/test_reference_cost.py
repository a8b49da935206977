"""The reference limit bounds what onnx.reference really does: customops.kernels.work estimates, per op,
the loops of onnx.reference's own code (onnx 1.23), so that shapes its loops handle badly are counted as
such. GridSample's linear mode reads the whole first spatial axis for every grid point: X of 1x1xHx1
with G points costs G x H, which the old estimate counted as about H + 6G (a node at 73 % of the limit
ran its whole timeout).

The loops are counted by tracing the reference (every line of onnx/reference/ops/ it runs), not timed:
for every case, ordinary and pathological, the estimate is at least a fixed share of the lines run."""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import onnx.reference.ops
import pytest
from onnx.reference import ReferenceEvaluator

from customops.comparison.isolate import reference_work_of
from customops.kernels.work import PYTHON_MICROSECOND, reference_work
from customops.model.rewriter import rewrite_model
from tests.helpers import one_node_model

F, INT = np.float32, np.int64
OPS_DIR = os.path.dirname(onnx.reference.ops.__file__)

LINES_PER_STEP = {"GridSample": 2, "DeformConv": 2, "RoiAlign": 2, "Col2Im": 2}
"""Lines of the reference's Python one step of the estimate may stand for at most (these ops are counted
in lines: the estimate is within a few percent of the lines traced, a step may stand for two)."""

RESIZE_LINE = PYTHON_MICROSECOND / 20
"""Resize is counted in elements of its arrays, a microsecond of its Python as PYTHON_MICROSECOND: a
line (0.1 µs or more) as at least a twentieth of that, half of what it costs."""


def _traced_lines(model, feed) -> int:
    """Lines of onnx/reference/ops/ run by the reference on ``model`` (an error of the reference ends the
    count where it is raised)."""
    evaluator = ReferenceEvaluator(model)
    count = 0

    def local(frame, event, _arg):
        nonlocal count
        count += event == "line"
        return local

    def calls(frame, _event, _arg):
        return local if frame.f_code.co_filename.startswith(OPS_DIR) else None

    sys.settrace(calls)
    try:
        evaluator.run(None, feed)
    except Exception:  # refused by the reference: the lines run so far count
        pass
    finally:
        sys.settrace(None)
    return count


def _work_and_lines(op, inputs, opset, initializers=(), **attrs) -> tuple[float, int]:
    model, feed = one_node_model(op, inputs, opset, initializers=initializers, **attrs)
    return reference_work_of(rewrite_model(model).model, feed), _traced_lines(model, feed)


def _grid(xs, gs, mode):
    x, grid = np.ones(xs, F), np.linspace(-1, 1, int(np.prod(gs)), dtype=F).reshape(gs)
    return "GridSample", {"X": x, "grid": grid}, 20, (), {"mode": mode}


def _deform(n, ic, ih, iw, oc, k, group=1):
    oh, ow = ih - k + 1, iw - k + 1
    offset = np.linspace(-0.5, 0.5, n * 2 * k * k * oh * ow, dtype=F).reshape(n, 2 * k * k, oh, ow)
    inputs = {"X": np.ones((n, ic, ih, iw), F), "W": np.ones((oc, ic // group, k, k), F), "offset": offset}
    return "DeformConv", inputs, 19, (), {"group": group}


def _roi(channels, rois, size, ratio):
    inputs = {
        "X": np.ones((1, channels, 8, 8), F),
        "rois": np.array(rois, F),
        "batch_indices": np.zeros(len(rois), INT),
    }
    attrs = {"output_height": size, "output_width": size, "sampling_ratio": ratio}
    return "RoiAlign", inputs, 16, (), attrs


def _col2im(n, c, image, block):
    length = int(np.prod([i - b + 1 for i, b in zip(image, block, strict=True)]))
    x = np.ones((n, c * int(np.prod(block)), length), F)
    inputs = {"input": x, "image_shape": np.array(image, INT), "block_shape": np.array(block, INT)}
    return "Col2Im", inputs, 18, ("image_shape", "block_shape"), {}


CASES = {
    "GridSample linear 8x8": _grid((1, 1, 8, 8), (1, 8, 8, 2), "linear"),
    "GridSample linear 1x1x300x1 (the report)": _grid((1, 1, 300, 1), (1, 6, 6, 2), "linear"),
    "GridSample cubic 1x1x200x1": _grid((1, 1, 200, 1), (1, 4, 4, 2), "cubic"),
    "GridSample linear 1x1x24x24x1 (3-D)": _grid((1, 1, 24, 24, 1), (1, 2, 2, 2, 3), "linear"),
    "GridSample nearest 64 channels, one point": _grid((1, 64, 2, 2), (1, 1, 1, 2), "nearest"),
    "DeformConv 2x8x8, 3x3": _deform(1, 2, 8, 8, 2, 3),
    "DeformConv 1x120x3 (tall plane)": _deform(1, 1, 120, 3, 1, 2),
    "DeformConv 16 groups of one channel": _deform(1, 16, 3, 3, 16, 1, group=16),
    "RoiAlign 4 channels, 3x3 bins, 2 samples": _roi(4, [[0, 0, 4, 4]] * 20, 3, 2),
    "RoiAlign rois with no samples, 40 channels": _roi(40, [[4, 4, 0, 0]] * 20, 3, 0),
    "RoiAlign two negative sizes (a table of 900)": _roi(1, [[30, 30, 0, 0]] * 5, 1, 0),
    "RoiAlign one tall roi of negative width": _roi(2, [[4, 0, 0, 300]] * 5, 1, 0),
    "Col2Im 2-D": _col2im(1, 2, [12, 12], [2, 2]),
    "Col2Im 3-D": _col2im(1, 1, [8, 8, 4], [2, 2, 2]),
    "Col2Im 300 channels of one element": _col2im(1, 300, [1, 1], [1, 1]),
}


ORDINARY = {
    "GridSample": "GridSample linear 8x8",
    "DeformConv": "DeformConv 2x8x8, 3x3",
    "RoiAlign": "RoiAlign 4 channels, 3x3 bins, 2 samples",
    "Col2Im": "Col2Im 2-D",
}
"""The ordinary case of each op, whose cost the op's limit was measured on."""


@functools.cache
def _case(name: str) -> tuple[float, int]:
    op, inputs, opset, initializers, attrs = CASES[name]
    return _work_and_lines(op, inputs, opset, initializers, **attrs)


@pytest.mark.parametrize("case", list(CASES))
def test_the_estimate_counts_the_lines_the_reference_runs(case):
    """At least a step per LINES_PER_STEP lines, and for every shape at least half the steps per line
    of the op's ordinary case: no shape makes the reference cost more than twice what its estimate
    says, relative to the shape the limit was measured on."""
    op = CASES[case][0]
    work, lines = _case(case)
    assert lines > 100, lines  # the reference ran (the case is not refused at once)
    assert work * LINES_PER_STEP[op] >= lines, (work, lines)
    ordinary_work, ordinary_lines = _case(ORDINARY[op])
    assert work / lines >= ordinary_work / ordinary_lines / 2, (work, lines, ordinary_work, ordinary_lines)


def _resize(shape, scales, mode, axes=None, antialias=0):
    attrs = {"mode": mode, **({"axes": axes} if axes else {}), **({"antialias": 1} if antialias else {})}
    inputs = {"X": np.ones(shape, F), "roi": None, "scales": np.array(scales, F)}
    return inputs, attrs


RESIZES = {
    "nearest x2": _resize((1, 3, 16, 16), [1, 1, 2, 2], "nearest"),
    "cubic x3 along 2000": _resize((1, 1, 1, 2000), [1, 1, 1, 3], "cubic"),
    "cubic antialias to 1/100": _resize((1, 1, 2, 2000), [1, 1, 1, 0.01], "cubic", antialias=1),
    "400 resizes of one element (axes)": _resize((400, 1, 1, 1), [2], "nearest", axes=[3]),
    "400 resizes of two axes (axes)": _resize((400, 1, 1, 1), [2, 2], "linear", axes=[2, 3]),
}


@pytest.mark.parametrize("case", list(RESIZES))
def test_resize_s_estimate_counts_its_python_as_well_as_its_elements(case):
    """Resize runs in numpy one axis at a time, but with ``axes`` once per element of the other axes
    (a Python loop), and its coefficients are a Python call per output position (and per tap, cubic
    with antialias)."""
    inputs, attrs = RESIZES[case]
    work, lines = _work_and_lines("Resize", inputs, 19, ("scales",), **attrs)
    assert lines > 100, lines
    assert work >= RESIZE_LINE * lines, (work, lines)


def test_affine_grid_s_estimate_counts_the_base_grid_whatever_the_batch():
    """onnx.reference builds the base grid of ``size``'s spatial part once, whatever the batch, and takes
    the batch from theta: a size of [0, 1, 2000, 2000] asks for 4M points of it."""
    size = np.array([0, 1, 2000, 2000], INT)
    empty, one = np.zeros((0, 2, 3), F), np.zeros((1, 2, 3), F)
    assert reference_work("AffineGrid", [empty, size], {}) >= 8 * 2000 * 2000
    assert reference_work("AffineGrid", [one, size], {}) > reference_work("AffineGrid", [empty, size], {})
