"""Fleet rules: one class per VM from vCenter's counters, with the numbers behind it.

The figures (esxdiag.fleet.figures) go through the per-VM pipeline's own code, with the same
threshold keys as the per-VM rules (esxdiag.config), and the reasons use the per-VM rules' words for
each CPU level (esxdiag.rules.cpu).

Classes (esxdiag.vocabulary.FLEET_CLASSES), most urgent first:
  ring-exhaustion proven by the deep check's host ring counters (esxdiag.fleet.confirm)
  cpu-and-drops   drops, and CPU limited or contended (the ring verdict would say "CPU first"); or the
                  deep check found the host swapping the VM or every vCPU saturated
  ring-suspect    drops on a vmxnet3 vNIC with CPU measured healthy: the deep check proves or not
  uplink-loss     the VM's host loses received frames on a physical uplink (esxdiag.fleet.uplink) and
                  the VM has no drops of its own over the floor nor a more urgent class: info only (no
                  symptom of its own; the host rollup ranks the loss), or proven by the deep check
  drops-not-ring  proven by the deep check: the ring counters are flat, the drops have another cause
  cpu-limit       %MLMTD over threshold, or a limit set with no %MLMTD figures
  cpu-contention  worst-vCPU %RDY over the warning threshold or %CSTP over its threshold
  emulated-nic    drops on an e1000 / e1000e vNIC (the adapter type is the fix), or one without drops
  no-data         powered off, no counters, or drops without CPU figures (cannot tell which)
  healthy         CPU and drops measured, nothing over threshold

A VM that moved between hosts in the window (vCenter's migration events, esxdiag.fleet.moves) keeps
the class its counters give, and its reason says when and where it moved: its counters come from two
ports, so it is no deep-check candidate in this scan.

Drops under the noise floor (fleet.drops_per_s_floor and fleet.drops_per_1000_floor, both) are a
note, not a class. Drops belong to a vNIC (per-vNIC net.droppedRx instances, device key -> label and
MAC): once CPU is not the cause, each family of vNICs carrying drops gets its own answer (vmxnet3: the
ring ladder; e1000/e1000e: the adapter type; others: no ring counters) and the VM takes the most
urgent one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from esxdiag.fleet import moves as vmotion
from esxdiag.fleet import uplink
from esxdiag.fleet.confirm import PROVEN, confirm, proven_rate
from esxdiag.fleet.figures import EMULATED, Drops, Figures, measure, vnic_words
from esxdiag.fleet.model import DeepEvidence
from esxdiag.fleet.snapshot import FleetVm
from esxdiag.rules.cpu import costop_words, limit_ready_words, limited_words, ready_from_limit, ready_words
from esxdiag.vocabulary import DROP_CLASSES, FleetClass, Severity, class_rank, drop_severity, severity_order

Judgement = tuple[str, "str | None", str]  # class, severity, reason


@dataclass(frozen=True, kw_only=True)
class Assessment:
    vm: FleetVm
    klass: str
    severity: str | None  # critical | warning | info | None
    reason: str
    score: float = 0.0  # frames lost per second (frames_lost_per_s)
    score_terms: dict[str, float] = field(default_factory=dict)
    source: str | None = None  # vcenter-realtime | vcenter-historical
    samples: int = 0
    drops: int | None = None  # packets dropped on receive over the window (all vNICs)
    drops_per_s: float | None = None
    drops_per_1000: float | None = None
    packets_rx: int | None = None
    ready_worst: float | None = None  # worst vCPU's window-average %RDY
    ready_vcpu: str | None = None
    ready_avg: float | None = None
    costop_worst: float | None = None
    max_limited_worst: float | None = None
    drops_by_vnic: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    ready_bound: str | None = None  # exact | lower | upper (vCPU count unknown: esxdiag.join.cpu)
    confirmed: bool = False  # the class rests on the deep check's host counters, not vCenter's alone
    dropping: bool = False  # receive drops over the noise floor
    moves: tuple[vmotion.Move, ...] | None = None  # moves between hosts in the window (None: events not read)
    uplinks: tuple[uplink.HostUplink, ...] = ()  # the lossy uplinks of the hosts the VM ran on in the window


def assess(vm: FleetVm, t: dict[str, float], deep: DeepEvidence | None = None,
           uplinks: dict[tuple[str, str], uplink.HostUplink] | None = None) -> Assessment:
    """deep: the VM's deep check (esxdiag.fleet.model.DeepEvidence: its vNICs' ring verdicts, its error), if any;
    uplinks: every host's uplink figures by (vCenter, host name) (esxdiag.fleet.uplink)."""
    if vm.power_state != "poweredOn":
        return Assessment(vm=vm, klass=FleetClass.NO_DATA, severity=Severity.INFO if vm.damage else None,
                          reason=f"not scanned: {vm.power_state or 'power state unknown'}{_damaged(vm)}",
                          notes=vm.damage)
    moves = vmotion.moves_of(vm)
    lossy = tuple(u for h in vmotion.hosts_of(vm, moves) if (u := (uplinks or {}).get((vm.vcenter, h)))
                  and u.lossy(t))
    if vm.perf is None:
        unread = (FleetClass.NO_DATA, Severity.INFO,
                  f"no performance data: {vm.perf_error or 'none returned'}{_damaged(vm)}")
        judged: Judgement = unread
        confirmed = False
        if deep is not None:  # a kept proof: this scan read nothing that could retire it (esxdiag.scanning.proofs)
            k, s, r, confirmed = confirm(vm, unread, deep, lambda: unread, "CPU figures not read in this scan", t)
            judged = (k, s, r)
        klass, severity, reason = uplink.fold(judged, False, lossy, t)
        return Assessment(vm=vm, klass=klass, severity=severity, reason=_moved(reason, klass, moves),
                          notes=vm.damage, confirmed=confirmed and klass == judged[0], moves=moves, uplinks=lossy)
    f = measure(vm, t)
    notes = _notes(vm, f)
    klass, severity, reason = _classify(vm, f, notes, t)
    confirmed = False
    if deep is not None:
        klass, severity, reason, confirmed = confirm(
            vm, (klass, severity, reason), deep, lambda: _classify(vm, f, [], t, drops_ruled_out=True),
            cpu_words(f.gate, vm.cpu_allocation.limit_mhz, t), t)
    if klass == FleetClass.NO_DATA:
        reason += _damaged(vm)
    if klass == FleetClass.RING_SUSPECT and deep is None and not moves:
        reason += ("; not proven: the host's ring counters would prove it (a deep check: esxdiag scan --deep N "
                   "reads them for the N most urgent VMs)")
    folded = uplink.fold((klass, severity, reason), f.dropping(t), lossy, t)
    confirmed = confirmed and folded[0] == klass
    klass, severity, reason = folded[0], folded[1], _moved(folded[2], folded[0], moves)
    ready, costop, limited = f.gate.ready, f.gate.costop, f.gate.limited
    d = f.drops
    terms = {"drops_per_s": frames_lost_per_s(d.per_s if d else None, deep, confirmed)}
    terms = {k: round(v, 3) for k, v in terms.items() if v}
    return Assessment(
        vm=vm, klass=klass, severity=severity, reason=reason, score=round(sum(terms.values()), 3), score_terms=terms,
        source=f.cpu.source if f.cpu else f"vcenter-{vm.perf.rollup}", samples=f.samples,
        drops=d.drops if d else None, drops_per_s=d.per_s if d else None, drops_per_1000=d.per_1000 if d else None,
        packets_rx=d.packets if d else None, ready_worst=ready.worst_avg if ready else None,
        ready_vcpu=ready.vcpu if ready else None, ready_avg=f.cpu.average("ready_pct") if f.cpu else None,
        costop_worst=costop.worst_avg if costop else None, max_limited_worst=limited.worst_avg if limited else None,
        drops_by_vnic=f.by_vnic, notes=tuple(notes), ready_bound=ready.bound if ready else None,
        confirmed=confirmed, dropping=f.dropping(t), moves=moves, uplinks=lossy)


