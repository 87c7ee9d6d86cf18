"""The kept copy's rules (collectors/fleet/updates.py) on update sets vcsim never sends (a nested or
keyed change, an add, a remove, a property gone missing, an object that never entered), pyVmomi's
UpdateSet read as plain values, and the vNICs a whole device list gives (read_vnics' rules)."""

from __future__ import annotations

from pyVmomi import vim, vmodl

from esxdiag.collectors.fleet import inventory
from esxdiag.collectors.fleet.fastdecode import Device
from esxdiag.collectors.fleet.updates import Kept, ObjectChange, plain_updates
from esxdiag.collectors.fleet.watch import WATCHED, vnics_from_devices
from esxdiag.collectors.soap_stream import Ref

VM = Ref(vim.VirtualMachine, "vm-1")
HOST = Ref(vim.HostSystem, "host-1")
_PC = vmodl.query.PropertyCollector


def kept_with_vm(**props) -> Kept:
    kept = Kept(WATCHED)
    assert kept.apply(ObjectChange("enter", VM, [(k.replace("__", "."), "assign", v) for k, v in props.items()], []))
    return kept


def test_enter_modify_leave():
    kept = kept_with_vm(name="a", runtime__powerState="poweredOn")
    assert kept.objects["vm-1"].props == {"name": "a", "runtime.powerState": "poweredOn"}
    assert kept.apply(ObjectChange("modify", VM, [("runtime.powerState", "assign", "poweredOff")], []))
    assert kept.objects["vm-1"].props["runtime.powerState"] == "poweredOff"
    assert kept.apply(ObjectChange("enter", VM, [("name", "assign", "b")], []))  # enter again: the whole state
    assert kept.objects["vm-1"].props == {"name": "b"}
    assert kept.apply(ObjectChange("leave", VM, [], []))
    assert kept.objects == {}


def test_an_assign_without_value_a_remove_and_an_indirect_remove_unset():
    kept = kept_with_vm(name="a", guest__ipAddress="10.0.0.1", guest__guestId="x", runtime__host=HOST)
    assert kept.apply(ObjectChange("modify", VM, [("guest.ipAddress", "assign", None),
                                                  ("guest.guestId", "remove", None),
                                                  ("runtime.host", "indirectRemove", None)], []))
    assert kept.objects["vm-1"].props == {"name": "a"}


def test_a_missing_property_is_recorded_and_a_later_value_clears_it():
    kept = kept_with_vm(name="a", guest__ipAddress="10.0.0.1")
    assert kept.apply(ObjectChange("modify", VM, [], [("guest.ipAddress", "NoPermission")]))
    entry = kept.objects["vm-1"]
    assert entry.props == {"name": "a"} and entry.missing == {"guest.ipAddress": "NoPermission"}
    assert kept.apply(ObjectChange("modify", VM, [("guest.ipAddress", "assign", "10.0.0.2")], []))
    assert kept.objects["vm-1"].missing == {} and kept.objects["vm-1"].props["guest.ipAddress"] == "10.0.0.2"


def test_what_cannot_be_applied_exactly_makes_the_object_stale():
    for change in (("config.hardware.device[4000]", "assign", Device(vim.vm.device.VirtualVmxnet3, 4000)),
                   ("config.hardware.device[4001]", "add", Device(vim.vm.device.VirtualVmxnet3, 4001)),
                   ("config.hardware.device[4000]", "remove", None),
                   ("config.hardware.device[4000].connectable.connected", "assign", False),
                   ("config", "assign", None),
                   ("config.hardware.device", "add", Device(vim.vm.device.VirtualVmxnet3, 4001))):
        kept = kept_with_vm(name="a")
        assert not kept.apply(ObjectChange("modify", VM, [("name", "assign", "b"), change], [])), change
        assert kept.objects["vm-1"].props["name"] == "b"  # what was exact is applied all the same
    assert not kept_with_vm().apply(ObjectChange("modify", VM, [], [("config.hardware.device[4000]", "x")]))
    assert not Kept(WATCHED).apply(ObjectChange("modify", VM, [("name", "assign", "b")], []))  # never entered


