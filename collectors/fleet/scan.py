"""Scan several vCenters at once into one fleet snapshot; a vCenter that fails is listed, never fatal.

Per vCenter: login, CurrentTime (the window ends on the server's clock), the maxQueryMetrics
option, the places pass, the paged VM pass; then, in shares of VMs (in this process, or in worker
processes on the same session for big fleets), the vNICs and the QueryPerf batches of the
powered-on VMs; then their hosts; last the window's migration events (one QueryEvents: a failure
there costs the events only, said in the vCenter's entry), logout. With a watch (watch.py, serve's
cycles) the login is kept and the places and VM pages come from the kept inventory, only its
changes read. The snapshot layout is documented in docs/fleet-scan.md.
"""

from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.fleet import events, inventory, perf, workers
from esxdiag.collectors.fleet.share import ShareTask, collect_share, has_drops
from esxdiag.collectors.fleet.watch import Known, Watch, Watches
from esxdiag.collectors.vsphere_perf import iso_utc
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors, connect
from esxdiag.errors import CollectionError
from esxdiag.vocabulary import SCHEMA_SNAPSHOT


@dataclass
class ScanOptions:
    window_s: float = 300.0
    filters: inventory.Filters = field(default_factory=inventory.Filters)
    page_size: int | None = 1000  # objects per RetrievePropertiesEx page
    in_flight: int = 4  # QueryPerf requests in flight per vCenter
    timeout_s: float = 60.0
    max_metrics: int | None = None  # --max-query-metrics: overrides maxQueryMetrics, caps realtime batches too
    with_hosts: bool = True
    nic_types: str = "all"  # "all": every VM's vNIC types; "drops": only for VMs with receive drops
    workers: int | None = None  # processes for the vNIC and perf half, shared by the vCenters; None: automatic


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


def scan(targets: list[Credentials], options: ScanOptions, progress: Callable[[int, int], None] | None = None,
         stop: threading.Event | None = None, watches: Watches | None = None) -> dict:
    """The fleet snapshot (a JSON-ready dict) of every target, scanned concurrently. ``stop`` set (or
    Ctrl-C here) ends each vCenter's scan at its next inventory page, listed as interrupted.
    ``watches`` (kept by the caller between scans): each vCenter's login and inventory are kept and
    only their changes read (watch.py); the snapshot is the one a full read gives."""
    tracker = Progress(progress)
    stop = stop or threading.Event()
    started = datetime.now(timezone.utc)
    pool = ThreadPoolExecutor(max_workers=max(1, min(len(targets), 8)), thread_name_prefix="vcenter")
    processes = workers.WorkerPool(options.workers)  # one pool for every vCenter, started when one needs it
    try:
        parts = list(pool.map(lambda c: _scan_one(c, options, tracker, processes, stop,
                                                  watches.get(c) if watches is not None else None), targets))
    except BaseException:  # Ctrl-C: the vCenter threads stop at their next page, not after the last
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True)
        processes.close()
    return {
        "schema": SCHEMA_SNAPSHOT, "collected_at": iso_utc(started), "window_s": options.window_s,
        "nic_types": options.nic_types,
        "filters": options.filters.describe(),
        "vcenters": [p["vcenter"] for p in parts],
        "hosts": [h for p in parts for h in p["hosts"]],
        "vms": [v for p in parts for v in p["vms"]],
    }


def _scan_one(creds: Credentials, options: ScanOptions, tracker: Progress, processes: workers.WorkerPool,
              stop: threading.Event, watch: Watch | None = None) -> dict:
    where = f"{creds.host}:{creds.port}"
    status: dict[str, Any] = {"url": creds.url, "name": where, "status": "failed", "error": None, "error_kind": None,
              "requests": 0, "seconds": None, "max_query_metrics": None, "max_query_metrics_source": None,
              "vms": 0, "perf_errors": 0, "whole_device_lists": 0, "workers": 1, "unmatched_filters": [],
              "migration_events": None, "migration_events_truncated": False, "migration_events_error": None}
    started = time.monotonic()
    session = None
    out = {"vcenter": status, "hosts": [], "vms": []}
    try:
        known = None
        if watch is None:
            session = connect(creds, timeout_s=options.timeout_s)
        else:
            session, known = watch.read(lambda: connect(creds, timeout_s=options.timeout_s), options.filters,
                                        options.page_size)
        out.update(_collect(session, options, status, tracker, processes, stop, known))
        status["status"] = "scanned"
    except CollectionError as exc:
        status.update(error=exc.one_line(), error_kind=exc.kind)
    except Exception as exc:  # a bug on one vCenter must not lose the others: listed, kind internal
        status.update(error=f"internal error: {type(exc).__name__}: {exc}", error_kind="internal")
    finally:
        if watch is not None:
            status["requests"] = watch.requests()
            if status["status"] != "scanned":
                watch.drop()  # the next scan logs in again and reads whole
        elif session is not None:
            status["requests"] = session.request_count
            session.close()
        status["seconds"] = round(time.monotonic() - started, 3)
    return out


