"""Case space of Col2Im (18): 1 to 3 spatial axes, blocks, pads, strides and dilations, N and C of 0."""

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
    convert_case,
    draw_values,
    index_array,
)
from customops.fuzz.spaces.simplifications import value_simplifications
from customops.registry import OpVersion

_ATTRS = ("dilations", "pads", "strides")


def _geometry(case: Case) -> tuple[list[int], list[int], list[int], list[int], list[int]] | None:
    """(image, block, dilations, strides, pads) with defaults, or None when lengths do not fit."""
    image = [int(v) for v in case.inputs["image_shape"].value.tolist()]  # type: ignore[union-attr]
    block = [int(v) for v in case.inputs["block_shape"].value.tolist()]  # type: ignore[union-attr]
    r = len(image)
    dil = list(case.attrs.get("dilations", [1] * r))
    stride = list(case.attrs.get("strides", [1] * r))
    pads = list(case.attrs.get("pads", [0] * 2 * r))
    if len(block) != r or len(dil) != r or len(stride) != r or len(pads) != 2 * r:
        return None
    return image, block, dil, stride, pads


def _counts(
    image: list[int], block: list[int], dil: list[int], stride: list[int], pads: list[int]
) -> list[int]:
    r = len(image)
    return [
        (image[i] + pads[i] + pads[r + i] - (dil[i] * (block[i] - 1) + 1)) // stride[i] + 1 for i in range(r)
    ]


