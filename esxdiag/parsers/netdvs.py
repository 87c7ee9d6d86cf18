"""``net-dvs -l``: each distributed switch the host is a member of, with its DVPorts (docs/raw-formats.md §9,
vm-support ``commands/net-dvs_-l.txt``).

The declared sample (``_SAMPLE`` below, parsed by the tests) shows the shape.

Published copies lose their indentation, so lines are told apart by their text, not their depth: a
property is a dotted name followed by `` = value`` or ``:``; the lines after it, up to its
``propType = ...`` line or the next property, are its items. Port IDs may be names or UUIDs
(``port uplink1:``); the ``portID=`` in the volatile status is the port number net-stats -l shows.
No client name is printed: join on ``port_num`` with net-stats -l for it. "In" and "Out" are kept
as printed (the vSphere API calls them "received" and "forwarded" by the port).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.numbers import count
from esxdiag.parsers.registry import first_line, parser

_PORT = re.compile(r"^port (\S+):$")
_PROPERTY = re.compile(r"^([A-Za-z][\w-]*(?:\.[\w-]+)+)(?: =(.*)|:)$")
_PROPTYPE = re.compile(r"propType = [A-Z ]+")
_SECTIONS = ("global properties:", "host properties:")
_STATISTICS = "com.vmware.common.port.statistics"
_UPLINKS = {"com.vmware.common.uplinkPorts": "uplink_names", "com.vmware.common.host.uplinkPorts": "uplink_ports"}
_WORD = re.compile(r"\w[\w.-]*")
_MTU = ("com.vmware.etherswitch.mtu", "com.vmware.common.portset.mtu")  # a VDS's; an N-VDS's (NSX-T)


@dataclass(frozen=True)
class DvsPort:
    port_id: str  # the DVPort key: a number, a name or a UUID
    portgroup: str | None = None
    status: str | None = None  # "inUse linkUp portID=…", "free"
    in_use: bool | None = None
    link_up: bool | None = None
    port_num: int | None = None  # the portset port number (net-stats -l PortNum)
    statistics: dict[str, int] = field(default_factory=dict)  # pktsInDropped, pktsOutDropped, ...


@dataclass(frozen=True)
class Dvs:
    switch_id: str
    switch_type: str
    name: str | None = None  # com.vmware.common.alias
    max_ports: int | None = None
    mtu: int | None = None
    uplink_names: tuple[str, ...] = ()
    uplink_ports: tuple[str, ...] = ()  # this host's uplink DVPort IDs
    ports: tuple[DvsPort, ...] = ()


@dataclass(frozen=True)
class NetDvsList:
    switches: tuple[Dvs, ...]
    warnings: tuple[str, ...] = ()



def _switch(line: str) -> dict | None:
    """``switch ID (type)``: string operations, as a regex would backtrack on crafted lines."""
    head, sep, kind = line.rpartition(" (")
    switch_id = head[7:].strip()
    if line.startswith("switch ") and sep and switch_id and kind.endswith(")") and _WORD.fullmatch(kind[:-1]):
        return {"switch_id": switch_id, "switch_type": kind[:-1], "ports": []}
    return None


def _value(text: str) -> tuple[str, bool]:
    """The value before a trailing ``, propType = CONFIG`` and whether that tail was there."""
    head, sep, tail = text.rpartition("propType = ")
    if sep and _PROPTYPE.fullmatch(sep + tail):
        return head.rstrip().removesuffix(",").strip(), True
    return text.strip(), False


def _status(port: dict, value: str, number: int) -> None:
    words = value.split()
    port.update(status=value, in_use=bool(words) and words[0] == "inUse",
                link_up=True if "linkUp" in words else False if "linkDown" in words else None)
    for word in words:
        if word.startswith("portID="):
            port["port_num"] = count(word[7:], "portID", number)


def _store(dvs: dict, port: dict | None, prop: tuple, skipped: Skipped) -> None:
    name, value, items, number = prop  # items: (line, text) under the property
    if port is None:
        if name == "com.vmware.common.alias" and value is not None:
            dvs["name"] = value
        elif name in _MTU and value is not None:
            dvs["mtu"] = count(value, "MTU", number)
        elif name in _UPLINKS:  # one per line, or an N-VDS's "uplink1, uplink2" on one line
            dvs[_UPLINKS[name]] = tuple(u.strip() for _, text in items for u in text.split(",") if u.strip())
    elif name == "com.vmware.common.port.portgroupid" and value:
        port["portgroup"] = value
    elif name == "com.vmware.common.port.volatile.status" and value is not None:
        _status(port, value, number)
    elif name == _STATISTICS:
        stats = port.setdefault("statistics", {})
        for line, item in items:
            key, sep, amount = item.partition(" = ")
            if not sep or not key.isidentifier():
                skipped.line(ParseError(f"not a 'counter = N' line in {_STATISTICS}: {item[:80]!r}", line=line))
                continue
            stats[key] = count(amount, key, line)


_SAMPLE = """\
switch b7 00 16 50 a9 8d 8d b8-5c 4a 54 c2 0e a7 91 9a (etherswitch)
        max ports: 1536
        global properties:
                com.vmware.common.alias = Compute_VDS ,         propType = CONFIG
                com.vmware.common.uplinkPorts:
                        Uplink 1
                        propType = CONFIG
                com.vmware.etherswitch.mtu = 1500 ,     propType = CONFIG
        host properties:
                com.vmware.common.host.portset = DvsPortset-0 ,         propType = CONFIG
                com.vmware.common.host.uplinkPorts:
                        32
                        propType = CONFIG
        port 41:
                com.vmware.common.port.portgroupid = dvportgroup-42 ,   propType = CONFIG
                com.vmware.common.port.statistics:
                        pktsInUnicast = 893
                        pktsOutUnicast = 0
                        pktsInDropped = 0
                        pktsOutDropped = 0
                        propType = RUNTIME
                com.vmware.common.port.volatile.status = inUse linkUp portID=33554441  propType = RUNTIME
