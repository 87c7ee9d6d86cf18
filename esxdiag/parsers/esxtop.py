"""esxtop output: batch CSV (``esxtop -b``, streamed) and the interactive CPU panel text.

Batch CSV: the header is read once with the csv module and mapped to the wanted column indices
(esxtop_columns); the data rows are read by pyarrow for big clean files (esxtop_arrow) and by
the csv module otherwise (esxtop_rows); both give the same record. The file is never held in
memory. Kept per VM group: ``Group Cpu`` ``% Ready``, ``% CoStop``, ``% Max Limited``, ``% Used``,
``% Run``, ``% Swap Wait``, ``Members``; each ``vmx-vcpu-N`` Vcpu world's ``% Ready``; for the VM's
vNIC ports ``% Received Packets Dropped``, ``Packets Received/sec``, ``MBits Received/sec``, ``% Outbound
Packets Dropped``.

Normalisation: a group's ``% Ready``/``% CoStop``/``% Max Limited`` are sums over all worlds
of the group (a 4-vCPU VM can show 250 % ready). ``ready_pct``/``costop_pct``/``max_limited_pct``
are per vCPU = group sum / vcpus, where vcpus is the caller's ``vcpus`` hint if given
(``vcpus_source`` "hint"), else the number of ``vmx-vcpu-N`` (ESX 4: ``vmmN``) Vcpu worlds of
the group ("vcpu-instances"). If neither is known they are null (``vcpus_source`` null): never
divided by ``Members``, which counts every world (vmx, mks, svga, ...). The raw sums stay in
``group_*_pct`` so the analyzer can renormalise with vCenter's numCPU. A counter column absent
from the file gives null; an empty cell gives None in its list.

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
from dataclasses import dataclass
from typing import Callable, Iterator, Literal, TextIO, overload

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import esxtop_arrow
from esxdiag.parsers.esxtop_arrow import TableRows
from esxdiag.parsers.cuts import is_terminal_junk, junk_warning
from esxdiag.parsers.esxtop_columns import Layout, read_layout, vcpu_number
from esxdiag.parsers.esxtop_panel import CpuPanel, CpuPanelGroup, parse_cpu_panel
from esxdiag.parsers.esxtop_rows import Rows, Series, clean_series, read_csv_rows
from esxdiag.parsers.pdh import PdhMarker, iso_utc
from esxdiag.parsers.registry import first_line, parser

__all__ = ["parse_esxtop", "parse_cpu_panel", "EsxtopRecord", "VmCpu", "PortRx", "CpuPanel", "CpuPanelGroup"]

_MARKER_LINE = re.compile(r'("?)\(PDH-CSV [0-9.]+\) \(.*?\)\(-?[0-9]{1,6}\)\1(.?)')


@dataclass(frozen=True)
class VmCpu:
    vcpus: int | None
    ready_pct: Series | None
    costop_pct: Series | None
    max_limited_pct: Series | None
    group_id: int
    members: int | None  # worlds in the group (vmx, mks, svga, vcpus...), last sample: not vCPUs
    vcpus_source: str | None  # "hint", "vcpu-instances" or None
    group_ready_pct: Series | None
    group_costop_pct: Series | None
    group_max_limited_pct: Series | None
    used_pct: Series | None
    run_pct: Series | None
    swap_wait_pct: Series | None
    vcpu_ready_pct: dict[str, Series] | None
    vcpu_worlds: int | None  # vmx-vcpu-N (ESX 4: vmmN) worlds seen in the header, whatever the hint


@dataclass(frozen=True)
class PortRx:
    portset: str
    vm: str
    received_dropped_pct: Series | None
    packets_received_per_s: Series | None
    mbits_received_per_s: Series | None
    transmit_dropped_pct: Series | None = None  # %DRPTX


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


_SAMPLE = (  # one header line naming every counter, then one row per sample; every field quoted
    '"(PDH-CSV 4.0) (UTC)(0)",'
    r'"\\esx0.lab.local\Physical Cpu(_Total)\% Processor Time",'
    r'"\\esx0.lab.local\Group Cpu(5572767:iperf-test1)\Members",'
    r'"\\esx0.lab.local\Group Cpu(5572767:iperf-test1)\% Used",'
    r'"\\esx0.lab.local\Group Cpu(5572767:iperf-test1)\% Ready",'
    r'"\\esx0.lab.local\Group Cpu(5572767:iperf-test1)\% CoStop",'
    r'"\\esx0.lab.local\Group Cpu(5572767:iperf-test1)\% Max Limited",'
    r'"\\esx0.lab.local\Vcpu(5572767:iperf-test1:5572769:vmx-vcpu-0:iperf-test1)\% Ready",'
    r'"\\esx0.lab.local\Vcpu(5572767:iperf-test1:5572770:vmx-vcpu-1:iperf-test1)\% Ready",'
    r'"\\esx0.lab.local\Network Port(vSwitch0:33554464:5572767:iperf-test1)\% Received Packets Dropped"'
    '\n"11/21/2026 06:01:33","41.50","6","184.00","2.40","0.00","0.00","1.20","1.20","0.02"'
    '\n"11/21/2026 06:01:38","41.50","6","184.00","2.40","0.00","0.00","1.20","1.20","0.02"\n'
)


@parser("esxtop", about="esxtop -b: batch CSV, CPU per VM and vCPU, vNIC port drops", streaming=True,
        sniff=first_line(r'^\ufeff?"?\(PDH-CSV 4\.0\)'), sample=_SAMPLE)
def parse_esxtop(stream: TextIO, vm: str | None = None, vcpus: int | None = None) -> EsxtopRecord:
    check_vcpus_hint(vm, vcpus)
    warnings: list[str] = []
    layout, rows = read_rows(stream, vm, warnings)
    return _record(layout, clean_series(rows, layout, warnings), vcpus, warnings)


def check_vcpus_hint(vm: str | None, vcpus: int | None) -> None:
    if vcpus is not None and (vm is None or vcpus < 1):
        raise ParseError("a vcpus hint needs one VM (vm=NAME) and must be >= 1")


@overload
def read_rows(stream: TextIO, vm: str | None, warnings: list[str], narrow: Callable[[Layout], Layout] | None = None,
              as_table: Literal[False] = False) -> tuple[Layout, Rows]: ...


@overload
def read_rows(stream: TextIO, vm: str | None, warnings: list[str], narrow: Callable[[Layout], Layout] | None = None,
              as_table: bool = False) -> tuple[Layout, Rows | TableRows]: ...


def read_rows(stream: TextIO, vm: str | None, warnings: list[str], narrow: Callable[[Layout], Layout] | None = None,
              as_table: bool = False) -> tuple[Layout, Rows | TableRows]:
    """The header mapped to the wanted columns (``narrow`` may keep fewer: esxdiag.api reads only
    the counters asked for), then the data rows of those columns: ``Rows`` of Python values, or,
    with ``as_table`` and when the pyarrow path can be taken, its table (``TableRows``, non-finite
    cells not yet cleaned). Warnings about the file are appended to ``warnings``."""
    first_line, head, junk = _header_line(stream, warnings)
    text_line = first_line[1:] if first_line.startswith("\ufeff") else first_line
    quoted, delimiter = head.group(1) == '"', head.group(2) or ","
    if delimiter not in ",;":
        raise ParseError(f"not an esxtop batch CSV: unexpected separator {delimiter!r} after the marker", 1)
    if not quoted:
        warnings.append("unquoted fields: file was re-saved by a spreadsheet, values may be rounded")
    if delimiter == ";":
        warnings.append("';'-separated comma-decimal file (spreadsheet re-save): decimals converted")
    last_line = [text_line]  # the physical line that ended the latest row

    def lines() -> Iterator[str]:
        yield from ("\n" for _ in range(junk))  # the skipped lines keep the line numbers of the file
        yield last_line[0]
        for line in stream:
            last_line[0] = line
            yield line

    reader = csv.reader(lines(), delimiter=delimiter)
    try:
        for _ in range(junk):
            next(reader)
        layout = _layout(reader, stream, vm, warnings)
        layout = narrow(layout) if narrow is not None else layout
        header_end = last_line[0].rstrip("\r\n")[-1:]
        rows = None
        if quoted and delimiter == ",":
            source = esxtop_arrow.fast_source(stream, first_line, reader.line_num)
            del first_line, text_line
            if source is not None:
                rows = esxtop_arrow.read_arrow_rows(*source, layout, header_end, warnings, as_table)
        if rows is None:
            rows = read_csv_rows(reader, last_line, layout, header_end, delimiter, warnings)
    except csv.Error as exc:
        raise ParseError(f"bad CSV: {exc}", reader.line_num) from None
    return layout, rows


MAX_JUNK_LINES = 20  # terminal output before the header: a termcap complaint, a prompt, the login banner
_NO_SAMPLES = ("header only: no samples (the capture holds esxtop's column header and no data row: esxtop "
               "was stopped before its first sample, or the output was cut after the header)")


def _header_line(stream: TextIO, warnings: list[str]) -> tuple[str, re.Match[str], int]:
    """The PDH-CSV header line, its marker and how many lines before it were skipped: what the terminal printed
    before esxtop's output (``no termcap entry for a 'xterm-256color' terminal``, a prompt, the login
    banner) is skipped with a warning naming it, at most MAX_JUNK_LINES lines."""
    skipped: list[str] = []
    while len(skipped) <= MAX_JUNK_LINES:
        line = stream.readline()
        text = line[1:] if line.startswith("\ufeff") else line
        marker = _MARKER_LINE.match(text)
        if marker:
            warnings.extend(junk_warning(n, junk) for n, junk in enumerate(skipped, 1) if junk.strip())
            return line, marker, len(skipped)
        skipped.append(line)
        if not line or not _junk(line, sum(1 for junk in skipped if junk.strip())):
            break
    if not any(junk.strip() for junk in skipped):
        raise NoData("empty file")
    number, first = next((n, junk) for n, junk in enumerate(skipped, 1) if junk.strip())
    raise ParseError(f"not an esxtop batch CSV: does not start with a PDH-CSV marker: {first.strip()[:60]!r}", number)


def _junk(line: str, printed: int) -> bool:
    """Terminal output esxtop's header may follow: blank, a known terminal or shell line, or one of
    the first three short lines (a login banner's)."""
    return not line.strip() or is_terminal_junk(line) or (printed <= 3 and len(line) < 200 and "," not in line)


def _layout(reader, stream: TextIO, vm: str | None, warnings: list[str]) -> Layout:
    """The header's layout; a header with no row after it says so before a VM it does not name."""
    try:
        return read_layout(next(reader), vm, warnings)
    except NoData:
        if not stream.readline().strip():
            raise NoData(_NO_SAMPLES) from None
        raise


def _record(layout: Layout, rows: Rows, vcpus_hint: int | None, warnings: list[str]) -> EsxtopRecord:
    if not rows.stamps:
        raise NoData(_NO_SAMPLES)
    return EsxtopRecord(
        interval_s=sample_interval(rows.stamps, warnings),
        samples=len(rows.stamps),
        vms=_vm_records(layout, rows.series, vcpus_hint),
        pdh=layout.pdh,
        timestamps=tuple(iso_utc(s.utc) for s in rows.stamps),
        host=layout.host,
        warnings=tuple(warnings),
        ports=_port_records(layout, rows.series),
    )


def sample_interval(stamps, warnings: list[str]) -> float | None:
    """The median step between samples, in seconds; None with fewer than two or without seconds."""
    if len(stamps) < 2:
        return None
    if not all(s.has_seconds for s in stamps):
        warnings.append("timestamps have no seconds (spreadsheet re-save): interval unknown")
        return None
    deltas = [(b.utc - a.utc).total_seconds() for a, b in zip(stamps, stamps[1:])]
    backwards = [i + 2 for i, d in enumerate(deltas) if d <= 0]  # sample numbers, 1-based
    if backwards:
        warnings.append(f"timestamps do not increase at sample {', '.join(map(str, backwards[:5]))}: files "
                        "concatenated or rows repeated; the interval uses the increasing steps only")
        deltas = [d for d in deltas if d > 0]
    return float(statistics.median(deltas)) if deltas else None


def _vm_records(layout: Layout, series: dict[int, Series], vcpus_hint: int | None) -> dict[str, VmCpu]:
    records = {}
    for name, group in layout.groups.items():
        def counter(label: str) -> Series | None:
            return series.get(group.columns.get(label, -1))

        vcpus = vcpus_hint or len(group.vcpu_worlds) or None
        source = "hint" if vcpus_hint else "vcpu-instances" if vcpus else None
        members = [m for m in counter("Members") or () if m is not None and 0 <= m < 1 << 31]
        worlds = sorted(group.vcpu_worlds, key=vcpu_number)
        vcpu_ready = {w: series[column] for w in worlds if (column := group.vcpu_worlds[w]) is not None}
        ready, costop, limited = counter("% Ready"), counter("% CoStop"), counter("% Max Limited")
        records[name] = VmCpu(
            vcpus=vcpus, ready_pct=_per_vcpu(ready, vcpus), costop_pct=_per_vcpu(costop, vcpus),
            max_limited_pct=_per_vcpu(limited, vcpus), group_id=group.gid,
            members=int(members[-1]) if members else None, vcpus_source=source,
            group_ready_pct=ready, group_costop_pct=costop, group_max_limited_pct=limited,
            used_pct=counter("% Used"), run_pct=counter("% Run"), swap_wait_pct=counter("% Swap Wait"),
            vcpu_ready_pct=vcpu_ready or None, vcpu_worlds=len(group.vcpu_worlds) or None,
        )
    return records


def _port_records(layout: Layout, series: dict[int, Series]) -> dict[str, PortRx]:
    return {
        port_id: PortRx(port.portset, port.vm, series.get(port.columns.get("% Received Packets Dropped", -1)),
                        series.get(port.columns.get("Packets Received/sec", -1)),
                        series.get(port.columns.get("MBits Received/sec", -1)),
                        series.get(port.columns.get("% Outbound Packets Dropped", -1)))
        for port_id, port in layout.ports.items()
    }


def _per_vcpu(sums: Series | None, vcpus: int | None) -> Series | None:
    if sums is None or vcpus is None:
        return None
    return tuple(None if v is None else round(v / vcpus, 4) for v in sums)
