"""The arithmetic the quantized kernels share, each piece exact.

- Element types (:class:`Element`): the integer, float8, float4 and float types of the quantization
  operators, by numpy dtype (ml_dtypes types for the narrow ones) and by ONNX data type code.
- Scale layouts (:func:`layout`): per tensor, per axis and blocked, and a scale or zero point spread over
  the input (:meth:`Layout.spread`).
- One rounding per result. :func:`odd_sum`, :func:`odd_product` and :func:`odd_quotient` give the exact
  sum, product or quotient of two float64 values rounded *to odd* (the float64 neighbour whose last bit
  is 1 when the result is not exact). A value rounded to odd at 53 bits and then rounded to nearest at
  p <= 51 bits is the exact value rounded once at p bits (Boldo and Melquiond, "Emulation of FMA and
  correctly rounded sums: proved algorithms using rounding to odd", 2008), so :func:`to_floats` and
  :func:`to_integers` round such values exactly once. :func:`requantize` rounds ``acc * num / den``
  (three operations) once: in float64 with an error bound, and where the bound straddles a rounding
  boundary, exactly with fractions.
- Exact integer products (:func:`exact_matmul`): float32 BLAS where every partial sum is an integer below
  2**24, float64 BLAS below 2**53 (so exact in any summation order; float32 over chunks of the shared
  axis where one chunk's sums stay below 2**24), else in limbs of fewer bits, combined exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from customops.accel import gemm, jit, parallel
from customops.accel.quantized import requantize_loops
from customops.errors import KernelError
from customops.kernels.args import integer, is_absent

__all__ = [
    "CHUNK",
    "ELEMENTS",
    "FLOAT32_EXACT",
    "FLOAT_EXACT",
    "Element",
    "Layout",
    "Origin",
    "check_pair",
    "chunked_matmul",
    "element_code",
    "element_of",
    "elementwise",
    "exact_matmul",
    "exact_type",
    "finish",
    "first_index",
    "layout",
    "limb_matmul",
    "magnitude",
    "odd_fraction",
    "odd_product",
    "odd_quotient",
    "odd_sum",
    "only_attributes",
    "optional",
    "requantize",
    "required",
    "shifted",
    "single",
    "to_floats",
    "to_integers",
    "version_of",
]


@dataclass(frozen=True)
class Element:
    """An element type of the quantization operators."""

    name: str
    """Its ONNX name, as in the registry (``uint8``, ``float8e4m3fn``, ``float``)."""
    code: int
    """Its ``TensorProto`` data type code."""
    dtype: np.dtype
    kind: str
    """``int``, ``float8``, ``float4`` (float4e2m1: no infinity, no NaN), ``float`` (float, float16,
    bfloat16) or ``e8m0`` (float8e8m0: powers of two)."""
    low: float
    """The smallest value: the integer minimum, or minus the largest finite float."""
    high: float
    """The largest value: the integer maximum, or the largest finite float."""
    shift: int = 0
    """2**shift times any finite value of a float8 or float4 type is an integer (its smallest subnormal
    is 2**-shift); 0 for the integer types."""


def _int(name: str, code: int, dtype: Any) -> Element:
    info = ml_dtypes.iinfo(dtype) if np.dtype(dtype).kind == "V" else np.iinfo(dtype)
    return Element(name, code, np.dtype(dtype), "int", float(info.min), float(info.max))


def _narrow(name: str, code: int, dtype: Any, kind: str) -> Element:
    info = ml_dtypes.finfo(dtype)
    shift = -int(math.log2(float(info.smallest_subnormal)))
    return Element(name, code, np.dtype(dtype), kind, -float(info.max), float(info.max), shift)


ELEMENTS: dict[str, Element] = {
    e.name: e
    for e in (
        _int("uint8", 2, np.uint8),
        _int("int8", 3, np.int8),
        _int("uint16", 4, np.uint16),
        _int("int16", 5, np.int16),
        _int("int32", 6, np.int32),
        _int("uint4", 21, ml_dtypes.uint4),
        _int("int4", 22, ml_dtypes.int4),
        _int("uint2", 25, ml_dtypes.uint2),
        _int("int2", 26, ml_dtypes.int2),
        _narrow("float8e4m3fn", 17, ml_dtypes.float8_e4m3fn, "float8"),
        _narrow("float8e4m3fnuz", 18, ml_dtypes.float8_e4m3fnuz, "float8"),
        _narrow("float8e5m2", 19, ml_dtypes.float8_e5m2, "float8"),
        _narrow("float8e5m2fnuz", 20, ml_dtypes.float8_e5m2fnuz, "float8"),
        _narrow("float4e2m1", 23, ml_dtypes.float4_e2m1fn, "float4"),
        Element(
            "float", 1, np.dtype(np.float32), "float", -float(np.finfo(np.float32).max), 3.4028234663852886e38
        ),
        Element("float16", 10, np.dtype(np.float16), "float", -65504.0, 65504.0),
        Element(
            "bfloat16",
            16,
            np.dtype(ml_dtypes.bfloat16),
            "float",
            -3.3895313892515355e38,
            3.3895313892515355e38,
        ),
        Element("float8e8m0", 24, np.dtype(ml_dtypes.float8_e8m0fnu), "e8m0", 2.0**-127, 2.0**127),
    )
}
"""Every element type of the quantization operators, by ONNX name."""

_BY_DTYPE = {e.dtype: e for e in ELEMENTS.values()}
_BY_CODE = {e.code: e for e in ELEMENTS.values()}


def element_of(value: np.ndarray, what: str, allowed: Sequence[str]) -> Element:
    """The element type of ``value`` (named ``what`` in errors), which must be one of ``allowed``;
    raises KernelError otherwise."""
    elem = _BY_DTYPE.get(np.asarray(value).dtype)
    if elem is None or elem.name not in allowed:
        shown = elem.name if elem is not None else str(np.asarray(value).dtype)
        raise KernelError(f"{what} has element type {shown!r}; allowed: {', '.join(allowed)}")
    return elem


def element_code(code: Any, what: str, allowed: Sequence[str]) -> Element:
    """The element type of data type ``code`` (an INT attribute named ``what``), one of ``allowed``."""
    elem = _BY_CODE.get(integer(code, what))
    if elem is None or elem.name not in allowed:
        raise KernelError(
            f"{what} {code!r} is not one of the data types allowed here: "
            + ", ".join(f"{ELEMENTS[n].code} ({n})" for n in allowed)
        )
    return elem


def version_of(op: str, version: Any, versions: Sequence[int]) -> int:
    """``version`` as an int, one of ``op``'s ``versions``; raises KernelError otherwise."""
    v = integer(version, "version")
    if v not in versions:
        raise KernelError(f"{op} has no version {v}; its versions are {', '.join(map(str, versions))}")
    return v


