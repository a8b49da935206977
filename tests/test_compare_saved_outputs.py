"""``compare --save-outputs`` writes every compared tensor; ``compare --load-outputs`` compares our side
against saved outputs (Polygraphy's JSON, our .npz) in place of running the built-in side.

Polygraphy's files here are written by the real Polygraphy, in the test: its ``polygraphy run`` command
(ONNX Runtime's built-in kernels, so on the bundled deviation model the Resize that leaves the spec) or,
for arrays of our choosing, its own writer (``RunResults.save``). The older forms no Polygraphy installable
here writes are made from those real files, changed only where the older form differs, and each is checked
to be read by Polygraphy's own reader too."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from polygraphy.comparator import RunResults
from polygraphy.json import load_json

from customops.cli.main import main
from tests.helpers import DEVIATION, one_error_line, polygraphy, run_cli, strict_json


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """A directory of files the real ``polygraphy run`` wrote for the bundled deviation model: its
    inputs (``i.json``), its graph output (``o.json``), every tensor on the same inputs (``all.json``,
    ``--onnx-outputs mark all``) and, of two iterations, per-iteration directories (``idir/``,
    ``odir/``)."""
    d = tmp_path_factory.mktemp("polygraphy")
    polygraphy("run", DEVIATION, "--onnxrt", "--save-inputs", "i.json", "--save-outputs", "o.json", cwd=d)
    mark_all = ("--onnx-outputs", "mark", "all", "--save-outputs", "all.json")
    polygraphy("run", DEVIATION, "--onnxrt", "--load-inputs", "i.json", *mark_all, cwd=d)
    two = ("--iterations", "2", "--save-inputs", "idir", "--save-outputs", "odir")
    polygraphy("run", DEVIATION, "--onnxrt", *two, cwd=d)
    return d


def _first_iteration(path: Path) -> dict[str, np.ndarray]:
    """The first iteration of the one runner of a RunResults file, as Polygraphy itself reads it."""
    ((_, iterations),) = RunResults.load(str(path)).items()
    return dict(iterations[0].items())


def _compared(*args: str, tmp_path: Path) -> tuple[int, dict, dict[str, np.ndarray]]:
    """``compare DEVIATION ARGS`` with --json and --save-outputs: exit status, report, saved arrays."""
    report, arrays = tmp_path / "r.json", tmp_path / "s.npz"
    proc = run_cli("compare", DEVIATION, *args, "--json", str(report), "--save-outputs", str(arrays), "-q")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    with np.load(arrays, allow_pickle=False) as data:
        return proc.returncode, strict_json(report.read_text()), {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """One compare of the bundled deviation model with --save-outputs, its arrays by key."""
    path = tmp_path_factory.mktemp("saved") / "out.npz"
    proc = run_cli("compare", DEVIATION, "--save-outputs", str(path), "--quiet")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with np.load(path, allow_pickle=False) as data:
        return {"path": path, "arrays": {k: data[k] for k in data.files}}


def test_save_outputs_writes_every_compared_tensor_of_both_sides(saved):
    arrays = saved["arrays"]
    # the graph output and the swapped Resize's output ('resized'), each side's
    assert set(arrays) == {"builtin/output", "custom/output", "builtin/resized", "custom/resized"}
    # the Resize is where ORT departs from the spec: its two sides differ, in the last column
    a, b = arrays["builtin/resized"], arrays["custom/resized"]
    assert a.shape == b.shape == (1, 3, 19, 28) and not np.allclose(a, b)


def test_a_real_polygraphy_outputs_file_is_the_built_in_side(real, tmp_path):
    """What ``polygraphy run --save-outputs`` writes today (each output a ``LazyArray``) is read, and its
    arrays are the ones Polygraphy reads from it, bit for bit."""
    assert '"polygraphy_class": "LazyArray"' in (real / "o.json").read_text()
    status, doc, arrays = _compared(
        "--inputs", str(real / "i.json"), "--load-outputs", str(real / "o.json"), tmp_path=tmp_path
    )
    assert np.array_equal(arrays["builtin/output"], _first_iteration(real / "o.json")["output"])
    assert doc["sides"]["builtin"]["source"].startswith("Polygraphy runner onnxrt-runner")
    # ORT's built-in Resize (which Polygraphy ran) leaves the spec: the graph output differs from ours
    assert status == 1 and doc["outputs"][0]["verdict"] == "disagree"


def test_the_older_lazy_numpy_array_form_is_still_read(real, tmp_path):
    """Polygraphy before 0.48 wrapped each output as a ``LazyNumpyArray`` (the same object under its
    older name). No Polygraphy the package index offers writes it (0.48.1, the oldest there, already
    writes ``LazyArray``), so the file is the real one with the class renamed, which Polygraphy's own
    reader still takes; compare reads the same arrays from both."""
    old = tmp_path / "old.json"
    text = (real / "o.json").read_text()
    old.write_text(text.replace('"polygraphy_class": "LazyArray"', '"polygraphy_class": "LazyNumpyArray"'))
    assert '"LazyArray"' not in old.read_text()
    expected = _first_iteration(real / "o.json")["output"]
    assert np.array_equal(_first_iteration(old)["output"], expected)
    _, _, arrays = _compared("--inputs", str(real / "i.json"), "--load-outputs", str(old), tmp_path=tmp_path)
    assert np.array_equal(arrays["builtin/output"], expected)


def _recoded(value: object) -> object:
    """Each base64 .npy array of a Polygraphy file's JSON as the compressed .npz that Polygraphy's
    reader still takes (its "backwards compatibility with NPZ archives": older versions wrote them)."""
    if isinstance(value, dict):
        if isinstance(value.get("array"), str):
            array = np.load(io.BytesIO(base64.b64decode(value["array"])), allow_pickle=False)
            buffer = io.BytesIO()
            np.savez_compressed(buffer, array)
            return {**value, "array": base64.b64encode(buffer.getvalue()).decode()}
        return {k: _recoded(v) for k, v in value.items()}
    return [_recoded(v) for v in value] if isinstance(value, list) else value


def test_arrays_saved_as_compressed_npz_by_older_polygraphy_are_read(real, tmp_path):
    old = tmp_path / "npz.json"
    old.write_text(json.dumps(_recoded(json.loads((real / "o.json").read_text()))))
    old_inputs = tmp_path / "npz_inputs.json"
    old_inputs.write_text(json.dumps(_recoded(json.loads((real / "i.json").read_text()))))
    expected = _first_iteration(real / "o.json")["output"]
    assert np.array_equal(_first_iteration(old)["output"], expected)  # Polygraphy reads it
    assert np.array_equal(load_json(str(old_inputs))[0]["image"], load_json(str(real / "i.json"))[0]["image"])
    _, _, arrays = _compared("--inputs", str(old_inputs), "--load-outputs", str(old), tmp_path=tmp_path)
    assert np.array_equal(arrays["builtin/output"], expected)


def test_a_mark_all_file_compares_every_tensor_and_says_where_the_difference_starts(real, tmp_path):
    """``--onnx-outputs mark all``: every tensor of the file is compared, ORT's own nodes too. The
    Resize that ORT's built-in kernel (which wrote the file) computes otherwise starts the difference:
    its input agrees with the file's, its output does not; the Add after it (ORT's, not swapped) carries
    it in. The default table shows both rows."""
    loaded = _first_iteration(real / "all.json")
    assert set(loaded) == {"scaled", "resized", "output"}
    status, doc, arrays = _compared(
        "--inputs", str(real / "i.json"), "--load-outputs", str(real / "all.json"), tmp_path=tmp_path
    )
    assert status == 1
    assert {k.removeprefix("builtin/") for k in arrays if k.startswith("builtin/")} == set(loaded)
    for name, value in loaded.items():
        assert np.array_equal(arrays[f"builtin/{name}"], value), name
    by_output = {n["output"]: n for n in doc["nodes"]}
    assert [n["output"] for n in doc["nodes"]] == ["scaled", "resized", "output"]  # graph order
    mul, resize, add = by_output["scaled"], by_output["resized"], by_output["output"]
    assert (mul["verdict"], mul["origin"], mul["swapped"], mul["op"]) == ("agree", "none", False, "Mul")
    assert (resize["node"], resize["verdict"], resize["origin"], resize["swapped"]) == (
        "downsample_align_corners",
        "disagree",
        "starts-here",
        True,
    )
    assert resize["isolated"] is None  # no node is run alone against loaded outputs
    # labelled by the rules from its inputs and the file's output (no side named: attribution unknown)
    assert (resize["attribution"], resize["known"]) == ("unknown", ["R-ALIGN-CORNERS-INT-LENGTH"])
    assert (add["verdict"], add["origin"], add["swapped"]) == ("disagree", "carried-in", False)
    assert doc["summary"] == (
        f"DISAGREE: 2 node(s), 1 output(s) differ from the outputs loaded from {real / 'all.json'}; the "
        "difference starts at 'downsample_align_corners' [Resize-13]: its inputs agree with the loaded "
        "values, its output does not (known: R-ALIGN-CORNERS-INT-LENGTH); 1 node(s) after it carry the "
        "difference in"
    )
    proc = run_cli(
        "compare", DEVIATION, "--inputs", str(real / "i.json"), "--load-outputs", str(real / "all.json")
    )
    rows = {
        line.split()[0]: line for line in proc.stdout.splitlines()[3:] if line and not line.startswith(" ")
    }
    assert "starts-here" in rows["downsample_align_corners"]
    assert "Add (not swapped)" in rows[add["node"]] and "carried-in" in rows[add["node"]]
    assert mul["node"] not in rows and "1 more node(s) agree with the loaded outputs" in proc.stdout


def test_a_node_whose_inputs_the_file_lacks_is_compared_without_an_origin(real, tmp_path):
    """``--onnx-outputs resized output``: the file holds the Resize's output, not its input, so whether
    the difference starts at the Resize is not known; the Add, whose input the file holds, carries it."""
    some = ("--onnx-outputs", "resized", "output", "--save-outputs", "some.json")
    polygraphy("run", DEVIATION, "--onnxrt", "--load-inputs", str(real / "i.json"), *some, cwd=tmp_path)
    _, doc, _ = _compared(
        "--inputs", str(real / "i.json"), "--load-outputs", str(tmp_path / "some.json"), tmp_path=tmp_path
    )
    assert [(n["output"], n["origin"]) for n in doc["nodes"]] == [
        ("resized", "unknown"),
        ("output", "carried-in"),
    ]
    assert "where the difference starts is not known" in doc["summary"]


def test_an_outputs_only_file_says_why_the_swapped_nodes_were_not_compared(tmp_path):
    """A file of graph outputs only holds no value for the swapped nodes of the main graph: the verdict
    says so, and how to save one that does, not that they sit inside subgraphs or functions."""
    model = str(Path(DEVIATION).parent / "preprocess_pipeline.onnx")
    polygraphy("run", model, "--onnxrt", "--save-inputs", "i.json", "--save-outputs", "o.json", cwd=tmp_path)
    proc = run_cli(
        "compare",
        model,
        "--inputs",
        str(tmp_path / "i.json"),
        "--load-outputs",
        str(tmp_path / "o.json"),
        "-q",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("AGREE: ")
    assert "subgraphs" not in proc.stdout
    assert (
        "swapped node(s) not compared: the loaded file holds no value for their outputs (save it with "
        "--onnx-outputs mark all)" in proc.stdout
    )


def test_polygraphy_s_per_iteration_directories_give_their_first_iteration(real, tmp_path):
    """``polygraphy run --save-inputs DIR --save-outputs DIR`` writes a file per iteration (an inputs
    file then holds one feed, not a list): ``--inputs DIR`` and ``--load-outputs DIR`` read the first."""
    first_inputs = load_json(str(real / "idir" / "0000000000.json"))
    assert isinstance(first_inputs, dict)
    saved_inputs = tmp_path / "in.npz"
    _, doc, arrays = _compared(
        "--inputs",
        str(real / "idir"),
        "--load-outputs",
        str(real / "odir"),
        "--save-inputs",
        str(saved_inputs),
        tmp_path=tmp_path,
    )
    with np.load(saved_inputs, allow_pickle=False) as used:
        assert np.array_equal(used["image"], first_inputs["image"])
    assert np.array_equal(
        arrays["builtin/output"], _first_iteration(real / "odir" / "0000000000.json")["output"]
    )
    assert "0000000000.json" in doc["sides"]["builtin"]["source"]


@pytest.mark.parametrize(
    ("given", "output", "name"),
    [
        ("idir", "--json", "0000000000.json"),  # the first iteration, replaced by the report
        ("idir", "--save-inputs", "0000000001.json"),
        ("odir", "--save-outputs", "0000000000.json"),
        ("odir", "--save-outputs", "00.json"),  # a new file: the next run's first iteration
        ("odir", "--html", "r.html"),
        ("odir", "--save-repro", "cases"),
    ],
)
def test_no_output_lands_inside_a_directory_given_as_input(real, tmp_path, capsys, given, output, name):
    """Polygraphy's per-iteration directories are inputs like any file: nothing is written inside them."""
    import shutil

    directory = shutil.copytree(real / given, tmp_path / given)
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    option = "--inputs" if given == "idir" else "--load-outputs"
    assert main(["compare", DEVIATION, option, str(directory), output, str(directory / name)]) == 2
    assert f"is inside {option}" in one_error_line(capsys)
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def _written(path: Path, *runners: dict[str, np.ndarray]) -> Path:
    """A RunResults file written by Polygraphy's own writer: one runner per dict of arrays."""
    results = RunResults()
    for i, outputs in enumerate(runners):
        results.add([outputs], runner_name=f"other-runtime-{i}")
    results.save(str(path))
    return path


