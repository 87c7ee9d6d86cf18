"""A watched scan's QueryPerf asks only for the samples after each entity's newest kept one
(collectors/fleet/perfkeep.py) and gives the records a read of the whole window gives.

The equality tests need the same samples on both sides, and vcsim's values are random and anchored
at each query's endTime: they put a fake PerformanceManager (AlignedPerfManager, below) behind a
real vcsim session, one that answers as the vSphere API documents a realtime query: the samples of
every 20 s boundary after startTime, up to and with endTime, the same values every time asked. The
re-read triggers (a new VM, a migrated one, a fault, a lost login, the maximum age) run against
vcsim itself, its QueryPerf answers and faults real."""

from __future__ import annotations

import hashlib
import importlib.util
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pyVmomi import vim

from esxdiag.collectors.fleet import ScanOptions, perf, scan
from esxdiag.collectors.fleet.perfkeep import KeptPart, Samples, joined
from esxdiag.collectors.fleet.watch import Watches
from esxdiag.collectors.vsphere_perf import perf_counters
from esxdiag.collectors.vsphere_session import connect

T0 = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)
KEY = (6, "")


def at(*seconds: int) -> tuple[datetime, ...]:
    return tuple(T0 + timedelta(seconds=s) for s in seconds)


def samples(times: tuple[datetime, ...], *series: tuple[tuple[int, str], tuple]) -> Samples:
    return Samples(times, dict(series))


# --- joined(): the pure part -------------------------------------------------------------------------
def test_the_new_samples_follow_the_kept_ones_and_the_window_drops_the_oldest():
    kept = samples(at(20, 40, 60, 80), (KEY, (1, 2, 3, 4)), ((6, "0"), (5, 6, 7, 8)))
    new = samples(at(80, 100, 120), (KEY, (4, 9, None)), ((6, "0"), (8, 10, 11)))  # 80: the sample at startTime
    got = joined(kept, new, T0 + timedelta(seconds=40), 20)
    assert got == samples(at(60, 80, 100, 120), (KEY, (3, 4, 9, None)), ((6, "0"), (7, 8, 10, 11)))


def test_no_new_sample_keeps_the_kept_ones_within_the_window():
    kept = samples(at(20, 40, 60), (KEY, (1, 2, 3)))
    assert joined(kept, Samples((), {}), T0 + timedelta(seconds=30), 20) == samples(at(40, 60), (KEY, (2, 3)))


@pytest.mark.parametrize("kept, new, why", [
    (samples(at(20, 40), (KEY, (1, 2))), samples(at(80, 100), (KEY, (3, 4))), "a gap: 60 missing"),
    (samples(at(20, 40), (KEY, (1, 2))), samples(at(60,), ((6, "0"), (3,))), "another instance"),
    (samples(at(20, 40), (KEY, (1, 2))), samples(at(60,), (KEY, (3,)), ((9, ""), (3,))), "a counter more"),
    (samples(at(20, 40), (KEY, (1, 2))), Samples(at(60,), {KEY: (None,)}, {KEY: ["x"]}), "a value no integer"),
    (samples(at(20, 40), (KEY, (1, 2))), samples(at(60,), (KEY, (3,))), "every kept sample before the window"),
])
def test_what_does_not_join_is_read_whole(kept, new, why):
    window_start = T0 + timedelta(seconds=40 if why == "every kept sample before the window" else 0)
    assert joined(kept, new, window_start, 20) is None, why


def test_a_vm_that_ran_elsewhere_has_nothing_kept_and_a_scan_keeps_only_what_it_read():
    part = KeptPart()
    part.put("vm-1", "host-1", samples(at(20,), (KEY, (1,))))
    part.put("vm-2", "host-1", samples(at(20,), (KEY, (1,))))
    assert part.get("vm-1", "host-2") is None and part.get("vm-1", "host-1") is not None
    part.next_scan()
    part.put("vm-1", "host-1", samples(at(40,), (KEY, (2,))))
    part.next_scan()  # vm-2 was not read by the last scan (off, gone, filtered out)
    assert part.get("vm-2", "host-1") is None and part.get("vm-1", "host-1") is not None
    part.put("vm-1", "host-1", Samples(at(60,), {KEY: (None,)}, {KEY: ["x"]}))
    assert part.get("vm-1", "host-1") is None  # unreadable values: read whole next time


