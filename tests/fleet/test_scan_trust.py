"""Every headline true (issue 15, points 3 and 4), offline: a scan that did not see the fleet says so
first and is never "healthy"; a filter matching no VM is an error; each scan's files go into its own
new folder (a failed scan never replaces a report); history records failed scans as failed and
compares only with the last complete scan of the same vCenters; --quiet is one line or none."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from esxdiag.cli import main
from esxdiag.fleet.history import changes_and_record, vm_history
from esxdiag.fleet.snapshot import write_snapshot
from esxdiag.reports.fleet_html import render_fleet_html
from esxdiag.reports.fleet_text import render_fleet_text

_SPEC = importlib.util.spec_from_file_location("esxdiag_fleet_offline_helpers",
                                               Path(__file__).with_name("test_offline.py"))
_OFFLINE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_OFFLINE)
FLEET, document, snapshot, vm = _OFFLINE.FLEET, _OFFLINE.document, _OFFLINE.snapshot, _OFFLINE.vm  # hand-made fleet
CALM = "No VM needs attention"


def failed_document(vms=(), error="vc1:443: TLS certificate not trusted (self-signed certificate)") -> dict:
    doc = document(list(vms), failed=True)
    doc["vcenters"][0].update(status="failed", error=error, error_kind="tls")
    doc["not_scanned"].insert(0, {"vcenter": "vc1:443", "url": "https://vc1/sdk", "error": error,
                                  "error_kind": "tls"})
    return doc


def test_a_scan_with_a_vcenter_not_scanned_says_so_first_and_never_calls_the_fleet_healthy():
    calm = [vm("calm", "vm-9")]
    partial = document(calm, failed=True)
    text = render_fleet_text(partial)
    assert text.splitlines()[0] == "1 of 2 vCenters not scanned: vc2:443: unreachable (Connection refused)"
    assert CALM not in text and "None of the 1 VMs scanned needs attention" in text
    html = render_fleet_html(partial)
    body = html[html.index("<body>") + len("<body>"):].lstrip()
    assert body.startswith('<p class="failed" id="headline"><strong>1 of 2 vCenters not scanned: vc2:443')
    assert CALM not in html

    nothing = failed_document()
    text = render_fleet_text(nothing)
    assert text.splitlines()[0].startswith("2 of 2 vCenters not scanned: vc1:443: TLS certificate not trusted")
    assert CALM not in text and "0 VMs scanned" in text and CALM not in render_fleet_html(nothing)

    empty = document([])
    assert render_fleet_text(empty).splitlines()[0] == "0 VMs scanned in 1 vCenter: nothing was assessed"
    assert CALM not in render_fleet_text(empty) + render_fleet_html(empty)
    assert CALM in render_fleet_text(document(calm))  # the whole fleet scanned, nothing wrong: said as before


def test_hostile_vcenter_errors_are_escaped_in_the_headline():
    doc = failed_document(error='vc1:443: <script>alert(1)</script>\x1b[31m')
    page = render_fleet_html(doc)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "\x1b" not in render_fleet_text(doc)


@pytest.mark.parametrize("filters, message", [
    ({"names": ["nomatch*"]}, "--vm 'nomatch*': matched no VM in the scanned vCenter(s)"),
    ({"names": ["ring*", "zz*"]}, "--vm 'zz*': matched no VM in the scanned vCenter(s)"),
    ({"names": ["nomatch*"], "clusters": ["C1"]}, "--vm 'nomatch*': matched no VM with --cluster C1"),
])
def test_a_vm_filter_that_matches_no_vm_is_bad_input_naming_it(tmp_path, capsys, filters, message):
    data = snapshot(copy.deepcopy([v for v in FLEET if v["name"].startswith(("ring", "limited"))]))
    data["filters"] = filters
    data["vms"] = [v for v in data["vms"] if any(v["name"].startswith(g.rstrip("*")) for g in filters["names"])]
    path = write_snapshot(data, tmp_path / "s.json")
    assert main(["scan", "--snapshot", str(path), "--format", "text"]) == 2
    assert message in capsys.readouterr().err
    data["vms"], data["filters"] = [], {"clusters": ["C1"], "hosts": ["esx9"]}  # each names something, not both
    path = write_snapshot(data, tmp_path / "s.json")
    assert main(["scan", "--snapshot", str(path), "--format", "text"]) == 2
    assert "--cluster C1 --host esx9: matched no VM together" in capsys.readouterr().err


def _scan_offline(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(cwd), "XDG_DATA_HOME": str(cwd / "data")}
    return subprocess.run([sys.executable, "-m", "esxdiag", "scan", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_each_scan_writes_into_its_own_new_folder_even_when_started_together(tmp_path):
    """Two scans started at once never share a folder, and a failed scan never replaces a report."""
    good = write_snapshot(snapshot(copy.deepcopy(FLEET)), tmp_path / "good.json")
    bad = write_snapshot(snapshot([], failed=True), tmp_path / "bad.json")
    env = {**os.environ, "HOME": str(tmp_path)}
    runs = [subprocess.Popen([sys.executable, "-m", "esxdiag", "scan", "--snapshot", str(path)], cwd=tmp_path,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for path in (good, good, bad, bad)]
    done = [(p.wait(timeout=120), *p.communicate()) for p in runs]
    assert [code for code, _, _ in done] == [0, 0, 3, 3], done
    reports = [Path(out.strip().splitlines()[-1].removeprefix("report: ")) for _, out, _ in done]
    assert len({r.parent for r in reports}) == 4 and all(r.name == "fleet-report.html" for r in reports)
    assert all(r.parent.parent == tmp_path and r.parent.name.startswith("esxdiag-scan-") for r in reports)
    assert "Not scanned: vc2:443" not in reports[0].read_text() and "Not scanned: vc2:443" in reports[2].read_text()
    assert not (tmp_path / "fleet-report.html").exists()  # offline re-analysis writes no snapshot either
    assert sorted(p.name for p in reports[0].parent.iterdir()) == ["fleet-report.html"]


def test_quiet_is_one_line_or_none(tmp_path):
    good = write_snapshot(snapshot(copy.deepcopy(FLEET)), tmp_path / "good.json")
    bad = write_snapshot(snapshot([vm("calm", "vm-9")], failed=True), tmp_path / "bad.json")
    quiet = _scan_offline(tmp_path, "--snapshot", str(good), "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout.startswith("report: ") and quiet.stdout.count("\n") == 1
    failed = _scan_offline(tmp_path, "--snapshot", str(bad), "--quiet", "--format", "csv", "-o", "f.csv")
    assert failed.returncode == 3 and failed.stdout == "" and failed.stderr.count("\n") == 1
    assert failed.stderr.startswith("esxdiag: 1 of 2 vCenters not scanned: vc2:443: unreachable")
    assert f"(report: {tmp_path / 'f.csv'})" in failed.stderr
    named = _scan_offline(tmp_path, "--snapshot", str(good), "--quiet", "--format", "csv", "-o", "g.csv")
    assert named.returncode == 0 and named.stdout == f"report: {tmp_path / 'g.csv'}\n" and named.stderr == ""
    none = _scan_offline(tmp_path, "--snapshot", str(good), "--quiet", "--format", "csv")  # the CSV is the output
    assert none.returncode == 0 and none.stdout.startswith("rank,") and none.stderr == ""


def _at(doc: dict, when: str) -> dict:
    doc["snapshot"]["collected_at"] = when
    return doc


def test_history_records_failed_scans_and_compares_with_the_last_complete_one(tmp_path):
    db = tmp_path / "h.sqlite"
    assert changes_and_record(db, _at(document(), "2026-11-23T01:00:00Z")) is None
    assert changes_and_record(db, _at(failed_document(), "2026-11-23T02:00:00Z")) is None  # nothing scanned
    healed = copy.deepcopy(FLEET)
    healed[0] = vm("ring1", "vm-1")
    partial = changes_and_record(db, _at(document(healed, failed=True), "2026-11-23T03:00:00Z"))
    assert partial["previous_at"] == "2026-11-23T01:00:00Z" and partial["vcenters_compared"] == ["vc1:443"]
    assert [c["name"] for c in partial["recovered"]] == ["ring1"]
    again = changes_and_record(db, _at(document(healed), "2026-11-23T04:00:00Z"))
    assert again["previous_at"] == "2026-11-23T01:00:00Z"  # never the failed or the partial scan
    statuses = sqlite3.connect(db).execute("SELECT status, not_scanned FROM scans ORDER BY id").fetchall()
    assert [s for s, _ in statuses] == ["complete", "failed", "partial", "complete"]
    assert [m["vcenter"] for m in json.loads(statuses[1][1])] == ["vc1:443", "vc2:443"]
    assert json.loads(statuses[2][1])[0]["error_kind"] == "unreachable"
    assert [r["class"] for r in vm_history(db, "ring1")] == ["healthy", "healthy", "ring-suspect"]


OLD_SCHEMA = """
CREATE TABLE scans (id INTEGER PRIMARY KEY, collected_at TEXT NOT NULL, scope TEXT NOT NULL, vcenters TEXT NOT NULL,
    counts TEXT NOT NULL);
