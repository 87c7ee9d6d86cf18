"""A VM that changed host inside the window (vMotion, DRS; shared/domain.md section 10): the old
port's counters end there and the new port's are a different series. Known from vCenter's events,
or from the bundle itself: the vNIC's MAC on ports of two hosts, each read in part of the window.
Readings on one port are never subtracted from readings on another."""

from __future__ import annotations

from esxdiag.join.facts import Move
from esxdiag.parsers.netstats import norm_mac

MIGRATION_EVENTS = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmEmigratingEvent", "VmBeingHotMigratedEvent",
                    "VmBeingMigratedEvent", "VmRelocatedEvent", "VmBeingRelocatedEvent")
# the events that mark the move done (the others announce it): one move is named once
DONE = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmRelocatedEvent")


def event_moves(joiner, vm: str) -> tuple[Move, ...]:
    """The VM's migrations vCenter reported for the window."""
    moves: list[Move] = []
    for cap in joiner.bundle.find("vsphere_events"):
        reading = joiner.r.read(cap)
        if reading is None or reading.record.vm not in (vm, None):
            continue
        events = [e for e in reading.record.events if e.type in MIGRATION_EVENTS]
        done = [e for e in events if e.type in DONE] or events[-1:]
        moves += [Move(e.time, e.source_host, e.host, e.type, reading.file) for e in done
                  if e.source_host != e.host or e.source_host is None]
    return tuple(sorted(moves, key=lambda m: m.time or ""))


def port_segments(joiner, mac: str | None) -> list[tuple[str, object]]:
    """The (ESXi target, port) holding the MAC whose counters were read, in the order they were read
    (the first sample number read, then its time: two hosts' clocks may disagree): more than one means
    the vNIC moved between the window's samples. A port list naming the MAC on a host where nothing of
    it was read is no segment; when no port was read, the first port found stands alone."""
    if not mac:
        return []
    found = []
    for target_id, reading in joiner.host_port_lists():
        for port in reading.record.ports:
            if norm_mac(port.mac) == mac:
                found.append((target_id, port))
                break
    read = [(first, pair) for pair in found if (first := _first_read(joiner, *pair)) is not None]
    timed = all(first[0] is not None for first, _ in read)  # sample order first; the clock among equal samples
    read.sort(key=lambda item: (item[0][1], item[0][0] if timed else ""))
    return [pair for _, pair in read] or found[:1]


def _first_read(joiner, target_id: str, port) -> tuple[str | None, int] | None:
    """(the earliest reading's time, its sample number) of the port's counters; None when none was read."""
    caps = [c for spec in ("vsish_rxsummary", "vsish_clientstats")
            for c in joiner.bundle.find(spec, target_id, portset=port.switch, port=str(port.port))]
    if not caps:
        return None
    times = [c.time.isoformat() for c in caps if c.time]
    return (min(times) if len(times) == len(caps) else None), min(c.sample or 0 for c in caps)


def sampled_move(joiner, segments: list[tuple[str, object]]) -> Move | None:
    """The move the bundle itself shows: the first and the last port of the vNIC, on two hosts."""
    if len(segments) < 2:
        return None
    (a, port_a), (b, port_b) = segments[0], segments[-1]
    return Move(None, joiner.host_name(a), joiner.host_name(b), "sampled on two hosts", None, port_a.port, port_b.port)
