"""Evaluation shared by compare and fuzz: running/ runs the three sides (built-in, custom, reference)
in child processes, judging/ says how their outputs differ and who leaves the spec, cases/ writes and
reads ONNX test cases."""
