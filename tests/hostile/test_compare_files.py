"""compare on hostile files: inputs never unpickled, names never become paths outside the directory the user
named, destinations checked before the work and written whole, generated inputs bounded."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from customops.cli.main import main
from tests.helpers import NEVER, one_error_line

ROOT = Path(__file__).resolve().parents[2]
DEVIATION = ROOT / "customops" / "examples" / "ort_deviation.onnx"


def _tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` (and ``path`` itself if a file) with its hash."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _small_model(path: Path) -> Path:
    """Pad of a float input ``x`` [1, 1, 2, 2] by one on each side: runs on both sides."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant", name="pad")
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


class _Marker:
    """Unpickling this writes a file: the proof that code ran from data."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (Path(self.path), "code ran"))


def test_inputs_npz_with_an_object_array_runs_no_code(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.npz"
    np.savez(evil, x=np.array([_Marker(str(marker))], dtype=object))
    model = _small_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(evil)]) == 2
    assert "never unpickled" in one_error_line(capsys)
    assert not marker.exists()


def test_a_plain_pickle_named_npz_runs_no_code(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.npz"
    evil.write_bytes(pickle.dumps({"x": _Marker(str(marker))}))
    model = _small_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(evil)]) == 2
    assert "not a readable .npz" in one_error_line(capsys)
    assert not marker.exists()


def test_string_inputs_travel_as_unicode_arrays(tmp_path, capsys):
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant", name="pad")
    pads = onnx.numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)],
        [pads],
    )
    model = tmp_path / "s.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array([["a", "bc"]]))
    report = tmp_path / "r.json"
    status = main(["compare", str(model), "--inputs", str(inputs), "--json", str(report)])
    assert status in (0, 1), capsys.readouterr().err  # ORT's CPU Pad has no string kernel: side-failed is 1
    assert report.exists()


def test_an_npz_whose_arrays_declare_more_than_the_limit_is_refused_unread(tmp_path, capsys, monkeypatch):
    import customops.comparison.inputs as compare

    monkeypatch.setattr(compare, "INPUT_LIMIT", 1000)
    inputs = tmp_path / "in.npz"
    np.savez_compressed(inputs, x=np.zeros((1, 1, 2, 2), np.float32), pad=np.zeros(10_000, np.uint8))
    assert zipfile.is_zipfile(inputs)
    model = _small_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(inputs)]) == 2
    assert "over the 1000 allowed" in one_error_line(capsys)


def test_an_input_tensor_pointing_at_external_data_is_refused(tmp_path, capsys):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    case = tmp_path / "case"
    case.mkdir()
    tensor = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[1, 1, 2, 2])
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "../secret.bin"
    (case / "input_0.pb").write_bytes(tensor.SerializeToString())
    model = _small_model(tmp_path / "m.onnx")
    assert main(["compare", str(model), "--inputs", str(case)]) == 2
    assert "external data" in one_error_line(capsys)


@pytest.mark.parametrize("name", ["..", ".", "", "/tmp", "../../escape", "m.onnx", "a/b"])
def test_node_names_never_become_paths_outside_save_repro(tmp_path, name):
    model = onnx.load(DEVIATION)
    for node in model.graph.node:
        if node.op_type == "Resize":
            node.name = name
    work = tmp_path / "work"
    work.mkdir()
    path = work / "m.onnx"
    onnx.save(model, path)
    out = work / "repro"
    before = _tree(path)
    assert main(["compare", str(path), "--save-repro", str(out)]) == 1
    assert _tree(path) == before
    assert sorted(p.name for p in work.iterdir()) == ["m.onnx", "repro"]
    cases = list(out.iterdir())
    assert len(cases) == 1 and cases[0].is_dir() and not cases[0].name.startswith(".")
    assert (cases[0] / "model.onnx").is_file() and (cases[0] / "test_data_set_0" / "input_0.pb").is_file()


def test_save_repro_never_replaces_what_is_already_there(tmp_path):
    model = onnx.load(DEVIATION)
    out = tmp_path / "repro"
    out.mkdir()
    keep = out / "downsample_align_corners"
    keep.write_text("mine")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert main(["compare", str(path), "--save-repro", str(out)]) == 1
    assert keep.read_text() == "mine"
    assert (out / "downsample_align_corners-2" / "model.onnx").is_file()


def test_json_and_html_on_one_path_are_refused_before_the_work(tmp_path, capsys):
    model = _small_model(tmp_path / "m.onnx")
    same = tmp_path / "report"
    assert main(["compare", str(model), "--json", str(same), "--html", str(same)]) == 2
    assert "same file" in one_error_line(capsys)
    assert not same.exists()


@pytest.mark.parametrize("where", ["the directory", "inside it"])
@pytest.mark.parametrize("option", ["--json", "--html", "--save-inputs", "--save-outputs"])
def test_an_output_on_or_inside_save_repro_s_directory_is_refused_before_the_work(
    tmp_path, capsys, option, where
):
    # --json OUT --save-repro OUT once did the whole comparison, wrote OUT, then refused --save-repro
    model = _small_model(tmp_path / "m.onnx")
    repro = tmp_path / "repro.npz"  # a name the file options take too
    target = repro if where == "the directory" else repro / "r.npz"
    if where == "inside it":
        repro.mkdir()
    code = main(["compare", str(model), option, str(target), "--save-repro", str(repro)])
    assert code == 2
    assert "--save-repro's directory or inside it" in one_error_line(capsys)
    assert not target.exists() and (not repro.exists() or not any(repro.iterdir()))


def _unwritable_dir(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    return Path("/sys/kernel")  # root writes anywhere the mode says no, but nothing can be made here


@pytest.mark.parametrize("option", ["--json", "--html", "--save-repro"])
def test_unwritable_destinations_are_refused_before_the_work(tmp_path, capsys, option):
    model = _small_model(tmp_path / "m.onnx")
    target = _unwritable_dir(tmp_path) / "out"
    assert main(["compare", str(model), option, str(target)]) == 2
    line = one_error_line(capsys)  # no progress line: refused before any run
    assert "not writable" in line and option in line


def test_outputs_that_are_devices_or_fifos_are_refused(tmp_path):
    model = _small_model(tmp_path / "m.onnx")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for option, target in (("--json", fifo), ("--html", Path(os.devnull))):
        proc = subprocess.run(  # in a child: writing a FIFO without a reader would block for ever
            [sys.executable, "-m", "customops", "compare", str(model), option, str(target)],
            capture_output=True,
            text=True,
            timeout=NEVER,
        )
        assert proc.returncode == 2, proc.stderr
        assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr
    assert fifo.is_fifo() and Path(os.devnull).is_char_device()


def _tiny_tmpfs(path: Path) -> bool:
    path.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True)
    return proc.returncode == 0


def _fill(path: Path) -> None:
    """Write ``path`` until the disk is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_full_disk_leaves_no_truncated_report(tmp_path, capsys):
    disk = tmp_path / "disk"
    if shutil.which("mount") is None or os.geteuid() != 0 or not _tiny_tmpfs(disk):
        pytest.skip("needs root and a tmpfs mount to fill a disk")
    try:
        (disk / "old.html").write_text("old report")
        _fill(disk / "fill")
        model = tmp_path / "m.onnx"
        shutil.copy(DEVIATION, model)
        assert main(["compare", str(model), "--html", str(disk / "old.html")]) == 2
        assert "cannot write" in capsys.readouterr().err.splitlines()[-1]
        assert (disk / "old.html").read_text() == "old report"
        assert sorted(p.name for p in disk.iterdir()) == ["fill", "old.html"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_huge_dims_are_refused_before_anything_is_drawn(tmp_path, capsys):
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge", name="pad")
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads],
    )
    model = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30));"
        "from customops.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "compare", str(model), "--dim", "H=30000", "--dim", "W=30000"],
        capture_output=True,
        text=True,
        timeout=NEVER,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "compil" not in line]
    assert len(lines) == 1 and "GiB" in lines[0] and "--dim" in lines[0], proc.stderr


