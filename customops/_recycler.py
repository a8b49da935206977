"""The compiled functions of the numpy memory handler that :mod:`customops.allocator` installs during
our session runs (imported only with numba; see ``allocator.recycler``).

The handler keeps the last :data:`KEEP` freed blocks of :data:`LARGE` bytes or more (at most
:data:`KEEP_BYTES` in all) and hands one out again to the next request of exactly its size (numpy frees
a block with the size it asked for, so the delegate always gets back the size it handed out).
Everything else, and every block it lets go, goes to the handler that was in effect before (numpy's
own, normally), whose functions it calls through the addresses in its state array. The state is touched only while the caller holds the GIL: numpy
allocates and frees array memory from code that holds it.
"""

from __future__ import annotations

from typing import Any

import numba
from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

from customops.kernels._alloc import LARGE

KEEP = 8
"""Freed large blocks kept for reuse, at most."""
KEEP_BYTES = 512 << 20
"""Bytes kept in all, at most (a block larger than this is never kept)."""

# The state array (uint64): the delegate's ctx and its malloc, calloc, realloc and free; then KEEP
# (address, size) slots, oldest first (address 0: empty); then counters and the bytes kept.
CTX, MALLOC, CALLOC, REALLOC, FREE = range(5)
SLOTS = 5
HITS = SLOTS + 2 * KEEP
"""Requests served from a kept block."""
KEPT = HITS + 1
"""Blocks kept when freed."""
RELEASED = KEPT + 1
"""Kept blocks given back to the delegate to make room for newer ones."""
HELD = RELEASED + 1
"""Bytes kept now."""
STATE_SIZE = HELD + 1


_U = types.uintp
_I64 = ir.IntType(64)


@intrinsic
def _call2(typingctx: Any, fn: Any, a: Any, b: Any) -> Any:
    """fn(a, b) -> uintp, for the C function at address fn (all arguments 64-bit words)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        target = builder.inttoptr(args[0], ir.FunctionType(_I64, [_I64, _I64]).as_pointer())
        return builder.call(target, list(args[1:]))

    return _U(_U, _U, _U), codegen


@intrinsic
def _call3(typingctx: Any, fn: Any, a: Any, b: Any, c: Any) -> Any:
    """fn(a, b, c) -> uintp, for the C function at address fn."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        target = builder.inttoptr(args[0], ir.FunctionType(_I64, [_I64, _I64, _I64]).as_pointer())
        return builder.call(target, list(args[1:]))

    return _U(_U, _U, _U, _U), codegen


@intrinsic
def _call3_void(typingctx: Any, fn: Any, a: Any, b: Any, c: Any) -> Any:
    """fn(a, b, c) without a result, for the C function at address fn."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        target = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), [_I64, _I64, _I64]).as_pointer())
        builder.call(target, list(args[1:]))
        return context.get_dummy_value()

    return types.void(_U, _U, _U, _U), codegen


@numba.njit(inline="always")
def _take(st: Any, i: int) -> int:
    """Remove slot i (the later ones move up) and return its block."""
    block = st[SLOTS + 2 * i]
    st[HELD] -= st[SLOTS + 2 * i + 1]
    for j in range(i, KEEP - 1):
        st[SLOTS + 2 * j] = st[SLOTS + 2 * j + 2]
        st[SLOTS + 2 * j + 1] = st[SLOTS + 2 * j + 3]
    st[SLOTS + 2 * KEEP - 2] = 0
    st[SLOTS + 2 * KEEP - 1] = 0
    return block


def _malloc(ctx: Any, size: int) -> int:
    st = numba.carray(ctx, (STATE_SIZE,))
    if size >= LARGE:
        for i in range(KEEP):
            if st[SLOTS + 2 * i] != 0 and st[SLOTS + 2 * i + 1] == size:
                st[HITS] += 1
                return _take(st, i)
    return _call2(st[MALLOC], st[CTX], size)


def _calloc(ctx: Any, nelem: int, elsize: int) -> int:
    st = numba.carray(ctx, (STATE_SIZE,))
    return _call3(st[CALLOC], st[CTX], nelem, elsize)


def _realloc(ctx: Any, ptr: int, new_size: int) -> int:
    st = numba.carray(ctx, (STATE_SIZE,))
    return _call3(st[REALLOC], st[CTX], ptr, new_size)


def _free(ctx: Any, ptr: int, size: int) -> None:
    st = numba.carray(ctx, (STATE_SIZE,))
    if ptr == 0 or size < LARGE or size > KEEP_BYTES:
        _call3_void(st[FREE], st[CTX], ptr, size)
        return
    # make room: the oldest kept blocks go back until one more slot and its bytes fit
    while st[SLOTS + 2 * KEEP - 2] != 0 or st[HELD] + size > KEEP_BYTES:
        size0 = st[SLOTS + 1]
        _call3_void(st[FREE], st[CTX], _take(st, 0), size0)
        st[RELEASED] += 1
    for i in range(KEEP):
        at = SLOTS + 2 * i
        if st[at] == 0:
            st[at] = ptr
            st[at + 1] = size
            break
    st[HELD] += size
    st[KEPT] += 1


def compile_functions() -> dict[str, int]:
    """The addresses of the compiled malloc, calloc, realloc and free (cached on disk where possible)."""
    state = types.CPointer(types.uint64)
    signatures = {
        "malloc": (_malloc, _U(state, _U)),
        "calloc": (_calloc, _U(state, _U, _U)),
        "realloc": (_realloc, _U(state, _U, _U)),
        "free": (_free, types.void(state, _U, _U)),
    }
    addresses = {}
    for name, (fn, signature) in signatures.items():
        try:
            compiled = numba.cfunc(signature, cache=True)(fn)
        except RuntimeError:  # no writable cache directory: compile in memory
            compiled = numba.cfunc(signature, cache=False)(fn)
        addresses[name] = compiled.address
        _KEEP_ALIVE.append(compiled)
    return addresses


_KEEP_ALIVE: list[Any] = []
