"""The numbers the fleet rules judge one VM by, from its snapshot record alone (no network).

CPU goes through the per-VM pipeline's own code: esxdiag.join.cpu.cpu_from_perf (ms per sample -> %
per vCPU, the aggregate divided by numCPU when per-vCPU series are absent) and
esxdiag.rules.cpustats.cpu_state (worst-vCPU window averages; the ring verdict's "CPU first?" test).
Receive drops are vCenter's net.droppedRx summed over the window, per second of samples and per
1,000 packets received, for the VM and for each vNIC instance (device key -> label and MAC).
"""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.fleet.snapshot import FleetVm, FleetVnic
from esxdiag.join.cpu import cpu_from_perf
from esxdiag.join.facts import CpuFacts
from esxdiag.rules.cpustats import CpuState, cpu_state

EMULATED = ("e1000", "e1000e")


@dataclass(frozen=True)
class PerfReading:
    """What cpu_from_perf reads: a parsed vsphere_perf record and where it came from."""

    record: object
    file: str | None


@dataclass(frozen=True)
class Drops:
    """Receive drops over the window: packets, per second of samples and per 1,000 packets received."""

    drops: int
    per_s: float | None
    per_1000: float | None
    packets: int | None = None

    def words(self) -> str:
        """From the figures the fleet table shows (rounded to 3 places first), so both print the same."""
        per_k = f", {round(self.per_1000, 3):.2f} per 1,000 packets" if self.per_1000 is not None else ""
        return f"{self.drops:,} receive drops ({round(self.per_s or 0, 3):.2f}/s{per_k})"


def drops_of(drops: int | None, packets: int | None, seconds: float) -> Drops | None:
    return None if drops is None else rates(drops, packets, seconds)


def rates(drops: int, packets: int | None, seconds: float) -> Drops:
    return Drops(drops, drops / seconds if seconds else None, drops / packets * 1000 if packets else None, packets)


def combined(parts: list[Drops], seconds: float) -> Drops:
    packets = [p.packets for p in parts if p.packets is not None]
    return rates(sum(p.drops for p in parts), sum(packets) if len(packets) == len(parts) else None, seconds)


def below_floor(d: Drops, t: dict[str, float]) -> bool:
    """Noise: under both the rate and the per-1,000-packets floor (config.py, docs/fleet-scan.md)."""
    return ((d.per_s is None or d.per_s < t["fleet.drops_per_s_floor"])
            and (d.per_1000 is None or d.per_1000 < t["fleet.drops_per_1000_floor"]))


def vnic_words(nic: FleetVnic) -> str:
    """"vmxnet3 vNIC Network adapter 1 (00:50:56:aa:bb:cc)": the label and MAC an admin finds it by."""
    return f"{nic.type} vNIC {nic.label or f'key {nic.device_key}'} ({nic.mac or 'MAC unknown'})"


def family(nic_type: str) -> str:
    return "vmxnet3" if nic_type == "vmxnet3" else "emulated" if nic_type in EMULATED else "other"


@dataclass(frozen=True)
class Figures:
    cpu: CpuFacts | None
    gate: CpuState
    drops: Drops | None  # the whole VM
    vnic_drops: dict[str, Drops]  # per vNIC instance (device key)
    by_vnic: dict[str, int]
    samples: int
    seconds: float

    def dropping(self, t: dict[str, float]) -> bool:
        """Drops over the window, and over the noise floor."""
        return self.drops is not None and self.drops.drops > t["ring.drops"] and not below_floor(self.drops, t)

    def carriers(self, vm: FleetVm, t: dict[str, float]) -> tuple[dict[str, list[FleetVnic]], bool]:
        """The vNICs the drops are on (over the noise floor, else any drops), by family (vmxnet3 / emulated /
        other), and whether that was measured per vNIC (True) or, without per-vNIC series, assumed of
        every vNIC (False)."""
        keyed = {str(n.device_key): n for n in vm.vnics or ()}
        with_drops = [k for k, d in self.vnic_drops.items() if k in keyed and d.drops > t["ring.drops"]]
        carrying = [keyed[k] for k in with_drops if not below_floor(self.vnic_drops[k], t)] or \
            [keyed[k] for k in with_drops]
        families: dict[str, list[FleetVnic]] = {}
        for nic in carrying or vm.vnics or ():
            families.setdefault(family(nic.type), []).append(nic)
        return families, bool(carrying)

    def share(self, nics: list[FleetVnic]) -> Drops:
        return combined([self.vnic_drops[str(n.device_key)] for n in nics], self.seconds)


def _window_sum(perf, counter: str) -> tuple[int | None, dict[str, int], int]:
    """(aggregate total, per-instance totals, samples with a value) of a counter over the window."""
    per = {s.instance: s.values for s in perf.series if s.counter == counter}
    present = {i: [v for v in vals if v is not None] for i, vals in per.items()}  # each series read once
    totals = {i: sum(vals) for i, vals in present.items() if vals}
    if "" in totals:
        return totals[""], {i: n for i, n in totals.items() if i}, len(present[""])
    if totals:  # no aggregate series: the vNICs' sum
        return sum(totals.values()), totals, max(len(vals) for vals in present.values())
    return None, {}, 0


def measure(vm: FleetVm, t: dict[str, float]) -> Figures:
    """vm.perf must be present."""
    perf = vm.perf
    if perf is None:
        raise ValueError(f"{vm.name}: no performance data to measure")
    cpu = cpu_from_perf(PerfReading(perf, f"vcenter {vm.vcenter}"), vm.num_cpu)
    drops, by_vnic, samples = _window_sum(perf, "net.droppedRx.summation")
    packets, packets_by_vnic, _ = _window_sum(perf, "net.packetsRx.summation")
    seconds = samples * perf.interval_s
    return Figures(cpu, cpu_state(cpu, vm.cpu_allocation.limit_mhz, t), drops_of(drops, packets, seconds),
                   {k: rates(n, packets_by_vnic.get(k), seconds) for k, n in by_vnic.items()}, by_vnic,
                   samples, seconds)
