"""ONNX test cases on disk: written and read in one place, with their reproducing script."""
