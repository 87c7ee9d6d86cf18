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
  emulated-nic    an e1000 / e1000e vNIC (drops on it, or none)
  no-data         powered off, no counters, or drops without CPU figures (cannot tell which)
  healthy         CPU and drops measured, nothing over threshold
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esxdiag.join.cpu import cpu_from_perf
from esxdiag.fleet.snapshot import FleetVm
from esxdiag.rules.cpustats import cpu_state

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
    packets, _, _ = _window_sum(perf, "net.packetsRx.summation")
    seconds = samples * perf.interval_s
    per_s = drops / seconds if drops is not None and seconds else None
    per_1000 = drops / packets * 1000 if drops is not None and packets else None
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
    klass, severity, reason = _classify(vm, gate, drops, per_s, per_1000, nic_types, emulated, t)
    if klass == "no-data":
        reason += _damaged(vm)
    source = cpu.source if cpu else f"vcenter-{perf.rollup}"
    return Assessment(
        vm, klass, severity, reason, round(sum(terms.values()), 3), terms, source, samples, drops, per_s, per_1000,
        packets, ready.worst_avg if ready else None, ready.vcpu if ready else None,
        cpu.summary()["ready_pct_avg"] if cpu else None, costop.worst_avg if costop else None,
        limited.worst_avg if limited else None, by_vnic, tuple(notes))


def _damaged(vm: FleetVm) -> str:
    """The first thing that could not be read, for a reason that would otherwise only say "no data"."""
    if not vm.damage:
        return ""
    more = f" (and {len(vm.damage) - 1} more in the notes)" if len(vm.damage) > 1 else ""
    return f"; damaged data: {vm.damage[0]}{more}"


def _classify(vm, gate, drops, per_s, per_1000, nic_types, emulated, t) -> tuple[str, str | None, str]:
    ready, costop, limited = gate.ready, gate.costop, gate.limited
    cpu_text = ", ".join(f"{name} {s.worst_avg:.1f}%" for name, s in (("worst-vCPU %RDY", ready), ("%CSTP", costop),
                                                                    ("%MLMTD", limited)) if s is not None)
    drop_text = ""
    if drops is not None and per_s is not None:
        per_k = f", {per_1000:.2f} per 1,000 packets" if per_1000 is not None else ""
        drop_text = f"{drops} receive drops ({per_s:.2f}/s{per_k})"
    dropping = drops is not None and drops > t["ring.drops"]
    cpu_known = ready is not None
    critical_rate = per_s is not None and per_s > t["ring.drops_per_s_critical"]
    if dropping:
        if gate.throttled or gate.contended:
            why = "CPU limit" if gate.throttled else "CPU contention"
            figures = cpu_text or "limit set, %MLMTD not measured"
            return "cpu-and-drops", "critical", f"{drop_text} with {why} ({figures}): fix CPU first"
        if not cpu_known or gate.undecided:
            why = "no CPU figures" if not cpu_known else f"CPU {gate.words}"
            return "no-data", "warning", f"{drop_text} but {why}: cannot tell ring exhaustion from CPU starvation"
        if nic_types is None:
            return "no-data", "warning", f"{drop_text} but the vNIC types could not be read"
        if "vmxnet3" in nic_types:
            return ("ring-suspect", "critical" if critical_rate else "warning",
                    f"{drop_text} with CPU healthy ({cpu_text}): rx ring exhaustion likely; the deep check proves it")
        if emulated:
            return "emulated-nic", "warning", f"{drop_text} on an emulated {'/'.join(emulated)} vNIC: move to vmxnet3"
        kinds = "/".join(sorted(nic_types)) or "unknown"
        return "no-data", "warning", f"{drop_text} on a {kinds} vNIC: no ring counters for it"
    if limited is not None and limited.worst_avg > t["cpu.max_limited_pct"]:
        return "cpu-limit", "critical", f"a CPU limit throttles the VM ({cpu_text})"
    if gate.throttled:
        return "cpu-limit", "warning", f"CPU limit {vm.cpu_allocation.limit_mhz} MHz set; %MLMTD not measured"
    if ready is not None and ready.worst_avg > t["cpu.ready_pct_warning"] or gate.contended:
        severe = gate.contended
        return "cpu-contention", "critical" if severe else "warning", f"vCPUs wait to be scheduled ({cpu_text})"
    if emulated:
        return "emulated-nic", "warning", f"emulated {'/'.join(emulated)} vNIC (no drops in the window)"
    if not cpu_known:
        return "no-data", "info", "no CPU figures in the window"
    if drops is None and vm.num_vnics != 0:
        return "no-data", "info", f"no receive-drop figures for its vNICs ({cpu_text})"
    return "healthy", None, f"no receive drops, {cpu_text}" if vm.num_vnics != 0 else f"no vNICs, {cpu_text}"
