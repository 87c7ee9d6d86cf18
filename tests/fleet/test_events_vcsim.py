"""Migrations and uplink loss through the whole scan, against vcsim (issue 22): `govc vm.migrate`
makes vcsim post one VmMigratedEvent, before it moves the VM, naming the old host as both source and
destination; the scan reads it with its one QueryEvents and the report marks the VM as moved, with
the destination from the inventory, and spends no deep check on it. Host counters come from the
fake PerformanceManager in vcsim's own shape (one "*" series: the host's aggregate, no vmnic), so the
uplink loss is said without a vmnic name. A query the server refuses costs the events only."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from pyVmomi import vim

from esxdiag.collectors.fleet import ScanOptions, scan
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report, deep_candidates
from esxdiag.fleet.snapshot import snapshot_from_dict

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

pytestmark = pytest.mark.lab
SAMPLES = 15
SOURCE, DEST = "DC0_C0_H0", "DC0_C0_H1"
VMS = {"mover": SOURCE, "stayer": SOURCE, "other": DEST}  # name -> host at creation; "mover" then moves to DEST


def vm_rows(drops: int) -> dict:
    """vcsim's answer shape: one "*" series per counter; 100 ms ready per 20 s (0.5 %), drops per sample."""
    return {("cpu.ready.summation", "*"): [100] * SAMPLES, ("cpu.costop.summation", "*"): [0] * SAMPLES,
            ("cpu.maxlimited.summation", "*"): [0] * SAMPLES, ("net.droppedRx.summation", "*"): [drops] * SAMPLES,
            ("net.packetsRx.summation", "*"): [100_000] * SAMPLES}


def host_rows(drops: int) -> dict:
    return {("cpu.usage.average", "*"): [2500] * SAMPLES, ("net.droppedRx.summation", "*"): [drops] * SAMPLES,
            ("net.errorsRx.summation", "*"): [0] * SAMPLES}


def host_of(lab, vm: str) -> str:
    return re.search(r"^\s*Host:\s*(\S+)", lab.govc("vm.info", vm), re.M).group(1)


@pytest.fixture(scope="module")
def moved_lab(lab_module, tmp_path_factory):
    """Three vmxnet3 VMs; "mover" moved from SOURCE to DEST inside the window (`govc vm.migrate`)."""
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("moves"), ("-cluster", "1", "-host", "2", "-vm", "0",
                                                                    "-standalone-host", "0"))
    try:
        for name, host in VMS.items():
            lab.govc("vm.create", "-on=true", "-host", host, "-c", "1", "-net", "DC0_DVPG0", "-net.adapter",
                     "vmxnet3", name)
        lab.govc("vm.migrate", "-host", f"DC0_C0/{DEST}", "mover")
        assert host_of(lab, "mover") == DEST
    except BaseException:
        lab.stop()
        raise
    yield lab
    lab.stop()


def test_a_vm_migrated_inside_the_window_is_marked_and_not_deep_checked(moved_lab, creds_for, fake_perf):
    fake_perf({"mover": vm_rows(100), "stayer": vm_rows(100), "other": vm_rows(0)})
    data = scan([creds_for(moved_lab)], ScanOptions(workers=1))
    status = data["vcenters"][0]
    assert (status["status"], status["migration_events"], status["migration_events_truncated"],
            status["migration_events_error"]) == ("scanned", 1, False, None)
    by_name = {v["name"]: v for v in data["vms"]}
    (event,) = by_name["mover"]["migrations"]
    assert (event["type"], event["host"], event["source_host"]) == ("VmMigratedEvent", SOURCE, SOURCE)  # vcsim's
    assert by_name["stayer"]["migrations"] == [] and by_name["other"]["migrations"] == []

    document = fs.ReportJson(build_report(snapshot_from_dict(data), load_thresholds()))
    rows = {r["name"]: r for r in document["vms"]}
    moved = rows["mover"]
    assert [(m["from"], m["to"], m["event"]) for m in moved["moves"]] == [(SOURCE, DEST, "VmMigratedEvent")]
    clock = event["time"][11:19]
    assert f"moved from {SOURCE} to {DEST} at {clock} UTC during the window: drops not compared across hosts" \
        in moved["reason"]
    assert moved["class"] == rows["stayer"]["class"] == "ring-suspect"  # 5 drops/s each, CPU healthy
    assert "moved" not in rows["stayer"]["reason"] and rows["stayer"]["moves"] == []
    assert [r.name for r in deep_candidates(document.report, 10)] == ["stayer"]  # the same drops, one host: checked


