"""`esxdiag serve`'s options are checked before anything starts (exit 2 naming the option), deep
checks from before a restart are shown again, and the malloc arena cap leaves an explicit
MALLOC_ARENA_MAX alone."""

from __future__ import annotations

import functools
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from esxdiag.cli import main
from esxdiag.serve.daemon import _restore_deep, limit_malloc_arenas
from esxdiag.serve.store import Store

from .conftest import record_deep


@pytest.mark.parametrize("extra, said", [
    (["--deep", "2"], "serve deep-checks only hosts with an SSH login configured"),
    (["--deep-dir", "x"], "--deep-dir: serve keeps its deep-check bundles under --data-dir/deep"),
    (["--interval", "0.5"], "--interval must be between 1 and 86400"),
    (["--jitter", "200"], "--jitter must be at least 0 and less than half of --interval"),
    (["--retention-days", "0"], "--retention-days must be between"),
    (["--window", "5"], "--window must be between 20 and 3600"),
    (["--listen", "127.0.0.1"], "expected HOST:PORT"),
    (["--web-max-connections", "0"], "--web-max-connections must be between 1 and 10000"),
    (["--web-idle-timeout", "0"], "--web-idle-timeout must be between 0.5 and 3600"),
])
def test_bad_options_exit_2_before_any_start(tmp_path, capsys, monkeypatch, extra, said):
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    argv = ["serve", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--history", str(tmp_path / "h.sqlite")]
    assert main(argv + extra) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "h.sqlite").exists()  # nothing started, nothing written


def test_deep_checks_from_before_a_restart_are_restored_while_young(tmp_path):
    store = Store(tmp_path / "h.sqlite", retention_days=7)
    now = datetime.now(timezone.utc)
    check = {"moid": "vm-1", "name": "web01", "verdicts": ["raise-ring1"], "worst_severity": "critical",
             "report": None, "error": None, "vnics": [{"label": "Network adapter 1", "verdict": "raise-ring1"}]}
    for vcenter, age in (("vc1:443", 600), ("vc2:443", 9000), ("gone:443", 60)):
        record_deep(store, vcenter, [check], (now - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ"), held=True)
    retired = (now - timedelta(seconds=300)).strftime("%Y-%m-%dT%H:%M:%SZ")
    record_deep(store, "vc3:443", [check], retired, held=False)  # its drops stopped before the restart
    restored = _restore_deep(store, ["vc1:443", "vc2:443", "vc3:443"], max_age_s=7200)
    assert list(restored["vc1:443"]) == ["vm-1"] and restored["vc2:443"] == {} and restored["vc3:443"] == {}
    assert restored["vc1:443"]["vm-1"].vnics[0]["verdict"] == "raise-ring1"


def test_an_explicit_malloc_arena_max_is_left_alone(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False


def test_a_history_on_a_full_disk_at_start_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    class FullDisk(sqlite3.Connection):
        def execute(self, sql, *params):
            if "journal_mode" in sql:
                raise sqlite3.OperationalError("database or disk is full")
            return super().execute(sql, *params)

    monkeypatch.setattr("esxdiag.serve.store.sqlite3.connect", functools.partial(sqlite3.connect, factory=FullDisk))
    monkeypatch.setenv("ESXDIAG_PASSWORD", "x")
    history = tmp_path / "h.sqlite"
    assert main(["serve", "--vcenter", "https://127.0.0.1:9/sdk", "--user", "u", "--history", str(history),
                 "--listen", "127.0.0.1:0"]) == 2
    err = capsys.readouterr().err
    assert err == f"esxdiag: {history}: cannot use as scan history (database or disk is full)\n"
