"""Issue 29 item 5: every guest NIC is listed, whatever its driver, with a verdict that fits it. Bundles built
by tests/fixtures/situations/build_nics.py from the lab's ring-exhaustion example: the lab's vmxnet3 vNIC (flat)
beside an SR-IOV VF, a DirectPath NIC or a guest NIC no vNIC claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.join.facts import CounterWindow
from esxdiag.reports.html import render_html
from esxdiag.reports.json_report import to_jsonable
from esxdiag.reports.text import render_text

SITUATIONS = Path(__file__).resolve().parents[1] / "fixtures" / "situations"
VMXNET3_ADVICE = ("ethtool -G eth0", "rx 4096", "MaxRxRing1Length", "vmxnet3", "Small Rx Buffers", "vsish")


def run(name: str):
    result = analyze(SITUATIONS / name, dict(DEFAULT_THRESHOLDS))
    return result, to_jsonable(result), render_text(result, width=200), render_html(result)


def nic_of(doc: dict, iface: str) -> dict:
    return next(n for n in doc["vms"][0]["vnics"] if n["guest_interface"] == iface)


def commands(verdict: dict) -> list[str]:
    return [c for r in verdict["remediation"] for c in (*r["commands"], *r["persistence"])]


def assert_no_vmxnet3_advice(nic: dict) -> None:
    shown = commands(nic["verdict"]) + [n for r in nic["verdict"]["remediation"] for n in r["notes"]]
    assert not any(word in c for c in shown for word in VMXNET3_ADVICE), shown


def assert_listed(doc: dict, text: str, html: str, iface: str) -> dict:
    nic = nic_of(doc, iface)
    assert iface in text and iface in html
    assert nic["verdict"]["summary"].split(":")[0] in html.replace("&#39;", "'")
    return nic


@pytest.mark.parametrize("name, kind", [("sriov-mlx5-out-of-buffer", "sriov"),
                                        ("sriov-mlx5-not-in-inventory", "guest-only")])
def test_a_sriov_mlx5_vf_is_listed_with_its_out_of_buffer_drops(name, kind):
    _, doc, text, html = run(name)
    vf = assert_listed(doc, text, html, "ens224")
    assert vf["type"] == kind and vf["mac"] == "00:50:56:a6:77:01"
    assert vf["ring_verdict"] == "driver-drops"
    summary = vf["verdict"]["summary"]
    assert "rx_out_of_buffer +41,900" in summary and "698/s" in summary and "mlx5_core" in summary
    assert vf["metrics"]["driver_drops"]["rx_out_of_buffer"]["delta"] == 41_900
    assert vf["metrics"]["ring_rx"] == {"current": 1024, "max": 8192}
    assert commands(vf["verdict"])[0] == "ethtool -G ens224 rx 8192"  # the VF's own maximum, not 4096
    assert_no_vmxnet3_advice(vf)
    assert "rx_out_of_buffer" in text and "DROPS IN THE NIC'S OWN DRIVER" in text
    finding = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "nic-driver-drops")
    assert finding["severity"] == "critical" and "rx_out_of_buffer" in finding["title"]
    # the vmxnet3 vNIC keeps its own verdict
    assert nic_of(doc, "eth0")["type"] == "vmxnet3"


def test_coverage_says_what_each_guest_capture_feeds():
    _, doc, _, _ = run("sriov-mlx5-out-of-buffer")
    ens224 = [c for c in doc["coverage"] if "ens224" in (c.get("file") or "")]
    assert ens224 and all(c["status"] == "read" and not c.get("why") for c in ens224)
    stats = next(c for c in ens224 if c["spec"] == "ethtool_stats")
    assert "pkts rx OOB" not in stats["what"].split("(vmxnet3")[0]


def test_b_ixgbevf_buffer_allocation_failures_name_the_guest_memory_not_a_ring():
    _, doc, text, html = run("sriov-ixgbevf-drops")
    vf = assert_listed(doc, text, html, "ens224")
    assert vf["ring_verdict"] == "driver-drops"
    assert "alloc_rx_buff_failed +6,300" in vf["verdict"]["summary"] and "105/s" in vf["verdict"]["summary"]
    assert not any("ethtool -G" in c for c in commands(vf["verdict"]))
    assert any("/proc/meminfo" in c for c in commands(vf["verdict"]))
    assert_no_vmxnet3_advice(vf)


def test_c_iavf_vf_with_flat_counters_needs_nothing():
    _, doc, text, html = run("sriov-iavf-flat")
    vf = assert_listed(doc, text, html, "ens224")
    assert vf["ring_verdict"] == "not-needed" and "rx_discards flat" in vf["verdict"]["summary"]
    assert not vf["verdict"]["remediation"]
    assert not any(f["rule"] == "nic-driver-drops" for f in doc["vms"][0]["findings"])


def test_d_passthrough_nic_physical_port_discards_are_host_side():
    _, doc, text, html = run("passthrough-mlx5-phy-discards")
    nic = assert_listed(doc, text, html, "ens256")
    assert nic["type"] == "passthrough" and nic["metrics"]["tied_by"]
    assert nic["ring_verdict"] == "drops-elsewhere" and nic["verdict"]["causes"] == ["physical-port"]
    assert "rx_discards_phy +9,800" in nic["verdict"]["summary"] and "physical port" in nic["verdict"]["summary"]
    assert nic["metrics"]["ring_rx"] == {"current": None, "max": None}
    assert not any("ethtool -G" in c for c in commands(nic["verdict"]))
    assert_no_vmxnet3_advice(nic)
    assert len(doc["vms"][0]["vnics"]) == 2  # the PCI device and its guest NIC are one NIC


def test_e_unknown_driver_is_listed_with_its_counters_named():
    _, doc, text, html = run("guest-nic-unknown-driver")
    nic = assert_listed(doc, text, html, "ens192")
    assert nic["type"] == "guest-only" and nic["metrics"]["driver"] == "sfc"
    assert nic["ring_verdict"] == "insufficient-evidence"
    summary = nic["verdict"]["summary"]
    assert "rx_nodesc_drop_cnt +2,400" in summary and "rx_noskb_drops" in summary
    assert not nic["verdict"]["remediation"]
    finding = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "nic-driver-drops")
    assert finding["severity"] == "warning"  # named, not judged


def test_g_emulated_e1000e_shows_its_guest_driver_counters_beside_its_port_drops():
    _, doc, text, html = run("e1000e-guest-counters")
    nic = assert_listed(doc, text, html, "eth1")
    assert nic["type"] == "e1000e" and nic["ring_verdict"] == "insufficient-evidence"
    summary = nic["verdict"]["summary"]
    assert "2,880" in summary and "rx_no_buffer_count +2,700" in summary and "e1000e driver" in summary
    assert nic["metrics"]["driver_drops"]["rx_no_buffer_count"]["family"] == "rx-buffers"
    assert any("Vmxnet3" in c for c in commands(nic["verdict"]))  # the remedy is still the adapter type
    assert not any("ethtool -G" in c for c in commands(nic["verdict"]))


@pytest.mark.parametrize("name, kind", [("windows-sriov-vf-discards", "sriov"),
                                        ("windows-guest-only-vf-discards", "guest-only")])
def test_f_windows_vf_discards_are_named_not_given_vmxnet3_advice(name, kind):
    _, doc, text, html = run(name)
    vf = assert_listed(doc, text, html, "Ethernet1")
    assert vf["type"] == kind and vf["ring_verdict"] == "insufficient-evidence"
    assert "ReceivedDiscardedPackets +5,400" in vf["verdict"]["summary"]
    assert not vf["verdict"]["remediation"]
    assert any("Get-NetAdapterStatistics" in m for m in vf["verdict"]["missing"])
    assert len(doc["vms"][0]["vnics"]) == 2


@pytest.mark.parametrize("driver, name, family", [
    ("mlx5_core", "rx_out_of_buffer", "rx-buffers"),
    ("mlx5_core", "rx_discards_phy", "physical-port"),
    ("mlx5_core", "rx_prio3_discards", "physical-port"),
    ("mlx5_core", "rx7_buff_alloc_err", "buffer-alloc"),
    ("ixgbevf", "alloc_rx_page_failed", "buffer-alloc"),
    ("ixgbevf", "rx_dropped", "dropped"),
    ("iavf", "rx_discards", "rx-buffers"),
    ("bnxt_en", "[3]: rx_discards", "rx-buffers"),
    ("ena", "rx_drops", "rx-buffers"),
    ("ena", "queue_2_rx_page_alloc_fail", "buffer-alloc"),
    ("some_new_nic", "rx_missed_errors", "dropped"),
    ("mlx5_core", "rx_packets", None),
    ("mlx5_core", "tx_queue_dropped", None),
    ("mlx5_core", "rx_xdp_drop", None),  # an XDP program's own choice, not a loss
])
def test_counter_families_by_driver(driver, name, family):
    from esxdiag.rules.driver_nic import family_of, queue_key
    assert family_of(driver, queue_key(name)) == family


def test_one_reading_of_the_vf_counters_judges_nothing():
    """One ethtool -S reading: the VF's drops cannot be judged now; nothing is advised."""
    from dataclasses import replace
    from esxdiag.rules.driver_nic import decide_driver_nic
    vm, vf = _vf_facts()
    single = {k: CounterWindow(c.what, None, c.end, None) for k, c in vf.driver_counters.items()}
    verdict = decide_driver_nic(vm, replace(vf, driver_counters=single), dict(DEFAULT_THRESHOLDS))
    assert verdict.verdict == "insufficient-evidence" and not verdict.remediation
    assert "read once" in verdict.summary


