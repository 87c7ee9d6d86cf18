"""VMs that moved between hosts inside the scan window (docs/diagnosis.md section 8, "vMotion inside
the window"; docs/fleet-scan.md "Moved in the window").

A vMotion changes the VM's host and port: the counters before and after it come from two ports, and
the stun itself drops a few frames. The fleet report says that the VM moved, and when, and does not
spend a deep check (which samples one host, after the window) on its drops.

The snapshot keeps vCenter's events as they came (esxdiag.collectors.fleet.events). A completed
migration (VmMigratedEvent, DrsVmMigratedEvent, VmRelocatedEvent) is a move from its source host to
its destination; when the event names no destination other than its source (vcsim posts the event
before it moves the VM), the destination is where the VM was next seen: the next event's source, or
its host at the scan. A migration to the same host (storage only) keeps the port and is no move. A
migration begun after the last completed one (VmBeingHotMigratedEvent, VmEmigratingEvent) and not
completed in the window is a move in progress.
"""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.fleet.snapshot import FleetVm

COMPLETED = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmRelocatedEvent")
BEGUN = ("VmBeingHotMigratedEvent", "VmEmigratingEvent")


@dataclass(frozen=True)
class Move:
    time: str  # ISO-8601 UTC, the event's createdTime
    source: str | None  # host names as vCenter gave them
    dest: str | None
    event: str  # the event type it was read from
    completed: bool = True

    def words(self) -> str:
        clock = self.time.partition("T")[2].rstrip("Z")
        at = f"at {clock} UTC" if clock else f"at {self.time}"
        if not self.completed:
            to = f" to {self.dest}" if self.dest else ""
            return f"began moving from {self.source or 'a host'}{to} {at} (not completed in the window)"
        return f"moved from {self.source or 'a host'} to {self.dest or 'another host'} {at}"

    def as_dict(self) -> dict:
        return {"time": self.time, "from": self.source, "to": self.dest, "event": self.event,
                "completed": self.completed}


def moves_of(vm: FleetVm) -> tuple[Move, ...] | None:
    """The VM's moves between hosts in the window, oldest first; None when the events were not read."""
    if vm.migrations is None:
        return None
    events = sorted(vm.migrations, key=lambda e: e.time)
    done = [e for e in events if e.type in COMPLETED]
    moves = []
    for i, e in enumerate(done):
        dest = e.host if e.host and e.host != e.source_host else None
        if dest is None:
            dest = done[i + 1].source_host if i + 1 < len(done) else vm.host
        if e.source_host is not None and e.source_host == dest:
            continue  # the same host: storage only, the port stays
        moves.append(Move(e.time, e.source_host, dest, e.type))
    last = done[-1].time if done else ""
    begun = [e for e in events if e.type in BEGUN and e.time > last]  # begun after the last completed move
    if begun:
        first = begun[0]
        dest = next((e.host for e in begun if e.host), None)
        moves.append(Move(first.time, first.source_host, dest, first.type, completed=False))
    return tuple(moves)


def hosts_of(vm: FleetVm, moves: tuple[Move, ...] | None) -> list[str]:
    """Every host the VM ran on in the window: its host at the scan and each move's ends."""
    names = [vm.host] + [h for m in moves or () for h in (m.source, m.dest)]
    return list(dict.fromkeys(h for h in names if h))


def words(moves: tuple[Move, ...]) -> str:
    """"moved from esx0 to esx1 at 12:01:56 UTC during the window: drops not compared across hosts"."""
    said = ", then ".join(m.words() if i == 0 else m.words().removeprefix("moved ") for i, m in enumerate(moves))
    return f"{said} during the window: drops not compared across hosts"
