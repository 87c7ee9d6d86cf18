"""One cycle of one vCenter, on `esxdiag scan`'s own path: the API pass (esxdiag.collectors.fleet
.scan) -> the snapshot, written first (the newest per vCenter is kept, re-analysable with `esxdiag
scan --snapshot`) -> the fleet rules (esxdiag.fleet.analysis.build_report) -> the deep check of
this cycle's budget (esxdiag.serve.deep) -> the history. serve adds no analysis of its own.

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

from esxdiag.bundle import slug
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.history import HistoryError
from esxdiag.fleet.snapshot import snapshot_from_dict, write_snapshot
from esxdiag.scanning import scan_options
from esxdiag.serve.deep import DeepRunner
from esxdiag.serve.proofs import keep_proofs
from esxdiag.serve.state import DeepCheck, State, VcenterState, keep_deep
from esxdiag.serve.store import Store

log = logging.getLogger("esxdiag.serve")


@dataclass(frozen=True)
class Outcome:
    document: dict | None  # this vCenter's fleet report; None: abandoned at shutdown
    checks: list[DeepCheck] = field(default_factory=list)
    unreached_hosts: int = 0
    history_error: str | None = None  # the history could not be written: its own fault, the scan stands
    retired: frozenset = frozenset()  # MOIDs whose kept proof the drops' end retired (esxdiag.serve.proofs)
    history_written: bool = False


class CycleRunner:
    """Callable: (credentials, stop event, the vCenter's current state) -> Outcome."""

    def __init__(self, args: argparse.Namespace, thresholds: dict, store: Store, data_dir: Path,
                 deep_lock: threading.Lock):
        self.options = scan_options(args)
        self.thresholds, self.store, self.data_dir = thresholds, store, data_dir
        self.snapshots = data_dir / "snapshots"
        self.snapshots.mkdir(parents=True, exist_ok=True)
        self.proof_max_age_s = proof_max_age(args)
        self.deep = DeepRunner(args, thresholds, data_dir, deep_lock) if args.deep or args.deep_vm else None

    def __call__(self, creds, stop: threading.Event, entry: VcenterState) -> Outcome:
        from esxdiag.collectors.fleet import scan  # pyvmomi

        data = scan([creds], self.options, None, stop)
        status = data["vcenters"][0]
        if stop.is_set() and status["status"] != "scanned":  # shutdown ended it: abandoned, not failed
            return Outcome(None)
        path = write_snapshot(data, self.snapshots / f"{slug(status['name'])}.json")
        snapshot = snapshot_from_dict(data, str(path))
        document = build_report(snapshot, self.thresholds, str(path))
        checks, unreached = [], 0
        if self.deep is not None and status["status"] == "scanned":
            recent = {moid: c.checked_ts for moid, c in entry.deep.items()}
            try:
                checks, unreached = self.deep.run(document, snapshot, creds, stop, recent, time.time())
            except Exception:  # the scan stands without its deep check: logged, counted as a host not reached
                log.exception("%s: deep check failed", status["name"])
                document["deep"], unreached = None, 1
        retired = set()
        if status["status"] == "scanned":
            retired = keep_proofs(document, snapshot, self.thresholds, entry.deep, time.time(), self.proof_max_age_s)
        history_error = self.keep(document, checks)
        return Outcome(document, checks, unreached, history_error, history_written=history_error is None,
                       retired=frozenset(retired))

    def keep(self, document: dict, checks: list[DeepCheck]) -> str | None:
        """Record the cycle in the history and apply retention; the history's fault, if any (logged)."""
        try:
            document["changes"] = self.store.record(document)
            if checks:
                self.store.record_deep(checks[0].vcenter, [_row(c) for c in checks], checks[0].checked_at)
            now = datetime.now(timezone.utc)
            self.store.prune(now)
        except (HistoryError, sqlite3.Error, OSError) as exc:
            document["changes"] = None
            log.error("history %s not written: %s", self.store.path, exc)
            return str(exc) if isinstance(exc, HistoryError) else f"{self.store.path}: {exc}"
        prune_deep_dirs(self.data_dir / "deep", now.timestamp() - self.store.retention.total_seconds())
        return None


def proof_max_age(args: argparse.Namespace) -> float:
    """How long a deep check is shown, and a proof it holds kept: --proof-max-age, else twice --deep-recheck."""
    return 2 * args.deep_recheck if args.proof_max_age is None else args.proof_max_age


def _row(check: DeepCheck) -> dict:
    return {"moid": check.moid, "name": check.name, "verdicts": list(check.verdicts),
            "worst_severity": check.worst_severity, "report": check.report, "error": check.error,
            "vnics": [dict(v) for v in check.vnics]}


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
    document = outcome.document
    status = document["vcenters"][0]
    common = dict(running=False, last_ts=ended_ts, last_seconds=round(seconds, 3), cycles=entry.cycles + 1,
                  last_scan_seconds=status["seconds"], last_requests=status["requests"],
                  requests=entry.requests + (status["requests"] or 0),
                  deep_checked=entry.deep_checked + len(outcome.checks),
                  deep_host_errors=entry.deep_host_errors + outcome.unreached_hosts)
    if status["status"] == "scanned":
        state.update(name, document=document, good_ts=ended_ts, last_ok=True, last_error=None, last_error_kind=None,
                     last_vms=status["vms"], deep=keep_deep(entry.deep, outcome.checks, document, ended_ts,
                                                            deep_max_age_s, outcome.retired), **common)
    else:
        state.count_failure(name, status["error_kind"] or "unknown", last_ok=False, last_error=status["error"],
                            last_error_kind=status["error_kind"], last_vms=None, **common)
