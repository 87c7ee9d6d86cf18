"""The interactive esxtop CPU panel (``ID GID NAME NWLD %USED ... %SWPWT``) as pasted from a terminal."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.registry import parser


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
    warnings: tuple[str, ...] = ()


_ID = re.compile(r"[0-9]{1,12}")
_VALUE = re.compile(r"-?[0-9]{1,12}(?:\.[0-9]{1,6})?")  # bounded: always a finite float
_PANEL_HEADER = re.compile(r"\s*ID\s+GID\s+NAME\s+NWLD\s+(%.*)")


_HEADER_ANYWHERE = re.compile(r"(?m)^[^\S\r\n]*ID[^\S\r\n]+GID[^\S\r\n]+NAME[^\S\r\n]+NWLD[^\S\r\n]+%USED\b.*%RDY")
_SAMPLE = """\
   ID      GID    NAME             NWLD   %USED    %RUN    %SYS   %WAIT %VMWAIT    %RDY   %IDLE  %OVRLP   %CSTP  %MLMTD  %SWPWT

 5572782  5572782 iperf-test2         6   66.50   32.82   28.20  571.70    0.17    0.12   67.73    0.01    0.00    0.00    0.00
 5572767  5572767 iperf-test1         6   37.77   29.20    3.56  505.83    0.13   69.60    3.19    0.02    0.00   69.52    0.00
   19840    19840 NSX_Controller_     9   11.60   12.63    0.36  894.20    0.00    0.17  391.13    0.04    0.00    0.00    0.00
"""


@parser("esxtop-cpu-panel", about="interactive esxtop CPU screen (ID GID NAME NWLD %USED ... %RDY), pasted as text",
        sniff=lambda head: bool(_HEADER_ANYWHERE.search(head)), sample=_SAMPLE)
def parse_cpu_panel(text: str) -> CpuPanel:
    """The interactive esxtop CPU screen as pasted: ``ID GID NAME NWLD %USED ... %SWPWT`` then one
    row per group; NAME may contain spaces, so a row is anchored on the numbers at both ends."""
    text, warnings = drop_cut_line(text)
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if _PANEL_HEADER.fullmatch(line.rstrip())), None)
    if start is None:
        raise ParseError("no esxtop CPU panel header (ID GID NAME NWLD %USED ...)")
    labels = lines[start].split()[4:]
    groups = []
    # lines above the header are esxtop's own summary (uptime, PCPU USED): not read
    skipped = Skipped(warnings)
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if not line.strip() or skipped.cut_mark(number, line):
            continue
        row = _row(line, len(labels))
        if row is None:  # another screen's line, or a row cut short
            skipped.line(ParseError(f"not a CPU panel row (ID GID NAME NWLD and {len(labels)} values): "
                                    f"{line.strip()[:80]!r}", line=number))
            continue
        ident, gid, name, nwld, numbers = row
        values = dict(zip(labels, numbers))
        groups.append(CpuPanelGroup(
            ident, gid, name, nwld, values, values.get("%RDY"), values.get("%CSTP"), values.get("%MLMTD"),
            values.get("%SWPWT"), values.get("%USED"),
        ))
    skipped.check(len(groups))
    if not groups:
        raise NoData("esxtop CPU panel header without rows")
    return CpuPanel(tuple(groups), tuple(warnings))


def _row(line: str, columns: int) -> tuple[int, int, str, int, list[float]] | None:
    """``ID GID NAME NWLD`` + ``columns`` numbers, anchored on the numbers at both ends (NAME may
    hold spaces). Tokens with their offsets, not one regex: a lazy NAME between runs of spaces
    backtracked quadratically on long lines."""
    tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+", line)]
    if len(tokens) < 4 + columns:  # ID GID NAME(1+ tokens) NWLD values
        return None
    head, tail = tokens[:2], tokens[len(tokens) - columns - 1:]
    if not all(_ID.fullmatch(t) for _, t in head + tail[:1]) or not all(_VALUE.fullmatch(t) for _, t in tail[1:]):
        return None
    name = line[tokens[2][0] : tail[0][0]].strip()
    return int(head[0][1]), int(head[1][1]), name, int(tail[0][1]), [float(t) for _, t in tail[1:]]


# ---------------------------------------------------------------- the network screen ('n')

@dataclass(frozen=True)
class NetPanelPort:
    port_id: int
    used_by: str  # as printed: "vmnic0", "vmk0", "Management", "Shadow of vmnic0", "4534232:testvm1.eth0"
    world: int | None  # a VM's port: the world ID before the colon of USED-BY
    client: str | None  # a VM's port: what follows it (the VM, or VM.ethN), cut to the column as printed
    team_pnic: str  # the uplink the port is teamed to, as printed ("vmnic1", "-", "n/a", "TST_LAG*")
    dname: str  # the switch: vSwitch0, DvsPortset-0
    columns: dict[str, float]  # every value column read, by its printed name (PKTTX/s, %DRPRX, ...)
    dropped_tx_pct: float | None  # %DRPTX; None when the paste cut it off
    dropped_rx_pct: float | None  # %DRPRX: receive packets dropped at the port, the vNIC's drop symptom


@dataclass(frozen=True)
class NetPanel:
    ports: tuple[NetPanelPort, ...]
    columns: tuple[str, ...]  # the value columns read, in printed order
    warnings: tuple[str, ...] = ()


# the value columns esxtop's network screen prints (its default and optional fields): a last header
# word outside them was cut by the console's width
NET_COLUMNS = ("PKTTX/s", "MbTX/s", "PSZTX", "PKTRX/s", "MbRX/s", "PSZRX", "%DRPTX", "%DRPRX", "ACTN/s",
               "PKTTXMUL/s", "PKTTXBRD/s", "PKTRXMUL/s", "PKTRXBRD/s", "%DRPTXMUL", "%DRPRXMUL")
_NET_HEADER = re.compile(r"\s*PORT-ID\s+USED-BY\s+TEAM-PNIC\s+DNAME\s+(\S.*)")
_NET_HEADER_ANYWHERE = re.compile(r"(?m)^[^\S\r\n]*PORT-ID[^\S\r\n]+USED-BY[^\S\r\n]+TEAM-PNIC[^\S\r\n]+DNAME\b")
_WORLD_CLIENT = re.compile(r"([0-9]{1,12}):(\S.*)")
_NET_SAMPLE = """\
 1:07:14am up 2:33, 163 worlds; CPU load average: 0.01, 0.05, 0.02

