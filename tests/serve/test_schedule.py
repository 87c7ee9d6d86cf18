"""The serve scheduler: one cycle per interval per vCenter, never overlapping, late cycles skipped
and counted, jitter, failures keep the last good report (stale), shutdown within seconds. A fake
clock stands in for time; the cycle function answers from a script instead of a vCenter."""

from __future__ import annotations

import random
import threading
import time
from types import SimpleNamespace

from esxdiag.serve.cycle import Outcome
from esxdiag.serve.schedule import Clock, Scheduler, next_slot
from esxdiag.serve.state import DeepCheck, State, VcenterState

VC = SimpleNamespace(host="vc1", port=443, url="https://vc1/sdk")


def scheduler(cycle, clock, interval=300.0, jitter=0.0, deep_max_age=3600.0):
    state = State([VcenterState("vc1:443", VC.url, interval)])
    return Scheduler([VC], cycle, state, interval, jitter, deep_max_age, clock=clock, rng=random.Random(7)), state


def test_next_slot_skips_the_grid_points_a_late_cycle_ran_past():
    assert next_slot(0, 10, 300) == (300, 0)  # on time
    assert next_slot(0, 300, 300) == (600, 1)  # ended exactly at the next start: that one is late
    assert next_slot(0, 1000, 300) == (1200, 3)


def test_cycles_run_once_per_interval_and_a_late_one_is_skipped_and_counted(fake_clock, fleet_document, make_vm):
    durations = iter([10, 400, 10, 10])  # the second cycle runs past the third's start
    starts = []

    def cycle(creds, stop, entry):
        assert not entry.running or entry.cycles == len(starts)  # never two at once: the state says running
        starts.append(fake_clock.now)
        fake_clock.now += next(durations)
        return Outcome(fleet_document("vc1:443", [make_vm("a", "vm-1")]))

    sched, state = scheduler(cycle, fake_clock)
    sched.loop(VC, cycles=4)
    assert [s - starts[0] for s in starts] == [0, 300, 900, 1200]  # 600 skipped
    entry = state.get("vc1:443")
    assert (entry.cycles, entry.skipped, entry.running, entry.last_ok) == (4, 1, False, True)
    assert entry.requests == 4 * 12 and entry.last_seconds == 10


def test_jitter_spreads_starts_within_its_bound(fake_clock, fleet_document, make_vm):
    starts = []

    def cycle(creds, stop, entry):
        starts.append(fake_clock.now)
        return Outcome(fleet_document("vc1:443", [make_vm("a", "vm-1")]))

    sched, _ = scheduler(cycle, fake_clock, interval=300, jitter=30)
    first = fake_clock.now
    sched.loop(VC, cycles=6)
    offsets = [s - first - 300 * i for i, s in enumerate(starts)]
    assert all(0 <= o < 60 for o in offsets)  # the vCenter's offset + this cycle's, each below 30 s
    assert len({round(o, 3) for o in offsets}) == 6  # and not the same each time


def test_a_failed_cycle_keeps_the_last_good_report_marked_stale_and_counts_its_kind(fake_clock, fleet_document,
                                                                                     make_vm):
    script = iter([fleet_document("vc1:443", [make_vm("a", "vm-1"), make_vm("b", "vm-2")]),
                   fleet_document("vc1:443", [], failed=True),
                   "boom",
                   fleet_document("vc1:443", [make_vm("a", "vm-1")])])
    seen = []

    def cycle(creds, stop, entry):
        seen.append((entry.stale, entry.document is not None))
        step = next(script)
        if step == "boom":
            raise RuntimeError("a bug")
        return Outcome(step)

    sched, state = scheduler(cycle, fake_clock)
    sched.loop(VC, cycles=3)
    entry = state.get("vc1:443")
    assert entry.stale and [r["name"] for r in entry.document.as_dict()["vms"]] == ["a", "b"]
    assert dict(entry.failures) == {"unreachable": 1, "internal": 1}
    assert "internal error: RuntimeError: a bug" in entry.last_error
    sched.loop(VC, cycles=1)
    entry = state.get("vc1:443")
    assert not entry.stale and [r["name"] for r in entry.document.as_dict()["vms"]] == ["a"]  # b is gone: gone from here
    assert seen == [(False, False), (False, True), (True, True), (True, True)]


def test_deep_checks_follow_their_vm_and_age_out(fake_clock, fleet_document, make_vm):
    def check(moid, ts):
        return DeepCheck("vc1:443", moid, moid, "t", ts, ("raise-ring1",), "critical", None, None, ())

    docs = iter([([make_vm("a", "vm-1"), make_vm("b", "vm-2")], [check("vm-1", 0), check("vm-2", 0)]),
                 ([make_vm("a", "vm-1")], []),  # b gone: its check goes with it
                 ([make_vm("a", "vm-1")], [])])

    def cycle(creds, stop, entry):
        vms, checks = next(docs)
        checks = [DeepCheck(**{**c.__dict__, "checked_ts": fake_clock.wall()}) for c in checks]
        return Outcome(fleet_document("vc1:443", vms), checks)

    sched, state = scheduler(cycle, fake_clock, deep_max_age=400)
    sched.loop(VC, cycles=2)  # the second cycle 300 s after the check
    assert list(state.get("vc1:443").deep) == ["vm-1"]
    fake_clock.now += 200
    sched.loop(VC, cycles=1)  # 500 s after the check: older than 400 s, no longer shown
    assert dict(state.get("vc1:443").deep) == {}
    assert state.get("vc1:443").deep_checked == 2


def test_stop_ends_a_waiting_loop_at_once_and_abandons_a_cycle_past_the_grace(fleet_document, make_vm):
    release = threading.Event()
    calls = []

    def cycle(creds, stop, entry):
        calls.append(1)
        if len(calls) == 1:
            return Outcome(fleet_document("vc1:443", [make_vm("a", "vm-1")]))
        release.wait(10)  # a deep check that does not look at the stop event
        return Outcome(None)

    sched, state = scheduler(cycle, Clock(), interval=3600)
    sched.start()
    deadline = time.monotonic() + 5
    while state.get("vc1:443").cycles < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    assert sched.stop(grace_s=2) == []  # waiting for the next cycle (an hour away): ends at once
    assert time.monotonic() - started < 1

    sched, state = scheduler(cycle, Clock(), interval=3600)
    sched.start()
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    started = time.monotonic()
    assert sched.stop(grace_s=0.5) == ["cycle-vc1:443"]  # still running: abandoned after the grace
    assert time.monotonic() - started < 1.5
    release.set()
