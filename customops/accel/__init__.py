"""Compiled loops behind a small seam: numba functions compiled on demand (jit), a thread pool that runs
ranges of one loop in parallel (parallel), Pad's row loop (pad_loops) and the cache of prepared plans
(plans). Nothing here knows ONNX; the kernels call in and keep a numpy path for every case."""
