"""A proven ring exhaustion is kept between deep checks: a cycle that does not check the VM again
keeps its class ring-exhaustion (page, /metrics, history agree) while the proof is younger than
--proof-max-age and the vCenter counters still show its drops; a cycle whose counters show the
drops gone retires the proof with a note; an expired proof leaves the suspicion."""

from __future__ import annotations

import random
import threading
import time
from types import MappingProxyType, SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest

from esxdiag.cli import build_parser
from esxdiag.config import load_thresholds
from esxdiag.serve.cycle import CycleRunner
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import DeepCheck, State, VcenterState
from esxdiag.serve.store import Store

from .conftest import VNIC, snapshot, vm

VC = SimpleNamespace(host="vc1", port=443, url="https://vc1/sdk")


def proven(age_s: float) -> DeepCheck:
    ended = time.time() - age_s
    return DeepCheck("vc1:443", "vm-1", "ring01", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ended)), ended,
                     ("raise-ring1",), "critical", None, None, (VNIC,))


def watch(tmp_path, monkeypatch, drops: list[int], check: DeepCheck, extra: list[str] = ()):
    """Cycles of serve's own CycleRunner over scans of ring01 with these drops, its earlier proof kept."""
    scans = iter(drops)
    monkeypatch.setattr("esxdiag.collectors.fleet.scan", lambda *a, **k: snapshot(
        "vc1:443", [vm("ring01", "vm-1", drops=next(scans))]))
    args = build_parser().parse_args(["serve", "--vcenter", VC.url, "--user", "u", "--history",
                                      str(tmp_path / "h.sqlite"), *extra])
    store = Store(tmp_path / "h.sqlite", 3650)  # the snapshots are from 2026-11-23
    state = State([VcenterState("vc1:443", VC.url, 300, deep=MappingProxyType({"vm-1": check}))])
    runner = CycleRunner(args, load_thresholds(), store, tmp_path / "data", threading.Lock())
    scheduler = Scheduler([VC], runner, state, 300, 0, runner.proof_max_age_s, rng=random.Random(1))
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    return scheduler, state, store, registry


def row(state) -> dict:
    return state.get("vc1:443").document.as_dict()["vms"][0]


def test_a_proof_is_kept_while_valid_and_retired_when_the_drops_are_gone(tmp_path, monkeypatch):
    scheduler, state, store, registry = watch(tmp_path, monkeypatch, [300, 310, 0], proven(600))
    for _ in range(2):
        scheduler.run_one(VC, "vc1:443")
        assert row(state)["class"] == "ring-exhaustion" and row(state)["confirmed"]
        assert any("ring exhaustion proven" in n and "kept while younger than 7200 s" in n for n in row(state)["notes"])
        text = generate_latest(registry).decode()
        assert 'esxdiag_fleet_vm_class{class="ring-exhaustion"' in text
        assert 'esxdiag_fleet_vm_class{class="ring-suspect"' not in text
        assert "esxdiag_deep_vm_last_check_timestamp_seconds{" in text and 'verdict="raise-ring1"' in text
    assert [r["class"] for r in store.vm_past("vc1:443", "vm-1", 10)] == ["ring-exhaustion"] * 2
    assert state.get("vc1:443").document.as_dict()["changes"]["changed"] == []  # no flip back to ring-suspect
    scheduler.run_one(VC, "vc1:443")  # the vCenter counters show no drops now
    assert row(state)["class"] != "ring-exhaustion"
    assert any("retired: vCenter counters show no receive drops" in n for n in row(state)["notes"])
    assert state.get("vc1:443").deep == {} and 'verdict="raise-ring1"' not in generate_latest(registry).decode()


def test_an_expired_proof_leaves_the_suspicion(tmp_path, monkeypatch):
    scheduler, state, _, _ = watch(tmp_path, monkeypatch, [300], proven(700), ["--proof-max-age", "600"])
    scheduler.run_one(VC, "vc1:443")
    assert row(state)["class"] == "ring-suspect" and not any("proven" in n for n in row(state)["notes"])
