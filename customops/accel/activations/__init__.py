"""Compiled loops of the activation family (customops.kernels.activations): float32 evaluated in float64
with a proven bound, in blocks that count their elements in doubt (activation_loops.py)."""
