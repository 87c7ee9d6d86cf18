"""Parsers: kind -> pure function text -> frozen dataclass record. Each kind is declared next to
its function (esxdiag.parsers.registry); ``PARSERS`` is the table of those declarations.

Every parser raises ``ParseError(why, line)`` for unusable input and ``NoData(why)`` when the
capture ran but holds nothing; ``parse_file`` fills in the file name. Streaming parsers
(esxtop) take an open text stream instead of a string.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, Iterator

from esxdiag.errors import EsxdiagError, NoData, ParseError
from esxdiag.parsers.cuts import unwrap_prompts
from esxdiag.parsers.registry import ParserEntry, collect
from esxdiag.textio import open_text_stream, read_text

# The modules that declare parser kinds (@parser in esxdiag.parsers.registry), in the order the
# intake tries their sniffers. PARSERS is read from them on first use: importing this package
# (or one parser module) does not import them all.
MODULES = ("esxtop", "esxtop_panel", "vsish", "vsish_python", "netstats", "netdvs", "vswitch", "esxcli",
           "ethtool_stats", "ethtool", "linux", "netstat", "windows", "vsphere", "events_text", "text")


def __getattr__(name: str) -> Any:
    if name == "PARSERS":
        return _parsers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parsers() -> dict[str, ParserEntry]:
    """kind -> ParserEntry (.kind, .about, .streaming, .sniff, .sample, .load())."""
    table = globals().get("PARSERS")
    if table is None:
        table = globals()["PARSERS"] = collect(MODULES)
    return table


def parse_text(kind: str, text: str, **options: Any) -> Any:
    entry = _entry(kind)
    func = entry.load()
    if entry.streaming:
        import io

        return func(io.StringIO(text), **options)
    text, notes = unwrap_prompts(text)
    return noted(func(text, **options), notes)


def parse_file(kind: str, path: str | Path, **options: Any) -> Any:
    """Parse one capture file; errors carry the file name."""
    entry = _entry(kind)
    func = entry.load()
    with naming_file(path):
        if entry.streaming:
            with open_text_stream(path) as stream:
                return func(stream, **options)
        text, notes = unwrap_prompts(read_text(path))
        return noted(func(text, **options), notes)


def noted(record: Any, notes: list[str]) -> Any:
    """``record`` with ``notes`` (what was left out of the text before parsing) ahead of its own
    warnings; a record without a warnings field is returned as it is."""
    if notes and _has_warnings(record):
        return dataclasses.replace(record, warnings=(*notes, *record.warnings))
    return record


def _has_warnings(record: Any) -> bool:
    return (dataclasses.is_dataclass(record) and not isinstance(record, type)
            and "warnings" in {f.name for f in dataclasses.fields(record)})


@contextlib.contextmanager
def naming_file(path: str | Path) -> Iterator[None]:
    """ParseError / NoData raised inside carry ``path`` (unless they name a file already); text
    that cannot be decoded is a ParseError naming it."""
    try:
        yield
    except (ParseError, NoData) as exc:
        if exc.file is None:
            exc.with_file(str(path))
        raise
    except UnicodeDecodeError as exc:
        raise ParseError(f"undecodable text ({exc.reason})", file=str(path)) from None


def to_jsonable(record: Any) -> Any:
    """Dataclass records -> plain JSON-able structures (tuples become lists)."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: to_jsonable(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, dict):
        return {str(k): to_jsonable(v) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [to_jsonable(v) for v in record]
    return record


def _entry(kind: str) -> ParserEntry:
    parsers = _parsers()
    try:
        return parsers[kind]
    except KeyError:
        known = ", ".join(sorted(parsers))
        raise EsxdiagError(f"unknown parser kind {kind!r} (known: {known})") from None
