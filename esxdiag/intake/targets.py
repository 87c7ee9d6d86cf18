"""Who each found capture belongs to: ESXi host or guest from its kind, the guest's VM from its MACs
in net-stats -l (or a vCenter inventory), the interface of ethtool captures, the port of vsish ones."""

from __future__ import annotations

import re
from typing import Any

from esxdiag.bundle import slug
from esxdiag.errors import EsxdiagError
from esxdiag.intake import names
from esxdiag.intake.found import Found, IntakeError, kind, renamed
from esxdiag.parsers import parse_file
from esxdiag.parsers.netstats import NetStatsPort, norm_mac
from esxdiag.specs import ESXI, LINUX, PARAM_PATTERNS, SPECS, VCENTER, WINDOWS

_IFACE_SPECS = {name for name, spec in SPECS.items() if "iface" in spec.params}
_PORT_SPECS = {name for name, spec in SPECS.items() if "port" in spec.params}


def _record(items: list[Found], spec: str) -> list[tuple[Found, Any]]:
    out = []
    for item in items:
        if item.spec == spec:
            try:
                out.append((item, parse_file(SPECS[spec].parser, item.path)))
            except EsxdiagError:
                pass  # unusable: the analysis names it in coverage
    return out


def assign_targets(found: list[Found], notes: list[str], asked: list[str]) -> list[dict[str, Any]]:
    """Targets for the found captures; a capture that cannot be placed adds its question to ``asked``
    (and is left out), so one run asks them all."""
    groups: dict[str, list[Found]] = {}
    for item in found:
        groups.setdefault(item.group, []).append(item)
    _worlds(found, notes, asked)
    _vmnics(found, asked)
    ports = [(p, item) for item, rec in _record(found, "net_stats_list") for p in rec.ports] or _esxcli_ports(found)
    vm_by_mac = {p.mac: p.vm for p, _ in ports if p.kind == "vnic" and p.vm}
    for item, inv in _record(found, "vsphere_vm"):
        vm_by_mac.update({norm_mac(v.mac): inv.name for v in inv.vnics if v.mac})
    guest_macs: set[str] = set()
    targets: list[dict[str, Any]] = []
    same_vm: dict[str, str] = {}  # VM -> guest target id: two sosreports of one guest are one target
    for group, items in sorted(groups.items()):
        suffix = f"-{slug(group)}" if group else ""
        guest_items = [i for i in items if SPECS[i.spec].target in (LINUX, WINDOWS)]
        if guest_items:
            guest_macs |= _place_guest(group, guest_items, vm_by_mac, same_vm, targets, notes, asked)
        if any(SPECS[i.spec].target == ESXI for i in items):
            targets.append({"id": f"esxi{suffix}", "kind": ESXI, "address": None, "vm": None})
            for item in items:
                if SPECS[item.spec].target == ESXI:
                    item.target = f"esxi{suffix}"
        for item in items:
            if SPECS[item.spec].target == VCENTER:
                item.target = "vcenter"
                record = _one(item)  # vsphere_vm names its VM in "name", vsphere_perf in "vm", host perf its "host"
                if "host" in SPECS[item.spec].params:
                    item.params = {"host": getattr(record, "host", None) or item.rel}
                else:
                    item.params = {"vm": getattr(record, "name", None) or getattr(record, "vm", None) or item.rel}
    if any(i.target == "vcenter" for i in found):
        targets.insert(0, {"id": "vcenter", "kind": VCENTER, "address": None, "vm": None})
    host_ports: dict[str | None, list] = {}
    for p, item in ports:
        host_ports.setdefault(item.target, []).append(p)
    placed: dict[str, list[str]] = {}
    for item in found:
        if item.spec in _PORT_SPECS:
            if item.target not in host_ports and len(host_ports) == 1:  # vsish outputs beside a vm-support bundle
                item.target = next(iter(host_ports))
            try:
                how = _port(item, host_ports.get(item.target, []), guest_macs)
            except IntakeError as exc:
                asked.append(str(exc))
                continue
            placed.setdefault(f"port {item.params['port']} on {item.params['portset']} ({how})", []).append(item.rel)
    notes += [f"{where}: {', '.join(sorted(files))}" for where, files in placed.items()]
    _guest_vms_from_ports(targets, found, ports, notes)
    return targets


def _esxcli_ports(found: list[Found]) -> list[tuple[NetStatsPort, Found]]:
    """Host ports from esxcli network vm port list captures (their world named by _worlds), for a
    folder without net-stats -l: the same ports the analysis joins on (esxdiag.join.host)."""
    worlds = {str(vm.world_id): vm.name for _, rec in _record(found, "esxcli_vm_list") for vm in rec.vms}
    out = []
    for item, rec in _record(found, "esxcli_vm_ports"):
        world = item.params.get("world")
        vm = worlds.get(world or "", f"world {world}" if world else None)
        for index, port in enumerate(rec.ports):
            if vm and norm_mac(port.mac):
                client = f"{vm}.eth{index}" if index else vm
                out.append((NetStatsPort(port.port_id, 5, 9, port.vswitch, norm_mac(port.mac), client, "vnic", vm,
                                         index), item))
    return out


