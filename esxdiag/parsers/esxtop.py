"""esxtop output: batch CSV (``esxtop -b``, streamed) and the interactive CPU panel text.

Batch CSV: the header is read once with the csv module, counter paths are split with
``pdh.parse_counter_path``, and only the columns below are mapped by index; rows are then
streamed through the csv module keeping those cells only (the file is never held in memory).
Kept per VM group: ``Group Cpu(<gid>:<vm>)`` ``% Ready``, ``% CoStop``, ``% Max Limited``,
``% Used``, ``% Run``, ``% Swap Wait``, ``Members``; ``Vcpu(<gid>:<vm>:<wid>:vmx-vcpu-N:<vm>)``
``% Ready``; and for the VM's vNIC ports ``Network Port(<portset>:<portID>:<leaderWID>:<vm>)``
``% Received Packets Dropped``, ``Packets Received/sec``, ``MBits Received/sec``.

Normalisation: a group's ``% Ready``/``% CoStop``/``% Max Limited`` are sums over all worlds
of the group (a 4-vCPU VM can show 250 % ready). ``ready_pct``/``costop_pct``/``max_limited_pct``
are per vCPU = group sum / vcpus, where vcpus is the caller's ``vcpus`` hint if given
(``vcpus_source`` "hint"), else the number of ``vmx-vcpu-N`` (ESX 4: ``vmmN``) Vcpu worlds of
the group ("vcpu-instances"). If neither is known they are null (``vcpus_source`` null): never
divided by ``Members``, which counts every world (vmx, mks, svga, ...). The raw sums stay in
``group_*_pct`` so the analyzer can renormalise with vCenter's numCPU. A counter column absent
from the file gives null; an empty cell gives None in its list.

Which groups are VMs: a group with a ``vmx``/``vmx-*``/``vmm*``/``vmast*`` Vcpu world, or named
by a VM vNIC port; a file without any Vcpu instance falls back to excluding system groups and
``name.<pid>`` user worlds (with a warning). ``vm=NAME`` keeps that group whatever its kind.

Damaged files: unquoted fields (spreadsheet re-save) are accepted with a warning; timestamps
without seconds give ``interval_s`` null with a warning; ``;``-separated comma-decimal files
(Excel in a comma-decimal locale) are converted (``,`` -> ``.``, ``DD.MM.YYYY`` stamps accepted)
with a warning; a truncated last row is dropped with a warning; a short row elsewhere is a
ParseError.
"""

from __future__ import annotations

import csv
import re
import statistics
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Iterator, TextIO

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.pdh import PdhMarker, iso_utc, parse_counter_path, parse_marker, parse_stamp

Series = tuple[float | None, ...]
_MARKER_LINE = re.compile(r'("?)\(PDH-CSV [\d.]+\) \(.*?\)\(-?\d+\)\1(.?)')
_GROUP_COUNTERS = ("% Ready", "% CoStop", "% Max Limited", "% Used", "% Run", "% Swap Wait", "Members")
_PORT_COUNTERS = ("% Received Packets Dropped", "Packets Received/sec", "MBits Received/sec")
_VM_PORT = re.compile(r"([^:]*):(\d+):(\d+):(.*)", re.S)
_VCPU_TAIL = re.compile(r"(.*?):(\d+):(.*)", re.S)
_VCPU_WORLD = re.compile(r"(?:vmx-vcpu-|vmm)(\d+)(?::|$)")
_VM_WORLD = re.compile(r"vmx(?:$|-)|vmm\d|vmast")
_SYSTEM_GROUPS = frozenset({"host", "system", "idle", "helper", "drivers", "ft", "vmotion", "vmkapimod", "user",
                            "init", "vim", "iofilters", "ioFilterVPServer", "plugins"})
_USER_WORLD = re.compile(r"[\w.-]+\.\d+")


@dataclass(frozen=True)
class VmCpu:
    vcpus: int | None
    ready_pct: Series | None
    costop_pct: Series | None
    max_limited_pct: Series | None
    group_id: int
    members: int | None
    vcpus_source: str | None  # "hint", "vcpu-instances" or None
    group_ready_pct: Series | None
    group_costop_pct: Series | None
    group_max_limited_pct: Series | None
    used_pct: Series | None
    run_pct: Series | None
    swap_wait_pct: Series | None
    vcpu_ready_pct: dict[str, Series] | None


