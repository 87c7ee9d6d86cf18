"""A scan's analysis runs with Python's cyclic garbage collector paused (esxdiag.scanning.run: its
collections walk the whole heap of records the scan built, again and again), and the collector is
back as it was afterwards, also when the analysis fails."""

from __future__ import annotations

import gc
import importlib.util
import weakref
from pathlib import Path

import pytest

from esxdiag.config import load_thresholds
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.scanning import run

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


@pytest.fixture
def saved(tmp_path):
    return snapshot_from_dict(fs.snapshot([fs.vm("ring", drops=100), fs.vm("calm")])), tmp_path / "s.json"


def test_the_analysis_runs_with_the_collector_paused_and_gets_it_back(saved, monkeypatch):
    seen = []
    real = run.build_report
    monkeypatch.setattr(run, "build_report", lambda *a, **kw: seen.append(gc.isenabled()) or real(*a, **kw))
    assert gc.isenabled()
    scanned = run.run_scan([], None, load_thresholds(), lambda data: Path("unused"), saved=saved)
    assert seen == [False] and gc.isenabled()
    assert [r["name"] for r in scanned.report.as_dict()["vms"]] == ["ring", "calm"]


def test_the_collector_comes_back_when_the_analysis_fails(saved, monkeypatch):
    def refused(snapshot, path):
        raise ValueError("refused")
    with pytest.raises(ValueError, match="refused"):
        run.run_scan([], None, load_thresholds(), lambda data: Path("unused"), saved=saved, on_snapshot=refused)
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off(saved):
    gc.disable()
    try:
        run.run_scan([], None, load_thresholds(), lambda data: Path("unused"), saved=saved)
        assert not gc.isenabled()
    finally:
        gc.enable()



def test_the_records_a_scan_built_skip_the_young_collections(saved):
    gc.collect()
    run.run_scan([], None, load_thresholds(), lambda data: Path("unused"), saved=saved)
    frozen = gc.get_freeze_count()
    assert frozen > 0 and gc.isenabled()
    gc.collect(1)
    assert gc.get_freeze_count() == frozen, "a young collection walked the scan's records"


def test_a_garbage_cycle_frozen_with_a_scans_records_is_freed_within_the_full_collection_interval(saved,
                                                                                                  monkeypatch):
    class Node:
        pass
    freed = []

    def cycle() -> None:  # garbage only the cyclic collector finds, left by the scan
        first, second = Node(), Node()
        first.other, second.other = second, first
        first.marker = weakref.finalize(first, freed.append, "cycle")
    monkeypatch.setattr(run, "_scans_since_full", 0)
    real = run.build_report
    monkeypatch.setattr(run, "build_report", lambda *a, **kw: cycle() or real(*a, **kw))
    for _ in range(run.FULL_COLLECTION_EVERY - 1):
        run.run_scan([], None, load_thresholds(), lambda data: Path("unused"), saved=saved)
    gc.collect(1)
    assert freed == [], "frozen with the scans' records, the cycles wait for a full collection"
    monkeypatch.setattr(run, "build_report", real)
    run.run_scan([], None, load_thresholds(), lambda data: Path("unused"), saved=saved)
    assert freed == ["cycle"] * (run.FULL_COLLECTION_EVERY - 1)
