"""Decoding raw captures: BOM sniffing (UTF-16 from Windows redirection), UTF-8 with a Latin-1
fallback, and a binary-file check, so every parser sees ``str`` and bad files fail clearly."""

from __future__ import annotations

import codecs
import io
import os
from pathlib import Path

from esxdiag.errors import ParseError

_BOMS = [
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]


def decode(data: bytes, name: str = "<input>") -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ParseError(f"not valid {encoding} text ({exc.reason})", file=name) from None
    if b"\x00" in data[:65536]:
        raise ParseError("binary data, not a text capture", file=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# a capture parsed whole (every kind but esxtop's batch CSV, which is streamed) is read into memory
# whole: a vsish / esxcli / ethtool / guest capture is KBs, a vsphere_perf JSON of a long window a few
# MB; vm-support's archive members are capped at 32 MiB (esxdiag.intake.archive). Past this a file is
# not read, so memory stays bounded whatever the folder holds (a 1 GiB sparse file cost 1 GB).
MAX_WHOLE_FILE_BYTES = 64 * 2**20


def read_capped(path: str | Path, cap: int | None = None) -> bytes:
    """The file's bytes, at most ``cap`` (MAX_WHOLE_FILE_BYTES): a larger file is a ParseError
    naming it and the cap, found without reading it (and bounded even if it grows while read)."""
    path = Path(path)
    cap = MAX_WHOLE_FILE_BYTES if cap is None else cap
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(cap + 1) if size <= cap else b""
    except OSError as exc:
        raise ParseError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if size > cap or len(data) > cap:
        raise ParseError(f"{max(size, len(data)):,} bytes, over the {cap // 2**20} MiB cap for a file read whole; "
                         "not read", file=str(path))
    return data


def read_text(path: str | Path) -> str:
    return decode(read_capped(path), str(path))


# a streamed capture (esxtop's batch CSV) is read a line at a time: a row of a big host is 17,000+
# columns, 100 KB to a few MB; a "line" past this is no capture's (a file without line ends would
# otherwise be held whole)
MAX_LINE_CHARS = 32 * 2**20


class _BoundedLines(io.TextIOWrapper):
    """A text stream whose lines are read at most MAX_LINE_CHARS at a time: a longer line is a
    ParseError naming the file and the cap, found holding no more than the cap."""

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]  # typeshed's _IOBase, a base of TextIOWrapper, says bytes
        limit = MAX_LINE_CHARS + 1 if size is None or size < 0 else min(size, MAX_LINE_CHARS + 1)
        line = super().readline(limit)
        if len(line) > MAX_LINE_CHARS:
            raise ParseError(f"a line longer than the {MAX_LINE_CHARS // 2**20} Mi-character cap for a line; not read",
                             file=str(getattr(self.buffer, "name", "<input>")))
        return line

    def __next__(self) -> str:  # type: ignore[override]  # typeshed's _IOBase, a base of TextIOWrapper, says bytes
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __iter__(self) -> "_BoundedLines":  # type: ignore[override]  # typeshed's _IOBase, a base of TextIOWrapper, says bytes
        return self


def open_text_stream(path: str | Path) -> io.TextIOBase:
    """A streaming text reader for large captures (esxtop CSV); same decoding rules as read_text
    except that the UTF-8/Latin-1 choice is made on the first 1 MiB."""
    path = Path(path)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise ParseError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    head = raw.peek(1 << 20)[: 1 << 20] if hasattr(raw, "peek") else b""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return _BoundedLines(raw, encoding=encoding, newline="")
    if b"\x00" in head[:65536]:
        raw.close()
        raise ParseError("binary data, not a text capture", file=str(path))
    try:
        head.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError as exc:
        # a multi-byte char cut at the 1 MiB edge is still UTF-8
        encoding = "utf-8" if exc.start >= len(head) - 3 else "latin-1"
    return _BoundedLines(raw, encoding=encoding, errors="strict" if encoding == "latin-1" else "replace",
                         newline="")
