"""The verdict of a NIC outside the vSwitch: an SR-IOV virtual function, a DirectPath I/O NIC, or a guest NIC
no vNIC claims (docs/diagnosis.md, "NICs outside the vSwitch"). Such a NIC has no vSwitch port and no vmxnet3
rings: the guest driver's own ethtool -S counters, read at both ends of the window, are the evidence, and the
remedy is that driver's own (its ring up to its own maximum, its channels, the guest's memory, or the physical
port), never vmxnet3 advice. Each counter name belongs to a family by the driver's own string table; a driver
esxdiag has no table for is listed with its counters named, and the verdict says what to collect."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.join.facts import WINDOWS_DISCARDS, CounterWindow, VmFacts, VnicFacts
from esxdiag.result import Evidence, Finding, RingVerdict, RuleCheck
from esxdiag.rules import remediation as fix
from esxdiag.rules.floor import floor_words
from esxdiag.vocabulary import Verdict

NAMES_SHOWN = 24  # counter names an unknown driver's summary lists: a display length, not a judgment

# family -> what the counter says happened, in words
FAMILY_WORDS = {
    "rx-buffers": "the guest did not post receive buffers fast enough: the NIC found its receive ring empty",
    "buffer-alloc": "the driver could not allocate receive buffers (a memory allocation in the guest failed)",
    "physical-port": "the physical port dropped them before they reached this function (the port's receive "
                     "buffer, or congestion on the wire): no guest setting changes it",
    "dropped": "the driver counts the drop without saying why",
}

# Per driver: (counter name pattern, family), from each driver's ethtool string table in the Linux kernel
# (drivers/net/ethernet/...: mlx5/core/en_stats.c, intel/ixgbevf/ethtool.c, intel/iavf/iavf_ethtool.c,
# intel/ice/ice_ethtool.c, broadcom/bnxt/bnxt_ethtool.c, amazon/ena/ena_ethtool.c, intel/igbvf/ethtool.c,
# intel/e1000/e1000_ethtool.c, intel/e1000e/ethtool.c, intel/ixgbe/ixgbe_ethtool.c, intel/igb/igb_ethtool.c).
# A per-queue counter is matched with its queue number taken out (rx3_buff_alloc_err -> rx{N}_buff_alloc_err).
_MLX5 = ((r"rx_out_of_buffer", "rx-buffers"), (r"rx_discards_phy|rx_prio\d+_discards",
                                                "physical-port"),
         (r"rx(\{N\})?_buff_alloc_err", "buffer-alloc"), (r"rx_vport_.*drop.*|rx_dropped", "dropped"))
_INTEL_VF = ((r"alloc_rx_(buff|page)_failed|rx(_queue)?_\{N\}_alloc_.*fail.*", "buffer-alloc"),
             (r"rx_missed_errors|rx_no_buffer_count|rx_discards|rx_no_dma_resources", "rx-buffers"),
             (r"rx_dropped", "dropped"))
DRIVER_FAMILIES: dict[str, tuple[tuple[str, str], ...]] = {
    "mlx5_core": _MLX5,
    "ixgbevf": _INTEL_VF,
    "ixgbe": _INTEL_VF,  # Intel PFs passed through, and the emulated e1000/e1000e's guest drivers: one table
    "igb": _INTEL_VF,
    "i40e": _INTEL_VF,
    "e1000": _INTEL_VF,
    "e1000e": _INTEL_VF,
    "igbvf": _INTEL_VF,
    "iavf": _INTEL_VF,
    "i40evf": _INTEL_VF,
    # ice (an E810 PF passed through): rx_dropped.nic is the port's eth.rx_discards, no host descriptor free
    "ice": ((r"rx_dropped\.nic", "rx-buffers"),) + _INTEL_VF,
    "bnxt_en": ((r"(\[\{N\}\]: )?rx_discards", "rx-buffers"), (r"(\[\{N\}\]: )?rx_oom_discards", "buffer-alloc")),
    "ena": ((r"rx_drops", "rx-buffers"), (r"queue_\{N\}_rx_(page|skb)_alloc_fail", "buffer-alloc")),
}
# receive drop counters of any driver, by the words drivers use: to name them, never to judge them
_DROPPISH = re.compile(r"rx.*(drop|discard|miss|no_?buf|nodesc|out_of_buf|alloc.*fail|overrun)|"
                       r"(drop|discard|miss|nodesc|no_?buf).*rx", re.I)
_QUEUE = re.compile(r"(?<=rx)\d+(?=_)|(?<=rx-)\d+(?=\.)|(?<=queue_)\d+(?=_)|(?<=^\[)\d+(?=\]: )|(?<=queue)\d+(?=_)")
_RX_PACKETS = ("rx_packets", "rx_unicast")
KIND_WORDS = {"sriov": "SR-IOV VF", "passthrough": "DirectPath I/O NIC", "guest-only": "guest NIC"}


@dataclass(frozen=True)
class DriverDrop:
    """One receive drop counter of the driver (per-queue ones summed), and its family."""

    name: str  # the driver's own name; per-queue: with {N} for the queue number
    family: str
    window: CounterWindow
    queues: int = 1

    @property
    def delta(self) -> int | None:
        return self.window.delta

    def words(self) -> str:
        rate = f", {self.window.rate_per_s:,.0f}/s" if self.window.rate_per_s is not None else ""
        over = f" in {self.window.seconds:,.0f} s" if self.window.seconds else ""
        summed = f" (sum of {self.queues} queues)" if self.queues > 1 else ""
        return f"{self.name}{summed} +{self.delta:,}{over}{rate}"


def queue_key(name: str) -> str:
    return _QUEUE.sub("{N}", name)


def family_of(driver: str | None, key: str) -> str | None:
    """The family a counter belongs to in the driver's own table; "dropped" for a drop-looking name the
    table does not know (and Windows' ReceivedDiscardedPackets, which says no why); None for a counter that
    is not a receive drop."""
    if key == WINDOWS_DISCARDS:
        return "dropped"
    for pattern, family in DRIVER_FAMILIES.get(driver or "", ()):
        if re.fullmatch(pattern, key):
            return family
    return "dropped" if _DROPPISH.search(key) and not key.startswith(("tx", "rx_xdp")) else None


def _summed(key: str, members: list[CounterWindow]) -> CounterWindow:
    if len(members) == 1:
        return members[0]
    what = f"{key} (sum of {len(members)} queues)"
    seconds = next((c.seconds for c in members if c.seconds), None)
    if all(c.complete for c in members):  # each start and delta read
        start = sum(c.start or 0 for c in members)
        end = start + sum(c.delta or 0 for c in members)
        return CounterWindow(what, start, end, seconds, members[-1].source, members[-1].locator)
    return CounterWindow(what, None, sum(c.total or 0 for c in members), seconds, members[-1].source,
                         members[-1].locator)


def driver_drops(nic: VnicFacts) -> list[DriverDrop]:
    """The NIC's receive drop counters, per-queue ones summed, each with its family."""
    groups: dict[str, list[CounterWindow]] = {}
    for name, window in nic.driver_counters.items():
        groups.setdefault(queue_key(name), []).append(window)
    out = []
    for key, members in groups.items():
        family = family_of(nic.driver, key)
        if family is not None:
            out.append(DriverDrop(key, family, _summed(key, members), len(members)))
    return out


def rising_drops(nic: VnicFacts, t: dict[str, float]) -> list[DriverDrop]:
    return [d for d in driver_drops(nic) if d.window.complete and d.delta is not None and d.delta > t["ring.drops"]]


def buffers_rising(nic: VnicFacts, t: dict[str, float]) -> bool:
    """The NIC found its receive ring empty in the window: the guest did not post buffers fast enough."""
    return any(d.family == "rx-buffers" for d in rising_drops(nic, t))


def frames_received(nic: VnicFacts) -> int | None:
    for name in _RX_PACKETS:
        c = nic.driver_counters.get(name)
        if c is not None and c.delta:
            return c.delta
    return None


def under_floor(nic: VnicFacts, drops: int, seconds: float | None, t: dict[str, float]) -> str | None:
    """The noise floor (esxdiag.rules.floor) on the driver's own frame count."""
    return floor_words(drops, seconds, frames_received(nic), t)


def _what(nic: VnicFacts) -> str:
    kind = KIND_WORDS.get(nic.attachment or "", nic.type or "NIC")
    driver = nic.driver or ("a Windows adapter" if nic.windows_adapter else "driver unknown")
    return f"{kind} {nic.guest_interface or '(guest interface unknown)'} ({driver})"


def _basis(nic: VnicFacts) -> str:
    if nic.windows_adapter is not None:
        return "the adapter's own counters (Get-NetAdapterStatistics)"
    return "the driver's own counters (ethtool -S)"


def _evidence(drops: list[DriverDrop], t: dict[str, float]) -> tuple[Evidence, ...]:
    return tuple(d.window.evidence(t["ring.drops"]) for d in drops)


def _collect(nic: VnicFacts) -> list[str]:
    if nic.windows_adapter is not None or nic.guest_os == "windows":
        return [f"in the guest, Get-NetAdapterStatistics -Name {fix.ps_name(nic.guest_interface or '<adapter>')} at "
                "the start and the end of a window, and the NIC vendor's own performance counters (Get-Counter "
                "-ListSet *) for why it discards"]
    iface = fix.sh_arg(nic.guest_interface, "iface")
    return [f"in the guest, ethtool -S {iface} at the start and the end of a window (the driver's own drop "
            f"counters), ethtool -i {iface} (its driver) and ethtool -g {iface} (its ring and the ring's maximum)"]


def decide_driver_nic(vm: VmFacts, nic: VnicFacts, t: dict[str, float]) -> RingVerdict:
    """The verdict of a NIC outside the vSwitch, from its driver's own counters."""
    what = _what(nic)
    if nic.guest_interface is None:
        return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE, f"{what}: no guest interface is tied to it, so none of its "
                           "counters could be read.", missing=nic.missing or tuple(_collect(nic)))
    windowed = [c for c in nic.driver_counters.values() if c.complete]
    if not windowed:
        read = "read once (totals since the driver loaded)" if nic.driver_counters else "not read"
        return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE, f"{what}: its driver's counters were {read}: two readings over a "
                           "window are needed to tell whether it drops now.",
                           missing=nic.missing or tuple(_collect(nic)))
    drops = driver_drops(nic)
    rising = rising_drops(nic, t)
    if nic.driver not in DRIVER_FAMILIES and nic.windows_adapter is None:  # Windows: one counter, known
        return _unknown_driver(nic, what, drops, rising, t)
    if not drops:
        return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE, f"{what}: none of its {len(nic.driver_counters)} ethtool -S "
                           f"counters is a receive drop counter of {nic.driver}: its drops cannot be judged.",
                           missing=(f"a receive drop counter of {nic.driver} in ethtool -S",))
    total = sum(d.delta or 0 for d in rising)  # a rising drop's delta is read
    seconds = next((d.window.seconds for d in rising if d.window.seconds), None)
    floor = under_floor(nic, total, seconds, t)
    if not rising or floor is not None:
        flat = ", ".join(f"{d.name} {'+' + format(d.delta, ',') if d.delta else 'flat'}" for d in drops
                         if d.window.complete)
        why = f"its receive drops are {floor}" if floor else "no receive drop counter of its driver rose in the window"
        return RingVerdict(Verdict.NOT_NEEDED, f"{what}: {why} ({flat}). Nothing to change on this device.",
                           evidence=_evidence(drops, t), basis=_basis(nic))
    return _rising(vm, nic, what, rising, t)


