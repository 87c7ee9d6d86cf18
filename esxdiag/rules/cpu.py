"""CPU rules (docs/diagnosis.md): contention (%RDY), co-stop (%CSTP), limits (%MLMTD
and the configured limit), swap wait. Per-vCPU figures over the window; a figure that is only a
bound (vCPU count unknown) is judged only where the bound decides."""

from __future__ import annotations

from esxdiag.join.facts import VmFacts
from esxdiag.result import Evidence, Finding, RuleCheck
from esxdiag.rules.cpustats import WindowStat, vm_stat
from esxdiag.rules.limits import limit_place, limiting_pools
from esxdiag.rules.remediation import (vsphere_add_vcpus, vsphere_relieve_contention, vsphere_relieve_memory,
                                        vsphere_remove_limit)

THRESHOLDS = ("cpu.ready_pct_warning", "cpu.ready_pct_critical", "cpu.costop_pct", "cpu.max_limited_pct",
              "cpu.swap_wait_pct")


def _skip(rule: str) -> RuleCheck:
    return RuleCheck(rule, "skip", "no CPU figures in the window (esxtop or vCenter performance not collected)")


def _undecided_words(stat: WindowStat, name: str, threshold: float) -> str:
    return (f"worst vCPU {name} is {stat.range_words()} (the vCPU count is unknown), which cannot tell whether it "
            f"is over {threshold:g}")


def _undecided(rule: str, stat: WindowStat, name: str, threshold: float) -> RuleCheck:
    return RuleCheck(rule, "skip", _undecided_words(stat, name, threshold))


# The words for each CPU level, shared by these rules and the fleet scan's reasons (one vocabulary).

def ready_band(severity: str, t: dict[str, float]) -> str:
    """"contention" above the critical %RDY, "investigate (5-10 %)" between the two thresholds."""
    return "contention" if severity == "critical" else \
        f"investigate ({t['cpu.ready_pct_warning']:g}-{t['cpu.ready_pct_critical']:g} %)"


def ready_words(ready: WindowStat, t: dict[str, float]) -> tuple[str | None, str]:
    """(severity: critical | warning | None (healthy) | "unknown", words with the threshold) for the worst
    vCPU's %RDY; never "healthy" above the warning threshold."""
    warn, crit = t["cpu.ready_pct_warning"], t["cpu.ready_pct_critical"]
    judged = ready.judge(warn)
    if judged == "below":
        return None, f"worst vCPU %RDY {ready.range_words()} <= {warn:g}"
    if judged == "unknown":
        return "unknown", _undecided_words(ready, "%RDY", warn)
    severity = "critical" if ready.worst_avg > crit else "warning"
    return severity, (f"CPU ready time high: {ready_band(severity, t)} (worst vCPU %RDY "
                      f"{ready.qualifier}{ready.worst_avg:.1f}% > {crit if severity == 'critical' else warn:g})")


def ready_from_limit(ready: WindowStat, limited: WindowStat | None, t: dict[str, float]) -> bool:
    """The ready time is the CPU limit's (%MLMTD over its threshold and at least
    cpu.max_limited_share_of_ready of %RDY): the host is not contended for this VM."""
    return (limited is not None and limited.judge(t["cpu.max_limited_pct"]) == "above"
            and limited.worst_avg >= t["cpu.max_limited_share_of_ready"] * ready.worst_avg)


def limit_ready_words(ready: WindowStat, limited: WindowStat) -> str:
    """%RDY that the CPU limit causes, in the words of the cpu-contention rule's finding."""
    return (f"CPU ready time caused by its CPU limit (worst vCPU %RDY {ready.qualifier}{ready.worst_avg:.1f}%, "
            f"of which {limited.worst_avg:.1f}% is %MLMTD)")


def costop_words(costop: WindowStat, t: dict[str, float]) -> tuple[bool | None, str]:
    """(over the threshold: True / False / None when a bound cannot tell, words)."""
    limit = t["cpu.costop_pct"]
    judged = costop.judge(limit)
    if judged == "below":
        return False, f"worst vCPU %CSTP {costop.range_words()} <= {limit:g}"
    if judged == "unknown":
        return None, _undecided_words(costop, "%CSTP", limit)
    return True, (f"co-stop: too many vCPUs for the host's load (worst vCPU %CSTP {costop.qualifier}"
                  f"{costop.worst_avg:.1f}% > {limit:g})")


