"""pyarrow fast path for the data rows of a big, clean esxtop batch CSV.

The csv module builds a Python ``str`` for every one of the ~16,000 fields of every row; the
pyarrow CSV reader tokenises in C++ and converts only the wanted columns. The header is already
parsed (esxtop_columns), so pyarrow is handed the bytes after it, with synthetic column names:
the block only has to hold the longest data row, not the (> 1 MiB) header line. The data is split
at line ends into byte ranges read by up to ``MAX_STREAMS`` ``open_csv`` streams on their own
threads (pyarrow releases the GIL while parsing); memory is bounded per stream, not by file size.

Taken only when it is safe (``fast_source``): a quoted ``,``-separated file (esxtop's own
output, not a spreadsheet re-save) on disk, in an ASCII-compatible encoding, whose header is
its first physical line, of at least ``FAST_PATH_MIN_BYTES`` (below that, importing pyarrow
costs more than it saves). ``read_arrow_rows`` returns the same ``Rows`` as the csv-module path
or None when anything is off (a row of the wrong width before the last, a bad timestamp, a
non-numeric wanted cell, a blank line, a row longer than the block, pyarrow missing); the caller
then reads the rows with the csv module, which reports the exact error and line.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
from dataclasses import dataclass
from typing import Any, TextIO

from esxdiag.parsers.esxtop_columns import Layout
from esxdiag.parsers.esxtop_rows import Rows, ends_mid_field, truncated_row_warning
from esxdiag.parsers.pdh import Stamp, parse_stamp
from esxdiag.textio import MAX_LINE_CHARS

FAST_PATH_MIN_BYTES = 8 << 20
MAX_STREAMS = 2
# pyarrow's block parser presizes its field offsets for >= 512 rows x columns x 4 bytes (33 MB at
# 16,000 columns, 105 MB at 51,000) per stream; more streams are used only while they fit this
STREAM_MEMORY_BUDGET = 96 << 20
COMPACT_EVERY = 32
MIN_BLOCK = 512 << 10  # peak RSS grows ~50 MiB per extra MiB of block; speed barely changes
_ASCII_COMPATIBLE = frozenset({"utf-8", "utf-8-sig", "iso8859-1"})


def fast_source(stream: TextIO, first_line: str, header_lines: int) -> tuple[str, int, int] | None:
    """(path, byte offset of the first data row, file size) when the pyarrow path may read the
    file behind ``stream``; ``first_line`` is the header line exactly as the stream returned it."""
    raw = getattr(stream, "buffer", None)
    path, encoding = getattr(raw, "name", None), getattr(stream, "encoding", None)
    if header_lines != 1 or not isinstance(path, str) or not encoding:
        return None
    if codecs.lookup(encoding).name not in _ASCII_COMPATIBLE:
        return None
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size < FAST_PATH_MIN_BYTES:
            return None
        with open(path, "rb") as handle:
            header = handle.readline(MAX_LINE_CHARS * 4 + 1)  # the text stream's line cap, in UTF-8 bytes
    except OSError:
        return None
    if header.decode(encoding, getattr(stream, "errors", None) or "strict") != first_line:
        return None  # e.g. bare-CR line ends: the text stream and the bytes disagree on line one
    return path, len(header), info.st_size


@dataclass(frozen=True)
class TableRows:
    """The rows as the pyarrow table itself, for callers that keep them columnar (esxdiag.api's
    DataFrames): column ``k`` holds ``layout.wanted_columns()[k]`` as float64, nulls for empty cells."""

    stamps: list[Stamp]
    table: Any  # pyarrow.Table


def read_arrow_rows(path: str, start: int, size: int, layout: Layout, header_end: str,
                    warnings: list[str], as_table: bool = False) -> Rows | TableRows | None:
    try:
        import pyarrow as pa
        import pyarrow.csv as pa_csv
    except ImportError:
        return None
    from concurrent.futures import ThreadPoolExecutor  # with pyarrow: only this path starts threads

    block_size = _block_size(path, start)
    if block_size is None:
        return None  # a first row past the line cap: the csv path refuses the file, naming the cap
    columns = layout.wanted_columns()
    names = [f"c{index}" for index in range(layout.width)]
    wanted = [names[0]] + [names[index] for index in columns]
    options = dict(
        read_options=pa_csv.ReadOptions(column_names=names, block_size=block_size, use_threads=False),
        convert_options=pa_csv.ConvertOptions(
            include_columns=wanted, column_types={name: pa.float64() for name in wanted[1:]} | {names[0]: pa.string()},
            null_values=[""], strings_can_be_null=False, quoted_strings_can_be_null=True),
        memory_pool=_memory_pool(pa))

    def read_range(byte_range: tuple[int, int]):
        invalid: list[tuple[int, int]] = []  # (row number within the range, field count)

        def on_invalid(row) -> str:
            invalid.append((row.number, row.actual_columns))
            return "skip"

        parse = pa_csv.ParseOptions(ignore_empty_lines=False, invalid_row_handler=on_invalid)
        try:
            with _ByteRange(path, *byte_range) as source:
                reader = pa_csv.open_csv(source, parse_options=parse, **options)
                return _compacted(pa, reader, options["memory_pool"]), invalid
        except pa.ArrowException:
            return None

    ranges = _ranges(path, start, size, _stream_count(layout.width))
    with ThreadPoolExecutor(len(ranges)) as pool:
        parts = list(pool.map(read_range, ranges))
    if any(part is None for part in parts) or any(invalid for _, invalid in parts[:-1]):
        return None
    table = pa.concat_tables(part[0] for part in parts)
    rows_in_last, last_invalid = parts[-1][0].num_rows, parts[-1][1]
    del parts
    parsed = [parse_stamp(text, layout.pdh.bias_min) for text in table.column(0).to_pylist()]
    stamps = [stamp for stamp in parsed if stamp is not None]
    if len(stamps) < len(parsed):
        return None  # a bad timestamp or a blank line: the csv path says which line
    keep = len(stamps)
    if last_invalid:
        if len(last_invalid) > 1 or last_invalid[0][0] != rows_in_last + 1:
            return None  # a row of the wrong width before the last one: a ParseError from the csv path
        warnings.append(truncated_row_warning(_last_line_number(path, size), f"{last_invalid[0][1]} of {layout.width} fields"))
    elif stamps and ends_mid_field(_tail(path, size), header_end):
        warnings.append(truncated_row_warning(_last_line_number(path, size), "unterminated last field"))
        keep -= 1
    table = table.slice(0, keep)
    if as_table:
        return TableRows(stamps[:keep], table.drop_columns([names[0]]))
    series = {column: tuple(table.column(k + 1).to_pylist()) for k, column in enumerate(columns)}
    return Rows(stamps[:keep], series)


def _compacted(pa, reader, pool):
    """All batches as one table with one chunk per column. Each block gives a batch of a few rows
    and every array in it costs a few hundred bytes of buffers and bookkeeping: with 1,000 wanted
    columns (no vm filter) x 600 blocks, kept as they come, that is ~500 MiB; merged every
    ``COMPACT_EVERY`` batches it stays within the values' own size."""
    tables, batches = [], []
    for batch in reader:
        batches.append(batch)
        if len(batches) == COMPACT_EVERY:
            tables.append(pa.Table.from_batches(batches).combine_chunks(pool))
            batches.clear()
    tables.append(pa.Table.from_batches(batches, schema=reader.schema))
    return pa.concat_tables(tables, memory_pool=pool).combine_chunks(pool)


