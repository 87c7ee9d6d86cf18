"""What the join's helpers read: the bundle, its parsed captures, its clocks and window, and the
vCenter inventories and host port lists found in them. Each helper takes this record (or only the
parts it needs), never the joiner that builds the facts."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.bundle import Bundle, Target, slug
from esxdiag.join.clocks import Clocks
from esxdiag.join.readings import Reading, Readings
from esxdiag.specs import ESXI


@dataclass(frozen=True)
class Sources:
    bundle: Bundle
    readings: Readings
    clocks: Clocks  # the window's length per target, and the clock steps counters meet
    window: float | None  # the bundle's window, seconds

    @classmethod
    def of(cls, bundle: Bundle, readings: Readings) -> Sources:
        return cls(bundle, readings, Clocks.of(bundle), bundle.window_s)

    def hosts(self) -> list[Target]:
        return [t for t in self.bundle.targets if t.kind == ESXI]


def inventories(sources: Sources) -> dict[str, Reading]:
    """VM name -> its vCenter inventory reading (vsphere_vm)."""
    out: dict[str, Reading] = {}
    for cap in sources.bundle.find("vsphere_vm"):
        reading = sources.readings.read(cap)
        if reading:
            out[reading.record.name] = reading
    return out


def host_name(sources: Sources, target_id: str | None) -> str | None:
    """The host's name as vCenter knows it: the inventory's host for the VMs on it, else the target id."""
    if target_id is None:
        return None
    for reading in inventories(sources).values():
        if reading.record.host and f"esxi-{slug(reading.record.host)}" == target_id:
            return reading.record.host
    return target_id[len("esxi-"):] if target_id.startswith("esxi-") else target_id