def _rebuild(
    case: Case, image: list[int], block: list[int], attrs: dict, channels: int | None = None
) -> Case | None:
    """``case`` with a new geometry; the input keeps the old values where the shapes overlap."""
    out = case.clone(attrs={k: v for k, v in case.attrs.items() if k not in _ATTRS})
    out.attrs.update(attrs)
    out.inputs["image_shape"] = Tensor(index_array(image), case.inputs["image_shape"].const)  # type: ignore[union-attr]
    out.inputs["block_shape"] = Tensor(index_array(block), case.inputs["block_shape"].const)  # type: ignore[union-attr]
    g = _geometry(out)
    if g is None:
        return None
    counts = _counts(*g)
    if min(counts, default=1) < 1:
        return None
    x = case.main
    k_old = math.prod(int(v) for v in case.inputs["block_shape"].value.tolist())  # type: ignore[union-attr]
    c = channels if channels is not None else (x.shape[1] // k_old if k_old else 0)
    shape = (x.shape[0], c * math.prod(block), math.prod(counts))
    new = V.simple(shape, case.dtype)
    n, ck, length = (min(a, b) for a, b in zip(shape, x.shape, strict=True))
    new[:n, :ck, :length] = x[:n, :ck, :length]
    out.inputs["input"] = Tensor(new)
    return out


class Col2ImSpace(Space):
    """Col2Im-18."""

    op = "Col2Im"

    def generate(self, rng: np.random.Generator, opv: OpVersion, dtype: str) -> Case:
        case = None
        for _ in range(60):
            r = int(rng.choice([1, 2, 3], p=[0.15, 0.6, 0.25]))
            block = [int(rng.integers(1, 4)) for _ in range(r)]
            attrs: dict = {}
            dil = [int(rng.integers(1, 4)) for _ in range(r)] if rng.random() < 0.4 else [1] * r
            stride = [int(rng.integers(1, 4)) for _ in range(r)] if rng.random() < 0.4 else [1] * r
            pads = [int(rng.integers(0, 3)) for _ in range(2 * r)] if rng.random() < 0.4 else [0] * (2 * r)
            for name, value, default in (("dilations", dil, 1), ("strides", stride, 1), ("pads", pads, 0)):
                if any(v != default for v in value) or rng.random() < 0.15:
                    attrs[name] = value
            image = []
            for i in range(r):
                extent = dil[i] * (block[i] - 1) + 1
                low = max(0, extent - pads[i] - pads[r + i])
                image.append(int(rng.integers(low, low + 5)))
            counts = _counts(image, block, dil, stride, pads)
            n = int(rng.choice([0, 1, 1, 2]))
            c = int(rng.choice([0, 1, 1, 2, 3]))
            shape = (n, c * math.prod(block), math.prod(counts))
            if math.prod(shape) > IN_LIMIT or n * c * math.prod(image) > OUT_LIMIT:
                continue
            inputs: dict[str, Tensor | None] = {
                "input": Tensor(draw_values(rng, dtype, shape)),
                "image_shape": Tensor(index_array(image), bool(rng.random() < 0.6)),
                "block_shape": Tensor(index_array(block), bool(rng.random() < 0.6)),
            }
            case = Case(opv.op, opv.version, dtype, inputs, attrs)
            if self.validate(case).valid:
                return case
        assert case is not None
        return case

    def validate(self, case: Case) -> Verdict:
        x = case.main
        if x.ndim != 3:
            return Verdict("input-rank")
        image = [int(v) for v in case.inputs["image_shape"].value.tolist()]  # type: ignore[union-attr]
        block = [int(v) for v in case.inputs["block_shape"].value.tolist()]  # type: ignore[union-attr]
        r = len(image)
        if r == 0:
            return Verdict("image-shape-empty")
        if len(block) != r:
            return Verdict("block-shape-length")
        if any(v < 0 for v in image):
            return Verdict("image-shape-negative")
        if any(v < 1 for v in block):
            return Verdict("block-shape-nonpositive")
        for name, count, minimum in (("dilations", r, 1), ("strides", r, 1), ("pads", 2 * r, 0)):
            value = case.attrs.get(name)
            if value is None:
                continue
            if len(value) != count:
                return Verdict(f"attr-length:{name}")
            if any(v < minimum for v in value):
                return Verdict(f"attr-value:{name}")
        g = _geometry(case)
        assert g is not None
        kernel = math.prod(block)
        if x.shape[1] % kernel:
            return Verdict("channels-not-multiple")
        counts = _counts(*g)
        if any(c < 1 for c in counts):
            return Verdict("block-does-not-fit")
        if x.shape[2] != math.prod(counts):
            return Verdict("block-count")
        return Verdict(None, (x.shape[0], x.shape[1] // kernel, *image))

    def mutations(self, opv: OpVersion) -> list[Callable[[np.random.Generator, Case], Case | None]]:
        return [
            _mutate_block_count,
            _mutate_channels,
            _mutate_attr_value,
            _mutate_attr_length,
            _mutate_block_size,
        ]

    def features(self, case: Case) -> Iterator[tuple[str, Case]]:
        g = _geometry(case)
        if g is not None:
            image, block, *_ = g
            yield from _attrs_at_default(case, image, block)
        if case.dtype != "float":
            simpler_t = convert_case(case, "float")
            if simpler_t is not None:
                yield f"dtype={case.dtype}", simpler_t
        mask = V.special_mask(case.main, case.dtype)
        if mask.any():
            yield "special-values", case.with_input("input", V.replace_specials(case.main, case.dtype))

    def simplifications(self, case: Case) -> Iterator[Candidate]:
        x = case.main
        g = _geometry(case)
        if g is None:
            yield from value_simplifications(case)
            return
        image, block, dil, stride, pads = g
        k = math.prod(block) or 1
        c = x.shape[1] // k
        if x.shape[0] > 1:
            yield "N=1", case.with_input("input", x[:1])
        if c > 1:
            yield "C=1", case.with_input("input", x[:, :k])
        yield from _fewer_spatial_axes(case, image, block, dil, stride, pads)
        for name, simpler in _attrs_at_default(case, image, block):
            yield f"default {name}", simpler
        for i in range(len(image)):
            yield from _smaller_on_axis(case, i, image, block, dil, stride)
        yield from _zero_pads(case, image, block, pads)
        yield from value_simplifications(case)
        for name in ("image_shape", "block_shape"):
            t = case.inputs[name]
            if t is not None and t.const:
                yield f"{name} as input", case.with_input(name, t.value, const=False)


# ---------------------------------------------------------------------------------------------
# simplification steps (in the order Col2ImSpace.simplifications tries them)


def _fewer_spatial_axes(
    case: Case, image: list[int], block: list[int], dil: list[int], stride: list[int], pads: list[int]
) -> Iterator[Candidate]:
    """``case`` without spatial axis i (its image, block and attribute entries), last axis first; none
    when there is one spatial axis only."""
    r = len(image)
    if r <= 1:
        return
    for i in reversed(range(r)):
        attrs = {}
        for name, value in (("dilations", dil), ("strides", stride)):
            if name in case.attrs:
                attrs[name] = value[:i] + value[i + 1 :]
        if "pads" in case.attrs:
            attrs["pads"] = pads[:i] + pads[i + 1 : r + i] + pads[r + i + 1 :]
        simpler = _rebuild(case, image[:i] + image[i + 1 :], block[:i] + block[i + 1 :], attrs)
        if simpler is not None:
            yield f"drop spatial axis {i}", simpler


def _attrs_at_default(case: Case, image: list[int], block: list[int]) -> Iterator[tuple[str, Case]]:
    """(name, ``case`` without attribute ``name``) for each of dilations, pads and strides it sets."""
    for name in _ATTRS:
        if name in case.attrs:
            attrs = {a: v for a, v in case.attrs.items() if a != name}
            simpler = _rebuild(case, image, block, attrs)
            if simpler is not None:
                yield name, simpler


def _smaller_on_axis(
    case: Case, i: int, image: list[int], block: list[int], dil: list[int], stride: list[int]
) -> Iterator[Candidate]:
    """``case`` with a smaller block or image on spatial axis i, or its dilation or stride there at 1."""
    for target in sorted({1, block[i] // 2, block[i] - 1}):
        if 0 < target < block[i]:
            new_block = list(block)
            new_block[i] = target
            simpler = _rebuild(case, image, new_block, dict(case.attrs))
            if simpler is not None:
                yield f"block[{i}]={target}", simpler
    for target in sorted({0, 1, image[i] // 2, image[i] - 1}):
        if 0 <= target < image[i]:
            new_image = list(image)
            new_image[i] = target
            simpler = _rebuild(case, new_image, block, dict(case.attrs))
            if simpler is not None:
                yield f"image[{i}]={target}", simpler
    for name, value, default in (("dilations", dil, 1), ("strides", stride, 1)):
        if name in case.attrs and value[i] > default:
            attrs = dict(case.attrs)
            attrs[name] = [*value[:i], default, *value[i + 1 :]]
            simpler = _rebuild(case, image, block, attrs)
            if simpler is not None:
                yield f"{name}[{i}]={default}", simpler


def _zero_pads(case: Case, image: list[int], block: list[int], pads: list[int]) -> Iterator[Candidate]:
    """``case`` with one positive entry of pads set to 0, first entry first."""
    if "pads" not in case.attrs:
        return
    for i, v in enumerate(pads):
        if v > 0:
            attrs = dict(case.attrs)
            attrs["pads"] = [*pads[:i], 0, *pads[i + 1 :]]
            simpler = _rebuild(case, image, block, attrs)
            if simpler is not None:
                yield f"pads[{i}]=0", simpler


# ---------------------------------------------------------------------------------------------
# mutations


def _mutate_block_count(rng: np.random.Generator, case: Case) -> Case | None:
    x = case.main
    extra = V.simple((x.shape[0], x.shape[1], 1), case.dtype)
    longer = np.concatenate([x, extra], axis=2)
    return case.with_input("input", longer if rng.random() < 0.5 or x.shape[2] <= 1 else x[:, :, :-1])


def _mutate_channels(rng: np.random.Generator, case: Case) -> Case | None:
    block = case.inputs["block_shape"].value  # type: ignore[union-attr]
    if math.prod(int(v) for v in block.tolist()) <= 1:
        return None
    x = case.main
    extra = V.simple((x.shape[0], 1, x.shape[2]), case.dtype)
    return case.with_input("input", np.concatenate([x, extra], axis=1))


def _mutate_attr_value(rng: np.random.Generator, case: Case) -> Case | None:
    r = case.inputs["image_shape"].value.size  # type: ignore[union-attr]
    name = str(rng.choice(_ATTRS))
    default = 0 if name == "pads" else 1
    count = 2 * r if name == "pads" else r
    value = list(case.attrs.get(name, [default] * count))
    value[int(rng.integers(0, count))] = -1 if name == "pads" else int(rng.choice([0, -1]))
    return case.with_attrs(**{name: value})


def _mutate_attr_length(rng: np.random.Generator, case: Case) -> Case | None:
    r = case.inputs["image_shape"].value.size  # type: ignore[union-attr]
    name = str(rng.choice(_ATTRS))
    default = 0 if name == "pads" else 1
    count = 2 * r if name == "pads" else r
    value = list(case.attrs.get(name, [default] * count))
    return case.with_attrs(**{name: [*value, default] if rng.random() < 0.5 or count <= 1 else value[:-1]})


def _mutate_block_size(rng: np.random.Generator, case: Case) -> Case | None:
    t = case.inputs["block_shape"]
    assert t is not None
    block = [int(v) for v in t.value.tolist()]
    if not block:
        return None
    i = int(rng.integers(0, len(block)))
    image = [int(v) for v in case.inputs["image_shape"].value.tolist()]  # type: ignore[union-attr]
    block[i] = int(rng.choice([0, -1, image[i] + 4]))
    return case.with_input("block_shape", index_array(block))
