"""Window statistics of per-vCPU CPU series, shared by the CPU rules and the ring verdict."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.join.facts import CpuFacts, finite_values
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
    origin: str = ""  # the source of the figures (esxtop, vcenter-realtime, ...)

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
_COUNTERS = {"ready_pct": "cpu.ready.summation", "costop_pct": "cpu.costop.summation",
             "max_limited_pct": "cpu.maxlimited.summation", "swap_wait_pct": "cpu.swapwait.summation",
             "run_pct": "cpu.run.summation"}
_NAMES = {"ready_pct": "%RDY", "costop_pct": "%CSTP", "max_limited_pct": "%MLMTD", "swap_wait_pct": "%SWPWT",
          "run_pct": "%RUN"}


def window_stat(cpu: CpuFacts | None, field: str, least: bool = False) -> WindowStat | None:
    """The worst vCPU's window average (``least``: the least busy vCPU's, for "every vCPU is ...")."""
    if cpu is None:
        return None
    best = None
    for label, values in getattr(cpu, field).items():
        present, total = finite_values([v for v in values if v is not None])
        if not present:
            continue
        avg = total / len(present)
        if best is None or (avg < best[0] if least else avg > best[0]):
            best = (avg, max(present), label)
    if best is None:
        return None
    locator = _LOCATORS[field] if cpu.source == "esxtop" else _COUNTERS[field]
    return WindowStat(f"{_NAMES[field]} ({cpu.source})", best[0], best[1], best[2], cpu.file, locator, cpu.bound,
                      best[0] * cpu.bound_divisor if cpu.bound == "lower" else None, cpu.source)


def judged_on(cpu: CpuFacts | None, whole: CpuFacts | None, t: dict[str, float]) -> tuple[CpuFacts, ...]:
    """The CPU figures a verdict rests on: esxtop's (2-5 s samples) alone when they cover at least
    cpu.esxtop_coverage_min_pct of the window; beside them vCenter's per-vCPU figures for the whole window
    when esxtop covers less (a sliver never speaks for the window when vCenter saw all of it). With two
    sources each figure is the worse of the two, named by the source that decided it."""
    if cpu is None:
        return ()
    if whole is None or coverage(cpu, t) is None or _share(whole) < t["cpu.esxtop_coverage_min_pct"]:
        return (cpu,)
    return (cpu, whole)


def _share(cpu: CpuFacts) -> float:
    """The percentage of the window the figures cover (0 when either is unknown)."""
    return 100 * cpu.covered_s / cpu.window_s if cpu.covered_s and cpu.window_s else 0.0


def worst_stat(sources: tuple[CpuFacts, ...], field: str, least: bool = False) -> WindowStat | None:
    """The worse of the sources' window statistics for one figure (the higher worst-vCPU average)."""
    if len(sources) == 1:  # the common case (one source), without the comparison's lists
        return window_stat(sources[0], field, least)
    stats = [s for s in (window_stat(cpu, field, least) for cpu in sources) if s is not None]
    return max(stats, key=lambda s: s.worst_avg) if stats else None


def vm_stat(vm, field: str, t: dict[str, float], least: bool = False) -> WindowStat | None:
    """A VM's window statistic for one figure, from every source it is judged on (judged_on)."""
    return worst_stat(judged_on(vm.cpu, vm.cpu_whole, t), field, least)


