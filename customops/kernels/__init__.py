"""Pure numpy kernels, one module per ONNX operator; no onnxruntime import here."""