def _memory_pool(pa):
    """jemalloc returns freed block memory to the OS sooner than the default pool here (peak RSS
    ~30 MiB lower on the 300 MB benchmark); builds without it use the default pool."""
    try:
        return pa.jemalloc_memory_pool()
    except pa.ArrowException:  # a build without jemalloc
        return pa.default_memory_pool()


def _block_size(path: str, start: int) -> int | None:
    """A block must hold a whole row; rows differ only by their values' digits (< 2x), so 4x the
    first data row is ample; a longer row makes pyarrow fail and the csv path take over. None when
    the first row is longer than the text stream's line cap (read no further than the cap)."""
    with open(path, "rb") as handle:
        handle.seek(start)
        row = handle.readline(MAX_LINE_CHARS + 1)
    return None if len(row) > MAX_LINE_CHARS else max(MIN_BLOCK, 4 * len(row))


def _stream_count(width: int) -> int:
    return max(1, min(MAX_STREAMS, os.cpu_count() or 1, STREAM_MEMORY_BUDGET // (512 * 4 * width)))


def _ranges(path: str, start: int, size: int, streams: int) -> list[tuple[int, int]]:
    """``streams`` byte ranges of the data, each cut just after a ``\\n``; pyarrow ends a row at
    every newline (newlines_in_values off), so a cut never splits a row it would read whole."""
    cuts = [start]
    with open(path, "rb") as handle:
        for part in range(1, streams):
            handle.seek(start + (size - start) * part // streams)
            rest = handle.readline(MAX_LINE_CHARS + 1)  # bounded: a cut inside a longer row is not made
            if rest.endswith(b"\n") and cuts[-1] < handle.tell() < size:
                cuts.append(handle.tell())
    cuts.append(size)
    return list(zip(cuts, cuts[1:]))


def _last_line_number(path: str, size: int) -> int:
    """Line number of the last non-blank line, counted like the csv module (pyarrow passes over
    a blank line at the end of a range, so its row numbers cannot be used); only for warnings."""
    newlines = 0
    with open(path, "rb") as handle:
        while block := handle.read(8 << 20):
            newlines += block.count(b"\n")
        handle.seek(max(0, size - (64 << 10)))
        tail = handle.read()
    return newlines - tail[len(tail.rstrip(b"\r\n")) :].count(b"\n") + 1


def _tail(path: str, size: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, size - 64))
        return handle.read().decode("latin-1")


class _ByteRange(io.RawIOBase):
    """Bytes ``start:end`` of a file as a readable stream for pyarrow."""

    def __init__(self, path: str, start: int, end: int):
        super().__init__()
        self._file = open(path, "rb", buffering=0)
        self._file.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)[: max(0, min(len(buffer), self._left))]
        count = self._file.readinto(view) if len(view) else 0
        self._left -= count
        return count

    def close(self) -> None:
        self._file.close()
        super().close()
