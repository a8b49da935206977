"""Who leaves the spec: one vocabulary for compare and the fuzzer.

Three sides run the same node on the same inputs: ORT's built-in kernel (``builtin``), ours (``custom``)
and onnx.reference (``reference``). When built-in and custom differ, the reference votes: the side it
does not agree with is the odd one out. Both tools call :func:`odd_one_out` with the three pairwise
agreements, so that ``customops compare`` and ``customops fuzz replay`` judge the same case the same way;
compare words the answer as an attribution (:func:`attribution`), the fuzzer as the side of a finding.
"""

from __future__ import annotations

SIDES = ("builtin", "custom", "reference")
"""The three sides, in the order reports list them."""

ODD_SIDES = ("builtin", "custom", "reference", "three-way", "unknown")
"""What :func:`odd_one_out` can answer besides None: a side, ``three-way`` (each differs from the other
two) or ``unknown`` (the reference cannot decide: it did not run, or agrees with both)."""

ATTRIBUTIONS = (
    "agree",
    "reference-odd-one-out",
    "builtin-leaves-spec",
    "custom-leaves-spec",
    "three-way",
    "no-third-vote",
    "undecided",
    "builtin-cannot-run",
    "custom-cannot-run",
    "both-cannot-run",
)
"""compare's words for the node alone (docs/compare.md, Verdicts)."""


def odd_one_out(builtin_custom: bool, builtin_ref: bool | None, custom_ref: bool | None) -> str | None:
    """The side the other two outvote, from whether each pair agrees (None: the reference has no output).

    None when built-in and custom agree and the reference agrees with at least one of them (within
    tolerance agreement is not transitive, so one disagreement alone blames nobody)."""
    if builtin_custom:
        return "reference" if builtin_ref is False and custom_ref is False else None
    if builtin_ref is None or custom_ref is None:
        return "unknown"
    if custom_ref and not builtin_ref:
        return "builtin"
    if builtin_ref and not custom_ref:
        return "custom"
    if not (builtin_ref or custom_ref):
        return "three-way"
    return "unknown"  # each is within tolerance of the reference, not of the other


def attribution(
    failed: dict[str, bool], builtin_custom: bool, builtin_ref: bool | None, custom_ref: bool | None
) -> str:
    """compare's attribution of a node run alone: ``failed`` says which of built-in and custom raised
    (their outputs do not count then); otherwise :func:`odd_one_out` in compare's words."""
    if failed["builtin"] and failed["custom"]:
        return "both-cannot-run"
    for side in ("builtin", "custom"):
        if failed[side]:
            return f"{side}-cannot-run"
    odd = odd_one_out(builtin_custom, builtin_ref, custom_ref)
    if odd is None:
        return "agree"
    if odd in ("builtin", "custom"):
        return f"{odd}-leaves-spec"
    if odd == "reference":
        return "reference-odd-one-out"
    if odd == "unknown":
        return "no-third-vote" if builtin_ref is None or custom_ref is None else "undecided"
    return odd
