"""Linux guest configuration: ``ip -o link show`` and where ring sizes are made persistent."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.numbers import count, is_count
from esxdiag.parsers.registry import all_lines, lines, parser


@dataclass(frozen=True)
class IpLink:
    index: int
    name: str  # without the "@peer" part
    mtu: int | None
    mac: str | None  # link/ether address only (loopback, tun, ... have none)
    state: str | None
    flags: tuple[str, ...]
    peer: str | None = None  # "if5" of "veth0@if5", "NONE" of "eth0.10@NONE"
    link_type: str | None = None  # ether, loopback, none, ...
    permaddr: str | None = None  # printed for bond/team members
    altnames: tuple[str, ...] = ()
    attributes: dict[str, str] = field(default_factory=dict)  # every "key value" pair of the header
    stats: dict[str, dict[str, int]] = field(default_factory=dict)  # ip -s [-s] link: rx, tx, rx_errors, tx_errors
    addresses: tuple[str, ...] = ()  # ip address: the inet / inet6 addresses (without the prefix length)

    @property
    def rx_missed(self) -> int | None:
        """Missed receive frames: under RX in iproute2 5.x, under ``RX errors`` (-s -s) before."""
        return self.stats.get("rx", {}).get("missed", self.stats.get("rx_errors", {}).get("missed"))


@dataclass(frozen=True)
class IpLinks:
    links: tuple[IpLink, ...]
    warnings: tuple[str, ...] = ()


_HEAD = re.compile(r"^(?P<index>[0-9]{1,9}):\s+(?P<name>[^:@\s]+)(?:@(?P<peer>[^:\s]+))?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$")
_MAC = re.compile(r"^(?:[0-9a-f]{2}:){5}[0-9a-f]{2}$")
# ip -s link: a header line, then the counters under it (iproute2 < 5.x: overrun; later: missed)
_STATS = {"RX:": "rx", "TX:": "tx", "RX errors:": "rx_errors", "TX errors:": "tx_errors"}
_STAT_NAMES = {"collsns": "collisions", "heartbt": "heartbeat", "crc": "crc"}


_IP_LINK_SAMPLE = (  # one line per link: ip -o shows each line break as a backslash
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000"
    "\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
    "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000"
    "\\    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff\n"
)


def _sniff_ip_link(head: str) -> bool:
    found = lines(head)
    return bool(found) and all(re.match(r"^\d+: \S+: <[^>]*>", line) or line[0].isspace()
                               or re.match(r"^(link/|altname )", line) for line in found) \
        and bool(re.match(r"^\d+: \S+: <", found[0]))


@parser("ip-link", about="ip -o link show / ip -s link / ip address: interfaces with MTU, MAC, state, "
        "addresses and RX/TX counters", sniff=_sniff_ip_link, sample=_IP_LINK_SAMPLE)
def parse_ip_link(text: str) -> IpLinks:
    """``ip -o link show`` (one line per link, continuation shown as ``\\``); the multi-line form,
    ``ip -s [-s] link`` (RX/TX bytes, packets, errors, dropped, missed per interface) and
    ``ip address`` (its inet/inet6 addresses) are read too."""
    records: list[tuple[int, list[tuple[int, str]]]] = []  # (line, parts): joined once, += on a str is quadratic
    text, warnings = drop_cut_line(text)
    skipped = Skipped(warnings)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or skipped.cut_mark(n, line):
            continue
        if line[0].isspace() and records:
            records[-1][1].append((n, line.strip()))
        elif _HEAD.match(line):
            head, *more = line.split("\\")  # ip -o: the line breaks became backslashes
            records.append((n, [(n, head)] + [(n, part.strip()) for part in more if part.strip()]))
        else:
            skipped.line(ParseError(f"not an 'ip link' line: {line.strip()[:80]!r}{_other_format(line)}", line=n),
                         started=bool(records))
    skipped.check(len(records))
    if not records:
        raise NoData("empty ip link output")
    return IpLinks(tuple(_link(parts, warnings) for _, parts in records), tuple(warnings))


def _other_format(line: str) -> str:
    """What a first line that is not ``N: name: <FLAGS>`` is, when it is a known other format."""
    body = line.strip()
    if body.startswith(("[", "{")):
        return " (ip -j JSON: capture 'ip -s link' or 'ip -o link' as text)"
    if "Link encap:" in body or re.match(r"^\S+: flags=\d+<", body):
        return " (ifconfig output: capture 'ip -s link' instead)"
    if re.match(r"^\S+\s+(UP|DOWN|UNKNOWN|LOWERLAYERDOWN)\s", body):
        return " (ip -br link: capture 'ip -s link' or 'ip -o link')"
    if body.startswith("Kernel Interface table") or body.startswith("Iface "):
        return " (netstat -i: capture 'ip -s link' instead)"
    return ""


def _link(parts: list[tuple[int, str]], warnings: list[str]) -> IpLink:
    (n, head), rest = parts[0], parts[1:]
    m = _HEAD.match(head)
    assert m is not None
    stats, addresses, plain = _stats_and_addresses(m["name"], rest, warnings)
    tokens = " ".join([m["rest"]] + plain).split()
    attrs: dict[str, str] = {}
    link_type = mac = permaddr = None
    altnames: list[str] = []
    i = 0
    while i < len(tokens):  # bounded: every branch advances i
        token = tokens[i]
        if token.startswith("link/"):
            link_type = token[5:]
            address = tokens[i + 1] if i + 1 < len(tokens) and ":" in tokens[i + 1] else None
            mac = address.lower() if link_type == "ether" and address and _MAC.match(address.lower()) else None
            i += 2 if address else 1
        elif token == "altname" and i + 1 < len(tokens):
            altnames.append(tokens[i + 1])
            i += 2
        elif i + 1 < len(tokens):
            attrs.setdefault(token, tokens[i + 1])
            i += 2
        else:
            attrs[token] = ""
            i += 1
    if "permaddr" in attrs:
        permaddr = attrs["permaddr"].lower()
    mtu = attrs.get("mtu")
    if mtu is not None and not is_count(mtu):
        raise ParseError(f"mtu {mtu!r} is not a number", line=n)
    return IpLink(int(m["index"]), m["name"], int(mtu) if mtu else None, mac, attrs.get("state"),
                  tuple(f for f in m["flags"].split(",") if f), m["peer"], link_type, permaddr,
                  tuple(altnames), attrs, stats, tuple(addresses))


def _stats_and_addresses(name: str, parts: list[tuple[int, str]], warnings: list[str]):
    """The ``RX: bytes packets ...`` header + counter line pairs and the ``inet ADDR/LEN`` lines of one
    link, and the other parts (link/ether, altname, ``-d`` details) for the attribute pairs."""
    stats: dict[str, dict[str, int]] = {}
    addresses: list[str] = []
    plain: list[str] = []
    i = 0
    while i < len(parts):
        n, part = parts[i]
        label = next((k for k in _STATS if part.startswith(k + " ")), None)
        if label is not None:
            names = [_STAT_NAMES.get(word, word) for word in part[len(label):].split()]
            values = parts[i + 1][1].split() if i + 1 < len(parts) else []
            if len(values) != len(names):
                warnings.append(f"line {n}: {name} {label} header without its counter line under it (capture cut?): "
                                f"its {_STATS[label].replace('_', ' ')} counters are not read")
                i += 1
                continue
            if not all(v.isascii() and v.isdigit() for v in values):
                warnings.append(f"line {parts[i + 1][0]}: {name} {label} counters {' '.join(values)[:60]!r} are not "
                                "all non-negative integers: not read")
                i += 2
                continue
            stats[_STATS[label]] = {k: count(v, f"{name} {label} {k}", parts[i + 1][0]) for k, v in zip(names, values)}
            i += 2
        elif part.startswith(("inet ", "inet6 ")):
            addresses.append(part.split()[1].split("/")[0])
            i += 1
        elif part.startswith("valid_lft "):  # the lifetimes under an inet line
            i += 1
        else:
            plain.append(part)
            i += 1
    return stats, addresses, plain


# ---------------------------------------------------------------- ring persistence

@dataclass(frozen=True)
class PersistHit:
    file: str
    line: int
    text: str
    mechanism: str  # networkmanager udev systemd networkd rc.local ifupdown network-scripts netplan other
    iface: str | None
    rx: int | None
    rx_jumbo: int | None
    tx: int | None = None
    commented: bool = False  # a '#' line: it does not persist anything

    @property
    def sets_ring(self) -> bool:
        return not self.commented and (self.rx is not None or self.rx_jumbo is not None or self.tx is not None)


@dataclass(frozen=True)
class RingPersistence:
    hits: tuple[PersistHit, ...]
    warnings: tuple[str, ...] = ()

    @property
    def persistent(self) -> bool:
        return any(h.sets_ring for h in self.hits)


_GREP_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>[0-9]{1,12}):(?P<text>.*)$")
_MECHANISMS = (("/etc/NetworkManager/", "networkmanager"), ("/etc/udev/", "udev"), ("/lib/udev/", "udev"),
               ("/etc/systemd/network/", "networkd"), ("/etc/systemd/", "systemd"), ("/etc/rc.local", "rc.local"), ("/etc/rc.d/", "rc.local"),
               ("/etc/network/interfaces", "ifupdown"), ("/etc/sysconfig/network-scripts/", "network-scripts"),
               ("/etc/netplan/", "netplan"))
_SET_RING = re.compile(r"(?:-G|--set-ring)\s+(?P<iface>\S+)(?P<args>(?:\s+(?:rx|rx-jumbo|rx-mini|tx)\s+[0-9]{1,9})+)")
_RING_ARG = re.compile(r"\b(rx-jumbo|rx-mini|rx|tx)\s+([0-9]{1,9})\b")
_KEYFILE = re.compile(r"\bring-(rx-jumbo|rx-mini|rx|tx)(?:\s*=\s*|\s+)([0-9]{1,9})\b")  # NM keyfile, ifupdown ethtool hook
_NETWORKD = re.compile(r"^\s*(Rx|RxJumbo|RxMini|Tx)BufferSize\s*=\s*([0-9]{1,9})\s*$")  # a .link file's [Link]
_NETWORKD_RING = {"Rx": "rx", "RxJumbo": "rx-jumbo", "RxMini": "rx-mini", "Tx": "tx"}
_UDEV_NAME = re.compile(r'\b(?:KERNEL|NAME)=="([^"*?\[]+)"')


_PERSISTENCE_SAMPLE = """\
/etc/NetworkManager/system-connections/eth0.nmconnection:12:ring-rx=4096
/etc/udev/rules.d/60-rings.rules:1:ACTION=="add", RUN+="/sbin/ethtool -G eth0 rx 4096"
"""


@parser("ring-persistence", about="grep -rsIn -e ethtool -e ring-rx -e BufferSize /etc/...: where ring sizes are made persistent",
        sniff=all_lines(r"^/[^:\s]+:\d+:.*$"), sample=_PERSISTENCE_SAMPLE)
def parse_ring_persistence(text: str) -> RingPersistence:
    """Output of ``grep -rsIn -e ethtool -e ring-rx <config paths>``. Unlike other captures an
    empty output is a real answer - grep found nothing, i.e. nothing makes ring sizes
    persistent - so it returns ``hits=()`` instead of raising NoData."""
    hits: list[PersistHit] = []
    text, warnings = drop_cut_line(text)
    skipped = Skipped(warnings)
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.startswith("grep: ") or skipped.cut_mark(n, raw):
            continue
        m = _GREP_LINE.match(raw)
        if not m:
            skipped.line(ParseError(f"not a grep 'file:line:text' line: {raw.strip()[:80]!r}", line=n),
                         started=bool(hits))
            continue
        hits.append(_hit(m["file"], int(m["line"]), m["text"]))
    skipped.check(len(hits))
    return RingPersistence(tuple(hits), tuple(warnings))


def _hit(file: str, line: int, text: str) -> PersistHit:
    mechanism = next((name for prefix, name in _MECHANISMS if file.startswith(prefix)), "other")
    values: dict[str, int] = {}
    iface = None
    if m := _SET_RING.search(text):
        iface = m["iface"]
        values = {k: int(v) for k, v in _RING_ARG.findall(m["args"])}
    elif m := _NETWORKD.match(text):
        values = {_NETWORKD_RING[m[1]]: int(m[2])}
    else:
        values = {k: int(v) for k, v in _KEYFILE.findall(text)}
    if iface and iface[0] in "$%":  # udev/$name, ifcfg/${DEVICE}: take the udev match instead
        udev = _UDEV_NAME.search(text)
        iface = udev.group(1) if udev else None
    return PersistHit(file, line, text, mechanism, iface, values.get("rx"), values.get("rx-jumbo"),
                      values.get("tx"), text.lstrip().startswith("#"))