def test_headerless_driver_counters_parse_by_name_and_esxcli_lines_do_not():
    from esxdiag.errors import ParseError
    from esxdiag.parsers.ethtool_stats import parse_stats
    stats = parse_stats("     rx_out_of_buffer: 41900\n     rx3_buff_alloc_err: 0\n     rx-0.packets: 12\n")
    assert stats.device_counters == {"rx_out_of_buffer": 41900, "rx3_buff_alloc_err": 0, "rx-0.packets": 12}
    with pytest.raises(ParseError):
        parse_stats("Packets received: 5\nPackets sent: 6\n")


def _vf_facts(name: str = "sriov-mlx5-out-of-buffer"):
    from esxdiag.bundle import Bundle
    from esxdiag.engine import gather
    _, facts = gather(Bundle.load(SITUATIONS / name))
    vm = facts[0]
    return vm, next(n for n in vm.vnics if n.attachment is not None)


def test_vf_ring_raise_only_below_its_own_known_maximum():
    from dataclasses import replace
    from esxdiag.rules.verdict import decide
    vm, vf = _vf_facts()
    t = dict(DEFAULT_THRESHOLDS)
    unknown = decide(vm, replace(vf, ethtool_current_rx=None, ring_rx_max=None), t)
    assert unknown.verdict == "driver-drops" and not any("ethtool -G" in c for r in unknown.remediation
                                                        for c in r.commands)
    assert any("ethtool -g ens224" in m for m in unknown.missing)
    at_max = decide(vm, replace(vf, ethtool_current_rx=8192), t)
    assert at_max.verdict == "driver-drops" and not any("ethtool -G" in c for r in at_max.remediation
                                                       for c in r.commands)