def limited_words(limited: WindowStat | None, limit_mhz: int | None, t: dict[str, float]) -> tuple[bool | None, str]:
    """(throttling: True / False / None when it cannot be told, words) for %MLMTD and the configured limit."""
    threshold = t["cpu.max_limited_pct"]
    judged = limited.judge(threshold) if limited is not None else None
    if limited is not None and judged == "above":
        return True, (f"a CPU limit is throttling (%MLMTD {limited.qualifier}{limited.worst_avg:.1f}% > "
                      f"{threshold:g}" + (f", limit {limit_mhz} MHz)" if limit_mhz else ")"))
    if limited is not None and judged == "below":
        return False, f"%MLMTD {limited.range_words()} <= {threshold:g}"
    if limit_mhz is not None:
        return None, f"CPU limit {limit_mhz} MHz set, %MLMTD not measured"
    return (None, _undecided_words(limited, "%MLMTD", threshold)) if limited is not None else (False, "")


def cpu_contention(vm: VmFacts, t: dict[str, float]):
    ready = vm_stat(vm, "ready_pct", t)
    if ready is None:
        return [_skip("cpu-contention")]
    warn, crit = t["cpu.ready_pct_warning"], t["cpu.ready_pct_critical"]
    limited = vm_stat(vm, "max_limited_pct", t)
    level, words = ready_words(ready, t)
    if level is None:
        return [RuleCheck("cpu-contention", "pass", words)]
    if level == "unknown":
        return [RuleCheck("cpu-contention", "skip", words)]
    against = []
    if limited is not None and limited.judge(t["cpu.max_limited_pct"]) == "above":
        against.append(Evidence("most of the ready time is caused by the CPU limit (%MLMTD)",
                                round(limited.worst_avg, 2), "% per vCPU", None, None, limited.source,
                                limited.locator))
    severity = "critical" if ready.worst_avg > crit else "warning"
    band = ready_band(severity, t)
    if limited is not None and ready_from_limit(ready, limited, t):  # the limit, not other VMs, causes the wait
        return [Finding(
            "cpu-contention", "info", vm.name, None, f"CPU ready time on {vm.name} comes from its CPU limit",
            f"Worst vCPU ready {ready.qualifier}{ready.worst_avg:.1f}%, of which {limited.worst_avg:.1f}% is "
            "%MLMTD: see the CPU limit finding; the host itself is not contended for this VM.",
            evidence=(ready.evidence(crit),), evidence_against=tuple(against),
        )]
    bound = (f" ({ready.bound} bound: the vCPU count is unknown, so the group sum was divided by every world "
             "of the VM)") if ready.bound != "exact" else ""
    return [Finding(
        "cpu-contention", severity, vm.name, None, f"CPU ready time high on {vm.name}: {band}",
        f"Worst vCPU waited to be scheduled {ready.qualifier}{ready.worst_avg:.1f}% of the window "
        f"(peak {ready.peak:.1f}%){bound}; threshold {warn:g}/{crit:g}%.",
        evidence=(ready.evidence(crit if severity == "critical" else warn),),
        evidence_against=tuple(against),
        remediation=() if against else (vsphere_relieve_contention(vm.name, False),),
    )]


def cpu_costop(vm: VmFacts, t: dict[str, float]):
    costop = vm_stat(vm, "costop_pct", t)
    if costop is None:
        return [_skip("cpu-costop")]
    limit = t["cpu.costop_pct"]
    over, words = costop_words(costop, t)
    if over is False:
        return [RuleCheck("cpu-costop", "pass", words)]
    if over is None:
        return [RuleCheck("cpu-costop", "skip", words)]
    return [Finding(
        "cpu-costop", "warning", vm.name, None, f"Co-stop on {vm.name}: too many vCPUs for the host's load",
        f"Worst vCPU co-stopped {costop.qualifier}{costop.worst_avg:.1f}% of the window (threshold {limit:g}%).",
        evidence=(costop.evidence(limit),), remediation=(vsphere_relieve_contention(vm.name, True, vm.vcpus),),
    )]


