"""A VM that changed host inside the window (vMotion, DRS; docs/diagnosis.md "vMotion inside the window"):
the old port's counters end there and the new port's are a different series. Known from vCenter's
events, or from the bundle itself: the vNIC's MAC on ports of two or more hosts, each read in part of
the window. Readings on one port are never subtracted from readings on another, and each port is named
on the host it lived on, for any number of moves."""

from __future__ import annotations

from dataclasses import replace

from esxdiag.bundle import slug
from esxdiag.join.facts import Move, PortSegment
from esxdiag.join.host import host_port_lists
from esxdiag.join.sources import Sources, host_name
from esxdiag.parsers.netstats import NetStatsPort, norm_mac

MIGRATION_EVENTS = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmEmigratingEvent", "VmBeingHotMigratedEvent",
                    "VmBeingMigratedEvent", "VmRelocatedEvent", "VmBeingRelocatedEvent")
# the events that mark the move done (the others announce it): one move is named once
DONE = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmRelocatedEvent")


def event_moves(sources: Sources, vm: str) -> tuple[Move, ...]:
    """The VM's migrations vCenter reported for the window."""
    moves: list[Move] = []
    for cap in sources.bundle.find("vsphere_events"):
        reading = sources.readings.read(cap)
        if reading is None or reading.record.vm not in (vm, None):
            continue
        events = [e for e in reading.record.events if e.type in MIGRATION_EVENTS]
        done = [e for e in events if e.type in DONE] or events[-1:]
        moves += [Move(e.time, e.source_host, e.host, e.type, reading.file) for e in done
                  if e.source_host != e.host or e.source_host is None]
    return tuple(sorted(moves, key=lambda m: m.time or ""))


def port_segments(sources: Sources, mac: str | None) -> list[PortSegment]:
    """The ports holding the MAC whose counters were read, one per host, in the order they were read
    (the first sample number read, then its time: two hosts' clocks may disagree): more than one means the
    vNIC moved between the window's samples. A port list naming the MAC on a host where nothing of it was
    read is no segment; when no port was read, the first port found stands alone."""
    if not mac:
        return []
    found = []
    for target_id, reading in host_port_lists(sources):
        for port in reading.record.ports:
            if norm_mac(port.mac) == mac:
                found.append((target_id, port))
                break
    read = [(span, pair) for pair in found if (span := _read_span(sources, *pair)) is not None]
    timed = all(span[0] is not None for span, _ in read)  # sample order first; the clock among equal samples
    read.sort(key=lambda item: (item[0][2], item[0][0] if timed else ""))
    chosen = [(span, pair) for span, pair in read] or [((None, None, 0), pair) for pair in found[:1]]
    return [PortSegment(target, host_name(sources, target), port.port, port.switch, span[0], span[1])
            for span, (target, port) in chosen]


def _read_span(sources: Sources, target_id: str, port: NetStatsPort) -> tuple[str | None, str | None, int] | None:
    """(the earliest and the latest reading's time, the first sample number) of the port's counters; None
    when none was read."""
    caps = [c for spec in ("vsish_rxsummary", "vsish_clientstats")
            for c in sources.bundle.find(spec, target_id, portset=port.switch, port=str(port.port))]
    if not caps:
        return None
    times = [c.time.isoformat() for c in caps if c.time]
    timed = len(times) == len(caps)
    return (min(times) if timed else None), (max(times) if timed else None), min(c.sample or 0 for c in caps)


def sampled_moves(segments: list[PortSegment]) -> tuple[Move, ...]:
    """The moves the bundle itself shows: one between each two consecutive ports of the vNIC."""
    return tuple(Move(None, a.host, b.host, "sampled on two hosts", None, a.port, b.port)
                 for a, b in zip(segments, segments[1:]))


def _same_host(name: str | None, segment: PortSegment) -> bool:
    return name is not None and (name == segment.host or f"esxi-{slug(name)}" == segment.target)


def with_ports(moves: tuple[Move, ...], segments: list[PortSegment]) -> tuple[Move, ...]:
    """vCenter's moves with the port the vNIC had on each side, each port taken from the host it lived on
    (a host of a move whose port was not read keeps None). Walked in order, so a VM that comes back to a
    host gets that host's later port. When no host name matches a segment (targets named otherwise) and the
    ports are one more than the moves, they pair up in order."""
    if not moves or not segments:
        return moves
    out, cursor = [], 0
    for move in moves:
        start = next((i for i in range(cursor, len(segments)) if _same_host(move.from_host, segments[i])), None)
        after = cursor if start is None else start + 1
        end = next((i for i in range(after, len(segments)) if _same_host(move.to_host, segments[i])), None)
        out.append(replace(move, from_port=segments[start].port if start is not None else None,
                           to_port=segments[end].port if end is not None else None))
        cursor = end if end is not None else after
    matched = any(m.from_port is not None or m.to_port is not None for m in out)
    if not matched and len(segments) == len(moves) + 1:
        return tuple(replace(m, from_port=a.port, to_port=b.port) for m, a, b in zip(moves, segments, segments[1:]))
    return tuple(out)


def clock(time: str | None) -> str | None:
    """"2026-11-26T20:38:43Z" / "...+00:00" -> "20:38:43 UTC"."""
    return f"{time[11:19]} UTC" if time and len(time) >= 19 else None


def with_later_ports(moves: tuple[Move, ...], segments: list[PortSegment]) -> tuple[Move, ...]:
    """vCenter's moves, and the ones its events do not name that the readings show after them: the vNIC read
    on a host after the last move vCenter reported took it elsewhere (events cut short, or a move vCenter
    had not logged yet) is one move more, from that move's host, with no time."""
    if not moves or not segments or _same_host(moves[-1].to_host, segments[-1]):
        return moves
    last = moves[-1]
    start = next((i for i in range(len(segments) - 1, -1, -1) if _same_host(last.to_host, segments[i])), None)
    if start is not None:
        return moves + sampled_moves(segments[start:])
    return moves + (Move(None, last.to_host, segments[-1].host, "sampled on another host", None, last.to_port,
                         segments[-1].port),)


def since_move(segment: PortSegment, before: PortSegment | None, moves: tuple[Move, ...]) -> str | None:
    """What the counters of a port a move connected count from: the move (vCenter's time when an event says
    it moved to this host before the port was first read), else the port's connection on its host, between
    the last reading on the host before and the first on this one. None: no move connected this port."""
    event = next((m for m in reversed(moves) if m.time and _same_host(m.to_host, segment)
                  and (segment.first_read is None or m.time[:19] <= segment.first_read[:19])), None)
    if event is not None:
        return f"since the move to {segment.host} ({clock(event.time)})"
    if before is None:
        return None
    came = segment.first_read
    # after the last reading on the host before, and after any move vCenter logged before this port was read
    earlier = [t for t in [before.last_read] + [m.time for m in moves if m.time]
               if t and (came is None or t[:19] <= came[:19])]
    left, came = clock(max(earlier, key=lambda t: t[:19]) if earlier else None), clock(came)
    between = (f", between {left} and {came}" if left and came else f", before {came}" if came else "")
    return f"since the port was connected on {segment.host} (the move{between})"
