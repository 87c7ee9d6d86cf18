"""Sources that disagree on dropped packets: vCenter's net.droppedRx over the window against the
drop counter the ring verdict reads (host vsish first, then clientStats, then the guest).

One says packets were dropped, the other says none: the report must name the conflict, say which
source the verdict trusts and why, instead of printing both numbers without comment."""

from __future__ import annotations

from esxdiag.join.facts import VmFacts, VnicFacts
from esxdiag.result import Evidence, Finding, RuleCheck
from esxdiag.rules.verdict import signals

RULE = "drop-sources"
WHY_TRUSTED = ("it was read on the vNIC's own port at both ends of exactly this window, and it counts the "
               "ring exhaustion the verdict is about")
WHY_NOT_VCENTER = ("vCenter's net.droppedRx is a 20 s rollup whose first sample starts before the window and "
                   "whose last may end after it, and no vCenter counter sees ring exhaustion itself")


def _counter_words(nic: VnicFacts, counter) -> str:
    named = ((nic.host_out_of_buffers, "the host's out-of-buffer counter (vsish rxSummary)"),
             (nic.dropped_rx, "the host port's droppedRx (vsish clientStats)"),
             (nic.guest_oob, "the guest's pkts rx OOB (ethtool -S)"),
             (nic.guest_discards, "the guest's discarded received packets (Get-NetAdapterStatistics)"))
    return next((words for one, words in named if one is counter), counter.what)


def drop_sources(vm: VmFacts, nic: VnicFacts, t: dict[str, float]):
    vcenter_symptom = next((s for s in nic.drop_symptoms if s.unit == "packets"), None)
    samples = vcenter_symptom.present if vcenter_symptom else []
    if not samples:
        return [RuleCheck(RULE, "skip", "vCenter net.droppedRx was not collected for this vNIC", nic.mac)]
    # vCenter's net.droppedRx counts the port's drops: weigh it against the port's own count when it was read,
    # not against one of the counters that explain part of it (the drop ledger does that)
    port = nic.dropped_rx if nic.dropped_rx is not None and nic.dropped_rx.complete else None
    trusted = port or signals(nic, t).drops
    if trusted is None or trusted.delta is None:
        return [RuleCheck(RULE, "skip", "no drop counter was read at both ends of the window to compare with "
                          "vCenter net.droppedRx", nic.mac)]
    vcenter = round(sum(samples))
    name = _counter_words(nic, trusted)
    minimum = t["ring.drops"]
    if (vcenter > minimum) == (trusted.delta > minimum):
        return [RuleCheck(RULE, "pass", f"vCenter net.droppedRx ({vcenter:,}) and {name} "
                          f"({trusted.delta:,}) agree on whether packets were dropped", nic.mac)]
    if trusted.delta > minimum:
        summary = (f"vCenter net.droppedRx summed {vcenter:,} packets over the window while {name} "
                   f"counted {trusted.delta:,}. The verdict trusts {name}: {WHY_TRUSTED}; "
                   f"{WHY_NOT_VCENTER}.")
    else:
        summary = (f"vCenter net.droppedRx summed {vcenter:,} packets while {name} counted "
                   f"{trusted.delta:,} in the window. The verdict trusts {name}: {WHY_TRUSTED}; "
                   f"{WHY_NOT_VCENTER}. The vCenter drops may fall just outside the window: sample again "
                   "with a longer window if they matter.")
    return [Finding(
        RULE, "info", vm.name, nic.mac, f"Sources disagree on dropped packets for {nic.label or nic.mac}",
        summary,
        evidence=(trusted.evidence(minimum),
                  Evidence("vCenter net.droppedRx over the window", vcenter, "packets", minimum, ">", None,
                           "net.droppedRx.summation")),
    )]


RULES = (drop_sources,)
