"""Scan several vCenters at once into one fleet snapshot; a vCenter that fails is listed, never fatal.

Per vCenter: login, CurrentTime (the window ends on the server's clock), the maxQueryMetrics
option, the places pass, the paged VM pass, QueryPerf batches for the powered-on VMs, then their
hosts, logout. The snapshot layout is documented in docs/fleet-scan.md.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.fleet import inventory, perf
from esxdiag.collectors.vsphere_perf import iso_utc
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors, connect
from esxdiag.errors import CollectionError
from esxdiag.fleet.snapshot import SCHEMA_SNAPSHOT


@dataclass
class ScanOptions:
    window_s: float = 300.0
    filters: inventory.Filters = field(default_factory=inventory.Filters)
    page_size: int | None = 1000  # objects per RetrievePropertiesEx page
    in_flight: int = 4  # QueryPerf requests in flight per vCenter
    timeout_s: float = 60.0
    max_metrics: int | None = None  # override maxQueryMetrics (tests, benchmarks)
    with_hosts: bool = True
    nic_types: str = "all"  # "all": every VM's vNIC types; "drops": only for VMs with receive drops


class Progress:
    """Thread-safe 'VMs done of total' across vCenters, reported through a callback."""

    def __init__(self, report: Callable[[int, int], None] | None):
        self.report, self.done, self.total = report, 0, 0
        self._lock = threading.Lock()

    def add_total(self, n: int) -> None:
        with self._lock:
            self.total += n
            self._emit()

    def advance(self, n: int) -> None:
        with self._lock:
            self.done += n
            self._emit()

    def _emit(self) -> None:
        if self.report:
            self.report(self.done, self.total)


def scan(targets: list[Credentials], options: ScanOptions,
         progress: Callable[[int, int], None] | None = None) -> dict:
    """The fleet snapshot (a JSON-ready dict) of every target, scanned concurrently."""
    tracker = Progress(progress)
    started = datetime.now(timezone.utc)
    with ThreadPoolExecutor(max_workers=max(1, min(len(targets), 8)), thread_name_prefix="vcenter") as pool:
        parts = list(pool.map(lambda c: _scan_one(c, options, tracker), targets))
    return {
        "schema": SCHEMA_SNAPSHOT, "collected_at": iso_utc(started), "window_s": options.window_s,
        "nic_types": options.nic_types,
        "filters": options.filters.describe(),
        "vcenters": [p["vcenter"] for p in parts],
        "hosts": [h for p in parts for h in p["hosts"]],
        "vms": [v for p in parts for v in p["vms"]],
    }


def _scan_one(creds: Credentials, options: ScanOptions, tracker: Progress) -> dict:
    where = f"{creds.host}:{creds.port}"
    status = {"url": creds.url, "name": where, "status": "failed", "error": None, "error_kind": None,
              "requests": 0, "seconds": None, "max_query_metrics": None, "max_query_metrics_source": None,
              "vms": 0, "perf_errors": 0, "whole_device_lists": 0, "unmatched_filters": []}
    started = time.monotonic()
    session = None
    out = {"vcenter": status, "hosts": [], "vms": []}
    try:
        session = connect(creds, timeout_s=options.timeout_s)
        out.update(_collect(session, options, status, tracker))
        status["status"] = "scanned"
    except CollectionError as exc:
        status.update(error=exc.one_line(), error_kind=exc.kind)
    except Exception as exc:  # a bug on one vCenter must not lose the others: listed, kind internal
        status.update(error=f"internal error: {type(exc).__name__}: {exc}", error_kind="internal")
    finally:
        if session is not None:
            status["requests"] = session.request_count
            session.close()
        status["seconds"] = round(time.monotonic() - started, 3)
    return out


def _collect(session: VsphereSession, options: ScanOptions, status: dict, tracker: Progress) -> dict:
    name = status["name"]
    with api_errors(session, "reading the server clock"):
        end = session.si.CurrentTime()
    if end.tzinfo is None:
        end = end.replace(tzinfo=timezone.utc)
    with api_errors(session, "reading config.vpxd.stats.maxQueryMetrics"):
        max_metrics, source = perf.max_query_metrics(session)
    if options.max_metrics:
        max_metrics, source = options.max_metrics, f"--max-query-metrics {options.max_metrics} (overrides {source})"
    status.update(max_query_metrics=max_metrics, max_query_metrics_source=source)
    with api_errors(session, "reading the inventory"):
        places = inventory.read_places(session)
        vms = inventory.read_vms(session, places, options.filters, options.page_size)
    status["unmatched_filters"] = inventory.unmatched(places, options.filters)
    status["vms"] = len(vms)
    on = [v for v in vms if v["power_state"] == "poweredOn"]
    tracker.add_total(len(on))
    objs = {v["moid"]: v.pop("_obj") for v in vms}
    if options.nic_types == "all":
        with api_errors(session, "reading the vNICs"):
            status["whole_device_lists"] = inventory.read_vnics(session, vms, objs, options.page_size)
    records, errors = perf.query(session, [perf.Entity(v["moid"], v["name"], objs[v["moid"]]) for v in on],
                                 perf.VM_COUNTERS, end, options.window_s, max_metrics, options.in_flight,
                                 tracker.advance)
    status["perf_errors"] = len(errors)
    if options.nic_types != "all":
        dropping = [v for v in on if _has_drops(records.get(v["moid"]))]
        with api_errors(session, "reading the vNICs of the VMs with receive drops"):
            status["whole_device_lists"] = inventory.read_vnics(session, dropping, objs, options.page_size)
    for vm in vms:
        vm["vcenter"] = name
        vm["perf"] = records.get(vm["moid"])
        vm["perf_error"] = errors.get(vm["moid"]) if vm["power_state"] == "poweredOn" else "powered off"
    hosts = []
    if options.with_hosts:
        used = sorted({v["host_moid"] for v in on if v["host_moid"]})
        entities = [perf.Entity(h, places.objects[h]["name"], places.objects[h]["obj"]) for h in used
                    if h in places.objects]
        host_records, host_errors = perf.query(session, entities, perf.HOST_COUNTERS, end, options.window_s,
                                               max_metrics, options.in_flight)
        for e in entities:
            cluster = places.walk(e.key, "cluster")
            hosts.append({"vcenter": name, "moid": e.key, "name": e.name,
                          "cluster": cluster["name"] if cluster else None, "perf": host_records.get(e.key),
                          "perf_error": host_errors.get(e.key)})
    return {"hosts": hosts, "vms": vms}


def _has_drops(record: dict | None) -> bool:
    return record is not None and any(v for s in record["series"] if s["counter"] == "net.droppedRx.summation"
                                       for v in s["values"] if v)
