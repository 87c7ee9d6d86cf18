"""Fleet rules: one class per VM from vCenter's counters, with the numbers behind it.

The CPU figures go through the per-VM pipeline's own code: esxdiag.join.cpu.cpu_from_perf (ms per
sample -> % per vCPU, the aggregate divided by numCPU when per-vCPU series are absent) and
esxdiag.rules.cpustats (worst-vCPU window average; cpu_state is the ring verdict's "CPU first?"
test). Thresholds are the same keys as the per-VM rules (esxdiag.config). Receive drops are
vCenter's net.droppedRx summed over the window, per second and per 1,000 packets received.

Classes (esxdiag.vocabulary.FLEET_CLASSES), most urgent first:
  cpu-and-drops   drops, and CPU limited or contended (the ring verdict would say "CPU first")
  ring-suspect    drops on a vmxnet3 vNIC with CPU measured healthy: the deep check proves or not
  cpu-limit       %MLMTD over threshold, or a limit set with no %MLMTD figures
  cpu-contention  worst-vCPU %RDY over the warning threshold or %CSTP over its threshold
  emulated-nic    drops on an e1000 / e1000e vNIC (the adapter type is the fix), or one without drops
  no-data         powered off, no counters, or drops without CPU figures (cannot tell which)
  healthy         CPU and drops measured, nothing over threshold

Drops under the noise floor (fleet.drops_per_s_floor and fleet.drops_per_1000_floor, both) are a
note, not a class. Drops belong to a vNIC (per-vNIC net.droppedRx instances, device key -> label and MAC): once CPU is
not the cause, each family of vNICs carrying drops gets its own answer (vmxnet3: the ring ladder;
e1000/e1000e: the adapter type; others: no ring counters) and the VM takes the most urgent one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esxdiag.join.cpu import cpu_from_perf
from esxdiag.fleet.snapshot import FleetVm, FleetVnic
from esxdiag.result import SEVERITIES
from esxdiag.rules.cpu import costop_words, limited_words, ready_words
from esxdiag.rules.cpustats import cpu_state
from esxdiag.vocabulary import FLEET_CLASSES

EMULATED = ("e1000", "e1000e")


@dataclass(frozen=True)
class PerfReading:
    """What cpu_from_perf reads: a parsed vsphere_perf record and where it came from."""

    record: object
    file: str | None


@dataclass(frozen=True)
class Assessment:
    vm: FleetVm
    klass: str
    severity: str | None  # critical | warning | info | None
    reason: str
    score: float
    score_terms: dict[str, float]
    source: str | None  # vcenter-realtime | vcenter-historical
    samples: int
    drops: int | None  # packets dropped on receive over the window (all vNICs)
    drops_per_s: float | None
    drops_per_1000: float | None
    packets_rx: int | None
    ready_worst: float | None  # worst vCPU's window-average %RDY
    ready_vcpu: str | None
    ready_avg: float | None
    costop_worst: float | None
    max_limited_worst: float | None
    drops_by_vnic: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    ready_bound: str | None = None  # exact | lower | upper (vCPU count unknown: esxdiag.join.cpu)


def _window_sum(perf, counter: str) -> tuple[int | None, dict[str, int], int]:
    """(aggregate total, per-instance totals, samples with a value) of a counter over the window."""
    per = {s.instance: s.values for s in perf.series if s.counter == counter}
    totals = {i: sum(v for v in vals if v is not None) for i, vals in per.items() if any(v is not None for v in vals)}
    if "" in totals:
        samples = sum(v is not None for v in per[""])
        return totals[""], {i: n for i, n in totals.items() if i}, samples
    if totals:  # no aggregate series: the vNICs' sum
        samples = max(sum(v is not None for v in vals) for vals in per.values())
        return sum(totals.values()), totals, samples
    return None, {}, 0


@dataclass(frozen=True)
class Drops:
    """Receive drops over the window: packets, per second of samples and per 1,000 packets received."""

    drops: int
    per_s: float | None
    per_1000: float | None
    packets: int | None = None

    def words(self) -> str:
        per_k = f", {self.per_1000:.2f} per 1,000 packets" if self.per_1000 is not None else ""
        return f"{self.drops:,} receive drops ({self.per_s or 0:.2f}/s{per_k})"


def _drops(drops: int | None, packets: int | None, seconds: float) -> Drops | None:
    if drops is None:
        return None
    return Drops(drops, drops / seconds if seconds else None, drops / packets * 1000 if packets else None, packets)


def _combined(parts: list[Drops], seconds: float) -> Drops:
    packets = [p.packets for p in parts]
    return _drops(sum(p.drops for p in parts), None if None in packets else sum(packets), seconds)


def vnic_words(nic: FleetVnic) -> str:
    """"vmxnet3 vNIC Network adapter 1 (00:50:56:aa:bb:cc)": the label and MAC an admin finds it by."""
    return f"{nic.type} vNIC {nic.label or f'key {nic.device_key}'} ({nic.mac or 'MAC unknown'})"


def _family(nic_type: str) -> str:
    return "vmxnet3" if nic_type == "vmxnet3" else "emulated" if nic_type in EMULATED else "other"


def below_floor(d: Drops, t) -> bool:
    """Noise: under both the rate and the per-1,000-packets floor (config.py, docs/fleet-scan.md)."""
    return ((d.per_s is None or d.per_s < t["fleet.drops_per_s_floor"])
            and (d.per_1000 is None or d.per_1000 < t["fleet.drops_per_1000_floor"]))


def _carriers(vm: FleetVm, by_vnic: dict[str, Drops], t) -> tuple[dict[str, list[FleetVnic]], bool]:
    """The vNICs the drops are on (over the noise floor, else any drops), by family (vmxnet3 / emulated /
    other), and whether that was measured per vNIC (True) or, without per-vNIC series, assumed of every
    vNIC (False)."""
    keyed = {str(n.device_key): n for n in vm.vnics or ()}
    carrying = [keyed[k] for k, d in by_vnic.items() if k in keyed and d.drops > t["ring.drops"]
                and not below_floor(d, t)]
    carrying = carrying or [keyed[k] for k, d in by_vnic.items() if k in keyed and d.drops > t["ring.drops"]]
    measured = bool(carrying)
    families: dict[str, list[FleetVnic]] = {}
    for nic in carrying if measured else vm.vnics or ():
        families.setdefault(_family(nic.type), []).append(nic)
    return families, measured


def assess(vm: FleetVm, t: dict[str, float]) -> Assessment:
    nic_types = {n.type for n in vm.vnics} if vm.vnics is not None else None  # None: not read
    emulated = sorted((nic_types or set()) & set(EMULATED))
    base = dict(score=0.0, score_terms={}, source=None, samples=0, drops=None, drops_per_s=None, drops_per_1000=None,
                packets_rx=None, ready_worst=None, ready_vcpu=None, ready_avg=None, costop_worst=None,
                max_limited_worst=None)
    if vm.power_state != "poweredOn":
        return Assessment(vm, "no-data", "info" if vm.damage else None,
                          f"not scanned: {vm.power_state or 'power state unknown'}{_damaged(vm)}", **base,
                          notes=vm.damage)
    if vm.perf is None:
        return Assessment(vm, "no-data", "info", f"no performance data: {vm.perf_error or 'none returned'}"
                          f"{_damaged(vm)}", **base, notes=vm.damage)
    perf = vm.perf
    cpu = cpu_from_perf(PerfReading(perf, f"vcenter {vm.vcenter}"), vm.num_cpu)
    limit = vm.cpu_allocation.limit_mhz
    gate = cpu_state(cpu, limit, t)
    drops, by_vnic, samples = _window_sum(perf, "net.droppedRx.summation")
    packets, packets_by_vnic, _ = _window_sum(perf, "net.packetsRx.summation")
    seconds = samples * perf.interval_s
    per_s = drops / seconds if drops is not None and seconds else None
    per_1000 = drops / packets * 1000 if drops is not None and packets else None
    vnic_drops = {k: _drops(n, packets_by_vnic.get(k), seconds) for k, n in by_vnic.items()}
    ready, costop, limited = gate.ready, gate.costop, gate.limited
    terms = {
        "drops": 10 * (per_s or 0) / max(t["ring.drops_per_s_critical"], 1e-9),
        "drops_per_1000": per_1000 or 0.0,
        "ready": max(0.0, ready.worst_avg - t["cpu.ready_pct_warning"]) if ready else 0.0,
        "costop": max(0.0, costop.worst_avg - t["cpu.costop_pct"]) if costop else 0.0,
        "max_limited": max(0.0, limited.worst_avg - t["cpu.max_limited_pct"]) if limited else 0.0,
    }
    terms = {k: round(v, 3) for k, v in terms.items() if v}
    notes = list(vm.damage) + ([perf.note] if perf.note else [])
    if cpu is not None and cpu.normalisation:
        notes.append(f"CPU: {cpu.normalisation}")
    if limit is not None:
        notes.append(f"CPU limit {limit} MHz")
    if nic_types is None:
        notes.append("vNIC types not read (--nic-types drops, no drops): emulated e1000/e1000e not checked")
    if vm.latency_sensitivity == "high":
        notes.append("latency sensitivity high: small rings may be deliberate (vSphere 8 low-latency guidance)")
    klass, severity, reason = _classify(vm, gate, _drops(drops, packets, seconds), vnic_drops, seconds,
                                        nic_types, emulated, notes, t)
    if klass == "no-data":
        reason += _damaged(vm)
    source = cpu.source if cpu else f"vcenter-{perf.rollup}"
    return Assessment(
        vm, klass, severity, reason, round(sum(terms.values()), 3), terms, source, samples, drops, per_s, per_1000,
        packets, ready.worst_avg if ready else None, ready.vcpu if ready else None,
        cpu.summary()["ready_pct_avg"] if cpu else None, costop.worst_avg if costop else None,
        limited.worst_avg if limited else None, by_vnic, tuple(notes), ready.bound if ready else None)


def _damaged(vm: FleetVm) -> str:
    """The first thing that could not be read, for a reason that would otherwise only say "no data"."""
    if not vm.damage:
        return ""
    more = f" (and {len(vm.damage) - 1} more in the notes)" if len(vm.damage) > 1 else ""
    return f"; damaged data: {vm.damage[0]}{more}"


def cpu_words(gate, limit_mhz: int | None, t) -> str:
    """The CPU figures in the per-VM report's words for each level (esxdiag.rules.cpu), each with its
    threshold: "CPU healthy (...)" only when every figure is at or below its threshold."""
    ready = ready_words(gate.ready, t) if gate.ready is not None else (None, "%RDY not measured")
    costop = costop_words(gate.costop, t) if gate.costop is not None else (False, "")
    limited = limited_words(gate.limited, limit_mhz, t)
    parts = "; ".join(w for _, w in (ready, costop, limited) if w)
    healthy = gate.ready is not None and ready[0] is None and costop[0] is False and limited[0] is False
    return f"CPU healthy ({parts})" if healthy else parts


def _classify(vm, gate, d: Drops | None, vnic_drops, seconds, nic_types, emulated, notes, t) -> tuple[str, str | None, str]:
    ready, limited, limit = gate.ready, gate.limited, vm.cpu_allocation.limit_mhz
    cpu_text = cpu_words(gate, limit, t)
    if d is not None and d.drops > t["ring.drops"] and below_floor(d, t):
        notes.append(f"{d.words()}: below the noise floor ({t['fleet.drops_per_s_floor']:g}/s and "
                     f"{t['fleet.drops_per_1000_floor']:g} per 1,000 packets): a note, not a class")
    elif d is not None and d.drops > t["ring.drops"]:
        if gate.throttled or gate.contended:
            return "cpu-and-drops", "critical", f"{d.words()}{_on(vm, vnic_drops, t)} with {cpu_text}: fix CPU first"
        if nic_types is None:
            return "no-data", "warning", f"{d.words()} but the vNIC types could not be read"
        return _drop_class(vm, gate, d, vnic_drops, seconds, cpu_text, notes, t)
    if limited is not None and limited.judge(t["cpu.max_limited_pct"]) == "above":
        return "cpu-limit", "critical", cpu_text
    if gate.throttled:
        return "cpu-limit", "warning", cpu_text
    judged = ready.judge(t["cpu.ready_pct_warning"]) if ready is not None else None
    if judged == "above" or gate.contended:
        return "cpu-contention", "critical" if gate.contended else "warning", cpu_text
    if judged == "unknown":  # an upper bound over the threshold: neither contention nor health
        return "no-data", "info", cpu_text
    if emulated:
        return "emulated-nic", "warning", f"emulated {'/'.join(emulated)} vNIC (no drops in the window)"
    if ready is None:
        return "no-data", "info", "no CPU figures in the window"
    if d is None and vm.num_vnics != 0:
        return "no-data", "info", f"no receive-drop figures for its vNICs ({cpu_text})"
    if vm.num_vnics == 0:
        return "healthy", None, f"no vNICs, {cpu_text}"
    quiet = "receive drops below the noise floor" if d is not None and d.drops > t["ring.drops"] else "no receive drops"
    return "healthy", None, f"{quiet}, {cpu_text}"


def _on(vm: FleetVm, vnic_drops: dict, t) -> str:
    families, measured = _carriers(vm, vnic_drops, t)
    return f" on {', '.join(vnic_words(n) for nics in families.values() for n in nics)}" if measured else ""


def _drop_class(vm, gate, d: Drops, vnic_drops, seconds: float, cpu_text: str, notes: list[str], t) -> tuple[str, str | None, str]:
    """Drops judged on the vNICs that carry them (CPU not the cause): a vmxnet3 vNIC goes down the
    ring ladder, an e1000/e1000e is fixed by its adapter type, another type has no ring counters. The
    VM takes the most urgent of its vNICs' answers; the others become notes."""
    families, measured = _carriers(vm, vnic_drops, t)
    candidates = []
    for family, nics in families.items():
        own = _combined([vnic_drops[str(n.device_key)] for n in nics], seconds) if measured else d
        where = ", ".join(vnic_words(n) for n in nics) + ("" if measured else " (no per-vNIC series: "
                                                           "the drops could be on any of them)")
        rate = "critical" if (own.per_s or 0) > t["ring.drops_per_s_critical"] else "warning"
        if family == "vmxnet3" and (gate.ready is None or gate.undecided):
            why = "no CPU figures" if gate.ready is None else f"CPU {gate.words} ({cpu_text})"
            candidates.append(("no-data", "warning", f"{own.words()} on {where} but {why}: cannot tell ring "
                                                     "exhaustion from CPU starvation"))
        elif family == "vmxnet3":
            candidates.append(("ring-suspect", rate, f"{own.words()} on {where} with {cpu_text}: rx ring "
                                                     "exhaustion likely; the deep check proves it"))
        elif family == "emulated":
            candidates.append(("emulated-nic", rate, f"{own.words()} on the emulated {where}: change the adapter "
                                                     "type to vmxnet3 (a vmxnet3 ring setting cannot help it)"))
        else:
            candidates.append(("no-data", "warning", f"{own.words()} on {where}: no ring counters for it"))
    if not candidates:
        return "no-data", "warning", f"{d.words()} but the VM has no vNIC to put them on"
    candidates.sort(key=lambda c: (SEVERITIES.index(c[1]), FLEET_CLASSES.index(c[0])))
    notes.extend(f"also: {reason}" for _, _, reason in candidates[1:])
    return candidates[0]
