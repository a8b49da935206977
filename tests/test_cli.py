"""The command line: subcommands, exit statuses and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys

import onnx
import pytest

from tests.helpers import DEVIATION, NEVER, run_cli, strict_json
from tests.test_rewrite import _pipeline


def test_ops_prints_the_support_table_with_probed_builtin_coverage():
    proc = run_cli("ops")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    resize19 = next(line for line in lines if line.split()[:2] == ["Resize", "19"])
    assert "uint16" in resize19 and "string" in resize19 and "float16*" in resize19
    col2im = next(line for line in lines if line.startswith("Col2Im"))
    assert col2im.split()[-2:] == ["float", "float16‡"]  # ORT's built-in Col2Im is float-only: casts
    assert "‡ built-in: ORT casts to another type around a kernel for that type" in lines
    data = strict_json(run_cli("ops", "--json").stdout)
    way = {(r["op"], r["elem_type"]): r["builtin_way"] for r in data if r["version"] in (18, 19)}
    assert way["Col2Im", "double"] == "" and way["Col2Im", "float"] == "kernel"
    assert way["Col2Im", "float16"] == "cast" and way["Resize", "float"] == "kernel"
    assert way["CenterCropPad", "float"] == "function"  # ORT has no CenterCropPad kernel at all
    row = next(r for r in data if r["op"] == "Col2Im" and r["elem_type"] == "double")
    assert row["ours"] == "native" and row["builtin"] is False


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(_pipeline(), path)
    return path


def test_rewrite_and_restore_round_trip_through_files(model_file, tmp_path):
    before = model_file.read_bytes()
    out = tmp_path / "rw.onnx"
    proc = run_cli("rewrite", str(model_file), str(out))
    assert proc.returncode == 0, proc.stderr
    assert "3 swapped, 0 skipped" in proc.stdout
    assert model_file.read_bytes() == before
    back = tmp_path / "back.onnx"
    proc = run_cli("restore", str(out), str(back))
    assert proc.returncode == 0, proc.stderr
    assert back.read_bytes() == before


def test_existing_output_is_replaced_only_on_success(model_file, tmp_path):
    out = tmp_path / "out.onnx"
    out.write_bytes(b"previous")
    proc = run_cli("rewrite", str(model_file), str(out), "--ops", "Nope")
    assert proc.returncode == 2 and out.read_bytes() == b"previous"
    proc = run_cli("rewrite", str(model_file), str(out))
    assert proc.returncode == 0 and onnx.load(out).graph.node
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "out.onnx"]  # no temporary left


def test_rewrite_dry_run_writes_nothing_and_json_is_machine_readable(model_file, tmp_path):
    out = tmp_path / "rw.onnx"
    proc = run_cli("rewrite", str(model_file), str(out), "--dry-run", "--json", "--ops", "Resize")
    assert proc.returncode == 0, proc.stderr
    report = strict_json(proc.stdout)
    assert report["summary"] == {"swapped": 1, "skipped": 2, "written": None}
    assert not out.exists()


@pytest.mark.parametrize(
    ("make", "args", "needle"),
    [
        (None, ["missing.onnx", "out.onnx"], "does not exist"),
        ("garbage", ["bad.onnx", "out.onnx"], "not a readable ONNX model"),
        ("truncated", ["bad.onnx", "out.onnx"], "not a readable ONNX model"),
        ("model", ["model.onnx", "out.onnx", "--ops", "Conv"], "unknown op 'Conv'"),
        ("model", ["model.onnx", "out.onnx", "--nodes", "ghost"], "no node named 'ghost'"),
        ("model", ["model.onnx", "nodir/out.onnx"], "nodir' does not exist"),
        ("invalid", ["model.onnx", "out.onnx"], "fails the ONNX checker"),
        ("model", ["model.onnx", "model.onnx"], "is the input model"),
        ("model", ["model.onnx", "./sub/../model.onnx"], "is the input model"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, make, args, needle):
    if make == "garbage":
        (tmp_path / "bad.onnx").write_bytes(b"\x00\xffthis is not protobuf" * 3)
    elif make == "truncated":
        (tmp_path / "bad.onnx").write_bytes(_pipeline().SerializeToString()[:-7])
    elif make == "model":
        onnx.save(_pipeline(), tmp_path / "model.onnx")
    elif make == "invalid":
        model = _pipeline()
        model.graph.node[0].input[0] = "no_such_value"  # uses a value nothing produces
        onnx.save(model, tmp_path / "model.onnx")
    (tmp_path / "sub").mkdir()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    proc = run_cli("rewrite", *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("command", ["rewrite", "restore"])
def test_the_output_never_replaces_the_input_or_its_external_data(tmp_path, command):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    # a model whose tensors live in external data named as another output's data file would be
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    bias = numpy_helper.from_array(np.ones((1, 1, 18, 18), np.float32), "bias")  # over 1 KiB
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["p"]), helper.make_node("Add", ["p", "bias"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 18, 18])],
        [pads, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    onnx.save(
        model, tmp_path / "a.onnx", save_as_external_data=True, location="b.onnx.data", size_threshold=0
    )
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for out, needle in (("a.onnx", "is the input model"), ("b.onnx", "is also an input")):
        proc = run_cli(command, "a.onnx", out, cwd=tmp_path)
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], proc.stderr
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # any other name is fine, with its own external data file
    proc = run_cli(command, "a.onnx", "c.onnx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "c.onnx.data").exists()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before} == before


@pytest.mark.skipif(os.environ.get("CUSTOMOPS_JIT", "1") == "0", reason="the compiled loops are off")
def test_a_first_compilation_is_announced_once_and_a_cached_run_is_silent(tmp_path):
    """A machine's first run pauses while numba compiles the loops: the command says so on stderr, once;
    a run that loads them from the on-disk cache says nothing of it."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from customops.accel.jit import COMPILING

    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")
    graph = helper.make_graph(
        [node],
        "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 300, 300])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 304, 304])],
        [numpy_helper.from_array(np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64), "pads")],
    )
    path = tmp_path / "pad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}  # a cold cache of our own
    command = [sys.executable, "-m", "customops.cli.main", "compare", str(path)]
    runs = [subprocess.run(command, capture_output=True, text=True, timeout=NEVER, env=env) for _ in range(2)]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr  # the two sides agree on this Pad
        assert COMPILING not in proc.stdout  # stdout carries the results only
    assert runs[0].stderr.count(COMPILING) == 1, runs[0].stderr
    assert COMPILING not in runs[1].stderr, runs[1].stderr


