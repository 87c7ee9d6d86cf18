"""esxtop batch CSV header -> the wanted column indices, grouped by VM group and vNIC port.

Counter paths are split with ``pdh.parse_counter_path``. Kept per ``Group Cpu(<gid>:<vm>)``: the
counters in ``GROUP_COUNTERS``; per ``Vcpu(<gid>:<vm>:<wid>:vmx-vcpu-N:<vm>)`` world its
``% Ready``; per ``Network Port(<portset>:<portID>:<leaderWID>:<vm>)`` the ``PORT_COUNTERS``.

Which groups are VMs: a group with a ``vmx``/``vmx-*``/``vmm*``/``vmast*`` Vcpu world, or named
by a VM vNIC port; a file without any Vcpu instance falls back to excluding system groups and
``name.<pid>`` user worlds (with a warning). ``vm=NAME`` keeps that group whatever its kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.numbers import is_count
from esxdiag.parsers.pdh import PdhMarker, parse_marker, split_counter_path

GROUP_COUNTERS = ("% Ready", "% CoStop", "% Max Limited", "% Used", "% Run", "% Swap Wait", "Members")
PORT_COUNTERS = ("% Received Packets Dropped", "Packets Received/sec", "MBits Received/sec", "% Outbound Packets Dropped")
VCPU_WORLD = re.compile(r"(?:vmx-vcpu-|vmm)([0-9]{1,9})(?::|$)")


def vcpu_number(world: str) -> int:
    """The vCPU index in a vCPU world's name (vmx-vcpu-3:..., vmm3)."""
    match = VCPU_WORLD.match(world)
    if match is None:
        raise ValueError(f"not a vCPU world: {world!r}")
    return int(match.group(1))
_VM_PORT = re.compile(r"([^:]*):([0-9]{1,20}):([0-9]{1,20}):(.*)", re.S)
_VCPU_TAIL = re.compile(r"(.*?):([0-9]+):(.*)", re.S)
_VM_WORLD = re.compile(r"vmx(?:$|-)|vmm\d|vmast")
_SYSTEM_GROUPS = frozenset({"host", "system", "idle", "helper", "drivers", "ft", "vmotion", "vmkapimod", "user",
                            "init", "vim", "iofilters", "ioFilterVPServer", "plugins"})
_USER_WORLD = re.compile(r"[\w.-]+\.\d+")


@dataclass
class Group:
    gid: int
    name: str
    columns: dict[str, int] = field(default_factory=dict)  # counter -> column index
    vcpu_worlds: dict[str, int | None] = field(default_factory=dict)  # world name -> "% Ready" column
    has_vm_world: bool = False


@dataclass
class Port:
    portset: str
    vm: str
    columns: dict[str, int] = field(default_factory=dict)


@dataclass
class Layout:
    width: int  # header field count
    pdh: PdhMarker
    host: str | None
    groups: dict[str, Group]  # output name -> group
    ports: dict[str, Port]  # port id -> port
    names: dict[int, str] = field(default_factory=dict)  # wanted column -> header text (for warnings)

    def wanted_columns(self) -> list[int]:
        wanted: set[int] = set()
        for group in self.groups.values():
            wanted.update(group.columns.values())
            wanted.update(c for c in group.vcpu_worlds.values() if c is not None)
        for port in self.ports.values():
            wanted.update(port.columns.values())
        return sorted(wanted)


