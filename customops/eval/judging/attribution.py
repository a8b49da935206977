"""Who leaves the spec: one vocabulary for compare and the fuzzer.

Three sides run the same node on the same inputs: ORT's built-in kernel (``builtin``), ours (``custom``)
and onnx.reference (``reference``). When built-in and custom differ and the node's arithmetic rounds,
each side is judged against the yardstick, a float64 value of the formula (customops.eval.judging.yardstick):
a side within its rounding bound of it does not leave the spec, whatever the others say; when both are
within, the difference is rounding (``within-rounding``), blamed on no one. Without a yardstick (the
configuration does not round, the output is not a float, or the float64 run failed) the reference
votes: the side it does not agree with is the odd one out. Both tools call :func:`odd_one_out`, so
that ``customops compare`` and ``customops fuzz replay`` judge the same case the same way; compare
words the answer as an attribution (:func:`attribution`), the fuzzer as the side of a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

ODD_SIDES = ("builtin", "custom", "reference", "three-way", "unknown", "rounding")
"""What :func:`odd_one_out` can answer besides None: a side, ``three-way`` (each differs from the other
two), ``unknown`` (the reference cannot decide: it did not run, or agrees with both) or ``rounding``
(built-in and custom differ, both within their rounding bound of the yardstick)."""

ATTRIBUTIONS = (
    "agree",
    "reference-odd-one-out",
    "builtin-leaves-spec",
    "custom-leaves-spec",
    "three-way",
    "no-third-vote",
    "undecided",
    "within-rounding",
    "builtin-cannot-run",
    "custom-cannot-run",
    "both-cannot-run",
)
"""compare's words for the node alone (docs/compare.md, Verdicts)."""


@dataclass(frozen=True)
class Within:
    """Whether built-in and custom are each within the rounding bound of the yardstick
    (customops.eval.judging.yardstick.Measured); ``reference`` likewise where onnx.reference is a vote for the
    op (independent, in float64) and gave an output, else None."""

    builtin: bool
    custom: bool
    reference: bool | None = None


def odd_one_out(
    builtin_custom: bool, builtin_ref: bool | None, custom_ref: bool | None, within: Within | None = None
) -> str | None:
    """The side that leaves the spec, from whether each pair agrees (None: the reference has no output)
    and, where the node has a yardstick, ``within``.

    None when built-in and custom agree and the reference agrees with at least one of them (within
    tolerance agreement is not transitive, so one disagreement alone blames nobody). With a yardstick:
    ``rounding`` when both are within their bound; the side beyond its bound when the other is within,
    unless a reference that votes is beyond it too (then the formula, not rounding, is in question, and
    the three votes decide), or :func:`ours_questioned` (``unknown``); when both are beyond, the votes
    decide (a reference that is no vote cannot)."""
    if builtin_custom:
        return "reference" if builtin_ref is False and custom_ref is False else None
    if within is not None:
        if within.builtin and within.custom:
            return "rounding"
        if within.builtin != within.custom and within.reference is not False:
            return (
                "unknown"
                if ours_questioned(within, builtin_ref, custom_ref)
                else ("custom" if within.builtin else "builtin")
            )
        if within.reference is None:
            builtin_ref = custom_ref = None
    if builtin_ref is None or custom_ref is None:
        return "unknown"
    if custom_ref and not builtin_ref:
        return "builtin"
    if builtin_ref and not custom_ref:
        return "custom"
    if not (builtin_ref or custom_ref):
        return "three-way"
    return "unknown"  # each is within tolerance of the reference, not of the other


def ours_questioned(within: Within, builtin_ref: bool | None, custom_ref: bool | None) -> bool:
    """Whether ours is within its bound and the built-in kernel beyond it while a reference that is no
    vote agrees with the built-in kernel and not with ours. The yardstick is our kernel's formula in
    float64, so it cannot tell a departure of ORT's formula from one of ours: with a second
    implementation on ORT's side, no side is named."""
    return (
        within.custom
        and not within.builtin
        and within.reference is None
        and bool(builtin_ref)
        and custom_ref is False
    )


def attribution(
    failed: dict[str, bool],
    builtin_custom: bool,
    builtin_ref: bool | None,
    custom_ref: bool | None,
    within: Within | None = None,
) -> str:
    """compare's attribution of a node run alone: ``failed`` says which of built-in and custom raised
    (their outputs do not count then); otherwise :func:`odd_one_out` in compare's words."""
    if failed["builtin"] and failed["custom"]:
        return "both-cannot-run"
    for side in ("builtin", "custom"):
        if failed[side]:
            return f"{side}-cannot-run"
    odd = odd_one_out(builtin_custom, builtin_ref, custom_ref, within)
    if odd is None:
        return "agree"
    if odd == "rounding":
        return "within-rounding"
    if odd in ("builtin", "custom"):
        return f"{odd}-leaves-spec"
    if odd == "reference":
        return "reference-odd-one-out"
    if odd == "unknown":
        voted = builtin_ref is not None and custom_ref is not None
        counted = (
            within is None or within.reference is not None or ours_questioned(within, builtin_ref, custom_ref)
        )
        return "undecided" if voted and counted else "no-third-vote"
    return odd
