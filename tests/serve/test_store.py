"""serve's history: every cycle recorded as `scan` records a scan, WAL (read while a cycle
writes), retention (old scans, their rows, deep checks and bundles go), deep checks kept."""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import datetime, timedelta, timezone

from esxdiag.cli import main
from esxdiag.serve.cycle import prune_deep_dirs
from esxdiag.serve.store import Store

from .conftest import record_deep

NOW = datetime(2026, 11, 23, 3, 0, tzinfo=timezone.utc)


def at(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_cycles_are_recorded_in_wal_mode_and_esxdiag_history_reads_them(tmp_path, fleet_document, make_vm, capsys):
    store = Store(tmp_path / "h.sqlite", retention_days=7)
    first = fleet_document("vc1:443", [make_vm("web01", "vm-1", drops=100)], collected_at=at(10))
    assert store.record(first) is None  # nothing to compare with yet
    second = fleet_document("vc1:443", [make_vm("web01", "vm-1")], collected_at=at(5))
    changes = store.record(second)
    assert [c["name"] for c in changes["recovered"]] == ["web01"]
    with sqlite3.connect(tmp_path / "h.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"vm_results_vm", "scans_collected", "deep_checks_checked"} <= indexes
    past = store.vm_past("vc1:443", "vm-1", limit=10)
    assert [(p["collected_at"], p["class"]) for p in past] == [(at(5), "healthy"), (at(10), "ring-suspect")]
    assert main(["history", "web01", "--history", str(tmp_path / "h.sqlite")]) == 0
    assert capsys.readouterr().out.count("web01") == 2


def test_pages_read_while_a_cycle_holds_its_write_transaction(tmp_path, fleet_document, make_vm):
    store = Store(tmp_path / "h.sqlite", retention_days=7)
    store.record(fleet_document("vc1:443", [make_vm("web01", "vm-1")], collected_at=at(10)))
    writer = sqlite3.connect(tmp_path / "h.sqlite", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO scans (collected_at, scope, vcenters, counts) VALUES ('x', '{}', '[]', '{}')")
    result = {}

    def read():
        started = time.monotonic()
        result["rows"] = store.vm_past("vc1:443", "vm-1", 10)
        result["seconds"] = time.monotonic() - started

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(5)
    writer.execute("ROLLBACK")
    writer.close()
    assert len(result["rows"]) == 1 and result["seconds"] < 1  # not blocked by the writer (WAL)


def test_retention_deletes_old_scans_their_rows_and_deep_checks(tmp_path, fleet_document, make_vm):
    store = Store(tmp_path / "h.sqlite", retention_days=1)
    for minutes in (3 * 1440, 2 * 1440, 60, 5):
        store.record(fleet_document("vc1:443", [make_vm("web01", "vm-1"), make_vm("db01", "vm-2")],
                                    collected_at=at(minutes)))
    check = {"moid": "vm-1", "name": "web01", "verdicts": ["raise-ring1"], "worst_severity": "critical",
             "report": "deep/x/report.html", "error": None, "vnics": [{"label": "Network adapter 1"}]}
    record_deep(store, "vc1:443", [check], at(2 * 1440))
    record_deep(store, "vc1:443", [check], at(5))
    assert store.prune(NOW) == 2
    with sqlite3.connect(tmp_path / "h.sqlite") as db:
        assert db.execute("SELECT count(*) FROM scans").fetchone()[0] == 2
        assert db.execute("SELECT count(*) FROM vm_results").fetchone()[0] == 4
        assert db.execute("SELECT count(*) FROM deep_checks").fetchone()[0] == 1
    last = store.last_deep("vc1:443", "vm-1")
    assert last["checked_at"] == at(5) and last["verdicts"] == ["raise-ring1"] and last["vnics"][0]["label"]
    assert [d["moid"] for d in store.deep_since(NOW - timedelta(hours=1))] == ["vm-1"]
    assert store.prune(NOW) == 0


def test_a_new_history_reads_empty_before_the_first_cycle(tmp_path):
    store = Store(tmp_path / "new" / "h.sqlite", retention_days=7)
    assert store.vm_past("vc1:443", "vm-1", 10) == [] and store.last_deep("vc1:443", "vm-1") is None


def test_old_deep_folders_are_removed_with_their_bundles(tmp_path):
    root = tmp_path / "deep"
    for name in ("20261120T000000Z", "20261123T025500Z", "20261123T025500Z-2", "notes"):
        (root / "vc1_443" / name / "esx1").mkdir(parents=True)
    assert prune_deep_dirs(root, (NOW - timedelta(days=1)).timestamp()) == 1
    assert sorted(p.name for p in (root / "vc1_443").iterdir()) == ["20261123T025500Z", "20261123T025500Z-2", "notes"]


def test_serve_deep_checks_of_an_older_history_move_to_deep_checks(tmp_path):
    """Before scan kept proofs, serve kept its deep checks in a table of its own (serve_deep)."""
    path = tmp_path / "h.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE serve_deep (vcenter TEXT NOT NULL, moid TEXT NOT NULL, name TEXT NOT NULL, "
                   "checked_at TEXT NOT NULL, verdicts TEXT NOT NULL, worst_severity TEXT, report TEXT, error TEXT, "
                   "vnics TEXT NOT NULL, PRIMARY KEY (vcenter, moid, checked_at))")
        db.execute("INSERT INTO serve_deep VALUES ('vc1:443', 'vm-1', 'web01', ?, '[\"raise-ring1\"]', 'critical', "
                   "NULL, NULL, '[]')", (at(5),))
    store = Store(path, retention_days=7)
    assert store.last_deep("vc1:443", "vm-1")["verdicts"] == ["raise-ring1"]
    with sqlite3.connect(path) as db:
        assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'serve_deep'").fetchall()
