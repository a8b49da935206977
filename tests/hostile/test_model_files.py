"""Model files from an attacker, and outputs that are not files: external data that points outside the
model's directory or holds more than its tensor, outputs that are FIFOs or devices, writes interrupted at
any point. Commands run in a child process whose working directory is not the repository."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import customops
from tests.helpers import run_cli


def _pad_model(n: int = 4) -> onnx.ModelProto:
    """A Pad-13 of a constant float initializer of ``n`` elements (4 * n bytes)."""
    data = onnx.numpy_helper.from_array(np.arange(n, dtype=np.float32), "data")
    pads = onnx.numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    node = helper.make_node("Pad", ["data", "pads"], ["y"], name="pad")
    graph = helper.make_graph(
        [node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [data, pads]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _external(model: onnx.ModelProto, location: str, **extra: str) -> onnx.ModelProto:
    """``model`` with its 'data' initializer moved to external data at ``location`` (not written)."""
    tensor = next(t for t in model.graph.initializer if t.name == "data")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in {"location": location, **extra}.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return model


def _data_bytes(n: int = 4) -> bytes:
    return np.arange(n, dtype=np.float32).tobytes()


def _hostile_dir(tmp_path: Path, case: str) -> Path:
    """A directory holding in.onnx whose external data breaks one rule; its data sits where it points."""
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.bin"
    outside.write_bytes(_data_bytes())
    if case == "dotdot":
        model = _external(_pad_model(), "../outside.bin")
    elif case == "absolute":
        model = _external(_pad_model(), str(outside))
    elif case == "symlink":
        (work / "link.bin").symlink_to(outside)
        model = _external(_pad_model(), "link.bin")
    elif case == "bigger-than-declared":
        (work / "w.bin").write_bytes(_data_bytes(1 << 16))
        model = _external(_pad_model(), "w.bin")
    elif case == "length-beyond-file":
        (work / "w.bin").write_bytes(_data_bytes())
        model = _external(_pad_model(), "w.bin", length=str(1 << 40))
    elif case == "nul-in-location":
        model = _external(_pad_model(), "w\x00.bin")
    elif case == "component-too-long":
        model = _external(_pad_model(), "a" * 300)
    else:
        raise AssertionError(case)
    (work / "in.onnx").write_bytes(model.SerializeToString())
    return work


CASES = [
    "dotdot",
    "absolute",
    "symlink",
    "bigger-than-declared",
    "length-beyond-file",
    "nul-in-location",
    "component-too-long",
]
RULES = {
    "dotdot": "leads out of the model's directory",
    "absolute": "is absolute",
    "symlink": "symlink leading out of the model's directory",
    "bigger-than-declared": "bytes stored where the tensor declares 16",
    "length-beyond-file": "lie outside",
    "nul-in-location": "holds a NUL character",
    "component-too-long": "cannot be used",
}


@pytest.mark.parametrize("case", CASES)
def test_the_python_api_refuses_hostile_external_data_with_our_error(tmp_path, case):
    work = _hostile_dir(tmp_path, case)
    for call in (customops.rewrite, customops.restore):
        with pytest.raises(customops.CustomOpsError) as info:
            call(str(work / "in.onnx"))
        message = str(info.value)
        assert "tensor 'data'" in message and RULES[case] in message, message


@pytest.mark.parametrize("command", ["rewrite", "restore"])
@pytest.mark.parametrize("case", CASES)
def test_the_commands_refuse_hostile_external_data_with_one_line(tmp_path, case, command):
    work = _hostile_dir(tmp_path, case)
    proc = run_cli(command, "in.onnx", "out.onnx", cwd=work)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "tensor 'data'" in line and RULES[case] in line and "Traceback" not in proc.stderr
    assert not (work / "out.onnx").exists()


def test_external_data_inside_the_directory_still_loads(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(b"pad" + _data_bytes())
    model = _external(_pad_model(), "sub/w.bin", offset="3", length="16")
    (tmp_path / "in.onnx").write_bytes(model.SerializeToString())
    from customops.model.io import load_model_files

    loaded, external, files = load_model_files(tmp_path / "in.onnx")
    assert external and files[1] == tmp_path / "sub" / "w.bin"
    data = next(t for t in loaded.graph.initializer if t.name == "data")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(data), np.arange(4, dtype=np.float32))


# ---------------------------------------------------------------------------------------------
# Outputs that are not regular files


def _special_outputs(tmp_path: Path, kind: str) -> Path:
    if kind == "fifo":
        path = tmp_path / "out.fifo"
        os.mkfifo(path)
        return path
    if kind == "chardev":
        path = tmp_path / "null"
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
        return path
    return Path("/dev/null")


@pytest.mark.parametrize("kind", ["fifo", "chardev", "devnull"])
@pytest.mark.parametrize("command", ["rewrite", "restore"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(tmp_path, command, kind):
    model = _pad_model()
    if command == "restore":
        model = customops.rewrite(model)
    (tmp_path / "in.onnx").write_bytes(model.SerializeToString())
    out = _special_outputs(tmp_path, kind)
    before = os.stat(out)
    proc = run_cli(command, "in.onnx", str(out), cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "not a regular file" in line
    after = os.stat(out)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".customops-")]


def test_save_model_refuses_a_fifo(tmp_path):
    from customops.model.io import save_model

    fifo = tmp_path / "out.onnx"
    os.mkfifo(fifo)
    with pytest.raises(customops.CustomOpsError, match="not a regular file"):
        save_model(_pad_model(), fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# ---------------------------------------------------------------------------------------------
# An interruption at any point of save_model leaves no hidden directory


def _work_lines(modelio) -> tuple[int, int]:
    """Line numbers of save_model from its first line to its ``finally:`` (the work, not the cleanup)."""
    import inspect

    source, first = inspect.getsourcelines(modelio.save_model)
    end = next(i for i, text in enumerate(source) if text.strip() == "finally:")
    return first, first + end


@pytest.mark.parametrize("external", [False, True])
def test_an_interruption_anywhere_in_save_model_leaves_no_temporary_directory(tmp_path, external):
    """A KeyboardInterrupt (what SIGTERM becomes in the command) is raised at each line of the work
    save_model does (its own lines up to its cleanup, and every line of the helpers it calls in modelio),
    one after another: each time the directory holds no hidden leftovers, and the output is either
    absent or the whole model."""
    from customops.model import io as modelio

    first, cleanup = _work_lines(modelio)
    model = _pad_model(512)
    target = tmp_path / "out.onnx"
    lines = 0
    for stop in range(1, 10_000):
        seen = 0

        def tracer(frame, event, arg, stop=stop):
            nonlocal seen
            if frame.f_code.co_filename != modelio.__file__:
                return None
            own = frame.f_code.co_name == "save_model"
            if event == "line" and (not own or first <= frame.f_lineno < cleanup):
                seen += 1
                if seen == stop:
                    raise KeyboardInterrupt
            return tracer

        sys.settrace(tracer)
        try:
            modelio.save_model(model, target, external=external)
            finished = True
        except KeyboardInterrupt:
            finished = False
        finally:
            sys.settrace(None)
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".customops-")], stop
        if target.exists():
            assert modelio.load_model(target).graph.SerializeToString() == model.graph.SerializeToString()
        if finished:
            lines = stop
            break
    assert lines > 5  # the interruption met every line of the write


def _shared_bytes_dir(tmp_path: Path, copies: int) -> Path:
    """A model of ``copies`` initializers that all read the same 16 stored bytes, under two spellings of
    the one data file (its name, and a link to it inside the directory): fed to Concat, and a Pad."""
    (tmp_path / "w.bin").write_bytes(_data_bytes())
    (tmp_path / "alias.bin").symlink_to("w.bin")
    model = _pad_model()
    graph = model.graph
    names = [f"data{i}" for i in range(copies)]
    for i, name in enumerate(names):
        tensor = graph.initializer.add()
        tensor.CopyFrom(_external(_pad_model(), "w.bin" if i % 2 else "alias.bin").graph.initializer[0])
        tensor.name = name
    graph.node.insert(0, helper.make_node("Concat", names, ["data"], axis=0))
    del graph.initializer[0]  # the first 'data', now made by Concat
    (tmp_path / "in.onnx").write_bytes(model.SerializeToString())
    return tmp_path


def test_tensors_may_not_read_the_same_stored_bytes_over_and_over(tmp_path):
    """A few KB of model and 16 bytes of data asked for copies x 16 bytes of memory (a 1 MB model of
    such tensors and a 100 MB data file: terabytes): no more external data is read than the files hold."""
    work = _shared_bytes_dir(tmp_path, 3)
    with pytest.raises(
        customops.CustomOpsError, match="ask for 32 bytes of external data from files holding 16"
    ):
        customops.rewrite(str(work / "in.onnx"))
    proc = run_cli("compare", "in.onnx", cwd=work)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "tensors may not share stored bytes" in line


def test_tensors_in_parts_of_one_data_file_still_load(tmp_path):
    (tmp_path / "w.bin").write_bytes(_data_bytes(8))
    model = _external(_pad_model(), "w.bin", offset="16", length="16")
    other = model.graph.initializer.add()
    other.CopyFrom(_external(_pad_model(), "w.bin", offset="0", length="16").graph.initializer[0])
    other.name = "unused"
    (tmp_path / "in.onnx").write_bytes(model.SerializeToString())
    (y,) = customops.InferenceSession(customops.rewrite(str(tmp_path / "in.onnx"))).run(None, {})
    assert y.tolist() == [0, 4, 5, 6, 7, 0]