@dataclass(frozen=True)
class PortRx:
    portset: str
    vm: str
    received_dropped_pct: Series | None
    packets_received_per_s: Series | None
    mbits_received_per_s: Series | None


@dataclass(frozen=True)
class EsxtopRecord:
    interval_s: float | None
    samples: int
    vms: dict[str, VmCpu]
    pdh: PdhMarker
    timestamps: tuple[str, ...]
    host: str | None
    warnings: tuple[str, ...]
    ports: dict[str, PortRx]


def parse_esxtop(stream: TextIO, vm: str | None = None, vcpus: int | None = None) -> EsxtopRecord:
    if vcpus is not None and (vm is None or vcpus < 1):
        raise ParseError("a vcpus hint needs one VM (vm=NAME) and must be >= 1")
    first_line = stream.readline()
    if first_line.startswith("\ufeff"):
        first_line = first_line[1:]
    if not first_line.strip():
        raise NoData("empty file")
    head = _MARKER_LINE.match(first_line)
    if head is None:
        raise ParseError(f"not an esxtop batch CSV: does not start with a PDH-CSV marker: {first_line[:60]!r}", 1)
    quoted, delimiter = head.group(1) == '"', head.group(2) or ","
    warnings: list[str] = []
    if delimiter not in ",;":
        raise ParseError(f"not an esxtop batch CSV: unexpected separator {delimiter!r} after the marker", 1)
    if not quoted:
        warnings.append("unquoted fields: file was re-saved by a spreadsheet, values may be rounded")
    if delimiter == ";":
        warnings.append("';'-separated comma-decimal file (spreadsheet re-save): decimals converted")
    last_line = [first_line]  # the physical line that ended the latest row (header freed after use)
    del first_line

    def lines() -> Iterator[str]:
        yield last_line[0]
        for line in stream:
            last_line[0] = line
            yield line

    reader = csv.reader(lines(), delimiter=delimiter)
    try:
        layout = read_layout(next(reader), vm, warnings)
        return _read_rows(reader, layout, vcpus, quoted, delimiter, last_line, warnings)
    except csv.Error as exc:
        raise ParseError(f"bad CSV: {exc}", reader.line_num) from None


def _read_rows(reader, layout: Layout, vcpus_hint, quoted, delimiter, last_line, warnings) -> EsxtopRecord:
    columns = layout.wanted_columns()
    pick = itemgetter(*columns, 0) if columns else itemgetter(0, 0)
    sinks: list[list[float | None]] = [[] for _ in columns]
    to_float = _comma_float if delimiter == ";" else _float
    stamps, width, short_row = [], layout.width, None
    for row in reader:
        if not row:
            continue
        if short_row is not None:
            raise ParseError(f"row has {short_row[1]} fields, header has {width}", short_row[0])
        if len(row) != width:
            short_row = (reader.line_num, len(row))
            continue
        stamp = parse_stamp(row[0], layout.pdh.bias_min, day_first_dots=delimiter == ";")
        if stamp is None:
            raise ParseError(f"bad timestamp {row[0][:40]!r}", reader.line_num)
        stamps.append(stamp)
        try:
            for sink, cell in zip(sinks, pick(row)):
                sink.append(to_float(cell) if cell else None)
        except ValueError:
            raise ParseError("non-numeric counter value in a wanted column", reader.line_num) from None
    if short_row is not None:
        warnings.append(f"dropped truncated last row (line {short_row[0]}: {short_row[1]} of {width} fields)")
    elif quoted and stamps and not last_line[0].rstrip("\r\n").endswith('"'):
        warnings.append(f"dropped truncated last row (line {reader.line_num}: unterminated last field)")
        stamps.pop()
        for sink in sinks:
            sink.pop()
    if not stamps:
        raise NoData("header only: no samples")
    series = {column: tuple(sink) for column, sink in zip(columns, sinks)}
    return EsxtopRecord(
        interval_s=_interval(stamps, warnings),
        samples=len(stamps),
        vms=layout.vm_records(series, vcpus_hint),
        pdh=layout.pdh,
        timestamps=tuple(iso_utc(s.utc) for s in stamps),
        host=layout.host,
        warnings=tuple(warnings),
        ports=layout.port_records(series),
    )


def _float(cell: str) -> float:
    return float(cell)


def _comma_float(cell: str) -> float:
    return float(cell.replace(",", "."))


