"""Compiled loops of the resampling family (customops.kernels.resampling): Resize's filter passes and
nearest gathers (resize_loops.py) and which of them runs a resize, from the kernel's tap tables
(resize_plans.py)."""