def test_uplink_loss_on_a_host_vcsim_gives_only_as_an_aggregate(moved_lab, creds_for, fake_perf):
    """SOURCE's uplink loses 6.2 frames/s: "stayer" (its own port drops) keeps ring-suspect, "mover" (no
    drops, on SOURCE for part of the window) is uplink-loss, "other" (on DEST all along) is healthy."""
    fake_perf({"mover": vm_rows(0), "stayer": vm_rows(100), "other": vm_rows(0), SOURCE: host_rows(124),
               DEST: host_rows(0)})
    data = scan([creds_for(moved_lab)], ScanOptions(workers=1))
    host = next(h for h in data["hosts"] if h["name"] == SOURCE)
    assert {(s["counter"], s["instance"]) for s in host["perf"]["series"]} == {
        ("cpu.usage.average", ""), ("net.droppedRx.summation", ""), ("net.errorsRx.summation", "")}
    document = fs.ReportJson(build_report(snapshot_from_dict(data), load_thresholds()))
    rows = {r["name"]: r for r in document["vms"]}
    words = (f"uplink loss on {SOURCE} (which vmnic is not known: vCenter gave the host's aggregate only): "
             "6.20 received frames/s lost (droppedRx 6.20/s, errorsRx 0.00/s)")
    mover, stayer, other = rows["mover"], rows["stayer"], rows["other"]
    assert (mover["class"], mover["severity"]) == ("uplink-loss", "info")  # no drops of its own: the host's loss, issue 29 item 10
    assert words in mover["reason"] and "not the ring" in mover["reason"] and "moved from" in mover["reason"]
    assert mover["uplink_loss"] == [{"host": SOURCE, "vmnic": None, "per_s": 6.2, "drops_per_s": 6.2,
                                     "errors_per_s": 0.0}]
    assert stayer["class"] == "ring-suspect" and f"its host also loses frames: {words}" in stayer["reason"]
    assert other["class"] == "healthy" and other["uplink_loss"] == []
    stated = [h for h in document["rollups"]["hosts"] if h["uplink"]]
    assert [h["name"] for h in stated] == [SOURCE] and words in stated[0]["uplink"]
    assert [r.name for r in deep_candidates(document.report, 10)] == ["stayer"]


class _Refusing:
    """An EventManager that refuses the query, as vCenter does for a user without System.View on the root."""

    def QueryEvents(self, spec):
        raise vim.fault.NoPermission(msg="Permission to perform this operation was denied.", privilegeId="System.View")


class _Content:
    def __init__(self, real):
        self._real, self.eventManager = real, _Refusing()

    def __getattr__(self, name):
        return getattr(self._real, name)


def test_events_that_cannot_be_read_cost_the_events_only(moved_lab, creds_for, monkeypatch):
    scan_module = importlib.import_module("esxdiag.collectors.fleet.scan")
    real_connect = scan_module.connect

    def connect(creds, timeout_s=30):
        session = real_connect(creds, timeout_s=timeout_s)
        session._content = _Content(session._content)
        return session
    monkeypatch.setattr(scan_module, "connect", connect)
    data = scan([creds_for(moved_lab)], ScanOptions(workers=1))
    status = data["vcenters"][0]
    assert status["status"] == "scanned" and status["migration_events"] is None
    assert "reading migration events: NoPermission" in status["migration_events_error"]
    assert {v["name"]: v["migrations"] for v in data["vms"]} == {"mover": None, "stayer": None, "other": None}
    assert all(v["perf"] is not None for v in data["vms"])  # the rest of the scan stands
