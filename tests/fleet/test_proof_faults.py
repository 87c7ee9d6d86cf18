"""A deep check's proof under faults and races (issue 30, items 3, 4 and 10, and "every provable class
keeps its proof the same way"), without the lab: the API pass answers hand-built snapshots, the
earlier deep check is recorded the way `scan --deep` records it.

* only counters that were read retire a proof: a failed QueryPerf (or no drop series) keeps it, says so;
* a scan that started before another scan's deep check ended never loses that proof;
* every class a deep check proves (ring exhaustion, CPU or memory first, drops elsewhere or ruled out)
  is kept by a plain `scan` after `scan --deep` the same way, with no class change reported;
* a proof names the counters it rests on: the ring counters, or the port's drops alone."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from esxdiag.cli import main
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.deep import fold
from esxdiag.fleet.model import FleetReport
from esxdiag.fleet.history import changes_and_record, held_proofs_since, vm_history
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.serve.daemon import _restore_deep
from esxdiag.serve.metrics import VERDICT, vm_samples
from esxdiag.serve.state import VcenterState
from esxdiag.serve.store import Store

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUERYPERF_FAILED = "QueryPerf: vc1:443: timeout (The read operation timed out)"


def ring01(drops: int = 300, **kw) -> dict:
    return fs.vm("ring01", "vm-1", drops=drops, **kw)


def unread(vm: dict, why: str | None = QUERYPERF_FAILED) -> dict:
    """The VM as a scan whose QueryPerf failed for it gives it (why None: perf answered, no drop series)."""
    if why is None:
        vm["perf"]["series"] = [s for s in vm["perf"]["series"] if not s["counter"].startswith("net.")]
        return vm
    return dict(vm, perf=None, perf_error=why)


def record_check(history: Path, age_s: float, verdict: str = "raise-ring1", causes=(), vm: dict | None = None,
                 **figures) -> tuple[str, dict]:
    """A scan whose deep check of ring01 gave ``verdict`` ``age_s`` ago, recorded as `scan --deep` records
    it; (when it ended, ring01's row)."""
    checked_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - age_s))
    data = fs.snapshot([vm or ring01()])
    nic = data["vms"][0]["vnics"][0]
    vnic = {"label": nic["label"], "mac": nic["mac"], "type": "vmxnet3", "verdict": verdict, "causes": list(causes),
            **figures}
    deep = {"verdicts": [verdict], "worst_severity": "critical", "report": None, "bundle": None, "error": None,
            "checked_at": checked_at, "vnics": [vnic]}
    document = build_report(snapshot_from_dict(data), load_thresholds(), "snap.json", evidence=fs.evidence_of({("vc1:443", "vm-1"): deep})).as_dict()
    document["deep"] = {"hosts": [], "vms": [{"vcenter": "vc1:443", "name": "ring01", "moid": "vm-1", "host": "esx1",
                                              **deep}]}
    changes_and_record(history, document)
    return checked_at, document["vms"][0]


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    return tmp_path


def scan(tmp_path: Path, monkeypatch, vms, during=None) -> dict:
    """One `esxdiag scan` over a snapshot of ``vms``; ``during()`` runs inside its API pass (another
    scan finishing meanwhile). Its report."""
    def api_pass(*a, **k):
        if during is not None:
            during()
        return fs.snapshot(vms if isinstance(vms, list) else [vms])
    monkeypatch.setattr("esxdiag.collectors.fleet.scan", api_pass)
    out = tmp_path / "fleet.json"
    assert main(["scan", "--vcenter", "https://vc1/sdk", "--user", "u", "--history", str(tmp_path / "h.sqlite"),
                 "--format", "json", "-o", str(out), "--quiet"]) == 0
    return json.loads(out.read_text())


def row_of(document: dict, name: str = "ring01") -> dict:
    return next(r for r in document["vms"] if r["name"] == name)


@pytest.mark.parametrize("why", [QUERYPERF_FAILED, None], ids=["queryperf-failed", "no-drop-series"])
def test_a_scan_that_could_not_read_the_counters_keeps_the_proof_and_says_so(env, monkeypatch, why):
    proven_at, _ = record_check(env / "h.sqlite", 600)
    document = scan(env, monkeypatch, unread(ring01(), why))
    row = row_of(document)
    assert (row["class"], row["confirmed"], row["deep"]["checked_at"]) == ("ring-exhaustion", True, proven_at)
    assert not [n for n in row["notes"] if "retired" in n]
    assert any(f"ring exhaustion proven {proven_at} by the deep check, kept: this scan could not read the VM's "
               "receive-drop counters" in n and "only counters that were read retire it" in n for n in row["notes"])
    assert document["changes"]["recovered"] == [] and document["changes"]["changed"] == []
    row = row_of(scan(env, monkeypatch, ring01()))  # the next good scan: still proven, not "not proven"
    assert (row["class"], row["deep"]["checked_at"]) == ("ring-exhaustion", proven_at)
    assert "not proven" not in row["reason"]
    assert [r["proven_at"] for r in vm_history(env / "h.sqlite", "ring01")] == [proven_at] * 3


