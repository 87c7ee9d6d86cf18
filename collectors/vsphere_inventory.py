"""Find one VM and capture its inventory (``vsphere_vm``) in a fixed number of requests.

find_vm: CreateContainerView + one paged RetrievePropertiesEx (VM name, instance UUID, host;
host names) + DestroyView. collect_inventory: one RetrievePropertiesEx over the VM, its
networks and its resource pool chain with each pool's CPU limit (traversed from the VM) and its
host plus the host's parent (traversed from the host), with an explicit path set per type (the VM's
hardware version and the host's ESXi version among them); the request count does not depend on the
inventory size, the number of vNICs or the depth of the pools. The record layout is documented in
esxdiag.collectors.vsphere.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pyVmomi import vim, vmodl

from esxdiag.collectors.vsphere_session import VsphereSession, api_errors, fault_text, props_of, retrieve
from esxdiag.errors import CollectionError

SCHEMA_VM = "esxdiag.vsphere_vm/1"
_MOID = re.compile(r"vm-\d+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PS = vmodl.query.PropertyCollector
_VM_PATHS = [
    "name", "config.instanceUuid", "runtime.powerState", "runtime.host", "config.hardware.numCPU",
    "config.hardware.numCoresPerSocket", "config.hardware.memoryMB", "config.cpuAllocation",
    "config.guestId", "config.guestFullName", "config.hardware.device", "guest.guestId",
    "guest.guestFullName", "guest.guestFamily", "guest.toolsStatus", "guest.toolsRunningStatus",
    "guest.hostName", "guest.ipAddress", "guest.net", "config.latencySensitivity", "config.version",
    "resourcePool",
]
_HOST_PATHS = ["name", "summary.hardware.cpuMhz", "summary.config.product.version", "parent"]
NIC_TYPES: dict[type, str] = {
    vim.vm.device.VirtualVmxnet3: "vmxnet3", vim.vm.device.VirtualE1000: "e1000",
    vim.vm.device.VirtualE1000e: "e1000e", vim.vm.device.VirtualVmxnet2: "vmxnet2",
    vim.vm.device.VirtualVmxnet: "vmxnet", vim.vm.device.VirtualPCNet32: "pcnet32",
    vim.vm.device.VirtualSriovEthernetCard: "sriov",
}


@dataclass(frozen=True)
class VmRef:
    name: str
    moid: str
    instance_uuid: str | None
    host_moid: str | None
    host_name: str | None
    obj: Any = field(repr=False, compare=False)  # vim.VirtualMachine bound to the session's stub
    path: str | None = None  # inventory path, as govc shows it: /DC/vm/folder/name


def find_vm(session: VsphereSession, ref: str, *, page_size: int | None = None) -> VmRef:
    """A VM by name, inventory path (/DC/vm/folder/name), MOID (vm-123) or instance UUID;
    CollectionError(kind=ambiguous|not-found)."""
    with api_errors(session, f"looking up VM {ref!r}"):
        vms = _all_vms(session, page_size)
    matches = _match(vms, ref)
    if len(matches) == 1:
        return matches[0]
    where = session.where
    if matches:
        listed = "; ".join(f"{m.path or m.name} ({m.moid} on {m.host_name or m.host_moid})" for m in matches)
        raise CollectionError(f"{where}: VM name {ref!r} is ambiguous: {listed}; use the inventory path, a MOID "
                              "or the instance UUID", kind="ambiguous")
    key = ref.rsplit("/", 1)[-1] if ref.startswith("/") else ref
    close = closest_names(key, [v.name for v in vms])
    hint = f"; close names: {', '.join(close)}" if close else ""
    raise CollectionError(f"{where}: no VM {ref!r} among {len(vms)} VMs{hint}", kind="not-found")


_LOOKALIKE = str.maketrans({"o": "0", "l": "1", "i": "1", "s": "5", "z": "2", "_": "-", " ": "-", ".": "-"})


def closest_names(wanted: str, names: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` names most like ``wanted``, best first: case and look-alike characters (O/0,
    l/1, _/-) count as near-misses, then plain similarity, then the name itself breaks ties."""
    def folded(text: str) -> str:
        return text.lower().translate(_LOOKALIKE)

    def score(name: str) -> tuple[float, float, float]:
        return (difflib.SequenceMatcher(None, folded(wanted), folded(name)).ratio(),
                difflib.SequenceMatcher(None, wanted.lower(), name.lower()).ratio(),
                difflib.SequenceMatcher(None, wanted, name).ratio())

    scored = sorted(((score(name), name) for name in set(names)), key=lambda item: (-item[0][0], -item[0][1],
                                                                                    -item[0][2], item[1]))
    return [name for s, name in scored if s[0] >= cutoff][:n]


