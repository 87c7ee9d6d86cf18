"""Window statistics of per-vCPU CPU series, shared by the CPU rules and the ring verdict."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.facts import CpuFacts
from esxdiag.result import Evidence


@dataclass(frozen=True)
class WindowStat:
    what: str
    worst_avg: float  # the worst vCPU's average over the window
    peak: float
    vcpu: str
    source: str | None
    locator: str

    def evidence(self, threshold: float | None, comparison: str = ">") -> Evidence:
        return Evidence(f"{self.what}, worst vCPU ({self.vcpu}) window average (peak {self.peak:.2f})",
                        round(self.worst_avg, 2), "% per vCPU", threshold, comparison, self.source, self.locator)


_LOCATORS = {"ready_pct": "% Ready", "costop_pct": "% CoStop", "max_limited_pct": "% Max Limited",
             "swap_wait_pct": "% Swap Wait"}
_NAMES = {"ready_pct": "%RDY", "costop_pct": "%CSTP", "max_limited_pct": "%MLMTD", "swap_wait_pct": "%SWPWT"}


def window_stat(cpu: CpuFacts | None, field: str) -> WindowStat | None:
    if cpu is None:
        return None
    best = None
    for label, values in getattr(cpu, field).items():
        present = [v for v in values if v is not None]
        if not present:
            continue
        avg = sum(present) / len(present)
        if best is None or avg > best[0]:
            best = (avg, max(present), label)
    if best is None:
        return None
    locator = _LOCATORS[field] if cpu.source == "esxtop" else {
        "ready_pct": "cpu.ready.summation", "costop_pct": "cpu.costop.summation",
        "max_limited_pct": "cpu.maxlimited.summation", "swap_wait_pct": "cpu.swapwait.summation"}[field]
    return WindowStat(f"{_NAMES[field]} ({cpu.source})", best[0], best[1], best[2], cpu.file, locator)


@dataclass(frozen=True)
class CpuGate:
    """Is CPU the first thing to fix before rings? The ring verdict's test, shared with the fleet scan."""

    ready: WindowStat | None
    costop: WindowStat | None
    limited: WindowStat | None
    throttled: bool  # %MLMTD over threshold, or a limit set with no %MLMTD figures
    contended: bool  # worst-vCPU %RDY over the critical threshold or %CSTP over its threshold


def cpu_gate(cpu: CpuFacts | None, cpu_limit_mhz: int | None, t: dict[str, float]) -> CpuGate:
    limited, ready, costop = (window_stat(cpu, f) for f in ("max_limited_pct", "ready_pct", "costop_pct"))
    throttled = (limited is not None and limited.worst_avg > t["cpu.max_limited_pct"]) or \
        (cpu_limit_mhz is not None and limited is None)
    contended = (ready is not None and ready.worst_avg > t["cpu.ready_pct_critical"]) or \
        (costop is not None and costop.worst_avg > t["cpu.costop_pct"])
    return CpuGate(ready, costop, limited, throttled, contended)