def _rising(vm: VmFacts, nic: VnicFacts, what: str, rising: list[DriverDrop], t: dict[str, float]) -> RingVerdict:
    by_family = {f: [d for d in rising if d.family == f] for f in FAMILY_WORDS}
    said = "; ".join(f"{', '.join(d.words() for d in ds)}: {FAMILY_WORDS[f]}" for f, ds in by_family.items() if ds)
    evidence = _evidence(rising, t)
    basis = _basis(nic)
    remedies, missing = [], []
    if by_family["rx-buffers"]:
        ring, ring_missing = fix.driver_ring_raise(nic.guest_interface, nic.ethtool_current_rx, nic.ring_rx_max)
        spread = fix.driver_spread_receive(nic.guest_interface, vm.vcpus, nic.driver)
        remedies += [r for r in (ring, spread) if r is not None]
        missing += ring_missing
    if by_family["buffer-alloc"]:
        remedies.append(fix.guest_memory_for_receive(nic.guest_interface))
    if by_family["physical-port"]:
        remedies.append(fix.physical_port_drops(nic.guest_interface, nic.attachment))
    if by_family["rx-buffers"] or by_family["buffer-alloc"]:
        verdict = Verdict.DRIVER_DROPS
    elif by_family["physical-port"]:
        verdict = Verdict.DROPS_ELSEWHERE
    else:
        return RingVerdict(Verdict.INSUFFICIENT_EVIDENCE, f"{what} drops received frames: {said}. Which change helps "
                           "cannot be told from this counter.", evidence=evidence,
                           missing=tuple(_collect(nic)) + (() if nic.windows_adapter else (
                               "ethtool -l (channels), /proc/net/softnet_stat and mpstat -P ALL through the window",)),
                           basis=basis)
    summary = f"{what} drops received frames: {said}. No vmxnet3 ring or vSwitch port is on its path."
    causes = ("physical-port",) if by_family["physical-port"] else ()
    return RingVerdict(verdict, summary, evidence=evidence, remediation=tuple(remedies), missing=tuple(missing),
                       basis=basis, causes=causes)


