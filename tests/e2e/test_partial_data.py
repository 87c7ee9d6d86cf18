"""Verdicts on partial and damaged bundles (issue 6): what was collected is used, nothing is
invented, and a verdict never goes further than the data (docs/diagnosis.md §10)."""

from __future__ import annotations

import json
from pathlib import Path



def _host_and_inventory(hand, kit, vm="vm1", vnics=({},), **inv):
    hand.vms.append(vm)
    hand.target("vcenter", "vcenter")
    hand.add("vcenter", "vsphere_vm", kit.vsphere_vm(vm, list(vnics), **inv), {"vm": vm})
    return hand.host_port(vm)


def test_counter_reset_with_nothing_after_it_is_past_exhaustion(hand, kit):
    """Sample 0: 12,554 out-of-buffer drops; sample 1: 0 (the VM rebooted). The first reading proves
    exhaustion happened: past-exhaustion-only, naming the reset — never not-needed."""
    _host_and_inventory(hand, kit)
    hand.rx_window((12554, 7086), (0, 0))
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "past-exhaustion-only", nic["verdict"]["summary"]
    assert "reset" in nic["verdict"]["summary"] and "12,554" in nic["verdict"]["summary"]
    assert nic["metrics"]["host_out_of_buffers"]["reset"] is True


def _linux_guest(hand, kit, oob_start, oob_end, rx=256, vm="vm1", driver="vmxnet3"):
    guest = hand.target(f"guest-{vm}", "linux", vm)
    hand.add(guest, "ip_link", kit.ip_link())
    hand.add(guest, "ethtool_permaddr", f"Permanent address: {kit.MAC}\n", {"iface": "eth0"})
    hand.add(guest, "ethtool_driver", kit.ethtool_driver(driver), {"iface": "eth0"})
    hand.add(guest, "ethtool_rings", kit.ethtool_rings(rx), {"iface": "eth0"})
    for sample, oob in enumerate((oob_start, oob_end)):
        if oob is not None:
            hand.add(guest, "ethtool_stats", kit.ethtool_stats(oob), {"iface": "eth0"}, sample)
    return guest


def test_guest_only_linux_bundle_lists_the_vnic_and_gives_a_verdict(hand, kit):
    """No host, no vCenter: ethtool -S pkts rx OOB rising, ethtool -g 256 of 4096. The guest's OOB
    counter is the device's ring counter: raise-ring1, with CPU and the host view named as missing."""
    hand.vms.append("vm1")
    _linux_guest(hand, kit, [1000, 1200], [1800, 2100])
    proc, report = hand.analyze("--fail-on", "info")
    assert proc.returncode == 1, proc.stdout
    nic = kit.vnic(report)
    assert nic["mac"] == kit.MAC and nic["guest_interface"] == "eth0" and nic["type"] == "vmxnet3"
    assert nic["ring_verdict"] == "raise-ring1", nic["verdict"]["summary"]
    assert nic["metrics"]["guest_oob"]["delta"] == 1700
    assert "256 of 4,096" in nic["verdict"]["summary"]
    missing = " ".join(nic["verdict"]["missing"])
    assert "CPU" in missing and "host" in missing
    assert any("CPU was not measured" in e["what"] for e in nic["verdict"]["evidence_against"])
    text = hand.render("text").stdout
    assert "NO FINDINGS" not in text and "RAISE RX RING 1" in text


def test_a_ring_size_outside_32_to_4096_is_unknown_not_compared(hand, kit):
    """ethtool -g printing RX 0 (or 9999) is not a vmxnet3 ring size: never "the ring is 0 of 4,096"."""
    hand.vms.append("vm1")
    _linux_guest(hand, kit, [1000, 1200], [1800, 2100], rx=0)
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["metrics"]["ring1_size"] is None
    assert nic["ring_verdict"] == "raise-ring1" and "ring size is unknown" in nic["verdict"]["summary"]
    assert "0 of 4,096" not in nic["verdict"]["summary"]
    assert any("ring 1 size 0 " in n and "treated as unknown" in n for n in report["vms"][0]["notes"]
               + [f["summary"] for f in report["vms"][0]["findings"]]), report["vms"][0]


