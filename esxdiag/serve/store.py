"""What `serve` keeps in the scan history (SQLite) beside what esxdiag.fleet.history writes.

Every cycle is recorded through esxdiag.fleet.history.record_entry, exactly as `esxdiag scan`
records a scan (so `esxdiag history VM` reads serve's cycles too), read from the typed report
(entry_of_report: the same rows as from its JSON, without writing the whole JSON each cycle). This module adds what a
long-running writer needs:

* WAL journal mode (set once, it stays with the file): readers (the web pages, `esxdiag history`)
  read while a cycle writes, and a writer never waits for them.
* retention: scans (and their VM rows and deep checks) collected before the cut-off are deleted
  after each cycle, a few at a time, so the file stops growing.
* the deep checks (esxdiag.fleet.history's ``deep_checks``, recorded with each cycle): read back
  so a VM's page shows its last deep report, and its proof is kept, after a restart.
* one VM's past in a few page reads whatever the size of the history (esxdiag.fleet.history's
  index on vm_results(vcenter, moid, scan_id)).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

from esxdiag.fleet.history import (DEEP_SINCE, DEEP_SQL, HELD, ROW_KEYS, ROWS_SQL, HistoryError, deep_row,
                                   entry_of_report, prepare, record_entry)
from esxdiag.fleet.model import FleetReport

PRUNE_BATCH = 20  # scans deleted per cycle at most: a long-stopped instance catches up over a few cycles


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """The history file as serve uses it. Each call opens its own connection: the web threads and
    the cycle threads never share one."""

    def __init__(self, path: str | Path, retention_days: float):
        self.path = Path(path)
        self.retention = timedelta(days=retention_days)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db:
            try:
                mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise HistoryError(f"{self.path}: cannot switch the history to WAL (journal mode stays {mode})")
            except sqlite3.Error as exc:  # a full disk, a damaged or read-only file
                raise HistoryError(f"{self.path}: cannot use as scan history ({exc})") from None
        prepare(self.path)

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=10)
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at each checkpoint, never corrupt
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot use as scan history ({exc})") from None
        return db

    def record(self, report: FleetReport, retired: frozenset = frozenset()) -> dict | None:
        """Append one cycle, its deep checks and the proofs it retired (esxdiag.fleet.history); what
        changed since the previous one."""
        return record_entry(self.path, entry_of_report(report), retired)

    def prune(self, now: datetime) -> int:
        """Delete up to PRUNE_BATCH scans collected before now - retention, with their rows; the deep
        checks before the cut-off too. Returns the scans deleted."""
        cutoff = iso(now - self.retention)
        with closing(self._connect()) as db, db:
            ids = [row[0] for row in db.execute("SELECT id FROM scans WHERE collected_at < ? ORDER BY id LIMIT ?",
                                                (cutoff, PRUNE_BATCH))]
            for scan_id in ids:
                db.execute("DELETE FROM vm_results WHERE scan_id = ?", (scan_id,))
                db.execute("DELETE FROM scans WHERE id = ?", (scan_id,))
            db.execute("DELETE FROM deep_checks WHERE checked_at < ?", (cutoff,))
        return len(ids)

    def _read(self, sql: str, params: tuple) -> list[tuple]:
        """Rows of a query; none before the first cycle created the tables."""
        with closing(self._connect()) as db:
            try:
                return db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []
                raise HistoryError(f"{self.path}: cannot read scan history ({exc})") from None

    def vm_past(self, vcenter: str, moid: str, limit: int) -> list[dict]:
        """One VM's results in the newest ``limit`` scans that saw it, newest first (vm_history's rows)."""
        rows = self._read(ROWS_SQL + "WHERE r.vcenter = ? AND r.moid = ? ORDER BY r.scan_id DESC LIMIT ?",
                          (vcenter, moid, limit))
        return [dict(zip(ROW_KEYS, row)) for row in rows]

    def last_deep(self, vcenter: str, moid: str) -> dict | None:
        rows = self._read(DEEP_SQL + "WHERE d.vcenter = ? AND d.moid = ? ORDER BY d.checked_at DESC LIMIT 1",
                          (vcenter, moid))
        return deep_row(rows[0]) if rows else None

    def deep_since(self, since: datetime) -> list[dict]:
        """Every VM's newest deep check at or after ``since`` (to export again after a restart)."""
        return [deep_row(row) for row in self._read(DEEP_SQL + DEEP_SINCE, (iso(since),))]

    def held_since(self, since: datetime) -> list[dict]:
        """Every VM's newest deep check at or after ``since`` that no cycle or scan has retired
        (esxdiag.fleet.history.held_proofs_since): kept again after a restart."""
        return [deep_row(row) for row in self._read(DEEP_SQL + DEEP_SINCE + HELD, (iso(since),))]
