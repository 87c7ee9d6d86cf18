"""The per-vNIC RX ring verdict (shared/domain.md section 4): weigh ring-full and drop deltas
over the window against CPU (limit, contention), queue layout and ring sizes, and say which
single change to make first, with the numbers and the evidence against it."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.facts import CounterWindow, VmFacts, VnicFacts
from esxdiag.result import Evidence, RingVerdict
from esxdiag.rules import remediation as fix
from esxdiag.rules.cpustats import window_stat


@dataclass(frozen=True)
class RingSignals:
    ring1: CounterWindow | None
    ring2: CounterWindow | None
    drops: CounterWindow | None  # the best drop counter available
    ring1_rising: bool
    ring2_rising: bool
    drops_rising: bool
    windowed: bool  # at least one counter was read at both ends

    @property
    def rising(self) -> bool:
        return self.ring1_rising or self.ring2_rising or self.drops_rising

    def counters(self) -> list[CounterWindow]:
        return [c for c in (self.ring1, self.ring2, self.drops) if c is not None]


def _best_drops(nic: VnicFacts) -> CounterWindow | None:
    candidates = [nic.host_out_of_buffers, nic.dropped_rx, nic.guest_oob, nic.guest_discards]
    return next((c for c in candidates if c is not None and c.complete), None) or \
        next((c for c in candidates if c is not None), None)


def signals(nic: VnicFacts, t: dict[str, float]) -> RingSignals:
    full_min, drop_min = t["ring.full_events"], t["ring.drops"]

    def above(c: CounterWindow | None, minimum: float) -> bool:
        return c is not None and c.delta is not None and c.delta > minimum

    drops = _best_drops(nic)
    ring1_rising = above(nic.ring1_full, full_min)
    ring2_rising = above(nic.ring2_full, full_min)
    drops_rising = above(drops, drop_min)
    ring1_unknown = nic.ring1_full is None or not nic.ring1_full.complete
    if drops_rising and not ring2_rising and ring1_unknown:
        ring1_rising = True  # no windowed ring-full counter: out-of-buffer drops land on ring 1 first
    windowed = any(c.complete for c in (nic.ring1_full, nic.ring2_full, drops) if c is not None)
    return RingSignals(nic.ring1_full, nic.ring2_full, drops, ring1_rising, ring2_rising, drops_rising, windowed)


def decide(vm: VmFacts, nic: VnicFacts, t: dict[str, float]) -> RingVerdict:
    if nic.type not in (None, "vmxnet3"):
        return RingVerdict("insufficient-evidence",
                           f"{nic.type} is not a vmxnet3 adapter: vmxnet3 ring counters do not exist for it "
                           "(see the emulated-adapter finding)", missing=(f"vmxnet3 ring counters ({nic.type} vNIC)",))
    sig = signals(nic, t)
    evidence = tuple(_counter_evidence(sig, t))
    if not sig.counters():
        return RingVerdict("insufficient-evidence", "No ring or drop counters were collected for this vNIC.",
                           missing=nic.missing or ("vsish rxSummary / ethtool -S",))
    if not sig.windowed:
        totals = ", ".join(f"{c.what} {c.total}" for c in sig.counters())
        return RingVerdict("insufficient-evidence",
                           f"Only one reading of the counters ({totals} since the vNIC was initialised): "
                           "two readings over a window are needed to tell whether exhaustion is happening now.",
                           evidence=evidence, missing=nic.missing)
    if not sig.rising:
        past = [c for c in sig.counters() if c.peak]
        if past:
            resets = "; ".join(f"{c.what}: {c.reset_words()}" for c in past if c.reset)
            return RingVerdict(
                "past-exhaustion-only",
                "Counters show exhaustion since the vNIC was initialised but none in this window"
                + (f" ({resets}; the reading before the reset proves it happened)" if resets else "")
                + ": sample again at peak load before changing rings.", evidence=evidence, missing=nic.missing)
        return RingVerdict("not-needed", "No ring-full events or out-of-buffer drops in the window: keep the "
                           "default rings (bigger rings cost guest memory).", evidence=evidence, missing=nic.missing)
    return _rising_verdict(vm, nic, sig, evidence, t)


def _rising_verdict(vm, nic, sig, evidence, t) -> RingVerdict:
    limited, ready, costop = (window_stat(vm.cpu, f) for f in ("max_limited_pct", "ready_pct", "costop_pct"))
    cpu_ev = tuple(s.evidence(th) for s, th in ((ready, t["cpu.ready_pct_critical"]), (costop, t["cpu.costop_pct"]),
                                                 (limited, t["cpu.max_limited_pct"])) if s is not None)
    limit_ev = (Evidence("CPU limit configured", vm.cpu_limit_mhz, "MHz", None, None, vm.inventory_file,
                         "cpu_allocation.limit_mhz"),) if vm.cpu_limit_mhz is not None else ()
    missing = list(nic.missing)
    if vm.cpu is None:
        missing.append("CPU figures in the window: contention and limits could not be ruled out")
    throttled = limited is not None and limited.worst_avg > t["cpu.max_limited_pct"]
    if throttled or (vm.cpu_limit_mhz is not None and limited is None):
        return RingVerdict(
            "cpu-limit-first",
            "Drops are rising while a CPU limit throttles the VM"
            + (f" (%MLMTD {limited.worst_avg:.1f}%" if limited else " (limit set")
            + (f", limit {vm.cpu_limit_mhz} MHz)" if vm.cpu_limit_mhz else ")")
            + ": remove the limit first; a bigger ring would only delay the drops.",
            evidence=evidence + cpu_ev + limit_ev,
            remediation=(fix.vsphere_remove_limit(vm.name, vm.cpu_limit_mhz),), missing=tuple(missing))
    contended = (ready is not None and ready.worst_avg > t["cpu.ready_pct_critical"]) or \
        (costop is not None and costop.worst_avg > t["cpu.costop_pct"])
    if contended:
        return RingVerdict(
            "cpu-contention-first",
            "Drops are rising while vCPUs wait to be scheduled ("
            + ", ".join(f"{name} {stat.worst_avg:.1f}%" for name, stat in (("%RDY", ready), ("%CSTP", costop)) if stat)
            + "): relieve CPU contention first.",
            evidence=evidence + cpu_ev,
            remediation=(fix.vsphere_relieve_contention(vm.name, bool(costop and costop.worst_avg > t["cpu.costop_pct"])),),
            missing=tuple(missing))
    cpu_ok = tuple(s.evidence(th, "<=") for s, th in ((ready, t["cpu.ready_pct_critical"]),
                                                      (costop, t["cpu.costop_pct"]),
                                                      (limited, t["cpu.max_limited_pct"])) if s is not None)
    against = cpu_ev_warn(ready, t)
    if vm.cpu is None:
        against += (Evidence("CPU was not measured in the window: contention or a limit cannot be ruled out",
                             None),)
    if vm.guest_os == "windows" and nic.rx_queues == 1 and (vm.vcpus or 0) > 1 and nic.rss_enabled is not True:
        q = Evidence("rx queues in use", 1, "queues", vm.vcpus, "< vCPUs", nic.rx_queues_source, "rxqueues")
        return RingVerdict(
            "enable-rss",
            f"Drops are rising on a single rx queue while the VM has {vm.vcpus} vCPUs and RSS is "
            f"{'off' if nic.rss_enabled is False else 'not confirmed on'}: enable RSS so receive work spreads, "
            "then raise Rx Ring #1 if drops continue.",
            evidence=evidence + (q,) + cpu_ok, evidence_against=against,
            remediation=(fix.windows_enable_rss(nic.windows_adapter, vm.vcpus),
                         fix.windows_raise_ring(nic.windows_adapter, 1, nic.ring1_size, int(t["ring.max_size"]),
                                                1, t["ring.memory_kb_per_ring1_entry"])),
            missing=tuple(missing))
    for ring, rising, size, ring_max in ((1, sig.ring1_rising, nic.ring1_size, nic.ring1_max),
                                         (2, sig.ring2_rising, nic.ring2_size, nic.ring2_max)):
        if not rising:
            continue
        size_ev = Evidence(f"ring {ring} size", size, "entries per queue", ring_max, "<", nic.ring_size_source,
                           f"ring #{ring} size")
        if size is not None and size >= ring_max:
            return RingVerdict(
                "at-max", f"Ring {ring} is already at its maximum ({ring_max}) and still fills: add vCPUs/queues, "
                "enable RSS, or reduce contention.", evidence=evidence + (size_ev,) + cpu_ok,
                evidence_against=against,
                remediation=(fix.linux_more_queues(nic.guest_interface, vm.vcpus) if vm.guest_os != "windows"
                             else fix.windows_enable_rss(nic.windows_adapter, vm.vcpus),), missing=tuple(missing))
        target = int(t["ring.max_size"])
        kb = t["ring.memory_kb_per_ring1_entry" if ring == 1 else "ring.memory_kb_per_ring2_entry"]
        remedies = []
        if vm.guest_os in (None, "linux"):
            remedies.append(fix.linux_raise_ring(nic.guest_interface, nic.mac, ring, size, target, nic.rx_queues,
                                                 kb, nic.mtu))
        if vm.guest_os in (None, "windows"):
            remedies.append(fix.windows_raise_ring(nic.windows_adapter, ring, size, target, nic.rx_queues, kb))
        full = sig.ring1 if ring == 1 else sig.ring2
        why = (f"ring {ring} was full {full.delta} times in the window" if full is not None and full.delta
               else "out-of-buffer drops are rising")
        extra = ""
        if ring == 2 and nic.lro_packets is not None and (nic.lro_packets.delta or 0) > 0:
            extra = " Ring 2 fills with LRO aggregates here (LRO packets are rising), not only jumbo frames."
        if ring == 1 and sig.ring2_rising and sig.ring2 is not None:
            extra = (f" Ring 2 also filled {sig.ring2.delta} times (jumbo frames / LRO): raise it too if it keeps "
                     "filling after ring 1 is raised.")
        if size is None:
            missing.append(f"current ring {ring} size (vsish rxqueues status / ethtool -g)")
        return RingVerdict(
            f"raise-ring{ring}",
            f"Raise RX ring {ring}: {why}, "
            + (f"the ring is {size} of {ring_max}" if size is not None else f"the ring size is unknown (max {ring_max})")
            + f" and CPU is {'healthy' if cpu_ok else 'not measured'}.{extra}",
            evidence=evidence + (size_ev,) + cpu_ok, evidence_against=against,
            remediation=tuple(remedies), missing=tuple(missing))
    return RingVerdict("insufficient-evidence", "Drops are rising but no ring-full counter says which ring.",
                       evidence=evidence, missing=tuple(missing))


def cpu_ev_warn(ready, t) -> tuple[Evidence, ...]:
    """%RDY in the 5-10 % band does not block a ring raise, but it is worth showing against it."""
    if ready is not None and t["cpu.ready_pct_warning"] < ready.worst_avg <= t["cpu.ready_pct_critical"]:
        return (ready.evidence(t["cpu.ready_pct_warning"], ">"),)
    return ()


def _counter_evidence(sig: RingSignals, t: dict[str, float]):
    for c, threshold in ((sig.ring1, t["ring.full_events"]), (sig.ring2, t["ring.full_events"]),
                         (sig.drops, t["ring.drops"])):
        if c is not None:
            yield c.evidence(threshold)
