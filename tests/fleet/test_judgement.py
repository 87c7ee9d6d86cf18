"""How the fleet rules judge one VM (issue 16): drops on the vNIC that has them (point 3), the per-VM
report's words for CPU (point 4), a noise floor and severity-first ranking (point 5)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


def report(vms: list[dict], **kw) -> dict:
    return build_report(snapshot_from_dict(fs.snapshot(vms)), load_thresholds(**kw)).as_dict()


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


# --- point 4: one vocabulary for CPU ---------------------------------------------------------------

def test_drops_with_ready_in_the_investigate_band_never_say_healthy():
    """Worst vCPU 7 % (1,400 ms in 20 s) with drops: the per-VM words for 5-10 %, with the threshold."""
    t = load_thresholds()
    from esxdiag.rules.cpu import ready_band

    dropping = row(fs.vm("drops7", ready=1400, drops=100))
    assert dropping["class"] == "ring-suspect"
    assert "healthy" not in dropping["reason"]
    assert f"CPU ready time high: {ready_band('warning', t)} (worst vCPU %RDY 7.0% > 5)" in dropping["reason"]
    quiet = row(fs.vm("quiet7", ready=1400))
    assert (quiet["class"], quiet["severity"]) == ("cpu-contention", "warning")
    assert f"CPU ready time high: {ready_band('warning', t)} (worst vCPU %RDY 7.0% > 5)" in quiet["reason"]
    assert ready_band("warning", t) == "investigate (5-10 %)"  # the per-VM finding's own band


def test_each_cpu_level_has_its_words_and_threshold():
    healthy = row(fs.vm("ok", ready=400, drops=100))
    assert "CPU healthy (worst vCPU %RDY 2.00% <= 5; worst vCPU %CSTP 0.00% <= 3; %MLMTD 0.00% <= 0)" in \
        healthy["reason"]
    critical = row(fs.vm("hot", ready=2400))
    assert (critical["class"], critical["severity"]) == ("cpu-contention", "critical")
    assert "CPU ready time high: contention (worst vCPU %RDY 12.0% > 10)" in critical["reason"]
    limited = row(fs.vm("capped", ready=3100, limited=3000, limit=800))
    assert "a CPU limit is throttling (%MLMTD 15.0% > 0, limit 800 MHz)" in limited["reason"]
    costop = row(fs.vm("wide", vcpus=4, costop=1000))
    assert "co-stop: too many vCPUs for the host's load (worst vCPU %CSTP 5.0% > 3)" in costop["reason"]


def test_an_upper_bound_over_the_threshold_is_neither_healthy_nor_contention():
    vm = fs.vm("nocount", ready=1400)
    vm["num_cpu"] = None
    vm["perf"]["series"] = [s for s in vm["perf"]["series"] if s["instance"] in ("", "4000")]
    r = row(vm)
    assert r["class"] == "no-data" and "healthy" not in r["reason"] and "at most 7.00%" in r["reason"]


def test_impossible_figures_are_damaged_data_not_contention():
    r = row(fs.vm("broken", ready=25_000))  # 125 % of a 20 s sample
    assert r["class"] == "no-data" and r["severity"] != "critical" and "damaged data" in r["reason"]


# --- point 5: a noise floor and severity-first ranking ---------------------------------------------

def test_a_handful_of_drops_out_of_millions_of_packets_is_a_note_not_a_class():
    """Three drops in five minutes out of 30 million packets (0.01/s, 0.0001 per 1,000)."""
    vm = fs.vm("noisy", drops=[3] + [0] * 14, packets=2_000_000)
    r = row(vm)
    assert (r["class"], r["severity"]) == ("healthy", None)
    assert "below the noise floor" in r["reason"]
    assert any("3 receive drops" in n and "noise floor (0.1/s and 0.01 per 1,000 packets)" in n for n in r["notes"])
    moved = row(vm, overrides=["fleet.drops_per_s_floor=0", "fleet.drops_per_1000_floor=0"])
    assert moved["class"] == "ring-suspect"  # the admin moves the floor


def test_a_quiet_vm_with_few_packets_is_over_the_floor_per_1000_packets():
    r = row(fs.vm("quiet", drops=[1] * 15, packets=100))  # 0.05/s, but 10 per 1,000 packets
    assert r["class"] == "ring-suspect"


def test_the_floors_are_thresholds_with_ranges():
    from esxdiag.config import ConfigError, DEFAULT_THRESHOLDS

    assert (DEFAULT_THRESHOLDS["fleet.drops_per_s_floor"], DEFAULT_THRESHOLDS["fleet.drops_per_1000_floor"]) == (
        0.1, 0.01)
    with pytest.raises(ConfigError, match="between 0 and 1000"):
        load_thresholds(overrides=["fleet.drops_per_1000_floor=5000"])
    document = report([fs.vm("a")])
    assert document["thresholds"]["fleet.drops_per_s_floor"] == 0.1


def test_severity_orders_before_class():
    """A critical CPU limit outranks a warning-level drop suspicion; the noise ranks with the healthy."""
    document = report([fs.vm("suspect", drops=100), fs.vm("capped", ready=3100, limited=3000, limit=800),
                       fs.vm("noise", drops=[3] + [0] * 14, packets=2_000_000), fs.vm("calm"),
                       fs.vm("old", nics=("e1000",)), fs.vm("hot", ready=2400)])
    order = [(r["name"], r["class"], r["severity"]) for r in document["vms"]]
    assert order[:4] == [("capped", "cpu-limit", "critical"), ("hot", "cpu-contention", "critical"),
                         ("suspect", "ring-suspect", "warning"), ("old", "emulated-nic", "warning")]
    assert {n for n, _, _ in order[4:]} == {"noise", "calm"}


# --- point 6: severity everywhere ------------------------------------------------------------------

SEVERE = [fs.vm("slow-drip", drops=100), fs.vm("flood", drops=600), fs.vm("calm"),
          fs.vm("web01", vcenter="vc1:443", drops=100), fs.vm("web01", vcenter="vc2:443", moid="vm-9", drops=100)]


def severe_report() -> dict:
    data = fs.snapshot(SEVERE, vcenters=["vc1:443", "vc2:443"])
    return build_report(snapshot_from_dict(data), load_thresholds()).as_dict()


def test_html_badges_show_severity_with_icon_word_and_colour():
    from esxdiag.reports.fleet_html import render_fleet_html

    page = render_fleet_html(severe_report())
    assert '<span class="sev sev-critical"><span class="icon" aria-hidden="true">\u25b2</span> CRITICAL</span>' in page
    assert '<span class="sev sev-warning"><span class="icon" aria-hidden="true">\u25c6</span> WARNING</span>' in page
    assert ".sev-critical {" in page and ".sev-warning {" in page  # the per-VM report's styles, inline


def test_text_table_has_severity_and_vcenter_columns():
    from esxdiag.reports.fleet_text import render_fleet_text

    text = render_fleet_text(severe_report())
    header = next(line for line in text.splitlines() if line.startswith("#"))
    assert "severity" in header and "vCenter" in header
    web01 = [line for line in text.splitlines() if " web01 " in line]
    assert len(web01) == 2 and any("vc1:443" in line for line in web01) and any("vc2:443" in line for line in web01)
    assert any(line.split()[1:3] == ["critical", "ring-suspect"] for line in text.splitlines())


def test_openmetrics_has_severity_and_marks_bounded_figures():
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from esxdiag.reports.fleet_metrics import render_fleet_metrics

    nocount = fs.vm("nocount", ready=200)
    nocount["num_cpu"] = None
    nocount["perf"]["series"] = [s for s in nocount["perf"]["series"] if s["instance"] in ("", "4000")]
    document = build_report(snapshot_from_dict(fs.snapshot(SEVERE[:3] + [nocount])), load_thresholds()).as_dict()
    families = {f.name: f for f in text_string_to_metric_families(render_fleet_metrics(document))}
    severity = {s.labels["vm"]: s.value for s in families["esxdiag_fleet_vm_severity"].samples}
    assert severity == {"flood": 3, "slow-drip": 2, "calm": 0, "nocount": 0}
    classes = {s.labels["vm"]: s.labels["severity"] for s in families["esxdiag_fleet_vm_class"].samples}
    assert classes["flood"] == "critical" and classes["calm"] == "none"
    ready = {s.labels["vm"]: s.labels.get("bound") for s in families["esxdiag_fleet_vm_ready_worst_vcpu_percent"].samples}
    assert ready["nocount"] == "upper" and ready["calm"] is None
