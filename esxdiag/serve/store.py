"""What `serve` keeps in the scan history (SQLite) beside what esxdiag.fleet.history writes.

Every cycle is recorded through esxdiag.fleet.history.changes_and_record, exactly as `esxdiag
scan` records a scan (so `esxdiag history VM` reads serve's cycles too). This module adds what a
long-running writer needs:

* WAL journal mode (set once, it stays with the file): readers (the web pages, `esxdiag history`)
  read while a cycle writes, and a writer never waits for them.
* retention: scans (and their VM rows and deep checks) collected before the cut-off are deleted
  after each cycle, a few at a time, so the file stops growing.
* ``serve_deep``: each deep check's verdicts, ring figures per vNIC and report path, so a VM's
  page shows its last deep report after a restart.
* an index on vm_results(vcenter, moid, scan_id): one VM's past in a few page reads whatever the
  size of the history.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

from esxdiag.fleet.history import HistoryError, changes_and_record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS serve_deep (
    vcenter TEXT NOT NULL, moid TEXT NOT NULL, name TEXT NOT NULL, checked_at TEXT NOT NULL,
    verdicts TEXT NOT NULL, worst_severity TEXT, report TEXT, error TEXT, vnics TEXT NOT NULL,
    PRIMARY KEY (vcenter, moid, checked_at));
CREATE INDEX IF NOT EXISTS serve_deep_checked ON serve_deep(checked_at);
"""
# on esxdiag.fleet.history's tables, once it has created them (its first record)
_HISTORY_INDEXES = """
CREATE INDEX IF NOT EXISTS vm_results_vm ON vm_results(vcenter, moid, scan_id);
CREATE INDEX IF NOT EXISTS scans_collected ON scans(collected_at);
"""
PRUNE_BATCH = 20  # scans deleted per cycle at most: a long-stopped instance catches up over a few cycles
HISTORY_KEYS = ("collected_at", "vcenter", "moid", "name", "class", "severity", "score", "drops_per_s",
                "drops_per_1000", "ready_worst_pct")  # as esxdiag.fleet.history.vm_history


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """The history file as serve uses it. Each call opens its own connection: the web threads and
    the cycle threads never share one."""

    def __init__(self, path: str | Path, retention_days: float):
        self.path = Path(path)
        self.retention = timedelta(days=retention_days)
        self._indexed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db:
            try:
                mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise HistoryError(f"{self.path}: cannot switch the history to WAL (journal mode stays {mode})")
                db.executescript(_SCHEMA)
                self._index(db)
            except sqlite3.Error as exc:  # a full disk, a damaged or read-only file
                raise HistoryError(f"{self.path}: cannot use as scan history ({exc})") from None

    def _index(self, db: sqlite3.Connection) -> None:
        if not self._indexed and db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                            "('scans', 'vm_results')").fetchone()[0] == 2:
            db.executescript(_HISTORY_INDEXES)
            self._indexed = True

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=10)
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at each checkpoint, never corrupt
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot use as scan history ({exc})") from None
        return db

    def record(self, document: dict) -> dict | None:
        """Append one cycle (esxdiag.fleet.history) and return what changed since the previous one."""
        changes = changes_and_record(self.path, document)
        if not self._indexed:
            with closing(self._connect()) as db:
                self._index(db)
        return changes

    def record_deep(self, vcenter: str, checks: list[dict], checked_at: str) -> None:
        """checks: {"moid", "name", "verdicts", "worst_severity", "report", "error", "vnics"} per VM."""
        rows = [(vcenter, c["moid"], c["name"], checked_at, json.dumps(c["verdicts"]), c["worst_severity"],
                 c["report"], c["error"], json.dumps(c["vnics"])) for c in checks]
        with closing(self._connect()) as db, db:
            db.executemany("INSERT OR REPLACE INTO serve_deep VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

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
            db.execute("DELETE FROM serve_deep WHERE checked_at < ?", (cutoff,))
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
        rows = self._read(
            "SELECT s.collected_at, r.vcenter, r.moid, r.name, r.class, r.severity, r.score, r.drops_per_s, "
            "r.drops_per_1000, r.ready_worst_pct FROM vm_results r JOIN scans s ON s.id = r.scan_id "
            "WHERE r.vcenter = ? AND r.moid = ? ORDER BY r.scan_id DESC LIMIT ?", (vcenter, moid, limit))
        return [dict(zip(HISTORY_KEYS, row)) for row in rows]

    def last_deep(self, vcenter: str, moid: str) -> dict | None:
        rows = self._read("SELECT name, checked_at, verdicts, worst_severity, report, error, vnics FROM serve_deep "
                          "WHERE vcenter = ? AND moid = ? ORDER BY checked_at DESC LIMIT 1", (vcenter, moid))
        return _deep_row(vcenter, moid, rows[0]) if rows else None

    def deep_since(self, since: datetime) -> list[dict]:
        """Every VM's newest deep check at or after ``since`` (to export again after a restart)."""
        rows = self._read(
            "SELECT d.vcenter, d.moid, d.name, d.checked_at, d.verdicts, d.worst_severity, d.report, d.error, "
            "d.vnics FROM serve_deep d WHERE d.checked_at >= ? AND d.checked_at = (SELECT max(checked_at) "
            "FROM serve_deep e WHERE e.vcenter = d.vcenter AND e.moid = d.moid)", (iso(since),))
        return [_deep_row(row[0], row[1], row[2:]) for row in rows]


def _deep_row(vcenter: str, moid: str, row: tuple) -> dict:
    name, checked_at, verdicts, worst, report, error, vnics = row
    return {"vcenter": vcenter, "moid": moid, "name": name, "checked_at": checked_at,
            "verdicts": json.loads(verdicts), "worst_severity": worst, "report": report, "error": error,
            "vnics": json.loads(vnics)}
