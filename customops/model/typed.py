"""Translation of a node of an op with several type variables (the quantized family) into our domain.

Each input of the standard node becomes the custom node's input at the same position: in its own element
type where onnxruntime-extensions' layer carries it, else Cast exactly to its carrier
(customops.registry.BRIDGED_TYPES: int4 to int8, float8 and float16 to float, ...); an optional input the
node does not give becomes an empty filler of its carrier type. The schema's type variables are checked
first (one type per variable, each allowed by the version), the real element types go to the kernel in
the ``types`` attribute (customops.kernels.quantized.binding), and an output whose type is carried is Cast
back after the node, under the node's output name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from onnx import NodeProto, helper

from customops import dtypes
from customops.kernels.quantized.binding import ABSENT
from customops.model.translate import (
    Builder,
    Namer,
    Skip,
    Translation,
    attribute_values,
    custom_attributes,
    elem_type_name,
)
from customops.registry import (
    BRIDGED_TYPES,
    CUSTOM_OPS,
    DOMAIN,
    NATIVE_TYPES,
    UNSUPPORTED_TYPES,
    OpVersion,
    custom_defaults,
    layer_carrier,
)

__all__ = ["output_types", "translate"]


def translate(
    node: NodeProto,
    opv: OpVersion,
    opset: int,
    type_of: Callable[[str], int | None],
    namer: Namer,
    value_info: Iterable[str] = (),
) -> Translation:
    """Translate ``node`` of the typed standard ``opv`` (see customops.model.translate.translate)."""
    values = attribute_values(node, opv)
    b = Builder(node, opv, opset, type_of, namer)
    given = _given(b)
    variables = _variables(b, given)
    outputs = output_types(opv, values, variables)
    types = [t or _absent_type(b, i, variables, outputs) for i, t in enumerate(given)]
    for t in (*types, *outputs):
        _carried(t, opv)
    _check_registered(b, types, outputs)
    inputs = [_input(b, i, t, given[i] is not None) for i, t in enumerate(types)]
    names = _outputs(b, outputs)
    words = [t if given[i] is not None else ABSENT for i, t in enumerate(types)]
    kernel = custom_defaults(opv.custom)
    kernel.update({k: v for k, v in values.items() if k in kernel})
    kernel.update(types=f"{' '.join(words)} -> {' '.join(outputs)}", version=opv.version)
    encoded = custom_attributes(b, kernel, value_info)
    new = helper.make_node(opv.custom, inputs, names, name=node.name, domain=DOMAIN, **encoded)
    new.doc_string = node.doc_string
    return Translation([*b.before, new, *b.after], new, list(b.helpers))


def _given(b: Builder) -> list[str | None]:
    """The element type of each input of the schema (None: an optional input not given); Skip for a
    required input not given or of unknown type."""
    found: list[str | None] = []
    for i, spec in enumerate(b.opv.inputs):
        name = b.input(i)
        if not name:
            if not spec.optional:
                raise Skip(f"{b.opv.key} needs its {spec.name} input")
            found.append(None)
            continue
        code = b.type_of(name)
        if code is None:
            raise Skip(f"element type of input {spec.name!r} is unknown (no type information reaches it)")
        found.append(elem_type_name(code))
    if len(b.node.input) > len(b.opv.inputs):
        raise Skip(f"{b.opv.key} takes at most {len(b.opv.inputs)} inputs, the node has {len(b.node.input)}")
    return found


def _variables(b: Builder, given: list[str | None]) -> dict[str, str]:
    """Each type variable of the schema bound by a given input, checked: one type per variable, allowed by
    the version; a fixed type checked the same way."""
    allowed = dict(b.opv.type_vars)
    bound: dict[str, str] = {}
    for spec, elem in zip(b.opv.inputs, given, strict=True):
        if elem is None:
            continue
        var = spec.types[0]
        types = allowed.get(var, (var,))
        if elem not in types:
            raise Skip(
                f"{spec.name} has element type {elem}; {b.opv.key} allows {', '.join(types)} ({var})"
                if var in allowed
                else f"{spec.name} has element type {elem}; {b.opv.key} requires {var}"
            )
        first = bound.setdefault(var, elem)
        if first != elem:
            raise Skip(f"{spec.name} has element type {elem} but another input of {var} has {first}")
    return bound


def output_types(opv: OpVersion, values: Mapping[str, object], variables: Mapping[str, str]) -> list[str]:
    """The element type of each output of a node of the typed ``opv``, by the op's rule, from its
    attribute ``values`` and the type each variable is bound to by the inputs given (customops.fuzz
    builds its cases by it too). Skip for an ``output_dtype`` the version does not allow; KeyError when
    a required input's variable is not bound."""
    op, version = opv.op, opv.version
    if op in ("MatMulInteger", "ConvInteger"):
        return ["int32"]
    if op == "DynamicQuantizeLinear":
        return ["uint8", "float", "uint8"]
    if op in ("QLinearMatMul", "QLinearConv"):
        return [variables["T3"]]
    if op == "QuantizeLinear":
        var = opv.inputs[2].types[0]
        return [variables.get(var) or _output_dtype(opv, values, var, "uint8")]
    if version < 19:  # DequantizeLinear
        return ["float"]
    return [_output_dtype(opv, values, "T3", variables["T2"]) if version >= 23 else variables["T2"]]


