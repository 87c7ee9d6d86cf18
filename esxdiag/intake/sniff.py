r"""Which parser kind a capture is, from the first few KiB of its text: one cheap test per kind.

A file that no test claims is "unknown"; one that two claim is "ambiguous" - both are named to
the user instead of guessed. The tests look for what the command itself prints (headers, block
titles, key names), never for values, so they hold on real captures from any host. Multi-line
patterns match blanks with [^\S\r\n] (NBSP too, never a line end), not \s: \s* at every line start
of a head full of newlines is quadratic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from esxdiag.errors import ParseError
from esxdiag.textio import decode

HEAD_BYTES = 64 * 1024


def _has(*needles: str) -> Callable[[str], bool]:
    return lambda head: all(n in head for n in needles)


def _first_line(pattern: str, flags: int = 0) -> Callable[[str], bool]:
    rx = re.compile(pattern, flags)
    return lambda head: bool(rx.match(_lines(head)[0] if _lines(head) else ""))


def _lines(head: str) -> list[str]:
    return [line for line in head.splitlines() if line.strip()][:200]


def _all_lines(pattern: str) -> Callable[[str], bool]:
    rx = re.compile(pattern)
    return lambda head: bool(_lines(head)) and all(rx.match(line.strip()) for line in _lines(head))


def _json_schema(tag: str) -> Callable[[str], bool]:
    rx = re.compile(r'^\s*\{\s*"schema"\s*:\s*"' + re.escape(tag) + '"')
    return lambda head: bool(rx.match(head))


def _win(*keys: str) -> Callable[[str], bool]:
    """PowerShell output in any of CSV, JSON, Format-List or table form: the property names."""
    return lambda head: all(re.search(r"(?m)(^|[\"\s,])" + re.escape(k) + r"([\"\s:,]|$)", head) for k in keys)


def _one_integer(head: str) -> bool:
    lines = _lines(head)
    return len(lines) == 1 and lines[0].strip().isdigit()


def _netstat(head: str) -> bool:
    if bool(re.search(r"(?m)^(Tcp|Ip|TcpExt):[^\S\r\n]*$", head)) or head.lstrip().startswith(("#kernel", '{"kernel"')):
        return True
    return bool(re.search(r"(?m)^[^\S\r\n]*\d+ segments? retransmit", head))  # `netstat -s | grep retrans`


_VMXNET3_COUNTER = re.compile(r"^(pkts rx OOB|drv dropped (rx|tx) total|pkts rx err|Rx Queue#|Tx Queue#)\b")


def _ethtool_stats(head: str) -> bool:
    """`ethtool -S`, or its vmxnet3 lines alone (`ethtool -S eth0 | grep OOB`)."""
    lines = [line.strip() for line in _lines(head)]
    if lines and lines[0] == "NIC statistics:":
        return True
    return bool(lines) and all(re.match(r"^[\w #./-]+: ?\d+$", line) for line in lines) \
        and any(_VMXNET3_COUNTER.match(line) for line in lines)


_GREP_HIT = r"^/[^:\s]+:\d+:.*$"

SNIFFERS: dict[str, Callable[[str], bool]] = {
    "esxtop": _first_line(r'^\ufeff?"?\(PDH-CSV 4\.0\)'),
    "esxtop-cpu-panel": lambda h: bool(re.search(r"(?m)^[^\S\r\n]*ID[^\S\r\n]+GID[^\S\r\n]+NAME[^\S\r\n]+NWLD[^\S\r\n]+%USED\b.*%RDY", h)),
    "vsish-rxsummary": _has("stats of a vmxnet3 vNIC rx queue {", "running out of buffers:"),
    "vsish-rxqueue-status": _has("status of a vmxnet3 vNIC rx queue {", "ring #1 size:"),
    "vsish-clientstats": _has("port client stats {", "droppedRx:"),
    "vsish-ls": _all_lines(r"^\d{1,3}/$"),
    "vsish-python": lambda h: "Python mode is deprecated" in h[:400] or bool(re.match(r'^\s*\{\s*\n\s*"\w+" : ', h)),
    "net-stats": _first_line(r"^\s*PortNum\s+Type\s+SubType\s+SwitchName\s+MACAddress\s+ClientName"),
    "net-stats-json": lambda h: bool(re.match(r'^\s*\{\s*"sysinfo"\s*:', h)) and '"stats"' in h,
    "esxcfg-vswitch": _first_line(r"^\s*(Switch|DVS) Name\s+Num Ports\s+Used Ports\s+Configured Ports\s+MTU\s+Uplinks"),
    "esxcli-vm-list": _first_line(r"^\s*World ID\s+Name\s+Num Ports\s+Networks"),
    "esxcli-vm-ports": lambda h: bool(re.match(r"^\s*Port ID: ", h)) and "MAC Address:" in h,
    "esxcli-nic-stats": _first_line(r"^NIC statistics for \S+"),
    "ethtool-stats": _ethtool_stats,
    "ethtool-rings": _first_line(r"^Ring parameters for \S+:"),
    "ethtool-driver": lambda h: bool(re.match(r"^driver: \S*", h)) and "bus-info:" in h,
    "ethtool-permaddr": _first_line(r"^Permanent address: "),
    "ip-link": lambda h: bool(_lines(h)) and all(re.match(r"^\d+: \S+: <[^>]*>", line) or
                                                 line[0].isspace() or re.match(r"^(link/|altname )", line)
                                                 for line in _lines(h)) and bool(re.match(r"^\d+: \S+: <", h)),
    "ring-persistence": _all_lines(_GREP_HIT),
    "netstat": _netstat,
    "win-advprops": _win("DisplayName", "DisplayValue", "RegistryKeyword"),
    "win-rss": _win("NumberOfReceiveQueues", "Profile"),
    "win-stats": _win("ReceivedDiscardedPackets"),
    "win-netadapter": lambda h: _win("InterfaceDescription", "MacAddress", "LinkSpeed")(h)
    and not _win("NumberOfReceiveQueues")(h) and not _win("ReceivedDiscardedPackets")(h),
    "vsphere-vm": _json_schema("esxdiag.vsphere_vm/1"),
    "vsphere-perf": _json_schema("esxdiag.vsphere_perf/1"),
    "text": lambda h: _one_integer(h) or _first_line(r"^VMware ESXi \d")(h),
}


@dataclass(frozen=True)
class Sniffed:
    kinds: tuple[str, ...]  # every kind whose test matched: exactly one is a clear answer
    why: str | None = None  # unreadable: binary, undecodable

    @property
    def kind(self) -> str | None:
        return self.kinds[0] if len(self.kinds) == 1 else None


def sniff_text(head: str) -> Sniffed:
    return Sniffed(tuple(kind for kind, test in SNIFFERS.items() if test(head)))


def sniff_file(path: Path) -> Sniffed:
    try:
        with open(path, "rb") as fh:
            data = fh.read(HEAD_BYTES)
        head = decode(data, str(path))
    except ParseError as exc:
        return Sniffed((), exc.why)
    except OSError as exc:
        return Sniffed((), exc.strerror or str(exc))
    if len(data) == HEAD_BYTES:  # a multi-line record may be cut at the edge: drop the partial line
        head = head[: head.rfind("\n") + 1] or head
    if not head.strip():
        return Sniffed((), "empty")
    return sniff_text(head)


def text_spec(head: str, windows: bool) -> str:
    """The spec of a 'text' capture: the ESXi version, or a vCPU count (nproc / Windows)."""
    if head.lstrip().startswith("VMware ESXi"):
        return "esxi_version"
    return "win_cpu" if windows else "nproc"


def netstat_spec(head: str) -> str:
    return "nstat" if head.lstrip().startswith(("#kernel", '{"kernel"')) else "netstat_s"
