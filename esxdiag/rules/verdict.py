"""The per-vNIC RX ring verdict (docs/diagnosis.md): weigh ring-full and drop deltas
over the window against CPU (limit, contention), queue layout and ring sizes, and say which
single change to make first, with the numbers and the evidence against it. Without ring counters,
vSwitch port drops (esxtop %DRPRX, vCenter net.droppedRx) still decide the CPU-first verdicts;
with healthy CPU they only make ring exhaustion likely, and the verdict says what to collect."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from esxdiag.join.facts import CounterWindow, DropSymptom, VmFacts, VnicFacts
from esxdiag.result import DropLedger, Evidence, RingVerdict
from esxdiag.rules import remediation as fix
from esxdiag.rules.causes import Cause, reason_counters, rx_causes, rx_fine_tx_dropping, tx_rising
from esxdiag.rules.floor import floor_words
from esxdiag.rules.ledger import rx_ledger
from esxdiag.rules.cpustats import CpuState, WindowStat, cpu_state
from esxdiag.rules.limits import effective_limit_mhz, limit_place
from esxdiag.rules.driver_nic import buffers_rising, decide_driver_nic, rising_drops
from esxdiag.rules.ring_change import change_ring
from esxdiag.vocabulary import Verdict

EMULATED = ("e1000", "e1000e", "vmxnet", "vmxnet2", "pcnet32")


@dataclass(frozen=True)
class RingSignals:
    ring1: CounterWindow | None
    ring2: CounterWindow | None
    drops: CounterWindow | None  # the best drop counter available
    ring1_rising: bool
    ring2_rising: bool
    drops_rising: bool
    windowed: bool  # at least one counter was read at both ends
    floor: str | None = None  # the window's drops are under the per-VM noise floor: the numbers, in words

    @property
    def rising(self) -> bool:
        return self.ring1_rising or self.ring2_rising or self.drops_rising

    def counters(self) -> list[CounterWindow]:
        return [c for c in (self.ring1, self.ring2, self.drops) if c is not None]


def _best_drops(nic: VnicFacts) -> CounterWindow | None:
    candidates = [nic.host_out_of_buffers, nic.dropped_rx, nic.guest_oob, nic.guest_discards]
    return next((c for c in candidates if c is not None and c.complete), None) or \
        next((c for c in candidates if c is not None), None)


def attributed(nic: VnicFacts) -> int:
    """Port drops (clientStats droppedRx) that another counter explains (MTU, page absent, steering...):
    subtracted before the rest is blamed on the ring (docs/diagnosis.md)."""
    return sum(c.delta for counters in reason_counters(nic).values() for c in counters if c.delta)


def frames_received(nic: VnicFacts) -> int | None:
    """Frames the port delivered over the window: clientStats pktsRxOK, else vCenter net.packetsRx."""
    if nic.packets_rx is not None and nic.packets_rx.delta:
        return nic.packets_rx.delta
    for symptom in nic.drop_symptoms:
        received = sum((p for p in symptom.packets_rx if p is not None and p >= 0), 0.0)
        if symptom.unit == "packets" and received:
            return round(received)
    return None


def under_floor(nic: VnicFacts, drops: int, seconds: float | None, t: dict[str, float]) -> str | None:
    """The noise floor on the port's frames (esxdiag.rules.floor)."""
    return floor_words(drops, seconds, frames_received(nic), t)


def unexplained_rising(nic: VnicFacts, ledger: DropLedger | None, t: dict[str, float]) -> bool:
    """Port drops that no counter read explains, above the drop threshold and the noise floor."""
    if ledger is None or not ledger.unexplained or ledger.unexplained <= t["ring.drops"]:
        return False
    return under_floor(nic, ledger.unexplained, ledger.seconds, t) is None


