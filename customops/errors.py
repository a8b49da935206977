"""The one exception family customops raises for problems the user can fix."""

from __future__ import annotations


class CustomOpsError(Exception):
    """A problem with the user's input: a model, an argument, an attribute or a tensor.

    The command line maps it to exit status 2 and prints its message on one line.
    """


class KernelError(CustomOpsError, ValueError):
    """A kernel rejected its inputs or attributes (what the ONNX spec calls an invalid configuration)."""
