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
