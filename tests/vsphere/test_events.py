"""collect_events against vcsim: a VM migrated with govc inside and outside the window, events of the
classes vcsim never emits itself (DRS, hot migration) posted the way vCenter would log them, and the
mapping of each class's hosts to destination and source.

What vcsim (govmomi v0.46.3) emits for `govc vm.migrate -host H VM`: one VmMigratedEvent (RelocateVM_Task),
posted before the VM is moved, so its ``host`` is the source like its ``sourceHost`` (a real vCenter
names the destination there), and its message reads "from SRC, DS to SRC, DS". No VmBeingHotMigratedEvent,
VmEmigratingEvent or DRS event: vcsim has no MigrateVM_Task and no DRS.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from pyVmomi import vim

from esxdiag.collectors.vsphere import collect_events, find_vm
from esxdiag.collectors.vsphere_events import MIGRATION_EVENTS, event_record
from esxdiag.parsers.vsphere import parse_events

VM = "DC0_C0_RP0_VM0"
HOSTS = ("DC0_C0_H0", "DC0_C0_H1")  # the two_hosts fixture's cluster


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _post(session, cls, ref, **hosts) -> None:
    """Log an event for the VM as vCenter would (the test's write to the simulator, not the collector's)."""
    args = {key: vim.event.HostEventArgument(name=host.name, host=host) for key, host in hosts.items()}
    event = cls(key=0, chainId=0, createdTime=_now(), userName="", template=False,
                vm=vim.event.VmEventArgument(name=ref.name, vm=ref.obj), **args)
    session.content.eventManager.PostEvent(eventToPost=event)


def _host(session, name: str):
    view = session.content.viewManager.CreateContainerView(session.content.rootFolder, [vim.HostSystem], True)
    try:
        return next(h for h in view.view if h.name == name)
    finally:
        view.DestroyView()


@pytest.mark.lab
def test_a_govc_migration_inside_the_window_is_captured_and_one_outside_is_not(two_hosts):
    lab, session = two_hosts
    ref = find_vm(session, VM)
    origin = ref.host_name
    other = next(h for h in HOSTS if h != origin)
    start = _now()  # vcsim stamps events with this machine's clock
    lab.govc("vm.migrate", "-host", other, VM)
    end = _now() + timedelta(seconds=1)
    assert find_vm(session, VM).host_name == other  # it did move
    before = session.request_count
    record = collect_events(session, ref, start, end)
    assert session.request_count - before == 1  # one QueryEvents
    assert (record["schema"], record["vm"]) == ("esxdiag.vsphere_events/1", VM)
    (event,) = record["events"]  # VM creation and power-on events are not migrations: filtered out
    assert event["type"] == "VmMigratedEvent"
    assert event["source_host"] == origin
    assert event["host"] in (origin, other)  # vcsim logs it before the move: its host is the source too
    assert start.replace(microsecond=0) <= _moment(event["time"]) <= end
    assert VM in event["message"] and origin in event["message"]
    (parsed,) = parse_events(json.dumps(record)).events
    assert (parsed.type, parsed.source_host) == ("VmMigratedEvent", origin)
    moved = _moment(event["time"])
    assert collect_events(session, ref, moved - timedelta(minutes=10), moved - timedelta(seconds=2))["events"] == []
    assert collect_events(session, ref, moved + timedelta(seconds=2), moved + timedelta(minutes=1))["events"] == []


@pytest.mark.lab
def test_drs_and_hot_migrations_name_the_destination_as_host_and_the_source(two_hosts):
    lab, session = two_hosts
    ref = find_vm(session, VM)
    source, destination = _host(session, ref.host_name), _host(session, next(h for h in HOSTS if h != ref.host_name))
    start = _now()  # vcsim stamps events with this machine's clock
    _post(session, vim.event.VmBeingHotMigratedEvent, ref, host=source, destHost=destination)  # logged on the source
    _post(session, vim.event.VmEmigratingEvent, ref, host=source)
    _post(session, vim.event.DrsVmMigratedEvent, ref, host=destination, sourceHost=source)  # on the destination
    _post(session, vim.event.VmPoweredOffEvent, ref, host=destination)  # not a migration
    record = collect_events(session, ref, start, _now() + timedelta(seconds=1))
    got = [(e["type"], e["host"], e["source_host"]) for e in record["events"]]
    assert got == [("VmBeingHotMigratedEvent", destination.name, source.name),  # oldest first
                   ("VmEmigratingEvent", None, source.name),
                   ("DrsVmMigratedEvent", destination.name, source.name)]
    assert "DRS migrated" in record["events"][2]["message"]
    assert [e.type for e in parse_events(json.dumps(record)).events] == [t for t, _, _ in got]


@pytest.mark.lab
def test_more_migrations_than_a_default_page_are_all_read(two_hosts):
    """vcsim answers 10 events when maxCount is unset; the filter asks for up to 1000."""
    lab, session = two_hosts
    ref = find_vm(session, VM)
    here, there = _host(session, HOSTS[0]), _host(session, HOSTS[1])
    start = _now()  # vcsim stamps events with this machine's clock
    for i in range(12):
        _post(session, vim.event.DrsVmMigratedEvent, ref, host=there if i % 2 else here,
              sourceHost=here if i % 2 else there)
    record = collect_events(session, ref, start, _now() + timedelta(seconds=1))
    assert [e["type"] for e in record["events"]] == ["DrsVmMigratedEvent"] * 12


def test_each_migration_class_maps_its_hosts():
    def arg(name):
        return vim.event.HostEventArgument(name=name)

    when = datetime(2026, 11, 21, 6, 1, 56, 250000, tzinfo=timezone.utc)
    for name in MIGRATION_EVENTS:
        cls = getattr(vim.event, name)
        event = cls(createdTime=when, host=arg("esx0"), fullFormattedMessage="")
        if hasattr(event, "destHost"):
            event.destHost = arg("esx1")
        if hasattr(event, "sourceHost"):
            event.host, event.sourceHost = arg("esx1"), arg("esx0")
        record = event_record(event)
        assert (record["type"], record["time"], record["message"]) == (name, "2026-11-21T06:01:56Z", None)
        want = (None, "esx0") if name == "VmEmigratingEvent" else ("esx1", "esx0")
        assert (record["host"], record["source_host"]) == want, name
