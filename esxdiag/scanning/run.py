"""One fleet scan, the same for `esxdiag scan` and each cycle of `esxdiag serve`: the API pass
(esxdiag.collectors.fleet.scan) -> the snapshot, written first (re-analysable with `esxdiag scan
--snapshot`) -> the fleet rules (esxdiag.fleet.analysis.build_report) -> the deep check of the
suspects the command chose (esxdiag.scanning.deep) -> the earlier proofs still valid
(esxdiag.scanning.proofs) -> the history (esxdiag.fleet.history, through the command's recorder).

The commands decide where things go, which suspects to check, where earlier proofs come from, and
what they print; they add no step of their own. A history that cannot be written does not undo the
scan: its error is returned (serve serves the scan and says the history is degraded; scan exits 2).
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping

from esxdiag.fleet.analysis import NO_EVIDENCE, Evidence, build_report, with_evidence
from esxdiag.fleet.history import HistoryError
from esxdiag.fleet.model import FleetReport
from esxdiag.fleet.snapshot import Snapshot, snapshot_from_dict, write_snapshot
from esxdiag.scanning.deep import DeepCheck, DeepOutcome, DeepPlan, deep_check
from esxdiag.scanning.proofs import HeldProofs, keep_proofs


@dataclass(frozen=True)
class Proofs:
    kept: Mapping[tuple[str, str], DeepCheck]  # earlier deep checks by (vCenter, MOID)
    max_age_s: float


@dataclass(frozen=True)
class Scanned:
    report: FleetReport | None  # None: stopped before any vCenter was scanned (abandoned)
    snapshot: Snapshot | None = None
    path: Path | None = None  # the snapshot file
    checks: list[DeepCheck] = field(default_factory=list)  # this scan's deep checks
    unreached_hosts: int = 0  # deep-check hosts not sampled
    retired: frozenset = frozenset()  # (vCenter, MOID, checked_at) of the kept proofs this scan's counters retired
    history_error: str | None = None  # the history could not be written: its own fault, the scan stands
    history_written: bool = False


FULL_COLLECTION_EVERY = 10  # scans: how long a garbage cycle frozen with a scan's records can wait for the collector
_scans_since_full = 0


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, back as it was after. A scan builds
    millions of container objects that live to its end (records, dicts, tuples, rarely cycles); each
    collection of the older generations walks that whole growing heap again: ~1 s of a 10,000-VM
    scan's 8 s CPU. Reference counting still frees everything acyclic.

    On the way out the heap is frozen (gc.freeze): the records the block built would otherwise be
    walked by the first young-generation collections after it, finding nothing (~60-90 ms of a
    2,000-VM serve cycle). The next block gives them back to the collector (gc.unfreeze), and every
    FULL_COLLECTION_EVERY-th collects the whole heap first, so a garbage cycle frozen with a scan's
    records is freed within that many scans."""
    global _scans_since_full
    was_enabled = gc.isenabled()
    gc.unfreeze()
    _scans_since_full += 1
    if _scans_since_full >= FULL_COLLECTION_EVERY and was_enabled:
        _scans_since_full = 0
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def run_scan(targets: list, options, thresholds: dict, snapshot_path: Callable[[dict], Path], *,
             saved: tuple[Snapshot, Path] | None = None, progress=None, stop: threading.Event | None = None,
             on_snapshot: Callable[[Snapshot, Path], None] | None = None, deep: DeepPlan | None = None,
             on_deep_error: Callable[[Exception], None] | None = None, proofs: Proofs | None = None,
             record: Callable[[FleetReport, frozenset], dict | None] | None = None, watches=None) -> Scanned:
    """Scan ``targets`` (Credentials) with ``options`` (ScanOptions), or judge a ``saved`` (snapshot,
    path) instead. ``snapshot_path(data)`` says where the new snapshot goes; ``on_snapshot`` sees it
    before any analysis (and may refuse it by raising); ``on_deep_error``: the scan stands without
    its deep check (else the error propagates); ``record(report, retired)`` appends to the history
    with the proofs this scan retired, and returns what changed (its errors name the file). ``watches``
    (esxdiag.collectors.fleet.watch.Watches, kept by the caller): read only the inventory's changes."""
    with cyclic_gc_paused():
        if saved is None:
            from esxdiag.collectors.fleet import scan  # pyvmomi: only when a scan goes to the network

            data = scan(targets, options, progress, stop, watches)
            if stop is not None and stop.is_set() and not any(v["status"] == "scanned" for v in data["vcenters"]):
                return Scanned(None)  # shutdown ended it: abandoned, not failed
            path = write_snapshot(data, snapshot_path(data))
            snapshot = snapshot_from_dict(data, str(path))
        else:
            snapshot, path = saved
        if on_snapshot is not None:
            on_snapshot(snapshot, path)
        first = build_report(snapshot, thresholds, str(path))
    scanned = any(v.status == "scanned" for v in snapshot.vcenters)
    outcome = DeepOutcome(NO_EVIDENCE, [], 0)
    if deep is not None and (scanned or deep.say_none):
        try:
            outcome = deep_check(deep, first, thresholds, targets)
        except Exception as exc:
            if on_deep_error is None:
                raise
            on_deep_error(exc)  # counted as a host not reached
            outcome = DeepOutcome(NO_EVIDENCE, [], 1)
    deep_now = outcome.evidence
    held = HeldProofs({}, {}, {})
    if proofs is not None and scanned:
        held = keep_proofs(first, snapshot, proofs.kept, time.time(), proofs.max_age_s, deep_now.checked)
    report = with_evidence(first, snapshot, thresholds, Evidence(
        checks={**deep_now.checks, **held.checks}, section=deep_now.section, notes=held.notes))
    retired = frozenset((*key, c.checked_at) for key, c in held.retired.items())
    history_error = None
    if record is not None:
        try:
            report = report.with_changes(record(report, retired))
        except (HistoryError, sqlite3.Error, OSError) as exc:
            history_error = str(exc)
    return Scanned(report, snapshot, path, outcome.checks, outcome.unreached_hosts, retired, history_error,
                   history_written=record is not None and history_error is None)