def _worlds(found: list[Found], notes: list[str], asked: list[str]) -> None:
    """The VM world of each ``esxcli network vm port list -w WORLD`` capture: the number in its file
    name that ``esxcli network vm list`` lists (or the only number there when no list was captured)."""
    worlds = {str(vm.world_id): vm.name for _, rec in _record(found, "esxcli_vm_list") for vm in rec.vms}
    for item in found:
        if item.spec != "esxcli_vm_ports" or item.params.get("world"):
            continue
        numbers = list(dict.fromkeys(names.numbers(item.rel)))
        listed = [n for n in numbers if n in worlds] if worlds else numbers
        if len(listed) != 1:
            choices = " or ".join(f"{names.with_number(item.rel, w)} ({worlds[w]})" for w in sorted(worlds)[:3]) \
                or f"{names.with_number(item.rel, 'WORLDID')} (WORLDID: the VM's World ID)"
            asked.append(f"{item.rel}: which VM's port list (esxcli-vm-ports) is this? name its World ID (esxcli network "
                         f"vm list): rename it to {choices}{' ...' if len(worlds) > 3 else ''}")
            continue
        item.params["world"] = listed[0]
        notes.append(f"{item.rel}: the ports of world {listed[0]}"
                     + (f" (VM {worlds[listed[0]]}, esxcli network vm list)" if listed[0] in worlds else ""))


def _vmnics(found: list[Found], asked: list[str]) -> None:
    """The uplink of each ``esxcli network nic stats get -n VMNIC`` capture: the name its output
    prints ("NIC statistics for vmnic1"), else the only vmnicN in its file name."""
    printed = {id(item): rec.name for item, rec in _record(found, "esxcli_nic_stats")}
    for item in found:
        if item.spec != "esxcli_nic_stats" or item.params.get("vmnic"):
            continue
        in_name = sorted(set(re.findall(r"vmnic\d+", item.rel)))
        vmnic = printed.get(id(item)) or (in_name[0] if len(in_name) == 1 else None)
        if vmnic is None:
            asked.append(f"{item.rel}: which uplink's counters (esxcli-nic-stats) are these? name the vmnic it was run "
                         f"for: rename it to {names.with_vmnic(item.rel, 'vmnicN')} (vmnicN: that uplink, e.g. vmnic0)")
            continue
        item.params["vmnic"] = vmnic


def _place_guest(group: str, items: list[Found], vm_by_mac: dict[str, str], same_vm: dict[str, str],
                 targets: list[dict[str, Any]], notes: list[str], asked: list[str]) -> set[str]:
    """The guest target of one group's guest captures (its VM from its MACs); returns the MACs."""
    where = group or "the folder"
    windows = any(SPECS[i.spec].target == WINDOWS for i in items)
    macs = _guest_macs(items)
    vms = {vm_by_mac[m] for m in macs.values() if m in vm_by_mac}
    vm = vms.pop() if len(vms) == 1 else None
    if vm is not None:
        notes.append(f"guest captures in {where}: VM {vm} (from its MAC in net-stats -l / the vCenter inventory)")
    elif not vm_by_mac:  # nothing to join against: the guest is the subject, by name
        vm = next((i.machine for i in items if i.machine), None) or slug(group or "guest")
        notes.append(f"guest captures in {where}: no host port list or vCenter inventory to find their VM by MAC: "
                     f"called {vm}")
    guest_id = same_vm.get(vm) if vm else None
    if guest_id is None:
        guest_id = f"guest-{slug(group)}" if group else "guest"
        targets.append({"id": guest_id, "kind": WINDOWS if windows else LINUX, "address": None, "vm": vm})
        if vm:
            same_vm[vm] = guest_id
    for item in items:
        item.target = guest_id
        if windows and item.spec == "nproc":
            item.spec = "win_cpu"
    _ifaces(items, macs, asked)
    return set(macs.values())


def _guest_vms_from_ports(targets: list[dict], found: list[Found], ports: list, notes: list[str]) -> None:
    """A guest whose MACs matched nothing: the VM of the host ports the folder's vsish captures
    read, when there is exactly one such VM and one such guest; otherwise it stays unjoined."""
    unknown = [t for t in targets if t["kind"] in (LINUX, WINDOWS) and not t["vm"]]
    vm_of_port = {str(p.port): p.vm for p, _ in ports if p.kind == "vnic"}
    vms = {vm_of_port.get(i.params.get("port")) for i in found if i.spec in _PORT_SPECS}
    for target in unknown:
        if len(unknown) == 1 and len(vms) == 1 and None not in vms:
            target["vm"] = vms.pop()
            notes.append(f"guest captures ({target['id']}): VM {target['vm']} (the only VM whose host port the "
                         "vsish captures read; no guest MAC matched)")
        else:
            notes.append(f"guest captures ({target['id']}): their VM is unknown (no MAC from ip -o link / ethtool -P"
                         " matched net-stats -l): they are not joined to any vNIC")


