"""esxtop batch CSV data rows through the stdlib csv module: the path for every input (text
streams, spreadsheet re-saves, ``;``/comma-decimal files, Latin-1) and the reference the pyarrow
fast path (esxtop_arrow) must match. Only the wanted columns' cells are converted.

A truncated last row (capture interrupted) is dropped with a warning; a row of the wrong width
anywhere else is a ParseError at its line, as are a bad timestamp and a non-numeric wanted cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter

from esxdiag.errors import ParseError
from esxdiag.parsers.esxtop_columns import Layout
from esxdiag.parsers.pdh import Stamp, parse_stamp

Series = tuple[float | None, ...]


@dataclass(frozen=True)
class Rows:
    stamps: list[Stamp]
    series: dict[int, Series]  # wanted column index -> one value per sample


def read_csv_rows(reader, last_line: list[str], layout: Layout, quoted: bool, delimiter: str,
                  warnings: list[str]) -> Rows:
    """``reader`` is positioned after the header; ``last_line[0]`` is kept up to date with the
    physical line that ended the latest row by the line iterator under ``reader``."""
    columns = layout.wanted_columns()
    pick = itemgetter(*columns, 0) if columns else itemgetter(0, 0)
    sinks: list[list[float | None]] = [[] for _ in columns]
    to_float = _comma_float if delimiter == ";" else float
    stamps, width, short_row = [], layout.width, None
    row_line, row_text = 0, ""  # line number and ending physical line of the latest row
    for row in reader:
        if not row:
            continue
        if short_row is not None:
            raise ParseError(f"row has {short_row[1]} fields, header has {width}", short_row[0])
        if len(row) != width:
            short_row = (reader.line_num, len(row))
            continue
        row_line, row_text = reader.line_num, last_line[0]
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
        warnings.append(truncated_row_warning(short_row[0], f"{short_row[1]} of {width} fields"))
    elif quoted and stamps and not row_text.rstrip("\r\n").endswith('"'):
        warnings.append(truncated_row_warning(row_line, "unterminated last field"))
        stamps.pop()
        for sink in sinks:
            sink.pop()
    return Rows(stamps, {column: tuple(sink) for column, sink in zip(columns, sinks)})


def truncated_row_warning(line: int, why: str) -> str:
    return f"dropped truncated last row (line {line}: {why})"


def _comma_float(cell: str) -> float:
    return float(cell.replace(",", "."))
