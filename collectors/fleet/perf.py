"""Performance counters for many entities in few requests: QueryPerf in batches, a few in flight.

Each QuerySpec asks for every counter with instance "*": a real vCenter answers with the
aggregate ("") plus one series per vCPU / vNIC / pNIC; vcsim echoes one series named "*",
recorded here as the aggregate "" with a note. Realtime (20 s) samples ("current" statistics, VMs
and hosts only) are not read from vCenter's database; historical ones are, and
``config.vpxd.stats.maxQueryMetrics`` limits those queries (entities x counters; 64 when the option
cannot be read; docs/fleet-scan.md has the sources). So a realtime batch holds
REALTIME_ENTITIES entities (Telegraf's ``max_query_objects`` for realtime resources) and a
historical one as many as fit in maxQueryMetrics; --max-query-metrics, when the user gives it,
caps both. Entities without realtime samples are asked again at the 300 s rollup and marked
"historical". A batch the server refuses is retried one entity at a time, so one bad entity
costs only its own figures.
"""

from __future__ import annotations

import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from pyVmomi import vim, vmodl

from esxdiag.collectors.fleet.fastdecode import EntityCsv, query_perf, retrieve_pages
from esxdiag.collectors.fleet.perfkeep import NO_SAMPLES, KeptPart, Samples, joined
from esxdiag.collectors.vsphere_perf import (HISTORICAL_S, REALTIME_S, SCHEMA_PERF, catalogue_spec, decode_csv_series,
                                             iso_utc, sample_times)
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors, fault_text
from esxdiag.errors import CollectionError

log = logging.getLogger(__name__)
VM_COUNTERS = ("cpu.ready.summation", "cpu.costop.summation", "cpu.maxlimited.summation",
               "net.droppedRx.summation", "net.packetsRx.summation")
# per host: CPU usage, and the uplinks' receive losses (instance vmnicN on a real vCenter; vcsim: the aggregate)
HOST_COUNTERS = ("cpu.usage.average", "net.droppedRx.summation", "net.errorsRx.summation")
DEFAULT_MAX_QUERY_METRICS = 64
UNLIMITED_METRICS_CAP = 1024  # the server said -1 (no limit): still keep each answer a sane size
REALTIME_ENTITIES = 256
OPTION = "config.vpxd.stats.maxQueryMetrics"
# a failed QueryPerf of these kinds is the server's or the path's, not one entity's: no retry one by one,
# the vCenter fails (an HTML page from a proxy in front of vCenter would answer every retry alike)
WHOLE_PASS_KINDS = ("unreachable", "timeout", "auth", "bad-answer")


@dataclass(frozen=True)
class Entity:
    key: str  # moid
    name: str
    obj: Any = field(repr=False, compare=False)
    where: str | None = field(default=None, compare=False)  # a VM's host: its kept samples hold only there


def max_query_metrics(session: VsphereSession) -> tuple[int, str]:
    """(metrics per QueryPerf, where that number came from)."""
    try:
        values = session.content.setting.QueryOptions(name=OPTION)
    except vim.fault.InvalidName:
        return DEFAULT_MAX_QUERY_METRICS, f"{OPTION} not set on the server: default {DEFAULT_MAX_QUERY_METRICS}"
    except vmodl.MethodFault as exc:
        return DEFAULT_MAX_QUERY_METRICS, f"{OPTION} unreadable ({fault_text(exc)}): default {DEFAULT_MAX_QUERY_METRICS}"
    try:
        value = int(str(values[0].value).strip())
    except (IndexError, TypeError, ValueError):
        return DEFAULT_MAX_QUERY_METRICS, f"{OPTION} is not a number: default {DEFAULT_MAX_QUERY_METRICS}"
    if value <= 0:
        return UNLIMITED_METRICS_CAP, f"{OPTION} = {value} (no limit): capped at {UNLIMITED_METRICS_CAP}"
    return value, f"{OPTION} = {value} (server)"


