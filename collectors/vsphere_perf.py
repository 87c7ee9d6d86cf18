"""Capture one VM's CPU scheduling and vNIC drop counters (``vsphere_perf``) with one QueryPerf.

Counter ids are resolved by name once per session (the PerformanceManager's perfCounter
property). Realtime (20 s) is used when the provider supports it for the VM and
QueryAvailablePerfMetric lists metrics at interval 20; otherwise the 300 s rollup, marked
"historical" with a note. QueryPerf runs in CSV format: the default format lets some servers
(vcsim) drop zero values; a missing sample or -1 becomes null. Instances requested but not
returned keep a series of nulls, so a reader can tell "not collected" from "zero".
"""

from __future__ import annotations

import csv
import functools
from datetime import datetime, timezone
from typing import Any

from pyVmomi import vim, vmodl

from esxdiag.collectors.vsphere_inventory import VmRef
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors, props_of, retrieve
from esxdiag.errors import CollectionError

SCHEMA_PERF = "esxdiag.vsphere_perf/1"
CPU_COUNTERS = ("cpu.ready.summation", "cpu.costop.summation", "cpu.maxlimited.summation", "cpu.usage.average")
NET_COUNTERS = ("net.droppedRx.summation", "net.droppedTx.summation",
                "net.packetsRx.summation", "net.packetsTx.summation")
REALTIME_S = 20
HISTORICAL_S = 300


def collect_perf(session: VsphereSession, vm_ref: VmRef, inventory: dict, start: datetime, end: datetime) -> dict:
    """The ``vsphere_perf`` capture over [start, end] (schema in esxdiag.collectors.vsphere)."""
    with api_errors(session, f"reading perf counters of {vm_ref.name} ({vm_ref.moid})"):
        return _perf(session, vm_ref, inventory, start, end)


def _perf(session: VsphereSession, vm_ref: VmRef, inventory: dict, start: datetime, end: datetime) -> dict:
    perf = session.content.perfManager
    counters = perf_counters(session)
    wanted = [(name, inst) for name in CPU_COUNTERS for inst in _cpu_instances(inventory)]
    wanted += [(name, str(nic["device_key"])) for name in NET_COUNTERS for nic in inventory.get("vnics", [])]
    unknown = sorted({name for name, _ in wanted if name not in counters})
    if unknown:
        raise CollectionError(f"{session.where}: server has no perf counter {', '.join(unknown)}", kind="not-found")
    interval, note = _interval(perf, vm_ref)
    spec = vim.PerformanceManager.QuerySpec(
        entity=vm_ref.obj, startTime=start, endTime=end, intervalId=interval, format="csv",
        metricId=[vim.PerformanceManager.MetricId(counterId=counters[n].key, instance=i) for n, i in wanted])
    results = perf.QueryPerf(querySpec=[spec]) or []
    unreadable: dict[tuple[int, str], list[str]] = {}
    try:
        timestamps, by_id = decode_csv(results, unreadable)
    except ValueError:  # sampleInfoCSV: the server's answer, not esxdiag's bug
        raise CollectionError(f"{session.where}: QueryPerf of {vm_ref.name}: sample times from vCenter that are "
                              "no times", kind="query") from None
    by_key = {counters[n].key: n for n, _ in wanted}
    note = "; ".join(([note] if note else []) + [
        f"{vm_ref.name}: {by_key.get(key, key)} instance {inst!r}: {len(cells)} value(s) not an integer: read as no "
        "sample" for (key, inst), cells in sorted(unreadable.items())]) or None
    order = sorted(range(len(timestamps)), key=lambda i: timestamps[i])  # vcsim answers newest first
    series = []
    for name, inst in wanted:
        values = by_id.get((counters[name].key, inst))
        series.append({"counter": name, "instance": inst, "unit": counters[name].unitInfo.key,
                       "values": [values[i] for i in order] if values else [None] * len(order)})
    return {
        "schema": SCHEMA_PERF, "vm": vm_ref.name, "interval_s": interval,
        "rollup": "realtime" if interval == REALTIME_S else "historical", "note": note,
        "start": iso_utc(start), "end": iso_utc(end),
        "timestamps": [iso_utc(timestamps[i]) for i in order], "series": series,
    }


def catalogue_spec(perf_manager: Any) -> Any:
    """The PropertyCollector spec of the server's counter catalogue (the PerformanceManager's perfCounter)."""
    return vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=perf_manager)],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.PerformanceManager, pathSet=["perfCounter"])])


def counter_name(group: Any, name: Any, rollup: Any) -> str:
    """A counter's name as vCenter writes it in its documentation and the rules name it: group.name.rollup."""
    return f"{group}.{name}.{rollup}"