def test_vf_out_of_buffer_under_a_cpu_limit_names_the_limit_first():
    from dataclasses import replace
    from esxdiag.rules.verdict import decide
    vm, vf = _vf_facts()
    limited = replace(vm, cpu_limit_mhz=1000, cpu=None)
    verdict = decide(limited, vf, dict(DEFAULT_THRESHOLDS))
    assert verdict.verdict == "cpu-limit-first" and "SR-IOV VF ens224" in verdict.summary
    assert not any("ethtool" in c for r in verdict.remediation for c in r.commands)


def test_collector_looks_at_guest_nics_no_vnic_mac_matches(monkeypatch):
    """ip -o link shows eth0 (the vNIC), ens224 (a DirectPath ConnectX: no MAC in vCenter), a docker bridge
    and a veth: ens224 alone is asked for its driver and then collected like a vNIC."""
    from types import SimpleNamespace
    from esxdiag.collectors import guest_linux
    links = ("1: lo: <LOOPBACK> mtu 65536 \\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
             "2: eth0: <UP> mtu 1500 \\    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff\n"
             "3: ens224: <UP> mtu 1500 \\    link/ether 0c:42:a1:3b:5e:20 brd ff:ff:ff:ff:ff:ff\n"
             "4: docker0: <UP> mtu 1500 \\    link/ether 02:42:ac:11:00:01 brd ff:ff:ff:ff:ff:ff\n"
             "5: vethab12@if4: <UP> mtu 1500 \\    link/ether 6e:1d:00:00:00:01 brd ff:ff:ff:ff:ff:ff\n"
             "6: br0: <UP> mtu 1500 \\    link/ether 6e:1d:00:00:00:02 brd ff:ff:ff:ff:ff:ff\n")
    outputs = {("ip_link", None): links, ("ethtool_permaddr", "eth0"): "Permanent address: 00:50:56:a6:55:f4\n",
               ("ethtool_driver", "ens224"): "driver: mlx5_core\nversion: 5.14\nbus-info: 0000:13:00.0\n",
               ("ethtool_driver", "br0"): "driver: bridge\nversion: 2.3\nbus-info: N/A\n"}
    ran = []

    def fake_run(conn, writer, target, spec, params=None, sample=None, **_):
        ran.append((spec, (params or {}).get("iface"), sample))
        text = outputs.get((spec, (params or {}).get("iface")), "")
        return SimpleNamespace(ok=True), text.encode()
    monkeypatch.setattr(guest_linux, "run_capture", fake_run)
    conn = SimpleNamespace(unavailable=set())
    guest = guest_linux.collect_linux(conn, None, "guest", ["00:50:56:a6:55:f4"], 0)
    assert guest.ifaces == ("eth0",) and guest.others == ("ens224",)
    asked = {iface for spec, iface, _ in ran if spec == "ethtool_driver"}
    assert asked == {"eth0", "ens224", "br0"}  # docker0 and the veth by name, never asked
    assert ("ethtool_stats", "ens224", 0) in ran and ("ethtool_rings", "ens224", None) in ran
    assert sum(1 for spec, iface, _ in ran if (spec, iface) == ("ethtool_driver", "ens224")) == 1
    ran.clear()
    guest_linux.collect_linux(conn, None, "guest", ["00:50:56:a6:55:f4"], 1, previous=guest)
    assert ("ethtool_stats", "ens224", 1) in ran and not any(spec == "ethtool_driver" for spec, _, _ in ran)


