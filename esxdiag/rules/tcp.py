"""Guest TCP retransmits over the window: the sender's view of a receiver's drops."""

from __future__ import annotations

from esxdiag.join.facts import VmFacts
from esxdiag.result import Evidence, Finding, RuleCheck


def guest_retransmits(vm: VmFacts, t: dict[str, float]):
    retrans, sent = vm.retransmits, vm.segments_sent
    if retrans is None or retrans.delta is None:
        return [RuleCheck("guest-retransmits", "skip", "guest TCP counters not read at both ends of the window")]
    limit = t["tcp.retransmit_pct"]
    if not sent or not sent.delta:
        pct = None
    else:
        pct = 100.0 * retrans.delta / sent.delta
    rate, rate_limit = retrans.rate_per_s, t["tcp.retransmits_per_s"]
    high_rate = rate is not None and rate > rate_limit
    # a 32-bit TCP counter past 2^32 is counted through the wrap, and the report says so
    wraps = "; ".join(f"{c.what} {c.wrap_words()}" for c in (retrans, sent) if c is not None and c.wraps)
    if retrans.delta == 0 or (not high_rate and (pct is None or pct <= limit)):
        return [RuleCheck("guest-retransmits", "pass",
                          f"{retrans.delta:,} retransmitted segments" + (f" ({pct:.2f}% of sent)" if pct is not None else "")
                          + (f" ({wraps})" if wraps else ""))]
    evidence = [retrans.evidence(rate_limit if high_rate else None)]
    if pct is not None and sent is not None:
        evidence.append(Evidence("retransmitted / sent segments" + (f" ({wraps})" if wraps else ""), round(pct, 2),
                                 "%", limit, ">", sent.source, "segments sent"))
    return [Finding(
        "guest-retransmits", "warning", vm.name, None, f"{vm.name} is retransmitting TCP segments",
        f"{retrans.delta:,} segments retransmitted in the window"
        + (f" ({pct:.2f}% of {sent.delta:,} sent{'; ' + wraps if wraps else ''})" if pct is not None and sent else "")
        + ". A sender retransmits when the receiver drops: check the ring verdict of the VMs it sends to.",
        evidence=tuple(evidence),
    )]


RULES = (guest_retransmits,)