def test_load_outputs_polygraphy_json_of_the_spec_answer_agrees(saved, tmp_path):
    arrays = saved["arrays"]
    path = _written(tmp_path / "trt.json", {name: arrays[f"custom/{name}"] for name in ("output", "resized")})
    report = tmp_path / "r.json"
    proc = run_cli("compare", DEVIATION, "--load-outputs", str(path), "--json", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outputs loaded from" in proc.stderr and "running the model with ORT's built-in" not in proc.stderr
    doc = strict_json(report.read_text())
    assert doc["verdict"] == "agree"
    assert doc["sides"]["builtin"]["loaded_from"] == str(path)
    assert [n["node"] for n in doc["nodes"] if n["swapped"]] == ["downsample_align_corners"]


def test_load_outputs_of_our_npz_is_the_built_in_side_again(saved, tmp_path):
    report = tmp_path / "r.json"
    proc = run_cli("compare", DEVIATION, "--load-outputs", str(saved["path"]), "--json", str(report), "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "differ from the outputs loaded from" in proc.stdout
    doc = strict_json(report.read_text())
    (out,) = doc["outputs"]
    a, b = saved["arrays"]["builtin/output"], saved["arrays"]["custom/output"]
    assert out["verdict"] == "disagree" and out["metrics"]["max_abs"] == pytest.approx(
        float(np.abs(a - b).max())
    )
    assert doc["nodes"][0]["verdict"] == "disagree" and doc["nodes"][0]["output"] == "resized"


def _pickled() -> str:
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return base64.b64encode(buffer.getvalue()).decode()


def _claiming_huge(npz: bool) -> str:
    """A .npy header that declares 2**40 float32 elements over none (in an .npz when ``npz``): numpy
    would allocate 4 TiB before finding the data short."""
    import zipfile

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": (2**40,)})
    if npz:
        header, buffer = buffer.getvalue(), io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("arr_0.npy", header)
    return base64.b64encode(buffer.getvalue()).decode()


def _tampered(real: Path, path: Path, payload: str) -> Path:
    """The real outputs file with its array replaced by ``payload`` (a hostile file: no writer makes it)."""
    doc = json.loads((real / "o.json").read_text())
    doc["lst"][0][1][0]["outputs"]["output"]["values"]["array"] = payload
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("extra", "'nosuch' is not a value the model's main graph computes"),
        ("no output", "lacks graph output 'output'"),
        ("two runners", "holds 2 runners"),
        ("pickled", "output 'output'"),
        ("not base64", "output 'output'"),
        ("torch", "a torch tensor"),
        ("huge", "declares more data than it holds"),
        ("huge npz", "declares more data than it holds"),
    ],
)
def test_load_outputs_refuses_bad_files_in_one_line(real, tmp_path, capsys, content, message):
    zeros = np.zeros((1, 3, 19, 28), np.float32)
    path = tmp_path / "bad.json"
    if content == "extra":
        _written(path, {"output": zeros, "nosuch": zeros})
    elif content == "no output":
        _written(path, {"resized": zeros})
    elif content == "two runners":
        _written(path, {"output": zeros}, {"output": zeros})
    elif content == "torch":  # how Polygraphy saves a torch tensor: pickled by torch.save
        doc = json.loads((real / "o.json").read_text())
        doc["lst"][0][1][0]["outputs"]["output"]["values"] = {
            "tensor": _pickled(),
            "polygraphy_class": "Tensor",
        }
        path.write_text(json.dumps(doc))
    elif content.startswith("huge"):
        _tampered(real, path, _claiming_huge(npz=content == "huge npz"))
    else:
        _tampered(real, path, _pickled() if content == "pickled" else "%%%")
    before = path.read_bytes()
    assert main(["compare", DEVIATION, "--load-outputs", str(path)]) == 2
    assert message in one_error_line(capsys)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "dtype", ["V4", [("a", "<f4")], "m8[s]", "M8[s]"], ids=["void", "structured", "timedelta", "datetime"]
)
@pytest.mark.parametrize("kind", ["json", "npz"])
def test_load_outputs_refuses_arrays_no_onnx_tensor_holds(tmp_path, capsys, dtype, kind):
    """Polygraphy's writer saves any numpy array: one of a dtype no ONNX tensor has (written for an
    output or an inner value) is refused in one line, not compared (a void one left a traceback)."""
    arrays = {"output": np.zeros((1, 3, 19, 28), np.float32), "resized": np.zeros((1, 3, 19, 28), dtype)}
    path = tmp_path / f"odd.{kind}"
    if kind == "json":
        _written(path, arrays)
    else:
        np.savez(path, **arrays)
    assert main(["compare", DEVIATION, "--load-outputs", str(path)]) == 2
    assert "'resized' has dtype" in one_error_line(capsys)


