"""Per-vNIC ring verdicts (esxdiag.rules.verdict and its helpers give one per vNIC): each with its
meaning and what it makes of a VM's fleet class when a deep check reads it (esxdiag.fleet.confirm;
docs/fleet-scan.md "Deep check"), so its severity and alert are that class's."""

from __future__ import annotations

from dataclasses import dataclass
from esxdiag.vocabulary.ids import Id

from esxdiag.vocabulary.classes import CLASSES, FleetClass


class Verdict(Id):
    RAISE_RING1 = "raise-ring1"
    RAISE_RING2 = "raise-ring2"
    CPU_LIMIT_FIRST = "cpu-limit-first"
    CPU_CONTENTION_FIRST = "cpu-contention-first"
    AT_MAX = "at-max"
    ENABLE_RSS = "enable-rss"
    NOT_NEEDED = "not-needed"
    PAST_EXHAUSTION_ONLY = "past-exhaustion-only"
    INSUFFICIENT_EVIDENCE = "insufficient-evidence"
    DROPS_ELSEWHERE = "drops-elsewhere"
    MEMORY_FIRST = "memory-first"
    GUEST_SATURATED = "guest-saturated"
    DRIVER_DROPS = "driver-drops"


@dataclass(frozen=True)
class VerdictInfo:
    meaning: str
    # the fleet class a deep check with this verdict gives the VM; None: it decides no class (ruled out, or
    # the suspicion stays). drops-elsewhere naming the uplink gives uplink-loss instead (esxdiag.fleet.confirm)
    fleet_class: FleetClass | None
    ruled_out: bool = False  # ring exhaustion ruled out: a drop suspicion is cleared

    @property
    def alert(self) -> str | None:
        return CLASSES[self.fleet_class].alert if self.fleet_class else None


VERDICT_INFO: dict[Verdict, VerdictInfo] = {
    Verdict.RAISE_RING1: VerdictInfo("ring 1 fills: raise it", FleetClass.RING_EXHAUSTION),
    Verdict.RAISE_RING2: VerdictInfo("ring 2 fills (jumbo / LRO buffers): raise it", FleetClass.RING_EXHAUSTION),
    Verdict.AT_MAX: VerdictInfo("the rings fill at their maximum size: spread the load (RSS, more queues)",
                                FleetClass.RING_EXHAUSTION),
    Verdict.ENABLE_RSS: VerdictInfo("one rx queue fills while others idle: enable RSS", FleetClass.RING_EXHAUSTION),
    Verdict.CPU_LIMIT_FIRST: VerdictInfo("drops with the vCPUs throttled by a limit: fix the limit first",
                                         FleetClass.CPU_LIMIT),
    Verdict.CPU_CONTENTION_FIRST: VerdictInfo("drops with the vCPUs waiting (%RDY / %CSTP): fix contention first",
                                              FleetClass.CPU_CONTENTION),
    Verdict.MEMORY_FIRST: VerdictInfo("the host swaps the VM: its vCPUs wait for pages: fix memory first",
                                      FleetClass.CPU_AND_DROPS),
    Verdict.GUEST_SATURATED: VerdictInfo("every vCPU near 100 %: the guest cannot refill its ring",
                                         FleetClass.CPU_AND_DROPS),
    Verdict.DROPS_ELSEWHERE: VerdictInfo("ring counters flat: the drops are elsewhere (its causes name where)",
                                         FleetClass.DROPS_NOT_RING, ruled_out=True),
    Verdict.NOT_NEEDED: VerdictInfo("no ring-full events or out-of-buffer drops: keep the rings", None,
                                    ruled_out=True),
    Verdict.PAST_EXHAUSTION_ONLY: VerdictInfo("the rings filled before the window, not in it", None, ruled_out=True),
    Verdict.INSUFFICIENT_EVIDENCE: VerdictInfo("the counters read cannot decide", None),
    Verdict.DRIVER_DROPS: VerdictInfo("a passthrough / guest driver's own counters drop frames", None),
}
if set(VERDICT_INFO) != set(Verdict):  # a verdict without its entry fails here, at import
    raise ImportError(f"verdicts without an entry: {sorted(set(Verdict) - set(VERDICT_INFO))}")

VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)


def verdicts_giving(klass: FleetClass) -> tuple[Verdict, ...]:
    """The verdicts that give a VM this fleet class once a deep check reads them."""
    return tuple(v for v, info in VERDICT_INFO.items() if info.fleet_class == klass)