def cpu_limit(vm: VmFacts, t: dict[str, float]):
    limited = vm_stat(vm, "max_limited_pct", t)
    limit = vm.cpu_limit_mhz
    threshold = t["cpu.max_limited_pct"]
    judged = limited.judge(threshold) if limited is not None else None
    configured = Evidence("CPU limit configured on the VM", limit, "MHz", None, None, vm.inventory_file,
                          "cpu_allocation.limit_mhz")
    if limited is not None and judged == "above":
        place = limit_place(vm)
        return [Finding(
            "cpu-limit", "critical", vm.name, None, f"A CPU limit is throttling {vm.name}",
            f"Worst vCPU spent {limited.qualifier}{limited.worst_avg:.1f}% of the window ready-but-limited (%MLMTD)"
            + (f"; the VM has a {limit} MHz limit." if limit and not place.evidence else f": {place.words}."),
            evidence=(limited.evidence(threshold),) + ((configured,) if limit else ()) + place.evidence,
            remediation=place.remediation,
        )]
    if limit is not None:
        measured = judged == "below"
        against = (limited.evidence(threshold, "<="),) if measured and limited is not None else ()
        return [Finding(
            "cpu-limit", "info" if measured else "warning", vm.name, None,
            f"{vm.name} has a {limit} MHz CPU limit",
            "A CPU limit is configured" + (" but did not throttle in this window (%MLMTD 0)." if measured
                                           else "; CPU was not measured in the window, so its effect is unknown."),
            evidence=(configured,), evidence_against=against, remediation=(vsphere_remove_limit(vm.name, limit),),
        )]
    pools = limiting_pools(vm)
    if pools:  # the VM has none of its own; a pool above it does, throttling or not in this window
        place = limit_place(vm)
        measured = judged == "below"
        return [Finding(
            "cpu-limit", "info" if measured else "warning", vm.name, None,
            f"A resource pool above {vm.name} has a CPU limit",
            f"{place.words[0].upper()}{place.words[1:]}"
            + ("; it did not throttle this VM in this window (%MLMTD 0)." if measured else
               "; CPU was not measured in the window, so its effect is unknown." if judged is None else "."),
            evidence=place.evidence,
            evidence_against=(limited.evidence(threshold, "<="),) if measured and limited is not None else (),
            remediation=() if measured else place.remediation)]  # a pool's cap is shared, often on purpose
    if limited is None:
        return [RuleCheck("cpu-limit", "pass" if vm.inventory_file else "skip",
                          "no CPU limit configured" if vm.inventory_file else
                          "CPU limit unknown (no vCenter inventory) and no %MLMTD figures")]
    if judged == "unknown":
        return [_undecided("cpu-limit", limited, "%MLMTD", threshold)]
    return [RuleCheck("cpu-limit", "pass", f"%MLMTD {limited.worst_avg:.2f} and no CPU limit configured")]


def cpu_swap_wait(vm: VmFacts, t: dict[str, float]):
    swap = vm_stat(vm, "swap_wait_pct", t)
    if swap is None:
        return [RuleCheck("cpu-swap-wait", "skip", "no %SWPWT figures (esxtop not collected)")]
    limit = t["cpu.swap_wait_pct"]
    judged = swap.judge(limit)
    if judged == "below":
        return [RuleCheck("cpu-swap-wait", "pass", f"%SWPWT {swap.range_words()} <= {limit:g}")]
    if judged == "unknown":
        return [_undecided("cpu-swap-wait", swap, "%SWPWT", limit)]
    return [Finding("cpu-swap-wait", "warning", vm.name, None, f"{vm.name} waits on swapped memory",
                    f"%SWPWT {swap.qualifier}{swap.worst_avg:.1f}% (threshold {limit:g}%): the host swaps this VM; its "
                    "vCPUs wait for pages and cannot refill rx rings, and a bigger ring costs guest memory it does "
                    "not have.", evidence=(swap.evidence(limit),), remediation=(vsphere_relieve_memory(vm.name),))]


def cpu_saturation(vm: VmFacts, t: dict[str, float]):
    """Every vCPU busy nearly all the time with %RDY low: the guest itself cannot keep up (docs/diagnosis.md)."""
    run = vm_stat(vm, "run_pct", t, least=True)
    if run is None:
        return [RuleCheck("cpu-saturation", "skip", "no %RUN figures (esxtop not collected)")]
    limit = t["cpu.run_pct_saturated"]
    if run.bound != "exact" or run.worst_avg < limit:
        return [RuleCheck("cpu-saturation", "pass", f"least busy vCPU %RUN {run.range_words()} < {limit:g}")]
    return [Finding(
        "cpu-saturation", "warning", vm.name, None, f"Every vCPU of {vm.name} is saturated",
        f"The least busy vCPU ran {run.worst_avg:.1f}% of the window (%RUN, threshold {limit:g}%) while ready time "
        "stayed low: the guest has no CPU to spare to refill its rx rings. More vCPUs (each brings an rx queue), "
        "RSS or less work per VM; a bigger ring only absorbs bursts.",
        evidence=(Evidence(f"{run.what}, least busy vCPU ({run.vcpu}) window average", round(run.worst_avg, 2),
                           "% per vCPU", limit, ">=", run.source, run.locator),),
        remediation=(vsphere_add_vcpus(vm.name, vm.vcpus, None, vm.guest_os,
                                       title=f"Give {vm.name} more vCPUs (and rx queues)"),))]


RULES = (cpu_contention, cpu_costop, cpu_limit, cpu_swap_wait, cpu_saturation)
