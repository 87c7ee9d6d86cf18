"""Issue 22: every drop explained. Each bundle under tests/fixtures/situations is a cause of drops (or a
quirk of judging them) that an admin meets on vSphere 7 and 8, built from the lab's ring-exhaustion
example by tests/fixtures/situations/build.py. Each test says the right cause and numbers, and that no
printed command would leave the device as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.reports.json_report import to_jsonable
from esxdiag.reports.text import render_text

SITUATIONS = Path(__file__).resolve().parents[1] / "fixtures" / "situations"


def run(name: str):
    result = analyze(SITUATIONS / name, dict(DEFAULT_THRESHOLDS))
    return result, to_jsonable(result), render_text(result, width=200)


def vnic(doc: dict, index: int = 0) -> dict:
    return doc["vms"][0]["vnics"][index]


def commands(verdict: dict) -> list[str]:
    return [c for r in verdict["remediation"] for c in (*r["commands"], *r["persistence"])]


def test_1_v7_device_asked_4032_runs_2048_raise_to_4096():
    _, doc, text = run("v7-jumbo-asked-4032")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "raise-ring1"
    assert nic["metrics"]["ring1_max"] == 4096 and nic["metrics"]["ring1_size"] == 2048
    linux = next(r for r in nic["verdict"]["remediation"] if r["os"] == "linux")
    assert linux["commands"][0] == "ethtool -G eth0 rx 4096"
    assert not any("4032" in c for c in commands(nic["verdict"]))
    assert "2048 entries" in linux["memory_cost"]
    assert "2,048 of 4,096" in nic["verdict"]["summary"] and "v7" in nic["verdict"]["summary"]
    assert "of 4,032" not in text


def test_2_v7_device_at_4096_is_at_max_of_4096():
    _, doc, text = run("v7-jumbo-at-max")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "at-max"
    assert nic["metrics"]["ring1_max"] >= nic["metrics"]["ring1_size"] == 4096
    assert "4,032" not in text and "maximum (4,096" in nic["verdict"]["summary"]


def test_3_windows_at_max_gets_only_windows_and_vsphere_commands():
    _, doc, _ = run("windows-2022-at-max")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "at-max"
    shown = commands(nic["verdict"]) + [c for f in doc["vms"][0]["findings"] for r in f["remediation"]
                                        for c in (*r["commands"], *r["persistence"])]
    assert shown and not any("ethtool" in c or "ip link" in c for c in shown)
    assert any("Set-NetAdapterRss" in c for c in shown)


def test_4_e1000_shows_its_own_driver_and_port_drops():
    result, doc, text = run("e1000-beside-vmxnet3")
    e1000 = next(n for n in doc["vms"][0]["vnics"] if n["type"] == "e1000")
    assert e1000["metrics"]["driver"] == "e1000" and e1000["metrics"]["driver_version"] == "7.3.21-k8-NAPI"
    assert e1000["metrics"]["dropped_rx"]["delta"] == 2880
    assert "2,880" in e1000["verdict"]["summary"]
    emulated = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "emulated-adapter")
    assert "drops received frames" in emulated["title"]
    assert "no drop counter was read at both ends" not in text


def test_5_uplink_loss_is_named_not_the_ring():
    _, doc, text = run("uplink-loss")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "drops-elsewhere" and nic["verdict"]["causes"] == ["uplink"]
    assert "vmnic1" in nic["verdict"]["summary"] and "18,440" in nic["verdict"]["summary"]
    assert not any("ethtool -G" in c for c in commands(nic["verdict"]))
    uplink = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "uplink-loss")
    assert uplink["severity"] == "critical" and "vmnic1" in uplink["title"]
    assert "NO FINDINGS" not in text and "DROPS ELSEWHERE" in text


@pytest.mark.parametrize("name", ["vmotion-in-window", "vmotion-sampled-on-two-hosts"])
def test_6_vmotion_inside_the_window_is_said_and_not_subtracted(name):
    result, doc, text = run(name)
    vm = doc["vms"][0]
    move = next(f for f in vm["findings"] if f["rule"] == "vmotion")
    assert "esx0.lab.local" in move["title"] and "esx1.lab.local" in move["title"]
    event = SITUATIONS / "vmotion-in-window" / "vcenter" / "vsphere_events@vm=iperf-test1.json"
    moved_at = json.loads(event.read_text())["events"][0]["time"][11:19]  # HH:MM:SS
    assert (moved_at in move["title"]) == (name == "vmotion-in-window")  # the time only vCenter's event has
    nic = vnic(doc)
    assert nic["ring_verdict"] == "raise-ring1"  # from the guest's continuous counters
    assert all(m.get("delta") is None for k, m in nic["metrics"].items()
               if k in ("ring1_full", "host_out_of_buffers", "dropped_rx"))  # never across two ports
    exhaustion = next(f for f in vm["findings"] if f["rule"] == "ring-exhaustion")
    assert "33554464" in exhaustion["title"] and "67109400" in exhaustion["title"]
    assert vm["cpu"]["samples"] == 6


def test_7_host_swapping_the_vm_is_memory_first_not_a_ring_raise():
    _, doc, text = run("host-swaps-vm")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "memory-first"
    assert "healthy" not in nic["verdict"]["summary"]
    assert any("%SWPWT" in e["what"] for e in nic["verdict"]["evidence"])
    assert not any(r.get("memory_cost") for r in nic["verdict"]["remediation"])
    assert not any("ethtool -G" in c for c in commands(nic["verdict"]))


def test_8_saturated_vcpus_are_shown_and_not_called_healthy():
    _, doc, _ = run("saturated-vcpus")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "guest-saturated"
    assert "healthy" not in nic["verdict"]["summary"]
    assert any(f["rule"] == "cpu-saturation" for f in doc["vms"][0]["findings"])
    assert doc["vms"][0]["cpu"]["run_pct_avg"] > 95


def test_9_short_esxtop_says_how_much_of_the_window_it_covered():
    _, doc, _ = run("esxtop-short")
    nic = vnic(doc)
    assert "6 s esxtop covered of the 60 s window" in nic["verdict"]["summary"]
    assert any("esxtop covered" in e["what"] for e in nic["verdict"]["evidence_against"])
    assert doc["vms"][0]["cpu"]["covered_s"] == 6


def test_10_one_hot_rx_queue_is_named():
    _, doc, text = run("hot-rx-queue")
    hot = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "hot-queue")
    assert hot["title"].startswith("Drops on rx queue 0 of 2")
    assert "Rx queue 0 of 2 takes 100%" in vnic(doc)["verdict"]["summary"]


def test_11_host_and_guest_disagreeing_is_printed_in_the_text():
    _, doc, text = run("host-guest-disagree")
    assert any(f["rule"] == "host-guest-drops" for f in doc["vms"][0]["findings"])
    assert "INFO: Host and guest disagree on out-of-buffer drops" in text


@pytest.mark.parametrize("name", sorted(p.name for p in SITUATIONS.iterdir() if (p / "manifest.json").is_file()))
def test_every_situation_is_read_whole(name):
    result, _, _ = run(name)
    assert [c for c in result.coverage if c.status in ("unparsed", "failed")] == []


def test_mtu_drops_are_subtracted_from_the_port_and_named():
    _, doc, _ = run("mtu-mismatch")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "drops-elsewhere" and nic["verdict"]["causes"] == ["mtu"]
    assert nic["metrics"]["dropped_rx"]["delta"] == 1200 and "1,200" in nic["verdict"]["summary"]
    assert not any("ethtool -G" in c for c in commands(nic["verdict"]))
    assert any(f["rule"] == "vmxnet3-drop-reasons" for f in doc["vms"][0]["findings"])


def test_page_absent_drops_point_at_host_memory():
    _, doc, _ = run("page-absent")
    nic = vnic(doc)
    assert nic["ring_verdict"] == "drops-elsewhere" and nic["verdict"]["causes"] == ["page-absent"]
    assert any("mem.reservation" in c for c in commands(nic["verdict"]))


def test_a_reason_the_capture_does_not_print_is_not_reported_not_zero():
    _, doc, _ = run("uplink-loss")  # ESXi 6.0-style rxSummary: no MTU, truncation, steering or burst-queue lines
    assert not any(f["rule"] == "vmxnet3-drop-reasons" for f in doc["vms"][0]["findings"])
    (check,) = [c for c in doc["vms"][0]["checks"] if c["rule"] == "vmxnet3-drop-reasons"]
    read, _, absent = check["reason"].partition("; not reported by this host: ")
    assert all(family in read for family in ("large-headers", "sg-limit", "page-absent", "copy-failure"))
    assert all(family in absent for family in ("mtu", "truncation", "steering", "burst-queue", "packet-aging"))
    assert "not reported by this host: mtu, truncation, steering, burst-queue" in check["reason"]


def test_a_mac_listed_on_a_second_host_with_nothing_read_there_is_no_move(tmp_path):
    import json
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(SITUATIONS.parents[1] / ".." / "examples" / "iperf-test1-ring-exhaustion", bundle,
                    ignore=shutil.ignore_patterns("report.*"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["targets"].append({"id": "esxi-esx9", "kind": "esxi", "address": None, "vm": None})
    (bundle / "esxi-esx9").mkdir()
    (bundle / "esxi-esx9" / "net_stats_list.txt").write_text(
        "PortNum          Type SubType SwitchName       MACAddress         ClientName\n"
        "33554999            5       9 vSwitch0         00:50:56:a6:55:f4  iperf-test1\n")
    manifest["captures"].append({"spec": "net_stats_list", "target": "esxi-esx9", "file": "esxi-esx9/net_stats_list.txt",
                                 "params": {}, "sample": None, "command": "net-stats -l",
                                 "started": "2026-11-21T06:03:00.000Z", "ended": "2026-11-21T06:03:00.100Z",
                                 "rc": 0, "error_kind": None, "error": None})
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    result = analyze(bundle, dict(DEFAULT_THRESHOLDS))
    vm = result.vms[0]
    assert vm.vnics[0].ring_verdict == "raise-ring1" and vm.vnics[0].port == 33554464
    assert not any(f.rule == "vmotion" for f in vm.findings)


def test_a_move_is_seen_from_sample_numbers_when_the_bundle_says_no_times(tmp_path):
    import json
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(SITUATIONS / "vmotion-sampled-on-two-hosts", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for cap in manifest["captures"]:
        cap["started"] = cap["ended"] = None  # written by hand: no clock
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    vm = analyze(bundle, dict(DEFAULT_THRESHOLDS)).vms[0]
    move = next(f for f in vm.findings if f.rule == "vmotion")
    assert "from esx0.lab.local to esx1.lab.local" in move.title and "33554464 -> port 67109400" in move.title
    assert vm.vnics[0].port == 67109400


def test_esxtop_coverage_falls_back_to_the_capture_delay(tmp_path):
    import re
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(SITUATIONS / "esxtop-short", bundle)
    capture = next(bundle.glob("esxi-esx0.lab.local/esxtop_batch@*"))
    # Excel damage: timestamps without seconds, so the rows cannot say their interval
    capture.write_text(re.sub(r'"(\d\d/\d\d/\d{4} \d\d:\d\d):\d\d"', r'"\1"', capture.read_text()))
    nic = to_jsonable(analyze(bundle, dict(DEFAULT_THRESHOLDS)))["vms"][0]["vnics"][0]
    assert "6 s esxtop covered of the 60 s window" in nic["verdict"]["summary"]


def test_an_uplink_not_known_to_carry_the_vnic_is_the_hosts_loss_not_its_cause(tmp_path):
    import json
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(SITUATIONS / "uplink-loss", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["captures"] = [c for c in manifest["captures"] if c["spec"] not in ("esxcli_vm_ports", "esxcli_vm_list")]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    doc = to_jsonable(analyze(bundle, dict(DEFAULT_THRESHOLDS)))
    nic = vnic(doc)
    assert nic["ring_verdict"] != "drops-elsewhere" and nic["verdict"]["causes"] == []
    (finding,) = [f for f in doc["vms"][0]["findings"] if f["rule"] == "uplink-loss"]
    assert finding["severity"] == "warning" and "vmnic1" in finding["title"]
    assert "not known to carry this vNIC" in finding["title"] and "vmnic0" not in finding["title"]
