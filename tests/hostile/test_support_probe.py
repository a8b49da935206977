"""``customops ops`` where files cannot be written: the support table's built-in column comes from
sessions ONNX Runtime builds of one-node probes (customops.support.builtin_way), which save the graph
they make to a temporary directory to tell how ORT runs each type. A command that writes nothing of its
own must still say which types ORT loads, and never fail with a traceback, when that save cannot happen
(a full or read-only /tmp, a file size limit: here RLIMIT_FSIZE, as ``ulimit -f``)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers import run_python


def _ops_limited(max_bytes: int) -> subprocess.CompletedProcess:
    code = (
        "import resource, runpy, sys\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({max_bytes}, {max_bytes}))\n"
        "sys.argv = ['customops', 'ops', '--json']\n"
        "runpy.run_module('customops', run_name='__main__')\n"
    )
    return run_python("-c", code)


@pytest.mark.parametrize(
    "max_bytes",
    [0, 100],
    ids=["no-temporary-directory", "probe-model-not-saved"],
)
def test_ops_says_what_ort_loads_even_where_the_probe_cannot_be_saved(max_bytes):
    """0 bytes: tempfile finds no usable directory and the command ended with a FileNotFoundError
    traceback (exit 1). 100 bytes: the directory is made but ORT cannot save the probe's graph, the
    session fails, and every row said ORT has no built-in kernel (exit 0, wrong table)."""
    proc = _ops_limited(max_bytes)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {(r["op"], r["version"], r["elem_type"]): r for r in json.loads(proc.stdout)}
    assert rows["Col2Im", 18, "float"]["builtin"] is True
    assert rows["Resize", 19, "float"]["builtin"] is True
    assert rows["Col2Im", 18, "double"]["builtin"] is False
    assert rows["Col2Im", 18, "float"]["builtin_way"] == "loads"  # how, it cannot tell here
