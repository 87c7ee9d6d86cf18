"""The VMs that moved between hosts inside the scan window, in one request per vCenter.

One ``EventManager.QueryEvents`` (read-only) over the whole inventory (the root folder, every
descendant), filtered on the server to the window and to the migration event types
(esxdiag.vocabulary.MIGRATION_EVENTS), at most MAX_EVENTS events: a longer answer is cut by the
server to the newest MAX_EVENTS, and the vCenter's entry says the list may be incomplete. No
collector is created, so none is left behind. Each event becomes a ``vsphere_events`` event record
(docs/bundle-format.md): ``host`` the destination, ``source_host`` the source, as vCenter named them.

Which host is which, per event type: VmMigratedEvent, DrsVmMigratedEvent and VmRelocatedEvent carry
the destination as ``host`` and the source as ``sourceHost``; VmBeingHotMigratedEvent the source as
``host`` and the destination as ``destHost``; VmEmigratingEvent only the source, as ``host``. vcsim
posts its VmMigratedEvent before moving the VM, so there both hosts are the source (the fleet rules
take the destination from the inventory then: esxdiag.fleet.moves).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pyVmomi import vim

from esxdiag.collectors.vsphere_perf import iso_utc
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors
from esxdiag.vocabulary import MIGRATION_EVENTS

MAX_EVENTS = 1000  # the largest page vCenter's event collectors serve (vcsim refuses more): one answer's bound
MAX_MESSAGE = 300  # characters of fullFormattedMessage kept per event


def _name(argument: Any) -> str | None:
    name = getattr(argument, "name", None) if argument is not None else None
    return name if isinstance(name, str) and name else None


def event_record(event: Any) -> tuple[str | None, dict]:
    """(the VM's MOID, the event as a vsphere_events event record)."""
    kind = type(event).__name__.rsplit(".", 1)[-1]
    host, source = _name(getattr(event, "host", None)), None
    if kind == "VmBeingHotMigratedEvent":
        host, source = _name(getattr(event, "destHost", None)), host
    elif kind == "VmEmigratingEvent":
        host, source = None, host
    else:
        source = _name(getattr(event, "sourceHost", None))
    vm = getattr(getattr(event, "vm", None), "vm", None)
    message = getattr(event, "fullFormattedMessage", None)
    return (vm._moId if vm is not None else None,
            {"type": kind, "time": iso_utc(event.createdTime), "host": host, "source_host": source,
             "message": message[:MAX_MESSAGE] if isinstance(message, str) else None})


def read_migrations(session: VsphereSession, end: datetime, window_s: float,
                    timeout_s: float) -> tuple[dict[str, list[dict]], int, bool]:
    """(VM MOID -> its migration events in the window, oldest first; events read; whether the answer
    was cut at MAX_EVENTS). Raises CollectionError like any request."""
    spec = vim.event.EventFilterSpec(
        entity=vim.event.EventFilterSpec.ByEntity(entity=session.content.rootFolder, recursion="all"),
        time=vim.event.EventFilterSpec.ByTime(beginTime=end - timedelta(seconds=window_s), endTime=end),
        eventTypeId=list(MIGRATION_EVENTS), maxCount=MAX_EVENTS)
    with session.within(timeout_s, "reading migration events"), api_errors(session, "reading migration events"):
        events = session.content.eventManager.QueryEvents(spec) or []
    by_vm: dict[str, list[dict]] = {}
    for event in sorted(events, key=lambda e: (e.createdTime, e.key)):
        moid, record = event_record(event)
        if moid is not None:
            by_vm.setdefault(moid, []).append(record)
    return by_vm, len(events), len(events) >= MAX_EVENTS
