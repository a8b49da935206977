"""``customops compare``: one model run by ORT's built-in kernels and by ours, node by node, with
onnx.reference as a third vote."""
