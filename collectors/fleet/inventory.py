"""The fleet's inventory in a fixed number of requests: places, then every VM in one paged pass.

1. One RetrievePropertiesEx over a ContainerView of datacenters, clusters, hosts and folders
   (names and parents): the map host -> cluster -> datacenter, and the containers the filters name.
2. One RetrievePropertiesEx over one ContainerView per selected container (the root when no
   place filter is given), following continuation tokens, with an explicit VM path set.
3. The vNICs by keyed path (``config.hardware.device[4000]``...), one RetrievePropertiesEx per
   vNIC count, checked against ``summary.config.numEthernetCards``; only the VMs whose vNICs are not
   where vSphere usually numbers them get their whole device list.
The request count grows with VMs / page size (and the number of distinct vNIC counts), never with
vNICs or vCPUs. Name globs are applied client side (the API has no name filter); a VM reached
through two containers is kept once.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Iterator

from pyVmomi import vim, vmodl

from esxdiag.collectors.fleet import fastdecode
from esxdiag.collectors.fleet.fastdecode import Device, Ref
from esxdiag.collectors.vsphere_inventory import NIC_TYPES
from esxdiag.collectors.vsphere_session import VsphereSession
from esxdiag.parsers.numbers import json_count

_PS = vmodl.query.PropertyCollector
# Scalar sub-paths only: pyvmomi spends its time per XML element it deserialises, so the fleet
# pass asks for nothing it does not use. The whole device list is ~200 elements per VM (4/5 of the
# pass when it was read here); the vNICs alone are read by key afterwards (read_vnics).
VM_PATHS = [
    "name", "runtime.powerState", "runtime.host", "config.hardware.numCPU", "config.cpuAllocation.limit",
    "config.cpuAllocation.reservation", "config.cpuAllocation.shares", "config.latencySensitivity.level",
    "guest.guestFamily", "guest.guestId", "guest.toolsRunningStatus", "guest.ipAddress",
    "summary.config.numEthernetCards",
]
DEVICE_PATH = "config.hardware.device"
# vSphere numbers vNICs from 4000 in practice, but device keys are only documented to be unique:
# every keyed answer is checked against the VM's vNIC count, and a VM that does not match is read whole.
NIC_KEY_BASE = 4000
MAX_KEYED_NICS = 10
PLACE_TYPES = [vim.Datacenter, vim.ComputeResource, vim.HostSystem, vim.Folder]
PLACE_PATHS = ["name", "parent"]
_CARD = vim.vm.device.VirtualEthernetCard


@dataclass(frozen=True)
class Filters:
    datacenters: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()  # VM folder paths, "DC0/vm/prod" or "/DC0/vm/prod"
    names: tuple[str, ...] = ()  # shell globs on the VM name

    def describe(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.__dict__.items() if v}


@dataclass
class Places:
    """moid -> {name, parent moid, kind}; host/cluster/datacenter lookups by walking parents."""

    objects: dict[str, dict] = field(default_factory=dict)

    def walk(self, moid: str | None, kind: str) -> dict | None:
        seen = 0
        while moid is not None and moid in self.objects and seen < 64:  # parents form a tree; bounded anyway
            node = self.objects[moid]
            if node["kind"] == kind:
                return node
            moid, seen = node["parent"], seen + 1
        return None

    def path(self, moid: str) -> str:
        names, seen = [], 0
        while moid in self.objects and seen < 64:
            names.append(self.objects[moid]["name"])
            moid, seen = self.objects[moid]["parent"], seen + 1
        return "/" + "/".join(reversed(names[:-1])) if len(names) > 1 else "/"  # the root folder has no name


def read_places(session: VsphereSession) -> Places:
    return places_of(session, _view_rows(session, [session.content.rootFolder], PLACE_TYPES, [
        _PS.PropertySpec(type=t, pathSet=PLACE_PATHS) for t in PLACE_TYPES], None))


def places_of(session: VsphereSession, rows: list[tuple[Ref, dict, list[dict]]]) -> Places:
    """Places from the (Ref, props, missing) rows of the place objects (PLACE_TYPES, PLACE_PATHS)."""
    places = Places()
    root = session.content.rootFolder._moId
    places.objects[root] = {"moid": root, "name": "", "parent": None, "kind": "folder"}
    stub = session.si._stub
    for ref, props, _missing in rows:
        parent, cls = props.get("parent"), ref.type
        kind = ("datacenter" if issubclass(cls, vim.Datacenter) else "host" if issubclass(cls, vim.HostSystem)
                else "cluster" if issubclass(cls, vim.ClusterComputeResource)
                else "compute" if issubclass(cls, vim.ComputeResource) else "folder")
        places.objects[ref.moid] = {"moid": ref.moid, "name": props.get("name") or ref.moid,
                                    "parent": parent.moid if parent is not None else None, "kind": kind,
                                    "obj": ref.managed(stub)}
    return places


def unmatched(places: Places, filters: Filters) -> list[str]:
    """Place filter values that name nothing in this vCenter, as '--cluster NAME'."""
    out = []
    for flag, kind, wanted in (("--host", "host", filters.hosts), ("--cluster", "cluster", filters.clusters),
                               ("--folder", "folder", filters.folders),
                               ("--datacenter", "datacenter", filters.datacenters)):
        out += [f"{flag} {w}" for w in wanted if not _find(places, kind, w)]
    return out


def _find(places: Places, kind: str, want: str) -> list[dict]:
    if kind == "folder":
        norm = "/" + want.strip("/")
        return [n for n in places.objects.values() if n["kind"] == "folder" and places.path(n["moid"]) == norm]
    return [n for n in places.objects.values() if n["kind"] == kind and n["name"] == want]


def containers(session: VsphereSession, places: Places, filters: Filters) -> list[Any]:
    """The objects to open ContainerViews on: those the narrowest place filter names (maybe none)."""
    for kind, wanted in (("host", filters.hosts), ("cluster", filters.clusters), ("folder", filters.folders),
                         ("datacenter", filters.datacenters)):
        if wanted:
            return [n["obj"] for want in wanted for n in _find(places, kind, want)]
    return [session.content.rootFolder]


def read_vms(session: VsphereSession, places: Places, filters: Filters, page_size: int | None) -> list[dict]:
    """The selected VMs without their vNICs (``vnics`` None): read_vnics adds them."""
    return [vm for page, _more in vm_pages(session, places, filters, page_size) for vm in page]


def vm_pages(session: VsphereSession, places: Places, filters: Filters,
             page_size: int | None) -> Iterator[tuple[list[dict], bool]]:
    """read_vms a page at a time, as the server sends them: (VM records, whether more follow), so a
    scan can work on one page while the next is on its way."""
    roots = containers(session, places, filters)
    if not roots:
        return
    seen: set[str] = set()
    stub = session.si._stub
    for rows, more in _view_pages(session, roots, [vim.VirtualMachine],
                                  [_PS.PropertySpec(type=vim.VirtualMachine, pathSet=VM_PATHS)], page_size):
        page = []
        for ref, props, missing in rows:
            if ref.moid in seen:
                continue
            seen.add(ref.moid)
            vm = vm_record(ref.managed(stub), props, missing, places)
            if selected(vm, filters):
                page.append(vm)
        yield page, more


def selected(vm: dict, filters: Filters) -> bool:
    """The place filters not used as the container, and the name globs."""
    checks = ((filters.hosts, vm["host"]), (filters.clusters, vm["cluster"]), (filters.datacenters, vm["datacenter"]))
    if any(wanted and value not in wanted for wanted, value in checks):
        return False
    return not filters.names or any(fnmatch.fnmatchcase(vm["name"], g) for g in filters.names)


def vm_record(obj: Any, props: dict, missing: list[dict], places: Places) -> dict:
    """``props``: fastdecode's plain values by property path."""
    host_ref = props.get("runtime.host")
    host_moid = host_ref.moid if host_ref is not None else None
    host = places.objects.get(host_moid or "", {})
    cluster = places.walk(host_moid, "cluster") or places.walk(host_moid, "compute")
    datacenter = places.walk(host_moid, "datacenter")
    limit = props.get("config.cpuAllocation.limit")
    reservation = props.get("config.cpuAllocation.reservation")
    shares = props.get("config.cpuAllocation.shares")
    share_count = getattr(shares, "shares", None)
    return {
        "moid": obj._moId, "name": props.get("name") or obj._moId,
        "power_state": str(props["runtime.powerState"]) if props.get("runtime.powerState") else None,
        "host": host.get("name"), "host_moid": host_moid,
        "cluster": cluster["name"] if cluster and cluster["kind"] == "cluster" else None,
        "datacenter": datacenter["name"] if datacenter else None,
        "num_cpu": props.get("config.hardware.numCPU"),
        "cpu_allocation": {"limit_mhz": None if limit is None or limit < 0 else int(limit),
                           "reservation_mhz": None if reservation is None else int(reservation),
                           "shares": share_count if json_count(share_count) else None,
                           "shares_level": str(shares.level) if getattr(shares, "level", None) else None},
        "latency_sensitivity": str(props["config.latencySensitivity.level"])
        if props.get("config.latencySensitivity.level") else None,
        "guest": {"family": props.get("guest.guestFamily") or None, "ip_address": props.get("guest.ipAddress") or None,
                  "guest_id": props.get("guest.guestId") or None,
                  "tools_status": props.get("guest.toolsRunningStatus") or None},
        "num_vnics": props.get("summary.config.numEthernetCards"),
        "vnics": None,
        "missing": missing,
        "_obj": obj,  # the managed object for QueryPerf; popped before the record is written
    }


