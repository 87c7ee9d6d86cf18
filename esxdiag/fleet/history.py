"""Scan history in SQLite: each scan's status and per-VM class and rates, what changed since the
previous scan, and one VM's past. Default file: <user data dir>/esxdiag/history.sqlite (platformdirs).

Each scan's deep checks (the fleet report's ``deep.vms``, each with when it ended) are kept in
``deep_checks``, each a record of its own: a later scan keeps a proof while it is valid
(esxdiag.scanning.proofs), and only a scan that held it and read the VM's counters retires it
(``retired_at``). A VM row written by a scan that never saw a proof (one that started before the
check ended) neither holds nor retires it. Each VM row says when the deep check its class rests on
was made (``proven_at``): `esxdiag history` shows when it was proven.

Each scan is recorded with its status: ``complete`` (every vCenter asked for was scanned),
``partial`` (some were not: ``not_scanned`` lists them and why) or ``failed`` (none was). "Since
the previous scan" compares only with a complete scan of the same filters whose vCenters include
every vCenter scanned now, over those vCenters: never with a failed or partial one. Databases
written before scans had a status are migrated in place (``ALTER TABLE ... ADD COLUMN``); their
scans get ``failed`` when they reached no vCenter, else ``unknown`` (the old rows did not record
whether every vCenter was scanned), and are never compared against.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Iterable, NamedTuple

from esxdiag.errors import EsxdiagError
from esxdiag.fleet.model import FleetReport
from esxdiag.vocabulary import needs_attention

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scans (
    id INTEGER PRIMARY KEY, collected_at TEXT NOT NULL, scope TEXT NOT NULL, vcenters TEXT NOT NULL,
    counts TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'unknown', not_scanned TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS vm_results (
    scan_id INTEGER NOT NULL REFERENCES scans(id), vcenter TEXT NOT NULL, moid TEXT NOT NULL, name TEXT NOT NULL,
    class TEXT NOT NULL, severity TEXT, score REAL, drops_per_s REAL, drops_per_1000 REAL, ready_worst_pct REAL,
    PRIMARY KEY (scan_id, vcenter, moid));
CREATE INDEX IF NOT EXISTS vm_results_name ON vm_results(name);
CREATE TABLE IF NOT EXISTS deep_checks (
    vcenter TEXT NOT NULL, moid TEXT NOT NULL, name TEXT NOT NULL, checked_at TEXT NOT NULL,
    verdicts TEXT NOT NULL, worst_severity TEXT, report TEXT, error TEXT, vnics TEXT NOT NULL, retired_at TEXT,
    PRIMARY KEY (vcenter, moid, checked_at));
CREATE INDEX IF NOT EXISTS deep_checks_checked ON deep_checks(checked_at);
CREATE INDEX IF NOT EXISTS vm_results_vm ON vm_results(vcenter, moid, scan_id);
CREATE INDEX IF NOT EXISTS scans_collected ON scans(collected_at);
"""
# columns added since the first schema: (table, name, declaration, how existing rows are filled)
_ADDED = (("scans", "status", "TEXT NOT NULL DEFAULT 'unknown'",
           "UPDATE scans SET status = 'failed' WHERE vcenters = '[]'"),
          ("scans", "not_scanned", "TEXT NOT NULL DEFAULT '[]'", None),
          ("vm_results", "proven_at", "TEXT", None),
          # before proofs were records of their own, a check was held while the VM's latest row rested on it
          ("deep_checks", "retired_at", "TEXT",
           "UPDATE deep_checks SET retired_at = checked_at WHERE checked_at IS NOT (SELECT r.proven_at FROM "
           "vm_results r WHERE r.vcenter = deep_checks.vcenter AND r.moid = deep_checks.moid "
           "ORDER BY r.scan_id DESC LIMIT 1)"))
# serve's deep checks, before scan kept them too (the first nine columns)
_OLD_DEEP_TABLE = "serve_deep"


class HistoryError(EsxdiagError):
    pass