def _unknown_driver(nic: VnicFacts, what: str, drops: list[DriverDrop], rising: list[DriverDrop],
                    t: dict[str, float]) -> RingVerdict:
    names = list(nic.driver_counters)
    shown = ", ".join(names[:NAMES_SHOWN]) + (f", ... ({len(names)} in all)" if len(names) > NAMES_SHOWN else "")
    if rising:
        seen = "Receive drop counters by their names: " + "; ".join(d.words() for d in rising) + "."
    elif drops:
        seen = "Its drop-looking counters stayed flat (" + ", ".join(d.name for d in drops) + ")."
    else:
        seen = "None of its counters looks like a receive drop counter."
    iface = fix.sh_arg(nic.guest_interface, "iface")
    table = (f"esxdiag has no table of the {nic.driver} driver's counters" if nic.driver else
             "its driver is not known (ethtool -i was not read)")
    return RingVerdict(
        Verdict.INSUFFICIENT_EVIDENCE,
        f"{what}: {table}, so it names them rather than judge them. {seen} Its ethtool -S counters: {shown}.",
        evidence=_evidence(rising or drops, t),
        missing=((f"what the {nic.driver} driver's counters count (its documentation)" if nic.driver else
                  f"ethtool -i {iface} (its driver)") + f", and ethtool -g {iface} (its ring and maximum)",),
        basis="the driver's own counters (ethtool -S), by name")


