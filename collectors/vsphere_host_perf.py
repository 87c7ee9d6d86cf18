"""Capture a host's uplink drops and errors (``vsphere_host_perf``) with one QueryPerf (two at most).

Read-only: net.droppedRx.summation and net.errorsRx.summation of the HostSystem, instance "*",
in CSV format (counter ids from the session's cache, esxdiag.collectors.vsphere_perf). A real
vCenter answers with the host aggregate "" and one series per physical NIC (vmnicN, vusbN);
vcsim echoes one series named "*", recorded as the aggregate "" with a note, as the fleet scan
does. Any other instance is left out (the record holds uplinks only) and named in the note.
Realtime (20 s) over the window first; a host without realtime samples is asked again at the
300 s rollup over at least two rollup intervals, marked "historical", its start moved back.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from pyVmomi import vim

from esxdiag.collectors.vsphere_perf import HISTORICAL_S, REALTIME_S, decode_csv, iso_utc, perf_counters
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors
from esxdiag.errors import CollectionError

SCHEMA_HOST_PERF = "esxdiag.vsphere_host_perf/1"
HOST_NET_COUNTERS = ("net.droppedRx.summation", "net.errorsRx.summation")
UPLINK = re.compile(r"vmnic[0-9]{1,4}|vusb[0-9]{1,3}")


def collect_host_perf(session: VsphereSession, host_moid: str, host_name: str, start: datetime,
                      end: datetime) -> dict:
    """The ``vsphere_host_perf`` capture of one host over [start, end] (schema in esxdiag.collectors.vsphere)."""
    with api_errors(session, f"reading uplink counters of host {host_name} ({host_moid})"):
        return _host_perf(session, vim.HostSystem(host_moid, session.si._stub), host_name, start, end)


def _host_perf(session: VsphereSession, host: Any, host_name: str, start: datetime, end: datetime) -> dict:
    counters = perf_counters(session)
    unknown = [n for n in HOST_NET_COUNTERS if n not in counters]
    if unknown:
        raise CollectionError(f"{session.where}: server has no perf counter {', '.join(unknown)}", kind="not-found")
    ids = [vim.PerformanceManager.MetricId(counterId=counters[n].key, instance="*") for n in HOST_NET_COUNTERS]
    interval, notes = REALTIME_S, []
    timestamps, by_id = _query(session, host, ids, start, end, interval)
    if not timestamps:
        interval = HISTORICAL_S
        start = min(start, end - timedelta(seconds=2 * HISTORICAL_S))
        timestamps, by_id = _query(session, host, ids, start, end, interval)
        notes.append(f"no realtime (20 s) samples for host {host_name}; {interval} s rollup from {iso_utc(start)} used")
    order = sorted(range(len(timestamps)), key=lambda i: timestamps[i])  # vcsim answers newest first
    names = {counters[n].key: (n, counters[n].unitInfo.key) for n in HOST_NET_COUNTERS}
    series, more = uplink_series(by_id, names, order)
    return {
        "schema": SCHEMA_HOST_PERF, "host": host_name, "interval_s": interval,
        "rollup": "realtime" if interval == REALTIME_S else "historical", "note": "; ".join(notes + more) or None,
        "start": iso_utc(start), "end": iso_utc(end),
        "timestamps": [iso_utc(timestamps[i]) for i in order], "series": series,
    }


def uplink_series(by_id: dict[tuple[int, str], list], names: dict[int, tuple[str, str]],
                  order: list[int]) -> tuple[list[dict], list[str]]:
    """(series of the aggregate and the uplinks, notes): "*" alone is the aggregate, others are left out."""
    series, left_out, wildcard = [], set(), False
    for key, (name, unit) in names.items():
        found = {inst: values for (cid, inst), values in by_id.items() if cid == key}
        if "*" in found and "" not in found:  # vcsim: the wildcard echoed as one series, the host's aggregate
            found[""], wildcard = found["*"], True
        for inst in sorted(found, key=lambda i: (i.rstrip("0123456789"), len(i), i)):  # vmnic2 before vmnic10
            if inst != "" and not UPLINK.fullmatch(inst):
                left_out.add(inst)
                continue
            series.append({"counter": name, "instance": inst, "unit": unit, "values": [found[inst][i] for i in order]})
    notes = []
    if wildcard:
        notes.append("the server answered instance '*' with one series (no per-vmnic expansion): read as the "
                     "host aggregate")
    left_out.discard("*")
    if left_out:
        notes.append(f"instances that are not uplinks left out: {', '.join(sorted(left_out)[:10])}")
    return series, notes


def _query(session: VsphereSession, host: Any, ids: list, start: datetime, end: datetime, interval: int):
    spec = vim.PerformanceManager.QuerySpec(entity=host, startTime=start, endTime=end, intervalId=interval,
                                            format="csv", metricId=ids)
    return decode_csv(session.content.perfManager.QueryPerf(querySpec=[spec]) or [])
