"""compare --providers: the built-in side on the execution providers asked for (ours on CPU), an
unavailable one refused with the available ones named, and the provider that ran each node recorded."""

from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import pytest

from customops.comparison.providers import resolve
from customops.errors import CustomOpsError
from tests.helpers import run_cli, strict_json

MODEL = Path(__file__).resolve().parent.parent / "customops" / "examples" / "ort_deviation.onnx"


def test_aliases_and_ort_names_resolve_once_each():
    assert resolve(None) == resolve([]) == ["CPUExecutionProvider"]
    assert resolve(["CPU", "cpu", "CPUExecutionProvider"]) == ["CPUExecutionProvider"]


def test_an_unavailable_provider_exits_2_naming_the_available_ones(tmp_path):
    proc = run_cli(
        "compare", str(MODEL), "--providers", "NoSuchExecutionProvider", "--json", str(tmp_path / "r")
    )
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'NoSuchExecutionProvider' is not available" in lines[0]
    assert "CPUExecutionProvider" in lines[0] and "aliases: " in lines[0]
    assert not (tmp_path / "r").exists()
    with pytest.raises(CustomOpsError, match="is not available"):
        resolve(["cuda" if "CUDAExecutionProvider" not in ort.get_available_providers() else "nosuch"])


def test_the_report_records_the_providers_and_where_each_node_ran(tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("compare", str(MODEL), "--providers", "cpu", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    report = strict_json(out.read_text())
    assert report["sides"]["builtin"]["providers"] == ["CPUExecutionProvider"]
    assert report["sides"]["custom"]["providers"] == ["CPUExecutionProvider"]
    assert [n["provider"] for n in report["nodes"]] == [
        {"builtin": "CPUExecutionProvider", "custom": "CPUExecutionProvider"}
    ]
    assert "built-in side on" not in proc.stdout  # CPU alone: nothing to say


@pytest.mark.skipif(
    "AzureExecutionProvider" not in ort.get_available_providers(), reason="needs a second provider"
)
def test_nodes_a_provider_does_not_take_are_reported_where_they_ran(tmp_path):
    """The Azure provider runs no Resize: ORT places the node on CPU, and compare says so."""
    out = tmp_path / "r.json"
    proc = run_cli("compare", str(MODEL), "--providers", "AzureExecutionProvider,cpu", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    report = strict_json(out.read_text())
    assert report["sides"]["builtin"]["providers"] == ["AzureExecutionProvider", "CPUExecutionProvider"]
    node = report["nodes"][0]
    assert node["provider"]["builtin"] == "CPUExecutionProvider"
    assert "built-in side on: AzureExecutionProvider, CPUExecutionProvider" in proc.stdout
    assert f"{node['node']}: the built-in side ran it on CPUExecutionProvider" in proc.stdout
