"""CPU verdicts from vCenter performance data (no esxtop in the bundle).

vcsim's performance values are random and cannot be injected, so these bundles carry a
vsphere_perf capture written in the collector's documented format (esxdiag.collectors.vsphere)
with chosen values: this tests the ms -> % arithmetic and the thresholds, not the collector."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from esxdiag.config import load_thresholds
from esxdiag.engine import analyze

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-by-hand" / "iperf-test1"


def bundle_with_perf(tmp_path: Path, series: list[dict], interval_s: int = 20, rollup: str = "realtime",
                     note: str | None = None) -> Path:
    root = tmp_path / "b"
    shutil.copytree(SEED, root)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["captures"] = [c for c in manifest["captures"] if c["spec"] != "esxtop_batch"]
    manifest["subject"]["vms"] = ["iperf-test1"]
    times = [f"2017-10-02T14:20:{s:02d}Z" for s in (0, 20, 40)]
    perf = {"schema": "esxdiag.vsphere_perf/1", "vm": "iperf-test1", "interval_s": interval_s, "rollup": rollup,
            "note": note, "start": times[0], "end": "2017-10-02T14:21:00Z", "timestamps": times, "series": series}
    (root / "vcenter" / "vsphere_perf.json").write_text(json.dumps(perf))
    manifest["captures"].append({"spec": "vsphere_perf", "target": "vcenter", "file": "vcenter/vsphere_perf.json",
                                 "params": {"vm": "iperf-test1"}, "sample": None, "started": times[0],
                                 "ended": times[-1], "rc": None, "error_kind": None, "error": None})
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def series(counter: str, instance: str, values: list[int]) -> dict:
    return {"counter": counter, "instance": instance, "unit": "millisecond", "values": values}


def vm_of(root: Path):
    return analyze(root, load_thresholds()).vms[0]


def test_per_vcpu_ready_ms_becomes_percent_and_drives_contention(tmp_path):
    root = bundle_with_perf(tmp_path, [series("cpu.ready.summation", "0", [4000, 4200, 3800]),  # 20 % at 20 s
                                       series("cpu.ready.summation", "1", [100, 100, 100])])
    vm = vm_of(root)
    assert vm.cpu["source"] == "vcenter-realtime"
    assert vm.cpu["ready_pct_max"] == 21.0
    assert vm.vnics[0].ring_verdict == "cpu-contention-first"


def test_low_ready_from_vcenter_lets_the_ring_verdict_stand(tmp_path):
    root = bundle_with_perf(tmp_path, [series("cpu.ready.summation", "0", [200, 180, 220]),  # 1 %
                                       series("cpu.ready.summation", "1", [150, 150, 150])])
    assert vm_of(root).vnics[0].ring_verdict == "raise-ring1"


def test_aggregate_instance_is_divided_by_vcpus_not_reported_over_100(tmp_path):
    # 2 vCPUs, aggregate 8,000 ms per 20 s = 40 % summed = 20 % per vCPU
    root = bundle_with_perf(tmp_path, [series("cpu.ready.summation", "", [8000, 8000, 8000])])
    vm = vm_of(root)
    assert vm.cpu["ready_pct_max"] == 20.0
    assert vm.vnics[0].ring_verdict == "cpu-contention-first"


def test_max_limited_from_vcenter_means_limit_first(tmp_path):
    root = bundle_with_perf(tmp_path, [series("cpu.ready.summation", "0", [13920] * 3),  # 69.6 %
                                       series("cpu.maxlimited.summation", "0", [13904] * 3)])  # 69.52 %
    vm = vm_of(root)
    assert vm.cpu["max_limited_pct_max"] == pytest.approx(69.52)
    assert vm.vnics[0].ring_verdict == "cpu-limit-first"


def test_historical_rollup_is_said_in_the_report(tmp_path):
    root = bundle_with_perf(tmp_path, [series("cpu.ready.summation", "0", [3000, 3000, 3000])], interval_s=300,
                            rollup="historical", note="realtime statistics unavailable: 5-minute rollups used")
    vm = vm_of(root)
    assert vm.cpu["source"] == "vcenter-historical"
    assert vm.cpu["ready_pct_max"] == 1.0  # 3,000 ms of 300 s
    assert any("5-minute rollups" in n for n in vm.notes)


def test_each_vm_reads_its_own_perf_capture(tmp_path):
    root = bundle_with_perf(tmp_path, [series("cpu.ready.summation", "0", [200, 200, 200])])  # iperf-test1: 1 %
    manifest = json.loads((root / "manifest.json").read_text())
    other = json.loads((root / "vcenter" / "vsphere_perf.json").read_text())
    other.update(vm="iperf-test2", series=[series("cpu.ready.summation", "0", [8000, 8000, 8000])])  # 40 %
    (root / "vcenter" / "other_perf.json").write_text(json.dumps(other))
    manifest["captures"].insert(0, {**manifest["captures"][-1], "file": "vcenter/other_perf.json",
                                    "params": {"vm": "iperf-test2"}})
    (root / "manifest.json").write_text(json.dumps(manifest))
    vm = vm_of(root)
    assert vm.name == "iperf-test1" and vm.cpu["ready_pct_max"] == 1.0
    assert vm.vnics[0].ring_verdict == "raise-ring1"