def _interval(stamps, warnings: list[str]) -> float | None:
    if len(stamps) < 2:
        return None
    if not all(s.has_seconds for s in stamps):
        warnings.append("timestamps have no seconds (spreadsheet re-save): interval unknown")
        return None
    deltas = [(b.utc - a.utc).total_seconds() for a, b in zip(stamps, stamps[1:])]
    return float(statistics.median(deltas))


@dataclass
class _Group:
    gid: int
    name: str
    columns: dict[str, int] = field(default_factory=dict)
    vcpu_worlds: dict[str, int | None] = field(default_factory=dict)  # world name -> "% Ready" column
    has_vm_world: bool = False


@dataclass
class _Port:
    portset: str
    vm: str
    columns: dict[str, int] = field(default_factory=dict)


@dataclass
class Layout:
    width: int  # header field count
    pdh: PdhMarker
    host: str | None
    groups: dict[str, _Group]  # output name -> group
    ports: dict[str, _Port]  # port id -> port

    def wanted_columns(self) -> list[int]:
        wanted = set()
        for group in self.groups.values():
            wanted.update(group.columns.values())
            wanted.update(c for c in group.vcpu_worlds.values() if c is not None)
        for port in self.ports.values():
            wanted.update(port.columns.values())
        return sorted(wanted)

    def vm_records(self, series: dict[int, Series], vcpus_hint: int | None) -> dict[str, VmCpu]:
        records = {}
        for name, group in self.groups.items():
            def counter(label: str) -> Series | None:
                return series.get(group.columns.get(label, -1))

            vcpus = vcpus_hint or len(group.vcpu_worlds) or None
            source = "hint" if vcpus_hint else "vcpu-instances" if vcpus else None
            members = [m for m in counter("Members") or () if m is not None]
            worlds = sorted(group.vcpu_worlds, key=lambda w: int(_VCPU_WORLD.match(w).group(1)))
            vcpu_ready = {w: series[group.vcpu_worlds[w]] for w in worlds if group.vcpu_worlds[w] is not None}
            ready, costop, limited = counter("% Ready"), counter("% CoStop"), counter("% Max Limited")
            records[name] = VmCpu(
                vcpus=vcpus, ready_pct=_per_vcpu(ready, vcpus), costop_pct=_per_vcpu(costop, vcpus),
                max_limited_pct=_per_vcpu(limited, vcpus), group_id=group.gid,
                members=int(members[-1]) if members else None, vcpus_source=source,
                group_ready_pct=ready, group_costop_pct=costop, group_max_limited_pct=limited,
                used_pct=counter("% Used"), run_pct=counter("% Run"), swap_wait_pct=counter("% Swap Wait"),
                vcpu_ready_pct=vcpu_ready or None,
            )
        return records

    def port_records(self, series: dict[int, Series]) -> dict[str, PortRx]:
        def counter(port: _Port, label: str) -> Series | None:
            return series.get(port.columns.get(label, -1))

        return {
            port_id: PortRx(port.portset, port.vm, counter(port, "% Received Packets Dropped"),
                            counter(port, "Packets Received/sec"), counter(port, "MBits Received/sec"))
            for port_id, port in self.ports.items()
        }


def _per_vcpu(sums: Series | None, vcpus: int | None) -> Series | None:
    if sums is None or vcpus is None:
        return None
    return tuple(None if v is None else round(v / vcpus, 4) for v in sums)