def only_attributes(op: str, version: int, has: Sequence[str], given: dict[str, tuple[Any, Any]]) -> None:
    """Raise KernelError for an attribute of ``given`` (name -> (value, default)) that ``op``-``version``
    does not have, given another value than its default (None counts as not given)."""
    for name, (value, default) in given.items():
        if name not in has and value is not None and value != default:
            raise KernelError(f"{op}-{version} has no attribute {name} (got {value!r})")


def required(op: str, inputs: dict[str, Any]) -> None:
    """Raise KernelError naming the first of ``inputs`` (name -> value) that is None: ``op`` requires
    them all."""
    for name, value in inputs.items():
        if value is None:
            raise KernelError(f"{op} requires input {name}, which is missing")


Origin = tuple[int, tuple[int, ...]]
"""Where a chunk of :func:`elementwise` lies: the flat (C order) index of its first element in the whole,
and the whole's shape."""


def first_index(mask: np.ndarray, origin: Origin | None = None) -> tuple[int, ...]:
    """The index of the first True element of ``mask`` (some element must be True); of a chunk's element
    in the whole with ``origin``."""
    flat = int(np.argmax(mask.ravel()))
    if origin is None:
        return tuple(int(i) for i in np.unravel_index(flat, mask.shape))
    return tuple(int(i) for i in np.unravel_index(origin[0] + flat, origin[1]))


CHUNK = 1 << 16
"""Elements an elementwise computation takes at a time: its float64 temporaries stay a few MiB whatever
the size of the input."""


