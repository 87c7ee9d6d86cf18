"""find_vm and collect_inventory against the vcsim lab built from tests/lab/scenarios.json."""

from __future__ import annotations

import json
import re

import pytest

from esxdiag.collectors.vsphere import collect_inventory, connect, find_vm
from esxdiag.collectors.vsphere_inventory import closest_names
from esxdiag.errors import CollectionError
from esxdiag.parsers.vsphere import parse_vm

pytestmark = pytest.mark.lab
ON_ESX0 = ("-host", "esx0.lab.local", "-ds", "LocalDS_0")  # two lab hosts, a datastore each: say where


@pytest.fixture(scope="module")
def extra_vms(vcsim_lab):
    """Two VMs named dup-vm in different folders and one powered-off VM, beside the scenarios."""
    vcsim_lab.govc("folder.create", "/DC0/vm/other")
    for folder in ("/DC0/vm", "/DC0/vm/other"):  # -force: both would use [LocalDS_0] dup-vm/dup-vm.vmx
        vcsim_lab.govc("vm.create", "-on=false", "-force", "-folder", folder, *ON_ESX0, "-net", "VM Network", "dup-vm")
    vcsim_lab.govc("vm.create", "-on=false", *ON_ESX0, "-c", "2", "-net", "VM Network", "-net.adapter", "vmxnet3",
                   "-net.address", "00:50:56:a6:0f:f0", "stopped-vm")
    return ["dup-vm", "stopped-vm"]


def test_find_by_name_moid_and_uuid_agree(session):
    by_name = find_vm(session, "iperf-cpu-limited")
    assert by_name.host_name == "esx0.lab.local"
    assert find_vm(session, by_name.moid) == by_name
    assert find_vm(session, by_name.instance_uuid.upper()) == by_name


def test_find_follows_continuation_tokens(session):
    before = session.request_count
    ref = find_vm(session, "legacy-e1000", page_size=2)
    assert ref.name == "legacy-e1000"
    # CreateContainerView + RetrievePropertiesEx + >= 3 ContinueRetrievePropertiesEx + DestroyView
    assert session.request_count - before >= 6


def test_ambiguous_name_lists_every_match(session, extra_vms):
    with pytest.raises(CollectionError) as err:
        find_vm(session, "dup-vm")
    assert err.value.kind == "ambiguous"
    message = str(err.value)
    assert "/DC0/vm/dup-vm (vm-" in message and "/DC0/vm/other/dup-vm (vm-" in message  # each one's folder
    assert "use the inventory path, a MOID or the instance UUID" in message
    assert find_vm(session, "/DC0/vm/other/dup-vm").path == "/DC0/vm/other/dup-vm"


def test_inventory_path_finds_the_vm_and_a_wrong_folder_does_not(session):
    by_path = find_vm(session, "/DC0/vm/iperf-test1")
    assert by_path == find_vm(session, "iperf-test1") and by_path.path == "/DC0/vm/iperf-test1"
    with pytest.raises(CollectionError) as err:
        find_vm(session, "/DC0/vm/nowhere/iperf-test1")
    assert err.value.kind == "not-found" and "close names: iperf-test1" in str(err.value)


def test_close_names_rank_look_alikes_first():
    names = [f"DC0_H0_VM{i}" for i in range(10)]
    assert closest_names("DC0_H0_VMO", names) == ["DC0_H0_VM0", "DC0_H0_VM1", "DC0_H0_VM2"]
    assert closest_names("dc0-h0-vm7", names)[0] == "DC0_H0_VM7"
    assert closest_names("iperf-tset1", ["iperf-test1", "iperf-test2", "app-healthy01"])[:2] == [
        "iperf-test1", "iperf-test2"]
    assert closest_names("zzzz", names) == []


def test_not_found_suggests_close_names(session):
    with pytest.raises(CollectionError) as err:
        find_vm(session, "iperf-tset1")
    assert err.value.kind == "not-found"
    assert "iperf-test1" in str(err.value)