def default_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("esxdiag", appauthor=False)) / "history.sqlite"


def _open(path: str | Path, create: bool) -> sqlite3.Connection:
    path = Path(path)
    if not create and not path.exists():
        raise HistoryError(f"{path}: no scan history yet (esxdiag scan writes it)")
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=10)
        db.executescript(_SCHEMA)
        _migrate(db)
    except (sqlite3.Error, OSError) as exc:
        raise HistoryError(f"{path}: cannot use as scan history ({exc})") from None
    return db


def _migrate(db: sqlite3.Connection) -> None:
    """Add the columns a database written by an older esxdiag lacks, and move serve's deep checks
    into deep_checks (in one transaction)."""
    present = {table: {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
               for table in ("scans", "vm_results", "deep_checks")}
    missing = [added for added in _ADDED if added[1] not in present[added[0]]]
    old_deep = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
                          (_OLD_DEEP_TABLE,)).fetchone()[0]
    if missing or old_deep:
        with db:
            for table, name, declaration, fill in missing:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")
                if fill:
                    db.execute(fill)
            if old_deep:
                columns = ", ".join(DEEP_KEYS)
                db.execute(f"INSERT OR IGNORE INTO deep_checks ({columns}) SELECT * FROM {_OLD_DEEP_TABLE}")
                db.execute(f"DROP TABLE {_OLD_DEEP_TABLE}")


def prepare(path: str | Path) -> None:
    """Create (or migrate) the history's tables now: HistoryError when the file cannot be used."""
    _open(path, create=True).close()


def scan_status(document: dict) -> str:
    """complete | partial | failed: how many of the vCenters asked for were scanned."""
    return _status([v["status"] for v in document["vcenters"]])


def _status(statuses: list[str]) -> str:
    scanned = sum(s == "scanned" for s in statuses)
    return "complete" if scanned == len(statuses) else ("partial" if scanned else "failed")


def proven_at(row: dict) -> str | None:
    """When the deep check a fleet report row's class rests on ended (None: not confirmed by one)."""
    return (row.get("deep") or {}).get("checked_at") if row.get("confirmed") else None


class VmResult(NamedTuple):
    """A vm_results row less its scan."""

    vcenter: str
    moid: str
    name: str
    klass: str
    severity: str | None
    score: float | None
    drops_per_s: float | None
    drops_per_1000: float | None
    ready_worst_pct: float | None
    proven_at: str | None


class ScanEntry(NamedTuple):
    """What the history keeps of one scan: the same read from a fleet report's JSON (entry_of_document)
    or from the typed report (entry_of_report)."""

    collected_at: str
    scope: str  # the filters as JSON: only like scans are compared
    statuses: list[tuple[str, str]]  # (vCenter name, scanned | failed) for every vCenter asked for
    not_scanned: list[dict]
    counts: dict
    vms: list[VmResult]
    deep: list[tuple]  # deep_checks rows (DEEP_KEYS) of the deep checks that say when they ended


def entry_of_document(document: dict) -> ScanEntry:
    return ScanEntry(
        document["snapshot"]["collected_at"], json.dumps(document["snapshot"]["filters"], sort_keys=True),
        [(v["name"], v["status"]) for v in document["vcenters"]],
        [{k: m[k] for k in ("vcenter", "error_kind", "error")} for m in document["not_scanned"]], document["counts"],
        [VmResult(r["vcenter"], r["moid"], r["name"], r["class"], r["severity"], r["score"], r["drops_per_s"],
                  r["drops_per_1000"], r["ready_worst_pct"], proven_at(r)) for r in document["vms"]],
        [_deep_check(c) for c in (document.get("deep") or {}).get("vms", []) if c.get("checked_at")])