def elementwise(
    function: Callable[..., np.ndarray],
    operands: Sequence[np.ndarray],
    shape: tuple[int, ...],
    dtype: np.dtype,
) -> np.ndarray:
    """A new C-contiguous array of ``shape`` and ``dtype`` computed by chunks: ``function(origin, *chunks)``
    gets 1-D chunks of at most :data:`CHUNK` elements of ``operands`` broadcast to ``shape`` (in C order;
    :data:`Origin` says where the chunk lies) and returns the chunk's results."""
    out = np.empty(shape, dtype=dtype)
    if out.size == 0:
        return out
    iterator = np.nditer(
        [*operands, out],
        flags=["external_loop", "buffered", "refs_ok", "zerosize_ok"],
        op_flags=[["readonly"]] * len(operands) + [["writeonly"]],
        order="C",
        buffersize=CHUNK,
    )
    with iterator:
        for chunk in iterator:
            chunk[-1][...] = function((iterator.iterindex, shape), *chunk[:-1])
    return out


# ---------------------------------------------------------------------------------------------
# Scale layouts


@dataclass(frozen=True)
class Layout:
    """How a scale and its zero point cover an input: one value for every element (``tensor``), one per
    index of ``axis`` (``axis``), or one per block of ``block`` consecutive indices of ``axis``
    (``blocked``; the last block may be shorter)."""

    kind: str
    axis: int = 0
    block: int = 0

    def spread(self, param: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """``param`` (a scale or zero point of this layout) as an array that broadcasts to ``shape``."""
        if self.kind == "tensor":
            return param.reshape(())
        if self.kind == "axis":
            return param.reshape([-1 if i == self.axis else 1 for i in range(len(shape))])
        # a block longer than the axis has one entry along it: repeating it the axis's length is enough
        repeated = np.repeat(param, min(self.block, shape[self.axis]), axis=self.axis)
        return repeated[(slice(None),) * self.axis + (slice(0, shape[self.axis]),)]


def single(shape: tuple[int, ...]) -> bool:
    """Whether a scale or zero point of ``shape`` is one value: a scalar or a 1-element 1-D tensor
    (ONNX's own tests give the zero point as [1] beside a scalar scale)."""
    return len(shape) == 0 or shape == (1,)


def check_pair(scale: np.ndarray, zero_point: np.ndarray | None, names: tuple[str, str]) -> None:
    """A zero point has its scale's shape (one value either way counts as the same shape)."""
    if zero_point is None or scale.shape == zero_point.shape:
        return
    if single(scale.shape) and single(zero_point.shape):
        return
    raise KernelError(
        f"{names[1]} has shape {zero_point.shape!r} but {names[0]} has shape {scale.shape!r}; "
        "a scale and its zero point must have the same shape"
    )


def layout(
    x_shape: tuple[int, ...], scale_shape: tuple[int, ...], axis: Any, block_size: Any, kinds: tuple[str, ...]
) -> Layout:
    """The layout of a scale of ``scale_shape`` over an input of ``x_shape``, among ``kinds`` (what the
    version allows: ``tensor``, ``axis``, ``blocked``). Raises KernelError naming the rule broken.

    With ``block_size`` 0 a scale of one value is per tensor (``axis`` ignored) and a 1-D scale is per
    ``axis``, of the length of that axis; with ``block_size`` B > 0 the scale has x's rank and shape but
    along ``axis``, where it has ceil(D / B) entries (the spec's accepted range of B,
    [ceil(D/S), ceil(D/(S-1)) - 1], is the same rule)."""
    block = integer(block_size, "block_size", 0)
    if block == 0:
        if single(scale_shape):
            return Layout("tensor")
        if len(scale_shape) != 1:
            raise KernelError(
                f"the scale has shape {scale_shape!r}: without block_size it must be a scalar or 1-D"
            )
        if "axis" not in kinds:
            raise KernelError(f"the scale has shape {scale_shape!r}: this version takes a scalar scale only")
        a = _axis(axis, len(x_shape))
        if scale_shape[0] != x_shape[a]:
            raise KernelError(
                f"the 1-D scale has {scale_shape[0]} entries but axis {a} of the input {x_shape!r} "
                f"has length {x_shape[a]}"
            )
        return Layout("axis", a)
    if "blocked" not in kinds:
        raise KernelError(f"block_size is {block}: this version has no blocked quantization")
    if len(scale_shape) != len(x_shape):
        raise KernelError(
            f"blocked quantization (block_size {block}) needs a scale of the input's rank "
            f"{len(x_shape)}, got shape {scale_shape!r}"
        )
    a = _axis(axis, len(x_shape))
    expected = tuple(-(-d // block) if i == a else d for i, d in enumerate(x_shape))
    if tuple(scale_shape) != expected:
        raise KernelError(
            f"the scale has shape {scale_shape!r}; blocks of {block} along axis {a} of the input "
            f"{x_shape!r} need {expected!r}"
        )
    return Layout("blocked", a, block)


def _axis(axis: Any, rank: int) -> int:
    a = integer(axis, "axis")
    if not -rank <= a < rank:
        raise KernelError(f"axis {a} is out of range [{-rank}, {rank - 1}] for an input of rank {rank}")
    return a + rank if a < 0 else a


def optional(value: Any, partner: np.ndarray) -> np.ndarray | None:
    """An optional zero point: None when absent (None, or empty beside a scale that is not)."""
    if value is None:
        return None
    arr = np.asarray(value)
    if is_absent(arr) and partner.size:
        return None
    return arr


# ---------------------------------------------------------------------------------------------
# Rounding to odd: exact float64 operations whose results round once to any narrower type

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a float64 into two 26-bit halves


def _halves(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _product_error(a: np.ndarray, b: np.ndarray, p: np.ndarray) -> np.ndarray:
    """a * b - p exactly, for p = fl(a * b) (Dekker's two-product; exact without overflow or underflow,
    which the operands of the quantization operators, float32 and narrower, cannot reach)."""
    ah, al = _halves(a)
    bh, bl = _halves(b)
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _to_odd(nearest: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """``nearest`` (the float64 nearest an exact value) rounded to odd instead: where the exact value
    differs (``direction`` > 0: it is above, < 0: below) and the last bit of ``nearest`` is even, the
    neighbour on the exact value's side, whose last bit is odd."""
    move = (direction != 0) & np.isfinite(nearest) & ((nearest.view(np.uint64) & 1) == 0)
    if move.any():
        nearest = np.array(nearest, copy=True)
        nearest[move] = np.nextafter(nearest[move], np.where(direction[move] > 0, np.inf, -np.inf))
    return nearest


def odd_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b rounded to odd (IEEE results where an operand is not finite; -0 + 0 is +0)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        err = (a - (s - bb)) + (b - bb)  # Knuth's two-sum
    return _to_odd(s, np.where(np.isfinite(err), err, 0.0))


def odd_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b rounded to odd (IEEE results where an operand is not finite)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        p = a * b
        err = _product_error(a, b, p)
    return _to_odd(p, np.where(np.isfinite(err), err, 0.0))


def odd_quotient(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b rounded to odd (IEEE results where b is 0 or an operand is not finite)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        q = a / b
        p = q * b
        # a - p is exact (p is within a factor 2 of a: Sterbenz), so the sign of (a - p) - e is the sign
        # of the exact remainder a - q * b
        remainder = (a - p) - _product_error(q, b, p)
        direction = np.sign(remainder) * np.sign(b)
    ok = np.isfinite(q) & np.isfinite(b) & (b != 0) & np.isfinite(direction)
    return _to_odd(q, np.where(ok, direction, 0.0))


def odd_fraction(value: Fraction) -> float:
    """An exact rational rounded to odd in float64."""
    nearest = float(value)  # int / int: correctly rounded
    if Fraction(nearest) == value:
        return nearest
    return float(_to_odd(np.array([nearest]), np.array([1.0 if value > Fraction(nearest) else -1.0]))[0])


# ---------------------------------------------------------------------------------------------
# The last rounding: to an integer type, a float8 or float4 type, or a float type


def to_integers(
    values: np.ndarray, zero_point: np.ndarray | None, out: Element, what: str, origin: Origin | None = None
) -> np.ndarray:
    """``saturate(round(values) + zero_point)`` in ``out``'s integer type: rounded half to even, the zero
    point added exactly, clamped to the type's range. A NaN has no value in an integer type and the spec's
    saturate gives it none: KernelError naming where ``what`` is NaN (in the whole, with ``origin``)."""
    rounded = np.rint(values)
    nan = np.isnan(rounded)
    if nan.any():
        raise KernelError(
            f"{what} is NaN at index {first_index(nan, origin)}: {out.name} has no NaN and saturate() gives "
            "it no value"
        )
    if zero_point is not None:
        rounded = rounded + zero_point.astype(np.float64)  # exact below 2**53; beyond, it saturates
    clamped = np.clip(rounded, out.low, out.high)
    return clamped.astype(np.int64).astype(out.dtype, order="C")


def to_floats(
    values: np.ndarray, out: Element, saturate: bool, what: str, origin: Origin | None = None
) -> np.ndarray:
    """Float64 ``values`` (exact, or rounded to odd) rounded once to nearest even in ``out``.

    float, float16, bfloat16: IEEE (beyond the range: infinity). float8 types, by the table of the Cast
    operator: with ``saturate`` a value whose rounding exceeds the largest finite one, infinities
    included, becomes that largest value with its sign and NaN stays NaN; without it the overflow becomes
    infinity (float8e5m2) or NaN (the others, NaN with x's sign where the type has a signed NaN); the
    fnuz types have no -0 (it becomes 0). float4e2m1 (no infinity, no NaN) always saturates, and a NaN
    has no value in it: KernelError naming where ``what`` is NaN."""
    if out.kind == "float":
        with np.errstate(over="ignore"):
            return values.astype(out.dtype, order="C")
    if out.kind == "float4":
        nan = np.isnan(values)
        if nan.any():
            raise KernelError(f"{what} is NaN at index {first_index(nan, origin)}: {out.name} has no NaN")
    with np.errstate(over="ignore", invalid="ignore"):
        result = values.astype(out.dtype, order="C")
        if saturate or out.kind == "float4":
            back = result.astype(np.float64)
            over = ~np.isnan(values) & (np.isinf(values) | np.isnan(back) | np.isinf(back))
            if over.any():
                result[over] = np.where(values[over] > 0, out.high, out.low).astype(out.dtype)
    return result


def requantize(
    acc: np.ndarray,
    num: np.ndarray,
    den: np.ndarray,
    zero_point: np.ndarray,
    out: Element,
    what: str,
) -> np.ndarray:
    """``saturate(round(acc * num / den) + zero_point)`` with the real value rounded once: half to even
    for an integer ``out`` (then the zero point added and the range saturated), to nearest even after
    adding the zero point for a float8 ``out`` (saturating), as a new C-contiguous array of the operands'
    broadcast shape.

    ``acc`` holds exact integers (int64, or Python ints in an object array); ``num`` and ``den`` are
    float64 arrays broadcasting to it. The value is computed in float64 (three roundings: at most 2**-50
    relative), and wherever the interval of that bound holds a rounding boundary the element is computed
    again with fractions (once per distinct combination in a chunk). A non-finite ``num`` or ``den``, or
    ``den`` 0, gives IEEE's result of the float64 formula."""
    operands = [np.asarray(acc), np.asarray(num), np.asarray(den), np.asarray(zero_point)]
    shape = np.broadcast_shapes(*(o.shape for o in operands))
    loop = jit.get("round_to_integers", requantize_loops) if out.kind == "int" else None
    if loop is not None and operands[3].size == 1:
        return _compiled_requantize(loop, operands, shape, out, what)
    return elementwise(_requantize_chunk(out, what), operands, shape, out.dtype)


def _requantize_chunk(out: Element, what: str) -> Callable[..., np.ndarray]:
    """The numpy path of :func:`requantize`, one chunk of :func:`elementwise` at a time."""

    def chunk(origin: Origin, a: np.ndarray, n: np.ndarray, d: np.ndarray, z: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            value = np.asarray(a, dtype=np.float64) * n / d
            margin = np.where(np.isfinite(value), np.abs(value) * 2.0**-49, 0.0)
        low = finish(value - margin, z, out, what, origin)
        high = finish(value + margin, z, out, what, origin)
        bits = f"u{out.dtype.itemsize}"
        unsure = low.view(bits) != high.view(bits)
        if unsure.any():
            _exact(low, unsure, [a, n, d, z], out)
        return low

    return chunk


def _compiled_requantize(
    loop: Callable[..., None], operands: list[np.ndarray], shape: tuple[int, ...], out: Element, what: str
) -> np.ndarray:
    """:func:`requantize` into an integer type with one zero point, the rounding in a compiled loop
    (customops.accel.quantized.requantize_loops): the float64 values as the numpy path computes them, rounded where
    the error bound settles it; the elements it leaves unsure go through the numpy path (all of them when
    one is NaN, for the error's index).

    The value is computed as ``acc * (num / den)``, in one pass over acc: three roundings as the numpy
    path's ``acc * num / den`` (the float types of the scales keep both from overflowing), within the
    same bound of the exact value, so every element the bound settles gets the same integer."""
    acc, num, den, zero_point = operands
    with np.errstate(all="ignore"):
        wide = acc if acc.dtype != object else acc.astype(np.float64)
        value = np.multiply(wide, num / den, dtype=np.float64)
    value = np.ascontiguousarray(np.broadcast_to(value, shape)).reshape(-1)
    result = np.empty(shape, dtype=out.dtype)
    unsure = np.empty(value.size, dtype=np.bool_)
    zero = float(zero_point.reshape(-1)[0])
    parallel.run(loop, value.size, value.size, value, zero, out.low, out.high, result.reshape(-1), unsure)
    again = np.flatnonzero(unsure)
    if again.size == 0:
        return result
    if np.isnan(value[again]).any():
        return elementwise(_requantize_chunk(out, what), operands, shape, out.dtype)
    parts = [np.broadcast_to(o, shape).reshape(-1)[again] for o in operands[:3]]
    result.reshape(-1)[again] = elementwise(
        _requantize_chunk(out, what), [*parts, zero_point], again.shape, out.dtype
    )
    return result


def finish(
    values: np.ndarray, zero_point: np.ndarray, out: Element, what: str, origin: Origin | None = None
) -> np.ndarray:
    """The last step of :func:`requantize` for float64 ``values`` taken as exact: ``saturate(round(values)
    + zero_point)`` for an integer ``out``, ``values + zero_point`` rounded once, saturating, for a float8
    one. Monotonic in ``values``."""
    if out.kind == "int":
        return to_integers(values, zero_point, out, what, origin)
    return to_floats(odd_sum(values, zero_point.astype(np.float64)), out, True, what, origin)


def _exact(result: np.ndarray, where: np.ndarray, parts: list[np.ndarray], out: Element) -> None:
    """Fill ``result`` where ``where`` holds by the exact formula of :func:`requantize`."""
    done: dict[tuple[Any, ...], Any] = {}
    index = np.nonzero(where)
    keys = zip(*(p[index].tolist() for p in parts), strict=True)
    values = []
    for key in keys:
        if key not in done:
            acc, num, den, zp = key
            real = Fraction(int(acc)) * Fraction(num) / Fraction(den)
            if out.kind == "int":
                done[key] = min(max(round(real) + int(zp), out.low), out.high)
            else:
                done[key] = odd_fraction(real + Fraction(float(zp)))
        values.append(done[key])
    if out.kind == "int":
        result[index] = np.array(values, dtype=np.int64).astype(out.dtype)
    else:
        result[index] = to_floats(np.array(values, dtype=np.float64), out, True, "the value")


# ---------------------------------------------------------------------------------------------
# Exact integer products

FLOAT_EXACT = 2**53
"""Integers of smaller magnitude are exact in float64, and so is every sum of them that stays below."""


def magnitude(a: np.ndarray) -> int:
    """The largest absolute value of an integer-valued array (0 when empty)."""
    return max(-int(a.min()), int(a.max())) if a.size else 0


FLOAT32_EXACT = 2**24
"""The same for float32: float32 BLAS (sgemm, about 2.5 times float64's speed here) is exact below it."""


def shifted(values: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """``values - zero`` of 8-bit integers (``zero`` broadcasting to ``values``) as a new float32 array:
    exact (at most 9 bits), and no subtraction where the zero point is 0."""
    result = values.astype(np.float32)
    if zero.any():
        result -= zero.astype(np.float32)
    return result


def exact_type(bound: int) -> type[np.floating] | None:
    """The float type in which every partial sum of integer products bounded by ``bound`` is exact in any
    summation order: float32 below 2**24, float64 below 2**53, else None."""
    if bound < FLOAT32_EXACT:
        return np.float32
    if bound < FLOAT_EXACT:
        return np.float64
    return None


def exact_matmul(
    a: np.ndarray,
    b: np.ndarray,
    *,
    blas: bool = True,
    dtype: type[np.signedinteger] = np.int64,
    largest: int | None = None,
) -> np.ndarray:
    """``numpy.matmul(a, b)`` of integer-valued arrays (integers, or floats holding integers below 2**53;
    at least 2-D, batch axes broadcast), exactly: as ``dtype`` (int32 or int64) when the bound below fits
    it, else int64 when every sum fits in int64, else Python ints in an object array.

    With K the shared axis, every partial sum of the product is bounded by K * max|a| * max|b|. Below
    2**24 float32 BLAS computes it exactly whatever its summation order (every partial sum is an integer
    float32 holds), below 2**53 float64 BLAS; between the two, when one product is below 2**24, K is cut
    into chunks whose sums float32 holds, added in float64 (:func:`chunked_matmul`); above 2**53 the
    operands are cut into limbs small enough for float64 (:func:`limb_matmul`). ``blas=False`` computes
    with numpy's int64 loops instead (when the bound fits int64): the path the float ones are tested
    against. ``largest``, when given, is a bound on max|a| * max|b| the caller knows (else computed)."""
    k = a.shape[-1]
    if largest is None:
        largest = magnitude(a) * magnitude(b)
    bound = k * largest
    whole = dtype if bound <= np.iinfo(dtype).max else np.int64
    if not blas and bound < 2**63:
        return np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(whole, copy=False)
    kind = exact_type(bound)
    if kind is not None:
        if kind is np.float64 and 0 < largest < FLOAT32_EXACT // 2:
            return chunked_matmul(a, b, (FLOAT32_EXACT - 1) // largest).astype(whole)
        return gemm.matmul(a.astype(kind, copy=False), b.astype(kind, copy=False)).astype(whole)
    width = (53 - k.bit_length()) // 2
    if width < 1:
        raise KernelError(f"a product sums {k} terms: more than exact integer arithmetic is planned for")
    result = limb_matmul(a.astype(np.int64), b.astype(np.int64), width)
    return result.astype(np.int64) if bound < 2**63 else result


def chunked_matmul(a: np.ndarray, b: np.ndarray, chunk: int) -> np.ndarray:
    """``numpy.matmul(a, b)`` of integer-valued arrays as float64, summed over chunks of ``chunk`` indices
    of the shared axis, each chunk's product in float32: exact when ``chunk * max|a| * max|b|`` is below
    2**24 and the whole sum below 2**53."""
    a32, b32 = a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)
    total = gemm.matmul(a32[..., :chunk], b32[..., :chunk, :]).astype(np.float64)
    for start in range(chunk, a.shape[-1], chunk):
        total += gemm.matmul(a32[..., start : start + chunk], b32[..., start : start + chunk, :])
    return total


def limb_matmul(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """``numpy.matmul(a, b)`` of int64 arrays exactly, as Python ints in an object array: each operand cut
    into limbs of ``width`` bits (the top one signed), each pair of limbs multiplied in float64 (exact
    when K * 2**(2 * width) < 2**53) and the partial products shifted and summed as Python ints."""
    limbs_a = _limbs(a, width)
    limbs_b = _limbs(b, width)
    total: Any = 0
    for i, la in enumerate(limbs_a):
        for j, lb in enumerate(limbs_b):
            part = np.matmul(la, lb).astype(np.int64).astype(object)
            total = total + part * (1 << (width * (i + j)))
    return np.asarray(total, dtype=object)


def _limbs(a: np.ndarray, width: int) -> list[np.ndarray]:
    count = max(1, -(-magnitude(a).bit_length() // width))
    a = a.astype(np.int64)
    mask = (1 << width) - 1
    limbs = [((a >> (width * i)) & mask).astype(np.float64) for i in range(count - 1)]
    limbs.append((a >> (width * (count - 1))).astype(np.float64))
    return limbs
