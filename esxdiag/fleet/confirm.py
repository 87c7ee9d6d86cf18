"""A deep check's host evidence folds back into the VM's fleet class (docs/fleet-scan.md "Deep check").

A class from vCenter counters is a suspicion; the per-VM ring verdict from the host's counters (vsish
over one window, esxdiag.rules.verdict) is proof, and decides, the first line that applies to any vNIC:

  raise-ring1 / raise-ring2 / at-max / enable-rss   ring-exhaustion, confirmed, at the per-VM report's
                                                     severity (esxdiag.vocabulary.drop_severity of the proven
                                                     vNICs' host drop rate); the reason names the counters
                                                     read: the rxSummary ring counters, or the port's
                                                     droppedRx alone when rxSummary was not read
  cpu-limit-first / cpu-contention-first             cpu-limit / cpu-contention, critical, confirmed
  memory-first / guest-saturated                     cpu-and-drops, critical, confirmed: the vCPUs cannot
                                                     refill the ring (the host swaps the VM / every vCPU
                                                     runs ~100 %), never ring-exhaustion
  drops-elsewhere with "uplink" in its causes        uplink-loss, confirmed, never ring-exhaustion
  every vNIC not-needed / past-exhaustion-only /     ring exhaustion ruled out; drops-elsewhere (naming its
  drops-elsewhere                                    causes or none): drops-not-ring, confirmed ("the drops
                                                     are mtu, page-absent"); otherwise (no drops) a drop
                                                     suspicion is cleared, judged on CPU alone
  anything else, or a failed check                   the suspicion stays, and the reason says why

drops-not-ring and uplink-loss keep the suspicion's severity when it was a drop suspicion (its rate
against ring.drops_per_s_critical), else warning. A vNIC's ``causes`` is read with .get(): results
written before verdicts had causes still fold.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from esxdiag.fleet.figures import vnic_words
from esxdiag.fleet.model import DeepEvidence
from esxdiag.fleet.snapshot import FleetVm
from esxdiag.vocabulary import DROP_CLASSES, CauseId, FleetClass, Severity, Verdict, drop_severity, verdicts_giving

PROVEN = verdicts_giving(FleetClass.RING_EXHAUSTION)  # ring counters rising, CPU not the cause
CPU_FIRST = {v: c for c in (FleetClass.CPU_LIMIT, FleetClass.CPU_CONTENTION) for v in verdicts_giving(c)}
RESOURCE_FIRST = {Verdict.MEMORY_FIRST: "the host swaps the VM: its vCPUs wait for pages (a bigger ring costs memory "
                                        "it does not have): fix memory first",
                  Verdict.GUEST_SATURATED: "every vCPU runs near 100 %: the guest cannot refill its ring (more vCPUs "
                                           "or rx queues, RSS): fix CPU first"}
ELSEWHERE = Verdict.DROPS_ELSEWHERE  # the vNIC's ring counters are flat; its `causes` name where the drops are
RULED_OUT = (Verdict.NOT_NEEDED, Verdict.PAST_EXHAUSTION_ONLY)
DECIDING = PROVEN + tuple(CPU_FIRST) + tuple(RESOURCE_FIRST) + (ELSEWHERE,) + RULED_OUT  # verdicts a class rests on
RING_COUNTERS = (("ring1_full", "ring 1 full"), ("ring2_full", "ring 2 full"),
                 ("host_out_of_buffers", "out of buffers"))  # vsish rxSummary, as esxdiag.fleet.deep records them

Judgement = tuple[str, "str | None", str]  # class, severity, reason


def _where(vm: FleetVm, vnics: Sequence[Mapping]) -> str:
    by_mac = {(n.mac or "").lower(): n for n in vm.vnics or ()}
    named = []
    for v in vnics:
        nic = by_mac.get((v.get("mac") or "").lower())
        named.append(vnic_words(nic) if nic else f"vNIC {v.get('label') or '?'} ({v.get('mac') or 'MAC unknown'})")
    return ", ".join(dict.fromkeys(named))


def _causes(vnics: Sequence[Mapping]) -> list[str]:
    return list(dict.fromkeys(str(c) for v in vnics for c in (v.get("causes") or ())))


def proven_by(vnics: Sequence[Mapping]) -> str:
    """Which host counters the proof rests on, exactly: the rxSummary ring counters that were read,
    else the vNIC port's droppedRx alone (rxSummary unreadable: the drops are taken to land on ring 1)."""
    read = [words for key, words in RING_COUNTERS if any(v.get(key) is not None for v in vnics)]
    if read:
        return f"host ring counters (vsish rxSummary: {', '.join(read)})"
    if any(v.get("dropped_rx") is not None for v in vnics):
        return "host port drops alone (the vNIC port's droppedRx; its rxSummary ring counters were not read)"
    return "counters other than the host's ring counters (the deep report names them)"


