"""Pure numpy kernels, a package per operator family (resampling, padding, spatial, quantized, activations),
a module per ONNX operator in it (activations: per group of operators); what the families share (args,
limits, rounding, work) at the top. No onnxruntime import here."""
