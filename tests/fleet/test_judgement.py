"""How the fleet rules judge one VM (issue 16): drops on the vNIC that has them (point 3), the per-VM
report's words for CPU (point 4), a noise floor and severity-first ranking (point 5)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


def report(vms: list[dict], **kw) -> dict:
    return build_report(snapshot_from_dict(fs.snapshot(vms)), load_thresholds(**kw))


def row(vm: dict, **kw) -> dict:
    (only,) = report([vm], **kw)["vms"]
    return only


# --- point 3: drops are judged on the vNIC that has them -------------------------------------------

def test_drops_on_an_e1000_vnic_are_fixed_by_the_adapter_not_a_ring():
    """The issue's VM: 4000 vmxnet3 without drops, 4001 e1000 with all 9,000 (30/s)."""
    vm = fs.vm("mixed", nics=("vmxnet3", "e1000"), drops={"4000": 0, "4001": 600})
    r = row(vm)
    assert r["drops_by_vnic"] == {"4000": 0, "4001": 9000}
    assert (r["class"], r["severity"]) == ("emulated-nic", "critical")
    mac = vm["vnics"][1]["mac"]
    assert f"e1000 vNIC Network adapter 2 ({mac})" in r["reason"] and "vmxnet3" in r["reason"]
    assert "ring exhaustion likely" not in r["reason"]


def test_drops_on_the_vmxnet3_vnic_of_a_mixed_vm_go_down_the_ring_ladder():
    vm = fs.vm("mixed", nics=("vmxnet3", "e1000"), drops={"4000": 100, "4001": 0})
    r = row(vm)
    assert (r["class"], r["severity"]) == ("ring-suspect", "warning")
    assert f"vmxnet3 vNIC Network adapter 1 ({vm['vnics'][0]['mac']})" in r["reason"]
    assert "e1000" not in r["reason"]


def test_drops_on_both_take_the_more_urgent_answer_and_note_the_other():
    vm = fs.vm("both", nics=("vmxnet3", "e1000"), drops={"4000": 20, "4001": 600})
    r = row(vm)
    assert (r["class"], r["severity"]) == ("emulated-nic", "critical")  # 30/s on the e1000 beats 1/s
    assert any(n.startswith("also: ") and "vmxnet3 vNIC Network adapter 1" in n and "ring exhaustion" in n
               for n in r["notes"])


def test_drops_without_per_vnic_series_say_they_cannot_be_placed():
    vm = fs.vm("agg", nics=("vmxnet3", "e1000"), drops={"4000": 0, "4001": 100})
    vm["perf"]["series"] = [s for s in vm["perf"]["series"] if s["instance"] in ("", "0")]
    r = row(vm)
    assert r["class"] == "ring-suspect" and "could be on any of them" in r["reason"]
    assert any("also: " in n and "e1000" in n for n in r["notes"])
