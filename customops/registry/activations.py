"""The activation family: one input X, elementwise (kernels in customops.kernels.activations)."""

from __future__ import annotations

from customops.registry.core import NUMERIC_NATIVE, Attr, CustomOp, Family, Input, OpVersion

_ACTIVATIONS: tuple[tuple[str, str, tuple[tuple[str, str], ...], int], ...] = (
    ("Sigmoid", "sigmoid", (), 60_000_000),
    ("Tanh", "tanh", (), 60_000_000),
    ("Erf", "erf", (), 12_000_000),
    ("Gelu", "gelu", (("approximate", "string"),), 12_000_000),
    ("Softplus", "softplus", (), 50_000_000),
    ("Mish", "mish", (), 50_000_000),
    ("Swish", "swish", (("alpha", "float"),), 60_000_000),
    ("HardSigmoid", "hard_sigmoid", (("alpha", "float"), ("beta", "float")), 60_000_000),
    ("HardSwish", "hard_swish", (), 60_000_000),
    ("Elu", "elu", (("alpha", "float"),), 60_000_000),
    ("Selu", "selu", (("alpha", "float"), ("gamma", "float")), 60_000_000),
    ("Celu", "celu", (("alpha", "float"),), 60_000_000),
)
"""The activation family: (op, its kernel module and function in customops.kernels.activations, its
attributes, compare's reference limit). Float attributes cross the layer as the shortest text of their
float32 value (customops.bridge.attrs), which the kernels take; every kernel is also told ``elem_type``,
X's real element type (customops.kernels.activations.carried). The limits count X's elements (the
default of customops.kernels.work): onnx.reference takes 0.36 to 0.44 s per million for Erf and Gelu
(math.erf element by element), 0.085 for Mish and Softplus, at most 0.055 for the others."""

ACTIVATION_OPS = tuple(
    CustomOp(
        name=name,
        kernel=f"customops.kernels.activations.{module}:{module}",
        inputs=(("X", "T"),),
        attributes=(*attributes, ("elem_type", "string")),
        types=("float", "double"),
        backend_tests=(f"test_{module.replace('_', '')}",),
        case_module=module.replace("_", ""),
        reference_limit=limit,
    )
    for name, module, attributes, limit in _ACTIVATIONS
)
"""One custom op per activation, on float and double; float16 and bfloat16 cross the layer as float and
are computed on their real type, so that each result is rounded once."""


_ACT_T_6 = ("float16", "float", "double")
_ACT_T_13 = ("bfloat16", *_ACT_T_6)


def _activation(
    op: str, version: int, types: tuple[str, ...], *attributes: Attr, **more: object
) -> OpVersion:
    """A version of an activation: its one input (Tanh and Erf call it ``input``, the others ``X``)."""
    name = "input" if op in ("Tanh", "Erf") else "X"
    return OpVersion(op, version, (Input(name),), attributes, types, op, **more)  # type: ignore[arg-type]


_ALPHA_1 = Attr("alpha", "float", 1.0)
_HARD_SIGMOID = (Attr("alpha", "float", 0.2), Attr("beta", "float", 0.5))
_SELU = (Attr("alpha", "float", 1.6732631921768188), Attr("gamma", "float", 1.0507010221481323))

ACTIVATION_VERSIONS: tuple[OpVersion, ...] = (
    _activation("Sigmoid", 6, _ACT_T_6),
    _activation("Sigmoid", 13, _ACT_T_13),
    _activation("Tanh", 6, _ACT_T_6),
    _activation("Tanh", 13, _ACT_T_13),
    _activation(
        "Erf",
        9,
        (*NUMERIC_NATIVE[2:], *_ACT_T_6),
        kernel_types=_ACT_T_6,
        notes="integer types left to ORT (the family computes floats)",
    ),
    _activation("Erf", 13, _ACT_T_13),
    _activation("Gelu", 20, _ACT_T_13, Attr("approximate", "string", "none", allowed=("none", "tanh"))),
    _activation("Softplus", 1, _ACT_T_6),
    _activation("Softplus", 22, _ACT_T_13),
    _activation("Mish", 18, _ACT_T_6),
    _activation("Mish", 22, _ACT_T_13),
    _activation("Swish", 24, _ACT_T_13, _ALPHA_1),
    _activation("HardSigmoid", 6, _ACT_T_6, *_HARD_SIGMOID),
    _activation("HardSigmoid", 22, _ACT_T_13, *_HARD_SIGMOID),
    _activation("HardSwish", 14, _ACT_T_6),
    _activation("HardSwish", 22, _ACT_T_13),
    _activation("Elu", 6, _ACT_T_6, _ALPHA_1),
    _activation("Elu", 22, _ACT_T_13, _ALPHA_1),
    _activation("Selu", 6, _ACT_T_6, *_SELU),
    _activation("Selu", 22, _ACT_T_13, *_SELU),
    _activation("Celu", 12, ("float",), _ALPHA_1),
    _activation("Celu", 28, _ACT_T_13, _ALPHA_1),
)
"""The activation family's versions (each op's version 1 with ``consumed_inputs`` left out: ONNX Runtime
loads no model below opset 7)."""

FAMILY = Family("activations", ACTIVATION_OPS, ACTIVATION_VERSIONS)