# --- the same samples, kept and joined or read whole: equal records (vcsim + AlignedPerfManager) ------


class AlignedPerfManager:
    """QueryPerf as the API documents a realtime query: a sample at every 20 s boundary after
    startTime up to and with endTime (an hour back when none is given), each value a function of
    (entity, counter, instance, time): the same whenever asked. ``instances``: entity -> the
    instances of every counter (a real vCenter's expansion; ["*"]: vcsim's echo); ``holes``:
    entity -> (after, until) with no samples. Every spec asked is in ``asked``."""

    def __init__(self, instances: dict[str, list[str]], holes: dict[str, tuple[datetime, datetime]]):
        self.instances, self.holes = instances, holes
        self.asked: list[tuple[str, datetime | None, datetime]] = []
        self.calls: list[int] = []  # specs per QueryPerf

    def QueryPerf(self, querySpec):
        self.calls.append(len(querySpec))
        return [self._one(spec) for spec in querySpec]

    def _one(self, spec):
        moid = spec.entity._moId
        self.asked.append((moid, spec.startTime, spec.endTime))
        end = spec.endTime
        start = spec.startTime or end - timedelta(hours=1)
        tick = int(start.timestamp()) // 20 * 20 + 20
        times = []
        while tick <= end.timestamp():
            moment = datetime.fromtimestamp(tick, timezone.utc)
            hole = self.holes.get(moid)
            if hole is None or not hole[0] < moment <= hole[1]:
                times.append(moment)
            tick += 20
        info = ",".join(f"20,{t.strftime('%Y-%m-%dT%H:%M:%SZ')}" for t in times)
        values = [vim.PerformanceManager.MetricSeriesCSV(
            id=vim.PerformanceManager.MetricId(counterId=m.counterId, instance=instance),
            value=",".join(str(_value(moid, m.counterId, instance, t)) for t in times))
            for m in spec.metricId for instance in self.instances.get(moid, ["*"])]
        return vim.PerformanceManager.EntityMetricCSV(entity=spec.entity, sampleInfoCSV=info,
                                                      value=values if times else [])


def _value(moid: str, counter: int, instance: str, moment: datetime) -> int:
    return int(hashlib.sha256(f"{moid}/{counter}/{instance}/{moment.isoformat()}".encode()).hexdigest()[:6], 16)


class _Content:
    def __init__(self, real, perf_manager):
        self._real, self.perfManager = real, perf_manager

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.fixture(scope="module")
def lab(lab_module, tmp_path_factory):
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("perf-keep-vcsim"),
                                 ("-cluster", "1", "-host", "2", "-vm", "3", "-standalone-host", "0"), timeout_s=120)
    yield lab
    lab.stop()


@pytest.fixture
def aligned(lab, creds_for):
    """(session answering QueryPerf from an AlignedPerfManager, that manager, the VMs as perf.Entity)."""
    session = connect(creds_for(lab), timeout_s=60)
    perf_counters(session)  # the real counter ids, read before the swap
    view = session.content.viewManager.CreateContainerView(session.content.rootFolder, [vim.VirtualMachine], True)
    vms = sorted(view.view, key=lambda vm: vm._moId)
    entities = [perf.Entity(vm._moId, vm.name, vm, vm.runtime.host._moId) for vm in vms]
    view.DestroyView()
    manager = AlignedPerfManager({vms[0]._moId: ["", "0", "1"], vms[1]._moId: ["*"]},
                                 {vms[2]._moId: (T0 + timedelta(seconds=400), T0 + timedelta(seconds=520))})
    session._content = _Content(session._content, manager)
    yield session, manager, entities
    session.close()


def _query(session, entities, end, keep=None):
    return perf.query(session, entities, perf.VM_COUNTERS, end, 300, perf.BatchLimits(64), 2, keep=keep)


