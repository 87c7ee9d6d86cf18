"""Per-vCPU CPU figures from esxtop or vCenter, normalised one way (shared/domain.md section 2).

esxtop ``Group Cpu`` % Ready / % CoStop / % Max Limited are sums over the VM's worlds: per vCPU
= sum / vCPUs (never / Members). vCenter ``cpu.ready.summation`` is milliseconds per sample
interval: % = ms / (interval_s * 1000) * 100 (ms / 200 at 20 s); the aggregate instance ""
is divided by numCPU when per-vCPU instances are absent."""

from __future__ import annotations

from esxdiag.facts import CpuFacts

Values = tuple  # tuple[float | None, ...]


def _divide(values, by: int | None) -> Values | None:
    if values is None or not by:
        return None
    return tuple(None if v is None else v / by for v in values)


def cpu_from_esxtop(reading, name: str, vcpus: int | None) -> tuple[CpuFacts | None, int | None]:
    record = reading.record
    vm = record.vms.get(name)
    if vm is None:
        return None, None
    esxtop_vcpus = vm.vcpus
    n = vcpus or esxtop_vcpus
    series = {}
    for field, group_field in (("ready_pct", "group_ready_pct"), ("costop_pct", "group_costop_pct"),
                               ("max_limited_pct", "group_max_limited_pct")):
        per_vcpu = getattr(vm, field) if (esxtop_vcpus and n == esxtop_vcpus) else None
        if per_vcpu is None:
            per_vcpu = _divide(getattr(vm, group_field), n)
        series[field] = {"per-vCPU average": tuple(per_vcpu)} if per_vcpu is not None else {}
    if getattr(vm, "vcpu_ready_pct", None):
        series["ready_pct"] = {label: tuple(v) for label, v in sorted(vm.vcpu_ready_pct.items())}
    swap = getattr(vm, "swap_wait_pct", None)
    if not series["ready_pct"]:
        return None, esxtop_vcpus
    how = (f"esxtop Group Cpu sums / {n} vCPUs" if not getattr(vm, "vcpu_ready_pct", None)
           else "esxtop Vcpu instances (per vCPU)")
    return CpuFacts(
        source="esxtop", file=reading.file, times=tuple(record.timestamps),
        ready_pct=series["ready_pct"], costop_pct=series["costop_pct"],
        max_limited_pct=series["max_limited_pct"],
        swap_wait_pct={"per-vCPU average": tuple(_divide(swap, n) or ())} if swap else {},
        normalisation=how,
    ), esxtop_vcpus


def cpu_from_perf(reading, vcpus: int | None) -> CpuFacts | None:
    perf = reading.record
    interval_ms = (perf.interval_s or 20) * 1000.0

    def pct(counter: str) -> dict[str, Values]:
        per_instance = {s.instance: s.values for s in perf.series if s.counter == counter}
        vcpu_ids = sorted((i for i in per_instance if i.isdigit()), key=int)
        if vcpu_ids:
            return {f"vCPU {i}": tuple(None if v is None else v / interval_ms * 100 for v in per_instance[i])
                    for i in vcpu_ids}
        if "" in per_instance and vcpus:
            return {"per-vCPU average": tuple(None if v is None else v / interval_ms * 100 / vcpus
                                              for v in per_instance[""])}
        return {}

    ready = pct("cpu.ready.summation")
    if not ready:
        return None
    return CpuFacts(
        source=f"vcenter-{perf.rollup}", file=reading.file, times=tuple(perf.timestamps), ready_pct=ready,
        costop_pct=pct("cpu.costop.summation"), max_limited_pct=pct("cpu.maxlimited.summation"),
        normalisation=f"vCenter ms per {perf.interval_s:.0f} s sample -> % (per-vCPU instances)"
        if any(k.startswith("vCPU") for k in ready) else f"vCenter aggregate / {vcpus} vCPUs",
    )
