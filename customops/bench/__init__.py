"""``customops bench``: our kernels against ORT's built-in ones, and the cost of the Python-op layer."""