def test_every_scenario_vm_inventory_matches_the_scenario(session, scenarios):
    for want in scenarios["vms"]:
        inv = collect_inventory(session, find_vm(session, want["name"]))
        assert parse_vm(json.dumps(inv)).name == want["name"]  # the analyzer can read it
        assert (inv["num_cpu"], inv["memory_mb"]) == (want["num_cpu"], want["memory_mb"])
        assert inv["cpu_allocation"]["limit_mhz"] == want["cpu_limit_mhz"]
        assert inv["power_state"] == "poweredOn"
        assert (inv["host"], inv["cluster"], inv["source"]) == (want["host"], "DC0_C0", "vcenter")
        assert isinstance(inv["host_cpu_mhz"], int) and inv["host_cpu_mhz"] > 0
        assert [(n["type"], n["mac"], n["network"]) for n in inv["vnics"]] == [
            (n["type"], n["mac"], "VM Network") for n in want["nics"]]
        guest = inv["guest"]
        assert (guest["guest_id"], guest["full_name"], guest["hostname"]) == (
            want["guest"]["guest_id"], want["guest"]["full_name"], want["guest"]["hostname"])
        assert guest["family"] == ("windowsGuest" if want["guest"]["os"] == "windows" else "linuxGuest")
        assert guest["ip_address"] == want["nics"][0]["ip"]
        assert (guest["tools_status"], guest["tools_running_status"]) == ("toolsOk", "guestToolsRunning")
        assert inv["guest_nics"][0]["mac"] == want["nics"][0]["mac"]
        assert inv["guest_nics"][0]["device_config_id"] == inv["vnics"][0]["device_key"]
        assert inv["missing"] == []
        assert re.fullmatch(r"vmx-\d+", inv["hardware_version"]) and inv["host_version"]


def test_scenario_vnics_carry_vcenter_labels_not_vcsim_device_names(session, scenarios):
    for want in scenarios["vms"]:
        inv = collect_inventory(session, find_vm(session, want["name"]))
        assert [n["label"] for n in inv["vnics"]] == [f"Network adapter {i}" for i in range(1, len(want["nics"]) + 1)]
        assert inv["guest_nics"][0]["ip_addresses"] == [want["nics"][0]["ip"]]  # relabelling kept the guest's IP


def test_lab_numbers_a_second_vnic_network_adapter_2(session, vcsim_lab, lab_module):
    vcsim_lab.govc("vm.create", "-on=false", *ON_ESX0, "-net", "VM Network", "-net.adapter", "vmxnet3",
                   "-net.address", "00:50:56:a6:0f:e0", "two-nics")
    vcsim_lab.govc("vm.network.add", "-vm", "two-nics", "-net", "VM Network", "-net.adapter", "e1000",
                   "-net.address", "00:50:56:a6:0f:e1")
    lab_module.label_vnics(vcsim_lab, ["two-nics"])
    inv = collect_inventory(session, find_vm(session, "two-nics"))
    assert [(n["label"], n["mac"]) for n in inv["vnics"]] == [("Network adapter 1", "00:50:56:a6:0f:e0"),
                                                              ("Network adapter 2", "00:50:56:a6:0f:e1")]


def test_cpu_limited_and_e1000_and_windows_cases(session, scenarios):
    def pick(predicate):
        (vm,) = [v for v in scenarios["vms"] if predicate(v)]
        return collect_inventory(session, find_vm(session, vm["name"])), vm

    limited, _ = pick(lambda v: v["cpu_limit_mhz"] is not None)
    allocation = limited["cpu_allocation"]
    assert (allocation["limit_mhz"], allocation["reservation_mhz"], allocation["shares_level"]) == (800, 0, "normal")
    assert isinstance(allocation["shares"], int)  # vcsim does not derive shares from the level
    e1000, _ = pick(lambda v: v["nics"][0]["type"] == "e1000")
    assert [n["type"] for n in e1000["vnics"]] == ["e1000"]
    windows, want = pick(lambda v: v["guest"]["os"] == "windows")
    assert windows["guest"]["guest_id"] == want["guest"]["guest_id"]
    assert windows["guest"]["guest_id"].startswith("windows")
    assert windows["guest"]["family"] == "windowsGuest"


def test_powered_off_vm_inventory(session, extra_vms):
    inv = collect_inventory(session, find_vm(session, "stopped-vm"))
    assert inv["power_state"] == "poweredOff"
    assert inv["num_cpu"] == 2
    assert [(n["type"], n["mac"]) for n in inv["vnics"]] == [("vmxnet3", "00:50:56:a6:0f:f0")]
    assert parse_vm(json.dumps(inv)).power_state == "poweredOff"


