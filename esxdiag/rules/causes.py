"""Every cause of a drop besides the ring (docs/diagnosis.md), one small rule each: the
uplink, vmxnet3 drop reasons that are not the ring (MTU, truncation, steering, burst queue, large
headers, page absent), the transmit side, a few hot rx queues (K of N). ``rx_causes`` is what the
ring verdict reads: the causes whose counters rose in the window, with their words and remediation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.join.causes import reason_family
from esxdiag.join.facts import CounterWindow, UplinkFacts, VmFacts, VnicFacts
from esxdiag.result import Evidence, Finding, Remediation, RuleCheck
from esxdiag.rules import remediation as fix
from esxdiag.vocabulary import CauseId, Verdict, drop_severity

REASON_WORDS = {  # every family esxdiag.join.causes knows (a test checks the two agree), docs/diagnosis.md
    "mtu": ("frames longer than the vNIC's MTU",
            "a sender or the physical network uses a larger MTU than this guest: align the MTU end to end"),
    "truncation": ("frames truncated on the way into the guest", "not a ring size problem: collect a vm-support "
                   "bundle for VMware support"),
    "steering": ("frames dropped by packet steering", "a steering (RSS / NetQueue) filter dropped them: not the "
                 "ring; check the host's NetQueue and RSS settings for the uplink"),
    "burst-queue": ("frames dropped by the burst queue", "bursts overflowed the port's burst queue before the "
                    "guest ring: not the ring size"),
    "large-headers": ("frames dropped for headers too large", "encapsulated (overlay: Geneve, VXLAN) or "
                      "option-heavy frames whose headers the vNIC cannot take: not the ring; check the overlay's "
                      "MTU and offloads"),
    "sg-limit": ("frames dropped for too many scatter-gather pieces", "not the ring: the frame needed more "
                 "buffers than the device allows"),
    "packet-aging": ("frames dropped by packet aging (PktAgingList)", "frames waited too long in the host's "
                     "queue before the vNIC took them: the guest is slow to drain, not a ring-size limit"),
    "rx-lock-queueing": ("frames dropped by rx try-lock queueing", "the host could not queue frames to the vNIC "
                         "while its rx path was busy: collect a vm-support bundle for VMware support"),
    "copy-failure": ("frames that failed to copy into the guest buffer", "the host could not write into the "
                     "guest's buffer (guest memory): not the ring size"),
    "buffer-map-failure": ("rx buffers the host failed to map", "the host could not map the guest's receive "
                           "buffer (guest memory swapped or ballooned out): not the ring size"),
    "receive-error": ("receive errors on the vNIC", "frames the device refused as errors: not the ring size"),
    "page-absent": ("frames dropped because the guest buffer's page was not in memory",
                    "the host swapped or ballooned out the guest's receive buffers: relieve host memory pressure"),
    "unknown": ("frames dropped for a reason esxdiag does not know", "the counter's own name says frames were "
                "lost; collect a vm-support bundle for VMware support"),
}
EVENT_WORDS = {  # counted as events, shown beside the drops, never added to them
    "queue-stopped": "times the rx queue was stopped",
    "page-in": "requests to page in a guest receive buffer (the host had swapped it out)",
}


@dataclass(frozen=True)
class Cause:
    id: str  # uplink, mtu, truncation, steering, burst-queue, large-headers, sg-limit, page-absent
    words: str  # what happened, with the numbers
    evidence: tuple[Evidence, ...]
    remediation: tuple[Remediation, ...] = ()
    place: str = ""  # where the loss is, for titles: "esx0 vmnic1"


def _rising(c: CounterWindow | None, minimum: float) -> bool:
    return c is not None and c.delta is not None and c.delta > minimum


def _rate(c: CounterWindow) -> str:
    return f" ({c.rate_per_s:,.1f}/s)" if c.rate_per_s is not None else ""


def uplink_cause(link: UplinkFacts, t: dict[str, float]) -> Cause | None:
    rising = [c for c in link.counters if _rising(c, t["uplink.drops"])]
    vcenter = [s for s in link.symptoms if s.rising]
    if not rising and not (vcenter and not link.counters):  # vCenter only when esxcli did not read the NIC
        return None
    parts = [f"{c.locator} +{c.delta:,}{_rate(c)}" for c in rising] or [
        f"{s.what} {s.observed:,.0f} in {len(s.present)} samples" for s in vcenter]
    where = f"{link.host} {link.vmnic}" if link.host else link.vmnic
    carries = (Evidence(f"{link.vmnic} carries this vNIC", link.vmnic, None, None, None, None, link.mapping),
               ) if link.mapping else ()
    return Cause(CauseId.UPLINK, f"uplink loss on {where}: {', '.join(parts)}",
                 tuple(c.evidence(t["uplink.drops"]) for c in rising) + tuple(s.evidence() for s in vcenter) + carries,
                 (fix.uplink_loss(link.vmnic, [c.locator for c in rising]),), where)


def rx_causes(vm: VmFacts, nic: VnicFacts, t: dict[str, float]) -> list[Cause]:
    """The causes other than the ring whose counters rose in the window, uplink first (the path's order). An
    uplink not known to carry the vNIC is no cause of its drops (the uplink-loss finding says it as the host's)."""
    out = [c for link in nic.uplinks if link.mapping and (c := uplink_cause(link, t)) is not None]
    for family, counters in reason_counters(nic).items():
        rising = [c for c in counters if _rising(c, t["rx.other_drops"])]
        if not rising:
            continue
        what, why = REASON_WORDS[family]
        parts = ", ".join(f"{c.locator} +{c.delta:,}{_rate(c)}" for c in rising)  # the counters' own words
        remedy: tuple[Remediation, ...] = ()
        if family == "mtu":
            remedy = (fix.align_mtu(vm.guest_os, nic.guest_interface, nic.windows_adapter, nic.mtu),)
        elif family in ("page-absent", "buffer-map-failure"):
            remedy = (fix.vsphere_relieve_memory(vm.name),)
        out.append(Cause(family, f"{what}: {parts} ({why})", tuple(c.evidence(t["rx.other_drops"]) for c in rising),
                         remedy))
    return out


def reason_counters(nic: VnicFacts, kind: str = "packets") -> dict[str, list[CounterWindow]]:
    """The vNIC's drop-reason counters by family (``kind``: "packets" that the port's droppedRx holds, or
    "events" shown beside them)."""
    out: dict[str, list[CounterWindow]] = {}
    for label, counter in nic.rx_reasons.items():
        family = reason_family(label)
        if family is not None and family[1] == kind:
            out.setdefault(family[0], []).append(counter)
    return out


def uplink_loss(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    causes = [c for link in nic.uplinks if link.mapping and (c := uplink_cause(link, t)) is not None]
    host_only = [c for link in nic.uplinks if not link.mapping and (c := uplink_cause(link, t)) is not None]
    if causes:
        rates = [c.rate_per_s for link in nic.uplinks if link.mapping for c in link.counters if c.rate_per_s is not None]
        severity = drop_severity(max(rates) if rates else None, t, "uplink.drops_per_s_critical")
        return [_uplink_finding(vm, nic, causes, severity,
                                f"Uplink loss on the path of {nic.label or nic.mac}: ", "",
                                "These frames are lost on the physical NIC, before the vSwitch: no vNIC ring can "
                                "help them, and every VM on this uplink loses them too.")]
    if host_only:
        return [_uplink_finding(vm, nic, host_only, "warning", f"Uplink loss on the host of {nic.label or nic.mac}: ",
                                " (not known to carry this vNIC)",
                                "These frames are lost on the host's physical NIC, before the vSwitch. Whether this "
                                "vNIC's traffic uses that uplink is not known: esxcli network vm port list -w WORLD "
                                "(Team Uplink) says; if it does, no vNIC ring can help these frames.")]
    if not nic.uplinks:
        return [RuleCheck("uplink-loss", "skip", nic.uplinks_unknown or "the vNIC's uplink is not known", nic.mac)]
    names = ", ".join(link.vmnic for link in nic.uplinks)
    if not any(link.mapping for link in nic.uplinks):
        names = f"the host's uplinks {names} (which carries this vNIC is not known)"
    read = any(link.counters or link.symptoms for link in nic.uplinks)
    return [RuleCheck("uplink-loss", "pass" if read else "skip",
                      f"no receive loss on {names}" if read else f"{names}: no uplink counters were read", nic.mac)]


def _uplink_finding(vm: VmFacts, nic: VnicFacts, causes: list[Cause], severity: str, title: str, after: str,
                    meaning: str) -> Finding:
    return Finding("uplink-loss", severity, vm.name, nic.mac, title + "; ".join(c.place for c in causes) + after,
                   "; ".join(c.words for c in causes) + ". " + meaning,
                   evidence=tuple(e for c in causes for e in c.evidence), remediation=causes[0].remediation)


def other_rx_drops(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    causes = [c for c in rx_causes(vm, nic, t) if c.id != CauseId.UPLINK]
    read = reason_counters(nic)
    if not read:
        return []
    if not causes:
        absent = [family for family in REASON_WORDS if family not in read and family != "unknown"]
        return [RuleCheck("vmxnet3-drop-reasons", "pass", f"no drops for {', '.join(read)} in the window"
                          + (f"; not reported by this host: {', '.join(absent)}" if absent else ""), nic.mac)]
    return [Finding(
        "vmxnet3-drop-reasons", "warning", vm.name, nic.mac,
        f"{nic.label or nic.mac} drops frames for reasons other than the ring",
        "; ".join(c.words for c in causes) + ". A bigger ring does not help these.",
        evidence=tuple(e for c in causes for e in c.evidence),
        remediation=tuple(r for c in causes for r in c.remediation))]


def tx_rising(nic: VnicFacts, t: dict[str, float]) -> bool:
    """Transmit drops rose in the window (port droppedTx, guest tx ring full, esxtop %DRPTX)."""
    return any(_rising(c, t["tx.drops"]) for c in nic.tx.values()) or any(s.rising for s in nic.tx_symptoms)


_KEEP_RINGS = re.compile(r"[:;] keep the (?:default )?rings(?: \(bigger rings cost guest memory\))?")


def rx_fine_tx_dropping(summary: str, verdict: str = Verdict.NOT_NEEDED) -> str:
    """A "not needed" (or "past exhaustion only") rx verdict beside rising transmit drops: the rx rings are
    fine now, the vNIC is not, so the verdict never says "keep the defaults" as if all were well."""
    tx = " But transmit drops are rising on this vNIC now: see the tx-drops finding."
    if verdict != Verdict.NOT_NEEDED:
        return summary + tx
    return "The rx rings are fine. " + _KEEP_RINGS.sub(": no rx ring change", summary, count=1) + tx


def tx_drops(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    rising = {key: c for key, c in nic.tx.items() if _rising(c, t["tx.drops"])}
    esxtop = [s for s in nic.tx_symptoms if s.rising]
    if not rising and not esxtop:
        if nic.tx or nic.tx_symptoms:
            return [RuleCheck("tx-drops", "pass", "no transmit drops in the window", nic.mac)]
        return []
    remedies = []
    tx_at_max = nic.tx_ring_size is not None and nic.tx_ring_size >= t["ring.max_size"]
    ring_full = "guest tx ring full" in rising or ("droppedTx" in rising and "droppedTxExceedMTU" not in rising)
    if ring_full and not tx_at_max:
        remedies.append(fix.raise_tx_ring(vm.guest_os, nic.guest_interface, nic.windows_adapter))
    if "droppedTxExceedMTU" in rising:
        remedies.append(fix.align_mtu(vm.guest_os, nic.guest_interface, nic.windows_adapter, nic.mtu, transmit=True))
    parts = [f"{c.what} +{c.delta:,}{_rate(c)}" for c in rising.values()] + [
        f"{s.what} peak {s.observed:g}%" for s in esxtop]
    why = (" The guest sends frames larger than the port's MTU." if "droppedTxExceedMTU" in rising else
           " The guest queued frames faster than the tx ring drained them." if "guest tx ring full" in rising else "")
    if ring_full and tx_at_max:
        why += (f" The tx ring is already at its maximum ({nic.tx_ring_size:,}): a bigger ring is not possible; "
                "spread sending over more tx queues (vCPUs) or lower the send bursts.")
    return [Finding(
        "tx-drops", "warning", vm.name, nic.mac, f"Transmit drops on {nic.label or nic.mac}",
        "; ".join(parts) + "." + why + " Transmit drops are not receive-ring exhaustion: the rx ring verdict "
        "does not cover them.",
        evidence=tuple(c.evidence(t["tx.drops"]) for c in rising.values()) + tuple(s.evidence() for s in esxtop),
        remediation=tuple(remedies))]


@dataclass(frozen=True)
class HotQueues:
    """The fewest rx queues that hold at least ring.hot_queue_share_pct of the guest's out-of-buffer drops, when
    they are a few of the vNIC's queues (at most ring.hot_queues_max_pct of them): flows that hash onto those
    queues. A bigger ring helps them; more queues do not split a flow."""

    queues: tuple[int, ...]  # heaviest first
    count: int  # the vNIC's rx queues with a reading
    share: float  # % of the drops the hot queues hold
    drops: int  # the hot queues' drops in the window

    def named(self) -> str:
        """"queue 3" / "queues 2 and 5" / "queues 1, 4 and 6", in queue order."""
        ordered = sorted(self.queues)
        if len(ordered) == 1:
            return f"queue {ordered[0]}"
        return "queues " + ", ".join(map(str, ordered[:-1])) + f" and {ordered[-1]}"

    def words(self) -> str:
        """"Rx queue 0 of 2 takes 100%" / "Rx queues 2 and 5 of 8 take 97%"."""
        verb = "takes" if len(self.queues) == 1 else "take"
        return f"Rx {self.named()} of {self.count} {verb} {self.share:.0f}%"


def hot_queues(nic: VnicFacts, t: dict[str, float]) -> HotQueues | None:
    deltas = {q: c.delta for q, c in nic.guest_queue_oob.items() if c.delta is not None}
    total = sum(deltas.values())
    if len(deltas) < 2 or total <= t["ring.drops"]:
        return None
    ranked = sorted(deltas.items(), key=lambda kv: (-kv[1], kv[0]))
    held = 0
    for k, (_, drops) in enumerate(ranked, 1):
        held += drops
        if 100 * held >= t["ring.hot_queue_share_pct"] * total:
            break
    if k >= len(deltas) or 100 * k > t["ring.hot_queues_max_pct"] * len(deltas):
        return None  # the drops spread over most queues: not a few hot flows
    return HotQueues(tuple(q for q, _ in ranked[:k]), len(deltas), 100 * held / total, held)


def one_hot_queue(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    hot = hot_queues(nic, t)
    if hot is None:
        return []
    them = "that queue" if len(hot.queues) == 1 else "them"
    at_max = nic.ring1_size is not None and nic.ring1_size >= nic.ring1_max
    ring = (f"Their ring is already at its maximum ({nic.ring1_max:,}): those flows need splitting over more "
            "connections, or a lower burst rate" if at_max else f"A bigger ring helps {them}")
    return [Finding(
        "hot-queue", "warning", vm.name, nic.mac, f"Drops on rx {hot.named()} of {hot.count} on {nic.label or nic.mac}",
        f"{hot.words()} of the guest's out-of-buffer drops ({hot.drops:,} of the window's): a flow or hash "
        "imbalance, a few heavy flows landing on " + ("one queue" if len(hot.queues) == 1 else "these queues")
        + f". {ring}; more queues or vCPUs do not split a flow.",
        evidence=tuple(c.evidence(t["ring.drops"]) for c in nic.guest_queue_oob.values()))]


RULES = (uplink_loss, other_rx_drops, tx_drops, one_hot_queue)
