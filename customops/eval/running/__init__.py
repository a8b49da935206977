"""Running the three sides (ORT's built-in kernels, ours, onnx.reference), each in a child process."""
