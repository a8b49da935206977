"""The registry agrees with the ONNX schemas shipped in the installed onnx package."""

from __future__ import annotations

import onnx
import pytest
from onnx import defs, helper

from customops.bridge import attrs as codec
from customops.registry import CUSTOM_OPS, OPS, lookup, type_support

_KIND = {
    onnx.AttributeProto.INT: "int",
    onnx.AttributeProto.FLOAT: "float",
    onnx.AttributeProto.STRING: "string",
    onnx.AttributeProto.INTS: "ints",
    onnx.AttributeProto.FLOATS: "floats",
}


@pytest.mark.parametrize("opv", OPS, ids=lambda o: o.key)
def test_registry_matches_schema(opv):
    schema = defs.get_schema(opv.op, opv.version)
    assert schema.since_version == opv.version
    assert [i.name for i in schema.inputs] == [i.name for i in opv.inputs]
    for ours, theirs in zip(opv.inputs, schema.inputs, strict=True):
        optional = theirs.option == defs.OpSchema.FormalParameterOption.Optional
        assert ours.optional == optional, ours.name
    assert {a.name for a in opv.attributes} == set(schema.attributes)
    for a in opv.attributes:
        s = schema.attributes[a.name]
        assert _KIND[s.type] == a.kind, a.name
        assert s.required == a.required, a.name
        if s.default_value.name:
            default = helper.get_attribute_value(s.default_value)
            default = default.decode() if isinstance(default, bytes) else default
            assert default == pytest.approx(a.default) if isinstance(default, float) else default == a.default
        else:
            assert a.default is None
    main_types = next(tc for tc in schema.type_constraints if tc.type_param_str == schema.inputs[0].type_str)
    assert {t[len("tensor(") : -1] for t in main_types.allowed_type_strs} == set(opv.types)


def test_every_version_of_our_ops_since_their_first_supported_one_is_covered():
    for op in {o.op for o in OPS}:
        ours = {o.version for o in OPS if o.op == op}
        theirs = {
            s.since_version for s in defs.get_all_schemas_with_history() if s.name == op and s.domain == ""
        }
        newest = max(theirs)
        if not defs.get_schema(op, newest).deprecated:
            assert newest in ours, (op, newest)
        assert ours <= theirs


def test_lookup_resolves_the_version_in_force():
    assert lookup("Resize", 12).version == 11
    assert lookup("Resize", 17).version == 13
    assert lookup("Resize", 25).version == 19
    assert lookup("Pad", 10).version == 2
    assert lookup("Pad", 20).version == 19
    assert lookup("Upsample", 8).version == 7
    assert lookup("Upsample", 10) is None  # deprecated at 10
    assert lookup("Col2Im", 17) is None


def test_type_support_classifies_native_bridged_and_refused():
    resize13 = lookup("Resize", 13)
    assert type_support(resize13, "uint16") == ("native", None)
    assert type_support(resize13, "float16") == ("bridged", "float")
    assert type_support(resize13, "complex64")[0] == "no"
    pad2 = lookup("Pad", 2)
    how, why = type_support(pad2, "int32")
    assert how == "no" and "int32" in why


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("float", -0.75),
        ("float", 0.1),
        ("float", 1.2345678e-30),
        ("float", float("inf")),
        ("ints", [1, -2, 3]),
        ("ints", None),
        ("ints", []),
        ("floats", [0.1, 2.5e7]),
        ("int", -7),
        ("string", "tf_crop_and_resize"),
    ],
)
def test_attribute_codec_round_trips_float32_values_exactly(kind, value):
    import numpy as np

    decoded = codec.decode(kind, codec.encode(kind, value))
    if kind == "float":
        assert np.float32(decoded) == np.float32(value)
        assert decoded == float(np.float32(value))
    elif kind == "floats":
        assert [np.float32(v) for v in decoded] == [np.float32(v) for v in value]
    else:
        assert decoded == value


def test_custom_ops_cover_every_registry_target():
    assert {o.custom for o in OPS} <= set(CUSTOM_OPS)


def test_every_custom_op_of_the_registry_has_a_translator_row():
    """Adding an operator is a registry entry, a kernel, a translator row (or, for an op with several type
    variables, its versions' type_vars: customops.model.typed) and a fuzz space."""
    from customops.fuzz.dispatch import spaces
    from customops.model.translate import TRANSLATORS
    from customops.registry import CUSTOM_OPS, OPS

    typed = {o.custom for o in OPS if o.type_vars}
    assert set(TRANSLATORS) | typed == set(CUSTOM_OPS) and not set(TRANSLATORS) & typed
    assert {o.op for o in OPS} == set(spaces())


@pytest.mark.parametrize("opv", [o for o in OPS if o.type_vars], ids=lambda o: o.key)
def test_every_input_of_a_typed_version_allows_the_schema_s_types(opv):
    schema = defs.get_schema(opv.op, opv.version)
    constraints = {
        tc.type_param_str: {t[len("tensor(") : -1] for t in tc.allowed_type_strs}
        for tc in schema.type_constraints
    }
    variables = dict(opv.type_vars)
    for ours, theirs in zip(opv.inputs, schema.inputs, strict=True):
        (var,) = ours.types
        if theirs.type_str.startswith("tensor("):
            assert var == theirs.type_str[len("tensor(") : -1], ours.name
        else:
            assert var == theirs.type_str and set(variables[var]) == constraints[var], ours.name


@pytest.mark.parametrize("opv", [o for o in OPS if o.type_vars], ids=lambda o: o.key)
def test_every_carried_combination_of_a_typed_version_has_a_registration(opv):
    import itertools

    from customops.registry import BRIDGED_TYPES, NATIVE_TYPES

    custom = CUSTOM_OPS[opv.custom]
    registered = [custom.typed(r)[0] for r in custom.registrations()]
    variables = dict(opv.type_vars)
    per_input = []
    for spec in opv.inputs:
        types = variables.get(spec.types[0], spec.types)
        per_input.append([BRIDGED_TYPES.get(t, t) for t in types if t in NATIVE_TYPES or t in BRIDGED_TYPES])
    names = [spec.types[0] for spec in opv.inputs]
    for combo in itertools.product(*per_input):
        bound = {}
        if any(bound.setdefault(n, t) != t for n, t in zip(names, combo, strict=True)):
            continue  # one variable, two types: no model has it
        assert list(combo) in registered, (opv.key, combo)


def test_each_family_is_one_kernel_folder_and_one_registry_module():
    """A family's kernels are in its folder of kernels/, its rows in the registry module of its name, and
    its versions map onto its own custom ops: a new family touches nothing else (docs/architecture.md)."""
    import importlib
    from pathlib import Path

    from customops.registry import FAMILIES

    kernels = Path(importlib.import_module("customops.kernels").__file__).parent
    folders = {p.name for p in kernels.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {f.name for f in FAMILIES} == folders
    assert [op for f in FAMILIES for op in f.custom_ops] == list(CUSTOM_OPS.values())
    assert tuple(opv for f in FAMILIES for opv in f.versions) == OPS
    for family in FAMILIES:
        assert importlib.import_module(f"customops.registry.{family.name}").FAMILY is family
        for op in family.custom_ops:
            assert op.kernel.startswith(f"customops.kernels.{family.name}."), op.name
        assert {opv.custom for opv in family.versions} == {op.name for op in family.custom_ops}, family.name