def _all_vms(session: VsphereSession, page_size: int | None) -> list[VmRef]:
    content = session.content
    types = [vim.VirtualMachine, vim.HostSystem, vim.Folder, vim.Datacenter]
    view = content.viewManager.CreateContainerView(content.rootFolder, types, True)
    try:
        spec = _PS.FilterSpec(
            objectSet=[_PS.ObjectSpec(obj=view, skip=True, selectSet=[
                _PS.TraversalSpec(name="view", type=vim.view.ContainerView, path="view", skip=False)])],
            propSet=[_PS.PropertySpec(type=vim.VirtualMachine,
                                      pathSet=["name", "config.instanceUuid", "runtime.host", "parent"]),
                     _PS.PropertySpec(type=vim.HostSystem, pathSet=["name"]),
                     _PS.PropertySpec(type=vim.Folder, pathSet=["name", "parent"]),
                     _PS.PropertySpec(type=vim.Datacenter, pathSet=["name", "parent"])])
        rows = [(c.obj, props_of(c)) for c in retrieve(session, [spec], page_size)]
    finally:
        view.DestroyView()
    hosts = {obj._moId: p.get("name") for obj, p in rows if isinstance(obj, vim.HostSystem)}
    folders = {obj._moId: p for obj, p in rows if isinstance(obj, (vim.Folder, vim.Datacenter))}
    return [_vm_ref(obj, p, hosts, _path(p, folders, content.rootFolder._moId))
            for obj, p in rows if isinstance(obj, vim.VirtualMachine)]


def _path(props: dict, folders: dict[str, dict], root: str) -> str | None:
    """/DC/vm/folder/name from the parent chain (the root folder is not part of a path)."""
    names = [props.get("name", "")]
    parent = props.get("parent")
    for _ in range(64):  # deeper than any real inventory; a loop in crafted data ends here
        if parent is None or parent._moId == root:
            return "/" + "/".join(reversed(names))
        above = folders.get(parent._moId)
        if above is None:  # a parent we may not read (permissions): no path rather than a wrong one
            return None
        names.append(above.get("name", ""))
        parent = above.get("parent")
    return None


def collect_inventory(session: VsphereSession, vm_ref: VmRef) -> dict:
    """The ``vsphere_vm`` capture for one VM (schema in esxdiag.collectors.vsphere)."""
    with api_errors(session, f"reading VM {vm_ref.name} ({vm_ref.moid})"):
        return _inventory(session, vm_ref)