def test_load_outputs_of_a_big_endian_machine_is_read(saved, tmp_path, capsys):
    """The spec's answer written where arrays are big-endian holds the same values: it agrees (its dtype,
    >f4, once made every value differ from float32)."""
    arrays = saved["arrays"]
    big = {n: arrays[f"custom/{n}"].astype(">f4") for n in ("output", "resized")}
    assert main(["compare", DEVIATION, "--load-outputs", str(_written(tmp_path / "be.json", big)), "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("AGREE")


def test_a_file_of_many_runners_is_refused_in_one_short_line(tmp_path, capsys):
    zeros = np.zeros((1, 3, 19, 28), np.float32)
    path = _written(tmp_path / "many.json", *[{"output": zeros}] * 300)
    assert main(["compare", DEVIATION, "--load-outputs", str(path)]) == 2
    line = one_error_line(capsys)
    assert "holds 300 runners" in line and len(line) < 400, line


def test_load_outputs_refuses_providers_and_an_npz_of_other_names(tmp_path, capsys):
    path = tmp_path / "o.npz"
    np.savez(path, other=np.zeros(3, np.float32))
    assert main(["compare", DEVIATION, "--load-outputs", str(path)]) == 2
    assert "'other' is not a value" in one_error_line(capsys)
    np.savez(path, output=np.zeros((1, 3, 19, 28), np.float32))
    assert main(["compare", DEVIATION, "--load-outputs", str(path), "--providers", "cpu"]) == 2
    assert "--load-outputs replaces" in one_error_line(capsys)


def test_an_outputs_file_given_as_inputs_says_so(real, capsys):
    assert main(["compare", DEVIATION, "--inputs", str(real / "o.json")]) == 2
    assert "holds a runner's outputs" in one_error_line(capsys)
