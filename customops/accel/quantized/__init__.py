"""Compiled loops of the quantized integer family (customops.kernels.quantized): float32 quantized into
and dequantized out of 8- and 16-bit integers (quantize_loops.py), and requantization's last rounding
into an integer type (requantize_loops.py)."""