def test_a_place_watches_its_name_and_parent_only():
    kept = Kept(WATCHED)
    folder = Ref(vim.Folder, "group-1")
    assert kept.apply(ObjectChange("enter", HOST, [("name", "assign", "esx1"), ("parent", "assign", folder)], []))
    assert not kept.apply(ObjectChange("modify", HOST, [("runtime.powerState", "assign", "poweredOn")], []))


def test_read_again_replaces_the_whole_entry():
    kept = kept_with_vm(name="a", guest__ipAddress="10.0.0.1")
    kept.replace(VM, {"name": "b", "guest.ipAddress": None}, [{"path": "guest.guestId", "fault": "NoPermission"}])
    entry = kept.objects["vm-1"]
    assert entry.props == {"name": "b"} and entry.missing == {"guest.guestId": "NoPermission"}


def test_pyvmomi_update_set_as_plain_values():
    stub = None
    fault = vmodl.MethodFault(msg="no")
    result = _PC.UpdateSet(version="7", truncated=True, filterSet=[_PC.FilterUpdate(
        filter=_PC.Filter("filter-1", stub),
        objectSet=[_PC.ObjectUpdate(kind="modify", obj=vim.VirtualMachine("vm-1", stub),
                                    changeSet=[_PC.Change(name="runtime.host", op="assign",
                                                          val=vim.HostSystem("host-1", stub)),
                                               _PC.Change(name="guest.ipAddress", op="remove")],
                                    missingSet=[_PC.MissingProperty(path="guest.guestId", fault=fault)])],
        missingSet=[_PC.MissingObject(obj=vim.VirtualMachine("vm-2", stub), fault=fault)])])
    updates = plain_updates(result, "filter-1")
    assert updates.version == "7" and updates.truncated is True
    assert updates.objects == [ObjectChange("leave", Ref(vim.VirtualMachine, "vm-2"), [], []),
                               ObjectChange("modify", VM, [("runtime.host", "assign", HOST),
                                                           ("guest.ipAddress", "remove", None)],
                                            [("guest.guestId", "MethodFault: no")])]
    assert plain_updates(None, "filter-1") is None


NIC, DISK = vim.vm.device.VirtualVmxnet3, vim.vm.device.VirtualDisk


def nic(key: int) -> Device:
    return Device(NIC, key, f"Network adapter {key - 3999}", f"00:50:56:00:00:{key - 4000:02x}", "VM Network", True)


def test_the_vnics_of_a_device_list_follow_read_vnics_rules():
    plain = [Device(DISK, 2000), nic(4001), nic(4000)]
    assert vnics_from_devices(2, plain) == (inventory.vnics_of([nic(4000), nic(4001)]), False)  # keyed: key order
    assert vnics_from_devices(1, plain) == (inventory.vnics_of([nic(4000)]), False)  # 1 said: the keyed read of 4000
    assert vnics_from_devices(2, [nic(4000), Device(DISK, 4001)]) == (inventory.vnics_of([nic(4000)]), True)
    assert vnics_from_devices(0, plain) == ([], False)  # the count says none: none, as the keyed read
    assert vnics_from_devices(1, [nic(7000)]) == (inventory.vnics_of([nic(7000)]), True)  # off the usual keys
    assert vnics_from_devices(None, plain) == (inventory.vnics_of([nic(4001), nic(4000)]), True)
    assert vnics_from_devices(1, None) == (None, True)  # no device list given: no vNICs, as read_vnics
    many = [nic(4000 + i) for i in range(inventory.MAX_KEYED_NICS + 1)]
    assert vnics_from_devices(len(many), many) == (inventory.vnics_of(many), True)


def test_a_reconfigured_vm_is_read_again():
    kept = Kept(WATCHED, reread_on=("config.changeVersion",))
    assert kept.apply(ObjectChange("enter", VM, [("name", "assign", "a"), ("config.changeVersion", "assign", "1")], []))
    assert not kept.apply(ObjectChange("modify", VM, [("config.changeVersion", "assign", "2")], []))
    assert kept.objects["vm-1"].props["config.changeVersion"] == "2"
    assert kept.apply(ObjectChange("modify", VM, [("name", "assign", "b")], []))