def frames_lost_per_s(drops_per_s: float | None, deep: DeepEvidence | None, confirmed: bool) -> float:
    """The VM's impact, the fleet score (docs/fleet-scan.md "Ranking"): received frames it lost per second over
    the window (vCenter's net.droppedRx), whatever the cause (ring, CPU limit, the uplink when a deep check
    placed them there); a proof without vCenter drops: the proven vNICs' host drop rate. CPU figures without
    drops lose no frames: 0."""
    if drops_per_s is None and confirmed and deep is not None:
        return proven_rate([v for v in deep.vnics if v.get("verdict") in PROVEN]) or 0.0
    return drops_per_s or 0.0


def _moved(reason: str, klass: str, moves: tuple[vmotion.Move, ...] | None) -> str:
    """The reason, and when and where the VM moved in the window (a drop suspicion: no deep check this scan)."""
    if not moves:
        return reason
    spared = " (not deep-checked in this scan: its counters span two ports)" if klass in DROP_CLASSES else ""
    return f"{reason}; {vmotion.words(moves)}{spared}"


def _notes(vm: FleetVm, f: Figures) -> list[str]:
    notes = list(vm.damage) + ([vm.perf.note] if vm.perf is not None and vm.perf.note else [])
    if f.cpu is not None and f.cpu.normalisation:
        notes.append(f"CPU: {f.cpu.normalisation}")
    if vm.cpu_allocation.limit_mhz is not None:
        notes.append(f"CPU limit {vm.cpu_allocation.limit_mhz} MHz")
    if vm.vnics is None:
        notes.append("vNIC types not read (--nic-types drops, no drops): emulated e1000/e1000e not checked")
    if vm.latency_sensitivity == "high":
        notes.append("latency sensitivity high: small rings may be deliberate (vSphere 8 low-latency guidance)")
    return notes


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
    if ready[0] is not None and ready_from_limit(gate.ready, gate.limited, t):  # a limit, not contention
        ready = ("limit", limit_ready_words(gate.ready, gate.limited))
    costop = costop_words(gate.costop, t) if gate.costop is not None else (False, "")
    limited = limited_words(gate.limited, limit_mhz, t)
    parts = "; ".join(w for _, w in (ready, costop, limited) if w)
    healthy = gate.ready is not None and ready[0] is None and costop[0] is False and limited[0] is False
    return f"CPU healthy ({parts})" if healthy else parts