def entry_of_report(report: FleetReport) -> ScanEntry:
    """entry_of_document(report.as_dict()) without writing the whole report's JSON (serve's cycles)."""
    deep = [v.as_dict() for v in report.deep.vms] if report.deep is not None else []
    return ScanEntry(
        report.snapshot.collected_at, json.dumps(report.snapshot.filters, sort_keys=True),
        [(v.name, v.status) for v in report.vcenters],
        [{"vcenter": m.vcenter, "error_kind": m.error_kind, "error": m.error} for m in report.not_scanned],
        dict(report.counts),
        [VmResult(r.vcenter, r.moid, r.name, r.klass, r.severity, r.score, r.drops_per_s, r.drops_per_1000,
                  r.ready_worst_pct, r.deep.checked_at if r.confirmed and r.deep is not None else None)
         for r in report.rows],
        [_deep_check(c) for c in deep if c.get("checked_at")])


def _deep_check(c: dict) -> tuple:
    return (c["vcenter"], c["moid"], c["name"], c["checked_at"], json.dumps(c["verdicts"]), c["worst_severity"],
            c["report"], c["error"], json.dumps(c["vnics"]))


def changes_and_record(path: str | Path, document: dict, retired: Iterable[tuple[str, str, str]] = ()) -> dict | None:
    """What changed since the previous comparable scan (None when there is none, or nothing was
    scanned now), then append this scan with its status, and its deep checks (those that say when
    they ended); ``retired``: the (vCenter, MOID, checked_at) of the proofs this scan retired."""
    return record_entry(path, entry_of_document(document), retired)