def _one(item: Found) -> Any:
    try:
        return parse_file(SPECS[item.spec].parser, item.path)
    except EsxdiagError:
        return None


def _guest_macs(items: list[Found]) -> dict[str, str]:
    """Interface (or Windows adapter) name -> MAC."""
    macs: dict[str, str] = {}
    for item, rec in _record(items, "ip_link"):
        macs.update({link.name: link.mac for link in rec.links if link.mac and link.link_type == "ether"})
    for item, rec in _record(items, "win_netadapter"):
        macs.update({a.name: norm_mac(a.mac) for a in rec.adapters if a.mac})
    for item, rec in _record(items, "ethtool_permaddr"):
        if item.params.get("iface"):
            macs[item.params["iface"]] = rec.mac
    return {k: v for k, v in macs.items() if v}


def _ifaces(items: list[Found], macs: dict[str, str], asked: list[str]) -> None:
    """The interface of each ethtool capture: the one its output prints (ethtool -g), else the one
    known interface (ip -o link, ethtool -P) its file name says, else the only one known, else the
    one interface-like word of its file name when nothing is known. The rename asked for otherwise
    gives a name that says one interface only, so following it places the file."""
    known = set(macs)
    printed = {id(item): rec.interface for item, rec in _record(items, "ethtool_rings") if rec.interface}
    known |= set(printed.values())
    for item in items:
        if item.spec not in _IFACE_SPECS or item.params.get("iface"):
            continue
        named = [i for i in known if names.mentions(item.rel, i)]
        if id(item) in printed:
            named = [printed[id(item)]]
        if len(named) != 1 and len(macs) == 1:
            named = list(macs)
        if len(named) != 1 and len(known) == 1:
            named = list(known)
        if len(named) != 1 and not known and len(names.interfaces(item.rel)) == 1:
            named = names.interfaces(item.rel)
        if len(named) != 1 or not PARAM_PATTERNS["iface"].fullmatch(named[0]):
            choices = sorted(known) or ["eth0"]
            rename = " or ".join(names.named_for(item.rel, i, tuple(known)) for i in choices)
            asked.append(f"{item.rel}: which interface is this {kind(item.spec)} capture of? "
                         f"{'the guest has ' + ', '.join(sorted(known)) if known else 'no ip -o link in the folder'}: "
                         f"rename it to {rename}" + ("" if known else " (with its interface's name)"))
            continue
        item.params["iface"] = named[0]


def _port(item: Found, ports: list, guest_macs: set[str]) -> str:
    """The port from a number in the file name, else the only vmxnet3 port that fits the guests."""
    by_number = {p.port: p for p in ports}
    named = [n for n in names.port_numbers(item.rel) if n in by_number or not ports]
    if len(named) == 1:
        port = by_number.get(named[0])
        portset = port.switch if port else names.portset(item.rel)
        how = "the file name"
        number = named[0]
    else:
        vmxnet3 = [p for p in ports if p.kind == "vnic" and p.subtype == 9]
        fits = [p for p in vmxnet3 if p.mac in guest_macs] or vmxnet3  # a guest MAC the host does not know: all
        if len(fits) != 1:
            candidates = fits or vmxnet3
            rename = " or ".join(f"{names.with_number(item.rel, str(p.port))} ({p.client})" for p in candidates[:4]) or \
                f"{names.with_number(item.rel, 'vSwitch0-PORT')} (PORT: the PortNum net-stats -l prints for the vNIC, " \
                "vSwitch0: its portset)"
            raise IntakeError(f"{item.rel}: which vNIC port is this {kind(item.spec)} capture of? "
                              f"{'no net-stats -l in the folder' if not ports else 'more than one vmxnet3 port fits' if fits else 'no vmxnet3 port in net-stats -l'}: "
                              f"rename it to {rename}{' ...' if len(candidates) > 4 else ''}")
        number, portset = fits[0].port, fits[0].switch
        how = f"the only vmxnet3 port {'with a guest MAC ' if guest_macs else ''}in net-stats -l"
    if not portset:
        raise IntakeError(f"{item.rel}: port {number} is not in a net-stats -l capture and the file name names no "
                          f"vSwitch / DvsPortset-N: add net-stats -l to the folder, or rename it to "
                          f"{renamed(item.rel, 'vSwitch0')} (its portset)")
    item.params.update({"portset": portset, "port": str(number)})
    if item.spec == "vsish_rxqueue_status":
        queue = names.queue_number(item.rel)
        item.params["queue"] = queue or "0"
        if queue is None:
            how += "; rx queue 0 assumed: no queue number in the file name"
    return how
