"""serve records each cycle from the typed report (esxdiag.fleet.history.entry_of_report), not from
its JSON: the history must hold exactly what `esxdiag scan` writes for the same report's JSON
(changes_and_record), and say the same changes."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing

from esxdiag.fleet.history import changes_and_record, entry_of_document, entry_of_report
from esxdiag.fleet.model import DeepEvidence, DeepSection, DeepVm
from esxdiag.serve.state import DeepCheck
from esxdiag.serve.store import Store

from .conftest import VNIC

CHECK = DeepCheck("vc1:443", "vm-1", "ring01", "2026-11-23T02:46:00Z", 1795000000.0, ("raise-ring1",), "critical",
                  "deep/vc1_443/20261123T024500Z/esx1/report.html", None, (VNIC,))


def reports(fleet_document, make_vm) -> list:
    """Cycles of one vCenter: a deep check folded in, VMs that change class, come and go, a failed cycle,
    filters, a deep section with a check that ended and one that did not."""
    first = fleet_document("vc1:443", [make_vm("ring01", "vm-1", drops=300), make_vm("web01", "vm-2"),
                                       make_vm("busy01", "vm-3", ready_ms=4000)],
                           collected_at="2026-11-23T02:45:00Z", deep={"vm-1": CHECK})
    section = DeepSection(vms=(
        DeepVm("vc1:443", "ring01", "vm-1", "esx1", DeepEvidence(
            verdicts=("raise-ring1",), vnics=(VNIC,), worst_severity="critical", report="r.html", bundle="b.tgz",
            error=None, checked_at="2026-11-23T02:46:00Z")),
        DeepVm("vc1:443", "web01", "vm-2", "esx1", DeepEvidence(
            verdicts=(), vnics=(), worst_severity=None, report=None, bundle=None, error="ssh refused",
            checked_at=None))))
    first = dataclasses.replace(first, deep=section)
    second = fleet_document("vc1:443", [make_vm("ring01", "vm-1"), make_vm("web01", "vm-2", drops=500),
                                        make_vm("new01", "vm-4")], collected_at="2026-11-23T02:50:00Z")
    failed = fleet_document("vc1:443", [], failed=True, collected_at="2026-11-23T02:55:00Z")
    third = fleet_document("vc1:443", [make_vm("web01", "vm-2", ready_ms=6000)], collected_at="2026-11-23T03:00:00Z")
    filtered = dataclasses.replace(third, snapshot=dataclasses.replace(third.snapshot,
                                                                       filters={"clusters": ["C1"], "hosts": []}))
    return [first, second, failed, third, filtered, third]


def dump(path) -> dict:
    with closing(sqlite3.connect(path)) as db:
        return {table: db.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid").fetchall()
                for table in ("scans", "vm_results", "deep_checks")}


def test_the_typed_report_gives_the_entry_its_json_gives(fleet_document, make_vm):
    for report in reports(fleet_document, make_vm):
        assert entry_of_report(report) == entry_of_document(report.as_dict())


def test_a_cycle_recorded_from_the_typed_report_writes_what_scan_writes_from_the_json(tmp_path, fleet_document,
                                                                                      make_vm):
    store = Store(tmp_path / "typed.sqlite", retention_days=7)
    Store(tmp_path / "json.sqlite", retention_days=7)  # the same WAL file as serve's
    retired = [frozenset(), frozenset({("vc1:443", "vm-1", "2026-11-23T02:46:00Z")}), frozenset(), frozenset(),
               frozenset(), frozenset()]
    said = []
    for report, gone in zip(reports(fleet_document, make_vm), retired):
        typed = store.record(report, gone)
        assert typed == changes_and_record(tmp_path / "json.sqlite", report.as_dict(), gone)
        said.append(typed)
    assert dump(tmp_path / "typed.sqlite") == dump(tmp_path / "json.sqlite")
    assert said[1]["recovered"] and said[1]["gone"] and said[3] is not None  # the cycles do change
    written = dump(tmp_path / "typed.sqlite")
    assert written["deep_checks"][0][-1] == "2026-11-23T02:50:00Z"  # retired
    assert written["vm_results"][0][-1] == "2026-11-23T02:46:00Z"  # proven by the deep check folded in
    assert [row[6] for row in written["scans"]] == ["complete", "complete", "failed", "complete", "complete",
                                                   "complete"]
