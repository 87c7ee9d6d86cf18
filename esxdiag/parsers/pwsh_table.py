"""PowerShell's default table view (``Get-NetAdapter`` without ``| Format-List``): a header line, a
ruler of dashes under each column name, then one row per object (docs/raw-formats.md §5.1, §5.2).

Columns are told apart by the ruler: left-aligned values start under their dashes and may run past
them, right-aligned ones (numbers) end under them and may start before them, and PowerShell always
leaves at least one blank between two columns. So between the dashes of two columns, the last blank
of a row is where one cell ends and the next begins. A row with no blank there (a value that ran
into the next column) or a cell PowerShell cut to the column width (``...`` in Windows PowerShell
5.1, ``…`` in PowerShell 7) cannot be read: the error names the column and the command that
prints every value whole. A cut cell of a column the caller can do without (``optional``) is read
as empty, with a warning naming the column and that command.
"""

from __future__ import annotations

import re

from esxdiag.errors import ParseError

RULER = re.compile(r"^\s*-{2,}(?:\s+-{2,})*\s*$")
_DASHES = re.compile(r"-+")
_CUT = ("...", "\u2026")


def is_table(lines: list[str]) -> int | None:
    """The index of the ruler when ``lines`` (stripped of leading blank lines) are a table."""
    ruler = next((n for n, line in enumerate(lines[:40]) if RULER.match(line)), None)
    if ruler is None or ruler == 0 or " : " in lines[ruler - 1]:
        return None
    return ruler


def read_table(lines: list[str], ruler: int, offset: int, recapture: str, optional: tuple[str, ...] = (),
               warnings: list[str] | None = None, rows_apart: bool = False) -> list[dict[str, str | None]]:
    """Rows of the table whose ruler is ``lines[ruler]`` as {column: cell} (empty cells None);
    ``offset`` + 1 is the file line of ``lines[0]``; ``recapture`` the command to suggest; a cut cell
    of an ``optional`` column is None, said once per column in ``warnings``. ``rows_apart``: each row
    stands alone (one property of Get-NetAdapterAdvancedProperty), so a row with a cut cell in
    another column is left out with a warning naming its line and column, and only a table with no
    whole row is refused."""
    said: set[str] = set()
    spans = [(m.start(), m.end()) for m in _DASHES.finditer(lines[ruler])]
    header = lines[ruler - 1]
    names = _cells(header, spans, ruler + offset)
    if names is None or not all(names):
        raise ParseError(f"default table header {header.strip()[:80]!r} does not line up with its ruler: "
                         f"re-capture with '{recapture}'", line=ruler + offset)
    for name in names:
        if name.endswith(_CUT):
            raise _cut(f"column name {name!r}", name, ruler + offset, recapture)
    rows = []
    left_out: list[ParseError] = []
    for number, line in enumerate(lines[ruler + 1:], ruler + offset + 2):
        if not line.strip() or line == header or RULER.match(line):
            continue
        try:
            cells = _row(line, number, names, spans, recapture, optional, said, warnings)
        except ParseError as exc:
            if not rows_apart or warnings is None:
                raise
            left_out.append(exc)
            warnings.append(f"line {number}: row left out, {exc.why.split(': re-capture')[0]}; re-capture with "
                            f"'{recapture}' for every value whole")
            continue
        rows.append({name: cell or None for name, cell in zip(names, cells)})
    if left_out and not rows:
        raise left_out[0]
    return rows


def _row(line: str, number: int, names: list[str], spans: list[tuple[int, int]], recapture: str,
         optional: tuple[str, ...], said: set[str], warnings: list[str] | None) -> list[str]:
    """One row's cells; a cut cell of an ``optional`` column emptied (said once per column), any
    other cut cell or a row that does not line up a ParseError."""
    cells = _cells(line, spans, number)
    marker = max(line.find(cut) for cut in _CUT)
    if cells is None and marker >= 0:  # a cut value, printed one character too wide
        column = names[max([i for i, (start, _) in enumerate(spans) if start <= marker] or [0])]
        begin, end = line.rfind(" ", 0, marker) + 1, marker + (3 if line.startswith("...", marker) else 1)
        if column not in optional or warnings is None:
            raise _cut(f"column {column}", line[begin:end], number, recapture)
        blanked = line[:begin] + " " * (end - begin) + line[end:]  # the optional cell read as empty
        cells = _cells(blanked, spans, number)
        if cells is not None:
            cells[names.index(column)] = line[begin:end]
    if cells is None:
        raise ParseError(f"default table row {line.strip()[:80]!r} does not line up with the columns (a value "
                         f"ran into the next one): re-capture with '{recapture}'", line=number)
    for i, (name, cell) in enumerate(zip(names, cells)):
        if cell.endswith(_CUT) and name in optional and warnings is not None:
            cells[i] = ""
            if name not in said:
                said.add(name)
                warnings.append(f"line {number}: column {name} is cut to the console width ({cell[:60]!r}): "
                                f"read without it; re-capture with '{recapture}' for every value whole")
        elif cell.endswith(_CUT):
            raise _cut(f"column {name}", cell, number, recapture)
    return cells


def _cut(what: str, cell: str, line: int, recapture: str) -> ParseError:
    return ParseError(f"default table output with truncated values: {what} is cut to the console width "
                      f"({cell[:60]!r}): re-capture with '{recapture}'", line=line)


def _cells(line: str, spans: list[tuple[int, int]], number: int) -> list[str] | None:
    """The row's cells, split at the last blank between the dashes of each two columns."""
    cuts = []
    for (_, end), (start, _) in zip(spans, spans[1:]):
        gap = line[end - 1:start]  # from the last dash of one column to the first of the next
        blank = max(gap.rfind(" "), gap.rfind("\t"))
        if blank < 0:
            if len(line) <= end - 1:  # the row ends before this column: the rest is empty
                break
            return None
        cuts.append(end - 1 + blank)
    bounds = [0] + cuts
    cells = [line[a:b].strip() for a, b in zip(bounds, bounds[1:] + [len(line)])]
    return cells + [""] * (len(spans) - len(cells))