@pytest.mark.lab
def test_kept_and_joined_records_equal_a_whole_read_of_the_same_samples(aligned):
    session, manager, entities = aligned
    keep = KeptPart()
    # ends on and off the 20 s boundaries; a cycle with no new sample due; one a whole window later;
    # the third VM's samples stop at +400 s and come back after +520 s (a gap: read whole)
    ends = [T0 + timedelta(seconds=s) for s in (0, 60, 67, 73, 133, 433, 500, 560, 1200, 1265)]
    for end in ends:
        keep.next_scan()
        manager.asked.clear()
        got = _query(session, entities, end, keep)
        first_asked = next(start for moid, start, _ in manager.asked if moid == entities[0].key)
        assert got == _query(session, entities, end), end
        newest = None if end == ends[0] else T0 + timedelta(seconds=(previous - T0).total_seconds() // 20 * 20)
        if newest is not None and end - newest < timedelta(seconds=300):
            assert first_asked == newest, "only the samples after the newest kept one were asked for"
        else:
            assert first_asked == end - timedelta(seconds=300), "the whole window"
        previous = end


@pytest.mark.lab
def test_a_changed_instance_set_is_read_whole(aligned):
    session, manager, entities = aligned
    keep = KeptPart()
    _query(session, entities, T0, keep)
    manager.instances[entities[0].key] = ["", "0"]  # a vCPU fewer
    end = T0 + timedelta(seconds=60)
    manager.asked.clear()
    got = _query(session, entities, end, keep)
    assert got == _query(session, entities, end)
    assert (entities[0].key, end - timedelta(seconds=300), end) in manager.asked


@pytest.mark.lab
def test_the_users_metrics_cap_holds_for_the_new_samples_too(aligned):
    session, manager, entities = aligned
    keep = KeptPart()
    capped = perf.BatchLimits(10, user_metrics=10)  # 10 metrics, 5 counters: 2 VMs per QueryPerf
    perf.query(session, entities, perf.VM_COUNTERS, T0, 300, capped, 2, keep=keep)
    manager.calls.clear()
    got = perf.query(session, entities, perf.VM_COUNTERS, T0 + timedelta(seconds=60), 300, capped, 2, keep=keep)
    assert manager.calls and max(manager.calls) == 2 and sum(manager.calls) == len(entities)
    assert got == _query(session, entities, T0 + timedelta(seconds=60))


# --- the re-read triggers, against vcsim itself --------------------------------------------------------
def _spy(monkeypatch) -> list[tuple[datetime, datetime, tuple[str, ...]]]:
    """(startTime, endTime, moids) of every QueryPerf the scans send."""
    calls = []
    real = perf._answers

    def answers(session, batch, ids, start, end, interval):
        calls.append((start, end, tuple(e.key for e in batch)))
        return real(session, batch, ids, start, end, interval)
    monkeypatch.setattr(perf, "_answers", answers)
    return calls


def _whole(calls, window_s=300) -> set[str]:
    return {moid for start, end, moids in calls if end - start == timedelta(seconds=window_s) for moid in moids}


def _new_only(calls, window_s=300) -> set[str]:
    return {moid for start, end, moids in calls if end - start < timedelta(seconds=window_s) for moid in moids}


def _running_vms(data: dict) -> set[str]:
    return {vm["moid"] for vm in data["vms"] if vm["power_state"] == "poweredOn"}


def _measured(data: dict) -> set[str]:
    """Every entity a scan asks QueryPerf for: the running VMs and the hosts."""
    return _running_vms(data) | {h["moid"] for h in data["hosts"]}


@pytest.fixture
def make_watches():
    """Watches(...) for a test, each logged out after it."""
    made: list[Watches] = []
    yield lambda **kw: made.append(Watches(**kw)) or made[-1]
    for watches in made:
        watches.close()


def _watched_scan(creds, watches: Watches) -> dict:
    return scan([creds], ScanOptions(workers=1), watches=watches)


@pytest.mark.lab
def test_vcsim_a_watched_scan_reads_new_samples_and_a_new_or_moved_vm_whole(lab, creds_for, monkeypatch,
                                                                            make_watches):
    calls = _spy(monkeypatch)
    creds = creds_for(lab)
    watches = make_watches()
    try:
        first = _watched_scan(creds, watches)
        vms = _running_vms(first)
        hosts = {h["moid"] for h in first["hosts"]}
        assert _whole(calls) == vms | hosts and not _new_only(calls)
        calls.clear()
        second = _watched_scan(creds, watches)
        assert _new_only(calls) == vms | hosts and not _whole(calls)
        assert all(vm["perf"]["rollup"] == "realtime" and len(vm["perf"]["timestamps"]) >= 15
                   for vm in second["vms"] if vm["moid"] in vms)
        lab.govc("vm.create", "-on=true", "-host", "DC0_C0_H1", "-net", "VM Network", "perf-keep-new")
        moved = next(vm for vm in second["vms"] if vm["moid"] in vms)
        lab.govc("vm.migrate", "-host", "DC0_C0_H1" if moved["host"] == "DC0_C0_H0" else "DC0_C0_H0",
                 moved["name"])
        calls.clear()
        third = _watched_scan(creds, watches)
        new = next(vm["moid"] for vm in third["vms"] if vm["name"] == "perf-keep-new")
        now_hosts = {h["moid"] for h in third["hosts"]}  # a host with its first powered-on VM: read whole
        assert _whole(calls) == {new, moved["moid"]} | (now_hosts - hosts)
        assert _new_only(calls) == vms - {moved["moid"]} | (hosts & now_hosts)
    finally:
        lab.govc("vm.destroy", "perf-keep-new")


@pytest.mark.lab
def test_vcsim_a_lost_login_and_the_maximum_age_read_every_window_whole(lab, creds_for, monkeypatch, make_watches):
    calls = _spy(monkeypatch)
    now = [0.0]
    watches = make_watches(max_age_s=600, clock=lambda: now[0])
    creds = creds_for(lab)
    everything = _measured(_watched_scan(creds, watches))
    watches.get(creds).session.content.sessionManager.Logout()
    calls.clear()
    _watched_scan(creds, watches)
    assert _whole(calls) == everything and not _new_only(calls)
    now[0] += 600
    calls.clear()
    _watched_scan(creds, watches)
    assert watches.get(creds).how == "whole: older than 600 s"
    assert _whole(calls) == everything and not _new_only(calls)


@pytest.mark.lab
@pytest.mark.parametrize("action, params", [("fault", {"text": "SystemError"}), ("sample-time", {"text": "not-a-time"})])
def test_vcsim_a_refused_or_unreadable_answer_of_new_samples_reads_their_whole_window(proxy, monkeypatch, action,
                                                                                      params, make_watches):
    calls = _spy(monkeypatch)
    watches, creds = make_watches(), proxy.creds()
    vms = _running_vms(_watched_scan(creds, watches))
    proxy.add("QueryPerf", action, times=1, **params)  # the first QueryPerf: the VMs' new samples
    calls.clear()
    second = _watched_scan(creds, watches)
    assert second["vcenters"][0]["status"] == "scanned"
    assert _new_only(calls) >= vms
    failed = vms if action == "fault" else {calls[0][2][0]}  # a bad time costs its entity only
    assert _whole(calls) & vms == failed
    assert all(vm["perf"] is not None for vm in second["vms"] if vm["moid"] in vms)


@pytest.mark.lab
def test_vcsim_a_cut_answer_of_new_samples_fails_the_scan_and_the_next_reads_every_window_whole(proxy,
                                                                                                 monkeypatch,
                                                                                                 make_watches):
    calls = _spy(monkeypatch)
    watches, creds = make_watches(), proxy.creds()
    everything = _measured(_watched_scan(creds, watches))
    proxy.add("QueryPerf", "cut", times=1, size=40)
    failed = _watched_scan(creds, watches)
    assert failed["vcenters"][0]["error_kind"] == "unreachable"  # as a cut answer of any scan
    calls.clear()
    _watched_scan(creds, watches)
    assert _whole(calls) == everything and not _new_only(calls)
