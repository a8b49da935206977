"""--providers takes ORT's names in any case and hands ORT its own spelling: ORT does not know
'cpuexecutionprovider' and would run the model on its fallback instead of the provider asked for."""

from __future__ import annotations

import onnxruntime as ort

from customops.comparison.providers import resolve
from tests.helpers import DEVIATION, run_cli, strict_json


def test_every_available_provider_resolves_to_ort_s_own_name_whatever_its_case():
    available = ort.get_available_providers()
    for name in available:
        assert resolve([name.lower()]) == resolve([name.upper()]) == resolve([f" {name} "]) == [name]
    assert resolve([n.lower() for n in reversed(available)]) == list(reversed(available))


def test_the_report_names_the_provider_as_ort_spells_it(tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("compare", DEVIATION, "--providers", "cpuexecutionprovider", "--json", str(out), "-q")
    assert proc.returncode == 1, proc.stderr
    report = strict_json(out.read_text())
    assert report["sides"]["builtin"]["providers"] == ["CPUExecutionProvider"]
    assert [n["provider"]["builtin"] for n in report["nodes"]] == ["CPUExecutionProvider"]
