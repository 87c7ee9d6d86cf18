"""Issue 30 item 3 through the real API pass: vcsim's inventory, paging and counter ids, QueryPerf
answered by the fake PerformanceManager (tests/fleet/conftest.py), which refuses the proven VM's
QueryPerf in the middle scan as a server does (a fault for the call). The scans are
esxdiag.scanning.run.run_scan, the one function `scan` and each serve cycle call, with the history."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from esxdiag.collectors.fleet import Filters, ScanOptions
from esxdiag.config import load_thresholds
from esxdiag.fleet.model import DeepEvidence
from esxdiag.fleet.analysis import Evidence, build_report
from esxdiag.fleet.history import changes_and_record, vm_history
from esxdiag.scanning.proofs import proofs_in_history
from esxdiag.scanning.run import Proofs, run_scan

from .test_classes import TABLE

pytestmark = pytest.mark.lab
PROD = Filters(folders=("/DC0/vm/prod",))


def scan(tmp_path: Path, creds, history: Path | None) -> dict:
    """One fleet scan of the prod folder, its proofs read from and its rows recorded in ``history``."""
    proofs = Proofs(proofs_in_history(history, [f"{creds.host}:{creds.port}"], time.time(), 7200), 7200) \
        if history else None
    record = (lambda report, *retired: changes_and_record(history, report.as_dict(), *retired)) if history else None
    scanned = run_scan([creds], ScanOptions(filters=PROD), load_thresholds(), lambda data: tmp_path / "snap.json",
                       proofs=proofs, record=record)
    return scanned.report.as_dict(), scanned.snapshot


def row(document: dict, name: str) -> dict:
    return next(r for r in document["vms"] if r["name"] == name)


def test_a_refused_queryperf_keeps_a_proof_through_the_real_api_pass(tmp_path, fleet_lab, creds_for, fake_perf):
    creds, history = creds_for(fleet_lab), tmp_path / "h.sqlite"
    fake_perf(TABLE)
    document, snapshot = scan(tmp_path, creds, None)
    ring = row(document, "ring-a")
    assert ring["class"] == "ring-suspect"
    checked_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    nic = next(v for v in snapshot.vms if v.name == "ring-a").vnics[0]
    deep = {"verdicts": ["raise-ring1"], "worst_severity": "critical", "report": None, "bundle": None, "error": None,
            "checked_at": checked_at, "vnics": [{"label": nic.label, "mac": nic.mac, "type": "vmxnet3",
                                                 "verdict": "raise-ring1", "causes": [], "ring1_full": 12.0}]}
    proven = build_report(snapshot, load_thresholds(), "snap.json",
                          evidence=Evidence(checks={(ring["vcenter"], ring["moid"]): DeepEvidence.of(deep)})).as_dict()
    proven["deep"] = {"hosts": [], "vms": [{"vcenter": ring["vcenter"], "name": "ring-a", "moid": ring["moid"],
                                            "host": ring["host"], **deep}]}
    changes_and_record(history, proven)  # as `scan --deep` records its check

    holder = fake_perf(TABLE, refused={"ring-a"})
    document, _ = scan(tmp_path, creds, history)
    assert any(call[2] == "vm" for call in holder["fake"].calls)
    ring = row(document, "ring-a")
    assert (ring["class"], ring["confirmed"], ring["deep"]["checked_at"]) == ("ring-exhaustion", True, checked_at)
    assert any("kept: this scan could not read the VM's receive-drop counters" in n and "refused by the fake" in n
               for n in ring["notes"]), ring["notes"]
    assert not any(c["name"] == "ring-a" for c in document["changes"]["recovered"] + document["changes"]["changed"])

    fake_perf(TABLE)
    document, _ = scan(tmp_path, creds, history)
    ring = row(document, "ring-a")
    assert (ring["class"], ring["deep"]["checked_at"]) == ("ring-exhaustion", checked_at)
    assert "not proven" not in ring["reason"]
    assert [r["proven_at"] for r in vm_history(history, "ring-a")] == [checked_at] * 3