"""
_SWITCH_TITLE = first_line(r"^switch \S.* \(\w[\w.-]*\)\s*$")


@parser("net-dvs", about="net-dvs -l: distributed switches, their uplinks, MTU and DVPorts with In/Out counters",
        sniff=lambda head: _SWITCH_TITLE(head) and "max ports:" in head, sample=_SAMPLE)
def parse_net_dvs(text: str) -> NetDvsList:
    switches: list[dict] = []
    port: dict | None = None
    prop: tuple[str, str | None, list[tuple[int, str]], int] | None = None  # open property: name, value, items, line
    closed = True  # the open property ended with its propType line
    text, warnings = drop_cut_line(text)
    skipped, read = Skipped(warnings), 0

    def flush() -> None:
        nonlocal prop
        if prop is not None:
            _store(switches[-1], port, prop, skipped)
            prop = None

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or skipped.cut_mark(number, line):
            continue
        read += 1
        if dvs := _switch(line):
            flush()
            switches.append(dvs)
            port, closed = None, True
            continue
        if not switches:
            raise ParseError(f"expected a 'switch ID (type)' line, got {line[:60]!r}", line=number)
        if m := _PORT.match(line):
            flush()
            port, closed = {"port_id": m[1]}, True
            switches[-1]["ports"].append(port)
        elif line.startswith("max ports:") and port is None:
            switches[-1]["max_ports"] = count(line[10:], "max ports", number)
        elif line in _SECTIONS and port is None:
            flush()
            closed = True
        elif m := _PROPERTY.match(line):
            flush()
            value, closed = _value(m[2]) if m[2] is not None else (None, False)
            prop = (m[1], value, [], number)
        elif prop is not None and not closed:
            if _PROPTYPE.fullmatch(line):
                closed = True
            else:
                prop[2].append((number, line))
        else:
            read -= 1
            skipped.line(ParseError(f"not a net-dvs property, port or switch line: {line[:80]!r}", line=number))
    if prop is not None and not closed and prop[0] == _STATISTICS:
        raise ParseError(f"cut short inside {_STATISTICS} (no closing propType line)", line=prop[3])
    flush()
    skipped.check(read)
    if not switches:
        raise NoData("net-dvs -l listed no distributed switch")
    return NetDvsList(tuple(Dvs(**{**s, "ports": tuple(DvsPort(**p) for p in s["ports"])}) for s in switches),
                      tuple(warnings))