def _inventory(session: VsphereSession, vm_ref: VmRef) -> dict:
    objects, networks, missing = _fetch(session, vm_ref.obj, vm_ref.host_moid)
    vm = objects.get(vm_ref.moid)
    if vm is None:
        raise CollectionError(f"{session.where}: VM {vm_ref.name} ({vm_ref.moid}) no longer exists",
                              kind="not-found")
    host_mor = vm.get("runtime.host")
    if host_mor is not None and host_mor._moId not in objects:  # moved since find_vm
        objects, networks, missing = _fetch(session, vm_ref.obj, host_mor._moId)
        vm = objects.get(vm_ref.moid, vm)
    host = objects.get(host_mor._moId, {}) if host_mor is not None else {}
    parent = host.get("parent")
    cluster = objects.get(parent._moId, {}) if isinstance(parent, vim.ClusterComputeResource) else {}
    alloc = vm.get("config.cpuAllocation")
    guest_net = vm.get("guest.net") or []
    return {
        "schema": SCHEMA_VM,
        "collected_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": session.source,
        "name": vm.get("name"),
        "moid": vm_ref.moid,
        "instance_uuid": vm.get("config.instanceUuid"),
        "power_state": str(vm.get("runtime.powerState")) if vm.get("runtime.powerState") else None,
        "host": host.get("name"),
        "host_moid": host_mor._moId if host_mor is not None else None,
        "host_cpu_mhz": host.get("summary.hardware.cpuMhz"),
        "cluster": cluster.get("name"),
        "num_cpu": vm.get("config.hardware.numCPU"),
        "cores_per_socket": vm.get("config.hardware.numCoresPerSocket"),
        "memory_mb": vm.get("config.hardware.memoryMB"),
        "cpu_allocation": _allocation(alloc),
        "guest": _guest(vm, guest_net),
        "vnics": [_vnic(dev, networks) for dev in vm.get("config.hardware.device") or []
                  if isinstance(dev, vim.vm.device.VirtualEthernetCard)]
        + [_passthrough_nic(dev) for dev in vm.get("config.hardware.device") or [] if _is_passthrough_nic(dev)],
        "guest_nics": [{"mac": (n.macAddress or "").lower() or None, "network": n.network,
                        "ip_addresses": list(n.ipAddress or []), "connected": n.connected,
                        "device_config_id": n.deviceConfigId} for n in guest_net],
        "missing": missing,
        "latency_sensitivity": _latency_level(vm.get("config.latencySensitivity")),
        "hardware_version": vm.get("config.version") or None,
        "host_version": host.get("summary.config.product.version") or None,
        "resource_pools": resource_pools(vm, objects, session.content.rootFolder._moId),
    }


def _latency_level(setting: Any) -> str | None:
    """config.latencySensitivity.level (low, normal, medium, high, custom), or None when not set."""
    level = getattr(setting, "level", None)
    return str(level) if level else None


def _fetch(session: VsphereSession, vm_obj: Any, host_moid: str | None) -> tuple[dict, dict, list[dict]]:
    """One RetrievePropertiesEx: VM + its networks, host + its parent.

    Returns (every object, the network objects, missing), objects as moid -> {path: value}.
    """
    object_set = [_PS.ObjectSpec(obj=vm_obj, skip=False, selectSet=[
        _PS.TraversalSpec(name="vmNetworks", type=vim.VirtualMachine, path="network", skip=False),
        *_POOL_CHAIN])]
    if host_moid:
        host = vim.HostSystem(host_moid, session.si._stub)
        object_set.append(_PS.ObjectSpec(obj=host, skip=False, selectSet=[
            _PS.TraversalSpec(name="hostParent", type=vim.HostSystem, path="parent", skip=False)]))
    spec = _PS.FilterSpec(objectSet=object_set, propSet=[
        _PS.PropertySpec(type=vim.VirtualMachine, pathSet=_VM_PATHS),
        _PS.PropertySpec(type=vim.HostSystem, pathSet=_HOST_PATHS),
        _PS.PropertySpec(type=vim.ComputeResource, pathSet=["name", "parent"]),
        _PS.PropertySpec(type=vim.ResourcePool, pathSet=["name", "parent", "config.cpuAllocation.limit"]),
        _PS.PropertySpec(type=vim.Folder, pathSet=["name", "parent"]),
        _PS.PropertySpec(type=vim.Datacenter, pathSet=["name", "parent"]),
        _PS.PropertySpec(type=vim.Network, pathSet=["name"]),
        _PS.PropertySpec(type=vim.dvs.DistributedVirtualPortgroup, pathSet=["name", "key"]),
    ])
    objects: dict[str, dict] = {}
    networks: dict[str, dict] = {}
    missing: list[dict] = []
    for content in retrieve(session, [spec]):
        props = objects.setdefault(content.obj._moId, {})
        props.update(props_of(content))
        if isinstance(content.obj, vim.Network):
            networks[content.obj._moId] = props
        missing += [{"path": f"{content.obj._moId}:{m.path}", "fault": fault_text(m.fault)}
                    for m in content.missingSet or []]
    return objects, networks, missing