def test_guest_only_bundle_without_a_vm_name_in_the_manifest(hand, kit):
    guest = _linux_guest(hand, kit, [10, 10], [10, 10])
    hand.targets[guest]["vm"] = None
    _, report = hand.analyze()
    assert [vm["name"] for vm in report["vms"]] == [guest]
    assert kit.vnic(report)["ring_verdict"] == "past-exhaustion-only"


def test_guest_only_bundle_skips_interfaces_that_are_not_vmware_vnics(hand, kit):
    hand.vms.append("vm1")
    guest = _linux_guest(hand, kit, [0], [0])
    hand.add(guest, "ethtool_driver", kit.ethtool_driver("virtio_net", "1.0.0"), {"iface": "ens4"})
    _, report = hand.analyze()
    assert [n["guest_interface"] for n in report["vms"][0]["vnics"]] == ["eth0"]


WIN_ADAPTERS = ('"Name","InterfaceDescription","MacAddress","Status","LinkSpeed","MtuSize","DriverVersion"\n'
                '"Ethernet0","vmxnet3 Ethernet Adapter","00-50-56-A6-66-0E","Up","10 Gbps","1500","1.2.8.0"\n'
                '"Loopback","Microsoft KM-TEST Loopback Adapter","02-00-4C-4F-4F-50","Up","1.2 Gbps","1500","1.0"\n')


def _win_stats(discarded):
    return (f"Name                     : Ethernet0\nInterfaceDescription     : vmxnet3 Ethernet Adapter\n"
            f"ReceivedBytes            : 100539053416\nReceivedDiscardedPackets : {discarded}\n"
            "ReceivedUnicastPackets   : 66406049\nReceivedPacketErrors     : 0\n")


def test_guest_only_windows_bundle_lists_the_vmxnet3_adapter(hand, kit):
    hand.vms.append("win1")
    guest = hand.target("guest-win1", "windows", "win1")
    hand.add(guest, "win_netadapter", WIN_ADAPTERS)
    hand.add(guest, "win_cpu", "4\n")
    hand.add(guest, "win_stats", _win_stats(100), sample=0)
    hand.add(guest, "win_stats", _win_stats(5100), sample=1)
    proc, report = hand.analyze("--fail-on", "info")
    assert proc.returncode == 1
    vm = report["vms"][0]
    assert [n["guest_interface"] for n in vm["vnics"]] == ["Ethernet0"]
    nic = vm["vnics"][0]
    assert nic["type"] == "vmxnet3" and nic["mac"] == "00:50:56:a6:66:0e"
    assert nic["metrics"]["guest_discards"]["delta"] == 5000
    assert nic["ring_verdict"] != "not-needed"


def test_end_sample_cut_inside_the_last_queue_does_not_invent_a_reset(hand, kit):
    """ethtool -S at the window end lost its last rx queue (capture cut short): summing what is left
    would read as the counter going back (a reset) and report the end value as the delta."""
    _host_and_inventory(hand, kit)
    _linux_guest(hand, kit, [5000, 5170], [6000])
    _, report = hand.analyze()
    nic = kit.vnic(report)
    oob = nic["metrics"]["guest_oob"]
    assert oob["reset"] is False and oob["delta"] == 1000
    assert nic["ring_verdict"] == "raise-ring1"


def test_one_queue_going_back_while_the_others_rise_is_damage_not_a_reset(hand, kit):
    _host_and_inventory(hand, kit)
    _linux_guest(hand, kit, [5000, 5170], [6000, 62])
    _, report = hand.analyze()
    oob = kit.vnic(report)["metrics"]["guest_oob"]
    assert oob["reset"] is False and oob["delta"] == 1000


