"""Every JSON we write is strict JSON: non-finite numbers as strings that float() reads back."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from customops import jsonout
from tests.helpers import strict_json


def test_non_finite_numbers_become_strings_float_reads_back():
    value = {
        "a": float("inf"),
        "b": np.float32(-np.inf),
        "c": [np.nan, 1.5, np.float64(2.0)],
        "d": np.array([[1, 2], [3, 4]], np.int64),
        "e": (np.int32(7), True, None, "x"),
        "f": np.array([np.inf, 0.25], np.float32),
        3: Path("/tmp/p"),
    }
    back = strict_json(jsonout.dumps(value))
    assert back == {
        "a": "inf",
        "b": "-inf",
        "c": ["nan", 1.5, 2.0],
        "d": [[1, 2], [3, 4]],
        "e": [7, True, None, "x"],
        "f": ["inf", 0.25],
        "3": "/tmp/p",
    }
    assert [float(v) for v in back["c"][1:]] == [1.5, 2.0] and float(back["a"]) == np.inf
    assert isinstance(back["e"][1], bool)  # bools stay bools, not 1


def test_dump_writes_the_same_text_and_passes_keyword_arguments():
    stream = io.StringIO()
    jsonout.dump({"x": np.nan, "y": [1]}, stream, indent=1)
    assert (
        stream.getvalue()
        == jsonout.dumps({"x": np.nan, "y": [1]}, indent=1)
        == '{\n "x": "nan",\n "y": [\n  1\n ]\n}'
    )


def test_objects_without_a_json_form_are_their_str():
    class Thing:
        def __str__(self) -> str:
            return "thing"

    assert strict_json(jsonout.dumps([Thing()])) == ["thing"]
