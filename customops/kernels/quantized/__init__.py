"""The quantized integer family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul and QLinearConv, one module each, and :mod:`.arithmetic`, the exact arithmetic
they share (element types, scale layouts, one rounding per result, exact integer products)."""
