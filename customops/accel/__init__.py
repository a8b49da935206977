"""Compiled loops behind a small seam: numba functions compiled on demand (jit), the loops of each op
(the ``*_loops`` modules, in a package per family of :mod:`customops.kernels`: resampling, padding,
spatial, quantized, activations; Resize's choice among its loops in resampling.resize_plans), a thread
pool that runs ranges of one loop in parallel (parallel), the integer kernels' float products on it
(gemm) and the cache of prepared plans (plans).
Nothing here knows ONNX; the kernels call in and keep a numpy path for every case."""