def whole_window_evidence(cpu: CpuFacts, whole: CpuFacts, t: dict[str, float]) -> Evidence:
    """Why a second source was read: esxtop covered part of the window, vCenter all of it."""
    return Evidence(f"{cpu.covered_s:g} s esxtop covered of the {cpu.window_s:g} s window: CPU judged also on "
                    f"{whole.source} per-vCPU figures ({whole.samples_with_values} samples of {whole.sample_s:g} s, "
                    "the whole window); each figure is the worse of the two sources, named in its evidence",
                    round(_share(cpu), 1), "% of the window esxtop covered", t["cpu.esxtop_coverage_min_pct"], "<",
                    whole.file, "cpu.ready.summation")


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
    whole_window: Evidence | None = None  # esxtop covered part of the window, vCenter all of it: both judged

    @property
    def words(self) -> str:
        """How the verdict may speak of CPU: never "healthy" while the host swaps the VM, every vCPU is
        saturated or the figures cover only part of the window (docs/diagnosis.md)."""
        if not self.measured:
            return "not measured"
        if self.swap is not None:
            return (f"not healthy: the host swaps this VM (%SWPWT {self.swap.qualifier}{self.swap.worst_avg:.1f}% "
                    "per vCPU)")
        if self.saturated is not None:
            return f"saturated: every vCPU runs {self.saturated.worst_avg:.0f}% or more of the time (%RUN)"
        if not self.undecided and self.whole_window is not None and self.partial is not None:
            return f"healthy over the whole window (vCenter's per-vCPU figures; {self.partial.what})"
        if not self.undecided and self.partial is not None:
            return f"healthy in the {self.partial.what}"
        if not self.undecided:
            return "healthy"
        bounds = any(s is not None and s.bound != "exact" for s in (self.ready, self.costop, self.limited))
        return "not ruled out as the cause" + (" (the vCPU count is unknown)" if bounds else " (%RDY not measured)")

    def figure(self, name: str, stat: WindowStat) -> str:
        """"%RDY 13.0%", and which source decided it when two were judged ("... from vcenter-realtime")."""
        decided = f" from {stat.origin}" if self.whole_window is not None and stat.origin else ""
        return f"{name} {stat.qualifier}{stat.worst_avg:.1f}%{decided}"

    def over(self, t: dict[str, float]) -> tuple[Evidence, ...]:
        """The figures as evidence, each against its threshold (for the CPU-first verdicts)."""
        return tuple(s.evidence(th) for s, th in self._pairs(t) if s is not None) + (
            (self.whole_window,) if self.whole_window else ())

    def _pairs(self, t: dict[str, float]):
        return ((self.ready, t["cpu.ready_pct_critical"]), (self.costop, t["cpu.costop_pct"]),
                (self.limited, t["cpu.max_limited_pct"]))


def cpu_state(cpu: CpuFacts | None, limit_mhz: int | None, t: dict[str, float],
              whole: CpuFacts | None = None) -> CpuState:
    """whole: vCenter's per-vCPU figures for the whole window beside esxtop's (judged_on says when they count)."""
    sources = judged_on(cpu, whole, t)
    ready, costop, limited = (worst_stat(sources, f) for f in ("ready_pct", "costop_pct", "max_limited_pct"))
    pairs = ((ready, t["cpu.ready_pct_critical"]), (costop, t["cpu.costop_pct"]),
             (limited, t["cpu.max_limited_pct"]))
    limit_judged = judged(limited, t["cpu.max_limited_pct"])
    throttled = limit_judged == "above" or (limit_mhz is not None and limit_judged in (None, "unknown"))
    contended = "above" in (judged(ready, t["cpu.ready_pct_critical"]), judged(costop, t["cpu.costop_pct"]))
    both = whole_window_evidence(sources[0], sources[1], t) if len(sources) > 1 else None
    read = [(s, th, s.judge(th)) for s, th in pairs if s is not None]
    healthy = tuple(s.evidence(th, "<=") for s, th, j in read if j == "below") + ((both,) if both else ())
    straddled = tuple(s for s, th, j in read if j == "unknown")
    undecided = tuple(
        Evidence(f"{s.what} per vCPU is {s.range_words()} (the vCPU count is unknown): it can be neither confirmed "
                 f"nor ruled out against {th:g}%", round(s.worst_avg, 2), "% per vCPU (least)", th, "?",
                 s.source, s.locator)
        for s, th, j in read if j == "unknown")
    measured = any(s is not None for s in (ready, costop, limited))  # a series of only NaN is not a measurement
    if not measured:
        undecided += (Evidence("CPU was not measured in the window: contention or a limit cannot be ruled out",
                               None),)
    elif ready is None:
        undecided += (Evidence("%RDY was not measured (no usable values): contention cannot be ruled out", None),)
    swap = worst_stat(sources, "swap_wait_pct")
    swap = swap if judged(swap, t["cpu.swap_wait_pct"]) == "above" else None
    run = worst_stat(sources, "run_pct", least=True)
    saturated = run if run is not None and run.bound == "exact" and run.worst_avg >= t["cpu.run_pct_saturated"] else None
    partial = coverage(cpu, t)
    caveats = tuple(e for e in (
        swap.evidence(t["cpu.swap_wait_pct"]) if swap else None,
        Evidence(f"%RUN ({cpu.source}), least busy vCPU ({saturated.vcpu}) window average: every vCPU is saturated",
                 round(saturated.worst_avg, 2), "% per vCPU", t["cpu.run_pct_saturated"], ">=", saturated.source,
                 saturated.locator)
        if saturated and cpu else None, partial) if e is not None)
    return CpuState(ready, costop, limited, throttled, contended, healthy, undecided, measured, straddled,
                    swap, saturated, partial, caveats, both)


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