def signals(nic: VnicFacts, t: dict[str, float]) -> RingSignals:
    full_min, drop_min = t["ring.full_events"], t["ring.drops"]

    def above(c: CounterWindow | None, minimum: float) -> bool:
        return c is not None and c.delta is not None and c.delta > minimum

    drops = _best_drops(nic)
    ring1_rising = above(nic.ring1_full, full_min)
    ring2_rising = above(nic.ring2_full, full_min)
    drops_rising = above(drops, drop_min)
    port_delta = drops.delta if drops is not None and drops is nic.dropped_rx else None
    if drops_rising and port_delta is not None and port_delta - attributed(nic) <= drop_min:
        drops_rising = False  # every port drop has another cause
    ring1_unknown = nic.ring1_full is None or not nic.ring1_full.complete
    if drops_rising and not ring2_rising and ring1_unknown:
        ring1_rising = True  # no windowed ring-full counter: out-of-buffer drops land on ring 1 first
    windowed = any(c.complete for c in (nic.ring1_full, nic.ring2_full, drops) if c is not None)
    floor = None
    if drops_rising and drops is not None and drops.delta is not None:
        floor = under_floor(nic, drops.delta, drops.seconds, t)
        if floor is not None:  # a handful of drops: no ring change is worth its guest memory
            ring1_rising = ring2_rising = drops_rising = False
    return RingSignals(nic.ring1_full, nic.ring2_full, drops, ring1_rising, ring2_rising, drops_rising, windowed,
                       floor)


def decide(vm: VmFacts, nic: VnicFacts, t: dict[str, float]) -> RingVerdict:
    """The ring verdict, with every other cause the vNIC's counters show named beside it (``causes``) and the
    drop ledger: what each counter explains of the port's drops, and what none does."""
    others = rx_causes(vm, nic, t)
    ledger = rx_ledger(nic) if nic.type in (None, "vmxnet3") or nic.dropped_rx is not None else None
    verdict = dataclasses.replace(_decide(vm, nic, t, others, ledger), ledger=ledger)
    if ledger is not None and unexplained_rising(nic, ledger, t) and "not explained by any counter" not in verdict.summary:
        verdict = dataclasses.replace(verdict, summary=verdict.summary + f" {ledger.unexplained:,} of "
                                      f"{ledger.port_drops:,} port drops are not explained by any counter read.")
    if verdict.verdict in (Verdict.NOT_NEEDED, Verdict.PAST_EXHAUSTION_ONLY) and tx_rising(nic, t):
        verdict = dataclasses.replace(verdict, summary=rx_fine_tx_dropping(verdict.summary, verdict.verdict))
    if not others:
        return verdict
    ids = tuple(dict.fromkeys(c.id for c in others))
    if verdict.verdict in (Verdict.DROPS_ELSEWHERE, Verdict.MEMORY_FIRST):
        return dataclasses.replace(verdict, causes=ids)
    also = " Also on this vNIC's path: " + "; ".join(c.words for c in others) + " (see those findings)."
    return dataclasses.replace(verdict, summary=verdict.summary + also, causes=ids)


def _decide(vm: VmFacts, nic: VnicFacts, t: dict[str, float], others: list[Cause],
            ledger: DropLedger | None) -> RingVerdict:
    if nic.type not in (None, "vmxnet3"):
        return _not_vmxnet3(vm, nic, t)
    sig = signals(nic, t)
    evidence = tuple(_counter_evidence(sig, t)) + tuple(s.evidence() for s in nic.drop_symptoms)
    cpu = cpu_state(vm.cpu, effective_limit_mhz(vm), t, vm.cpu_whole)
    port_drops = any(s.rising for s in nic.drop_symptoms)
    if not sig.windowed and nic.drop_symptoms:
        return _from_port_drops(vm, nic, sig, evidence, cpu, port_drops, t)
    if not sig.counters():
        return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE, "No ring or drop counter of this vNIC could be read (see "
                           "missing, and the coverage section for captures that failed or could not be parsed).",
                           missing=nic.missing or ("vsish rxSummary / ethtool -S",))
    if not sig.windowed:
        totals = ", ".join(f"{c.what} {c.total:,} {c.since_words}" for c in sig.counters())
        moved = " The VM moved inside the window: readings of two ports are not subtracted." if vm.moves else ""
        return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE,
                           f"Only one reading of the counters ({totals}): "
                           f"two readings over a window are needed to tell whether exhaustion is happening now.{moved}",
                           evidence=evidence, missing=nic.missing)
    if not sig.rising:
        if others:
            return _elsewhere(nic, evidence, others)
        residue = unexplained_rising(nic, ledger, t)
        if port_drops or residue:  # the port drops while the rings keep up: the guest is not draining them
            first = _cpu_first(vm, cpu, evidence, list(nic.missing), t, "The vSwitch port drops frames")
            if first is not None:
                return first
        if residue and ledger is not None:
            return _unexplained(vm, nic, ledger, evidence, cpu)
        if sig.floor is not None:
            return _under_floor(sig, evidence, nic.missing)
        return _flat(sig.counters(), evidence, nic.missing)
    missing = list(nic.missing)
    first = _cpu_first(vm, cpu, evidence, missing, t, "Drops are rising")
    if first is not None:
        return first
    page_absent = next((c for c in others if c.id == "page-absent"), None)
    if cpu.swap is not None or page_absent is not None:
        return _memory_first(vm, cpu, page_absent, evidence, missing, t)
    if cpu.saturated is not None:
        return _saturated(vm, nic, cpu, cpu.saturated, evidence, missing)
    if cpu.straddled:  # contention judged on the conservative side: no ring raise it might not justify
        return _cpu_undecided(vm, cpu, evidence, missing)
    return change_ring(vm, nic, sig, evidence, cpu, missing, t)