def read_layout(header: list[str], vm: str | None, warnings: list[str]) -> Layout:
    pdh = parse_marker(header[0])
    if pdh is None:
        raise ParseError(f"not an esxtop batch CSV: first field is {header[0][:60]!r}", 1)
    if len(header) < 2:
        raise ParseError("not an esxtop batch CSV: no counter columns", 1)
    groups: dict[int, Group] = {}
    vcpu_instances: dict[str, int | None] = {}  # instance -> its "% Ready" column
    ports: dict[tuple[str, str], Port] = {}
    hosts: dict[str, None] = {}
    damaged: list[int] = []
    for index, text in enumerate(header):
        if not text or index == 0:
            continue
        path = split_counter_path(text)
        if path is None:
            damaged.append(index)
            continue
        host, kind, instance, counter = path
        hosts[host] = None
        if kind == "Group Cpu" and instance:
            gid, _, name = instance.partition(":")
            if is_count(gid) and counter in GROUP_COUNTERS:
                groups.setdefault(int(gid), Group(int(gid), name)).columns[counter] = index
        elif kind == "Vcpu" and instance:
            if counter == "% Ready" or instance not in vcpu_instances:
                vcpu_instances[instance] = index if counter == "% Ready" else None
        elif kind == "Network Port" and instance and counter in PORT_COUNTERS:
            match = _VM_PORT.fullmatch(instance)
            if match is not None:
                key = (match.group(1), match.group(2))
                ports.setdefault(key, Port(match.group(1), match.group(4))).columns[counter] = index
    _check_damaged(header, damaged, warnings)
    for instance, ready_column in vcpu_instances.items():
        _add_vcpu_world(groups, instance, ready_column)
    if len(hosts) > 1:
        warnings.append(f"counters from {len(hosts)} hosts; host is the first: {', '.join(list(hosts)[:3])}")
    kept = _select_groups(groups, {p.vm for p in ports.values()}, bool(vcpu_instances), vm, warnings)
    kept_names = {g.name for g in kept.values()}
    kept_ports: dict[str, Port] = {}
    for (portset, port_id), port in ports.items():
        if port.vm in kept_names:
            kept_key = port_id if port_id not in kept_ports else f"{portset}:{port_id}"
            kept_ports[kept_key] = port
    layout = Layout(len(header), pdh, next(iter(hosts), None), kept, kept_ports)
    layout.names = {index: header[index] for index in layout.wanted_columns()}
    return layout


def _check_damaged(header: list[str], damaged: list[int], warnings: list[str]) -> None:
    """Header fields that are not counter paths (console output interleaved into the capture)
    are skipped with a warning naming them; a header that is mostly such fields is not esxtop's."""
    if not damaged:
        return
    if len(damaged) * 2 > len(header) - 1:
        index = damaged[0]
        raise ParseError(f"{len(damaged)} of {len(header) - 1} header columns are not counter paths, e.g. "
                         f"column {index + 1}: {header[index][:80]!r}", 1)
    shown = "; ".join(f'column {i + 1} "{header[i].strip()[:100]}"' for i in damaged[:5])
    more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
    warnings.append(f"damaged header column(s) skipped (not a counter path; console output in the capture?): "
                    f"{shown}{more}")


def _add_vcpu_world(groups: dict[int, Group], instance: str, ready_column: int | None) -> None:
    gid, _, rest = instance.partition(":")
    group = groups.get(int(gid)) if is_count(gid) else None
    if group is None:
        return
    if rest.startswith(group.name + ":"):
        world = rest[len(group.name) + 1 :].partition(":")[2]
    else:
        match = _VCPU_TAIL.fullmatch(rest)
        world = match.group(3) if match else rest
    group.has_vm_world = group.has_vm_world or _VM_WORLD.match(world) is not None
    if VCPU_WORLD.match(world):
        group.vcpu_worlds[world] = ready_column


def _select_groups(groups, port_vm_names, have_vcpus, vm, warnings) -> dict[str, Group]:
    if have_vcpus:
        vms = [g for g in groups.values() if g.has_vm_world or g.name in port_vm_names]
    else:
        vms = [g for g in groups.values() if g.name in port_vm_names
               or (g.name not in _SYSTEM_GROUPS and not _USER_WORLD.fullmatch(g.name))]
        if vms:
            warnings.append("no Vcpu instances: VM groups told apart from system groups by name only")
    if vm is not None:
        chosen = [g for g in groups.values() if g.name == vm]
        if not chosen:
            seen = ", ".join(sorted(g.name for g in vms)[:8]) or "none"
            raise NoData(f"VM {vm!r} is not in the file (VMs seen: {seen})")
        vms = chosen
    if not vms:
        warnings.append("no VM groups (Group Cpu) in the file")
    kept: dict[str, Group] = {}
    for group in vms:
        key = group.name if group.name not in kept else f"{group.name} [gid {group.gid}]"
        if key != group.name:
            warnings.append(f"two groups named {group.name!r}: the one with gid {group.gid} is {key!r}")
        kept[key] = group
    return kept
