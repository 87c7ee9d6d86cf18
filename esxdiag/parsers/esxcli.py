"""esxcli plain-text outputs (formats.md 3.3-3.5): the ``network vm list`` table (columns cut at
the dash ruler), ``network vm port list`` blocks and ``network nic stats get``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.numbers import count, is_count
from esxdiag.parsers.registry import first_line, parser

_RULER = re.compile(r"^\s*-+(\s+-+)*\s*$")
_NIC_TITLE = re.compile(r"^NIC statistics for (?P<name>\S+)\s*$")
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


@dataclass(frozen=True)
class EsxcliVm:
    world_id: int
    name: str
    num_ports: int
    networks: tuple[str, ...]


@dataclass(frozen=True)
class EsxcliVmList:
    vms: tuple[EsxcliVm, ...]
    warnings: tuple[str, ...] = ()


_VM_LIST_SAMPLE = """\
World ID  Name               Num Ports  Networks
--------  -----------------  ---------  ---------------------------------------------
 2203241  Win_Nor                    2  Security_Lab_Site1_Inside, VM Network
 2099871  MediaSrv-Debian11          1  VM Network
"""


@parser("esxcli-vm-list", about="esxcli network vm list: VM world IDs, port counts and networks",
        sniff=first_line(r"^\s*World ID\s+Name\s+Num Ports\s+Networks"), sample=_VM_LIST_SAMPLE)
def parse_vm_list(text: str) -> EsxcliVmList:
    text, warnings = drop_cut_line(text)
    lines = text.splitlines()
    ruler_at = next((i for i, line in enumerate(lines) if _RULER.match(line)), None)
    if ruler_at is None:
        if not text.strip():
            raise NoData("empty esxcli network vm list output")
        raise ParseError("no dash ruler under a header: not an esxcli table", line=1)
    if ruler_at == 0:
        raise ParseError("dash ruler without a header line above it", line=1)
    starts = [m.start() for m in re.finditer(r"-+", lines[ruler_at])]
    header = [c.lower() for c in _slice(lines[ruler_at - 1], starts)]
    wanted = ["world id", "name", "num ports", "networks"]
    if header != wanted:
        raise ParseError(f"header {header} is not {wanted}: not esxcli network vm list", line=ruler_at)
    vms: list[EsxcliVm] = []
    skipped = Skipped(warnings)
    for number, line in enumerate(lines[ruler_at + 1:], ruler_at + 2):
        if not line.strip() or skipped.cut_mark(number, line):
            continue
        world, name, num_ports, networks = _slice(line, starts)
        if not is_count(world) or not is_count(num_ports) or not name:
            skipped.line(ParseError(f"row does not line up with the ruler columns: {line.strip()[:70]!r}",
                                    line=number))
            continue
        vms.append(EsxcliVm(int(world), name, int(num_ports),
                            tuple(n.strip() for n in networks.split(", ") if n.strip())))
    skipped.check(len(vms))
    if not vms:
        raise NoData("esxcli network vm list: no powered-on VMs with network ports")
    return EsxcliVmList(tuple(vms), tuple(warnings))


def _slice(line: str, starts: list[int]) -> list[str]:
    ends = starts[1:] + [len(line)]
    return [line[a:b].strip() for a, b in zip(starts, ends)]


@dataclass(frozen=True)
class EsxcliPort:
    port_id: int
    vswitch: str
    portgroup: str
    dvport_id: str | None
    mac: str
    ip: str | None  # None for "0.0.0.0" (unknown)
    team_uplink: str | None  # None for "void" or empty
    uplink_port_id: int | None
    active_filters: tuple[str, ...]
    fields: dict[str, str]  # every printed key with its raw (stripped) value


@dataclass(frozen=True)
class EsxcliVmPorts:
    ports: tuple[EsxcliPort, ...]
    warnings: tuple[str, ...] = ()


PORT_KEYS = ("Port ID", "vSwitch", "Portgroup", "DVPort ID", "MAC Address", "IP Address", "Team Uplink",
             "Uplink Port ID", "Active Filters")  # formats.md 3.4, in their printed order
_VM_PORTS_SAMPLE = """\
   Port ID: 33554578
   vSwitch: vSwitch0
   Portgroup: Security_Lab_Site1_Outside
   DVPort ID:
   MAC Address: 00:0c:29:47:03:dc
   IP Address: 0.0.0.0
   Team Uplink: vmnic0
   Uplink Port ID: 33554434
   Active Filters:
"""


@parser("esxcli-vm-ports", about="esxcli network vm port list -w WORLD: a VM's ports, MACs and port groups",
        sniff=lambda head: bool(re.match(r"^\s*Port ID: ", head)) and "MAC Address:" in head, sample=_VM_PORTS_SAMPLE)
def parse_vm_ports(text: str) -> EsxcliVmPorts:
    blocks: list[tuple[int, dict[str, str]]] = []
    current: dict[str, str] | None = None
    text, warnings = drop_cut_line(text)
    skipped = Skipped(warnings)
    for number, line in enumerate(text.splitlines(), 1):
        if skipped.cut_mark(number, line):  # the lines after it may still belong to the same port
            continue
        if not line.strip():
            current = None
            continue
        pair = _key_value(line)
        if pair is None:
            skipped.line(ParseError(f"expected 'Key: value': {line.strip()[:70]!r}", line=number),
                         started=bool(blocks))
            continue
        key, value = pair
        if current is None or (key == "Port ID" and "Port ID" in current):
            current = {}
            blocks.append((number, current))
        if key in current:
            raise ParseError(f"key {key!r} repeated within one port record", line=number)
        current[key] = value
    skipped.check(sum(len(fields) for _, fields in blocks))
    if not blocks:
        raise NoData("esxcli network vm port list printed no ports")
    last_line, last = blocks[-1]
    printed = {key for _, fields in blocks[:-1] for key in fields} or set(PORT_KEYS)  # what the others hold
    missing = [key for key in PORT_KEYS if key in printed and key not in last]
    if missing and list(last)[-1] in PORT_KEYS[:-1]:  # it stops on a key esxcli prints others after
        warnings.append(f"the last port record (line {last_line}) stops without {', '.join(missing[:3])}"
                        f"{' ...' if len(missing) > 3 else ''}: the capture may be cut")
    return EsxcliVmPorts(tuple(_port(fields, number) for number, fields in blocks), tuple(warnings))


def _key_value(line: str) -> tuple[str, str] | None:
    """``Key: value`` / ``Key:`` (stripped), or None. str.partition, not a regex: a lazy key
    between optional spaces backtracked quadratically on long lines without a ':'."""
    key, sep, value = line.partition(":")
    if not sep or not key.strip() or (value and not value[0].isspace()):
        return None
    return key.strip(), value.strip()


def _port(fields: dict[str, str], number: int) -> EsxcliPort:
    port_id = fields.get("Port ID", "")
    if not is_count(port_id):
        raise ParseError(f"port record without a numeric 'Port ID' (keys: {', '.join(fields)[:80]})", line=number)
    mac = fields.get("MAC Address", "").lower()
    if not _MAC.match(mac):
        raise ParseError(f"port {port_id}: bad or missing 'MAC Address' {mac!r}", line=number)
    uplink_id = fields.get("Uplink Port ID", "")
    if uplink_id and not is_count(uplink_id):
        raise ParseError(f"port {port_id}: 'Uplink Port ID' {uplink_id!r} is not a number", line=number)
    ip = fields.get("IP Address", "")
    team = fields.get("Team Uplink", "")
    filters = fields.get("Active Filters", "")
    return EsxcliPort(int(port_id), fields.get("vSwitch", ""), fields.get("Portgroup", ""),
                      fields.get("DVPort ID") or None, mac, None if ip in ("", "0.0.0.0") else ip,
                      None if team in ("", "void") else team, int(uplink_id) if uplink_id else None,
                      tuple(f.strip() for f in filters.split(",") if f.strip()), dict(fields))


@dataclass(frozen=True)
class EsxcliNicStats:
    name: str | None
    counters: dict[str, int]
    warnings: tuple[str, ...] = ()


# the counters in the order esxcli prints them (formats.md 3.5): a whole output ends with the last
NIC_STATS_KEYS = (
    "Packets received", "Packets sent", "Bytes received", "Bytes sent", "Receive packets dropped",
    "Transmit packets dropped", "Multicast packets received", "Broadcast packets received", "Multicast packets sent",
    "Broadcast packets sent", "Total receive errors", "Receive length errors", "Receive over errors",
    "Receive CRC errors", "Receive frame errors", "Receive FIFO errors", "Receive missed errors",
    "Total transmit errors", "Transmit aborted errors", "Transmit carrier errors", "Transmit FIFO errors",
    "Transmit heartbeat errors", "Transmit window errors")
_NIC_STATS_SAMPLE = "NIC statistics for vmnic9\n" + "".join(
    f"   {key}: {value}\n" for key, value in zip(NIC_STATS_KEYS, (0, 0, 5271156, 39259722) + (0,) * 19))


@parser("esxcli-nic-stats", about="esxcli network nic stats get -n VMNIC: physical uplink counters",
        sniff=first_line(r"^NIC statistics for \S+"), sample=_NIC_STATS_SAMPLE)
def parse_nic_stats(text: str) -> EsxcliNicStats:
    name: str | None = None
    counters: dict[str, int] = {}
    text, warnings = drop_cut_line(text)
    skipped = Skipped(warnings)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or skipped.cut_mark(number, line):
            continue
        if not counters and name is None and (title := _NIC_TITLE.match(line.strip())):
            name = title["name"]
            continue
        pair = _key_value(line)
        if pair is None:
            skipped.line(ParseError(f"expected 'Counter name: <integer>': {line.strip()[:70]!r}", line=number),
                         started=bool(counters) or name is not None)
            continue
        key, value = pair
        if not value.lstrip("-").isdigit():  # the line's shape, a bad value: an error, not a skip
            raise ParseError(f"expected 'Counter name: <integer>': {line.strip()[:70]!r}", line=number)
        if key in counters:
            raise ParseError(f"counter {key!r} repeated", line=number)
        counters[key] = count(value, f"counter {key[:60]!r}", number)
    skipped.check(len(counters) + (name is not None))
    if not counters:
        raise NoData(f"no NIC counters{f' for {name}' if name else ''}")
    last = list(counters)[-1]
    if name is not None and last in NIC_STATS_KEYS[:-1]:  # a whole output (its title line) ends with the last key
        after = NIC_STATS_KEYS[NIC_STATS_KEYS.index(last) + 1:]
        warnings.append(f"the counters stop after {last!r} ({', '.join(after[:2])}{' ...' if len(after) > 2 else ''} "
                        "missing): the capture may be cut")
    return EsxcliNicStats(name, counters, tuple(warnings))
