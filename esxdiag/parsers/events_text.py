"""vCenter events as text, the way users paste them: ``govc events [-l] vm/NAME`` and PowerCLI's
``Get-VIEvent -Entity NAME`` (Format-List, a table or Export-Csv). A VM's migration is read from
the event type when it is printed (``govc events -l``) or from vCenter's own wording of the
message (the VmMigratedEvent and DrsVmMigratedEvent formats of the vSphere event catalog); its
hosts only from that wording. Times are kept as printed: neither tool prints a time zone."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.pwsh import raw_text, read_records
from esxdiag.parsers.registry import first_line, parser, win

MIGRATED = ("VmMigratedEvent", "DrsVmMigratedEvent")
_MAX_MESSAGE = 4096  # a message longer than this is kept, not matched against the formats
_GOVC = re.compile(r"\[((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] \[(\w{1,20})\]"
                   r"(?: \[(\d{1,19})\] \[(\w{1,80})\])? ?(.*)")
_MAX_SPLITS = 64  # the " from " / " to " places tried in one message
_PREFIXES = {"VmMigratedEvent": "Migration of virtual machine ", "DrsVmMigratedEvent": "DRS migrated "}
_MONTHS = {m: n for n, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}


@dataclass(frozen=True)
class TextEvent:
    type: str | None  # the event class when printed or known from the message's wording
    time: str | None  # as printed, without a zone: govc's as ISO-8601 (its local time), PowerCLI's culture format
    vm: str | None  # a migration's VM (from the message)
    source_host: str | None  # a migration's source host
    host: str | None  # a migration's destination host
    message: str


@dataclass(frozen=True)
class EventsText:
    source: str  # govc | powercli
    events: tuple[TextEvent, ...]
    warnings: tuple[str, ...] = ()

    @property
    def migrations(self) -> tuple[TextEvent, ...]:
        """The completed migrations whose VM and hosts the message names."""
        return tuple(e for e in self.events if e.type in MIGRATED and e.host)


_SAMPLE = """\
[Sat Nov 28 13:30:13 2026] [info] [27] [VmStartingEvent] DC0_C0_RP0_VM0 on host DC0_C0_H1 in DC0 is starting
[Sat Nov 28 13:30:13 2026] [info] [28] [VmPoweredOnEvent] DC0_C0_RP0_VM0 on DC0_C0_H1 in DC0 is powered on
[Sat Nov 28 13:30:16 2026] [info] [36] [VmMigratedEvent] Migration of virtual machine DC0_C0_RP0_VM0 from DC0_C0_H1, LocalDS_0 to DC0_C0_H1, LocalDS_0 completed
"""
_POWERCLI = win("FullFormattedMessage", "CreatedTime")


@parser("vcenter-events-text", about="vCenter events as text: govc events [-l], Get-VIEvent (list, table or CSV); "
        "VM migrations and their hosts", sniff=lambda head: first_line(_GOVC.pattern)(head) or _POWERCLI(head),
        sample=_SAMPLE)
def parse_events_text(text: str) -> EventsText:
    body = text.lstrip("\ufeff").strip()
    if not body:
        raise NoData("empty events output")
    if _GOVC.match(body):
        return _govc(text)
    return _powercli(text)


def _govc(text: str) -> EventsText:
    text, warnings = drop_cut_line(text)
    events: list[list] = []  # [time, category, type, message lines, line]
    skipped = Skipped(warnings)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or skipped.cut_mark(n, line):
            continue
        m = _GOVC.fullmatch(line.rstrip())
        if m:
            events.append([m.group(1), m.group(4), [m.group(5).strip()], n])
        else:  # a message with a line end in it is rare: its rest is named, not guessed into the message
            skipped.line(ParseError(f"not a govc events line ('[time] [category] message'): {line.strip()[:80]!r}",
                                    line=n), started=bool(events))
    skipped.check(len(events))
    if not events:
        raise NoData("no events")
    if not any(e[1] for e in events):
        warnings.append("no event types printed (govc events without -l): migrations are found by vCenter's message "
                        "wording only")
    warnings.append("times are govc's local time (no zone is printed)")
    return EventsText("govc", tuple(_event(_iso(t), kind, " ".join(lines), n, warnings)
                                    for t, kind, lines, n in events), tuple(warnings))


def _powercli(text: str) -> EventsText:
    found = read_records(text, "Get-VIEvent", optional=("FullFormattedMessage",), rows_apart=True)
    events = []
    for index, record in enumerate(found.items):
        message = raw_text(record.get("FullFormattedMessage"))
        if not message:
            found.warnings.append(f"{found.where(index)}: an event with no FullFormattedMessage skipped")
            continue
        kind = next((raw_text(record.get(k)) for k in ("EventTypeId", "Type", "TypeName") if record.get(k)), None)
        line = found.lines[index] if index < len(found.lines) else 0
        events.append(_event(raw_text(record.get("CreatedTime")) or None, kind, message, line, found.warnings))
    if not events:
        raise ParseError("no event with a FullFormattedMessage: not Get-VIEvent output")
    found.warnings.append("times as PowerShell printed them (the capturing machine's culture and zone)")
    return EventsText("powercli", tuple(events), tuple(found.warnings))


def _event(time: str | None, kind: str | None, message: str, line: int, warnings: list[str]) -> TextEvent:
    """One event; a migration's VM and hosts from the message when its wording reads one way only."""
    wording = next((name for name, prefix in _PREFIXES.items()
                    if kind in (None, name) and message.startswith(prefix) and len(message) <= _MAX_MESSAGE), None)
    readings = _readings(wording, message) if wording else set()
    if not readings:
        return TextEvent(kind, time, None, None, None, message)
    if len(readings) > 1:
        warnings.append(f"line {line}: the migration message can be read {len(readings)} ways ({message[:80]!r}): "
                        "its VM and hosts are not read")
        return TextEvent(kind or wording, time, None, None, None, message)
    vm, source, host = readings.pop()
    return TextEvent(kind or wording, time, vm, source, host, message)