def nic_driver_drops(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    """A finding for a NIC outside the vSwitch whose driver counts receive drops now; its verdict says what
    to change."""
    if nic.attachment is None:
        return [RuleCheck("nic-driver-drops", "pass", "a vNIC on a vSwitch port: its ring verdict judges it",
                          nic.mac)]
    rising = rising_drops(nic, t)
    total = sum(d.delta or 0 for d in rising)  # a rising drop's delta is read
    seconds = next((d.window.seconds for d in rising if d.window.seconds), None)
    if not rising or under_floor(nic, total, seconds, t) is not None:
        read = any(c.complete for c in nic.driver_counters.values())
        return [RuleCheck("nic-driver-drops", "pass" if read else "skip",
                          f"{_what(nic)}: no receive drops now" if read else
                          f"{_what(nic)}: its driver's counters were not read at both ends of the window", nic.mac)]
    rate = total / seconds if seconds else None
    judged = nic.driver in DRIVER_FAMILIES and any(d.family != "dropped" for d in rising)
    severity = "critical" if judged and rate is not None and rate > t["ring.drops_per_s_critical"] else "warning"
    return [Finding(
        "nic-driver-drops", severity, vm.name, nic.mac,
        f"{_what(nic)} drops received frames: " + ", ".join(d.name for d in rising),
        "; ".join(f"{d.words()}: {FAMILY_WORDS[d.family]}" for d in rising) + ". See its verdict for the driver's "
        "own remedy (no vmxnet3 ring or vSwitch port is on its path).",
        evidence=_evidence(rising, t))]


RULES = (nic_driver_drops,)