def test_latency_sensitivity_level_is_read(session, extra_vms, vcsim_lab):
    vcsim_lab.govc("vm.change", "-vm", "stopped-vm", "-latency", "high")
    inv = collect_inventory(session, find_vm(session, "stopped-vm"))
    assert inv["latency_sensitivity"] == "high"
    assert parse_vm(json.dumps(inv)).latency_sensitivity == "high"


def test_hardware_and_host_versions_are_read_in_the_inventory_request(session, vcsim_lab):
    """config.version and the host's ESXi version, as govc reads them, in the same single request."""
    vcsim_lab.govc("vm.create", "-on=false", *ON_ESX0, "-version", "8.0", "-net", "VM Network", "hw20-vm")
    find, inventory, inv = _requests_for(session, "hw20-vm")
    assert (find, inventory) == (3, 1)
    assert inv["hardware_version"] == "vmx-20"
    govc_version = vcsim_lab.govc("object.collect", "-s", f"HostSystem:{inv['host_moid']}",
                                  "summary.config.product.version").strip()
    assert govc_version and inv["host_version"] == govc_version
    parsed = parse_vm(json.dumps(inv))
    assert (parsed.hardware_version, parsed.host_version) == ("vmx-20", govc_version)


def _requests_for(session, name: str) -> tuple[int, int, dict]:
    start = session.request_count
    ref = find_vm(session, name)
    found = session.request_count
    inv = collect_inventory(session, ref)
    return found - start, session.request_count - found, inv


def test_request_count_does_not_grow_with_inventory_or_vnics(lab_module, lab_creds, tmp_path):
    """Same requests for a VM among 10 or 200 VMs, and for a VM with 1 or 3 vNICs."""
    counts = {}
    for total in (10, 200):
        lab = lab_module.start_vcsim(tmp_path / f"vms{total}", ("-cluster", "1", "-host", "1",
                                                              "-standalone-host", "0", "-vm", str(total)))
        try:
            if total == 10:
                for _ in range(2):
                    lab.govc("vm.network.add", "-vm", "DC0_C0_RP0_VM1", "-net", "VM Network",
                             "-net.adapter", "vmxnet3")
            session = connect(lab_creds(lab, insecure=True), timeout_s=10)
            try:
                for vm in ("DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1"):
                    find, inventory, inv = _requests_for(session, vm)
                    counts[(total, vm)] = (find, inventory, len(inv["vnics"]))
                    assert inv["hardware_version"] and inv["host_version"]  # read in that one request
            finally:
                session.close()
        finally:
            lab.stop()
    assert counts[(10, "DC0_C0_RP0_VM0")] == (3, 1, 1)
    assert counts[(10, "DC0_C0_RP0_VM1")] == (3, 1, 3)
    assert counts[(200, "DC0_C0_RP0_VM0")] == (3, 1, 1)


def test_dvs_backed_vnic_records_switch_and_portgroup(lab_module, lab_creds, tmp_path):
    lab = lab_module.start_vcsim(tmp_path / "dvs", ("-cluster", "1", "-host", "1", "-standalone-host", "0",
                                                   "-vm", "1"))
    try:
        session = connect(lab_creds(lab, insecure=True), timeout_s=10)
        try:
            inv = collect_inventory(session, find_vm(session, "DC0_C0_RP0_VM0"))
        finally:
            session.close()
    finally:
        lab.stop()
    (nic,) = inv["vnics"]
    assert nic["dvs_uuid"] and nic["dvs_portgroup_key"].startswith("dvportgroup-")
    assert nic["network"] == "DC0_DVPG0"


def test_vm_destroyed_after_lookup_is_not_found(session, vcsim_lab):
    vcsim_lab.govc("vm.create", "-on=false", *ON_ESX0, "-net", "VM Network", "short-lived-vm")
    ref = find_vm(session, "short-lived-vm")
    vcsim_lab.govc("vm.destroy", "short-lived-vm")
    with pytest.raises(CollectionError) as err:
        collect_inventory(session, ref)
    assert err.value.kind == "not-found"
    assert ref.moid in str(err.value)