def vnics_of(devices: list | None) -> list[dict]:
    return [_vnic(d) for d in devices or [] if _is_nic(d)]


def _is_nic(device: Any) -> bool:
    return isinstance(device, Device) and issubclass(device.type, _CARD)


def read_vnics(session: VsphereSession, vms: list[dict], objs: dict[str, Any], page_size: int | None) -> int:
    """Set ``vnics`` on these VM records; returns how many needed their whole device list.

    VMs are grouped by ``num_vnics``; each group is one keyed-path RetrievePropertiesEx (paged). A VM
    keeps its keyed answer only when it holds exactly ``num_vnics`` distinct vNICs; otherwise (other
    keys, a count the server did not give, a group the server refused) it is read whole.
    """
    groups: dict[int, list[dict]] = {}
    whole: list[dict] = []
    for vm in vms:
        count = vm["num_vnics"]
        if count == 0:
            vm["vnics"] = []
        elif isinstance(count, int) and 0 < count <= MAX_KEYED_NICS:
            groups.setdefault(count, []).append(vm)
        else:
            whole.append(vm)
    for count, members in sorted(groups.items()):
        paths = [f"{DEVICE_PATH}[{NIC_KEY_BASE + i}]" for i in range(count)]
        try:
            found = _retrieve_paths(session, [objs[vm["moid"]] for vm in members], paths, page_size)
        except vmodl.MethodFault:  # a server without keyed paths: these VMs are read whole
            whole += members
            continue
        for vm in members:
            nics = [d for d in found.get(vm["moid"], {}).values() if _is_nic(d)]
            if len(nics) == count and len({d.key for d in nics}) == count:
                vm["vnics"] = vnics_of(sorted(nics, key=lambda d: d.key))
            else:
                whole.append(vm)
    if whole:
        found = _retrieve_paths(session, [objs[vm["moid"]] for vm in whole], [DEVICE_PATH], page_size)
        for vm in whole:
            if DEVICE_PATH in found.get(vm["moid"], {}):
                vm["vnics"] = vnics_of(found[vm["moid"]][DEVICE_PATH])
    return len(whole)


