"""The ring verdicts once drops are rising and CPU does not explain them (docs/diagnosis.md
section 5): enable RSS (Windows, one rx queue), at-max (spread receive work instead), or raise
ring 1 / ring 2 — each with only the steps that would change something."""

from __future__ import annotations

from esxdiag.result import Evidence, Remediation, RingVerdict
from esxdiag.rules import remediation as fix
from esxdiag.join.device import runs_as
from esxdiag.rules.causes import hot_queues
from esxdiag.rules.cpustats import CpuState
from esxdiag.vocabulary import Verdict

LOW_LATENCY = ("Latency sensitivity is high on this VM: a small ring may be deliberate (VMware's vSphere 8 "
               "low-latency guidance sets rx 512 to keep buffering, and so latency, down); weigh the drops "
               "against latency before raising it.")


def change_ring(vm, nic, sig, evidence, cpu: CpuState, missing: list[str], t) -> RingVerdict:
    against = _ready_investigate_band(cpu, t) + cpu.undecided + cpu.caveats
    if vm.guest_os == "windows" and nic.rx_queues == 1 and (vm.vcpus or 0) > 1 and nic.rss_enabled is not True:
        q = Evidence("rx queues in use", 1, "queues", vm.vcpus, "< vCPUs", nic.rx_queues_source, "rxqueues")
        raise_ring: tuple[Remediation, ...] = ()
        if _windows_room(nic, 1, int(t["ring.max_size"])):
            raise_ring = (fix.windows_raise_ring(nic.windows_adapter, 1, nic.ring1_size, int(t["ring.max_size"]), 1,
                                           t["ring.memory_kb_per_ring1_entry"], nic.small_rx_buffers),)
        return RingVerdict(
            Verdict.ENABLE_RSS,
            f"Drops are rising on a single rx queue while the VM has {vm.vcpus} vCPUs and RSS is "
            f"{'off' if nic.rss_enabled is False else 'not confirmed on'}: enable RSS so receive work spreads"
            + (", then raise Rx Ring #1 if drops continue." if raise_ring else "."),
            evidence=evidence + (q,) + cpu.healthy, evidence_against=against,
            remediation=(fix.windows_enable_rss(nic.windows_adapter, vm.vcpus),) + raise_ring,
            missing=tuple(missing))
    for ring, rising, size, ring_max in ((1, sig.ring1_rising, nic.ring1_size, nic.ring1_max),
                                         (2, sig.ring2_rising, nic.ring2_size, nic.ring2_max)):
        if not rising:
            continue
        size_ev = Evidence(f"ring {ring} size", size, "entries per queue", ring_max, "<", nic.ring_size_source,
                           f"ring #{ring} size")
        if size is not None and size >= ring_max:
            return _at_max(vm, nic, ring, ring_max, evidence + (size_ev,) + cpu.healthy, against, missing, t)
        return _raise(vm, nic, sig, ring, size, ring_max, size_ev, evidence, cpu, against, missing, t)
    return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE, "Drops are rising but no ring-full counter says which ring.",
                       evidence=evidence, missing=tuple(missing))


def _windows_buffers(nic, ring: int) -> int | None:
    return nic.small_rx_buffers if ring == 1 else nic.large_rx_buffers


def _windows_room(nic, ring: int, ring_target: int) -> bool:
    """A Windows vNIC's ring or the buffer pool it is filled from is below its maximum (unknown counts as
    room: the command then shows what to check)."""
    size = nic.ring1_size if ring == 1 else nic.ring2_size
    buffers = _windows_buffers(nic, ring)
    return size is None or size < ring_target or buffers is None or buffers < fix.WINDOWS_BUFFERS_MAX


