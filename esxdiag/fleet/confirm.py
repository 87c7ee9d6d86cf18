"""A deep check's host evidence folds back into the VM's fleet class (docs/fleet-scan.md "Deep check").

A class from vCenter counters is a suspicion; the per-VM ring verdict from the host's ring counters
(vsish over one window, esxdiag.rules.verdict) is proof, and decides:

  raise-ring1 / raise-ring2 / at-max / enable-rss   ring-exhaustion, critical, confirmed
  cpu-limit-first / cpu-contention-first             cpu-limit / cpu-contention, critical, confirmed
  not-needed / past-exhaustion-only (every vNIC)     a drop suspicion is cleared: "ruled out by host
                                                     counters", the VM judged on CPU alone, confirmed
  anything else, or a failed check                   the suspicion stays, and the reason says why
"""

from __future__ import annotations

from typing import Callable

from esxdiag.fleet.figures import vnic_words
from esxdiag.fleet.snapshot import FleetVm
from esxdiag.vocabulary import DROP_CLASSES

PROVEN = ("raise-ring1", "raise-ring2", "at-max", "enable-rss")  # ring counters rising, CPU not the cause
CPU_FIRST = {"cpu-limit-first": "cpu-limit", "cpu-contention-first": "cpu-contention"}
RULED_OUT = ("not-needed", "past-exhaustion-only")

Judgement = tuple[str, "str | None", str]  # class, severity, reason


def _where(vm: FleetVm, vnics: list[dict]) -> str:
    by_mac = {(n.mac or "").lower(): n for n in vm.vnics or ()}
    named = []
    for v in vnics:
        nic = by_mac.get((v.get("mac") or "").lower())
        named.append(vnic_words(nic) if nic else f"vNIC {v.get('label') or '?'} ({v.get('mac') or 'MAC unknown'})")
    return ", ".join(dict.fromkeys(named))


def confirm(vm: FleetVm, suspicion: Judgement, deep: dict, without_drops: Callable[[], Judgement],
            cpu_text: str) -> tuple[str, str | None, str, bool]:
    """(class, severity, reason, confirmed) once the deep check's verdicts are known."""
    klass, severity, reason = suspicion
    vnics = [v for v in deep.get("vnics") or () if v.get("verdict")]
    proven = [v for v in vnics if v["verdict"] in PROVEN]
    if proven:
        verdicts = ", ".join(dict.fromkeys(v["verdict"] for v in proven))
        return ("ring-exhaustion", "critical", f"rx ring exhaustion proven by host ring counters on "
                f"{_where(vm, proven)} ({verdicts}, the deep check); vCenter: {reason}", True)
    cpu = [v for v in vnics if v["verdict"] in CPU_FIRST]
    if cpu:
        first = cpu[0]["verdict"]
        return (CPU_FIRST[first], "critical", f"host counters say {first} on {_where(vm, cpu)} (the deep check): "
                f"fix CPU first; {cpu_text}", True)
    if vnics and all(v["verdict"] in RULED_OUT for v in vnics) and not deep.get("error"):
        verdicts = ", ".join(dict.fromkeys(v["verdict"] for v in vnics))
        if klass in DROP_CLASSES or klass == "no-data" and severity == "warning":
            k, s, r = without_drops()
            return k, s, f"ring exhaustion ruled out by host counters ({verdicts} on {_where(vm, vnics)}); {r}", True
        return klass, severity, f"{reason}; deep check: {verdicts} (no ring exhaustion)", False
    why = deep.get("error") or (f"{', '.join(dict.fromkeys(v['verdict'] for v in vnics))} on {_where(vm, vnics)}"
                                if vnics else "no ring verdict for this VM")
    return klass, severity, f"{reason}; the deep check did not decide ({why})", False