def test_a_failed_read_of_the_whole_vcenter_keeps_every_proof(env, monkeypatch):
    """QueryPerf failing for every VM of the vCenter (a proxy's error page): no VM's proof is retired."""
    proven_at, _ = record_check(env / "h.sqlite", 60)
    document = scan(env, monkeypatch, [unread(ring01()), unread(fs.vm("calm", "vm-2"))])
    assert row_of(document)["class"] == "ring-exhaustion"
    assert row_of(scan(env, monkeypatch, [ring01(), fs.vm("calm", "vm-2")]))["deep"]["checked_at"] == proven_at


def test_counters_read_with_no_drops_still_retire_the_proof(env, monkeypatch):
    """The control: a read that shows the drops gone retires it for good."""
    proven_at, _ = record_check(env / "h.sqlite", 60)
    row = row_of(scan(env, monkeypatch, ring01(drops=0)))
    assert f"ring exhaustion proven {proven_at} retired: vCenter counters show no receive drops over the noise " \
           "floor in this window" in row["notes"]
    assert row_of(scan(env, monkeypatch, ring01()))["class"] == "ring-suspect"


def test_a_scan_that_started_before_another_scans_deep_check_does_not_lose_its_proof(env, monkeypatch):
    """Scan A reads the history (no proof yet), scan B's deep check ends and is recorded while A
    collects, A records ring01 without the proof: the proof is B's record, and A never saw it."""
    proven = {}

    def other_scan_finishes():
        proven["at"], _ = record_check(env / "h.sqlite", 1)

    row = row_of(scan(env, monkeypatch, ring01(), during=other_scan_finishes))
    assert row["class"] == "ring-suspect"  # A did not see it
    row = row_of(scan(env, monkeypatch, ring01()))  # a later scan keeps it
    assert (row["class"], row["deep"]["checked_at"]) == ("ring-exhaustion", proven["at"])
    restored = _restore_deep(Store(env / "h.sqlite", 3650), ["vc1:443"], 7200)  # and a serve restart
    assert restored["vc1:443"]["vm-1"].checked_at == proven["at"]


def test_a_race_does_not_retire_a_newer_proof_either(env, monkeypatch):
    """Scan A holds an older proof and reads no drops while scan B records a newer check: A retires
    only what it held."""
    older, _ = record_check(env / "h.sqlite", 900)
    newer = {}

    def other_scan_finishes():
        newer["at"], _ = record_check(env / "h.sqlite", 1)

    row = row_of(scan(env, monkeypatch, ring01(drops=0), during=other_scan_finishes))
    assert any(f"proven {older} retired" in n for n in row["notes"])
    row = row_of(scan(env, monkeypatch, ring01()))
    assert (row["class"], row["deep"]["checked_at"]) == ("ring-exhaustion", newer["at"])


CPU_LIMITED = dict(ready=2400, limited=2300, limit=800)  # vCenter: drops with a throttling limit: cpu-and-drops
PROVABLE = [  # (verdict, causes, the VM as vCenter sees it, the class the deep check proves)
    ("raise-ring1", (), {}, "ring-exhaustion"),
    ("cpu-limit-first", (), CPU_LIMITED, "cpu-limit"),
    ("cpu-contention-first", (), dict(ready=2400), "cpu-contention"),
    ("memory-first", ("page-absent",), {}, "cpu-and-drops"),
    ("guest-saturated", (), {}, "cpu-and-drops"),
    ("drops-elsewhere", ("mtu",), {}, "drops-not-ring"),
    ("drops-elsewhere", ("uplink",), {}, "uplink-loss"),
    ("not-needed", (), {}, "healthy"),
]


@pytest.mark.parametrize("verdict, causes, seen, proven", PROVABLE, ids=[f"{p[0]}-{p[3]}" for p in PROVABLE])
def test_a_plain_scan_after_scan_deep_keeps_every_provable_class_the_same_way(env, monkeypatch, verdict, causes,
                                                                             seen, proven):
    checked_at, row = record_check(env / "h.sqlite", 300, verdict, causes, ring01(**seen))
    assert (row["class"], row["confirmed"]) == (proven, True)
    for _ in range(2):
        document = scan(env, monkeypatch, ring01(**seen))
        row = row_of(document)
        assert (row["class"], row["confirmed"], row["deep"]["checked_at"]) == (proven, True, checked_at)
        assert not any(document["changes"][k] for k in ("new", "recovered", "changed")), document["changes"]
    row = row_of(scan(env, monkeypatch, ring01(**dict(seen, drops=0))))  # the drops it answered are gone
    assert row["deep"] is None and any(f"proven {checked_at} retired" in n for n in row["notes"])


@dataclass
class Group:  # what esxdiag.collectors.fleet.deep.HostGroup gives fold()
    vcenter: str
    host: str
    vms: list
    bundle: Path | None
    error: str | None = None