def _at_max(vm, nic, ring: int, ring_max: int, evidence, against, missing: list[str], t) -> RingVerdict:
    """The ring is at its device maximum and still fills: on Windows its buffer pool first when that is below
    its maximum (a half-applied change, no vCPU cost); a few hot queues need their flows split or slowed
    (more queues do not split a flow); drops spread over the queues need more queues or vCPUs."""
    head = (f"Ring {ring} is already at its maximum ({ring_max:,}"
            + (f", {nic.device_version} device" if nic.device_version else "") + ") and still fills")
    hot = hot_queues(nic, t)
    hot_words = (f"; {hot.words()} of the drops: a few heavy flows on "
                 + ("one queue" if len(hot.queues) == 1 else "those queues") + ". More queues or vCPUs do not split "
                 "a flow; lower those flows' burst rate, or split them over more connections so RSS can spread "
                 "them") if hot is not None else ""
    if vm.guest_os == "windows" and _windows_room(nic, ring, ring_max):
        buffers = _windows_buffers(nic, ring)
        pool = "Small Rx Buffers" if ring == 1 else "Large Rx Buffers"
        state = (f"is {buffers:,} of {fix.WINDOWS_BUFFERS_MAX:,}" if buffers is not None else
                 "was not read (the driver default is 1,024 for Small, 768 for Large)")
        return RingVerdict(
            Verdict.AT_MAX, f"{head}{hot_words}. But {pool}, the pool ring {ring} is filled from, {state}: the ring was "
            f"raised without its buffers, a half-applied change. Raise {pool} to {fix.WINDOWS_BUFFERS_MAX:,} first "
            "(no vCPU cost); if drops continue, "
            + ("the flows need splitting." if hot is not None else _spread_words(vm, nic)),
            evidence=evidence + ((Evidence(pool, buffers, "buffers", fix.WINDOWS_BUFFERS_MAX, "<",
                                           nic.ring_size_source, "NumRxBuffersSmall" if ring == 1 else
                                           "NumRxBuffersLarge"),) if buffers is not None else ()),
            evidence_against=against, missing=tuple(missing),
            remediation=(fix.windows_raise_ring(nic.windows_adapter, ring, nic.ring1_size if ring == 1 else
                                                nic.ring2_size, ring_max, nic.rx_queues,
                                                t[f"ring.memory_kb_per_ring{ring}_entry"], buffers),))
    if hot is not None:
        return RingVerdict(Verdict.AT_MAX, f"{head}{hot_words}.", evidence=evidence, evidence_against=against,
                           missing=tuple(missing))
    return RingVerdict(Verdict.AT_MAX, f"{head}: " + _spread_words(vm, nic), evidence=evidence, evidence_against=against,
                       remediation=_spread_remedies(vm, nic), missing=tuple(missing))