def test_a_reader_that_goes_away_ends_the_command_quietly():
    """``customops ops | head -1``: stdout's reader closes early; no traceback, status 141 as for SIGPIPE."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "customops.cli.main", "ops", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # before the command writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=NEVER) == 141, err
    assert err == ""


def test_graph_values_without_a_shape_pass_the_relaxed_check(tmp_path):
    """ONNX's checker wants a shape on every graph input and output; ORT does not, nor do we."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],  # no shape field
        [scales],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(onnx.checker.ValidationError, match="shape"):
        onnx.checker.check_model(str(tmp_path / "m.onnx"))
    proc = run_cli("rewrite", "m.onnx", "rw.onnx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("compare", "m.onnx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("AGREE")
    # another fault in such a model is still reported, whole, on one line
    model.graph.node.append(helper.make_node("Relu", ["nowhere"], ["z"]))
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    onnx.save(model, tmp_path / "bad.onnx")
    proc = run_cli("rewrite", "bad.onnx", "rw2.onnx", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    assert "topologically sorted" in lines[0] and "is not output of any previous nodes" in lines[0]
    assert not (tmp_path / "rw2.onnx").exists()


@pytest.mark.parametrize(
    ("args", "prog", "needle"),
    [
        ([], "customops", "required: COMMAND"),
        (["nope"], "customops", "invalid choice: 'nope'"),
        (["compare"], "customops compare", "required: MODEL"),
        (["bench", "--repeat", "x"], "customops bench", "invalid int value: 'x'"),
        (["conformance", "--filter", "z"], "customops conformance", "unrecognized arguments: --filter z"),
        (["rewrite", "in.onnx"], "customops rewrite", "required: OUT"),
        (["fuzz", "replay"], "customops fuzz replay", "required: GROUP_DIR"),
        (["ops", "--json", "--markdown"], "customops ops", "not allowed with argument --json"),
    ],
)
def test_usage_mistakes_are_one_line_naming_the_subcommand(capsys, args, prog, needle):
    from customops.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{prog}: error: {err.split(': error: ', 1)[1].rstrip()}"]
    assert needle in err and f"(see '{prog} -h')" in err and "usage:" not in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["compare", "{model}", "--json", "{tmp}"], "--json '{tmp}' is a directory"),
        (["compare", "{model}", "--html", "{tmp}"], "--html '{tmp}' is a directory"),
        (["compare", "{model}", "--html", "{tmp}/no/such.html"], "directory '{tmp}/no' does not exist"),
        (
            ["compare", "{model}", "--save-repro", "{model}"],
            "--save-repro '{model}' exists and is not a directory",
        ),
        (["bench", "--json", "{tmp}"], "--json '{tmp}' is a directory"),
        (
            ["fuzz", "--op", "Pad", "--markdown", "{tmp}", "--out", "{tmp}/f"],
            "--markdown '{tmp}' is a directory",
        ),
        (["fuzz", "--op", "Pad", "--out", "{model}"], "--out '{model}' exists and is not a directory"),
    ],
)
def test_unwritable_output_paths_are_refused_before_any_work(capsys, tmp_path, model_file, args, needle):
    """Each is refused with one line before any work, not after the whole comparison or campaign with an
    IsADirectoryError or FileExistsError traceback."""
    from customops.cli.main import main

    values = {"model": str(model_file), "tmp": str(tmp_path)}
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([a.format(**values) for a in args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and needle.format(**values) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_version_names_customops_and_what_it_runs_on():
    from importlib.metadata import version

    import onnxruntime

    import customops

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    line = proc.stdout.strip()
    assert "\n" not in line  # one line, however narrow the terminal
    assert line.startswith(f"customops {customops.__version__} (")
    assert f"onnxruntime {onnxruntime.__version__}" in line and f"numba {version('numba')}" in line
    assert version("customops") == customops.__version__  # pyproject takes its version from the package


def test_python_dash_m_customops_is_the_command():
    ok = subprocess.run(
        [sys.executable, "-m", "customops", "ops", "--no-probe", "--json"], capture_output=True
    )
    assert ok.returncode == 0 and strict_json(ok.stdout)
    bad = subprocess.run([sys.executable, "-m", "customops", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "invalid choice: 'nope'" in bad.stderr


def test_a_compilation_after_a_command_in_the_same_process_does_not_write_to_its_closed_stderr(tmp_path):
    """cli.main() run in a process whose stderr is then closed (pytest's capture does that), followed by a
    first compilation in that process: the kernel runs; the note goes nowhere."""
    script = (
        "import io, sys\n"
        "import numpy as np\n"
        "from customops.cli.main import main\n"
        "fake, real = io.StringIO(), sys.stderr\n"
        "sys.stderr = fake\n"
        "main(['ops', '--no-probe'])\n"
        "sys.stderr = real\n"
        "fake.close()\n"
        "from customops.kernels.padding.pad import pad\n"
        "x = np.arange(2 * 300 * 300, dtype=np.float32).reshape(1, 2, 300, 300)\n"
        "y = pad(x, np.array([0, 0, 2, 2, 0, 0, 2, 2]), mode='reflect')\n"
        "print(y.shape, float(y[0, 0, 0, 0]))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}  # a cold cache: it compiles
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=NEVER, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "(1, 2, 304, 304) 602.0"


COLLECT_BOTH = """
import hashlib, json, sys, warnings
import numpy as np
from customops import conformance

def digest(case):
    h = hashlib.sha256(case.model.SerializeToString())
    for inputs, expected in case.data_sets:
        for a in (*inputs, *expected):
            a = np.asarray(a)
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    return [case.name, h.hexdigest(), case.rtol, case.atol]

fast = conformance.cases_of_our_modules()
ours = [digest(c) for c in conformance.backend_cases()]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    full = conformance.all_cases()
wanted = [digest(c) for c in full if c.name.startswith(conformance.BACKEND_PREFIXES)
          and "_expanded" not in c.name]  # _expanded, and the activations' _expanded_verN
json.dump({"fast": fast is not None, "ours": ours, "full": wanted, "every": len(full)}, sys.stdout)
"""


def test_conformance_collects_the_same_cases_as_onnxs_full_collection_filtered():
    """Slow-ish (seconds: it runs onnx's whole collection once, in a process of its own). conformance
    imports only the case modules of our operators; the cases, their models and data must be those of the
    full collection filtered by name, in the same order, and the fast way must actually be taken."""
    proc = subprocess.run([sys.executable, "-c", COLLECT_BOTH], capture_output=True, text=True, timeout=NEVER)
    assert proc.returncode == 0, proc.stderr
    got = strict_json(proc.stdout)
    assert got["fast"], "cases_of_our_modules fell back to the full collection"
    assert got["ours"] == got["full"] and len(got["ours"]) >= 55
    assert got["every"] > 10 * len(got["ours"])  # the full collection is what the fast way avoids


def test_conformance_falls_back_to_the_full_collection_when_onnx_is_laid_out_otherwise(monkeypatch):
    from types import SimpleNamespace

    from customops import conformance

    monkeypatch.setattr(conformance, "CASE_MODULES", ("no_such_case_module",))
    assert conformance.cases_of_our_modules() is None
    names = ["test_abs", "test_resize_x", "test_col2im_y_expanded", "test_wrap_pad"]
    monkeypatch.setattr(conformance, "all_cases", lambda: [SimpleNamespace(name=n) for n in names])
    assert [c.name for c in conformance.backend_cases()] == ["test_resize_x", "test_wrap_pad"]


HEAVY = ("numpy", "onnx", "onnxruntime", "onnxruntime_extensions", "numba", "ml_dtypes")


@pytest.mark.parametrize("args", [["-h"], ["--version"], ["fuzz", "merge", "-h"], ["compare", "-h"]])
def test_help_and_version_import_none_of_the_heavy_packages(args):
    """The parser is built from cheap modules and the versions are read from the installed metadata, so
    that ``customops -h`` and ``--version`` answer at once (how fast: tools/startup.py)."""
    script = (
        "import sys\n"
        "from customops.cli.main import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=NEVER)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout and proc.stderr.strip() == "[]", proc.stderr


def test_quiet_long_commands_print_results_but_no_progress_and_still_report_errors(tmp_path):
    loud = run_cli("fuzz", "--op", "CenterCropPad", "--cases", "6", "--out", str(tmp_path / "a"))
    quiet = run_cli("fuzz", "-q", "--op", "CenterCropPad", "--cases", "6", "--out", str(tmp_path / "b"))
    assert loud.returncode == quiet.returncode and loud.returncode in (0, 1), quiet.stderr
    assert "fuzz:" in loud.stderr and quiet.stderr == "", quiet.stderr
    assert quiet.stdout.splitlines()[-1] == loud.stdout.splitlines()[-1].replace("/a", "/b")
    bad = run_cli("fuzz", "-q", "--op", "NoSuchOp", "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "NoSuchOp" in bad.stderr, bad.stderr
    assert not (tmp_path / "c").exists()
    conformance = run_cli("conformance", "-q", "--json")
    assert conformance.returncode == 0 and conformance.stderr == "", conformance.stderr
    assert strict_json(conformance.stdout)


@pytest.mark.parametrize(
    "command",
    [("compare", DEVIATION), ("bench", "--quick", "--filter", "pad-constant")],
    ids=["compare", "bench"],
)
def test_quiet_hides_the_note_of_a_first_compilation_too(tmp_path, command):
    """The note of numba's first compilation is progress: on a machine whose cache is cold (here: an empty
    NUMBA_CACHE_DIR) it shows without -q, and not with it; compare's note comes from its sides' children,
    bench's from the command's own process."""
    from customops.accel.jit import COMPILING

    loud = run_cli(*command, env={"NUMBA_CACHE_DIR": str(tmp_path / "a")})
    quiet = run_cli(command[0], "-q", *command[1:], env={"NUMBA_CACHE_DIR": str(tmp_path / "b")})
    assert loud.returncode == quiet.returncode and loud.returncode in (0, 1), quiet.stderr
    assert COMPILING in loud.stderr and quiet.stderr == "", quiet.stderr
