"""A serve cycle that runs past its interval is shown while it runs and counted when it ends: each
call to vCenter has a deadline, but a cycle of many slow calls can still outlast the interval, and
its vCenter's figures then grow old. /metrics says stale with how long overdue, /healthz degraded
naming it; the scheduler counts the cycles that overran."""

from __future__ import annotations

import random
import time
from types import SimpleNamespace

from prometheus_client import CollectorRegistry

from esxdiag.serve.cycle import Outcome
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.pages import Pages
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import State, VcenterState

VC = SimpleNamespace(host="vc1", port=443, url="https://vc1/sdk")


def metric(state: State, name: str) -> float | None:
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    return registry.get_sample_value(name, {"vcenter": "vc1:443"})


def running_state(fleet_document, make_vm, since_s: float) -> State:
    now = time.time()
    entry = VcenterState("vc1:443", VC.url, 300, document=fleet_document("vc1:443", [make_vm("a", "vm-1")]),
                         good_ts=now - since_s - 10, last_ts=now - since_s - 10, last_ok=True, cycles=1,
                         running=True, running_since_ts=now - since_s)
    return State([entry])


def test_a_cycle_running_past_its_interval_is_stale_overdue_and_degrades_healthz(fleet_document, make_vm, tmp_path):
    state = running_state(fleet_document, make_vm, since_s=420)
    assert metric(state, "esxdiag_vcenter_stale") == 1
    assert 119 <= metric(state, "esxdiag_vcenter_cycle_overdue_seconds") <= 125
    health = Pages(state, None, {}, 300, {}).health()
    assert health["status"] == "degraded"
    assert any("vc1:443: the cycle running since" in d and "past the 300 s interval" in d for d in health["degraded"])
    (vcenter,) = health["vcenters"]
    assert vcenter["status"] == "overdue" and vcenter["stale"] and vcenter["overdue_s"] >= 119


def test_a_cycle_within_its_interval_is_not_overdue(fleet_document, make_vm):
    state = running_state(fleet_document, make_vm, since_s=60)
    assert metric(state, "esxdiag_vcenter_stale") == 0
    assert metric(state, "esxdiag_vcenter_cycle_overdue_seconds") == 0
    health = Pages(state, None, {}, 300, {}).health()
    assert health["status"] == "ok" and health["vcenters"][0]["status"] == "ok"


def test_a_cycle_that_took_longer_than_the_interval_is_counted(fake_clock, fleet_document, make_vm):
    durations = iter([10, 700, 10])

    def cycle(creds, stop, entry):
        assert entry.running and entry.running_since_ts == fake_clock.wall()
        fake_clock.now += next(durations)
        return Outcome(fleet_document("vc1:443", [make_vm("a", "vm-1")]))

    state = State([VcenterState("vc1:443", VC.url, 300.0)])
    Scheduler([VC], cycle, state, 300.0, 0.0, 3600.0, clock=fake_clock, rng=random.Random(7)).loop(VC, cycles=3)
    entry = state.get("vc1:443")
    assert (entry.overran, entry.skipped, entry.running, entry.running_since_ts) == (1, 2, False, None)
    assert metric(state, "esxdiag_vcenter_scans_overrun_total") == 1