def test_a_damaged_middle_sample_is_not_a_reset(hand, kit):
    """Three rxSummary samples 1,000 / 37 / 3,000: the middle one is garbled (the counter came back
    above it), so the drops in the window are 2,000, not 37 + 2,963."""
    _host_and_inventory(hand, kit)
    for sample, oob in enumerate((1000, 37, 3000)):
        hand.add("esxi-esx0", "vsish_rxsummary", kit.rx_summary(oob, oob // 2),
                 {"portset": "vSwitch0", "port": kit.PORT}, sample)
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["metrics"]["host_out_of_buffers"]["delta"] == 2000
    assert nic["metrics"]["host_out_of_buffers"]["reset"] is False


def test_a_reset_between_samples_counts_the_drops_on_both_sides(hand, kit):
    _host_and_inventory(hand, kit)
    for sample, oob in enumerate((1000, 1500, 40)):
        hand.add("esxi-esx0", "vsish_rxsummary", kit.rx_summary(oob, oob // 2),
                 {"portset": "vSwitch0", "port": kit.PORT}, sample)
    _, report = hand.analyze()
    oob = kit.vnic(report)["metrics"]["host_out_of_buffers"]
    assert oob["reset"] is True and oob["delta"] == 540


# --- item 1: esxtop with only Group Cpu columns and no vCPU count ------------------------------

def _host_only(hand, kit, rx_start=(100, 50), rx_end=(2100, 1050), vm="vm1"):
    """net-stats -l, rxSummary over the window, no inventory and no guest: no vCPU count anywhere."""
    hand.vms.append(vm)
    host = hand.host_port(vm)
    hand.rx_window(rx_start, rx_end)
    return host


def test_group_cpu_only_esxtop_contended_vm_is_cpu_contention_first(hand, kit):
    """Group % Ready ~87 over 6 Members, no Vcpu columns, no vCPU count: 87 / 6 = 14.5 % per vCPU is a
    lower bound, and already contention. Today: CPU dropped, 'esxtop not collected', raise-ring1."""
    host = _host_only(hand, kit)
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [86.0, 88.0, 87.0], "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [0.0] * 3}, members=6))
    _, report = hand.analyze()
    vm = report["vms"][0]
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "cpu-contention-first", nic["verdict"]["summary"]
    assert "at least 14.5" in nic["verdict"]["summary"]
    assert vm["cpu"]["bound"] == "lower" and "Members" in vm["cpu"]["normalisation"]
    assert any("lower bound" in n for n in vm["notes"])
    assert not any("esxtop" in m and "CPU figures" in m for m in nic["verdict"]["missing"])
    contention = next(f for f in vm["findings"] if f["rule"] == "cpu-contention")
    assert contention["severity"] == "critical" and "lower bound" in contention["summary"]


def test_group_cpu_only_bounds_that_straddle_the_threshold_give_no_ring_raise(hand, kit):
    """Group % Ready 40 over 6 Members: per vCPU between 6.7 % (40 / 6) and 40 % (one vCPU). Contention
    can be neither confirmed nor ruled out: insufficient evidence naming the vCPU count, no raise."""
    host = _host_only(hand, kit)
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [40.0] * 3, "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [0.0] * 3}, members=6))
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "insufficient-evidence", nic["verdict"]["summary"]
    assert "between 6.67% and 40.00%" in nic["verdict"]["summary"]
    assert any("vCPU count" in m for m in nic["verdict"]["missing"])
    assert not nic["verdict"]["remediation"]


def test_group_cpu_only_healthy_even_as_one_vcpu_raises_the_ring(hand, kit):
    host = _host_only(hand, kit)
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [3.0] * 3, "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [0.0] * 3}, members=6))
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "raise-ring1" and "CPU is healthy" in nic["verdict"]["summary"]


def test_group_cpu_only_limited_vm_is_cpu_limit_first(hand, kit):
    host = _host_only(hand, kit)
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [70.0] * 3, "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [69.0] * 3}, members=6))
    _, report = hand.analyze()
    assert kit.vnic(report)["ring_verdict"] == "cpu-limit-first"


def test_vcpu_worlds_give_the_exact_count(hand, kit):
    host = _host_only(hand, kit)
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [30.0] * 3, "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [0.0] * 3}, members=6, vcpus=2))
    _, report = hand.analyze()
    vm = report["vms"][0]
    assert vm["vcpus"] == 2 and vm["cpu"]["bound"] == "exact"
    assert kit.vnic(report)["ring_verdict"] == "cpu-contention-first"  # 15 % per vCPU


# --- item 4: NaN / inf in esxtop CPU cells ---------------------------------------------------------

def test_non_finite_cpu_cells_are_dropped_not_compared(hand, kit):
    """%MLMTD NaN in some samples, 60 in the others: the NaN are not data; the rest says limited."""
    host = _host_only(hand, kit)
    text = kit.esxtop("vm1", {"% Ready": [61.0] * 3, "% CoStop": [0.0] * 3, "% Max Limited": [60.0] * 3},
                      members=6, vcpus=1)
    lines = text.splitlines()
    lines[1] = lines[1].replace('"60.00"', '"nan"')
    lines[2] = lines[2].replace('"60.00"', '"inf"')
    hand.add(host, "esxtop_batch", "\n".join(lines) + "\n")
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "cpu-limit-first", nic["verdict"]["summary"]
    # the parser drops them with a warning tied to the capture; the CPU facts never see them
    warnings = [w for item in report["coverage"] if item["spec"] == "esxtop_batch" for w in item.get("warnings", ())]
    assert any("non-finite" in w and "% Max Limited" in w for w in warnings), report["coverage"]


def test_all_cpu_cells_non_finite_is_not_measured(hand, kit):
    host = _host_only(hand, kit)
    nan = [float("nan")] * 3
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": nan, "% CoStop": nan, "% Max Limited": nan},
                                              members=6, vcpus=2))
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "raise-ring1"
    assert "CPU is not measured" in nic["verdict"]["summary"]
    def refuse(constant):
        raise AssertionError(f"report.json is not strict JSON: {constant}")

    json.loads(hand.render("json").stdout, parse_constant=refuse)