def record_entry(path: str | Path, entry: ScanEntry, retired: Iterable[tuple[str, str, str]] = ()) -> dict | None:
    """changes_and_record for a scan read already (entry_of_document, entry_of_report)."""
    scanned = sorted(name for name, status in entry.statuses if status == "scanned")
    with closing(_open(path, create=True)) as db:
        try:
            changes = _changes(db, entry.vms, set(scanned), entry.scope) if scanned else None
            with db:
                cur = db.execute(
                    "INSERT INTO scans (collected_at, scope, vcenters, counts, status, not_scanned) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (entry.collected_at, entry.scope, json.dumps(scanned), json.dumps(entry.counts),
                     _status([status for _, status in entry.statuses]), json.dumps(entry.not_scanned)))
                db.executemany(
                    "INSERT INTO vm_results (scan_id, vcenter, moid, name, class, severity, score, drops_per_s, "
                    "drops_per_1000, ready_worst_pct, proven_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(cur.lastrowid, *r) for r in entry.vms if r.vcenter in scanned])
                db.executemany(
                    f"INSERT OR IGNORE INTO deep_checks ({', '.join(DEEP_KEYS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    entry.deep)
                db.executemany(
                    "UPDATE deep_checks SET retired_at = ? WHERE vcenter = ? AND moid = ? AND checked_at = ? "
                    "AND retired_at IS NULL", [(entry.collected_at, *key) for key in retired])
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot use as scan history ({exc})") from None
    return changes


def _previous(db: sqlite3.Connection, scanned: set[str], scope: str) -> tuple | None:
    """The latest complete scan with the same filters that scanned every vCenter scanned now."""
    rows = db.execute("SELECT id, collected_at, vcenters FROM scans WHERE scope = ? AND status = 'complete' "
                      "ORDER BY id DESC", (scope,))
    return next((row for row in rows if scanned <= set(json.loads(row[2]))), None)


def _changes(db: sqlite3.Connection, vms: list[VmResult], scanned: set[str], scope: str) -> dict | None:
    """Against the previous comparable scan (see _previous), over the vCenters scanned now."""
    row = _previous(db, scanned, scope)
    if row is None:
        return None
    scan_id, previous_at, _ = row
    before = {(vc, moid): (name, klass, severity) for vc, moid, name, klass, severity in db.execute(
        "SELECT vcenter, moid, name, class, severity FROM vm_results WHERE scan_id = ?", (scan_id,)) if vc in scanned}
    now = {(r.vcenter, r.moid): r for r in vms if r.vcenter in scanned}
    attention = functools.cache(needs_attention)  # a handful of (class, severity) pairs, thousands of VMs
    new: list[dict] = []
    recovered: list[dict] = []
    changed: list[dict] = []
    for key, r in now.items():
        _, was, was_severity = before.get(key, (None, None, None))
        # a symptomless VM of a lossy host is its host's row, not a new suspect
        now_attention = attention(r.klass, r.severity)
        had = was is not None and attention(was, was_severity)
        if now_attention and not had:
            into = new
        elif had and not now_attention:
            into = recovered
        elif was is not None and was != r.klass:
            into = changed
        else:
            continue  # the same as before: most VMs, no item built
        into.append({"vcenter": key[0], "moid": key[1], "name": r.name, "before": was, "after": r.klass})
    gone = [{"vcenter": k[0], "moid": k[1], "name": v[0], "before": v[1], "after": None}
            for k, v in before.items() if k not in now]
    return {"previous_at": previous_at, "vcenters_compared": sorted(scanned), "new": new, "recovered": recovered,
            "changed": changed, "gone": gone}


ROW_KEYS = ("collected_at", "vcenter", "moid", "name", "class", "severity", "score", "drops_per_s",
            "drops_per_1000", "ready_worst_pct", "proven_at")
ROWS_SQL = ("SELECT s.collected_at, r.vcenter, r.moid, r.name, r.class, r.severity, r.score, r.drops_per_s, "
            "r.drops_per_1000, r.ready_worst_pct, r.proven_at FROM vm_results r JOIN scans s ON s.id = r.scan_id ")


def vm_history(path: str | Path, vm: str, limit: int = 50) -> list[dict]:
    """A VM's past results by name or MOID, newest first."""
    return _rows(path, "WHERE r.name = ? OR r.moid = ? ORDER BY s.id DESC LIMIT ?", (vm, vm, limit))


def fleet_history(path: str | Path, scans: int = 50) -> list[dict]:
    """Every VM's results in the latest ``scans`` scans: newest scan first, then by VM name."""
    return _rows(path, "WHERE s.id IN (SELECT id FROM scans ORDER BY id DESC LIMIT ?) "
                       "ORDER BY s.id DESC, r.name, r.vcenter, r.moid", (scans,))


def _rows(path: str | Path, where: str, params: tuple) -> list[dict]:
    with closing(_open(path, create=False)) as db:
        try:
            rows = db.execute(ROWS_SQL + where, params).fetchall()
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot read scan history ({exc})") from None
    return [dict(zip(ROW_KEYS, row)) for row in rows]


DEEP_KEYS = ("vcenter", "moid", "name", "checked_at", "verdicts", "worst_severity", "report", "error", "vnics")
DEEP_SQL = ("SELECT d.vcenter, d.moid, d.name, d.checked_at, d.verdicts, d.worst_severity, d.report, d.error, "
            "d.vnics FROM deep_checks d ")
DEEP_SINCE = ("WHERE d.checked_at >= ? AND d.checked_at = (SELECT max(checked_at) FROM deep_checks e "
              "WHERE e.vcenter = d.vcenter AND e.moid = d.moid)")


def deep_row(row: tuple) -> dict:
    """A deep_checks row (DEEP_SQL's columns) as the fleet report's ``deep.vms`` entry it was."""
    out = dict(zip(DEEP_KEYS, row))
    out.update(verdicts=json.loads(out["verdicts"]), vnics=json.loads(out["vnics"]))
    return out


# a proof no scan that held it has retired
HELD = " AND d.retired_at IS NULL"


def held_proofs_since(path: str | Path, since: str) -> list[dict]:
    """Each VM's newest deep check that ended at or after ``since`` (ISO UTC), when no scan that
    held it has retired it; none without a history."""
    if not Path(path).exists():
        return []
    with closing(_open(path, create=False)) as db:
        try:
            rows = db.execute(DEEP_SQL + DEEP_SINCE + HELD, (since,)).fetchall()
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot read scan history ({exc})") from None
    return [deep_row(row) for row in rows]
