"""Issue 29 item 5: a DirectPath I/O NIC is in the VM inventory's vnics (type passthrough, no MAC); a GPU or
a vGPU passed through is not."""

from __future__ import annotations

from pyVmomi import vim

from esxdiag.collectors import vsphere_inventory as inventory
from esxdiag.parsers.vsphere import VnicConfig, build_record

Backing = vim.vm.device.VirtualPCIPassthrough


def _device(backing, key=13000):
    return vim.vm.device.VirtualPCIPassthrough(key=key, backing=backing,
                                               deviceInfo=vim.Description(label="PCI device 0", summary=""))


def test_directpath_nic_is_listed_as_passthrough_without_a_mac():
    dev = _device(Backing.DeviceBackingInfo(deviceName="MT28800 Family [ConnectX-5 Ex]", id="0000:3b:00.0",
                                            deviceId="1019", systemId="x", vendorId=0x15B3))
    assert inventory._is_passthrough_nic(dev)
    nic = inventory._passthrough_nic(dev)
    assert nic["type"] == "passthrough" and nic["mac"] is None and "ConnectX-5" in nic["label"]
    assert build_record(VnicConfig, nic, "vnics[1]").type == "passthrough"


def test_dynamic_directpath_nic_by_its_label_and_gpus_are_not_nics():
    assert inventory._is_passthrough_nic(_device(Backing.DynamicBackingInfo(customLabel="Intel E810 Ethernet")))
    assert not inventory._is_passthrough_nic(_device(Backing.DeviceBackingInfo(
        deviceName="GA100 [A100 PCIe 80GB]", id="0000:af:00.0", deviceId="20b5", systemId="x", vendorId=0x10DE)))
    assert not inventory._is_passthrough_nic(_device(Backing.VmiopBackingInfo(vgpu="grid_a100-4c")))
    assert not inventory._is_passthrough_nic(vim.vm.device.VirtualVmxnet3(key=4000))
