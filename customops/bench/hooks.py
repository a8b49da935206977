"""The invocation hooks ``customops bench`` swaps into onnxruntime-extensions, through the bridge's seams
(customops.bridge.seams).

Ours (:func:`customops.bridge.seams.our_hook`), the layer's stock path on our kernels (results handed
back through ``tolist()``), and stand-in kernels behind the same layer that set the yardsticks of the
table: one that costs nothing (the floor), one that only writes its output, one that only copies its data
input; and ours under a memory probe. onnxruntime-extensions, numpy and the bridge are imported when a
:class:`Hooks` is made, not with this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

# The copy side's parts: the thread splitter cuts [0, COPY_UNITS) into pieces, each piece an equal
# share of the positions of the larger of input and output.
COPY_UNITS = 1 << 12


class Hooks:
    """Swap onnxruntime-extensions' invocation hook: ours, the stock path, or ours under a probe."""

    def __init__(self) -> None:
        from customops.bridge import seams
        from customops.extensions import PyCustomOpDef

        self.seams = seams
        self.install_hooker = PyCustomOpDef.install_hooker
        self.peak: list[tuple[int, int]] = []

    def install(self, hook: Callable[..., tuple[Any, ...]]) -> None:
        """Install ``hook`` for our registrations (others go to the stock hook), guarded: an exception in
        it, a Ctrl-C included, stops the run as one in our kernels does, never aborts the process."""
        self.install_hooker(self.seams.guarded(hook))

    def ours(self) -> None:
        self.install_hooker(self.seams.our_hook())

    def stock(self) -> None:
        """The stock path of onnxruntime-extensions on our kernel: the result goes back as a list."""
        seams = self.seams

        def stock_path(k_id: int, feed: Any, raw: dict[str, str]) -> tuple[Any, ...]:
            rv = seams.kernel_call(k_id, raw)(*feed)
            return (k_id, rv.shape, rv.flatten().tolist())

        self.install(stock_path)

    def _answering(self, output: Callable[[Any], Any]) -> Callable[[], None]:
        """A hook that answers every call of our ops with ``output(inputs)``. Returns the function that
        installs it."""

        def answer(k_id: int, feed: Any, raw: dict[str, str]) -> tuple[Any, ...]:
            out = output(feed)
            return (k_id, out.shape, out)

        return lambda: self.install(answer)

    def ready_made(self, output: Any) -> Callable[[], None]:
        """A hook whose kernel costs nothing: every call of our ops gets ``output`` back as is.
        Returns the function that installs it."""
        return self._answering(lambda feed: output)

    def write_only(self, shape: tuple[int, ...], dtype: Any) -> Callable[[], None]:
        """A hook whose kernel reads nothing and writes its output once: a new array of ``shape`` and
        ``dtype`` set to zero, split over the kernel threads as the compiled loops are. Returns the
        function that installs it."""
        import numpy as np

        from customops.accel import parallel

        size = math.prod(shape)
        serial = parallel.serial(size)

        def zero(flat: Any, start: int, stop: int) -> None:
            flat[start:stop] = 0  # numpy releases the GIL for this

        def write(feed: Any) -> Any:
            if serial:
                return np.zeros(shape, dtype)
            out = np.empty(shape, dtype)
            parallel.run(zero, size, size, out.reshape(-1))
            return out

        return self._answering(write)

    def copy_once(self, shape: tuple[int, ...], dtype: Any) -> Callable[[], None]:
        """A hook whose kernel copies its data input (the node's first input) into a new array of
        ``shape`` and ``dtype`` once: the first elements, as many as both hold, in order; the rest of a
        larger input is read (an OR over its bits), the rest of a larger output set to zero. Split over
        the kernel threads as the compiled loops are, each part taking an equal share of positions.
        Returns the function that installs it."""
        import numpy as np

        from customops.accel import parallel

        dtype = np.dtype(dtype)
        bits = np.dtype(f"u{dtype.itemsize}") if dtype.itemsize in (1, 2, 4, 8) else np.dtype(np.uint8)
        units = COPY_UNITS

        def part(src: Any, dst: Any, start: int, stop: int) -> None:
            both, longer = min(src.size, dst.size), max(src.size, dst.size)
            lo, hi = longer * start // units, longer * stop // units  # this part's share of positions
            if lo < both:
                dst[lo : min(hi, both)] = src[lo : min(hi, both)]  # numpy releases the GIL for these
            lo = max(lo, both)
            if lo < hi:
                if src.size > both:
                    np.bitwise_or.reduce(src[lo:hi])
                else:
                    dst[lo:hi] = 0

        def copy(feed: Any) -> Any:
            out = np.empty(shape, dtype)
            src = feed[0].reshape(-1).view(bits)  # the layer's inputs are fresh C-contiguous copies
            dst = out.reshape(-1).view(bits)
            parallel.run(part, units, src.size + dst.size, src, dst)
            return out

        return self._answering(copy)

    def probe_memory(self) -> None:
        """Our hook, recording (peak bytes numpy allocated during the call, output bytes)."""
        import tracemalloc

        invoke = self.seams.our_hook()

        def probed(k_id: int, feed: Any, raw: dict[str, str]) -> tuple[Any, ...]:
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                result = invoke(k_id, feed, raw)
                peak = tracemalloc.get_traced_memory()[1] - base
            finally:
                tracemalloc.stop()
            self.peak.append((peak, getattr(result[2], "nbytes", 0)))
            return result

        self.install(probed)
