"""Per-vCPU CPU figures from esxtop or vCenter, normalised one way (docs/diagnosis.md).

esxtop ``Group Cpu`` % Ready / % CoStop / % Max Limited are sums over the VM's worlds: per vCPU
= sum / vCPUs (never / Members when the vCPU count is known). vCenter ``cpu.ready.summation`` is
milliseconds per sample interval: % = ms / (interval_s * 1000) * 100 (ms / 200 at 20 s); the
aggregate instance "" is divided by numCPU when per-vCPU instances are absent.

Without a vCPU count (no vCenter, no guest nproc, no ``vmx-vcpu-N`` worlds in the file) the sums
still bound the per-vCPU figure: sum / Members is a lower bound (Members counts every world of the
VM, vCPU or not) and the sum itself an upper bound (one vCPU). ``CpuFacts.bound`` says which one
the series are; the rules judge contention only on a lower bound and health only on an upper one.

Values that are not numbers (NaN, inf) or negative are damaged cells, not measurements: they are
dropped (a gap in the series) and counted in ``CpuFacts.warnings``, never compared."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import overload

from esxdiag.join.facts import CpuFacts

Values = tuple[float | None, ...]
_WHOLE = {int, type(None)}


class _Cleaner:
    def __init__(self):
        self.dropped = 0

    @overload
    def __call__(self, values: None) -> None: ...

    @overload
    def __call__(self, values: Sequence[float | None]) -> Values: ...

    def __call__(self, values: Sequence[float | None] | None) -> Values | None:
        if values is None:
            return None
        kinds = set(map(type, values))
        if kinds <= _WHOLE:  # vCenter's counts: no NaN or inf possible, only a sign to check
            present = [v for v in values if v is not None]
            if not present or min(present) >= 0:
                return tuple(values)
        out: list[float | None] = []
        for v in values:
            bad = v is not None and (not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0)
            self.dropped += bad
            out.append(None if bad else v)
        return tuple(out)

    def warnings(self, where: str) -> tuple[str, ...]:
        return (f"{where}: {self.dropped} CPU value(s) were not finite non-negative numbers (NaN, inf or "
                "negative): dropped, not compared",) if self.dropped else ()


def _divide(values, by: int | None) -> Values | None:
    if values is None or not by:
        return None
    return tuple(None if v is None else v / by for v in values)


def cpu_from_esxtop(reading, name: str, vcpus: int | None) -> tuple[CpuFacts | None, int | None]:
    record = reading.record
    vm = record.vms.get(name)
    if vm is None:
        return None, None
    clean = _Cleaner()
    esxtop_vcpus = vm.vcpus
    n = vcpus or esxtop_vcpus
    members = vm.members if vm.members and vm.members > 0 else None
    if n:
        divisor, bound, label = n, "exact", "per-vCPU average"
        how = f"esxtop Group Cpu sums / {n} vCPUs"
    elif members:
        divisor, bound, label = members, "lower", "per-vCPU average (lower bound)"
        how = (f"esxtop Group Cpu sums / {members} Members: a lower bound (the vCPU count is unknown and Members "
               "counts every world of the VM, vCPU or not)")
    else:
        divisor, bound, label = 1, "upper", "per-vCPU (upper bound)"
        how = "esxtop Group Cpu sums as printed: an upper bound (neither the vCPU count nor Members is known)"
    series = {}
    for field, group_field in (("ready_pct", "group_ready_pct"), ("costop_pct", "group_costop_pct"),
                               ("max_limited_pct", "group_max_limited_pct")):
        per_vcpu = clean(getattr(vm, field)) if (esxtop_vcpus and n == esxtop_vcpus) else None
        if per_vcpu is None:
            per_vcpu = _divide(clean(getattr(vm, group_field)), divisor)
        series[field] = {label: per_vcpu} if per_vcpu is not None else {}
    per_world = {world: clean(v) for world, v in sorted((getattr(vm, "vcpu_ready_pct", None) or {}).items())}
    if per_world:
        series["ready_pct"], bound, how = per_world, "exact", "esxtop Vcpu instances (per vCPU)"
    swap = _divide(clean(getattr(vm, "swap_wait_pct", None)), divisor)
    run = _divide(clean(getattr(vm, "run_pct", None)), divisor)
    if not series["ready_pct"]:
        return None, esxtop_vcpus
    return CpuFacts(
        source="esxtop", file=reading.file, times=tuple(record.timestamps),
        ready_pct=series["ready_pct"], costop_pct=series["costop_pct"],
        max_limited_pct=series["max_limited_pct"],
        swap_wait_pct={label: swap} if swap else {}, run_pct={label: run} if run else {},
        normalisation=how, bound=bound, bound_divisor=divisor, warnings=clean.warnings(f"esxtop {reading.file}"),
        sample_s=record.interval_s or _delay(reading),
    ), esxtop_vcpus


def _delay(reading) -> float | None:
    """The capture's -d DELAY when the rows' timestamps cannot say the interval (a spreadsheet re-save)."""
    delay = reading.capture.params.get("delay")
    return float(delay) if delay and delay.isdigit() and int(delay) > 0 else None


def _series_by_counter(series) -> dict[str, list]:
    """The series grouped by counter name, each group in the record's order."""
    groups: dict[str, list] = {}
    for s in series:
        groups.setdefault(s.counter, []).append(s)
    return groups


def cpu_from_perf(reading, vcpus: int | None) -> CpuFacts | None:
    perf = reading.record
    interval_ms = (perf.interval_s or 20) * 1000.0
    clean = _Cleaner()
    per_vcpu_instances = False
    by_counter = _series_by_counter(perf.series)  # one pass over the series, not one per counter

    def pct(counter: str) -> dict[str, Values]:
        nonlocal per_vcpu_instances
        per_instance = {s.instance: clean(s.values) for s in by_counter.get(counter, ())}
        vcpu_ids = sorted((i for i in per_instance if i.isdigit()), key=int)
        if vcpu_ids:
            per_vcpu_instances = True
            return {f"vCPU {i}": tuple([None if v is None else v / interval_ms * 100 for v in per_instance[i]])
                    for i in vcpu_ids}  # tuple of a list: quicker than of a generator, the same values
        if "" in per_instance:
            label = "per-vCPU average" if vcpus else "per-vCPU (upper bound)"
            return {label: tuple([None if v is None else v / interval_ms * 100 / (vcpus or 1)
                                  for v in per_instance[""]])}
        return {}

    ready = pct("cpu.ready.summation")
    if not ready:
        return None
    if per_vcpu_instances:
        how, bound = f"vCenter ms per {perf.interval_s:.0f} s sample -> % (per-vCPU instances)", "exact"
    elif vcpus:
        how, bound = f"vCenter aggregate / {vcpus} vCPUs", "exact"
    else:
        how, bound = "vCenter aggregate as one vCPU: an upper bound (the vCPU count is unknown)", "upper"
    return CpuFacts(
        source=f"vcenter-{perf.rollup}", file=reading.file, times=tuple(perf.timestamps), ready_pct=ready,
        costop_pct=pct("cpu.costop.summation"), max_limited_pct=pct("cpu.maxlimited.summation"),
        normalisation=how, bound=bound, warnings=clean.warnings(f"vCenter performance {reading.file}"),
        sample_s=float(perf.interval_s) if perf.interval_s else None,
    )
