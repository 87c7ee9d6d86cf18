"""``esxcfg-vswitch -l``: standard vSwitches with their port groups, and distributed switches with
their DVPorts and clients (docs/raw-formats.md §9, vm-support ``commands/esxcfg-vswitch_-l.txt``).

    Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks
    vSwitch0         1536        3           128               1500    vmnic1

      PortGroup Name        VLAN ID  Used Ports  Uplinks
      Standard Switch - L2VPN - Trunk  4095     0           vmnic1

    DVS Name         Num Ports   Used Ports  Configured Ports  MTU     Uplinks
    Compute_VDS      1536        10          512               1500    vmnic0

      DVPort ID           In Use      Client
      25                  1           web-sv-04a.eth0
      5                   0

An NSX-T N-VDS prints its own section under a 4-column header, without Configured Ports and MTU
(``configured_ports`` and ``mtu`` are then None; net-dvs -l has its MTU):

    Switch Name      Num Ports   Used Ports  Uplinks
    nvds-overlay     10752       14          vmnic2,vmnic3

Names may hold spaces (and overflow their column), so rows are read from the right: the numbers,
then the uplink list (never a bare number), and the name is what is left. A line that is none of
these (an author's ``...``, a prompt) is skipped with a warning (esxdiag.parsers.cuts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.numbers import is_count
from esxdiag.parsers.registry import first_line, parser

_SWITCH_HEADER = re.compile(r"^(Switch|DVS) Name\s+Num Ports\s+Used Ports\s+(Configured Ports\s+MTU\s+)?Uplinks$")
_PORTGROUP_HEADER = re.compile(r"^PortGroup Name\s+VLAN ID\s+Used Ports\s+Uplinks$")
_DVPORT_HEADER = re.compile(r"^DVPort ID\s+In Use\s+Client$")


@dataclass(frozen=True)
class PortGroup:
    name: str
    vlan: int
    used_ports: int
    uplinks: tuple[str, ...]


@dataclass(frozen=True)
class DVPort:
    port_id: str
    in_use: bool
    client: str | None  # "VM.ethN", a vmk or vmnic; None when the port is free


@dataclass(frozen=True)
class Switch:
    name: str
    distributed: bool
    num_ports: int
    used_ports: int
    configured_ports: int | None  # None for an N-VDS (its header has no such column)
    mtu: int | None  # None for an N-VDS
    uplinks: tuple[str, ...]
    portgroups: tuple[PortGroup, ...] = ()
    dvports: tuple[DVPort, ...] = ()


@dataclass(frozen=True)
class VSwitchList:
    switches: tuple[Switch, ...]
    warnings: tuple[str, ...] = ()

    def by_name(self, name: str) -> Switch | None:
        return next((s for s in self.switches if s.name == name), None)

    def by_client(self, client: str) -> Switch | None:
        """The distributed switch one of whose DVPorts this client (``VM.ethN``) uses."""
        return next((s for s in self.switches if any(p.client == client for p in s.dvports)), None)


def _row(line: str, numbers: int, number: int, what: str) -> tuple[str, list[int], tuple[str, ...]]:
    """NAME N1 .. Nk [UPLINKS]: the uplink list is optional and never a bare number."""
    for with_uplinks in (True, False):
        parts = line.rsplit(None, numbers + with_uplinks)
        if len(parts) != numbers + 1 + with_uplinks:
            continue
        uplinks = parts[-1] if with_uplinks else ""
        values = parts[1:numbers + 1]
        if (not with_uplinks or not uplinks.isdigit()) and all(is_count(v) for v in values):
            return parts[0], [int(v) for v in values], tuple(u for u in uplinks.split(",") if u)
    raise ParseError(f"not a {what} row (name, {numbers} numbers, uplinks): {line.strip()[:80]!r}", line=number)


_SAMPLE = """\
Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks
vSwitch0         1536        3           128               1500    vmnic1

  PortGroup Name        VLAN ID  Used Ports  Uplinks
  VM Network            0        1           vmnic1

DVS Name         Num Ports   Used Ports  Configured Ports  MTU     Uplinks
Compute_VDS      1536        10          512               1500    vmnic0

  DVPort ID           In Use      Client
  32                  1           vmnic0
  25                  1           web-sv-04a.eth0
"""


@parser("esxcfg-vswitch", about="esxcfg-vswitch -l: standard and distributed switches, MTU, uplinks, port groups",
        sniff=first_line(r"^\s*(Switch|DVS) Name\s+Num Ports\s+Used Ports\s+(Configured Ports\s+MTU\s+)?Uplinks"),
        sample=_SAMPLE)
def parse_vswitch_list(text: str) -> VSwitchList:
    switches: list[dict] = []
    text, warnings = drop_cut_line(text)
    skipped, read = Skipped(warnings), 0
    table = None  # which header the rows below belong to
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or skipped.cut_mark(number, line):
            continue
        try:
            table = _line(line, number, table, switches)
            read += 1
        except ParseError as exc:
            if not exc.why.startswith(("not a ", "expected a ")):  # a line of another shape
                raise
            skipped.line(exc, started=bool(switches))
    skipped.check(read)
    if not switches:
        raise NoData("esxcfg-vswitch -l listed no switch")
    return VSwitchList(tuple(Switch(**{**s, "portgroups": tuple(s["portgroups"]), "dvports": tuple(s["dvports"])})
                             for s in switches), tuple(warnings))


def _line(line: str, number: int, table: str | None, switches: list[dict]) -> str | None:
    """Read one line into ``switches``; returns the table the next rows belong to."""
    if m := _SWITCH_HEADER.match(line):
        return ("dvs" if m[1] == "DVS" else "switch") + ("" if m[2] else "-nvds")
    if _PORTGROUP_HEADER.match(line) or _DVPORT_HEADER.match(line):
        if not switches:
            raise ParseError(f"{line.split()[0]} table before any switch", line=number)
        return "portgroup" if line.startswith("PortGroup") else "dvport"
    if table in ("switch", "dvs"):
        name, (num, used, configured, mtu), uplinks = _row(line, 4, number, "switch")
        switches.append(_switch(name, table == "dvs", num, used, configured, mtu, uplinks))
    elif table in ("switch-nvds", "dvs-nvds"):
        name, (num, used), uplinks = _row(line, 2, number, "switch")
        switches.append(_switch(name, True, num, used, None, None, uplinks))
    elif table == "portgroup":
        name, (vlan, used), uplinks = _row(line, 2, number, "port group")
        switches[-1]["portgroups"].append(PortGroup(name, vlan, used, uplinks))
    elif table == "dvport":
        parts = line.split(None, 2)
        if len(parts) < 2 or parts[1] not in ("0", "1"):  # an N-VDS's DVPort IDs are names and UUIDs
            raise ParseError(f"not a DVPort row (id, in use, client): {line[:80]!r}", line=number)
        switches[-1]["dvports"].append(DVPort(parts[0], parts[1] == "1", parts[2] if len(parts) > 2 else None))
    else:
        raise ParseError(f"expected a 'Switch Name' or 'DVS Name' header, got {line[:60]!r}", line=number)
    return table


def _switch(name: str, distributed: bool, num: int, used: int, configured: int | None, mtu: int | None,
            uplinks: tuple[str, ...]) -> dict:
    return {"name": name, "distributed": distributed, "num_ports": num, "used_ports": used,
            "configured_ports": configured, "mtu": mtu, "uplinks": uplinks, "portgroups": [], "dvports": []}
