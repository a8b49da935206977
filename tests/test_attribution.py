"""One attribution rule for compare and fuzz (customops.eval.judging.attribution): the same three outcomes give
the same odd one out in both tools, on real sessions."""

from __future__ import annotations

import numpy as np
import pytest

from customops.eval.judging.attribution import attribution, odd_one_out

# (builtin~custom, builtin~reference, custom~reference) -> odd one out
TABLE = [
    ((True, True, True), None),
    ((True, False, True), None),
    ((True, True, False), None),
    ((True, False, False), "reference"),
    ((True, None, None), None),
    ((False, False, True), "builtin"),
    ((False, True, False), "custom"),
    ((False, False, False), "three-way"),
    ((False, True, True), "unknown"),
    ((False, None, None), "unknown"),
]


@pytest.mark.parametrize(("votes", "odd"), TABLE)
def test_odd_one_out(votes, odd):
    assert odd_one_out(*votes) == odd


WORDS = {
    None: "agree",
    "reference": "reference-odd-one-out",
    "builtin": "builtin-leaves-spec",
    "custom": "custom-leaves-spec",
    "three-way": "three-way",
}


@pytest.mark.parametrize(("votes", "odd"), TABLE)
def test_compare_words_the_same_vote(votes, odd):
    word = attribution({"builtin": False, "custom": False}, *votes)
    if odd == "unknown":
        assert word == ("no-third-vote" if votes[1] is None else "undecided")
    else:
        assert word == WORDS[odd]


def test_failures_come_before_the_vote():
    assert attribution({"builtin": True, "custom": True}, True, True, True) == "both-cannot-run"
    assert attribution({"builtin": True, "custom": False}, True, True, True) == "builtin-cannot-run"
    assert attribution({"builtin": False, "custom": True}, True, True, True) == "custom-cannot-run"


FUZZ_SIDE = {
    "agree": None,
    "reference-odd-one-out": "reference",
    "builtin-leaves-spec": "builtin",
    "custom-leaves-spec": "custom",
    "three-way": "three-way",
    "no-third-vote": "unknown",
    "undecided": "unknown",
}


def test_compare_and_fuzz_blame_the_same_side_on_the_bundled_deviations():
    """Every swapped node of customops/examples/ort_deviation.onnx run alone on the three real sides: compare's
    attribution and the fuzz triage's finding name the same odd one out, and ORT is blamed at least once
    (the model exists to show its deviations)."""
    from pathlib import Path

    import onnx

    from customops.comparison.inputs import generate_inputs
    from customops.comparison.pipeline import compare_model
    from customops.eval.running.runner import Outcome
    from customops.fuzz.spaces.base import Verdict
    from customops.fuzz.triage import classify

    model = onnx.load(Path(__file__).parent.parent / "customops" / "examples" / "ort_deviation.onnx")
    comparison = compare_model(model, generate_inputs(model))
    words = []
    for entry in comparison.report.nodes:
        iso = comparison.isolated[entry.node]
        outcomes = {
            side: Outcome("ok", value) if value is not None else Outcome("error", None, "x")
            for side, value in iso.outputs.items()
        }
        elem = "float" if iso.outputs["builtin"].dtype == np.float32 else "double"
        sides = [f.side for f in classify(elem, Verdict(None), outcomes)]
        word = entry.attribution
        assert sides == ([] if FUZZ_SIDE[word] is None else [FUZZ_SIDE[word]]), (entry.node, word, sides)
        words.append(word)
    assert "builtin-leaves-spec" in words, words
