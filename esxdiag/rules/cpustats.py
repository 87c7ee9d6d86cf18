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
