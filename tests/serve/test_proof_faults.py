"""serve's proofs under vCenter faults (issue 30, items 3 and 5, and "the page and /metrics agree"):
serve's own CycleRunner over scans answered by snapshots.

* a proof's age is checked whenever it is shown: while its vCenter fails, a proof older than
  --proof-max-age leaves the page, /metrics and the alert's series, whatever the cycles do;
* a cycle whose QueryPerf failed keeps the proof (the state's, the history's) and says so;
* the fleet page, the VM's page and /metrics show the same class and the same deep check."""

from __future__ import annotations

import json
import random
import threading
import time
from types import MappingProxyType, SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest

from esxdiag.cli import build_parser
from esxdiag.config import load_thresholds
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.scanning.proofs import expire, unproven_rows
from esxdiag.serve.cycle import CycleRunner
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.pages import Pages
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import DeepCheck, State, VcenterState
from esxdiag.serve.store import Store

from .conftest import VNIC, snapshot, vm

VC = SimpleNamespace(host="vc1", port=443, url="https://vc1/sdk")
FAILED = object()  # a cycle whose vCenter cannot be reached


def check(age_s: float, verdict: str = "raise-ring1") -> DeepCheck:
    ended = time.time() - age_s
    return DeepCheck("vc1:443", "vm-1", "ring01", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ended)), ended,
                     (verdict,), "critical", None, None, (dict(VNIC, verdict=verdict),))


def perf_failed(v: dict) -> dict:
    return dict(v, perf=None, perf_error="QueryPerf: vc1:443: timeout (The read operation timed out)")


def serve_parts(tmp_path, monkeypatch, scans: list, kept: DeepCheck, extra: tuple = ()):
    """serve's cycle, state, /metrics and pages over these scans (a VM list, or FAILED), ``kept`` in its state."""
    answers = iter(scans)

    def api_pass(*a, **k):
        vms = next(answers)
        return snapshot("vc1:443", [], failed=True) if vms is FAILED else snapshot("vc1:443", vms)
    monkeypatch.setattr("esxdiag.collectors.fleet.scan", api_pass)
    args = build_parser().parse_args(["serve", "--vcenter", VC.url, "--user", "u", "--history",
                                      str(tmp_path / "h.sqlite"), *extra])
    store = Store(tmp_path / "h.sqlite", 3650)  # the snapshots are from 2026-11-23
    state = State([VcenterState("vc1:443", VC.url, 300, deep=MappingProxyType({"vm-1": kept}))])
    runner = CycleRunner(args, load_thresholds(), store, tmp_path / "data", threading.Lock())
    scheduler = Scheduler([VC], runner, state, 300, 0, runner.proof_max_age_s, rng=random.Random(1))
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    pages = Pages(state, store, load_thresholds(), 300, {})
    return scheduler, state, registry, pages


def shown(registry, pages) -> tuple[dict, dict, str]:
    """(the fleet page's row of ring01, the VM page's deep check, /metrics)."""
    row = next(r for r in json.loads(pages.fleet("json"))["vms"] if r["moid"] == "vm-1")
    return row, row["deep"], generate_latest(registry).decode()


def test_a_proof_expires_while_its_vcenter_fails(tmp_path, monkeypatch):
    scheduler, state, registry, pages = serve_parts(
        tmp_path, monkeypatch, [[vm("ring01", "vm-1", drops=300)], FAILED, FAILED], check(10),
        ("--proof-max-age", "45"))
    scheduler.run_one(VC, "vc1:443")
    row, deep, text = shown(registry, pages)
    assert row["class"] == "ring-exhaustion" and 'verdict="raise-ring1"' in text
    scheduler.run_one(VC, "vc1:443")  # the vCenter fails: the last good report is shown, stale
    assert shown(registry, pages)[0]["class"] == "ring-exhaustion"  # the proof is 10 s old: still valid
    state.clock = lambda: time.time() + 180  # 190 s old now, the vCenter still failing
    scheduler.run_one(VC, "vc1:443")
    entry = state.get("vc1:443")
    assert entry.stale and entry.last_ok is False
    row, deep, text = shown(registry, pages)
    assert row["class"] == "ring-suspect" and deep is None and not row["confirmed"]
    assert any("expired: older than 45 s (--proof-max-age)" in n for n in row["notes"])
    counts = json.loads(pages.fleet("json"))["counts"]
    assert (counts["ring-exhaustion"], counts["ring-suspect"]) == (0, 1)
    assert not any("kept while younger" in n for n in row["notes"])
    assert 'verdict="raise-ring1"' not in text and "esxdiag_deep_vm_last_check_timestamp_seconds{" not in text
    assert 'esxdiag_fleet_vm_class{class="ring-suspect"' in text
    assert 'esxdiag_vcenter_stale{vcenter="vc1:443"} 1.0' in text
    assert entry.deep == {}  # not kept for the next good cycle either