def _raise(vm, nic, sig, ring, size, ring_max, size_ev, evidence, cpu, against, missing, t) -> RingVerdict:
    # the request: the largest the device takes; what it runs as depends on the device version (v7: powers of
    # two; pre-v7 with jumbo frames: multiples of 96, so 4096 runs as 4032). 4096 is right on both.
    request = int(t["ring.max_size"]) if ring == 1 else min(int(t["ring.max_size"]), ring_max)
    target = runs_as(request, ring, nic.device_version, nic.mtu)
    kb = t["ring.memory_kb_per_ring1_entry" if ring == 1 else "ring.memory_kb_per_ring2_entry"]
    remedies = []
    if vm.guest_os in (None, "linux"):
        remedies.append(fix.linux_raise_ring(nic.guest_interface, nic.mac, ring, size, request, nic.rx_queues,
                                             kb, nic.mtu, runs=target, version=nic.device_version,
                                             settings=nic.ring_settings or ()))
    if vm.guest_os in (None, "windows"):
        remedies.append(fix.windows_raise_ring(nic.windows_adapter, ring, size, request, nic.rx_queues, kb,
                                               _windows_buffers(nic, ring)))
    full = sig.ring1 if ring == 1 else sig.ring2
    drops = sig.drops
    why = (f"ring {ring} was full {full.delta:,} times in the window" if full is not None and full.delta
           else f"{drops.what} rose by {drops.delta:,} in the window" if drops is not None and drops.delta
           else "out-of-buffer drops are rising")
    extra = ""
    if ring == 2 and nic.lro_packets is not None and (nic.lro_packets.delta or 0) > 0:
        extra = " Ring 2 fills with LRO aggregates here (LRO packets are rising), not only jumbo frames."
    if ring == 1 and sig.ring2_rising and sig.ring2 is not None:
        extra = (f" Ring 2 also filled {sig.ring2.delta:,} times (jumbo frames / LRO): raise it too if it keeps "
                 "filling after ring 1 is raised.")
    if vm.latency_sensitivity == "high":
        extra += " " + LOW_LATENCY
        against += (Evidence("VM latency sensitivity", "high", None, None, None, vm.inventory_file,
                             "config.latencySensitivity.level"),)
    if size is None:
        missing.append(f"current ring {ring} size (vsish rxqueues status / ethtool -g)")
    hot = hot_queues(nic, t)
    if hot is not None:
        extra += (f" {hot.words()} of the drops: the raise helps " + ("that queue" if len(hot.queues) == 1 else
                  "those queues") + "; more queues would not split their flows.")
    option = "rx" if ring == 1 else "rx-jumbo"
    persisted = [s for s in nic.ring_settings or () if s.value(option) is not None]
    if persisted and vm.guest_os in (None, "linux"):
        extra += (" The guest already sets this ring at boot (" + "; ".join(
            f"{s.file} line {s.line}: {option} {s.value(option)}" for s in persisted)
            + "): edit that setting, or the next boot undoes the raise.")
    if nic.device_version == "v7":
        extra += (f" This is a vmxnet3 v7 device ({nic.device_version_why}): ring sizes run as powers of two, so "
                  f"ask for {request:,}, not a multiple of 96.")
    return RingVerdict(
        f"raise-ring{ring}",
        f"Raise RX ring {ring} to {target:,}: {why}, "
        + (f"the ring is {size:,} of {ring_max:,}" if size is not None else f"the ring size is unknown (max {ring_max:,})")
        + f" and CPU is {cpu.words}.{extra}",
        evidence=evidence + (size_ev,) + cpu.healthy, evidence_against=against,
        remediation=tuple(remedies), missing=tuple(missing))


def _queues_short(vm, nic) -> bool | None:
    """Fewer rx queues than vCPUs (more can be opened), or None when either count is unknown."""
    if nic.rx_queues is None or not vm.vcpus:
        return None
    return nic.rx_queues < vm.vcpus


def _spread_words(vm, nic) -> str:
    if _queues_short(vm, nic) is False and (vm.guest_os != "windows" or nic.rss_enabled is not False):
        return (f"the vNIC already has {nic.rx_queues} rx queues for {vm.vcpus} vCPUs, so more queues need more "
                "vCPUs; or reduce the load or contention on this VM.")
    return "spread receive work over more rx queues (one per vCPU), or reduce contention."


def _spread_remedies(vm, nic):
    """Only steps that change something, in the guest's own language: more queues when there are fewer
    than vCPUs (RSS on, then its queue count, on Windows), else more vCPUs (each brings an rx queue)."""
    short = _queues_short(vm, nic)
    if vm.guest_os == "windows":
        if nic.rss_enabled is False or (nic.rss_enabled is None and (nic.rx_queues or 1) <= 1):
            return (fix.windows_enable_rss(nic.windows_adapter, vm.vcpus),)
        if short:
            return (fix.windows_rss_queues(nic.windows_adapter, vm.vcpus),)
        return (fix.vsphere_add_vcpus(vm.name, vm.vcpus, nic.windows_adapter, "windows"),)
    if short is not False:
        return (fix.linux_more_queues(nic.guest_interface, vm.vcpus),)
    return (fix.vsphere_add_vcpus(vm.name, vm.vcpus, nic.guest_interface, vm.guest_os),)


def _ready_investigate_band(cpu: CpuState, t) -> tuple[Evidence, ...]:
    """%RDY in the 5-10 % band does not block a ring raise, but it is worth showing against it."""
    ready = cpu.ready
    if ready is not None and ready.bound == "exact" and \
            t["cpu.ready_pct_warning"] < ready.worst_avg <= t["cpu.ready_pct_critical"]:
        return (ready.evidence(t["cpu.ready_pct_warning"], ">"),)
    return ()