def read_layout(header: list[str], vm: str | None, warnings: list[str]) -> Layout:
    pdh = parse_marker(header[0])
    if pdh is None:
        raise ParseError(f"not an esxtop batch CSV: first field is {header[0][:60]!r}", 1)
    if len(header) < 2:
        raise ParseError("not an esxtop batch CSV: no counter columns", 1)
    groups: dict[int, _Group] = {}
    vcpu_instances: dict[str, int | None] = {}  # instance -> its "% Ready" column
    ports: dict[tuple[str, str], _Port] = {}
    hosts: dict[str, None] = {}
    for index in range(1, len(header)):
        if not header[index]:
            continue
        path = parse_counter_path(header[index])
        if path is None:
            raise ParseError(f"header column {index + 1} is not a counter path: {header[index][:80]!r}", 1)
        hosts[path.host] = None
        if path.object == "Group Cpu" and path.instance:
            gid, _, name = path.instance.partition(":")
            if gid.isdigit() and path.counter in _GROUP_COUNTERS:
                groups.setdefault(int(gid), _Group(int(gid), name)).columns[path.counter] = index
        elif path.object == "Vcpu" and path.instance:
            if path.counter == "% Ready" or path.instance not in vcpu_instances:
                vcpu_instances[path.instance] = index if path.counter == "% Ready" else None
        elif path.object == "Network Port" and path.instance and path.counter in _PORT_COUNTERS:
            match = _VM_PORT.fullmatch(path.instance)
            if match is not None:
                key = (match.group(1), match.group(2))
                ports.setdefault(key, _Port(match.group(1), match.group(4))).columns[path.counter] = index
    for instance, ready_column in vcpu_instances.items():
        _add_vcpu_world(groups, instance, ready_column)
    if len(hosts) > 1:
        warnings.append(f"counters from {len(hosts)} hosts; host is the first: {', '.join(list(hosts)[:3])}")
    kept = _select_groups(groups, {p.vm for p in ports.values()}, bool(vcpu_instances), vm, warnings)
    kept_names = {g.name for g in kept.values()}
    kept_ports: dict[str, _Port] = {}
    for (portset, port_id), port in ports.items():
        if port.vm in kept_names:
            key = port_id if port_id not in kept_ports else f"{portset}:{port_id}"
            kept_ports[key] = port
    return Layout(len(header), pdh, next(iter(hosts), None), kept, kept_ports)


def _add_vcpu_world(groups: dict[int, _Group], instance: str, ready_column: int | None) -> None:
    gid, _, rest = instance.partition(":")
    group = groups.get(int(gid)) if gid.isdigit() else None
    if group is None:
        return
    if rest.startswith(group.name + ":"):
        world = rest[len(group.name) + 1 :].partition(":")[2]
    else:
        match = _VCPU_TAIL.fullmatch(rest)
        world = match.group(3) if match else rest
    group.has_vm_world = group.has_vm_world or _VM_WORLD.match(world) is not None
    if _VCPU_WORLD.match(world):
        group.vcpu_worlds[world] = ready_column


def _select_groups(groups, port_vm_names, have_vcpus, vm, warnings) -> dict[str, _Group]:
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
    kept: dict[str, _Group] = {}
    for group in vms:
        key = group.name if group.name not in kept else f"{group.name} [gid {group.gid}]"
        if key != group.name:
            warnings.append(f"two groups named {group.name!r}: the one with gid {group.gid} is {key!r}")
        kept[key] = group
    return kept


@dataclass(frozen=True)
class CpuPanelGroup:
    id: int
    gid: int
    name: str  # as printed: esxtop truncates long names to the column width, match by gid
    nwld: int
    columns: dict[str, float]  # every column after NWLD by its printed name (%USED, %RDY, ...)
    ready_pct: float | None  # group sums over NWLD worlds, as printed (not per vCPU)
    costop_pct: float | None
    max_limited_pct: float | None
    swap_wait_pct: float | None
    used_pct: float | None


@dataclass(frozen=True)
class CpuPanel:
    groups: tuple[CpuPanelGroup, ...]


_PANEL_HEADER = re.compile(r"\s*ID\s+GID\s+NAME\s+NWLD\s+(%.*)")


def parse_cpu_panel(text: str) -> CpuPanel:
    """The interactive esxtop CPU screen as pasted: ``ID GID NAME NWLD %USED ... %SWPWT`` then one
    row per group; NAME may contain spaces, so a row is anchored on the numbers at both ends."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if _PANEL_HEADER.fullmatch(line.rstrip())), None)
    if start is None:
        raise ParseError("no esxtop CPU panel header (ID GID NAME NWLD %USED ...)")
    labels = lines[start].split()[4:]
    number = r"\s+(-?\d+(?:\.\d+)?)"
    row_re = re.compile(r"\s*(\d+)\s+(\d+)\s+(.*?)\s+(\d+)" + number * len(labels) + r"\s*")
    groups = []
    for line in lines[start + 1 :]:
        match = row_re.fullmatch(line)
        if match is None:
            if line.strip() and groups:
                break
            continue
        values = dict(zip(labels, map(float, match.groups()[4:])))
        groups.append(CpuPanelGroup(
            int(match.group(1)), int(match.group(2)), match.group(3), int(match.group(4)), values,
            values.get("%RDY"), values.get("%CSTP"), values.get("%MLMTD"), values.get("%SWPWT"),
            values.get("%USED"),
        ))
    if not groups:
        raise NoData("esxtop CPU panel header without rows")
    return CpuPanel(tuple(groups))
