"""PowerShell object output as records: ``ConvertTo-Csv`` (with or without ``#TYPE``),
``ConvertTo-Json`` (object or array), ``Format-List`` and the default table view, read by its
ruler (esxdiag.parsers.pwsh_table) unless a value was cut to the console width. Empty strings
become None.

Repeats are never "last one wins": a property printed twice in one record follows
esxdiag.parsers.repeats (kept when both agree, left out when they differ, with a warning);
``unique`` does the same for whole records that share a key (an adapter listed twice), where
different records are a ParseError (two outputs pasted into one capture)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line, is_cut_mark
from esxdiag.parsers.jsontext import load_json
from esxdiag.parsers.numbers import count
from esxdiag.parsers.pwsh_table import is_table, read_table
from esxdiag.parsers.repeats import Agreeing

Value = str | tuple[str, ...] | None


@dataclass
class Records:
    items: list[dict[str, Value]]
    source: str  # csv | json | list | table
    warnings: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # each item's first line, when the form has lines (list)

    def where(self, index: int) -> str:
        """How a warning names item ``index`` (0-based): its line, or its place."""
        return f"line {self.lines[index]}" if index < len(self.lines) else f"record {index + 1}"


def read_records(text: str, command: str = "the command", optional: tuple[str, ...] = (),
                 rows_apart: bool = False) -> Records:
    """``command``: the cmdlet that printed ``text``, named in the re-capture advice. A last line
    without a line end (a capture cut short) is not read, with a warning; JSON shows a cut itself.
    ``optional``: columns of a default table view that may be cut to the console width (read as
    empty, with a warning); a cut value in any other column refuses the capture, or with
    ``rows_apart`` (each row a record of its own) leaves that row out with a warning."""
    cut: list[str] = []
    if text.lstrip("\ufeff \t\r\n")[:1] not in ("[", "{"):
        text, cut = drop_cut_line(text)
    body = text.lstrip("\ufeff").strip()
    if not body:
        if cut:
            raise ParseError(cut[0])
        raise NoData("empty PowerShell output")
    lines = body.splitlines()
    ruler = is_table(lines)
    if ruler is not None:  # the default table view: read by its ruler when no value was cut
        records = Records([], "table", cut)
        rows = read_table(lines, ruler, _leading_lines(text), f"{command} | Format-List *", optional, records.warnings,
                          rows_apart)
        if not rows:
            raise NoData("PowerShell table with a header and no rows")
        for n, row in enumerate(rows, 1):
            record = _Record(records.warnings, f"row {n}")
            for key, value in row.items():
                record.set(key, _list_value(value) if value else None)
            records.items.append(dict(record))
        return records
    records = Records([], "list", cut)
    if body[0] in "[{":
        records.source = "json"
        records.items = _json_records(body, records.warnings)
    elif lines[0].startswith("#TYPE") or (lines[0].startswith('"') and '","' in lines[0]):
        records.source = "csv"
        records.items = _csv_records(lines, records.warnings)
    else:
        skipped = Skipped(records.warnings)
        closed = re.search(r"\n[ \t]*\r?\n\s*$", text) is not None  # Format-List ends with blank lines
        records.items = _list_records(lines, skipped, _leading_lines(text), records.lines, closed)
        skipped.check(sum(len(item) for item in records.items))
    return records


def _leading_lines(text: str) -> int:
    """Blank lines before the first printed one (Format-List starts with two): line numbers count them."""
    body = text.lstrip("\ufeff")
    return body[: len(body) - len(body.lstrip())].count("\n")


class _Record(Agreeing):
    """One record: a property printed twice follows esxdiag.parsers.repeats."""

    def __init__(self, warnings: list[str], where: str):
        super().__init__(warnings)
        self.where = where

    def set(self, key: str, value: Value) -> None:
        self.put(key, value, self.where, f"property {key!r}")


def _csv_records(lines: list[str], warnings: list[str]) -> list[dict[str, Value]]:
    offset = 1
    if lines[0].startswith("#TYPE"):
        lines, offset = lines[1:], 2
    try:
        rows = list(csv.reader(lines))
    except csv.Error as exc:
        raise ParseError(f"bad CSV: {exc}") from None
    if len(rows) < 2:
        raise NoData("CSV has a header but no rows")
    header = rows[0]
    records = []
    for n, row in enumerate(rows[1:], offset + 1):
        if len(row) == 1 and is_cut_mark(row[0]):
            warnings.append(f"line {n}: cut mark {row[0].strip()!r} skipped: what it hides is not in the capture "
                            "(the lines around it are read)")
            continue
        if len(row) != len(header):
            raise ParseError(f"CSV row has {len(row)} fields, header has {len(header)}", line=n)
        record = _Record(warnings, f"line {n}")
        for key, value in zip(header, row):
            record.set(key, value if value != "" else None)
        records.append(dict(record))
    return records


def _json_records(body: str, warnings: list[str]) -> list[dict[str, Value]]:
    try:
        data, repeats = load_json(body, "ConvertTo-Json")
    except ParseError:
        data, repeats = _json_before_cut(body) or (None, [])
        if data is None:
            raise
    warnings.extend(repeats)
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(item, dict) for item in items):
        raise ParseError("JSON is not an object or an array of objects")
    return [{k: _json_value(v) for k, v in item.items()} for item in items]


def _json_before_cut(body: str) -> tuple[list, list[str]] | None:
    """A ConvertTo-Json array the author cut (a ``...`` line inside it): the objects whole before the
    cut, with a warning naming it; None when there is no cut mark or nothing whole before it."""
    lines = body.splitlines(keepends=True)
    cut = next((n for n, line in enumerate(lines) if is_cut_mark(line)), None)
    if cut is None or not body.startswith("["):
        return None
    head = "".join(lines[:cut])
    decoder, at, items = json.JSONDecoder(), 1, []
    while True:
        while at < len(head) and head[at] in " \t\r\n,":
            at += 1
        try:
            _, end = decoder.raw_decode(head, at)
        except (json.JSONDecodeError, RecursionError):
            break
        items.append(head[at:end])
        at = end
    if not items:
        return None
    data, repeats = load_json("[" + ",".join(items) + "]", "ConvertTo-Json")
    return data, [f"line {cut + 1}: cut mark {lines[cut].strip()!r}: the JSON array is read up to it ({len(items)} "
                  "whole objects); what it hides is not in the capture", *repeats]


def _json_value(value) -> Value:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "True" if value else "False"  # as PowerShell prints it
    if isinstance(value, list):
        return tuple(str(_json_value(v)) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


_KEY = re.compile(r"[A-Za-z_][\w.-]{0,79}(?:: \[[^\]]{1,60}\])?")  # a property, or "RssProcessorArray: [Group:...]"


def _list_records(lines: list[str], skipped: Skipped, offset: int, starts: list[int],
                  closed: bool = True) -> list[dict[str, Value]]:
    """Format-List records. A record ends at a blank line, or where its first property or one it
    already holds is printed again (records pasted with no blank line between them; the same
    property on two lines in a row stays one property, esxdiag.parsers.repeats). A blank line inside one object (the
    default Get-NetAdapterRss view puts one before IndirectionTable) does not end it: a block whose
    first property is not the record's first one and that repeats none of the record's properties
    continues the record. A value runs on over indented lines and over lines that start with no
    property name (the rows of IndirectionTable). ``starts`` gets each record's first line number.
    Not ``closed`` (no blank line after the last record, as Format-List prints one): a table value
    at the very end may have lost rows, so it is left out with a warning."""
    records: list[dict[str, Value]] = []
    warnings = skipped.warnings
    current = _Record(warnings, f"line {offset + 1}")
    first_key: str | None = None  # the property every record starts with (Name in the default views)
    last: tuple[str, list[str]] | None = None  # property and its value's lines (a long value wraps)
    start = offset + 1
    blank = False
    previous: str | None = None  # the property of the line before: the same one twice in a row is one property

    def close_property() -> None:
        if last is not None:
            current.set(last[0], _list_value(" ".join(last[1])))

    def close_record(n: int) -> None:
        nonlocal current, start
        if current:
            records.append(dict(current))
            starts.append(start)
        current, start = _Record(warnings, f"line {n}"), n

    for n, line in enumerate(lines, offset + 1):
        if not line.strip():
            close_property()
            last, blank, previous = None, True, None
            continue
        if skipped.cut_mark(n, line):
            close_property()
            last, previous = None, None
            continue
        if line[0].isspace() and last is not None:  # a long value wrapped by the console
            last[1].append(line.strip())
            continue
        key, sep, value = line.partition(" : ")
        if not sep and line.rstrip().endswith(":"):  # "Prop :" (empty) or "IndirectionTable: [Group:Number]:"
            key, sep, value = line.rstrip()[:-1], ":", ""
        key = key.strip()
        if sep and not _KEY.fullmatch(key) and last is not None:  # "0 : 4  0 : 20 ...": a table inside a value
            last[1].append(line.strip())
            continue
        if not sep or not _KEY.fullmatch(key):
            skipped.line(ParseError(f"not a Format-List 'Property : value' line: {line.strip()[:80]!r}", line=n),
                         started=bool(records or current or last))
            continue
        close_property()
        first_key = first_key or key
        again = key in current and key != previous  # printed again further down: the next object's
        if current and (key == first_key and len(current) > 1 or again and (blank or len(current) > 1)):
            close_record(n)  # the next object: its first property again, or one this record has already
        elif blank and not current:
            start = n
        blank, previous = False, key
        last = (key, [value.strip()] if value.strip() else [])
    if last is not None and not closed and (len(last[1]) > 1 or "[" in last[0]):
        warnings.append(f"line {len(lines) + offset}: the capture ends inside the value of {last[0]!r} (no blank line "
                        "after the last record): its rows may be cut, it is not used")
        last = None
    close_property()
    close_record(len(lines) + offset + 1)
    return records


def raw_text(value: Value) -> str:
    if isinstance(value, tuple):
        return "{" + ", ".join(value) + "}"
    return value or ""


def _list_value(value: str) -> Value:
    if value.startswith("{") and value.endswith("}"):
        inner = value[1:-1].strip()
        return tuple(item.strip() for item in inner.split(",")) if inner else ()
    return value or None


def need(records: list[dict[str, Value]], keys: tuple[str, ...], what: str) -> None:
    for i, record in enumerate(records, 1):
        missing = [k for k in keys if not isinstance(record.get(k), str)]
        if missing:
            raise ParseError(f"record {i} has no {', '.join(missing)}: not {what} output "
                             f"(properties seen: {', '.join(list(record)[:8])})")


def named(found: Records, keys: tuple[str, ...], what: str) -> list[dict[str, Value]]:
    """The records that have every one of ``keys``; each other one is left out with a warning naming
    its line and the properties it has (a record cut in two by a paste). None at all: not ``what``."""
    kept = []
    for index, record in enumerate(found.items):
        missing = [k for k in keys if not isinstance(record.get(k), str)]
        if not missing:
            kept.append(record)
            continue
        found.warnings.append(f"{found.where(index)}: a record with no {', '.join(missing)} skipped (properties "
                              f"seen: {', '.join(list(record)[:8])}): its adapter is unknown")
    if not kept:
        need(found.items, keys, what)
    return kept


def unique(records: list[dict[str, Value]], keys: tuple[str, ...], warnings: list[str]) -> list[dict[str, Value]]:
    """One record per key: an identical repeat is dropped with a warning, a different one is a
    ParseError (two samples in one capture: which one is the capture?)."""
    seen: dict[tuple, dict[str, Value]] = {}
    for record in records:
        key = tuple(record.get(k) for k in keys)
        if key not in seen:
            seen[key] = record
        elif seen[key] == record:
            warnings.append(f"{'/'.join(map(str, key))} listed twice with the same values: read once")
        else:
            raise ParseError(f"{'/'.join(map(str, key))} listed twice with different values: two outputs in "
                             "one capture? Save each sample in its own file")
    return list(seen.values())


def counter(value: Value, what: str) -> int | None:
    """A count property: None when absent or empty, else a non-negative integer or ParseError."""
    if value is None:
        return None
    return count(raw_text(value), what)
