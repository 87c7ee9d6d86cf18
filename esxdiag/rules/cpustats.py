"""Window statistics of per-vCPU CPU series, shared by the CPU rules and the ring verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass

from esxdiag.join.facts import CpuFacts
from esxdiag.result import Evidence


@dataclass(frozen=True)
class WindowStat:
    what: str
    worst_avg: float  # the worst vCPU's average over the window
    peak: float
    vcpu: str
    source: str | None
    locator: str
    bound: str = "exact"  # "lower": the true per-vCPU figure is at least this; "upper": at most this
    ceiling: float | None = None  # with a lower bound: the most the true figure can be (the sum as one vCPU)

    @property
    def qualifier(self) -> str:
        return {"lower": "at least ", "upper": "at most "}.get(self.bound, "")

    @property
    def most(self) -> float:
        return self.ceiling if self.bound == "lower" and self.ceiling is not None else self.worst_avg

    def judge(self, threshold: float) -> str:
        """"above" / "below" the threshold, or "unknown" when the bounds straddle it: the least the
        figure can be must be over it for "above", the most it can be under it for "below"."""
        least = 0.0 if self.bound == "upper" else self.worst_avg
        if least > threshold:
            return "above"
        return "below" if self.most <= threshold else "unknown"

    def range_words(self) -> str:
        if self.bound == "exact":
            return f"{self.worst_avg:.2f}%"
        if self.bound == "upper":
            return f"at most {self.worst_avg:.2f}%"
        return f"between {self.worst_avg:.2f}% and {self.most:.2f}%"

    def evidence(self, threshold: float | None, comparison: str = ">") -> Evidence:
        bound = f"; {self.bound} bound, vCPU count unknown" if self.bound != "exact" else ""
        return Evidence(f"{self.what}, worst vCPU ({self.vcpu}) window average (peak {self.peak:.2f}{bound})",
                        round(self.worst_avg, 2), "% per vCPU", threshold, comparison, self.source, self.locator)


_LOCATORS = {"ready_pct": "% Ready", "costop_pct": "% CoStop", "max_limited_pct": "% Max Limited",
             "swap_wait_pct": "% Swap Wait", "run_pct": "% Run"}
_NAMES = {"ready_pct": "%RDY", "costop_pct": "%CSTP", "max_limited_pct": "%MLMTD", "swap_wait_pct": "%SWPWT",
          "run_pct": "%RUN"}


def window_stat(cpu: CpuFacts | None, field: str, least: bool = False) -> WindowStat | None:
    """The worst vCPU's window average (``least``: the least busy vCPU's, for "every vCPU is ...")."""
    if cpu is None:
        return None
    best = None
    for label, values in getattr(cpu, field).items():
        present = [v for v in values if v is not None and math.isfinite(v)]  # never compare NaN/inf
        if not present:
            continue
        avg = sum(present) / len(present)
        if best is None or (avg < best[0] if least else avg > best[0]):
            best = (avg, max(present), label)
    if best is None:
        return None
    locator = _LOCATORS[field] if cpu.source == "esxtop" else {
        "ready_pct": "cpu.ready.summation", "costop_pct": "cpu.costop.summation",
        "max_limited_pct": "cpu.maxlimited.summation", "swap_wait_pct": "cpu.swapwait.summation",
        "run_pct": "cpu.run.summation"}[field]
    return WindowStat(f"{_NAMES[field]} ({cpu.source})", best[0], best[1], best[2], cpu.file, locator, cpu.bound,
                      best[0] * cpu.bound_divisor if cpu.bound == "lower" else None)


def judged(stat: WindowStat | None, threshold: float) -> str | None:
    return None if stat is None else stat.judge(threshold)


@dataclass(frozen=True)
class CpuState:
    """What the window's CPU figures say for a ring verdict: throttled by a limit, contended, healthy
    (evidence for it), or undecided (bounds that cannot tell, or not measured: evidence against)."""

    ready: WindowStat | None
    costop: WindowStat | None
    limited: WindowStat | None
    throttled: bool
    contended: bool
    healthy: tuple[Evidence, ...]
    undecided: tuple[Evidence, ...]
    measured: bool
    straddled: tuple[WindowStat, ...] = ()  # bounds (vCPU count unknown) that neither confirm nor rule out
    swap: WindowStat | None = None  # %SWPWT over its threshold: the host swaps the VM
    saturated: WindowStat | None = None  # the least busy vCPU's %RUN at the saturation threshold: every vCPU busy
    partial: Evidence | None = None  # esxtop covered only part of the window
    caveats: tuple[Evidence, ...] = ()  # each of the above as evidence against a ring raise

    @property
    def words(self) -> str:
        """How the verdict may speak of CPU: never "healthy" while the host swaps the VM, every vCPU is
        saturated or the figures cover only part of the window (domain.md section 10)."""
        if not self.measured:
            return "not measured"
        if self.swap is not None:
            return (f"not healthy: the host swaps this VM (%SWPWT {self.swap.qualifier}{self.swap.worst_avg:.1f}% "
                    "per vCPU)")
        if self.saturated is not None:
            return f"saturated: every vCPU runs {self.saturated.worst_avg:.0f}% or more of the time (%RUN)"
        if not self.undecided and self.partial is not None:
            return f"healthy in the {self.partial.what}"
        if not self.undecided:
            return "healthy"
        bounds = any(s is not None and s.bound != "exact" for s in (self.ready, self.costop, self.limited))
        return "not ruled out as the cause" + (" (the vCPU count is unknown)" if bounds else " (%RDY not measured)")

    def over(self, t: dict[str, float]) -> tuple[Evidence, ...]:
        """The figures as evidence, each against its threshold (for the CPU-first verdicts)."""
        return tuple(s.evidence(th) for s, th in self._pairs(t) if s is not None)

    def _pairs(self, t: dict[str, float]):
        return ((self.ready, t["cpu.ready_pct_critical"]), (self.costop, t["cpu.costop_pct"]),
                (self.limited, t["cpu.max_limited_pct"]))


def cpu_state(cpu: CpuFacts | None, limit_mhz: int | None, t: dict[str, float]) -> CpuState:
    ready, costop, limited = (window_stat(cpu, f) for f in ("ready_pct", "costop_pct", "max_limited_pct"))
    pairs = ((ready, t["cpu.ready_pct_critical"]), (costop, t["cpu.costop_pct"]),
             (limited, t["cpu.max_limited_pct"]))
    limit_judged = judged(limited, t["cpu.max_limited_pct"])
    throttled = limit_judged == "above" or (limit_mhz is not None and limit_judged in (None, "unknown"))
    contended = "above" in (judged(ready, t["cpu.ready_pct_critical"]), judged(costop, t["cpu.costop_pct"]))
    healthy = tuple(s.evidence(th, "<=") for s, th in pairs if judged(s, th) == "below")
    straddled = tuple(s for s, th in pairs if judged(s, th) == "unknown")
    undecided = tuple(
        Evidence(f"{s.what} per vCPU is {s.range_words()} (the vCPU count is unknown): it can be neither confirmed "
                 f"nor ruled out against {th:g}%", round(s.worst_avg, 2), "% per vCPU (least)", th, "?",
                 s.source, s.locator)
        for s, th in pairs if judged(s, th) == "unknown")
    measured = any(s is not None for s in (ready, costop, limited))  # a series of only NaN is not a measurement
    if not measured:
        undecided += (Evidence("CPU was not measured in the window: contention or a limit cannot be ruled out",
                               None),)
    elif ready is None:
        undecided += (Evidence("%RDY was not measured (no usable values): contention cannot be ruled out", None),)
    swap = window_stat(cpu, "swap_wait_pct")
    swap = swap if judged(swap, t["cpu.swap_wait_pct"]) == "above" else None
    run = window_stat(cpu, "run_pct", least=True)
    saturated = run if run is not None and run.bound == "exact" and run.worst_avg >= t["cpu.run_pct_saturated"] else None
    partial = coverage(cpu, t)
    caveats = tuple(e for e in (
        swap.evidence(t["cpu.swap_wait_pct"]) if swap else None,
        Evidence(f"%RUN ({cpu.source}), least busy vCPU ({run.vcpu}) window average: every vCPU is saturated",
                 round(run.worst_avg, 2), "% per vCPU", t["cpu.run_pct_saturated"], ">=", run.source, run.locator)
        if saturated else None, partial) if e is not None)
    return CpuState(ready, costop, limited, throttled, contended, healthy, undecided, measured, straddled,
                    swap, saturated, partial, caveats)


def coverage(cpu: CpuFacts | None, t: dict[str, float]) -> Evidence | None:
    """esxtop samples that cover less than cpu.esxtop_coverage_min_pct of the window (3 samples of 2 s in
    60 s): the CPU figures speak for that part only."""
    if cpu is None or cpu.source != "esxtop" or not cpu.covered_s or not cpu.window_s:
        return None
    share = 100 * cpu.covered_s / cpu.window_s
    if share >= t["cpu.esxtop_coverage_min_pct"]:
        return None
    return Evidence(f"{cpu.covered_s:g} s esxtop covered of the {cpu.window_s:g} s window "
                    f"({cpu.samples_with_values} samples of {cpu.sample_s:g} s)", round(share, 1),
                    "% of the window", t["cpu.esxtop_coverage_min_pct"], "<", cpu.file, "timestamps")
