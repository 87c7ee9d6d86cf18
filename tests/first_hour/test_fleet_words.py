"""Issue 25 points 3 and 4, the fleet's words: "proven" only on proven rows (an unproven
ring-suspect row says what would prove it: --deep N), and a VM held back by its CPU limit reads
as a limit, never as contention (the per-VM cpu rules' words)."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict

_spec = importlib.util.spec_from_file_location(
    "fleet_snapshots", Path(__file__).resolve().parents[1] / "fleet" / "fleet_snapshots.py")
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
_deep = importlib.util.spec_from_file_location(
    "deep_fold", Path(__file__).resolve().parents[1] / "fleet" / "test_deep_fold.py")
deep_fold = importlib.util.module_from_spec(_deep)
sys.modules["deep_fold"] = deep_fold  # its dataclass looks its module up
_deep.loader.exec_module(deep_fold)


def rows(vms: list[dict]) -> dict[str, dict]:
    document = build_report(snapshot_from_dict(fs.snapshot(copy.deepcopy(vms))), load_thresholds()).as_dict()
    return {r["name"]: r for r in document["vms"]}


def test_an_unproven_ring_suspect_says_what_would_prove_it():
    r = rows([fs.vm("web01", drops=100)])["web01"]
    assert r["class"] == "ring-suspect"
    assert "proves it" not in r["reason"] and "proven" not in r["reason"].replace("not proven", ""), r["reason"]
    assert "not proven" in r["reason"] and "--deep N" in r["reason"], r["reason"]


def test_a_proven_row_says_proven_and_never_likely_or_would(tmp_path):
    document = deep_fold.folded(tmp_path)
    proven = next(r for r in document["vms"] if r["name"] == "iperf-test1")
    assert proven["class"] == "ring-exhaustion" and "proven by host ring counters" in proven["reason"]
    assert "--deep N" not in proven["reason"] and "proves it" not in proven["reason"], proven["reason"]


def test_a_cpu_limited_vm_reads_as_a_limit_not_as_contention():
    """The seed's limited receiver: %RDY 69.6 of which %MLMTD 69.5 (ms per 20 s sample, 1 vCPU)."""
    r = rows([fs.vm("iperf-cpu-limited", ready=13920, limited=13904, limit=800)])["iperf-cpu-limited"]
    assert r["class"] == "cpu-limit", r
    assert "contention" not in r["reason"] and "ready time high" not in r["reason"], r["reason"]
    assert "CPU ready time caused by its CPU limit" in r["reason"] and "a CPU limit is throttling" in r["reason"]


def test_ready_time_that_the_limit_does_not_explain_is_still_contention():
    r = rows([fs.vm("busy", ready=13920, limited=2000, limit=800)])["busy"]
    assert "contention" in r["reason"], r["reason"]
