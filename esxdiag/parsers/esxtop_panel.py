"""The interactive esxtop CPU panel (``ID GID NAME NWLD %USED ... %SWPWT``) as pasted from a terminal."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError


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


_MAX_COLUMNS = 64
_PANEL_HEADER = re.compile(r"\s*ID\s+GID\s+NAME\s+NWLD\s+(%.*)")


def parse_cpu_panel(text: str) -> CpuPanel:
    """The interactive esxtop CPU screen as pasted: ``ID GID NAME NWLD %USED ... %SWPWT`` then one
    row per group; NAME may contain spaces, so a row is anchored on the numbers at both ends."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if _PANEL_HEADER.fullmatch(line.rstrip())), None)
    if start is None:
        raise ParseError("no esxtop CPU panel header (ID GID NAME NWLD %USED ...)")
    labels = lines[start].split()[4:]
    if len(labels) > _MAX_COLUMNS:
        raise ParseError(f"esxtop CPU panel header with {len(labels)} columns (at most {_MAX_COLUMNS})", start + 1)
    number = r"\s+(-?[0-9]{1,12}(?:\.[0-9]{1,6})?)"  # bounded: always a finite float
    row_re = re.compile(r"\s*([0-9]{1,12})\s+([0-9]{1,12})\s+(.*?)\s+([0-9]{1,9})" + number * len(labels) + r"\s*")
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
