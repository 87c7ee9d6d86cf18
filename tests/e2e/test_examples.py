"""End to end on the bundled examples: each gives the seed case's verdict, and the canonical
JSON matches the report.json stored beside it (ESXDIAG_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from esxdiag.config import load_thresholds
from esxdiag.engine import analyze
from esxdiag.reports.json_report import render_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPECTED = {
    "seed-by-hand/iperf-test1": {"iperf-test1": "raise-ring1", "iperf-test2": "not-needed"},
    "seed-by-hand/iperf-test1-ring4096": {"iperf-test1": "raise-ring2", "iperf-test2": "insufficient-evidence"},
    "iperf-test1-ring-exhaustion": {"iperf-test1": "raise-ring1"},
    "iperf-test2-sender": {"iperf-test2": "not-needed"},
    "iperf-cpu-limited": {"iperf-cpu-limited": "cpu-limit-first"},
    "iperf-test1-ring4096": {"iperf-test1-ring4096": "raise-ring2"},
    "healthy-vm": {"app-healthy01": "not-needed"},
    "windows-single-queue": {"win2012r2-file01": "enable-rss"},
    "e1000-adapter": {"legacy-e1000": "not-needed"},  # its port dropped nothing; the finding advises vmxnet3
    "uplink-loss": {"iperf-uplink-loss": "drops-elsewhere"},
    "v7-jumbo-ring": {"iperf-v7-jumbo": "raise-ring1"},
}


def comparable(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["bundle"].pop("path")
    return doc


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_verdicts(example):
    result = analyze(EXAMPLES / example, load_thresholds())
    assert {vm.name: vm.vnics[0].ring_verdict for vm in result.vms} == EXPECTED[example]


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_json_is_golden(example):
    got = json.loads(render_json(analyze(EXAMPLES / example, load_thresholds())))
    golden = EXAMPLES / example / "report.json"
    if os.environ.get("ESXDIAG_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(comparable(got), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert comparable(got) == json.loads(golden.read_text(encoding="utf-8"))


def test_every_example_is_covered():
    bundles = {str(p.parent.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("manifest.json")}
    assert bundles == set(EXPECTED)


def test_lab_examples_name_vnics_as_vcenter_does():
    """The lab's vNICs carry vCenter's labels, so no report, golden or capture shows vcsim's
    device name ("ethernet--7")."""
    situations = EXAMPLES.parent / "tests" / "fixtures" / "situations"
    inventories = sorted(EXAMPLES.rglob("vsphere_vm@*.json")) + sorted(situations.rglob("vsphere_vm@*.json"))
    assert len(inventories) >= len(EXPECTED) - 2  # every lab example (the two seed-by-hand ones have none)
    for inventory in inventories:
        vnics = json.loads(inventory.read_text())["vnics"]
        labels = [vnic["label"] for vnic in vnics]
        assert labels and all(re.fullmatch(r"PCI device \d+( \(.+\))?" if vnic["type"] == "passthrough"  # DirectPath
                                           else r"Network adapter \d+", vnic["label"]) for vnic in vnics), \
            (inventory, labels)
    quoting = [p for root in (EXAMPLES, situations) for p in root.rglob("*") if p.is_file()
               and "ethernet--" in p.read_text(errors="replace")]
    assert quoting == []


def test_sender_retransmits_are_flagged():
    vm = analyze(EXAMPLES / "iperf-test2-sender", load_thresholds()).vms[0]
    assert "guest-retransmits" in {f.rule for f in vm.findings}


def test_seed_numbers_survive_to_the_report():
    doc = json.loads(render_json(analyze(EXAMPLES / "seed-by-hand/iperf-test1", load_thresholds())))
    nic = doc["vms"][0]["vnics"][0]
    assert nic["port"] == 33554464 and nic["mac"] == "00:50:56:a6:55:f4"
    assert nic["metrics"]["ring1_full"]["total"] == 7086
    assert nic["metrics"]["host_out_of_buffers"]["total"] == 10370
    assert nic["metrics"]["ring1_size"] == 256 and nic["metrics"]["rx_queues"] == 2
    limited = json.loads(render_json(analyze(EXAMPLES / "iperf-cpu-limited", load_thresholds())))["vms"][0]
    assert abs(limited["cpu"]["ready_pct_avg"] - 69.6) < 0.5
    assert abs(limited["cpu"]["max_limited_pct_avg"] - 69.52) < 0.5
    assert limited["cpu_limit_mhz"] == 800


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "esxdiag", *args], capture_output=True, text=True, timeout=120)


def test_cli_json_and_fail_on(tmp_path):
    ok = run_cli("analyze", str(EXAMPLES / "healthy-vm"), "--format", "json", "--fail-on", "warning")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["schema_version"] == 1
    bad = run_cli("analyze", str(EXAMPLES / "iperf-test1-ring-exhaustion"), "--format", "text",
                  "--fail-on", "critical", "-o", str(tmp_path / "summary.txt"))
    assert bad.returncode == 1, bad.stderr
    assert "raise" in (tmp_path / "summary.txt").read_text().lower()


def test_cli_set_overrides_a_threshold():
    out = run_cli("analyze", str(EXAMPLES / "iperf-test1-ring-exhaustion"), "--format", "json",
                  "--set", "ring.full_events=100000", "--set", "ring.drops=100000")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["vms"][0]["vnics"][0]["ring_verdict"] == "past-exhaustion-only"


def test_windows_rss_off_means_one_queue_even_if_more_are_configured(tmp_path):
    import shutil

    bundle = tmp_path / "win"
    shutil.copytree(EXAMPLES / "windows-single-queue", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["captures"] = [c for c in manifest["captures"] if not c["spec"].startswith("vsish_rxqueue")]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    rss = next(bundle.rglob("win_rss.txt"))
    rss.write_bytes(rss.read_bytes().replace(b"NumberOfReceiveQueues : 1", b"NumberOfReceiveQueues : 4"))
    nic = analyze(bundle, load_thresholds()).vms[0].vnics[0]
    assert (nic.ring_verdict, nic.metrics["rx_queues"]) == ("enable-rss", 1)