def _classify(vm: FleetVm, f: Figures, notes: list[str], t, drops_ruled_out: bool = False) -> Judgement:
    gate, d = f.gate, f.drops
    ready, limited = gate.ready, gate.limited
    cpu_text = cpu_words(gate, vm.cpu_allocation.limit_mhz, t)
    with_drops = d is not None and d.drops > t["ring.drops"] and not drops_ruled_out
    if d is not None and with_drops and not f.dropping(t):
        notes.append(f"{d.words()}: below the noise floor ({t['fleet.drops_per_s_floor']:g}/s and "
                     f"{t['fleet.drops_per_1000_floor']:g} per 1,000 packets): a note, not a class")
    elif d is not None and with_drops:
        families, measured = f.carriers(vm, t)
        if gate.throttled or gate.contended:
            on = f" on {', '.join(vnic_words(n) for ns in families.values() for n in ns)}" if measured else ""
            return FleetClass.CPU_AND_DROPS, Severity.CRITICAL, f"{d.words()}{on} with {cpu_text}: fix CPU first"
        if vm.vnics is None:
            return FleetClass.NO_DATA, Severity.WARNING, f"{d.words()} but the vNIC types could not be read"
        return _drop_class(f, d, families, measured, cpu_text, notes, t)
    if limited is not None and limited.judge(t["cpu.max_limited_pct"]) == "above":
        return FleetClass.CPU_LIMIT, Severity.CRITICAL, cpu_text
    if gate.throttled:
        return FleetClass.CPU_LIMIT, Severity.WARNING, cpu_text
    judged = ready.judge(t["cpu.ready_pct_warning"]) if ready is not None else None
    if judged == "above" or gate.contended:
        return FleetClass.CPU_CONTENTION, Severity.CRITICAL if gate.contended else Severity.WARNING, cpu_text
    if judged == "unknown":  # an upper bound over the threshold: neither contention nor health
        return FleetClass.NO_DATA, Severity.INFO, cpu_text
    emulated = sorted({n.type for n in vm.vnics or ()} & set(EMULATED))
    if emulated:
        return (FleetClass.EMULATED_NIC, Severity.WARNING,
                f"emulated {'/'.join(emulated)} vNIC (no drops in the window)")
    if ready is None:
        return FleetClass.NO_DATA, Severity.INFO, "no CPU figures in the window"
    if d is None and vm.num_vnics != 0 and not drops_ruled_out:
        return FleetClass.NO_DATA, Severity.INFO, f"no receive-drop figures for its vNICs ({cpu_text})"
    if vm.num_vnics == 0:
        return FleetClass.HEALTHY, None, f"no vNICs, {cpu_text}"
    quiet = "receive drops below the noise floor" if with_drops else "no receive drops"
    return FleetClass.HEALTHY, None, cpu_text if drops_ruled_out else f"{quiet}, {cpu_text}"


def _drop_class(f: Figures, drops: Drops, families: dict, measured: bool, cpu_text: str, notes: list[str],
                t) -> Judgement:
    """Drops judged on the vNICs that carry them (CPU not the cause): a vmxnet3 vNIC goes down the
    ring ladder, an e1000/e1000e is fixed by its adapter type, another type has no ring counters. The
    VM takes the most urgent of its vNICs' answers; the others become notes."""
    gate, candidates = f.gate, []
    for kind, nics in families.items():
        own = f.share(nics) if measured else drops
        where = ", ".join(vnic_words(n) for n in nics) + ("" if measured else " (no per-vNIC series: "
                                                           "the drops could be on any of them)")
        rate = drop_severity(own.per_s, t)
        if kind == "vmxnet3" and (gate.ready is None or gate.undecided):
            why = "no CPU figures" if gate.ready is None else f"CPU {gate.words} ({cpu_text})"
            candidates.append((FleetClass.NO_DATA, Severity.WARNING, f"{own.words()} on {where} but {why}: cannot "
                               "tell ring exhaustion from CPU starvation"))
        elif kind == "vmxnet3":
            candidates.append((FleetClass.RING_SUSPECT, rate, f"{own.words()} on {where} with {cpu_text}: rx "
                               "ring exhaustion likely"))
        elif kind == "emulated":
            candidates.append((FleetClass.EMULATED_NIC, rate, f"{own.words()} on the emulated {where}: change the "
                               "adapter type to vmxnet3 (a vmxnet3 ring setting cannot help it)"))
        else:
            candidates.append((FleetClass.NO_DATA, Severity.WARNING,
                               f"{own.words()} on {where}: no ring counters for it"))
    if not candidates:
        return FleetClass.NO_DATA, Severity.WARNING, f"{drops.words()} but the VM has no vNIC to put them on"
    candidates.sort(key=lambda c: (severity_order(c[1]), class_rank(c[0])))
    notes.extend(f"also: {reason}" for _, _, reason in candidates[1:])
    return candidates[0]