def _elsewhere(nic: VnicFacts, evidence, others: list[Cause]) -> RingVerdict:
    """The ring counters are flat while another cause's counters rose: name it; a ring change would not help."""
    return RingVerdict(
        Verdict.DROPS_ELSEWHERE,
        "Frames are lost, but not by the rx ring: " + "; ".join(c.words for c in others) + ". The ring counters "
        "stayed flat in the window (no ring-full events or out-of-buffer drops), so a bigger ring would change "
        "nothing.",
        evidence=tuple(e for c in others for e in c.evidence) + evidence,
        remediation=tuple(r for c in others for r in c.remediation), missing=nic.missing)


def _unexplained(vm: VmFacts, nic: VnicFacts, ledger: DropLedger, evidence, cpu: CpuState) -> RingVerdict:
    """The port drops frames that no counter read accounts for, while the ring counters stay flat: never an
    all-clear, and no ring change either; say what to read next."""
    collect = ["the uplink that carries the vNIC and its counters (esxcli network vm port list -w WORLD: Team "
               "Uplink; esxcli network nic stats get -n vmnicN at both ends of the window)",
               "every rxSummary label at both ends of the window (vsish -e get .../vmxnet3/rxSummary): a drop reason "
               "this host prints may not have been captured",
               "a vm-support bundle for VMware support if the drops go on"]
    port = f" (counted by {ledger.port_counter})" if ledger.port_counter else ""
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"The vSwitch port dropped {ledger.port_drops:,} received frames{port}, but the ring counters stayed "
        f"flat and {ledger.unexplained:,} of {ledger.port_drops:,} drops are not explained by any counter read: "
        f"not ring exhaustion, and no cause can be named from this bundle (CPU is {cpu.words}). To find it, "
        "collect: " + "; ".join(collect) + ".",
        evidence=evidence + cpu.healthy, evidence_against=cpu.undecided,
        missing=tuple(nic.missing) + (f"a counter that explains {ledger.unexplained:,} port drops",),
        basis="port drops no counter explains")


def _under_floor(sig: RingSignals, evidence, missing) -> RingVerdict:
    return RingVerdict(
        Verdict.NOT_NEEDED,
        f"Frames were dropped in the window, but only a handful: {sig.floor}. That is not ring exhaustion worth "
        "guest memory: keep the rings, and sample again at peak load if the drops matter.",
        evidence=evidence, missing=tuple(missing), basis="drops under the noise floor")


def _memory_first(vm: VmFacts, cpu: CpuState, page_absent, evidence, missing: list[str], t) -> RingVerdict:
    why = []
    if cpu.swap is not None:
        why.append(f"%SWPWT {cpu.swap.qualifier}{cpu.swap.worst_avg:.1f}% per vCPU, over {t['cpu.swap_wait_pct']:g}%")
    if page_absent is not None:
        why.append(page_absent.words)
    return RingVerdict(
        Verdict.MEMORY_FIRST,
        f"Drops are rising while the host swaps this VM ({'; '.join(why)}): its vCPUs wait for pages and cannot "
        "refill the rx ring. Relieve host memory pressure first; a bigger ring costs guest memory this VM does not "
        "have and would only delay the drops.",
        evidence=evidence + cpu.caveats + (page_absent.evidence if page_absent else ()),
        evidence_against=cpu.undecided, remediation=(fix.vsphere_relieve_memory(vm.name),), missing=tuple(missing))