def test_coverage_says_when_a_read_capture_feeds_no_nic(tmp_path):
    import json
    import shutil
    root = tmp_path / "bundle"
    shutil.copytree(SITUATIONS / "sriov-mlx5-out-of-buffer", root)
    rel = "guest-iperf-test1/ethtool_driver@iface=br0.txt"
    (root / rel).write_text("driver: bridge\nversion: 2.3\nfirmware-version: N/A\nbus-info: N/A\n")
    manifest = json.loads((root / "manifest.json").read_text())
    template = next(c for c in manifest["captures"] if c["spec"] == "ethtool_driver")
    manifest["captures"].append({**template, "file": rel, "params": {"iface": "br0"}, "command": "ethtool -i br0"})
    (root / "manifest.json").write_text(json.dumps(manifest))
    doc = to_jsonable(analyze(root, dict(DEFAULT_THRESHOLDS)))
    br0 = next(c for c in doc["coverage"] if c.get("file") == rel)
    assert br0["status"] == "read" and "feeds no NIC" in br0["why"]
    assert all(n["guest_interface"] != "br0" for n in doc["vms"][0]["vnics"])


def test_windows_vf_with_a_vmware_mac_is_never_taken_for_vmxnet3_without_vcenter(tmp_path):
    """No vCenter inventory and no host port list: the guest's adapters are the list; a VF's MAC is from
    VMware's range too, its description says what it is."""
    import json
    import shutil
    root = tmp_path / "bundle"
    shutil.copytree(SITUATIONS / "windows-guest-only-vf-discards", root)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["captures"] = [c for c in manifest["captures"] if c["target"].startswith("guest")]
    manifest["targets"] = [t for t in manifest["targets"] if t["kind"] == "windows"]
    (root / "manifest.json").write_text(json.dumps(manifest))
    doc = to_jsonable(analyze(root, dict(DEFAULT_THRESHOLDS)))
    vf = nic_of(doc, "Ethernet1")
    assert vf["type"] == "guest-only" and vf["ring_verdict"] == "insufficient-evidence"
    assert not any("MaxRxRing" in c or "Rx Ring" in c for c in commands(vf["verdict"]))