def _collect(session: VsphereSession, options: ScanOptions, status: dict, tracker: Progress,
             processes: workers.WorkerPool, stop: threading.Event, known: Known | None = None) -> dict:
    """One vCenter's scan; ``known``: its inventory, from a watch (else read here)."""
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
    limits = perf.BatchLimits(max_metrics, options.max_metrics)
    with api_errors(session, "reading the inventory"):
        places = known.places if known is not None else inventory.read_places(session)
    status["unmatched_filters"] = inventory.unmatched(places, options.filters)
    make = functools.partial(ShareTask, end=end, window_s=options.window_s, limits=limits,
                             in_flight=options.in_flight, page_size=options.page_size, nic_types=options.nic_types,
                             read_vnics=known is None)
    found: dict = {"vnics": {}, "whole": 0, "records": {}, "errors": {}}
    vms: list[dict] = []
    shares, pages_read = None, 0
    try:
        with api_errors(session, "reading the inventory"), _ReadAhead(
                known.pages(options.page_size) if known is not None
                else inventory.vm_pages(session, places, options.filters, options.page_size)) as pages:
            for page, more in pages:
                if stop.is_set():
                    raise CollectionError(f"{name}: scan interrupted after {len(vms)} VMs", kind="interrupted")
                vms += page
                tracker.add_total(sum(vm["power_state"] == "poweredOn" for vm in page))
                for vm in page:
                    vm.pop("_obj")  # shares rebuild references from MOIDs, here or in a worker
                pages_read += 1
                # a watched inventory has no pages to decode beside the workers: they only cost their start
                automatic = more and known is None
                if shares is None and workers.worker_count(options.workers, pages_read, automatic) > 1:
                    shares = processes.shares(workers.login_for_workers(session, options.timeout_s))
                    status["workers"] = processes.size
                if not page:
                    continue
                task = make([{k: vm[k] for k in ("moid", "name", "power_state", "num_vnics", "host_moid")}
                             for vm in page])
                if shares is not None:
                    shares.submit(task)  # decoded there while this process reads the next page
                else:
                    _merge(found, collect_share(session, task, lambda _task, n: tracker.advance(n),
                                                known.samples if known is not None else None))
        if shares is not None:
            for task, result in shares.completed():
                session.add_requests(result["requests"])
                if not result["error"]:
                    _merge(found, result)
                    tracker.advance(sum(v["power_state"] == "poweredOn" for v in task.vms))
    finally:
        if shares is not None:
            shares.close()
    status["vms"] = len(vms)
    on = [v for v in vms if v["power_state"] == "poweredOn"]
    if known is not None:
        _known_vnics(known, vms if options.nic_types == "all" else
                     [v for v in on if has_drops(found["records"].get(v["moid"]))], found)
    status["perf_errors"] = len(found["errors"])
    status["whole_device_lists"] = found["whole"]
    for vm in vms:
        vm["vcenter"] = name
        if vm["moid"] in found["vnics"]:
            vm["vnics"] = found["vnics"][vm["moid"]]
        vm["perf"] = found["records"].get(vm["moid"])
        vm["perf_error"] = found["errors"].get(vm["moid"]) if vm["power_state"] == "poweredOn" else "powered off"
    hosts = []
    if options.with_hosts:
        used = sorted({v["host_moid"] for v in on if v["host_moid"]})
        entities = [perf.Entity(h, places.objects[h]["name"], places.objects[h]["obj"]) for h in used
                    if h in places.objects]
        host_records, host_errors = perf.query(session, entities, perf.HOST_COUNTERS, end, options.window_s,
                                               limits, options.in_flight,
                                               keep=known.samples.part(perf.HOST_COUNTERS) if known else None)
        for e in entities:
            cluster = places.walk(e.key, "cluster")
            hosts.append({"vcenter": name, "moid": e.key, "name": e.name,
                          "cluster": cluster["name"] if cluster else None, "perf": host_records.get(e.key),
                          "perf_error": host_errors.get(e.key)})
    _migrations(session, vms, end, options, status)
    return {"hosts": hosts, "vms": vms}


def _known_vnics(known: Known, vms: list[dict], found: dict) -> None:
    """The vNICs read_vnics would give these VMs, from the watch's device lists (no request)."""
    for vm in vms:
        found["vnics"][vm["moid"]], whole = known.vnics(vm)
        found["whole"] += whole


def _migrations(session: VsphereSession, vms: list[dict], end, options: ScanOptions, status: dict) -> None:
    """Each VM's migration events in the window ([] none; None when they could not be read, with why
    in the vCenter's entry: the rest of the scan stands)."""
    try:
        by_vm, count, truncated = events.read_migrations(session, end, options.window_s, options.timeout_s)
    except CollectionError as exc:
        status["migration_events_error"] = exc.one_line()
        for vm in vms:
            vm["migrations"] = None
        return
    status.update(migration_events=count, migration_events_truncated=truncated)
    for vm in vms:
        vm["migrations"] = by_vm.get(vm["moid"], [])


class _ReadAhead:
    """The pages of ``pages``, each next one requested in a thread while the caller works on this one
    (its share's vNIC and QueryPerf calls): the waits on the server free the GIL. Its errors are
    raised where the page is taken; closing waits for the request in flight, then closes ``pages``."""

    def __init__(self, pages: Iterator):
        self._pages = pages
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inventory-page")
        self._next: Future | None = None

    def __enter__(self) -> Iterator:
        return self._each()

    def _each(self) -> Iterator:
        self._next = self._thread.submit(next, self._pages, _DONE)
        while (item := self._next.result()) is not _DONE:
            self._next = self._thread.submit(next, self._pages, _DONE)
            yield item

    def __exit__(self, *exc_info) -> None:
        self._thread.shutdown(wait=True)  # the generator cannot be closed while the thread runs it
        close = getattr(self._pages, "close", None)  # a generator's: its finally blocks run now
        if close is not None:
            close()


_DONE = object()


def _merge(into: dict, share: dict) -> None:
    into["whole"] += share["whole"]
    for key in ("vnics", "records", "errors"):
        into[key].update(share[key])
