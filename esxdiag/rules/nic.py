"""Per-vNIC rules besides the verdict: ring exhaustion happening now, emulated adapters, Windows
single rx queue, ring settings that will not survive a reboot, the link-speed myth."""

from __future__ import annotations

import re

from esxdiag.join.device import runs_as
from esxdiag.join.facts import VmFacts, VnicFacts
from esxdiag.result import Evidence, Finding, RuleCheck
from esxdiag.rules import remediation as fix
from esxdiag.rules.verdict import decide, signals
from esxdiag.vocabulary import Severity, Verdict, drop_severity

LINK_SPEED_FACTS = ("A vNIC's reported link speed is not a limit: vmxnet3 reports 10 Gbps and moved 22 Gbps "
                    "VM-to-VM, e1000 reports 1 Gbps and moved 7.7 Gbps, and a 10 Mbps setting still moved ~800x "
                    "that. Throttling by link speed does nothing; use vSwitch traffic shaping or NIOC.")


def ring_exhaustion(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    if nic.type not in (None, "vmxnet3"):
        return []
    sig = signals(nic, t)
    if not sig.windowed:
        rising = [s for s in nic.drop_symptoms if s.rising]
        if rising:
            return [Finding(
                "port-drops", "warning", vm.name, nic.mac,
                f"Frames dropped at the vSwitch port of {nic.label or nic.mac}",
                "The port dropped received frames during the window: the guest did not take them fast enough "
                "(rx rings exhausted, or vCPUs starved of CPU). The ring verdict says which to check first.",
                evidence=tuple(s.evidence() for s in rising))]
        return [RuleCheck("ring-exhaustion", "skip", "ring counters were not read at both ends of the window",
                          nic.mac)]
    if not sig.rising:
        return [RuleCheck("ring-exhaustion", "pass", "no ring-full events or out-of-buffer drops in the window",
                          nic.mac)]
    rate = sig.drops.rate_per_s if sig.drops is not None else None
    # which ring filled, and how badly, rests on the host's counters: the guest's own (pkts rx OOB) alone
    # says buffers ran out, at most a warning
    read = {1: nic.ring1_full is not None and nic.ring1_full.complete,
            2: nic.ring2_full is not None and nic.ring2_full.complete}
    guest_only = not any(read.values()) and sig.drops is not None and sig.drops in (nic.guest_oob, nic.guest_discards)
    severity = Severity.WARNING if guest_only else drop_severity(rate, t)
    rings = " and ".join(f"ring {n}" for n, up in ((1, sig.ring1_rising), (2, sig.ring2_rising)) if up and read[n])
    drops = f"{sig.drops.delta:,} packets dropped ({rate:,.1f}/s)" if rate is not None and sig.drops else "drops rising"
    if guest_only and sig.drops is not None:
        return [Finding(
            "ring-exhaustion", severity, vm.name, nic.mac,
            f"Receive buffers ran out in the guest on {nic.label or nic.mac}{_port_words(vm, nic)}",
            f"The guest's {sig.drops.what} rose: {drops}. The host's ring counters (vsish rxSummary) were not "
            "read, so which ring filled is not known: see the ring verdict for what to collect.",
            evidence=tuple([sig.drops.evidence(t["ring.drops"])] + [s.evidence() for s in nic.drop_symptoms]),
        )]
    evidence = [c.evidence(t["ring.full_events"]) for c in (sig.ring1, sig.ring2) if c is not None]
    if sig.drops is not None:
        evidence.append(sig.drops.evidence(t["ring.drops"]))
    evidence += [s.evidence() for s in nic.drop_symptoms]
    starved = STARVED_BY.get(decide(vm, nic, t).verdict)
    if starved is not None:  # the ring fills, but a bigger one is not the fix: the headline must not say it is
        return [Finding(
            "ring-exhaustion", severity, vm.name, nic.mac,
            f"Receive drops now on {nic.label or nic.mac}{_port_words(vm, nic)}: {starved}",
            f"{rings or 'The rx rings'} filled during the window; {drops}. The vCPUs could not refill the ring "
            "in time: fix what the verdict names first; a bigger ring would only delay the drops.",
            evidence=tuple(evidence))]
    return [Finding(
        "ring-exhaustion", severity, vm.name, nic.mac,
        f"RX ring exhaustion now on {nic.label or nic.mac}{_port_words(vm, nic)}",
        f"{rings or 'The rx rings'} filled during the window; {drops}. The guest did not post receive buffers "
        "fast enough: see the ring verdict for what to change first.",
        evidence=tuple(evidence),
    )]


STARVED_BY: dict[str, str] = {  # verdicts whose cause starves the vCPUs that refill the ring
    Verdict.CPU_LIMIT_FIRST: "a CPU limit starves the vCPUs",
    Verdict.CPU_CONTENTION_FIRST: "the vCPUs wait to be scheduled",
    Verdict.MEMORY_FIRST: "the host swaps the VM",
    Verdict.GUEST_SATURATED: "every vCPU is busy",
}


def _port_words(vm: VmFacts, nic: VnicFacts) -> str:
    """The port the counters were read on; a vNIC that moved inside the window had one per host, each
    named on the host it lived on ("a port not read" where no capture of that host has it)."""
    if nic.moves:
        return f" (moved: {port_chain(nic.moves)})"
    if vm.moves:
        return f" (port {nic.port} after the move)" if nic.port is not None else ""
    return f" (port {nic.port})" if nic.port is not None else ""


def port_chain(moves) -> str:
    """"port 1 on esx-a -> port 2 on esx-b -> a port not read on esx-c", for any number of moves."""
    stops = [(moves[0].from_host, moves[0].from_port)] + [(m.to_host, m.to_port) for m in moves]
    return " -> ".join(f"{f'port {port}' if port is not None else 'a port not read'} on {host or 'an unknown host'}"
                       for host, port in stops)


def emulated_adapter(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    if nic.type not in ("e1000", "e1000e"):
        return [RuleCheck("emulated-adapter", "pass", f"adapter type {nic.type or 'unknown'}", nic.mac)]
    port = nic.dropped_rx
    dropped = port if port is not None and port.delta is not None and port.delta > t["ring.drops"] else None
    dropping = dropped is not None
    rate = dropped.rate_per_s if dropped else None
    severity = drop_severity(rate, t)
    drops = (f" Its port dropped {dropped.delta:,} received frames in the window"
             + (f" ({rate:,.1f}/s)" if rate is not None else "") + "." if dropped else "")
    return [Finding(
        "emulated-adapter", severity, vm.name, nic.mac,
        f"{nic.label or nic.mac} is an emulated {nic.type}" + (" and drops received frames" if dropping else ""),
        f"{nic.type} is emulated: more host CPU per packet and small fixed rx rings.{drops} vmxnet3 is the adapter "
        f"for network-heavy VMs. Its 1 Gbps link speed is not a limit. {LINK_SPEED_FACTS}",
        evidence=(Evidence("adapter type", nic.type, None, "vmxnet3", "!=", None, "vnics[].type"),)
        + ((dropped.evidence(t["ring.drops"]),) if dropped else ()),
        remediation=(fix.replace_emulated_nic(vm.name, nic.label, nic.mac, nic.type, nic.network, vm.guest_os),),
    )]


def _count(n: int | None, word: str) -> str:
    return f"{n} {word}s" if n is None or n != 1 else f"1 {word}"


_SPEED = re.compile(r"^\s*([\d.]+)\s*([KMGT])bps\s*$", re.I)


def link_speed(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    """A guest that reports less than nic.link_speed_fast_gbps (10 Gbps) invites throttling by link speed,
    which does nothing."""
    match = _SPEED.match(nic.link_speed or "")
    if match is None or nic.type in ("e1000", "e1000e"):  # the emulated-adapter finding says it already
        return []
    if nic.attachment is not None:  # a VF's or DirectPath NIC's speed is its physical port's: a real limit
        return []
    gbps = float(match[1]) * {"K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}[match[2].upper()]
    if gbps >= t["nic.link_speed_fast_gbps"]:
        return [RuleCheck("link-speed", "pass", f"reports {nic.link_speed}", nic.mac)]
    return [Finding(
        "link-speed", "info", vm.name, nic.mac, f"{nic.label or nic.mac} reports {nic.link_speed}: not a limit",
        LINK_SPEED_FACTS,
        evidence=(Evidence("reported link speed", nic.link_speed, None, None, None, nic.link_speed_source,
                           "LinkSpeed"),),
    )]


def windows_single_queue(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    if vm.guest_os != "windows" or nic.type not in (None, "vmxnet3"):
        return []
    if nic.rx_queues is None:
        return [RuleCheck("windows-rss", "skip", "rx queue count unknown", nic.mac)]
    if nic.rx_queues > 1 or (vm.vcpus or 0) <= 1:
        return [RuleCheck("windows-rss", "pass", f"{_count(nic.rx_queues, 'rx queue')} for "
                          f"{_count(vm.vcpus, 'vCPU')}", nic.mac)]
    return [Finding(
        "windows-rss", "warning" if nic.rss_enabled is False else "info", vm.name, nic.mac,
        f"One rx queue for {vm.vcpus} vCPUs on {nic.windows_adapter or nic.mac}",
        "Receive work for this vNIC runs on one vCPU: " + (
            "Receive Side Scaling is on but uses one receive queue (Maximum Number of RSS Queues)." if nic.rss_enabled
            else "Receive Side Scaling is " + ("disabled" if nic.rss_enabled is False else "not in effect")
            + " (older vmxnet3 drivers default it off)."),
        evidence=(Evidence("rx queues", nic.rx_queues, "queues", vm.vcpus, "<", nic.rx_queues_source, "rxqueues"),
                  Evidence("RSS enabled", nic.rss_enabled, None, True, "==", None, "*RSS")),
        remediation=(fix.windows_rss_queues(nic.windows_adapter, vm.vcpus) if nic.rss_enabled else
                     fix.windows_enable_rss(nic.windows_adapter, vm.vcpus),),
    )]


def ring_persistence(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    """Whether ring 1's size survives a reboot: the guest's own boot-time settings named (file, mechanism,
    value), a setting whose value differs from the running size said to be undone at the next boot, and a
    raised ring that nothing sets at boot warned about."""
    if vm.guest_os != "linux" or nic.ring_settings is None or nic.ring1_size is None:
        return []
    settings = [s for s in nic.ring_settings if s.rx is not None]
    if settings:
        return _persisted(vm, nic, settings)
    default_max = int(t["ring.persist_warn_size"])  # ring sizes are whole entries
    if nic.ring1_size <= default_max:
        return [RuleCheck("ring-persistence", "pass", f"ring 1 runs at {nic.ring1_size:,} (a default size) and "
                          "nothing sets ring sizes at boot", nic.mac)]
    return [Finding(
        "ring-persistence", "warning", vm.name, nic.mac,
        f"Ring 1 = {nic.ring1_size} on {nic.guest_interface} will revert at the next reboot",
        "The ring size was raised at runtime but nothing (NetworkManager, udev, ifcfg, ifupdown, a unit) sets it at "
        "boot: the drops will come back after a reboot.",
        evidence=(Evidence("ring 1 size", nic.ring1_size, "entries per queue", default_max, ">",
                           nic.ring_size_source),),
        remediation=(fix.linux_persist_ring(nic.guest_interface, nic.mac, 1, nic.ring1_size),),
    )]


def _persisted(vm: VmFacts, nic: VnicFacts, settings) -> list:
    """Ring 1 is set at boot: fine when that is the size it runs; else the next boot changes it."""
    named = "; ".join(f"{s.file} line {s.line} ({fix.MECHANISM_WORDS.get(s.mechanism, s.mechanism)}) sets rx "
                      f"{s.rx}" for s in settings)
    boot = {s.rx for s in settings}
    runs = {runs_as(v, 1, nic.device_version, nic.mtu) if nic.device_version else v for v in boot}
    if nic.ring1_size in boot | runs and len(boot) == 1:
        return [RuleCheck("ring-persistence", "pass", f"ring 1 is set at boot: {named}", nic.mac)]
    return [Finding(
        "ring-persistence", "info", vm.name, nic.mac,
        f"At the next boot ring 1 on {nic.guest_interface} changes from {nic.ring1_size:,}",
        f"Ring 1 runs at {nic.ring1_size:,} now, but {named}: the next boot puts that back. Edit that setting to "
        "the size you want, rather than adding another mechanism beside it.",
        evidence=(Evidence("ring 1 size", nic.ring1_size, "entries per queue", None, None, nic.ring_size_source),)
        + tuple(Evidence(f"ring 1 set at boot by {s.file} line {s.line}", s.rx, "entries", None, None, s.file,
                         f"line {s.line}") for s in settings))]


def host_guest_consistency(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    host, guest = nic.host_out_of_buffers, nic.guest_oob
    if host is None or guest is None or host.delta is None or guest.delta is None:
        return []
    tolerance = max(t["ring.host_guest_tolerance_min"],
                    t["ring.host_guest_tolerance_pct"] / 100 * max(host.delta, guest.delta))
    if abs(host.delta - guest.delta) <= tolerance:
        return [RuleCheck("host-guest-drops", "pass",
                          f"host {host.delta:,} and guest {guest.delta:,} out-of-buffer drops agree", nic.mac)]
    return [Finding(
        "host-guest-drops", "info", vm.name, nic.mac, "Host and guest disagree on out-of-buffer drops",
        f"Host counted {host.delta:,} and the guest {guest.delta:,} in the same window; they track the same device "
        "counter, so a gap usually means the samples were not taken at the same moment or a counter reset.",
        evidence=(host.evidence(), guest.evidence()),
    )]


def data_quality(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    if not nic.notes:
        return []
    return [Finding("data-quality", "info", vm.name, nic.mac, "Capture quirks to know when reading the numbers",
                    " ".join(note if note.endswith(".") else f"{note}." for note in nic.notes))]


RULES = (ring_exhaustion, emulated_adapter, link_speed, windows_single_queue, ring_persistence, host_guest_consistency,
         data_quality)
