"""customops.safeio.inside: a directory whose name merely starts with another's is not inside it (the
check behind compare's --save-repro and fuzz merge's --out refusals)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from customops.eval.cases.testcase import write_test_case
from customops.safeio import inside
from tests.helpers import DEVIATION, run_cli


def test_a_sibling_sharing_a_prefix_is_not_inside(tmp_path):
    base = tmp_path / "in"
    (base / "sub").mkdir(parents=True)
    (tmp_path / "in2").mkdir()
    assert inside(base / "sub", base) and inside(base, base) and inside(base / "new", base)
    assert not inside(tmp_path / "in2", base) and not inside(tmp_path / "in2" / "x", base)
    assert not inside(tmp_path, base)
    (tmp_path / "link").symlink_to(base, target_is_directory=True)
    assert inside(tmp_path / "link" / "x", base)  # links followed


def test_compare_saves_reproducers_beside_an_input_directory_of_a_similar_name(tmp_path):
    """--inputs DIR with --save-repro DIR2: DIR2 is not inside DIR, so it is allowed (and written);
    --save-repro DIR/sub still is refused."""
    import onnx

    model = onnx.load(DEVIATION)
    x = model.graph.input[0]
    dims = [d.dim_value for d in x.type.tensor_type.shape.dim]
    case = tmp_path / "case"
    case.mkdir()
    write_test_case(case, model, {x.name: np.arange(np.prod(dims), dtype=np.float32).reshape(dims)}, None)
    beside = Path(f"{case}2")
    ok = run_cli("compare", DEVIATION, "--inputs", str(case), "--save-repro", str(beside), "-q")
    assert ok.returncode == 1 and ok.stderr == "", ok.stderr  # ORT leaves the spec here
    assert any(beside.iterdir())
    refused = run_cli("compare", DEVIATION, "--inputs", str(case), "--save-repro", str(case / "sub"))
    assert refused.returncode == 2 and "is inside --inputs" in refused.stderr, refused.stderr