# VM -> its resource pool -> each parent pool -> the compute resource -> its folders and datacenter: the pool
# chain with every name its inventory path needs, in the same request (types decide which spec applies where)
_POOL_CHAIN = [
    _PS.TraversalSpec(name="vmPool", type=vim.VirtualMachine, path="resourcePool", skip=False,
                      selectSet=[_PS.SelectionSpec(name="poolParent")]),
    _PS.TraversalSpec(name="poolParent", type=vim.ResourcePool, path="parent", skip=False,
                      selectSet=[_PS.SelectionSpec(name="poolParent"), _PS.SelectionSpec(name="computeParent")]),
    _PS.TraversalSpec(name="computeParent", type=vim.ComputeResource, path="parent", skip=False,
                      selectSet=[_PS.SelectionSpec(name="folderParent")]),
    _PS.TraversalSpec(name="folderParent", type=vim.Folder, path="parent", skip=False,
                      selectSet=[_PS.SelectionSpec(name="folderParent"),
                                 _PS.SelectionSpec(name="datacenterParent")]),
    _PS.TraversalSpec(name="datacenterParent", type=vim.Datacenter, path="parent", skip=False,
                      selectSet=[_PS.SelectionSpec(name="folderParent")]),
]


def resource_pools(vm: dict, objects: dict[str, dict], root: str | None) -> list[dict] | None:
    """The VM's resource pool, then each parent pool up to the root pool, with inventory paths
    (/DC/host/cluster/Resources/pool). None when the VM's pool was not read (no permission, a template)."""
    pool = vm.get("resourcePool")
    chain = []
    for _ in range(64):  # deeper than any real inventory; a loop in crafted data ends here
        if not isinstance(pool, vim.ResourcePool) or pool._moId not in objects:
            break
        props = objects[pool._moId]
        parent = props.get("parent")
        limit = props.get("config.cpuAllocation.limit")
        chain.append({"name": props.get("name") or pool._moId, "moid": pool._moId,
                      "kind": "vapp" if isinstance(pool, vim.VirtualApp) else "pool",
                      "cpu_limit_mhz": None if limit is None or limit < 0 else int(limit),
                      "root": not isinstance(parent, vim.ResourcePool), "parent": parent})
        pool = parent
    if not chain:
        return None
    above = _inventory_path(chain[-1]["parent"], objects, root)
    for entry in reversed(chain):
        above = f"{above}/{entry['name']}" if above is not None else None
        entry["path"] = above
        del entry["parent"]
    return chain


def _inventory_path(obj: Any, objects: dict[str, dict], root: str | None) -> str | None:
    """/DC/host/cluster for a compute resource from its parents' names, or None when one was not read."""
    names: list[str] = []
    for _ in range(64):
        if obj is None or obj._moId == root:
            return "/" + "/".join(reversed(names)) if names else None
        props = objects.get(obj._moId)
        if props is None or "name" not in props:
            return None
        names.append(props["name"])
        obj = props.get("parent")
    return None


def _vm_ref(obj: Any, props: dict, hosts: dict[str, str | None], path: str | None = None) -> VmRef:
    host = props.get("runtime.host")
    host_moid = host._moId if host is not None else None
    return VmRef(props.get("name", ""), obj._moId, props.get("config.instanceUuid"), host_moid,
                 hosts.get(host_moid) if host_moid else None, obj, path)


def _match(vms: list[VmRef], ref: str) -> list[VmRef]:
    if ref.startswith("/"):
        return [v for v in vms if v.path == ref.rstrip("/")]
    if _MOID.fullmatch(ref):
        return [v for v in vms if v.moid == ref]
    if _UUID.fullmatch(ref):
        return [v for v in vms if (v.instance_uuid or "").lower() == ref.lower()]
    return [v for v in vms if v.name == ref]


def _allocation(alloc: Any) -> dict:
    if alloc is None:
        return {"limit_mhz": None, "reservation_mhz": None, "shares": None, "shares_level": None}
    limit = alloc.limit
    shares = alloc.shares
    return {"limit_mhz": None if limit is None or limit < 0 else int(limit),
            "reservation_mhz": None if alloc.reservation is None else int(alloc.reservation),
            "shares": shares.shares if shares is not None else None,
            "shares_level": str(shares.level) if shares is not None and shares.level else None}