# --- item 7: drops seen at the vSwitch port without ring counters ----------------------------------

def _esxtop_port_only(hand, kit, ready, drops, vcpus=2, limited=0.0):
    hand.vms.append("vm1")
    host = hand.host_port("vm1")
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [ready] * 3, "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [limited] * 3},
                                              members=6, vcpus=vcpus, port_drops=drops))


def test_esxtop_port_drops_with_contention_is_cpu_contention_first(hand, kit):
    _esxtop_port_only(hand, kit, ready=60.0, drops=[0.0, 2.5, 4.0])  # 30 % per vCPU
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "cpu-contention-first", nic["verdict"]["summary"]
    assert any("%DRPRX" in e["what"] and e["observed"] == 4.0 for e in nic["verdict"]["evidence"])


def test_esxtop_port_drops_with_a_limit_is_cpu_limit_first(hand, kit):
    _esxtop_port_only(hand, kit, ready=60.0, drops=[1.0, 2.5, 4.0], limited=58.0)
    _, report = hand.analyze()
    assert kit.vnic(report)["ring_verdict"] == "cpu-limit-first"


def test_esxtop_port_drops_with_healthy_cpu_says_what_to_collect(hand, kit):
    _esxtop_port_only(hand, kit, ready=1.0, drops=[0.0, 2.5, 4.0])
    proc, report = hand.analyze("--fail-on", "warning")
    assert proc.returncode == 1  # the port-drops finding
    nic = kit.vnic(report)
    summary = nic["verdict"]["summary"]
    assert nic["ring_verdict"] == "insufficient-evidence"
    assert "ring exhaustion is likely" in summary and "CPU is healthy" in summary
    assert f"vsish -e get /net/portsets/vSwitch0/ports/{kit.PORT}/vmxnet3/rxSummary" in summary
    assert "ethtool -S" in summary
    assert "no ring or drop counters were collected" not in summary.lower()


def test_esxtop_port_drops_flat_is_not_needed(hand, kit):
    _esxtop_port_only(hand, kit, ready=1.0, drops=[0.0, 0.0, 0.0])
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "not-needed" and "%DRPRX" in nic["verdict"]["summary"]


def _vcenter_only(hand, kit, ready_ms, dropped, limited_ms=0, limit=None):
    """What `esxdiag rings --no-host-ssh --no-guest` collects: inventory + per-vCPU CPU and per-vNIC
    droppedRx/packetsRx from vCenter (realtime, 20 s samples)."""
    hand.vms.append("vm1")
    hand.target("vcenter", "vcenter")
    hand.add("vcenter", "vsphere_vm", kit.vsphere_vm("vm1", [{}], num_cpu=2, limit=limit), {"vm": "vm1"})
    series = {}
    for vcpu in ("0", "1"):
        series[("cpu.ready.summation", vcpu)] = [ready_ms] * 3
        series[("cpu.costop.summation", vcpu)] = [0] * 3
        series[("cpu.maxlimited.summation", vcpu)] = [limited_ms] * 3
    series[("net.droppedRx.summation", "4000")] = dropped
    series[("net.packetsRx.summation", "4000")] = [200000] * 3
    hand.add("vcenter", "vsphere_perf", kit.vsphere_perf("vm1", series), {"vm": "vm1"})


