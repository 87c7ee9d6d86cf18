"""esxtop batch CSV data rows through the stdlib csv module: the path for every input (text
streams, spreadsheet re-saves, ``;``/comma-decimal files, Latin-1) and the reference the pyarrow
fast path (esxtop_arrow) must match. Only the wanted columns' cells are converted.

A truncated last row (capture interrupted) is dropped with a warning: one of the wrong width, or
one that ends mid-field (no line end after it and its last character differs from the header's:
``"`` in esxtop's own output, ``,`` in files whose every line ends with a comma). A row of the
wrong width anywhere else is a ParseError at its line, as is a bad timestamp. A wanted cell that
is not a number is dropped (None) with a warning naming its column; so is a non-finite one
(``nan``, ``inf``), in ``clean_series`` shared with the pyarrow path.
"""

from __future__ import annotations

import math
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


def read_csv_rows(reader, last_line: list[str], layout: Layout, header_end: str, delimiter: str,
                  warnings: list[str]) -> Rows:
    """``reader`` is positioned after the header; ``last_line[0]`` is kept up to date with the
    physical line that ended the latest row by the line iterator under ``reader``; ``header_end``
    is the header line's last character."""
    columns = layout.wanted_columns()
    pick = itemgetter(*columns, 0) if columns else itemgetter(0, 0)
    sinks: list[list[float | None]] = [[] for _ in columns]
    to_float = _comma_float if delimiter == ";" else float
    bad_cells: dict[int, int] = {}  # position in columns -> line of the first non-numeric cell
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
        for position, (sink, cell) in enumerate(zip(sinks, pick(row))):
            try:
                sink.append(to_float(cell) if cell else None)
            except ValueError:
                sink.append(None)
                bad_cells.setdefault(position, reader.line_num)
    if short_row is not None:
        warnings.append(truncated_row_warning(short_row[0], f"{short_row[1]} of {width} fields"))
    elif stamps and ends_mid_field(row_text, header_end):
        warnings.append(truncated_row_warning(row_line, "unterminated last field"))
        stamps.pop()
        for sink in sinks:
            sink.pop()
    for position, line in bad_cells.items():
        warnings.append(f"non-numeric values in column '{layout.names[columns[position]]}' (first on line "
                        f"{line}): not used")
    return Rows(stamps, {column: tuple(sink) for column, sink in zip(columns, sinks)})


def ends_mid_field(last_line: str, header_end: str) -> bool:
    """The file's last row was cut inside its last field: no line end after it, and it does not
    end like the header does (``"``, or ``,`` when every line ends with a comma). A header ending
    in anything else (a spreadsheet's unquoted fields, console junk) tells nothing: only the
    row's width can show a cut there."""
    if last_line.endswith(("\n", "\r")) or header_end not in ('"', ","):
        return False
    return not last_line.endswith(header_end)


def clean_series(rows: Rows, layout: Layout, warnings: list[str]) -> Rows:
    """Non-finite cells (``nan``, ``inf``, a number too big for a float) and negative ones (every
    counter esxdiag reads is a percentage, a rate or a count) are not data: None, with a warning
    naming the column."""
    series = {}
    for column, values in rows.series.items():
        bad = sum(1 for v in values if v is not None and not math.isfinite(v))
        if bad:
            warnings.append(non_finite_warning(bad, layout.names[column]))
            values = tuple(v if v is None or math.isfinite(v) else None for v in values)
        negative = sum(1 for v in values if v is not None and v < 0)
        if negative:
            warnings.append(f"{negative} negative value(s) in column '{layout.names[column]}': not used")
            values = tuple(None if v is not None and v < 0 else v for v in values)
        series[column] = values
    return Rows(rows.stamps, series)


def non_finite_warning(count: int, column_name: str) -> str:
    return f"{count} non-finite value(s) (nan/inf) in column '{column_name}': not used"


def truncated_row_warning(line: int, why: str) -> str:
    return f"dropped truncated last row (line {line}: {why})"


def _comma_float(cell: str) -> float:
    return float(cell.replace(",", "."))
