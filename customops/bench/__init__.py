"""``customops bench``: our kernels against ORT's built-in ones, and the cost of the Python-op layer.

suite: the workloads; hooks: the invocation hooks swapped in (ours, stock, stand-in kernels); timing:
alternating sides and the measurement of a workload and of the hook; report: the results, summary,
targets, renderings and JSON; command: the command itself.
"""