def test_vcenter_only_drops_with_ready_is_cpu_contention_first(hand, kit):
    _vcenter_only(hand, kit, ready_ms=4000, dropped=[0, 120, 340])  # 20 % per vCPU
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "cpu-contention-first", nic["verdict"]["summary"]
    assert any("net.droppedRx" in e["what"] and e["observed"] == 460 for e in nic["verdict"]["evidence"])


def test_vcenter_only_drops_with_limit_is_cpu_limit_first(hand, kit):
    _vcenter_only(hand, kit, ready_ms=4000, limited_ms=3900, dropped=[10, 120, 340], limit=800)
    _, report = hand.analyze()
    assert kit.vnic(report)["ring_verdict"] == "cpu-limit-first"


def test_vcenter_only_drops_with_healthy_cpu_is_insufficient_with_what_to_collect(hand, kit):
    _vcenter_only(hand, kit, ready_ms=100, dropped=[0, 120, 340])
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "insufficient-evidence"
    summary = nic["verdict"]["summary"]
    assert "net.droppedRx" in summary and "ring exhaustion is likely" in summary and "rxSummary" in summary
    assert "no ring or drop counters were collected" not in summary.lower()
    evidence = next(e for e in nic["verdict"]["evidence"] if "net.droppedRx" in e["what"])
    assert "per 1,000 received" in evidence["unit"]


def test_vcenter_only_without_drops_is_not_needed(hand, kit):
    _vcenter_only(hand, kit, ready_ms=100, dropped=[0, 0, 0])
    _, report = hand.analyze()
    assert kit.vnic(report)["ring_verdict"] == "not-needed"


# --- item 17: one escaping path for every terminal output -------------------------------------------

def test_hostile_names_never_reach_the_terminal_raw(hand, kit):
    """vNIC label, type, CPU source (vCenter rollup), VM name: ESC, BEL, C1 CSI and a direction override
    are shown as escapes by --format rings and text alike."""
    hostile = "eth\x1b[2J\x07\x9b31m\u202ekcatta"
    vm = f"vm{hostile}"
    hand.vms.append(vm)
    hand.target("vcenter", "vcenter")
    hand.add("vcenter", "vsphere_vm", kit.vsphere_vm(vm, [{"label": hostile, "type": f"vmxnet3{hostile}"}]),
             {"vm": "vm1"})
    perf = json.loads(kit.vsphere_perf(vm, {("cpu.ready.summation", "0"): [100] * 3,
                                            ("net.droppedRx.summation", "4000"): [0, 5, 9]}))
    perf["rollup"] = f"realtime{hostile}"
    hand.add("vcenter", "vsphere_perf", json.dumps(perf), {"vm": "vm1"})
    for fmt in ("rings", "text"):
        proc = hand.render(fmt)
        assert proc.returncode == 0, proc.stderr
        raw = [c for c in proc.stdout if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c == "\u202e")]
        assert not raw, (fmt, raw)
        assert "\\x1b[2J\\x07\\x9b31m\\u202e" in proc.stdout, fmt


def test_e1000_terminal_summary_prints_the_change_and_its_cost():
    import subprocess
    import sys
    from pathlib import Path

    bundle = Path(__file__).resolve().parents[2] / "examples" / "e1000-adapter"
    proc = subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(bundle), "--format", "text"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Set-NetworkAdapter -Type Vmxnet3" in proc.stdout
    assert "remedy (vsphere): Change Network adapter 1 (00:50:56:a6:e1:00) from e1000 to vmxnet3" in proc.stdout
    assert "powered off" in proc.stdout
    assert "MAC" in proc.stdout


def test_latency_sensitivity_from_the_inventory_reaches_the_verdict(hand, kit):
    _host_and_inventory(hand, kit, latency="high")
    hand.rx_window((100, 50), (2100, 1050))
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "raise-ring1"
    assert "may be deliberate" in nic["verdict"]["summary"] and "rx 512" in nic["verdict"]["summary"]