def _guest(vm: dict, guest_net: list) -> dict:
    ips = [ip for nic in guest_net for ip in (nic.ipAddress or [])]
    return {"guest_id": vm.get("guest.guestId") or vm.get("config.guestId"),
            "full_name": vm.get("guest.guestFullName") or vm.get("config.guestFullName"),
            "family": vm.get("guest.guestFamily") or None,
            "tools_status": _text(vm.get("guest.toolsStatus")),
            "tools_running_status": _text(vm.get("guest.toolsRunningStatus")),
            "hostname": vm.get("guest.hostName") or None,
            "ip_address": vm.get("guest.ipAddress") or None,
            "ip_addresses": list(dict.fromkeys(ips))}


def _vnic(dev: Any, networks: dict[str, dict]) -> dict:
    backing = dev.backing
    network = dvs_uuid = pg_key = port_key = None
    if isinstance(backing, vim.vm.device.VirtualEthernetCard.DistributedVirtualPortBackingInfo):
        dvs_uuid, pg_key, port_key = backing.port.switchUuid, backing.port.portgroupKey, backing.port.portKey
        network = next((p["name"] for p in networks.values() if p.get("key") == pg_key), None)
    elif isinstance(backing, vim.vm.device.VirtualEthernetCard.NetworkBackingInfo):
        net = backing.network
        network = networks.get(net._moId, {}).get("name") if net is not None else None
        network = network or backing.deviceName or None
    elif isinstance(backing, vim.vm.device.VirtualEthernetCard.OpaqueNetworkBackingInfo):
        network = backing.opaqueNetworkId
    conn = dev.connectable
    return {"label": dev.deviceInfo.label if dev.deviceInfo else None,
            "type": NIC_TYPES.get(type(dev), "unknown"),
            "mac": (dev.macAddress or "").lower() or None, "device_key": dev.key, "network": network,
            "dvs_uuid": dvs_uuid, "dvs_portgroup_key": pg_key, "dvs_port_key": port_key,
            "connected": conn.connected if conn else None,
            "start_connected": conn.startConnected if conn else None}


# words a passthrough NIC's PCI device name carries (DirectPath I/O backing deviceName, or a dynamic
# DirectPath device's custom label); a GPU or an accelerator passed through is not a NIC
_NIC_DEVICE_WORDS = re.compile(r"ethernet|network|\bnic\b|connectx|mellanox|virtual function|netxtreme|"
                               r"fastlinq|qlogic|chelsio|solarflare|\b(x|xl|xxv|e)[0-9]{3}\b|82599|bcm57", re.I)


def _passthrough_name(dev: Any) -> str | None:
    backing = dev.backing
    if isinstance(backing, vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo):
        return backing.deviceName or None
    if isinstance(backing, vim.vm.device.VirtualPCIPassthrough.DynamicBackingInfo):
        return backing.customLabel or None
    return None  # vGPU (VmiopBackingInfo) and the rest: not a NIC


def _is_passthrough_nic(dev: Any) -> bool:
    """A DirectPath I/O device whose PCI name says it is a NIC: VirtualPCIPassthrough is not a
    VirtualEthernetCard, and it has no MAC (the guest's driver reads it from the device)."""
    if not isinstance(dev, vim.vm.device.VirtualPCIPassthrough):
        return False
    name = _passthrough_name(dev)
    return bool(name and _NIC_DEVICE_WORDS.search(name))


def _passthrough_nic(dev: Any) -> dict:
    label = dev.deviceInfo.label if dev.deviceInfo else None
    name = _passthrough_name(dev)
    conn = dev.connectable
    return {"label": f"{label} ({name})" if label and name else label or name, "type": "passthrough", "mac": None,
            "device_key": dev.key, "network": None, "dvs_uuid": None, "dvs_portgroup_key": None,
            "dvs_port_key": None, "connected": conn.connected if conn else None,
            "start_connected": conn.startConnected if conn else None}


def _text(value: Any) -> str | None:
    return str(value) if value else None
