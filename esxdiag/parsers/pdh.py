"""PDH-CSV pieces shared by esxtop batch output and Windows PerfMon/relog/typeperf files.

* the field-0 marker ``(PDH-CSV 4.0) (<zone>)(<bias>)``: bias in minutes, UTC = local + bias
  (``(Pacific Daylight Time)(420)``; esxtop always writes ``(UTC)(0)``);
* counter paths ``\\\\HOST\\Object(Instance)\\Counter`` split by position, not by regex on
  parentheses, because instance names contain ``(``, ``)``, ``:``, ``,`` and maybe ``\\``;
* sample timestamps ``MM/DD/YYYY HH:MM:SS[.fff]`` (spreadsheet re-saves drop the seconds and
  the zero padding; comma-decimal locales may write ``DD.MM.YYYY``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

_MARKER = re.compile(r"\(PDH-CSV ([0-9.]+)\) \((.*?)\)\((-?[0-9]{1,6})\)")
_US_STAMP = re.compile(r"([0-9]{1,2})/([0-9]{1,2})/([0-9]{4}) ([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?")
_DOT_STAMP = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{4}) ([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:,([0-9]{1,6}))?)?")


@dataclass(frozen=True)
class PdhMarker:
    version: str
    timezone: str
    bias_min: int  # UTC = local + bias_min


@dataclass(frozen=True)
class CounterPath:
    host: str
    object: str
    instance: str | None
    counter: str


@dataclass(frozen=True)
class Stamp:
    utc: datetime
    has_seconds: bool


def parse_marker(field0: str) -> PdhMarker | None:
    match = _MARKER.fullmatch(field0.strip().lstrip("\ufeff"))
    if match is None:
        return None
    return PdhMarker(match.group(1), match.group(2), int(match.group(3)))


def parse_counter_path(text: str) -> CounterPath | None:
    """Host = after the leading ``\\\\`` up to the next ``\\``; counter = after the last ``\\``;
    object = middle up to its first ``(``; instance = between that ``(`` and the middle's last
    ``)``. None when ``text`` is not a counter path."""
    parts = split_counter_path(text)
    return None if parts is None else CounterPath(*parts)


def split_counter_path(text: str) -> tuple[str, str, str | None, str] | None:
    """``parse_counter_path`` as a plain (host, object, instance, counter) tuple, for headers of
    50,000 columns where building a dataclass per column is a measurable share of the parse."""
    if not text.startswith("\\\\"):
        return None
    host_end = text.find("\\", 2)
    counter_start = text.rfind("\\") + 1
    if host_end < 0 or counter_start <= host_end + 1:
        return None
    host, middle, counter = text[2:host_end], text[host_end + 1 : counter_start - 1], text[counter_start:]
    open_at = middle.find("(")
    if open_at < 0:
        return host, middle, None, counter
    close_at = middle.rfind(")")
    if close_at < open_at:
        return None
    return host, middle[:open_at], middle[open_at + 1 : close_at], counter


def parse_stamp(text: str, bias_min: int, day_first_dots: bool = False) -> Stamp | None:
    """Local PDH timestamp -> UTC; None when the text is not a timestamp."""
    text = text.strip()
    match = _US_STAMP.fullmatch(text)
    if match is not None:
        month, day = int(match.group(1)), int(match.group(2))
    elif day_first_dots and (match := _DOT_STAMP.fullmatch(text)) is not None:
        day, month = int(match.group(1)), int(match.group(2))
    else:
        return None
    seconds, fraction = match.group(6), match.group(7) or ""
    try:
        local = datetime(int(match.group(3)), month, day, int(match.group(4)), int(match.group(5)),
                         int(seconds or 0), int(fraction.ljust(6, "0")) if fraction else 0)
    except ValueError:
        return None
    return Stamp((local + timedelta(minutes=bias_min)).replace(tzinfo=timezone.utc), seconds is not None)


def iso_utc(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds" if moment.microsecond else "seconds").replace("+00:00", "Z")