def test_terminal_outputs_say_the_cpu_figure_is_a_bound(hand, kit):
    host = _host_only(hand, kit)
    hand.add(host, "esxtop_batch", kit.esxtop("vm1", {"% Ready": [87.0] * 3, "% CoStop": [0.0] * 3,
                                                     "% Max Limited": [0.0] * 3}, members=6))
    for fmt in ("rings", "text"):
        assert "(esxtop, lower bound)" in hand.render(fmt).stdout, fmt


def test_a_guest_that_names_no_vm_joins_the_vm_with_its_mac(hand, kit):
    """Host port list with two VMs, one guest target without `vm`: the guest's permanent MAC says whose
    guest it is."""
    host = hand.target("esxi-esx0", "esxi")
    hand.add(host, "net_stats_list", "PortNum Type SubType SwitchName MACAddress ClientName\n"
                                     f"{kit.PORT} 5 9 vSwitch0 {kit.MAC} vm1\n"
                                     f"{kit.PORT + 1} 5 9 vSwitch0 00:50:56:a6:00:02 vm2\n")
    guest = _linux_guest(hand, kit, [100, 100], [900, 900])
    hand.targets[guest]["vm"] = None
    _, report = hand.analyze()
    assert sorted(vm["name"] for vm in report["vms"]) == ["vm1", "vm2"]
    nic = kit.vnic(report, "vm1")
    assert nic["guest_interface"] == "eth0" and nic["metrics"]["guest_oob"]["delta"] == 1600


def test_guest_counter_reset_on_every_queue_is_past_exhaustion(hand, kit):
    """ethtool -S pkts rx OOB 12,554 on queue 0 and 0 on queue 1, then 0 / 0 after a reboot: a reset
    (no queue rose), so the first reading proves exhaustion."""
    _host_and_inventory(hand, kit)
    _linux_guest(hand, kit, [12554, 0], [0, 0])
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "past-exhaustion-only", nic["verdict"]["summary"]
    assert "12,554 before the reset" in nic["verdict"]["summary"]


def test_vcenter_drop_series_of_only_gaps_is_not_a_zero(hand, kit):
    """QueryPerf left every droppedRx sample empty (vcsim drops zero values; a real vCenter returns -1 for
    a missing sample): that is no measurement, not 'no drops'."""
    _vcenter_only(hand, kit, ready_ms=100, dropped=[None, None, None])
    _, report = hand.analyze()
    nic = kit.vnic(report)
    assert nic["ring_verdict"] == "insufficient-evidence"
    assert "stayed 0" not in nic["verdict"]["summary"]


def test_windows_guest_with_a_default_table_no_mac_and_display_names_only(hand, kit):
    """Issue 19 point 3: the captures a user pastes without Format-List * still give the ring sizes."""
    real = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
    hand.vms.append("win1")
    host = hand.host_port("win1", mac="00:50:56:a6:66:0e")
    guest = hand.target("guest-win1", "windows", "win1")
    hand.add(guest, "win_netadapter", (real / "win_netadapter_fl_no_mac.txt").read_bytes())
    hand.add(guest, "win_advprops", (real / "win_advprops_fl_displayname_only.txt").read_bytes())
    hand.add(guest, "win_cpu", "4\n")
    hand.add(guest, "win_stats", _win_stats(100), sample=0)
    hand.add(guest, "win_stats", _win_stats(5100), sample=1)
    assert host
    _, report = hand.analyze()
    nic = report["vms"][0]["vnics"][0]
    assert nic["guest_interface"] == "Ethernet0" and nic["metrics"]["guest_discards"]["delta"] == 5000
    assert (nic["metrics"]["ring1_size"], nic["metrics"]["ring2_size"]) == (1024, 64)
    notes = " ".join(report["vms"][0]["notes"] + [n for v in report["vms"][0]["vnics"] for n in v.get("notes", [])])
    statuses = {c["spec"]: c["status"] for c in report["coverage"] if c["spec"] in ("win_netadapter", "win_advprops")}
    assert statuses == {"win_netadapter": "partial", "win_advprops": "partial"}, (statuses, notes)