def rxsummary_unreadable(tmp_path: Path) -> Path:
    """The lab's ring-exhaustion bundle with the host's vsish rxSummary captures failed."""
    bundle = tmp_path / "iperf-test1"
    shutil.copytree(EXAMPLES / "iperf-test1-ring-exhaustion", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for capture in manifest["captures"]:
        if capture["spec"] == "vsish_rxsummary":
            (bundle / capture["file"]).unlink()
            capture.update(file=None, rc=1, error_kind="nonzero-exit", error="vsish: rxSummary: not readable")
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def folded_row(tmp_path: Path, bundle: Path) -> tuple[FleetReport, dict]:
    snapshot = snapshot_from_dict(fs.snapshot([fs.vm("iperf-test1", drops=100)]))
    first = build_report(snapshot, load_thresholds(), "snap.json")

    def write_report(result, where: Path) -> Path:
        (where / "report.html").write_text("<html></html>")
        return where / "report.html"
    evidence = fold([Group("vc1:443", "esx0", list(first.rows), bundle)], load_thresholds(), tmp_path, write_report,
                    "2026-11-23T02:46:00Z")
    report = build_report(snapshot, load_thresholds(), "snap.json", evidence)
    return report, report.rows[0].as_dict()


def verdict_labels(document: FleetReport) -> list[dict]:
    entry = VcenterState("vc1:443", "https://vc1/sdk", 300, document=document)
    return [s.labels for s in vm_samples(entry)[VERDICT[0]]]


def test_a_proof_without_ring_counters_says_it_rests_on_the_port_drops(tmp_path):
    document, row = folded_row(tmp_path, rxsummary_unreadable(tmp_path))
    assert (row["class"], row["deep"]["verdicts"]) == ("ring-exhaustion", ["raise-ring1"])
    assert "ring counters" not in row["reason"].split("; vCenter:")[0].replace("ring counters were not read", "")
    assert "proven by host port drops alone (the vNIC port's droppedRx; its rxSummary ring counters were not " \
           "read)" in row["reason"]
    assert [(x["verdict"], x["counters"]) for x in verdict_labels(document)] == [("raise-ring1", "port-drops")]


def test_a_proof_with_ring_counters_names_them(tmp_path):
    bundle = tmp_path / "iperf-test1"
    shutil.copytree(EXAMPLES / "iperf-test1-ring-exhaustion", bundle)
    document, row = folded_row(tmp_path, bundle)
    assert "proven by host ring counters (vsish rxSummary: ring 1 full, ring 2 full, out of buffers)" in row["reason"]
    assert [(x["verdict"], x["counters"]) for x in verdict_labels(document)] == [("raise-ring1", "ring")]


def test_a_history_from_before_proofs_were_records_keeps_what_its_rows_held(tmp_path):
    """The first open of an older history fills retired_at: a check the VM's latest row rested on
    (proven_at) stands, any other is retired."""
    path = tmp_path / "old.sqlite"
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript("""
            CREATE TABLE scans (id INTEGER PRIMARY KEY, collected_at TEXT NOT NULL, scope TEXT NOT NULL,
                vcenters TEXT NOT NULL, counts TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'unknown',
                not_scanned TEXT NOT NULL DEFAULT '[]');
            CREATE TABLE vm_results (scan_id INTEGER NOT NULL, vcenter TEXT NOT NULL, moid TEXT NOT NULL,
                name TEXT NOT NULL, class TEXT NOT NULL, severity TEXT, score REAL, drops_per_s REAL,
                drops_per_1000 REAL, ready_worst_pct REAL, proven_at TEXT, PRIMARY KEY (scan_id, vcenter, moid));
            CREATE TABLE deep_checks (vcenter TEXT NOT NULL, moid TEXT NOT NULL, name TEXT NOT NULL,
                checked_at TEXT NOT NULL, verdicts TEXT NOT NULL, worst_severity TEXT, report TEXT, error TEXT,
                vnics TEXT NOT NULL, PRIMARY KEY (vcenter, moid, checked_at));
            INSERT INTO scans (id, collected_at, scope, vcenters, counts, status)
                VALUES (1, '2026-11-23T03:00:00Z', '{}', '["vc1:443"]', '{}', 'complete');
            INSERT INTO vm_results (scan_id, vcenter, moid, name, class, proven_at) VALUES
                (1, 'vc1:443', 'vm-1', 'held', 'ring-exhaustion', '2026-11-23T02:50:00Z'),
                (1, 'vc1:443', 'vm-2', 'retired', 'healthy', NULL);
            INSERT INTO deep_checks VALUES
                ('vc1:443', 'vm-1', 'held', '2026-11-23T02:50:00Z', '["raise-ring1"]', 'critical', NULL, NULL, '[]'),
                ('vc1:443', 'vm-2', 'retired', '2026-11-23T02:50:00Z', '["raise-ring1"]', 'critical', NULL, NULL, '[]');
        """)
    assert [row["name"] for row in held_proofs_since(path, "2026-11-23T00:00:00Z")] == ["held"]
