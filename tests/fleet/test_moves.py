"""vMotion inside the window (issue 22, point b), on synthetic snapshots: the VM's counters come
from two ports, so the report says it moved (when, from where, to where) and the deep check is not
spent on it; vCenter's event shapes (a real vCenter's, vcsim's, a move still in progress, a
storage-only relocation) and snapshots written before migrations were read."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from pathlib import Path

from esxdiag.scanning.deep import choose
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report, deep_candidates
from esxdiag.fleet.snapshot import load_snapshot, snapshot_from_dict, write_snapshot
from esxdiag.reports.fleet_csv import render_fleet_csv
from esxdiag.reports.fleet_html import render_fleet_html
from esxdiag.reports.fleet_text import render_fleet_text

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
AT = "2026-11-23T02:42:10Z"
MARK = "during the window: drops not compared across hosts"


def with_events(vm: dict, *events: dict) -> dict:
    return {**vm, "migrations": list(events)}


def report(*vms: dict) -> dict:
    return fs.ReportJson(build_report(snapshot_from_dict(fs.snapshot(list(vms))), load_thresholds()))


def row(document: dict, name: str) -> dict:
    return next(r for r in document["vms"] if r["name"] == name)


def test_a_moved_ring_suspect_is_marked_and_not_a_deep_check_candidate():
    document = report(with_events(fs.vm("moved", drops=100, host="esx1"), fs.migration(AT, "esx0", "esx1")),
                      with_events(fs.vm("stayed", drops=100, host="esx1")))
    moved = row(document, "moved")
    assert moved["class"] == "ring-suspect"  # the counters' class stands: per-sample deltas, summed
    assert f"moved from esx0 to esx1 at 02:42:10 UTC {MARK} (not deep-checked in this scan" in moved["reason"]
    assert moved["moves"] == [{"time": AT, "from": "esx0", "to": "esx1", "event": "VmMigratedEvent",
                               "completed": True}]
    assert row(document, "stayed")["moves"] == [] and MARK not in row(document, "stayed")["reason"]
    assert [r.name for r in deep_candidates(document.report, 10)] == ["stayed"]
    assert [r.name for r in choose(document.report, 10, ["moved"])] == ["stayed", "moved"]  # --deep-vm still may
    table = {r["name"]: r for r in csv.DictReader(io.StringIO(render_fleet_csv(document)))}
    assert (table["moved"]["moved"], table["stayed"]["moved"]) == (f"esx0>esx1@{AT}", "")


def test_vcsims_event_names_the_old_host_twice_and_the_inventory_gives_the_destination():
    """`govc vm.migrate` against vcsim: one VmMigratedEvent posted before the move, host = sourceHost."""
    moved = row(report(with_events(fs.vm("m", host="esx1"), fs.migration(AT, "esx0", "esx0"))), "m")
    assert [(m["from"], m["to"]) for m in moved["moves"]] == [("esx0", "esx1")]
    there_and_back = with_events(fs.vm("b", host="esx0"), fs.migration("2026-11-23T02:41:00Z", "esx0", "esx0"),
                                 fs.migration(AT, "esx1", "esx1"))
    assert [(m["from"], m["to"]) for m in row(report(there_and_back), "b")["moves"]] == [("esx0", "esx1"),
                                                                                        ("esx1", "esx0")]
    assert "moved from esx0 to esx1 at 02:41:00 UTC, then from esx1 to esx0 at 02:42:10 UTC" in \
        row(report(there_and_back), "b")["reason"]


def test_a_storage_only_relocation_is_no_move():
    same = with_events(fs.vm("s", drops=100, host="esx1"), fs.migration(AT, "esx1", "esx1", "VmRelocatedEvent"))
    document = report(same)
    assert row(document, "s")["moves"] == [] and MARK not in row(document, "s")["reason"]
    assert [r.name for r in deep_candidates(document.report, 10)] == ["s"]


def test_a_move_begun_and_not_completed_in_the_window_is_a_move():
    begun = with_events(fs.vm("g", drops=100, host="esx0"),
                        fs.migration(AT, "esx0", "esx1", "VmBeingHotMigratedEvent"),
                        fs.migration(AT, "esx0", None, "VmEmigratingEvent"))
    document = report(begun)
    g = row(document, "g")
    assert [(m["from"], m["to"], m["completed"]) for m in g["moves"]] == [("esx0", "esx1", False)]
    assert "began moving from esx0 to esx1 at 02:42:10 UTC (not completed in the window)" in g["reason"]
    assert deep_candidates(document.report, 10) == []


def test_the_start_events_of_a_completed_move_are_not_another_move():
    done = with_events(fs.vm("d", host="esx1"), fs.migration("2026-11-23T02:41:58Z", "esx0", "esx1",
                                                             "VmBeingHotMigratedEvent"),
                       fs.migration("2026-11-23T02:41:58Z", "esx0", None, "VmEmigratingEvent"),
                       fs.migration(AT, "esx0", "esx1", "DrsVmMigratedEvent"))
    assert [(m["from"], m["to"], m["event"]) for m in row(report(done), "d")["moves"]] == [
        ("esx0", "esx1", "DrsVmMigratedEvent")]


def test_a_snapshot_from_before_migrations_were_read_is_read_as_not_known(tmp_path):
    """No "migrations" on the VMs, no migration_events on the vCenter: re-analysable, nothing said."""
    vm = fs.vm("old", drops=100)
    assert "migrations" not in vm
    path = write_snapshot(fs.snapshot([vm]), tmp_path / "old.json")
    snapshot = load_snapshot(path)
    assert snapshot.vms[0].migrations is None and snapshot.vcenters[0].migration_events is None
    document = fs.ReportJson(build_report(snapshot, load_thresholds()))
    old = row(document, "old")
    assert old["moves"] is None and MARK not in old["reason"] and not any("migration" in n for n in old["notes"])
    assert [r.name for r in deep_candidates(document.report, 10)] == ["old"]


def test_migrations_round_trip_and_damaged_ones_cost_the_field_only(tmp_path):
    vm = with_events(fs.vm("m", host="esx1"), fs.migration(AT, "esx0", "esx1"))
    back = load_snapshot(write_snapshot(fs.snapshot([vm]), tmp_path / "s.json")).vms[0]
    assert [(e.type, e.time, e.source_host, e.host) for e in back.migrations] == [("VmMigratedEvent", AT, "esx0",
                                                                                    "esx1")]
    damaged = json.loads(json.dumps(fs.snapshot([{**vm, "migrations": "yesterday"}])))
    r = row(build_report(snapshot_from_dict(damaged), load_thresholds()).as_dict(), "m")
    assert r["class"] == "healthy" and r["moves"] is None
    assert any("migrations" in n and "unknown" in n for n in r["notes"])


def test_a_vcenter_whose_events_could_not_be_read_says_so():
    data = fs.snapshot([fs.vm("m", drops=100)])
    data["vms"][0]["migrations"] = None
    data["vcenters"][0].update(migration_events=None, migration_events_error="vc1:443: reading migration events: "
                               "NoPermission: System.View", migration_events_truncated=False)
    document = fs.ReportJson(build_report(snapshot_from_dict(data), load_thresholds()))
    said = "vc1:443: migration events not read (vc1:443: reading migration events: NoPermission: System.View)"
    assert any(n.startswith(said) for n in document["snapshot"]["notes"])
    assert said in render_fleet_text(document) and said in render_fleet_html(document)
    assert row(document, "m")["moves"] is None
    cut = fs.snapshot([fs.vm("m")])
    cut["vcenters"][0].update(migration_events=1000, migration_events_truncated=True)
    notes = build_report(snapshot_from_dict(cut), load_thresholds()).as_dict()["snapshot"]["notes"]
    assert notes == ["vc1:443: 1000 migration events, the most one query returns: older moves in the window may "
                     "be missing"]