def test_a_fresh_check_is_not_shown_past_its_age_either(tmp_path, monkeypatch):
    """No cycle at all since: the age is checked at the scrape, not at the next cycle."""
    scheduler, state, registry, pages = serve_parts(
        tmp_path, monkeypatch, [[vm("ring01", "vm-1", drops=300)]], check(1), ("--proof-max-age", "45"))
    scheduler.run_one(VC, "vc1:443")
    assert 'verdict="raise-ring1"' in shown(registry, pages)[2]
    state.clock = lambda: time.time() + 60
    row, _, text = shown(registry, pages)
    assert row["class"] == "ring-suspect" and 'verdict="raise-ring1"' not in text


def test_a_cycle_whose_queryperf_failed_keeps_the_proof(tmp_path, monkeypatch):
    ring = vm("ring01", "vm-1", drops=300)
    scheduler, state, registry, pages = serve_parts(tmp_path, monkeypatch, [[ring], [perf_failed(ring)], [ring]],
                                                    check(600))
    for cycle in range(3):
        scheduler.run_one(VC, "vc1:443")
        row, deep, text = shown(registry, pages)
        assert (row["class"], row["confirmed"]) == ("ring-exhaustion", True), cycle
        assert 'verdict="raise-ring1"' in text and "vm-1" in state.get("vc1:443").deep
        assert not any("retired" in n for n in row["notes"])
    entry = state.get("vc1:443")
    assert entry.document.changes["changed"] == [] and entry.document.changes["recovered"] == []


def test_the_pages_and_metrics_agree_on_a_kept_cpu_limit_check(tmp_path, monkeypatch):
    """vCenter says cpu-and-drops (drops with a throttling limit); the deep check said cpu-limit-first."""
    limited = vm("ring01", "vm-1", drops=300, ready_ms=2400, limited=2300, limit=800)
    scheduler, state, registry, pages = serve_parts(tmp_path, monkeypatch, [[limited], [limited]],
                                                    check(600, "cpu-limit-first"))
    for _ in range(2):
        scheduler.run_one(VC, "vc1:443")
        row, deep, text = shown(registry, pages)
        assert (row["class"], row["confirmed"], deep["verdicts"]) == ("cpu-limit", True, ["cpu-limit-first"])
        assert 'esxdiag_fleet_vm_class{class="cpu-limit"' in text and 'verdict="cpu-limit-first"' in text
        assert 'esxdiag_fleet_vm_class{class="cpu-and-drops"' not in text
        page = pages.vm("vc1:443", "vm-1").decode()
        assert ">cpu-limit</span>" in page and "cpu-limit-first" in page
    assert state.get("vc1:443").document.as_dict()["changes"]["changed"] == []


def test_a_check_the_row_does_not_show_is_not_exported(tmp_path, monkeypatch):
    """A check that decided nothing (its host unreachable) is kept for --deep-recheck, not shown."""
    failed = DeepCheck("vc1:443", "vm-1", "ring01", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.time(),
                       (), None, None, "esx1: unreachable (Connection refused)", ())
    scheduler, state, registry, pages = serve_parts(tmp_path, monkeypatch, [[vm("ring01", "vm-1", drops=300)]],
                                                    failed)
    scheduler.run_one(VC, "vc1:443")
    row, deep, text = shown(registry, pages)
    assert row["class"] == "ring-suspect" and deep is None
    assert "esxdiag_deep_vm_last_check_timestamp_seconds{" not in text


def test_an_expired_check_leaves_the_report_a_fresh_build_without_it_would_give(fleet_document):
    """Ranks, counts and rollups follow: the same as a report built without the expired check."""
    vms = [vm("old", "vm-1", drops=300), vm("young", "vm-2", drops=600, host="esx2"), vm("calm", "vm-3")]
    now = time.time()
    old = DeepCheck("vc1:443", "vm-1", "old", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 500)), now - 500,
                    ("raise-ring1",), "critical", None, None, (VNIC,))
    young = DeepCheck("vc1:443", "vm-2", "young", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 10)),
                      now - 10, ("cpu-limit-first",), "critical", None, None, (dict(VNIC, verdict="cpu-limit-first"),))
    shown = fleet_document("vc1:443", vms, deep={"vm-1": old, "vm-2": young})
    unproven = unproven_rows(shown, snapshot_from_dict(snapshot("vc1:443", vms)), load_thresholds())
    assert set(unproven) == {("vc1:443", "vm-1"), ("vc1:443", "vm-2")}
    assert expire(shown, unproven, now, 600) is shown  # nothing older than 600 s
    after = expire(shown, unproven, now, 300)
    want = fleet_document("vc1:443", vms, deep={"vm-2": young})
    strip = lambda rows: [{k: v for k, v in r.items() if k != "notes"} for r in rows]  # noqa: E731
    after, want = after.as_dict(), want.as_dict()
    assert strip(after["vms"]) == strip(want["vms"])
    assert after["counts"] == want["counts"] and after["rollups"] == want["rollups"]
    shown_old = next(r for r in shown.as_dict()["vms"] if r["moid"] == "vm-1")
    assert shown_old["class"] == "ring-exhaustion"  # the shown document itself is never changed