def _saturated(vm: VmFacts, nic: VnicFacts, cpu: CpuState, run: WindowStat, evidence,
               missing: list[str]) -> RingVerdict:
    return RingVerdict(
        Verdict.GUEST_SATURATED,
        f"Drops are rising while every vCPU is busy (least busy vCPU %RUN {run.worst_avg:.1f}%) and ready time is "
        "low: the guest itself has no CPU left to refill the rx ring. Give it more vCPUs (each brings an rx queue) "
        "or less receive work; a bigger ring only absorbs bursts.",
        evidence=evidence + cpu.caveats + cpu.healthy, evidence_against=cpu.undecided,
        remediation=(fix.vsphere_add_vcpus(vm.name, vm.vcpus, nic.windows_adapter if vm.guest_os == "windows"
                                           else nic.guest_interface, vm.guest_os,
                                           title=f"Give {vm.name} more vCPUs (and rx queues)"),),
        missing=tuple(missing))


def _cpu_undecided(vm: VmFacts, cpu: CpuState, evidence, missing: list[str]) -> RingVerdict:
    figures = ", ".join(f"{s.what.split(' ')[0]} {s.range_words()}" for s in cpu.straddled)
    missing.append("the VM's vCPU count (vCenter inventory, nproc / the CPU count in the guest, or esxtop with "
                   "Vcpu columns): per-vCPU CPU figures are only bounds without it")
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"Drops are rising, but whether CPU contention causes them cannot be told: per vCPU {figures} "
        f"({vm.cpu.normalisation if vm.cpu else 'bounds'}). Collect the vCPU count and analyze again before "
        "raising rings: a bigger ring on a CPU-starved VM only delays the drops.",
        evidence=evidence + cpu.healthy, evidence_against=cpu.undecided, missing=tuple(missing))


def _flat(counters: list[CounterWindow], evidence: tuple[Evidence, ...], missing) -> RingVerdict:
    past = [c for c in counters if c.peak]
    if past:
        resets = "; ".join(f"{c.what}: {c.reset_words()}" for c in past if c.reset)
        return RingVerdict(
            Verdict.PAST_EXHAUSTION_ONLY,
            "Counters show exhaustion since the vNIC was initialised but none in this window"
            + (f" ({resets}; the reading before the reset proves it happened)" if resets else "")
            + ": sample again at peak load before changing rings.", evidence=evidence, missing=tuple(missing))
    return RingVerdict(Verdict.NOT_NEEDED, "No ring-full events or out-of-buffer drops in the window: keep the "
                       "default rings (bigger rings cost guest memory).", evidence=evidence, missing=tuple(missing))


def _cpu_first(vm: VmFacts, cpu: CpuState, evidence, missing: list[str], t, what: str) -> RingVerdict | None:
    if not cpu.measured:
        missing.append("CPU figures in the window: contention and limits could not be ruled out")
    limited = cpu.limited
    if cpu.throttled:
        limit_ev = (Evidence("CPU limit configured", vm.cpu_limit_mhz, "MHz", None, None, vm.inventory_file,
                             "cpu_allocation.limit_mhz"),) if vm.cpu_limit_mhz is not None else ()
        shown = limited is not None and limited.judge(t["cpu.max_limited_pct"]) == "above"
        place = limit_place(vm)  # the VM's own limit, a pool's, or steps to find which
        return RingVerdict(
            Verdict.CPU_LIMIT_FIRST,
            f"{what} while a CPU limit "
            + (f"throttles the VM ({cpu.figure('%MLMTD', limited)}" if shown and limited else
               "is set that no %MLMTD figure of the window rules out (limit set")
            + (f", limit {vm.cpu_limit_mhz:,} MHz)" if vm.cpu_limit_mhz else ")")
            + (": remove the limit first" if vm.cpu_limit_mhz is not None and not place.evidence else
               f": {place.words}. Remove that limit first") + "; a bigger ring would only delay the drops.",
            evidence=evidence + cpu.over(t) + limit_ev + place.evidence,
            remediation=place.remediation, missing=tuple(missing))
    if cpu.contended:
        costop_high = cpu.costop is not None and cpu.costop.judge(t["cpu.costop_pct"]) == "above"
        return RingVerdict(
            Verdict.CPU_CONTENTION_FIRST,
            f"{what} while vCPUs wait to be scheduled ("
            + ", ".join(cpu.figure(name, stat) for name, stat, th in
                        (("%RDY", cpu.ready, t["cpu.ready_pct_critical"]), ("%CSTP", cpu.costop, t["cpu.costop_pct"]))
                        if stat and stat.judge(th) == "above")
            + "): relieve CPU contention first.",
            evidence=evidence + cpu.over(t),
            remediation=(fix.vsphere_relieve_contention(vm.name, costop_high, vm.vcpus),), missing=tuple(missing))
    return None