def _readings(wording: str, message: str) -> set[tuple[str, str, str]]:
    """Every (VM, source host, destination host) vCenter's wording of ``message`` allows: VmMigratedEvent
    "Migration of virtual machine VM from HOST, DATASTORE to HOST, DATASTORE completed", DrsVmMigratedEvent
    "DRS migrated VM from HOST to HOST in cluster CLUSTER in DATACENTER" (vSphere event catalog). Host names
    hold no blank and no comma; VM, datastore and cluster names may hold both, so every split is tried."""
    body = message[len(_PREFIXES[wording]):]
    if wording == "VmMigratedEvent":
        if not body.endswith(" completed"):
            return set()
        body = body[: -len(" completed")]
    found = set()
    for i in _places(body, " from "):
        vm, rest = body[:i], body[i + len(" from "):]
        for j in _places(rest, " to "):
            before, after = rest[:j], rest[j + len(" to "):]
            if wording == "VmMigratedEvent":
                source, target = _host_before(before, ", ", need_rest=True), _host_before(after, ", ", need_rest=True)
            else:
                source, target = _host_before(before + " in cluster x", " in cluster "), \
                    _host_before(after, " in cluster ", need_rest=True)
            if vm and source and target:
                found.add((vm, source, target))
    return found


def _places(text: str, word: str) -> list[int]:
    places: list[int] = []
    at = text.find(word)
    while at >= 0 and len(places) < _MAX_SPLITS:
        places.append(at)
        at = text.find(word, at + 1)
    return places


def _host_before(text: str, sep: str, need_rest: bool = False) -> str | None:
    """The host name ``text`` starts with, up to ``sep``: no blank, no comma."""
    host, found, rest = text.partition(sep)
    if not found or (need_rest and not rest) or not host or any(c in host for c in " ,\t"):
        return None
    return host


def _iso(stamp: str) -> str:
    """govc's ANSIC time ("Sat Nov 28 13:30:16 2026") as ISO-8601 without a zone."""
    _, month, day, clock, year = stamp.split()
    return f"{year}-{_MONTHS[month]:02d}-{int(day):02d}T{clock}"