def perf_counters(session: VsphereSession) -> dict[str, Any]:
    """group.name.rollup -> PerfCounterInfo, fetched once per session."""
    if session.perf_counters is None:
        spec = catalogue_spec(session.content.perfManager)
        infos = [info for content in retrieve(session, [spec]) for info in props_of(content).get("perfCounter", [])]
        session.perf_counters = {counter_name(c.groupInfo.key, c.nameInfo.key, c.rollupType): c for c in infos}
    return session.perf_counters


def _cpu_instances(inventory: dict) -> list[str]:
    return [""] + [str(i) for i in range(int(inventory.get("num_cpu") or 0))]


def _interval(perf: Any, vm_ref: VmRef) -> tuple[int, str | None]:
    summary = perf.QueryPerfProviderSummary(entity=vm_ref.obj)
    realtime = perf.QueryAvailablePerfMetric(entity=vm_ref.obj, intervalId=REALTIME_S) if summary.currentSupported else []
    return choose_interval(vm_ref.name, bool(summary.currentSupported), len(realtime or []))


def choose_interval(vm_name: str, current_supported: bool, realtime_metrics: int) -> tuple[int, str | None]:
    """(interval_s, note): realtime when the provider supports it and lists metrics at 20 s."""
    if not current_supported:
        return HISTORICAL_S, f"realtime statistics are not supported for {vm_name}; 300 s rollup used"
    if not realtime_metrics:
        return HISTORICAL_S, (f"no realtime (20 s) metrics available for {vm_name} (powered off or "
                              "host not reporting); 300 s rollup used")
    return REALTIME_S, None


def decode_csv(results: list, unreadable: dict | None = None) -> tuple[list[datetime], dict[tuple[int, str],
                                                                                         list[int | None]]]:
    """PerfEntityMetricCSV -> (timestamps, (counterId, instance) -> values), in server order."""
    timestamps: list[datetime] = []
    by_id: dict[tuple[int, str], list[int | None]] = {}
    for entity in results:
        timestamps = decode_csv_series(entity.sampleInfoCSV, [(v.id.counterId, v.id.instance, v.value)
                                                              for v in entity.value or []], by_id, unreadable)
    return timestamps, by_id


def decode_csv_series(sample_info: str | None, series: list[tuple[int, str, str | None]],
                      by_id: dict[tuple[int, str], list[int | None]],
                      unreadable: dict[tuple[int, str], list[str]] | None = None) -> list[datetime]:
    """One entity's sampleInfoCSV and (counterId, instance, csv values) series: its timestamps;
    the values, one per timestamp, go into ``by_id``. A value that is not an integer is read as no
    sample (None): one bad value costs that sample only; its text goes to ``unreadable``."""
    timestamps = sample_times(sample_info or "")
    for counter_id, instance, values in series:
        parsed, bad = _csv_values(values or "")
        if bad and unreadable is not None:
            unreadable[(counter_id, instance)] = bad
        parsed += [None] * (len(timestamps) - len(parsed))
        by_id[(counter_id, instance)] = parsed[: len(timestamps)]
    return list(timestamps)


@functools.lru_cache(maxsize=256)  # every entity of a fleet batch has the same sampleInfoCSV
def sample_times(sample_info: str) -> tuple[datetime, ...]:
    info = next(csv.reader([sample_info]), [])
    return tuple(_parse_time(t) for t in info[1::2])


_DIGITS_COMMA_MINUS = str.maketrans("", "", "0123456789,-")


def _csv_values(text: str) -> tuple[list[int | None], list[str]]:
    """One series' csv cells as ints, "" and -1 (no sample) as None; and the cells that are no
    integer (read as None too)."""
    if not text.translate(_DIGITS_COMMA_MINUS):  # plain numbers: no quoting, no spaces to strip
        cells = text.split(",") if text else []
        if "" not in cells and "-1" not in cells:
            try:
                return list(map(int, cells)), []
            except ValueError:  # "1-2", "--": digits and minus signs that make no number
                pass
    else:
        cells = next(csv.reader([text]), [])
    values: list[int | None] = []
    bad: list[str] = []
    for cell in cells:
        value = cell.strip()
        if value in ("", "-1"):
            values.append(None)
            continue
        try:
            values.append(int(value))
        except ValueError:
            values.append(None)
            bad.append(value)
    return values, bad


@functools.lru_cache(maxsize=4096)  # a fleet batch repeats the same sample times for every entity
def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@functools.lru_cache(maxsize=4096)
def iso_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