def _from_port_drops(vm, nic, sig, evidence, cpu: CpuState, rising: bool, t) -> RingVerdict:
    """Only vSwitch port drops over the window (esxtop %DRPRX, vCenter net.droppedRx): no ring counter
    read at both ends. They are the symptom; the ring counters are the proof."""
    seen = ", ".join(s.what.split(" (")[0] for s in nic.drop_symptoms)
    collect = _what_to_collect(vm, nic, cpu.measured)
    missing = list(nic.missing) + collect
    past = [c for c in sig.counters() if c.peak]
    if not rising and past:
        return _flat(past, evidence, missing)
    vcenter = _vcenter_only(nic)
    if vcenter is not None:
        return _from_vcenter(vm, nic, vcenter, evidence, cpu, missing, collect, t)
    if not rising:
        return RingVerdict(
            Verdict.NOT_NEEDED, f"No frames dropped at the vSwitch port in the window ({seen} stayed 0): the rx rings "
            "kept up; keep the default rings. Ring counters were not read over the window.",
            evidence=evidence, missing=tuple(missing))
    first = _cpu_first(vm, cpu, evidence, missing, t, f"The vSwitch port drops frames ({seen})")
    if first is not None:
        return first
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"Frames are being dropped at the vSwitch port ({seen}) and CPU is {cpu.words}: RX ring exhaustion is "
        "likely (Broadcom KB 312565: receive buffers exhausted, or a CPU-starved guest), but only ring counters "
        "prove it and say which ring. To confirm, collect: " + "; ".join(collect) + ".",
        evidence=evidence + cpu.healthy, evidence_against=cpu.undecided, missing=tuple(missing))


def _vcenter_only(nic: VnicFacts) -> DropSymptom | None:
    """vCenter's net.droppedRx when it is the only drop evidence (no esxtop %DRPRX, no ring counter)."""
    if nic.drop_symptoms and all(s.unit == "packets" for s in nic.drop_symptoms):
        return nic.drop_symptoms[0]
    return None


