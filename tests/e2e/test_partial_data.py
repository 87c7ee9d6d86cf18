"""Verdicts on partial and damaged bundles (issue 6): what was collected is used, nothing is
invented, and a verdict never goes further than the data (shared/domain.md section 6)."""

from __future__ import annotations



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
    assert "256 of 4096" in nic["verdict"]["summary"]
    missing = " ".join(nic["verdict"]["missing"])
    assert "CPU" in missing and "host" in missing
    assert any("CPU was not measured" in e["what"] for e in nic["verdict"]["evidence_against"])
    text = hand.render("text").stdout
    assert "NO FINDINGS" not in text and "RAISE RX RING 1" in text


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
