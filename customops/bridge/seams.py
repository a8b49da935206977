"""The seam of customops.bench, which times our hook against the stock path and against stand-in kernels,
and of the tests: our hook, others made safe to install, and our kernels swapped for others."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from customops.bridge.hook import BINDINGS, Hook, call_guarded, decode_attributes, invoke


def our_hook() -> Hook:
    """The invocation hook customops.bridge.registration installs (``PyCustomOpDef.install_hooker``) when
    it declares our ops: it serves our registrations and hands every other call to onnxruntime-extensions'
    own hook."""
    return invoke


def guarded(hook: Hook) -> Hook:
    """``hook`` made fit to install in place of ours: called for our registrations only (others go to
    onnxruntime-extensions' own hook), and an exception in it, a Ctrl-C included, handled as one in our
    kernels is, never let into the layer (which would abort the process)."""
    return functools.partial(call_guarded, hook)


def kernel_call(k_id: int, raw_attrs: dict[str, str]) -> Callable[..., Any]:
    """The kernel of our registration ``k_id`` bound to the attributes ``raw_attrs`` decode to, as our hook
    calls it (``bind(**kwargs)``, or the kernel with those keyword arguments): ``call(*inputs)``."""
    return decode_attributes(BINDINGS[k_id], raw_attrs)[2]


@contextlib.contextmanager
def kernel_replaced(op: str, kernel: Callable[..., Any]) -> Iterator[None]:
    """Our registrations of custom op ``op`` call ``kernel`` instead of their own kernel inside the block
    (the attribute caches, which hold the kernel bound to its attributes, are emptied on entry and exit)."""
    saved = [
        (binding, binding.kernel, binding.bind) for binding in BINDINGS.values() if binding.op.name == op
    ]
    for binding, _, _ in saved:
        binding.kernel, binding.bind = kernel, None
        binding.attr_cache.clear()
    try:
        yield
    finally:
        for binding, own, bind in saved:
            binding.kernel, binding.bind = own, bind
            binding.attr_cache.clear()