def _retrieve_paths(session: VsphereSession, objs: list[Any], paths: list[str],
                    page_size: int | None) -> dict[str, dict]:
    """moid -> {path: plain value} for an explicit object list, a page of objects per request (and
    paged answers within it); a path the server leaves out is simply absent."""
    step = page_size or 1000
    found: dict[str, dict] = {}
    for start in range(0, len(objs), step):
        spec = _PS.FilterSpec(objectSet=[_PS.ObjectSpec(obj=obj, skip=False) for obj in objs[start:start + step]],
                              propSet=[_PS.PropertySpec(type=vim.VirtualMachine, pathSet=paths)])
        found.update((ref.moid, props) for rows, _more in fastdecode.retrieve_pages(session, [spec], page_size)
                     for ref, props, _missing in rows)
    return found


def _vnic(dev: Device) -> dict:
    return {"label": dev.label, "type": NIC_TYPES.get(dev.type, "unknown"), "mac": (dev.mac or "").lower() or None,
            "device_key": dev.key, "network": dev.network, "connected": dev.connected}


def _view_rows(session: VsphereSession, roots: list[Any], types: list[type], prop_specs: list[Any],
               page_size: int | None) -> list[tuple[Ref, dict, list[dict]]]:
    return [row for rows, _more in _view_pages(session, roots, types, prop_specs, page_size) for row in rows]


def _view_pages(session: VsphereSession, roots: list[Any], types: list[type], prop_specs: list[Any],
                page_size: int | None) -> Iterator[tuple[list[tuple[Ref, dict, list[dict]]], bool]]:
    views = []
    try:
        for root in roots:
            views.append(session.content.viewManager.CreateContainerView(root, types, True))
        spec = _PS.FilterSpec(objectSet=[
            _PS.ObjectSpec(obj=view, skip=True, selectSet=[
                _PS.TraversalSpec(name="view", type=vim.view.ContainerView, path="view", skip=False)])
            for view in views], propSet=prop_specs)
        yield from fastdecode.retrieve_pages(session, [spec], page_size)
    finally:
        for view in views:
            try:
                view.DestroyView()
            except (vmodl.MethodFault, OSError):
                pass  # the session is going away anyway; the view dies with it
