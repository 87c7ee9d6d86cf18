"""Live collection end to end: `esxdiag rings/report --vm` against vcsim + the lab sshd, run as a
user runs it (subprocess, explicit environment), for every seed case of tests/lab/scenarios.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


pytestmark = pytest.mark.lab

SCENARIOS = json.loads((Path(__file__).resolve().parents[1] / "lab" / "scenarios.json").read_text())
EXPECTED = {vm["name"]: vm["expected_verdict"] for vm in SCENARIOS["vms"]}


@pytest.fixture(scope="module")
def rings_runs(make_esxdiag, sshd, tmp_path_factory):
    """`esxdiag rings` for every scenario VM, all at once, once for the module."""
    sshd.clear_faults()
    runner = make_esxdiag(tmp_path_factory.mktemp("rings-home"), tmp_path_factory.mktemp("rings"))
    runs = runner.run_many([("rings", name, ()) for name in EXPECTED])
    return dict(zip(EXPECTED, runs))


@pytest.mark.parametrize("vm", list(EXPECTED))
def test_rings_gives_the_scenario_verdict(rings_runs, vm):
    run = rings_runs[vm]
    assert run.returncode == 0, run.explain()
    assert run.stdout.startswith(f"{vm}: "), run.explain()
    verdicts = [line.split("[")[-1].rstrip("]") for line in run.stdout.splitlines() if line.strip().startswith("-> ")]
    assert verdicts == [EXPECTED[vm]], run.explain()
    assert f"bundle: {run.bundle}" in run.stdout
    bundle = run.bundle_loaded()
    failed = [(c.spec, c.error_kind, c.error) for c in bundle.captures if not c.ok]
    assert failed == [], failed


def test_report_html_with_summary_and_complete_bundle(esxdiag):
    report = esxdiag.workdir / "out" / "report.html"
    report.parent.mkdir()
    run = esxdiag.run("report", "iperf-test1", "-o", str(report), "--format", "html")
    assert run.returncode == 0, run.explain()
    html = report.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert "<h2>VM iperf-test1" in html and 'class="verdict verdict-act">Raise RX ring 1' in html
    # 25 + vsphere_events + vsphere_host_perf + esxcli vm list, vm port list, vmnic0 at both ends
    assert "31 of 31 expected inputs were read." in html
    assert f"report: {report}" in run.stdout
    assert "VM iperf-test1  [CRITICAL]" in run.stdout and "RAISE RX RING 1" in run.stdout
    assert "Findings: 1 critical" in run.stdout
    bundle = run.bundle_loaded()
    for spec, sample, kind in [("vsphere_vm", None, "vcenter"), ("net_stats_list", None, "esxi"),
                               ("vsish_rxsummary", 0, "esxi"), ("vsish_rxsummary", 1, "esxi"),
                               ("esxtop_batch", None, "esxi"), ("ethtool_stats", 0, "linux"),
                               ("ethtool_stats", 1, "linux"), ("esxcli_vm_list", None, "esxi"),
                               ("esxcli_vm_ports", None, "esxi"), ("esxcli_nic_stats", 0, "esxi"),
                               ("esxcli_nic_stats", 1, "esxi")]:
        found = run.captures(spec, sample, kind)
        assert len(found) == 1, (spec, sample, found)
        capture = found[0]
        assert capture.error_kind is None and capture.sample == sample, capture
        assert capture.path.is_file() and capture.path.stat().st_size > 0, capture
    assert Path(bundle.root, "manifest.json").is_file()
    vm_record = json.loads(run.captures("vsphere_vm")[0].path.read_text())
    assert vm_record["name"] == "iperf-test1" and vm_record["guest"]["ip_address"] == "127.0.0.11"


def test_report_json_and_fail_on(esxdiag):
    sick, healthy = esxdiag.run_many([
        ("report", "iperf-test1", ("--format", "json", "--fail-on", "critical")),
        ("report", "app-healthy01", ("--format", "json", "--fail-on", "critical")),
    ])
    assert sick.returncode == 1, sick.explain()
    assert healthy.returncode == 0, healthy.explain()
    for run, verdict in ((sick, "raise-ring1"), (healthy, "not-needed")):
        document = json.loads(run.stdout[:run.stdout.rindex("\nbundle: ") + 1])
        (vm,) = document["vms"]
        assert [nic["ring_verdict"] for nic in vm["vnics"]] == [verdict], run.explain()


@pytest.fixture(scope="module")
def by_id_runs(make_esxdiag, vcsim, sshd, tmp_path_factory):
    """`esxdiag rings` for iperf-test1 named by MOID and by instance UUID (govc looks them up)."""
    moid = vcsim.govc("ls", "-i", "/DC0/vm/iperf-test1").strip().split(":")[-1]
    uuid = vcsim.govc("object.collect", "-s", "/DC0/vm/iperf-test1", "config.instanceUuid").strip()
    assert moid.startswith("vm-") and len(uuid) == 36
    sshd.clear_faults()
    runner = make_esxdiag(tmp_path_factory.mktemp("by-id-home"), tmp_path_factory.mktemp("by-id"))
    return {(moid, uuid): runner.run_many([("rings", moid, ()), ("rings", uuid, ())])}


def test_vm_by_moid_and_by_instance_uuid_is_collected(by_id_runs):
    ((moid, uuid), runs), = by_id_runs.items()
    for run in runs:
        assert run.returncode == 0, run.explain()
        assert "\niperf-test1: 2 vCPUs" in "\n" + run.stdout and "[raise-ring1]" in run.stdout, run.explain()
        record = json.loads(run.captures("vsphere_vm")[0].path.read_text())
        assert (record["name"], record["moid"], record["instance_uuid"]) == ("iperf-test1", moid, uuid)


def test_vm_by_moid_and_by_instance_uuid_reports_only_that_vm(by_id_runs):
    ((moid, uuid), runs), = by_id_runs.items()
    for run in runs:
        assert run.stdout.startswith("iperf-test1: "), run.explain()
        assert run.bundle_loaded().subject_vms == ["iperf-test1"]