@dataclass(frozen=True)
class BatchLimits:
    historical_metrics: int  # maxQueryMetrics (the server's, else the default) or the user's
    user_metrics: int | None = None  # --max-query-metrics: a brake on realtime batches too

    def entities_per_query(self, counters: int, interval: int) -> int:
        counters = max(1, counters)
        if interval != REALTIME_S:
            return max(1, self.historical_metrics // counters)
        if self.user_metrics:
            return max(1, min(REALTIME_ENTITIES, self.user_metrics // counters))
        return REALTIME_ENTITIES


def counter_keys(session: VsphereSession) -> dict[str, tuple[int, str]]:
    """group.name.rollup -> (counter id, unit) of the server's catalogue, read once per login through
    the fast path (560 counters on vcsim: pyVmomi's PerfCounterInfo objects cost ~150 ms CPU to
    decode); a worker is given the scan's (workers.WorkerLogin.counters) instead of reading it again.
    A catalogue the session already holds (vsphere_perf.perf_counters) is not read again."""
    if session.counter_keys is None:
        if session.perf_counters is not None:
            session.counter_keys = {name: (info.key, info.unitInfo.key)
                                    for name, info in session.perf_counters.items()}
            return session.counter_keys
        with api_errors(session, "reading performance counter ids"):
            rows = [row for page, _more in retrieve_pages(session, [catalogue_spec(session.content.perfManager)], None)
                    for row in page]
        session.counter_keys = {c.name: (c.key, c.unit) for _ref, props, _missing in rows
                                for c in props.get("perfCounter") or []}
    return session.counter_keys


def batches(entities: list[Entity], size: int) -> list[list[Entity]]:
    return [entities[i:i + size] for i in range(0, len(entities), size)]


def query(session: VsphereSession, entities: list[Entity], counter_names: tuple[str, ...], end: datetime,
          window_s: float, limits: BatchLimits, in_flight: int, progress: Callable[[int], None] | None = None,
          keep: KeptPart | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """moid -> vsphere_perf record (realtime, else the 300 s rollup), and moid -> why it has none.
    ``keep``: the realtime samples kept from a watch's last scan (perfkeep.py): for the entities it
    holds only the newer samples are asked for; it is given this scan's."""
    counters = counter_keys(session)
    unknown = [n for n in counter_names if n not in counters]
    if unknown:
        raise CollectionError(f"{session.where}: server has no perf counter {', '.join(unknown)}", kind="not-found")
    # a typed array: each QuerySpec then checks its type once instead of checking every MetricId
    ids = vim.PerformanceManager.MetricId.Array(  # type: ignore[attr-defined]  # pyVmomi makes .Array at run time
        [vim.PerformanceManager.MetricId(counterId=counters[n][0], instance="*") for n in counter_names])
    names = {counters[n][0]: (n, counters[n][1]) for n in counter_names}
    start = end - timedelta(seconds=window_s)
    records: dict[str, dict] = {}
    todo = entities
    if keep is not None:
        records, todo = _kept_pass(session, entities, ids, names, start, end, limits, in_flight, progress, keep)
    more, errors = _pass(session, todo, ids, names, start, end, REALTIME_S, limits, in_flight, progress, keep)
    records.update(more)
    late = [e for e in todo if e.key not in records and e.key not in errors]
    if late:  # no realtime samples: the 5-minute rollup, over at least two rollup intervals
        start = end - timedelta(seconds=max(window_s, 2 * HISTORICAL_S))
        more, more_errors = _pass(session, late, ids, names, start, end, HISTORICAL_S, limits, in_flight, None)
        records.update(more)
        errors.update(more_errors)
        for e in late:
            if e.key not in records and e.key not in errors:
                errors[e.key] = "no samples at 20 s or 300 s (statistics level or collection off for it?)"
    return records, errors


def _pass(session, entities, ids, names, start, end, interval, limits, in_flight, progress, keep=None):
    records: dict[str, dict] = {}
    errors: dict[str, str] = {}

    def one(batch: list[Entity]) -> None:
        try:
            got = _query_batch(session, batch, ids, names, start, end, interval, errors, keep)
        except CollectionError as exc:
            if len(batch) == 1 or exc.kind in WHOLE_PASS_KINDS:
                raise
            got = {}
            for entity in batch:  # one refused entity must not cost the others their figures
                try:
                    got.update(_query_batch(session, [entity], ids, names, start, end, interval, errors, keep))
                except CollectionError as single:
                    if single.kind in WHOLE_PASS_KINDS:
                        raise
                    errors[entity.key] = single.one_line()
        records.update(got)
        if progress:
            progress(len(batch))

    with ThreadPoolExecutor(max_workers=max(1, in_flight), thread_name_prefix="queryperf") as pool:
        size = limits.entities_per_query(len(ids), interval)
        for future in [pool.submit(one, b) for b in batches(entities, size)]:
            future.result()
    return records, errors


def _query_batch(session, batch, ids, names, start, end, interval, errors: dict[str, str],
                 keep: KeptPart | None = None) -> dict[str, dict]:
    """moid -> record of the batch's entities with samples; an entity whose answer cannot be read
    (sample times that are no times) goes to ``errors``, the others stand. ``keep`` is given the
    realtime samples."""
    by_key = {e.key: e for e in batch}
    records = {}
    for key, samples in _answers(session, batch, ids, start, end, interval).items():
        entity = by_key.get(key)
        if entity is None:
            continue
        if isinstance(samples, ValueError):  # one entity's bad sample times: its figures only
            errors[key] = f"{session.where}: QueryPerf of {entity.name}: {samples}"
            log.warning("%s", errors[key])
            continue
        record = record_of(entity.name, samples, names, start, end, interval)
        if record is not None:
            records[key] = record
            if keep is not None and interval == REALTIME_S:
                keep.put(key, entity.where, samples)
    return records


def _answers(session, batch, ids, start, end, interval) -> dict[str, Samples | ValueError]:
    """One QueryPerf of ``batch`` over start..end: moid -> its decoded samples, or why they cannot be read."""
    spec = functools.partial(vim.PerformanceManager.QuerySpec, startTime=start, endTime=end, intervalId=interval,
                             format="csv", metricId=ids)
    with api_errors(session, f"QueryPerf of {len(batch)} entities ({batch[0].name}...)"):
        results = query_perf(session, [e.obj for e in batch], spec)
    answers: dict[str, Samples | ValueError] = {}
    for entity_metric in results:
        try:
            answers[entity_metric.entity.moid] = decode_samples(entity_metric)
        except ValueError as exc:
            answers[entity_metric.entity.moid] = exc
    return answers


def _kept_pass(session, entities, ids, names, start, end, limits: BatchLimits, in_flight, progress,
               keep: KeptPart) -> tuple[dict[str, dict], list[Entity]]:
    """The records of the entities whose kept samples the samples after the newest kept one join
    (one QueryPerf per batch of entities with the same newest sample); the entities to read whole."""
    by_newest: dict[datetime, list[Entity]] = {}
    whole: list[Entity] = []
    for entity in entities:
        kept = keep.get(entity.key, entity.where)
        if kept is None or kept.times[-1] <= start:  # nothing kept, or nothing kept within the window
            whole.append(entity)
        else:
            by_newest.setdefault(kept.times[-1], []).append(entity)
    records: dict[str, dict] = {}

    def one(newest: datetime, batch: list[Entity]) -> None:
        try:
            answers: dict[str, Samples | ValueError] | None = _answers(session, batch, ids, newest, end, REALTIME_S)
        except CollectionError as exc:
            if exc.kind in WHOLE_PASS_KINDS:  # the server's or the path's: the scan fails, the next reads whole
                raise
            log.info("%s: the new samples of %d entities not read (%s): reading their whole window",
                     session.where, len(batch), exc.one_line())
            answers = None
        done = 0
        for entity in batch:
            together, record = None, None
            if answers is not None:
                new = answers.get(entity.key, NO_SAMPLES)
                kept = keep.get(entity.key, entity.where)
                if isinstance(new, Samples) and kept is not None and not _overdue(new, newest, end):
                    together = joined(kept, new, start, REALTIME_S)
            if together is not None:
                record = record_of(entity.name, together, names, start, end, REALTIME_S)
            if together is None or record is None:
                keep.forget(entity.key)
                whole.append(entity)
                continue
            keep.put(entity.key, entity.where, together)
            records[entity.key] = record
            done += 1
        if progress and done:
            progress(done)

    with ThreadPoolExecutor(max_workers=max(1, in_flight), thread_name_prefix="queryperf") as pool:
        size = limits.entities_per_query(len(ids), REALTIME_S)  # the user's --max-query-metrics holds here too
        futures = [pool.submit(one, newest, batch) for newest, group in by_newest.items()
                   for batch in batches(group, size)]
        for future in futures:
            future.result()
    return records, whole


def _overdue(new: Samples, newest: datetime, end: datetime) -> bool:
    """No sample after the newest kept one, though one was due two intervals ago: the server has stopped
    giving the entity's realtime samples (a whole read says what it still has)."""
    return (not new.times or new.times[-1] <= newest) and (end - newest).total_seconds() > 2 * REALTIME_S


def decode_samples(entity_metric: EntityCsv) -> Samples:
    """One entity's answer in time order; ValueError when its sample times are no times."""
    by_id: dict[tuple[int, str], list[int | None]] = {}
    unreadable: dict[tuple[int, str], list[str]] = {}
    try:
        decode_csv_series(entity_metric.sample_info, entity_metric.values, by_id, unreadable)
    except ValueError:
        info = _printable(entity_metric.sample_info or "")
        raise ValueError(f"sample times from vCenter that are no times ({info[:60]!r})") from None
    order, times = _time_order(entity_metric.sample_info or "")
    if order is None:
        series = {key: tuple(values) for key, values in by_id.items()}
    else:
        series = {key: tuple(values[i] for i in order) for key, values in by_id.items()}
    return Samples(times, series, unreadable)


def perf_record(name: str, entity_metric: EntityCsv, names: dict[int, tuple[str, str]], start: datetime,
                end: datetime, interval: int) -> dict | None:
    """One entity's answer as a ``vsphere_perf`` capture (timestamps ascending); None without samples."""
    return record_of(name, decode_samples(entity_metric), names, start, end, interval)


def record_of(name: str, samples: Samples, names: dict[int, tuple[str, str]], start: datetime, end: datetime,
              interval: int) -> dict | None:
    """The ``vsphere_perf`` capture of one entity's samples over the window start..end; None without samples."""
    if not samples.times:
        return None
    wildcard = False
    series = []
    for (counter_id, instance), values in sorted(samples.series.items()):  # keys are unique: values never compared
        if counter_id not in names:
            continue
        counter, unit = names[counter_id]
        if instance == "*":  # vcsim: the wildcard is echoed, one series, which is the entity's aggregate
            instance, wildcard = "", True
        series.append({"counter": counter, "instance": instance, "unit": unit, "values": list(values)})
    notes = []
    if interval != REALTIME_S:
        notes.append(f"no realtime (20 s) samples for {name}; {interval} s rollup used")
    if wildcard:
        notes.append("the server answered instance '*' with one series (no per-vCPU / per-vNIC expansion): "
                     "read as the aggregate")
    notes += unreadable_notes(name, samples.unreadable, names)
    return {"schema": SCHEMA_PERF, "vm": name, "interval_s": interval,
            "rollup": "realtime" if interval == REALTIME_S else "historical", "note": "; ".join(notes) or None,
            "start": iso_utc(start), "end": iso_utc(end), "timestamps": [_iso(t) for t in samples.times],
            "series": series}


def unreadable_notes(name: str, unreadable: dict[tuple[int, str], list[str]],
                     names: dict[int, tuple[str, str]]) -> list[str]:
    """One warning per series the server sent values in that are no integer (read as no sample),
    naming the entity and the counter; logged too."""
    notes = []
    for (counter_id, instance), cells in sorted(unreadable.items()):
        if counter_id not in names:
            continue
        counter = names[counter_id][0] + (f" instance {instance!r}" if instance not in ("", "*") else "")
        shown = ", ".join(repr(_printable(c)[:20]) for c in cells[:3])
        note = (f"{name}: {counter}: {len(cells)} value(s) from vCenter not an integer ({shown}): read as no "
                "sample")
        log.warning("%s", note)
        notes.append(note)
    return notes


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


@functools.lru_cache(maxsize=256)  # every entity of a batch shares its sampleInfoCSV
def _time_order(sample_info: str) -> tuple[tuple[int, ...] | None, tuple[datetime, ...]]:
    """(sample order by time, None when already ascending; the sample times in that order)."""
    timestamps = sample_times(sample_info)
    order = sorted(range(len(timestamps)), key=lambda i: timestamps[i])
    return (None if order == list(range(len(order))) else tuple(order)), tuple(timestamps[i] for i in order)


@functools.lru_cache(maxsize=4096)  # a window's few sample times, shared by every entity
def _iso(moment: datetime) -> str:
    return iso_utc(moment)
