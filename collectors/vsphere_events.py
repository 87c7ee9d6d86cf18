"""Capture one VM's migrations in a window (``vsphere_events``) with one EventManager.QueryEvents.

Read-only: one QueryEvents whose filter names the VM itself (recursion "self"), the window's begin
and end time, the migration event classes only and at most MAX_EVENTS events; the record lists
them oldest first. Which host is which depends on the class: a completed migration (VmMigratedEvent,
DrsVmMigratedEvent, VmRelocatedEvent) names the destination as ``host`` and the source as
``sourceHost``; one being started (VmBeingHotMigratedEvent, VmBeingMigratedEvent,
VmBeingRelocatedEvent) names the source as ``host`` and the destination as ``destHost``;
VmEmigratingEvent names only the host the VM leaves. The record's ``host`` is always the
destination and ``source_host`` the source (null when the event does not say).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyVmomi import vim

from esxdiag.collectors.vsphere_inventory import VmRef
from esxdiag.collectors.vsphere_perf import iso_utc
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors

SCHEMA_EVENTS = "esxdiag.vsphere_events/1"
MIGRATION_EVENTS = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmEmigratingEvent", "VmBeingHotMigratedEvent",
                    "VmBeingMigratedEvent", "VmBeingRelocatedEvent", "VmRelocatedEvent")
MAX_EVENTS = 1000  # the filter's maxCount (1000 is also vcsim's largest; unset, vcsim returns 10)
_LEAVING = ("VmEmigratingEvent",)  # names the host the VM leaves, and no other


def collect_events(session: VsphereSession, vm_ref: VmRef, start: datetime, end: datetime) -> dict:
    """The ``vsphere_events`` capture over [start, end] (schema in esxdiag.collectors.vsphere)."""
    spec = vim.event.EventFilterSpec(
        entity=vim.event.EventFilterSpec.ByEntity(entity=vm_ref.obj, recursion="self"),
        time=vim.event.EventFilterSpec.ByTime(beginTime=start, endTime=end),
        eventTypeId=list(MIGRATION_EVENTS), maxCount=MAX_EVENTS)
    with api_errors(session, f"reading migration events of {vm_ref.name} ({vm_ref.moid})"):
        found = session.content.eventManager.QueryEvents(filter=spec) or []
    events = sorted((e for e in found if _class(e) in MIGRATION_EVENTS), key=lambda e: (e.createdTime, e.key))
    return {"schema": SCHEMA_EVENTS, "vm": vm_ref.name, "start": iso_utc(start), "end": iso_utc(end),
            "events": [event_record(e) for e in events[:MAX_EVENTS]]}


def event_record(event: Any) -> dict:
    """One event as {type, time, host (destination), source_host, message}."""
    named = _name(event.host)
    if hasattr(event, "destHost"):  # being started: the event is logged on the source
        host, source = _name(event.destHost), named
    elif hasattr(event, "sourceHost"):  # completed: the event is logged on the destination
        host, source = named, _name(event.sourceHost)
    elif _class(event) in _LEAVING:
        host, source = None, named
    else:
        host, source = named, None
    return {"type": _class(event), "time": iso_utc(event.createdTime), "host": host, "source_host": source,
            "message": event.fullFormattedMessage or None}


def _class(event: Any) -> str:
    return type(event).__name__.rsplit(".", 1)[-1]


def _name(argument: Any) -> str | None:
    return getattr(argument, "name", None) or None