def proven_rate(vnics: Sequence[Mapping]) -> float | None:
    """The worst proven vNIC's host drop rate per second: its out-of-buffer drops, else its port's droppedRx
    (the per-VM ring finding's own order, esxdiag.rules.verdict); None when neither was measured."""
    rates = [r for v in vnics if (r := _first_rate(v)) is not None]
    return max(rates) if rates else None


def _first_rate(vnic: Mapping) -> float | None:
    return next((vnic[k] for k in ("host_out_of_buffers", "dropped_rx") if vnic.get(k) is not None), None)


def confirm(vm: FleetVm, suspicion: Judgement, deep: DeepEvidence, without_drops: Callable[[], Judgement],
            cpu_text: str, t: Mapping[str, float]) -> tuple[str, str | None, str, bool]:
    """(class, severity, reason, confirmed) once the deep check's verdicts are known."""
    klass, severity, reason = suspicion
    vnics = [v for v in deep.vnics if v.get("verdict")]
    proven = [v for v in vnics if v["verdict"] in PROVEN]
    if proven:
        verdicts = ", ".join(dict.fromkeys(v["verdict"] for v in proven))
        return (FleetClass.RING_EXHAUSTION, drop_severity(proven_rate(proven), t), f"rx ring exhaustion proven by {proven_by(proven)} on "
                f"{_where(vm, proven)} ({verdicts}, the deep check); vCenter: {reason}", True)
    cpu = [v for v in vnics if v["verdict"] in CPU_FIRST]
    if cpu:
        first = cpu[0]["verdict"]
        return (CPU_FIRST[first], Severity.CRITICAL, f"host counters say {first} on {_where(vm, cpu)} (the deep check): "
                f"fix CPU first; {cpu_text}", True)
    starved = [v for v in vnics if v["verdict"] in RESOURCE_FIRST]
    if starved:
        first = starved[0]["verdict"]
        return (FleetClass.CPU_AND_DROPS, Severity.CRITICAL, f"host counters say {first} on {_where(vm, starved)} (the deep check): "
                f"{RESOURCE_FIRST[first]}; not ring exhaustion; {cpu_text}", True)
    dropping = klass in DROP_CLASSES or klass == FleetClass.NO_DATA and severity == Severity.WARNING
    elsewhere = [v for v in vnics if v["verdict"] == ELSEWHERE]
    uplink = [v for v in elsewhere if CauseId.UPLINK in (v.get("causes") or ())]
    if uplink:
        return (FleetClass.UPLINK_LOSS, severity if dropping else Severity.WARNING, f"host counters say the drops are at the uplink "
                f"({ELSEWHERE}: {', '.join(_causes(uplink))} on {_where(vm, uplink)}, the deep check): lost before "
                f"the vSwitch, not the ring; vCenter: {reason}", True)
    if vnics and all(v["verdict"] in RULED_OUT or v["verdict"] == ELSEWHERE for v in vnics) and not deep.error:
        verdicts = ", ".join(dict.fromkeys(v["verdict"] for v in vnics))
        if elsewhere:
            what = ", ".join(_causes(elsewhere)) or "elsewhere (the deep check named no cause)"
            return (FleetClass.DROPS_NOT_RING, severity if dropping else Severity.WARNING, f"ring exhaustion ruled out by host "
                    f"counters: the drops are {what} ({verdicts} on {_where(vm, vnics)}, the deep check); "
                    f"vCenter: {reason}", True)
        if dropping:
            k, s, r = without_drops()
            return k, s, f"ring exhaustion ruled out by host counters ({verdicts} on {_where(vm, vnics)}); {r}", True
        return klass, severity, f"{reason}; deep check: {verdicts} (no ring exhaustion)", False
    why = deep.error or (f"{', '.join(dict.fromkeys(v['verdict'] for v in vnics))} on {_where(vm, vnics)}"
                                if vnics else "no ring verdict for this VM")
    return klass, severity, f"{reason}; the deep check did not decide ({why})", False
