"""The terminal says it all: every warning finding with its remedy, and an unknown CPU limit shown
as unknown (never as "unlimited")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from esxdiag.config import load_thresholds
from esxdiag.engine import analyze
from esxdiag.reports.json_report import render_json
from esxdiag.reports.text import render_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.lab
def test_report_summary_shows_each_warning_with_its_remedy(esxdiag):
    run = esxdiag.run("report", "legacy-e1000")
    assert run.returncode == 0, run.explain()
    lines = run.stdout.splitlines()
    warning = next(i for i, line in enumerate(lines) if line.startswith("  WARNING: ") and "e1000" in line)
    assert lines[warning + 1].startswith("    remedy (vsphere): Change Network adapter 1 (00:50:56:a6:e1:00) from e1000 to vmxnet3"), run.stdout
    assert "Findings: 0 critical, 1 warning" in run.stdout


def test_cpu_limit_without_vcenter_inventory_is_unknown(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "iperf-test1-ring-exhaustion", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["captures"] = [c for c in manifest["captures"] if c["spec"] != "vsphere_vm"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    result = analyze(bundle, load_thresholds())
    text = render_text(result)
    assert "CPU limit unknown (no vCenter inventory)" in text and "unlimited" not in text
    (vm,) = json.loads(render_json(result))["vms"]
    assert vm["cpu_limit_mhz"] is None and vm["power_state"] is None
