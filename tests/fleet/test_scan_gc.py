"""A scan's analysis runs with Python's cyclic garbage collector paused (esxdiag.scanning.run: its
collections walk the whole heap of records the scan built, again and again), and the collector is
back as it was afterwards, also when the analysis fails."""

from __future__ import annotations

import gc
import importlib.util
import subprocess
import sys
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




def _in_a_process_of_its_own(body: str) -> None:
    """``body`` run after a scan's set-up in a new interpreter: the freeze is the whole process's, and another
    test's scan on a thread of this one would give the records back to the collector mid-test."""
    code = (
        "import gc, importlib.util, weakref\n"
        "from pathlib import Path\n"
        "from esxdiag.config import load_thresholds\n"
        "from esxdiag.fleet.snapshot import snapshot_from_dict\n"
        "from esxdiag.scanning import run\n"
        f"spec = importlib.util.spec_from_file_location('fs', {str(Path(__file__).with_name('fleet_snapshots.py'))!r})\n"
        "fs = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(fs)\n"
        "saved = snapshot_from_dict(fs.snapshot([fs.vm('ring', drops=100), fs.vm('calm')])), Path('s.json')\n"
        "def scan():\n"
        "    return run.run_scan([], None, load_thresholds(), lambda data: Path('unused'), saved=saved)\n"
        + body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_records_a_scan_built_skip_the_young_collections():
    _in_a_process_of_its_own(
        "gc.collect()\n"
        "scanned = scan()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert frozen > 0 and gc.isenabled()\n"
        "row = scanned.report.rows[0]\n"
        "assert not any(o is row for o in gc.get_objects()), 'a row of the report is left to the young collections'\n"
        "gc.collect(1)\n"
        "assert gc.get_freeze_count() == frozen, 'a young collection walked the scan records'\n")


def test_a_garbage_cycle_frozen_with_a_scans_records_is_freed_within_the_full_collection_interval():
    _in_a_process_of_its_own(
        "class Node:\n"
        "    pass\n"
        "freed = []\n"
        "def cycle():  # garbage only the cyclic collector finds, left by the scan\n"
        "    first, second = Node(), Node()\n"
        "    first.other, second.other = second, first\n"
        "    first.marker = weakref.finalize(first, freed.append, 'cycle')\n"
        "real = run.build_report\n"
        "run.build_report = lambda *a, **kw: cycle() or real(*a, **kw)\n"
        "for _ in range(run.FULL_COLLECTION_EVERY - 1):\n"
        "    scan()\n"
        "gc.collect(1)\n"
        "assert freed == [], 'frozen with the scans records, the cycles wait for a full collection'\n"
        "run.build_report = real\n"
        "scan()\n"
        "assert freed == ['cycle'] * (run.FULL_COLLECTION_EVERY - 1), freed\n")
