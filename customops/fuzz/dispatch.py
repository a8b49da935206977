"""The space of every operator we fuzz, and the drawing of one case from it.

This module sits above :mod:`.space` and the ``spaces_*`` modules (which import :mod:`.space` only), so
imports go one way: triage, campaign and the command find a space here.
"""

from __future__ import annotations

from dataclasses import dataclass

from customops.fuzz.case import Case, carriable
from customops.fuzz.spaces.activations import ActivationSpace
from customops.fuzz.spaces.affine_grid import AffineGridSpace
from customops.fuzz.spaces.base import FLOAT_SHARE, INVALID_SHARE, Space, Verdict, case_rng
from customops.fuzz.spaces.col2im import Col2ImSpace
from customops.fuzz.spaces.deform_conv import DeformConvSpace
from customops.fuzz.spaces.grid_sample import GridSampleSpace
from customops.fuzz.spaces.max_roi_pool import MaxRoiPoolSpace
from customops.fuzz.spaces.pad import CenterCropPadSpace, PadSpace
from customops.fuzz.spaces.quant_conv import ConvIntegerSpace, QLinearConvSpace
from customops.fuzz.spaces.quant_matmul import MatMulIntegerSpace, QLinearMatMulSpace
from customops.fuzz.spaces.quantize import (
    DequantizeLinearSpace,
    DynamicQuantizeLinearSpace,
    QuantizeLinearSpace,
)
from customops.fuzz.spaces.resize import ResizeSpace, UpsampleSpace
from customops.fuzz.spaces.roi_align import RoiAlignSpace
from customops.registry import ACTIVATION_OPS, OpVersion, type_support


def spaces() -> dict[str, Space]:
    """The space of every operator we fuzz, by op type."""
    return {
        s.op: s
        for s in (
            ResizeSpace(),
            UpsampleSpace(),
            PadSpace(),
            Col2ImSpace(),
            CenterCropPadSpace(),
            GridSampleSpace(),
            AffineGridSpace(),
            RoiAlignSpace(),
            MaxRoiPoolSpace(),
            DeformConvSpace(),
            QuantizeLinearSpace(),
            DequantizeLinearSpace(),
            DynamicQuantizeLinearSpace(),
            MatMulIntegerSpace(),
            QLinearMatMulSpace(),
            ConvIntegerSpace(),
            QLinearConvSpace(),
            *(ActivationSpace(op.name) for op in ACTIVATION_OPS),
        )
    }


_SPACES: dict[str, Space] = {}


def space_of(op: str) -> Space:
    """The space of ``op`` (one instance per process)."""
    if not _SPACES:
        _SPACES.update(spaces())
    return _SPACES[op]


@dataclass
class Drawn:
    """A generated case with the oracle's verdict, or a skip (``skipped`` says why; ``case`` is then None
    when the element type was refused before drawing anything)."""

    case: Case | None
    verdict: Verdict | None
    dtype: str
    skipped: str | None = None


def make_case(opv: OpVersion, seed: int, index: int) -> Drawn:
    """Case ``index`` of ``opv`` for ``seed``: a function of (seed, index, op, version) alone."""
    rng = case_rng(seed, index, opv.op, opv.version)
    dtype = str(rng.choice(opv.types))
    if "float" in opv.types and rng.random() < FLOAT_SHARE:
        dtype = "float"
    how, why = type_support(opv, dtype)
    if how == "no":
        return Drawn(None, None, dtype, why or f"element type {dtype} is not supported")
    space = space_of(opv.op)
    invalid = rng.random() < INVALID_SHARE
    case = space.generate(rng, opv, dtype)
    case.seed, case.index = seed, index
    if invalid:
        mutations = space.mutations(opv)
        for _ in range(4):
            mutate = mutations[int(rng.integers(0, len(mutations)))]
            mutated = mutate(rng, case)
            if mutated is not None:
                case = mutated
                break
    ok, why = carriable(case)
    if not ok:
        return Drawn(None, None, dtype, why)
    return Drawn(case, space.validate(case), dtype)
