"""The one exception family customops raises for problems the user can fix."""

from __future__ import annotations


class CustomOpsError(Exception):
    """A problem with the user's input: a model, an argument, an attribute or a tensor.

    The command line maps it to exit status 2 and prints its message on one line.
    """


class KernelError(CustomOpsError, ValueError):
    """A kernel rejected its inputs or attributes (what the ONNX spec calls an invalid configuration)."""


MESSAGE_LIMIT = 1000
"""The most characters of an error message we pass on: a kernel's message may quote an attribute or an
input, which a hostile model can make as large as itself."""


def brief(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was when it is cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (message cut: {len(text)} characters)"