PORT-ID USED-BY TEAM-PNIC DNAME PKTTX/s MbTX/s PKTRX/s MbRX/s %DRPTX %DRPRX
16777217 Management n/a vSwitch0 0.00 0.00 0.00 0.00 0.00 0.00
16777218 vmnic0 \u2013 vSwitch0 27.13 0.07 0.00 0.00 0.00 0.00
16777219 vmk0 vmnic0 vSwitch0 27.13 0.07 0.00 0.00 0.00 0.00
33554433 Management n/a vSwitch1 0.00 0.00 0.00 0.00 0.00 0.00
33554434 vmnic2 \u2013 vSwitch1 0.00 0.00 27.13 0.07 0.00 0.00
33554435 vmnic3 \u2013 vSwitch1 0.00 0.00 0.00 0.00 0.00 0.00
33554436 21153:Test vmnic3 vSwitch1 0.00 0.00 0.00 0.00 0.00 0.00
"""


@parser("esxtop-net-panel", about="interactive esxtop network screen (PORT-ID USED-BY TEAM-PNIC DNAME ... %DRPRX), "
        "pasted as text", sniff=lambda head: bool(_NET_HEADER_ANYWHERE.search(head)), sample=_NET_SAMPLE)
def parse_net_panel(text: str) -> NetPanel:
    """The esxtop network screen as pasted: one row per vSwitch port. USED-BY may hold spaces, so a
    row is anchored on PORT-ID at the left and on TEAM-PNIC, DNAME and the values at the right. A
    header cut by the console's width (``MbRX/``) leaves its last column out, and the rows' last
    value with it (cut at the same width); screens pasted twice are read once, a port whose rows
    differ between them is left out with a warning."""
    text, warnings = drop_cut_line(text)
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if _NET_HEADER.fullmatch(line.rstrip())), None)
    if start is None:
        raise ParseError("no esxtop network screen header (PORT-ID USED-BY TEAM-PNIC DNAME ...)")
    labels = lines[start].split()[4:]
    cut = _cut_label(labels, start + 1, warnings)
    header = lines[start].rstrip()
    ports: dict[int, NetPanelPort] = {}
    differ: set[int] = set()
    skipped = Skipped(warnings)
    for number, line in enumerate(lines[start + 1:], start + 2):
        if not line.strip() or line.rstrip() == header or skipped.cut_mark(number, line):
            continue
        port = _net_row(line, labels, cut)
        if port is None:
            skipped.line(ParseError(f"not a network screen row (PORT-ID USED-BY TEAM-PNIC DNAME and {len(labels)} "
                                    f"values): {line.strip()[:80]!r}", line=number), started=True)
            continue
        known = ports.get(port.port_id)
        if known is not None and known != port and port.port_id not in differ:
            differ.add(port.port_id)
            warnings.append(f"line {number}: port {port.port_id} printed twice with different values (two screens "
                            "pasted?): not used")
        ports.setdefault(port.port_id, port)
    skipped.check(len(ports))
    kept = tuple(p for p in ports.values() if p.port_id not in differ)
    if not kept:
        raise NoData("esxtop network screen header without rows")
    return NetPanel(kept, tuple(labels[:len(labels) - cut]), tuple(warnings))


def _cut_label(labels: list[str], number: int, warnings: list[str]) -> int:
    """1 when the header's last word is not a column esxtop prints (cut by the console's width)."""
    if labels and labels[-1] not in NET_COLUMNS:
        warnings.append(f"line {number}: the header ends in {labels[-1]!r}, cut by the console's width: that column "
                        "and every column after it are not in the paste"
                        + ("" if "%DRPRX" in labels[:-1] else " (no %DRPRX: widen the terminal, or use esxtop -b)"))
        return 1
    return 0


def _net_row(line: str, labels: list[str], cut: int) -> NetPanelPort | None:
    """One port, or None when the line is not a row of this screen. Tokens with their offsets (no
    regex with a lazy USED-BY, which backtracked on long lines)."""
    tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+", line)]
    values = len(labels)
    if len(tokens) < 4 + values or not _ID.fullmatch(tokens[0][1]):
        return None
    tail = tokens[len(tokens) - values:]
    if not all(_VALUE.fullmatch(t) for _, t in tail):
        return None
    team, dname = tokens[len(tokens) - values - 2][1], tokens[len(tokens) - values - 1][1]
    used_by = line[tokens[1][0]: tokens[len(tokens) - values - 2][0]].strip()
    numbers = {label: float(t) for label, (_, t) in zip(labels[:values - cut], tail)}
    vm = _WORLD_CLIENT.fullmatch(used_by)
    return NetPanelPort(int(tokens[0][1]), used_by, int(vm.group(1)) if vm else None, vm.group(2) if vm else None,
                        team, dname, numbers, numbers.get("%DRPTX"), numbers.get("%DRPRX"))
