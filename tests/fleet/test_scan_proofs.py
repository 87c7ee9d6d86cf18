"""`esxdiag scan` keeps a proof from the history between runs (issue 23 point 1), without the lab:
the API pass answers snapshots, the earlier deep check is recorded the way a `scan --deep` records
it. tests/live/test_scan_proofs.py runs the same story with real deep checks in the lab."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

from esxdiag.cli import main
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.history import changes_and_record, vm_history
from esxdiag.fleet.snapshot import snapshot_from_dict

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


def record_proof(history: Path, age_s: float) -> str:
    """A scan whose deep check proved ring01's ring exhaustion ``age_s`` ago, recorded as scan records it."""
    checked_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - age_s))
    data = fs.snapshot([fs.vm("ring01", "vm-1", drops=300)])
    nic = data["vms"][0]["vnics"][0]
    deep = {"verdicts": ["raise-ring1"], "worst_severity": "critical", "report": None, "bundle": None, "error": None,
            "checked_at": checked_at, "vnics": [{"label": nic["label"], "mac": nic["mac"], "type": "vmxnet3",
                                                 "verdict": "raise-ring1", "causes": []}]}
    document = build_report(snapshot_from_dict(data), load_thresholds(), "snap.json", evidence=fs.evidence_of({("vc1:443", "vm-1"): deep})).as_dict()
    document["deep"] = {"hosts": [], "vms": [{"vcenter": "vc1:443", "name": "ring01", "moid": "vm-1", "host": "esx1",
                                              **deep}]}
    changes_and_record(history, document)
    return checked_at


def scan(tmp_path: Path, monkeypatch, drops: int, *extra: str) -> dict:
    monkeypatch.setattr("esxdiag.collectors.fleet.scan",
                        lambda *a, **k: fs.snapshot([fs.vm("ring01", "vm-1", drops=drops)]))
    out = tmp_path / "fleet.json"
    assert main(["scan", "--vcenter", "https://vc1/sdk", "--user", "u", "--history", str(tmp_path / "h.sqlite"),
                 "--format", "json", "-o", str(out), "--quiet", *extra]) == 0
    return json.loads(out.read_text())["vms"][0]


def test_a_proof_is_kept_across_scans_then_retired_for_good_when_the_drops_stop(tmp_path, monkeypatch):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    proven_at = record_proof(tmp_path / "h.sqlite", 600)
    row = scan(tmp_path, monkeypatch, 310)
    assert (row["class"], row["confirmed"]) == ("ring-exhaustion", True)
    assert row["deep"]["checked_at"] == proven_at
    assert f"ring exhaustion proven {proven_at} by the deep check, kept while younger than 7200 s (--proof-max-age) " \
           "and the drops go on" in row["notes"]
    row = scan(tmp_path, monkeypatch, 0)
    assert row["class"] != "ring-exhaustion" and row["deep"] is None
    assert f"ring exhaustion proven {proven_at} retired: vCenter counters show no receive drops over the noise " \
           "floor in this window" in row["notes"]
    row = scan(tmp_path, monkeypatch, 300)  # retired for good: a suspicion again until checked
    assert row["class"] == "ring-suspect" and not [n for n in row["notes"] if "proven" in n]
    past = vm_history(tmp_path / "h.sqlite", "ring01")[::-1]
    assert [(r["class"], r["proven_at"]) for r in past] == [
        ("ring-exhaustion", proven_at), ("ring-exhaustion", proven_at), (past[2]["class"], None), ("ring-suspect", None)]


def test_an_old_proof_or_no_history_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    monkeypatch.setenv("HOME", str(tmp_path))
    record_proof(tmp_path / "h.sqlite", 700)
    assert scan(tmp_path, monkeypatch, 300, "--proof-max-age", "600")["class"] == "ring-suspect"
    record_proof(tmp_path / "h.sqlite", 60)
    assert scan(tmp_path, monkeypatch, 300, "--no-history")["class"] == "ring-suspect"
    assert main(["scan", "--vcenter", "https://vc1/sdk", "--user", "u", "--proof-max-age", "-1"]) == 2