def span_words(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 and seconds % 60 == 0 else f"{seconds:g} s"


def _from_vcenter(vm, nic: VnicFacts, drops: DropSymptom, evidence, cpu: CpuState, missing: list[str],
                  collect: list[str], t) -> RingVerdict:
    """A verdict resting on vCenter's counters alone says so, with its sample count and window; too
    few realtime samples are no answer (docs/diagnosis.md: vCenter sees the symptom only)."""
    samples = len(drops.present)
    span = span_words(samples * (drops.interval_s or 20))
    dropping = sum(v > 0 for v in drops.present)
    if samples < t["vcenter.min_samples"]:
        return RingVerdict(
            Verdict.INSUFFICIENT_EVIDENCE,
            f"vCenter returned {samples} realtime sample{'s' * (samples != 1)} of net.droppedRx ({span}): "
            f"fewer than {t['vcenter.min_samples']:g} cannot tell steady drops from a burst. Read a longer "
            "window (--window 60 or more: three 20 s samples), or sample the host's ring counters over SSH.",
            evidence=evidence, missing=tuple(missing), basis=f"only {samples} vCenter sample"
            f"{'s' * (samples != 1)} ({span})")
    if not dropping:
        return RingVerdict(
            Verdict.NOT_NEEDED,
            f"vCenter's net.droppedRx stayed 0 in {samples} realtime samples ({span}): no frames dropped at the "
            "vSwitch port, so no ring change is indicated. vCenter does not see the rings themselves: host SSH "
            "(vsish rxSummary at both ends of a window) would prove it.",
            evidence=evidence, missing=tuple(missing), basis=f"no drops seen by vCenter in {samples} samples ({span})")
    floor = under_floor(nic, round(sum(drops.present)), samples * (drops.interval_s or 20), t)
    if floor is not None:
        return RingVerdict(
            Verdict.NOT_NEEDED, f"vCenter's net.droppedRx saw only a handful of drops in {samples} realtime samples ({span}): "
            f"{floor}. That is not ring exhaustion worth guest memory: keep the rings.",
            evidence=evidence, missing=tuple(missing), basis="drops under the noise floor (vCenter counters only)")
    basis = f"vCenter counters only: drops in {dropping} of {samples} samples ({span})"
    first = _cpu_first(vm, cpu, evidence, missing, t, f"vCenter's net.droppedRx saw frames dropped at the vSwitch "
                                                       f"port in {dropping} of {samples} samples ({span})")
    if first is not None:
        return dataclasses.replace(first, basis=basis)
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"vCenter's net.droppedRx saw frames dropped at the vSwitch port in {dropping} of {samples} samples "
        f"({span}) and CPU is "
        f"{cpu.words}: RX ring exhaustion is likely (Broadcom KB 312565: receive buffers exhausted, or a "
        "CPU-starved guest), but vCenter does not see the rings: only ring counters prove it and say which "
        "ring. To confirm, collect: " + "; ".join(collect) + ".",
        evidence=evidence + cpu.healthy, evidence_against=cpu.undecided, missing=tuple(missing),
        basis=f"drops seen by vCenter in {dropping} of {samples} samples ({span}): likely, not proven")


FAILED_ADVICE = {  # by the kind of target that failed: the flag that reaches it, and the one that leaves it out
    "esxi": "the ESXi host: --host-ssh USER@HOST[:PORT], or --no-host-ssh",
    "linux": "the guest: --guest-ssh USER@HOST[:PORT] (USER@:PORT keeps the Tools address), or --no-guest",
    "windows": "the guest: --guest-ssh USER@HOST[:PORT] (USER@:PORT keeps the Tools address), or --no-guest",
    "vcenter": "vCenter: --vcenter URL, --user, and --insecure or --thumbprint for its certificate",
}


def failed_run(verdict: RingVerdict, failures: list[str], held: list[str],
               kinds: tuple[str, ...] = ()) -> RingVerdict:
    """A run that failed (README exit code 3) gives no verdict: what failed, and what the partial
    bundle holds; the evidence that was read stays listed. ``kinds``: the kinds of the targets that
    failed (esxi, linux, windows, vcenter): the advice is for those only."""
    advice = list(dict.fromkeys(FAILED_ADVICE[k] for k in kinds if k in FAILED_ADVICE)) or \
        [FAILED_ADVICE["esxi"], FAILED_ADVICE["linux"]]
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"The run failed ({'; '.join(failures)}): no verdict from a failed run. The partial bundle holds "
        + (", ".join(held) if held else "no capture") + ". Fix what failed and run again, or leave that part "
        f"out on purpose (for {'; for '.join(advice)}); an unknown host key: --known-hosts, or "
        "--accept-new-host-keys after checking its fingerprint.",
        evidence=verdict.evidence, missing=tuple(failures) + verdict.missing, basis="the run failed")