def _output_dtype(opv: OpVersion, values: Mapping[str, object], var: str, default: str) -> str:
    """The type the output_dtype attribute names (0 or absent: ``default``), checked against ``var``."""
    code = int(values.get("output_dtype") or 0)  # type: ignore[call-overload]
    if not code:
        return default
    name = dtypes.name_of(code)
    allowed = dict(opv.type_vars)[var]
    if name not in allowed:
        raise Skip(
            f"output_dtype {code} ({name}) is not allowed by {opv.key} (allowed: {', '.join(allowed)})"
        )
    return name


def _absent_type(b: Builder, index: int, variables: dict[str, str], outputs: list[str]) -> str:
    """The type of the filler of an optional input not given: its variable's (the output's when only the
    output binds it, as QuantizeLinear's zero point)."""
    var = b.opv.inputs[index].types[0]
    if var in variables:
        return variables[var]
    fixed = dict(b.opv.type_vars).get(var)
    if fixed is not None and len(fixed) == 1:
        return fixed[0]
    return outputs[0]


def _carried(elem: str, opv: OpVersion) -> None:
    """Skip for an element type the layer cannot carry, natively or through a Cast."""
    if elem in NATIVE_TYPES or elem in BRIDGED_TYPES:
        return
    raise Skip(UNSUPPORTED_TYPES.get(elem, f"element type {elem!r} of {opv.key} is not supported"))


def _check_registered(b: Builder, types: list[str], outputs: list[str]) -> None:
    """Skip unless a registration of the custom op takes these carriers (it always should: a test holds
    every allowed combination to one)."""
    custom = CUSTOM_OPS[b.opv.custom]
    wanted = ([layer_carrier(t) for t in types], [layer_carrier(t) for t in outputs])
    if not any(custom.typed(r) == wanted for r in custom.registrations()):
        shown = f"{', '.join(wanted[0])} -> {', '.join(wanted[1])}"
        raise Skip(f"no registration of {b.opv.custom} takes {shown}")  # pragma: no cover


def _input(b: Builder, index: int, elem: str, given: bool) -> str:
    """The custom node's input at ``index``: the node's, Cast to its carrier where needed, or an empty
    filler of the carrier type."""
    what = b.opv.inputs[index].name
    if not given:
        return b.constant(what, None, layer_carrier(elem))
    name = b.input(index)
    return b.cast(name, layer_carrier(elem), f"cast_{what}") if layer_carrier(elem) != elem else name


def _outputs(b: Builder, outputs: list[str]) -> list[str]:
    """The custom node's outputs: the node's, or new values Cast back to the node's outputs' types."""
    names = list(b.node.output)
    if len(names) != len(outputs) or not all(names):
        raise Skip(f"{b.opv.key} gives {len(outputs)} output(s); the node names {len(names)}")
    for i, elem in enumerate(outputs):
        if layer_carrier(elem) != elem:
            tmp = b.namer(f"{b.stem}/customops_out{i}")
            b.after.append(b.helper_node("Cast", [tmp], [names[i]], f"cast_out{i}", to=dtypes.CODE[elem]))
            names[i] = tmp
    return names