CREATE TABLE vm_results (scan_id INTEGER NOT NULL REFERENCES scans(id), vcenter TEXT NOT NULL, moid TEXT NOT NULL,
    name TEXT NOT NULL, class TEXT NOT NULL, severity TEXT, score REAL, drops_per_s REAL, drops_per_1000 REAL,
    ready_worst_pct REAL, PRIMARY KEY (scan_id, vcenter, moid));
CREATE INDEX vm_results_name ON vm_results(name);
INSERT INTO scans VALUES (1, '2026-11-20T00:00:00Z', '{}', '["vc1:443"]', '{}');
INSERT INTO scans VALUES (2, '2026-11-21T00:00:00Z', '{}', '[]', '{}');
INSERT INTO vm_results VALUES (1, 'vc1:443', 'vm-1', 'ring1', 'healthy', NULL, 0, 0, 0, 1);
"""


def test_a_history_in_the_old_schema_is_migrated_and_its_scans_never_compared(tmp_path, capsys):
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as old:
        old.executescript(OLD_SCHEMA)
    assert changes_and_record(db, _at(document(), "2026-11-23T01:00:00Z")) is None  # old rows: status unknown
    rows = sqlite3.connect(db).execute("SELECT id, status, not_scanned FROM scans ORDER BY id").fetchall()
    assert rows == [(1, "unknown", "[]"), (2, "failed", "[]"), (3, "complete", "[]")]
    assert changes_and_record(db, _at(document(), "2026-11-23T02:00:00Z"))["previous_at"] == "2026-11-23T01:00:00Z"
    assert main(["history", "ring1", "--history", str(db)]) == 0
    assert capsys.readouterr().out.count("ring1 vm-1 (vc1:443)") == 3  # the old scan's row too


def test_where_a_scan_puts_its_files(tmp_path, monkeypatch):
    """Own folder for whatever has no other place; -o: the snapshot and deep bundles beside the report."""
    from types import SimpleNamespace

    from esxdiag.cli import scan as cli_scan

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli_scan, "stamp", lambda: "20261123T024555Z")

    def args(**kw):
        return SimpleNamespace(**{"output": None, "format": "html", "save_snapshot": None, "deep_dir": None, **kw})

    folder = cli_scan._folder(args(), live=True, deep=True)
    assert folder == Path("esxdiag-scan-20261123T024555Z") and folder.is_dir()
    assert cli_scan._snapshot_path(args(), folder) == folder / "snapshot.json"
    assert cli_scan._deep_dir(args(), folder, folder) == folder / "deep"
    assert cli_scan._folder(args(), live=False, deep=False) == Path("esxdiag-scan-20261123T024555Z-2")
    assert cli_scan._folder(args(format="json"), live=False, deep=False) is None  # stdout, nothing to keep
    assert cli_scan._folder(args(format="json", save_snapshot=Path("s.json")), live=True, deep=False) is None
    assert cli_scan._folder(args(format="json"), live=True, deep=False).name.endswith("-3")  # the snapshot's home
    named = args(output=str(tmp_path / "out" / "fleet.csv"), format="csv")
    assert cli_scan._folder(named, live=True, deep=True) is None
    first, second = cli_scan._snapshot_path(named, None), cli_scan._snapshot_path(named, None)
    assert (first.name, second.name) == ("esxdiag-scan-20261123T024555Z.json", "esxdiag-scan-20261123T024555Z-2.json")
    assert first.parent == tmp_path / "out"
    deep = lambda: cli_scan._deep_dir(named, None, tmp_path / "out")  # noqa: E731 (each call makes a new one)
    assert deep() == tmp_path / "out" / "esxdiag-deep-20261123T024555Z" and deep().name.endswith("-2")
    assert cli_scan._deep_dir(args(deep_dir=Path("d")), folder, folder) == Path("d")