def _what_to_collect(vm: VmFacts, nic: VnicFacts, cpu_measured: bool) -> list[str]:
    """Commands in prose are still pasted: names from the host or guest are quoted like any shown command."""
    where = (f"/net/portsets/{nic.portset}/ports/{nic.port}" if nic.port and nic.portset
             else "/net/portsets/<portset>/ports/<port>")
    out = [f"on the ESXi host, vsish -e get {fix.sh_arg(where + '/vmxnet3/rxSummary', '')} at the start and the "
           "end of a window" + ("" if nic.port else f" (net-stats -l gives the portset and port of MAC "
                                                    f"{fix.mac_text(nic.mac)})")]
    iface = fix.sh_arg(nic.guest_interface, "iface")
    if vm.guest_os == "windows":
        out.append("or in the guest, Get-NetAdapterStatistics twice (ReceivedDiscardedPackets) and "
                   "Get-NetAdapterAdvancedProperty (Rx Ring #1 Size)")
    else:
        out.append(f"or in the guest, ethtool -S {iface} twice (pkts rx OOB) and ethtool -g {iface} (ring size)")
    if not cpu_measured:
        out.append("and esxtop -b through the window (per-vCPU %RDY / %CSTP / %MLMTD)")
    return out


def _not_vmxnet3(vm: VmFacts, nic: VnicFacts, t: dict[str, float]) -> RingVerdict:
    """No vmxnet3 rings, but the port still counts the adapter's drops (clientStats, esxtop, vCenter). A NIC
    outside the vSwitch (SR-IOV VF, DirectPath, guest-only) has no port either: its driver's counters decide."""
    if nic.attachment is not None or nic.type not in EMULATED:
        verdict = decide_driver_nic(vm, nic, t)
        if verdict.verdict != Verdict.DRIVER_DROPS or not buffers_rising(nic, t):
            return verdict
        # the guest did not post buffers fast enough: a throttled or waiting vCPU first, as for a vmxnet3 ring
        first = _cpu_first(vm, cpu_state(vm.cpu, effective_limit_mhz(vm), t), verdict.evidence, list(verdict.missing), t,
                           verdict.summary.split(":")[0] + " runs out of receive buffers")
        return first or verdict
    emulated = nic.type in EMULATED
    port = nic.dropped_rx
    rising = port is not None and port.delta is not None and port.delta > t["ring.drops"]
    symptoms = [s for s in nic.drop_symptoms if s.rising]
    drops = ""
    if rising and port is not None:
        rate = f", {port.rate_per_s:,.1f}/s" if port.rate_per_s is not None else ""
        drops = f" Its port dropped {port.delta:,} received frames in the window (droppedRx{rate})."
    elif symptoms:
        drops = " Its port dropped received frames in the window (" + ", ".join(
            s.what.split(" (")[0] for s in symptoms) + ")."
    elif port is not None and port.delta is not None:
        drops = " Its port dropped no received frames in the window."
    guest = rising_drops(nic, t)  # the emulated device's guest driver counts its own (e1000 rx_no_buffer_count...)
    if guest:
        drops += f" In the guest, its {nic.driver} driver counts " + "; ".join(d.words() for d in guest) + "."
    evidence = ((port.evidence(t["ring.drops"]),) if port is not None else ()) + tuple(s.evidence() for s in symptoms)
    evidence += tuple(d.window.evidence(t["ring.drops"]) for d in guest)
    if port is not None and port.complete and not rising and not symptoms and not guest:
        # read over the window and nothing dropped: no drop to fix (the emulated-nic finding still advises vmxnet3)
        return RingVerdict(
            Verdict.NOT_NEEDED, f"{nic.type} is not a vmxnet3 adapter (it has no vmxnet3 rings), and its port dropped no "
            "received frames in the window: there is no drop to fix. For a network-heavy VM vmxnet3 is still the "
            "better adapter (see the emulated-adapter finding).", evidence=evidence)
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"{nic.type} is not a vmxnet3 adapter: vmxnet3 ring counters do not exist for it.{drops}"
        + (" Change it to vmxnet3 (see the remediation: shown, never run): a paravirtual adapter with "
           "rings up to 4096, multiple rx queues and less host CPU per packet." if emulated else ""),
        evidence=evidence, missing=(f"vmxnet3 ring counters ({nic.type} vNIC)",),
        remediation=(fix.replace_emulated_nic(vm.name, nic.label, nic.mac, nic.type, nic.network,
                                              vm.guest_os),) if emulated else ())


def _counter_evidence(sig: RingSignals, t: dict[str, float]):
    for c, threshold in ((sig.ring1, t["ring.full_events"]), (sig.ring2, t["ring.full_events"]),
                         (sig.drops, t["ring.drops"])):
        if c is not None:
            yield c.evidence(threshold)
