"""pandas DataFrames of what esxdiag read and decided. Columns carry the JSON schema's names
(docs/report-schema.md, docs/fleet-scan.md) and types: counts are ``Int64``, figures ``float64``
(NaN when absent), flags ``boolean``, names ``string`` (<NA> when absent), times UTC timestamps;
lists and objects (a fleet row's ``notes``, ``score_terms``) stay Python objects.

From a result (an AnalysisResult, also one read back from a report JSON): ``vnic_frame`` (a row
per vNIC: verdict and ring settings), ``ring_frame`` (a row per vNIC and ring counter: the window's
delta and rate). From an open case (the joined facts the rules judged): ``cpu_samples`` (per-vCPU
%RDY/%CSTP/%MLMTD/%SWPWT per sample, from esxtop or vCenter) and ``ring_samples`` (every reading
of the ring counters per vNIC and rx queue, with the rate since the reading before). From the
fleet: ``fleet_frame`` (the fleet report's rows) and ``history_frame`` (the scan history)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from esxdiag.api.case import Case
from esxdiag.api.lazy import pandas
from esxdiag.api.results import scan_history
from esxdiag.join.facts import CounterWindow
from esxdiag.result import AnalysisResult

VNIC_COLUMNS = {
    "vm": "string", "mac": "string", "label": "string", "type": "string", "portset": "string", "port": "Int64",
    "guest_interface": "string", "ring_verdict": "string", "ring1_size": "Int64", "ring2_size": "Int64",
    "ring_size_source": "string", "ring1_max": "Int64", "ring2_max": "Int64", "rx_queues": "Int64", "mtu": "Int64",
    "rss_enabled": "boolean", "driver": "string", "driver_version": "string", "device_version": "string",
}
RING_COUNTERS = ("ring1_full", "ring2_full", "host_out_of_buffers", "dropped_rx", "guest_oob", "guest_discards",
                 "vcenter_dropped_rx")
RING_COLUMNS = {"vm": "string", "mac": "string", "counter": "string", "delta": "Int64", "total": "Int64",
                "seconds": "float64", "per_s": "float64", "reset": "boolean", "samples": "Int64", "source": "string"}
CPU_COUNTERS = ("ready_pct", "costop_pct", "max_limited_pct", "swap_wait_pct")
CPU_COLUMNS = {"vm": "string", "counter": "string", "vcpu": "string", "time": "time", "value": "float64",
               "source": "string", "bound": "string", "file": "string"}
SAMPLE_COLUMNS = {"vm": "string", "mac": "string", "counter": "string", "queue": "Int64", "time": "time",
                  "value": "Int64", "delta": "Int64", "seconds": "float64", "per_s": "float64", "reset": "boolean",
                  "source": "string"}
FLEET_COLUMNS = {
    "collected_at": "time", "rank": "Int64", "vcenter": "string", "moid": "string", "name": "string",
    "class": "string", "severity": "string", "reason": "string", "score": "float64", "score_terms": "object",
    "power_state": "string", "host": "string", "cluster": "string", "datacenter": "string", "num_cpu": "Int64",
    "cpu_limit_mhz": "Int64", "latency_sensitivity": "string", "num_vnics": "Int64", "nic_types": "object",
    "guest_ip": "string", "tools_status": "string", "source": "string", "samples": "Int64", "drops": "Int64",
    "drops_per_s": "float64", "drops_per_1000": "float64", "packets_rx": "Int64", "drops_by_vnic": "object",
    "ready_worst_pct": "float64", "ready_worst_vcpu": "string", "ready_avg_pct": "float64",
    "costop_worst_pct": "float64", "max_limited_worst_pct": "float64", "notes": "object", "deep": "object",
}
HISTORY_COLUMNS = {"collected_at": "time", "vcenter": "string", "moid": "string", "name": "string",
                   "class": "string", "severity": "string", "score": "float64", "drops_per_s": "float64",
                   "drops_per_1000": "float64", "ready_worst_pct": "float64", "proven_at": "time"}


def typed_frame(rows: list[dict[str, Any]], columns: dict[str, str]):
    """A DataFrame of ``rows`` with exactly ``columns`` (name -> dtype; "time": UTC timestamps)."""
    pd = pandas()
    frame = pd.DataFrame(rows, columns=list(columns))
    for name, dtype in columns.items():
        if dtype == "time":
            frame[name] = pd.to_datetime(frame[name], utc=True, format="ISO8601")
        elif dtype != "object":
            frame[name] = frame[name].astype(dtype)
    return frame


def vnic_frame(result: AnalysisResult):
    """One row per vNIC of every VM: its ring verdict and ring settings (``metrics``)."""
    rows = [{"vm": vm.name, "mac": nic.mac, "label": nic.label, "type": nic.type, "portset": nic.portset,
             "port": nic.port, "guest_interface": nic.guest_interface, "ring_verdict": nic.ring_verdict,
             **{k: nic.metrics.get(k) for k in list(VNIC_COLUMNS)[8:]}}
            for vm in result.vms for nic in vm.vnics]
    return typed_frame(rows, VNIC_COLUMNS)


def ring_frame(result: AnalysisResult):
    """One row per vNIC and ring/drop counter read over the window (``metrics``): delta, since-init
    total, seconds, rate per second, whether it was reset, and the file it came from."""
    fields = list(RING_COLUMNS)[3:]
    rows = [{"vm": vm.name, "mac": nic.mac, "counter": key, **{k: nic.metrics[key].get(k) for k in fields}}
            for vm in result.vms for nic in vm.vnics for key in RING_COUNTERS if isinstance(nic.metrics.get(key), dict)]
    return typed_frame(rows, RING_COLUMNS)


def cpu_samples(case: Case):
    """Per-vCPU CPU figures per sample, as the rules judged them: one row per VM, counter, vCPU
    series (``vcpu``: a vCPU world, ``vCPU N``, or a per-vCPU average) and time. ``bound``: exact,
    lower or upper (docs/report-schema.md ``cpu.bound``)."""
    rows = [{"vm": vm.name, "counter": counter, "vcpu": label, "time": time, "value": value,
             "source": vm.cpu.source, "bound": vm.cpu.bound, "file": vm.cpu.file}
            for vm in case.facts() if vm.cpu is not None for counter in CPU_COUNTERS
            for label, values in getattr(vm.cpu, counter).items() for time, value in zip(vm.cpu.times, values)]
    return typed_frame(rows, CPU_COLUMNS)


def ring_samples(case: Case):
    """Every reading of the ring counters over the window, per vNIC (host vsish rxSummary:
    ``ring1_full``, ``ring2_full``, ``host_out_of_buffers``; ``queue`` <NA>) and per rx queue (guest
    ``ethtool -S`` pkts rx OOB: ``guest_oob``), with the change since the reading before: ``delta``
    (a counter that went back was reset: the delta is its new value), ``seconds`` and ``per_s``."""
    return typed_frame([row for vm in case.facts() for nic in vm.vnics for row in _nic_samples(vm.name, nic)],
                       SAMPLE_COLUMNS)


def _nic_samples(vm: str, nic) -> Iterator[dict[str, Any]]:
    host = nic.series.get("host_counters")
    if host:
        for counter, key in (("ring1_full", "ring1_full"), ("ring2_full", "ring2_full"),
                             ("host_out_of_buffers", "out_of_buffers")):
            yield from _steps(vm, nic.mac, counter, None, host["times"], host[key], host["source"])
    guest = nic.series.get("guest_oob_queues")
    if guest:
        for queue in sorted({q for reading in guest["queues"] for q in reading}):
            values = [reading.get(queue) for reading in guest["queues"]]
            yield from _steps(vm, nic.mac, "guest_oob", queue, guest["times"], values, guest["source"])


def _steps(vm, mac, counter, queue, times, values, source) -> Iterator[dict[str, Any]]:
    before = None  # (time, value) of the latest reading with a value
    for time, value in zip(times, values):
        step = {"delta": None, "seconds": None, "per_s": None, "reset": None}
        if value is not None and before is not None:
            seconds = _seconds(before[0], time)
            window = CounterWindow(counter, before[1], value, seconds)
            step = {"delta": window.delta, "seconds": seconds, "per_s": window.rate_per_s, "reset": window.reset}
        yield {"vm": vm, "mac": mac, "counter": counter, "queue": queue, "time": time, "value": value, **step,
               "source": source}
        before = (time, value) if value is not None else before


def _seconds(start: str | None, end: str | None) -> float | None:
    pd = pandas()
    if not start or not end:
        return None
    seconds = (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds()
    return seconds if seconds > 0 else None


def fleet_frame(document: dict):
    """The fleet report's VM rows (``vms``, ranked), with the scan's ``collected_at``."""
    collected = (document.get("snapshot") or {}).get("collected_at")
    return typed_frame([{"collected_at": collected, **row} for row in document["vms"]], FLEET_COLUMNS)


def history_frame(path: str | Path | None = None, vm: str | None = None, limit: int = 50):
    """The scan history (default: the user data directory, as ``esxdiag history``): one VM's last
    ``limit`` results, or without ``vm`` every VM's results in the last ``limit`` scans."""
    pandas()
    return typed_frame(scan_history(path, vm, limit), HISTORY_COLUMNS)