@pytest.mark.parametrize("source", ["/dev/zero", "fifo", "directory-file"])
def test_inputs_that_are_not_regular_files_are_never_read(tmp_path, source):
    model = _small_model(tmp_path / "m.onnx")
    if source == "fifo":
        path = tmp_path / "in.npz"
        os.mkfifo(path)
    elif source == "directory-file":
        path = tmp_path / "case"
        path.mkdir()
        (path / "input_0.pb").symlink_to("/dev/zero")
    else:
        path = Path(source)
    proc = subprocess.run(  # in a child: an unbounded read or a blocked open would not end
        [sys.executable, "-m", "customops", "compare", str(model), "--inputs", str(path)],
        capture_output=True,
        text=True,
        timeout=NEVER,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "is not a regular file" in line


def _dynamic_model(path: Path, dims: list) -> Path:
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge", name="pad")
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [pads],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.mark.parametrize("dims", [[-2, -3, 2, 2], [2**62, 2**62, 0, 2]])
def test_declared_dims_that_cannot_be_drawn_are_refused_in_one_line(tmp_path, capsys, dims):
    model = _dynamic_model(tmp_path / "m.onnx", dims)
    assert main(["compare", str(model)]) == 2
    line = one_error_line(capsys)
    assert "declares a dimension" in line and "--inputs" in line


def test_names_from_the_model_never_break_the_one_line_or_drive_the_terminal(tmp_path, capsys):
    model = onnx.load(_small_model(tmp_path / "m.onnx"))
    evil = "in\nput\x1b[31mRED"
    model.graph.input[0].name = evil
    model.graph.node[0].input[0] = evil
    path = tmp_path / "evil.onnx"
    onnx.save(model, path)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.zeros((1, 1, 2, 2), np.float32))
    assert main(["compare", str(path), "--inputs", str(inputs)]) == 2
    line = one_error_line(capsys)
    assert "\x1b" not in line and "\\x1b" in line and "\\n" in line
    np.savez(inputs, **{evil: np.zeros((1, 1, 2, 2), np.float32)})
    assert main(["compare", str(path), "--inputs", str(inputs)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out


def test_save_repro_inside_the_inputs_directory_is_refused(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    shutil.copy(DEVIATION, model)
    out = tmp_path / "first"
    assert main(["compare", str(model), "--save-repro", str(out)]) == 1
    (case,) = out.iterdir()
    before = _tree(case)
    target = case / "test_data_set_0" / "more"
    assert (
        main(["compare", str(case / "model.onnx"), "--inputs", str(case), "--save-repro", str(target)]) == 2
    )
    assert "inside --inputs" in capsys.readouterr().err.strip().splitlines()[-1]
    assert _tree(case) == before and not target.exists()


def test_a_dangling_symlink_as_save_repro_is_refused_before_the_work(tmp_path, capsys):
    model = _small_model(tmp_path / "m.onnx")
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere" / "sub")
    report = tmp_path / "r.json"
    assert main(["compare", str(model), "--json", str(report), "--save-repro", str(link)]) == 2
    assert "not a directory" in one_error_line(capsys)
    assert not report.exists()


def _npy_claiming(elements: int) -> bytes:
    """A .npy whose header declares ``elements`` float32 values and holds 16 bytes of data: numpy would
    allocate what the header says before finding the data short."""
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({elements},), }}"
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\x00" * 16


@pytest.mark.parametrize("kind", ["npz", "polygraphy"])
def test_an_array_header_claiming_more_than_its_data_is_refused_before_allocating(tmp_path, capsys, kind):
    import base64
    import json

    model = _small_model(tmp_path / "m.onnx")
    inputs = tmp_path / f"in.{'npz' if kind == 'npz' else 'json'}"
    raw = _npy_claiming(50_000_000_000)  # 200 GB declared
    if kind == "npz":
        with zipfile.ZipFile(inputs, "w") as z:
            z.writestr("x.npy", raw)
    else:
        inputs.write_text(json.dumps([{"x": {"array": base64.b64encode(raw).decode()}}]))
    assert main(["compare", str(model), "--inputs", str(inputs)]) == 2
    assert "declares more data than it holds" in one_error_line(capsys)


def _npy_shaped(shape: tuple[int, ...]) -> bytes:
    """A .npy whose header declares ``shape`` of float32 over no data."""
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


@pytest.mark.parametrize("kind", ["npz", "inputs json", "outputs json"])
@pytest.mark.parametrize(
    "shape",
    [(2**70, 0), (-1, 4), (-(2**23), 2**41)],
    ids=["past int64 (numpy's count overflowed: a traceback)", "negative", "negative (a wrapped count)"],
)
def test_an_array_header_with_a_dimension_outside_int64_or_negative_is_refused(tmp_path, capsys, kind, shape):
    import base64
    import json

    model = _small_model(tmp_path / "m.onnx")
    raw = _npy_shaped(shape)
    path = tmp_path / f"f.{'npz' if kind == 'npz' else 'json'}"
    encoded = {"array": base64.b64encode(raw).decode(), "polygraphy_class": "ndarray"}
    if kind == "npz":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("x.npy", raw)
    elif kind == "inputs json":
        path.write_text(json.dumps([{"x": encoded}]))
    else:
        lazy = {"y": {"values": encoded, "polygraphy_class": "LazyArray"}}
        path.write_text(json.dumps({"lst": [["r", [{"outputs": lazy}]]]}))
    option = "--load-outputs" if kind == "outputs json" else "--inputs"
    assert main(["compare", str(model), option, str(path)]) == 2
    assert "each dimension from 0 to 2**63 - 1" in one_error_line(capsys)


@pytest.mark.parametrize("option", ["--inputs", "--load-outputs"])
def test_a_json_file_of_many_small_values_is_refused_before_it_is_parsed(tmp_path, option):
    """Every JSON value becomes a Python object of 50 bytes and more: a 30 MB file of empty arrays once
    cost most of a gigabyte (a 75 MB one 3.7 GB) before compare found it was no Polygraphy file. The
    values are counted first; the peak memory of the command (in a child) stays that of a small file."""
    model = _small_model(tmp_path / "m.onnx")
    path = tmp_path / "many.json"
    path.write_text("[" + "[]," * 10_000_000 + "[]]")
    script = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "print(p.stderr, file=sys.stderr)"
    )
    command = [sys.executable, "-m", "customops", "compare", str(model), option, str(path)]
    proc = subprocess.run(
        [sys.executable, "-c", script, *command], capture_output=True, text=True, timeout=NEVER
    )
    status, peak_kib = map(int, proc.stdout.split())
    assert status == 2, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "JSON values" in line and str(2**21) in line, line
    assert peak_kib < 400 * 1024, peak_kib  # the file and the interpreter; about 900 MB parsed
