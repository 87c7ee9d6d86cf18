"""One cycle of one vCenter: esxdiag.scanning.run.run_scan, `esxdiag scan`'s own sequence (the API
pass -> the snapshot, the newest per vCenter kept under --data-dir/snapshots -> the fleet rules ->
the deep check of this cycle's budget (esxdiag.serve.deep.pick) -> the proofs kept in the state ->
the history, then its retention). serve adds no analysis of its own.

A cycle whose scan shutdown stopped records nothing: it is abandoned, not failed.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from esxdiag.bundle import create_unique, slug, stamp
from esxdiag.fleet.history import HistoryError
from esxdiag.fleet.model import FleetReport
from esxdiag.fleet.snapshot import VcenterStatus
from esxdiag.scanning.deep import DeepCheck, DeepPlan
from esxdiag.scanning.options import proof_max_age, scan_options
from esxdiag.scanning.run import Proofs, run_scan
from esxdiag.serve.deep import pick
from esxdiag.serve.state import Expiry, State, VcenterState, keep_deep
from esxdiag.serve.store import Store

log = logging.getLogger("esxdiag.serve")


@dataclass(frozen=True)
class Outcome:
    report: FleetReport | None  # this vCenter's fleet report; None: abandoned at shutdown
    checks: list[DeepCheck] = field(default_factory=list)
    unreached_hosts: int = 0
    history_error: str | None = None  # the history could not be written: its own fault, the scan stands
    retired: frozenset = frozenset()  # MOIDs whose kept proof this cycle's counters retired (esxdiag.scanning.proofs)
    history_written: bool = False
    expiry: Expiry | None = None  # how the report's deep checks expire while it is shown
    failed: VcenterStatus | None = None  # a cycle that ended in a bug, as a failed scan (no report)

    @property
    def abandoned(self) -> bool:
        return self.report is None and self.failed is None


class CycleRunner:
    """Callable: (credentials, stop event, the vCenter's current state) -> Outcome."""

    def __init__(self, args: argparse.Namespace, thresholds: dict, store: Store, data_dir: Path,
                 deep_lock: threading.Lock):
        self.args, self.options = args, scan_options(args)
        self.thresholds, self.store, self.data_dir, self.deep_lock = thresholds, store, data_dir, deep_lock
        self.snapshots = data_dir / "snapshots"
        self.snapshots.mkdir(parents=True, exist_ok=True)
        self.proof_max_age_s = proof_max_age(args.proof_max_age, args.deep_recheck)
        self.deep = bool(args.deep or args.deep_vm)
        self.watches = None  # each vCenter's login and inventory kept between cycles (docs/serve.md)
        if args.inventory_max_age:
            from esxdiag.collectors.fleet.watch import Watches  # pyvmomi: only when serve scans
            self.watches = Watches(args.inventory_max_age)

    def __call__(self, creds, stop: threading.Event, entry: VcenterState) -> Outcome:
        now = time.time()
        recent = {moid: c.checked_ts for moid, c in entry.deep.items()}
        deep = DeepPlan(self.args, lambda report: pick(report, self.args, recent, now), lambda: self.data_dir,
                        lambda: create_unique(self.data_dir / "deep" / slug(f"{creds.host}_{creds.port}"), stamp()),
                        say_none=False, lock=self.deep_lock, stop=stop) if self.deep else None

        def deep_failed(exc: Exception) -> None:
            log.error("%s:%s: deep check failed", creds.host, creds.port, exc_info=exc)

        scanned = run_scan([creds], self.options, self.thresholds,
                           lambda data: self.snapshots / f"{slug(data['vcenters'][0]['name'])}.json", stop=stop,
                           deep=deep, on_deep_error=deep_failed,
                           proofs=Proofs({(c.vcenter, moid): c for moid, c in entry.deep.items()},
                                         self.proof_max_age_s),
                           record=self.record, watches=self.watches)
        if scanned.report is None:
            return Outcome(None)
        if scanned.history_error:
            log.error("history %s not written: %s", self.store.path, scanned.history_error)
        return Outcome(scanned.report, scanned.checks, scanned.unreached_hosts, scanned.history_error,
                       frozenset(moid for _, moid, _ in scanned.retired), scanned.history_written,
                       Expiry.of(scanned.report, scanned.snapshot, self.thresholds, self.proof_max_age_s))

    def close(self) -> None:
        """Log out of the vCenters whose login the cycles kept."""
        if self.watches is not None:
            self.watches.close()

    def record(self, report: FleetReport, retired: frozenset = frozenset()) -> dict | None:
        """Record the cycle, its deep checks and the proofs it retired in the history, then apply retention."""
        try:
            changes = self.store.record(report, retired)
            now = datetime.now(timezone.utc)
            self.store.prune(now)
        except (sqlite3.Error, OSError) as exc:
            raise HistoryError(f"{self.store.path}: {exc}") from None
        prune_deep_dirs(self.data_dir / "deep", now.timestamp() - self.store.retention.total_seconds())
        return changes


def prune_deep_dirs(root: Path, cutoff_ts: float) -> int:
    """Remove deep/<vCenter>/<TIME[-N]>/ folders (bundles and reports) made before the cut-off."""
    removed = 0
    for folder in sorted(root.glob("*/*")) if root.is_dir() else []:
        try:
            made = datetime.strptime(folder.name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
        except ValueError:
            continue  # not one of ours
        if folder.is_dir() and made.timestamp() < cutoff_ts:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed
def settle(state: State, name: str, outcome: Outcome, ended_ts: float, seconds: float, deep_max_age_s: float) -> None:
    """Fold a finished cycle into the state: a good one replaces the document (VMs gone from the
    vCenter disappear); a failed one keeps the last good document, now stale, and counts its kind."""
    if outcome.history_written or outcome.history_error:
        state.note_history(outcome.history_error, ended_ts)
    entry = state.get(name)
    report = outcome.report
    status = report.vcenters[0] if report is not None else outcome.failed
    if status is None:
        raise ValueError(f"{name}: an abandoned cycle has nothing to settle")
    common = dict(running=False, running_since_ts=None, last_ts=ended_ts, last_seconds=round(seconds, 3),
                  cycles=entry.cycles + 1,
                  last_scan_seconds=status.seconds, last_requests=status.requests,
                  requests=entry.requests + (status.requests or 0),
                  deep_checked=entry.deep_checked + len(outcome.checks),
                  deep_host_errors=entry.deep_host_errors + outcome.unreached_hosts)
    if status.status == "scanned" and report is not None:
        state.update(name, document=report, good_ts=ended_ts, last_ok=True, last_error=None, last_error_kind=None,
                     last_vms=status.vms, deep=keep_deep(entry.deep, outcome.checks, report, ended_ts,
                                                            deep_max_age_s, outcome.retired),
                     expiry=outcome.expiry, **common)
    else:
        state.count_failure(name, status.error_kind or "unknown", last_ok=False, last_error=status.error,
                            last_error_kind=status.error_kind, last_vms=None, **common)
