"""Labels for groups that match a documented deviation: an id of docs/ort-deviations.md, or a row of
docs/semantics.md ("semantics: <row>") where the difference is a recorded decision.

The labels only name what a group is; they play no part in generating cases or in the signatures. Each
rule looks at the signature and at facts of the shrunk representative (:func:`facts`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def facts(ev: Any) -> dict[str, Any]:
    """What the rules need to know about a representative (an Evaluation): rank, T, attributes, whether
    the output keeps the input shape, whether ORT's output is its input, index input types, Col2Im's
    number of spatial axes."""
    case = ev.case
    x = case.main
    out: dict[str, Any] = {"rank": int(x.ndim), "dtype": case.dtype, "attrs": dict(case.attrs)}
    shape = ev.verdict.out_shape
    if shape is not None:
        out["same_shape"] = tuple(shape) == tuple(x.shape)
        out["kept_axes"] = sum(1 for a, b in zip(shape, x.shape, strict=True) if a == b)
    b = ev.outcomes.get("builtin")
    if b is not None and b.status == "ok":
        value = np.asarray(b.value)
        try:
            same = value.shape == x.shape and bool(
                np.array_equal(value, x.astype(value.dtype), equal_nan=value.dtype.kind == "f")
            )
        except (TypeError, ValueError):
            same = False
        out["builtin_returns_input"] = same
    for name in ("roi", "axes", "shape", "image_shape"):
        t = case.inputs.get(name)
        if t is not None:
            out[f"{name}_elem"] = t.elem
            out[f"{name}_const"] = t.const
            if name == "image_shape":
                out["spatial"] = int(t.value.size)
    return out


def _has(entry: dict[str, Any], text: str) -> bool:
    return text in entry["signature"]["detail"]


def _feature(entry: dict[str, Any], prefix: str) -> bool:
    return any(f.startswith(prefix) for f in entry["signature"]["features"])


def _attr(entry: dict[str, Any], name: str) -> Any:
    return entry.get("facts", {}).get("attrs", {}).get(name)


def _fact(entry: dict[str, Any], name: str) -> Any:
    return entry.get("facts", {}).get(name)


def _output_kind(entry: dict[str, Any]) -> bool:
    return entry["signature"]["kind"] in ("value", "shape", "dtype")


def _ort_side(entry: dict[str, Any]) -> bool:
    return entry["signature"]["side"] in ("builtin", "unknown", "three-way")


_RULES: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
    # missing element types (NOT_IMPLEMENTED at load)
    *[
        (
            f"T-{op.upper()}",
            (
                lambda e, op=op: (
                    e["signature"]["op"] == op
                    and e["signature"]["side"] in ("builtin", "builtin+custom", "all")
                    and e["signature"]["kind"] == "rejects-valid"
                    and (_has(e, "Could not find an implementation") or _has(e, "Failed to find kernel"))
                )
            ),
        )
        for op in ("Resize", "Upsample", "Pad", "Col2Im", "CenterCropPad")
    ],
    (
        "R-LINEAR-RANK",
        lambda e: (
            e["signature"]["op"] == "Resize"
            and _has(e, "'Linear' mode only supports")
            and _fact(e, "rank") in (1, 6)
        ),
    ),
    (
        "R-LINEAR-OUTER-AXIS",
        lambda e: (
            e["signature"]["op"] == "Resize"
            and _has(e, "'Linear' mode only supports")
            and _fact(e, "rank") in (2, 3, 4, 5)
        ),
    ),
    (
        "U-LINEAR-RANK",
        lambda e: e["signature"]["op"] == "Upsample" and _has(e, "'Linear' mode only supports"),
    ),
    ("R-CUBIC-NHWC-DOWN", lambda e: _has(e, "'Cubic' mode only supports") and _fact(e, "rank") == 4),
    ("R-CUBIC-RANK", lambda e: _has(e, "'Cubic' mode only supports") and _fact(e, "rank") != 4),
    (
        "R-CUBIC-INT-RUNTIME-ERROR",
        lambda e: (
            _has(e, "Tensor type mismatch")
            and _attr(e, "mode") == "cubic"
            and _fact(e, "dtype") in _INT_TYPES
        ),
    ),
    (
        "R-ALIGN-CORNERS-INT-LENGTH",
        lambda e: (
            _output_kind(e) and _ort_side(e) and _feature(e, "coordinate_transformation_mode=align_corners")
        ),
    ),
    (
        "R-HPS-FLOAT-ROUNDING",
        lambda e: (
            _output_kind(e)
            and _ort_side(e)
            and _feature(e, "coordinate_transformation_mode=half_pixel_symmetric")
        ),
    ),
    (
        "R-TFCROP-SAME-LENGTH-NO-ROI",
        lambda e: (
            _output_kind(e)
            and _ort_side(e)
            and _attr(e, "coordinate_transformation_mode") == "tf_crop_and_resize"
            and (_fact(e, "kept_axes") or 0) > 0
        ),
    ),
    (
        "R-SAME-SHAPE-NO-OP",
        lambda e: (
            _output_kind(e)
            and _ort_side(e)
            and bool(_fact(e, "same_shape"))
            and bool(_fact(e, "builtin_returns_input"))
            and _attr(e, "coordinate_transformation_mode")
            not in ("tf_crop_and_resize", "tf_half_pixel_for_nn")
        ),
    ),
    (
        "R-AA-INT8-CLAMP",
        lambda e: (
            _output_kind(e) and _ort_side(e) and _fact(e, "dtype") == "int8" and _attr(e, "antialias") == 1
        ),
    ),
    (
        "R-INT-TRUNCATION",
        lambda e: (
            _output_kind(e)
            and _ort_side(e)
            and _fact(e, "dtype") in _INT_TYPES
            and _attr(e, "mode") == "linear"
            and _attr(e, "antialias") != 1
            and not _fact(e, "builtin_returns_input")
        ),
    ),
    (
        "P-REFLECT-PAD-GE-DIM",
        lambda e: _has(e, "exceeds maximum allowed") or _has(e, "requires axis length >="),
    ),
    ("P-CROP-TO-EMPTY", lambda e: _has(e, "zero effective input extent")),
    ("P-WRAP-EMPTY-TENSOR", lambda e: _has(e, "Unexpected mode of")),
    ("P-AXES-INT32-INIT", lambda e: _has(e, "ParseData type mismatch for tensor: axes")),
    (
        "C-3D-DILATION",
        lambda e: (
            e["signature"]["op"] == "Col2Im"
            and _output_kind(e)
            and _ort_side(e)
            and _feature(e, "dilations")
            and _fact(e, "spatial") == 3
        ),
    ),
    ("CCP-INT32-SHAPE", lambda e: _has(e, "bound to different types")),
    # recorded decisions (docs/semantics.md)
    (
        "semantics: scale-1 axes",
        lambda e: (
            _output_kind(e)
            and _attr(e, "coordinate_transformation_mode") == "tf_half_pixel_for_nn"
            and (_fact(e, "kept_axes") or 0) > 0
        ),
    ),
    (
        "semantics: inf / NaN inputs",
        lambda e: (
            _output_kind(e) and _feature(e, "special-values") and _attr(e, "mode") in ("linear", "cubic")
        ),
    ),
    (
        "semantics: `antialias=1` with `nearest`",
        lambda e: _has(e, "when anti-aliasing is set, Resize only supports"),
    ),
    (
        "semantics: Col2Im: dilation > 1 with blocks in the end padding, C > 1, 1-D or 3-D images",
        lambda e: (
            e["signature"]["op"] == "Col2Im"
            and _output_kind(e)
            and _ort_side(e)
            and _feature(e, "dilations")
            and _fact(e, "spatial") == 1
        ),
    ),
    (
        "semantics: Col2Im: C = 0 (input dim 1 = 0) or N = 0",
        lambda e: _has(e, "must be a positive multiple of prod(block_shape"),
    ),
    (
        "semantics: Pad: repeated axis in `axes`",
        lambda e: e["signature"]["op"] == "Pad" and e["signature"]["detail"] == "axes-repeated",
    ),
    (
        "semantics: CenterCropPad: negative target size",
        lambda e: e["signature"]["op"] == "CenterCropPad" and e["signature"]["detail"] == "shape-negative",
    ),
    (
        "semantics: CenterCropPad: `shape` length ≠ number of axes",
        lambda e: e["signature"]["op"] == "CenterCropPad" and e["signature"]["detail"] == "shape-length",
    ),
    (
        "semantics: Upsample-7/9",
        lambda e: e["signature"]["op"] == "Upsample" and e["signature"]["detail"] == "upsample-scale-below-1",
    ),
]


def known_labels(entry: dict[str, Any]) -> list[str]:
    """The documented deviations a group's summary entry matches (empty: new)."""
    return [name for name, rule in _RULES if _safe(rule, entry)]


def _safe(rule: Callable[[dict[str, Any]], bool], entry: dict[str, Any]) -> bool:
    try:
        return bool(rule(entry))
    except (KeyError, TypeError):
        return False
