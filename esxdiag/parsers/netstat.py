"""Linux TCP counters: ``netstat -s`` (net-tools, whole or grep-filtered), ``nstat -az``/``-asz``
and ``nstat -j``. See formats.md 4.4 and 4.5."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.jsontext import load_json
from esxdiag.parsers.numbers import count, json_count
from esxdiag.parsers.registry import parser
from esxdiag.parsers.repeats import Agreeing


@dataclass(frozen=True)
class NetstatCounters:
    retransmitted_segments: int | None
    segments_sent: int | None
    segments_received: int | None
    fast_retransmits: int | None
    lost_retransmit: int | None
    syn_retrans: int | None
    timeouts: int | None
    source: str  # netstat | nstat | nstat-json
    counters: dict[str, int]  # netstat: "Section: text" ("N" stands for an inline number); nstat: names
    warnings: tuple[str, ...] = ()


# typed field -> (nstat name, netstat -s texts: old net-tools typo/wording first, then new)
_FIELDS = {
    "retransmitted_segments": ("TcpRetransSegs", ("segments retransmited", "segments retransmitted")),
    "segments_sent": ("TcpOutSegs", ("segments send out", "segments sent out")),
    "segments_received": ("TcpInSegs", ("segments received",)),
    "fast_retransmits": ("TcpExtTCPFastRetrans", ("fast retransmits", "TCPFastRetrans")),
    "lost_retransmit": ("TcpExtTCPLostRetransmit", ("TCPLostRetransmit",)),
    "syn_retrans": ("TcpExtTCPSynRetrans", ("TCPSynRetrans",)),
    "timeouts": ("TcpExtTCPTimeouts", ("other TCP timeouts", "TCPTimeouts")),
}
_TCPEXT_FIELDS = ("fast_retransmits", "lost_retransmit", "syn_retrans", "timeouts")
_SECTION = re.compile(r"^([A-Za-z][A-Za-z0-9]*):\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][^:]*): (?P<value>[0-9]+)$")
_NUMBER = re.compile(r"(?<![\w.-])[0-9]+(?![\w.])")
_NEGATIVE = re.compile(r"(?<![\w.])-[0-9]+")
_NSTAT_LINE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*)\s+(?P<value>[0-9]+)(?:\s+-?[0-9]+(?:\.[0-9]+)?)?\s*$")


_SAMPLE = """\
Tcp:
    76 active connections openings
    50 passive connection openings
    1 failed connection attempts
    53 connection resets received
    0 connections established
    8035 segments received
    9081503 segments send out
    12 segments retransmited
    0 bad segments received
    63 resets sent
TcpExt:
    19 TCP sockets finished time wait in fast timer
    8 delayed acks sent
    TCPTimeouts: 2
    TCPLossProbes: 2
"""
_SECTION_TITLE = re.compile(r"(?m)^(Tcp|Ip|TcpExt):[^\S\r\n]*$")
_GREP_RETRANSMIT = re.compile(r"(?m)^[^\S\r\n]*\d+ segments? retransmit")  # `netstat -s | grep retrans`


def _sniff(head: str) -> bool:
    if bool(_SECTION_TITLE.search(head)) or head.lstrip().startswith(("#kernel", '{"kernel"')):
        return True
    return bool(_GREP_RETRANSMIT.search(head))


@parser("netstat", about="netstat -s or nstat -asz (-j): TCP segments sent and retransmitted",
        sniff=_sniff, sample=_SAMPLE)
def parse_netstat(text: str) -> NetstatCounters:
    body = text.lstrip("\ufeff").strip()
    if not body:
        raise NoData("empty netstat/nstat output")
    if body[0] == "{":
        return _nstat_json(body)
    text, cut = drop_cut_line(text)
    first = body.splitlines()[0].strip()
    record = _nstat_text(text) if first == "#kernel" or _NSTAT_LINE.match(first) else _netstat_s(text)
    return dataclasses.replace(record, warnings=tuple(cut) + record.warnings) if cut else record


def _typed(counters: dict[str, int], names: Mapping[str, str | tuple[str, ...]], source: str,
           warnings: tuple[str, ...] = ()) -> NetstatCounters:
    values = {}
    for field, wanted in names.items():
        keys = (wanted,) if isinstance(wanted, str) else wanted
        values[field] = next((counters[k] for k in keys if k in counters), None)
    return NetstatCounters(**values, source=source, counters=counters, warnings=warnings)


def _nstat_fields() -> dict[str, str]:
    return {field: nstat for field, (nstat, _) in _FIELDS.items()}


def _nstat_json(body: str) -> NetstatCounters:
    data, warnings = load_json(body, "nstat -j")
    kernel = data.get("kernel") if isinstance(data, dict) else None
    if not isinstance(kernel, dict):
        raise ParseError('JSON has no "kernel" object: not nstat -j output')
    bad = [k for k, v in kernel.items() if v is not None and not json_count(v)]
    if bad:
        raise ParseError(f"nstat -j counter {bad[0][:60]!r} is {str(kernel[bad[0]])[:40]!r}: "
                         "not a non-negative integer")
    counters = {k: v for k, v in kernel.items() if v is not None}
    if not counters and not warnings:
        raise NoData('nstat -j printed no counters (run with -a -z for absolute values incl. zeros)')
    return _typed(counters, _nstat_fields(), "nstat-json", tuple(warnings))


def _nstat_text(text: str) -> NetstatCounters:
    counters = Agreeing([])
    skipped = Skipped(counters.warnings)
    headers: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if skipped.cut_mark(n, line):
            continue
        if stripped == "#kernel":
            headers.append(n)
            if len(headers) > 1 and counters:
                raise ParseError(f"a second '#kernel' (first on line {headers[0]}): two nstat outputs in one "
                                 "capture? Save each sample in its own file", line=n)
        if not stripped or stripped.startswith("#"):
            continue
        m = _NSTAT_LINE.match(stripped)
        if not m:
            error = ParseError(f"not an nstat 'Name value rate' line: {stripped[:80]!r}", line=n)
            if stripped.split()[-1][:1] in "-+" or len(stripped.split()) in (2, 3):  # damaged value: not skipped
                raise error
            skipped.line(error, started=bool(counters or counters.ambiguous))
            continue
        counters.put(m["name"], count(m["value"], f"counter {m['name'][:60]!r}", n), f"line {n}")
    skipped.check(len(counters) + len(counters.ambiguous))
    if not counters and not counters.ambiguous:
        raise NoData("nstat printed only its header (no counters; use -a -z)")
    return _typed(dict(counters), _nstat_fields(), "nstat", tuple(counters.warnings))


def _netstat_s(text: str) -> NetstatCounters:
    text, notes = _one_netstat_output(text)
    counters = Agreeing(notes)
    skipped = Skipped(notes)
    seen_sections: set[str] = set()
    section, heading, saw_section = "", "", False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or skipped.cut_mark(n, line):  # an elision in a paste
            continue
        if line.startswith("error parsing /proc"):  # netstat's own warning; the rest is still valid
            notes.append(f"line {n}: {line.strip()}")
            continue
        if (m := _SECTION.match(line)) and not line[0].isspace():
            section, heading, saw_section = m.group(1), "", True
            seen_sections.add(section)
            continue
        body = line.strip()
        if body.startswith("NIC statistics") or body.startswith("Ring parameters"):
            raise ParseError(f"this is ethtool output ({body!r}), not netstat -s", line=n)
        kv = _KEY_VALUE.match(body)
        number = _NUMBER.search(body)
        if kv:
            text_key, value = kv["key"], count(kv["value"], f"counter {kv['key'][:60]!r}", n)
        elif number:
            value = count(number.group(), f"counter in {body[:60]!r}", n)
            rest = _NUMBER.sub("N", body, count=1)
            text_key = rest[2:] if rest.startswith("N ") else rest
        elif body.endswith(":"):  # histogram heading ("ICMP input histogram:")
            heading = body[:-1]
            continue
        elif negative := _NEGATIVE.search(body):  # a counter printed negative: damage, an error
            raise ParseError(f"counter in {body[:60]!r}: {negative.group()!r} is not a non-negative integer", line=n)
        else:
            skipped.line(ParseError(f"line has no counter value: {body[:80]!r}", line=n),
                         started=bool(counters or counters.ambiguous))
            continue
        if line.startswith("        ") and heading:
            text_key = f"{heading}: {text_key}"
        key = f"{section}: {text_key}" if section else text_key
        counters.put(key, value, f"line {n}")
    skipped.check(len(counters) + len(counters.ambiguous) + len(seen_sections))
    elided = bool(skipped.marks)
    ambiguous, counts = counters.ambiguous, dict(counters)
    if not counts and not ambiguous:
        raise NoData("netstat -s printed section headers but no counters")
    names = {field: tuple(f"{sec}: {t}" for t in texts for sec in ("Tcp", "TcpExt", "")) if saw_section
             else texts for field, (_, texts) in _FIELDS.items()}
    names = {f: tuple(k.removeprefix(": ") for k in keys) for f, keys in names.items()}
    record = _typed(counts, names, "netstat", tuple(notes))
    if "TcpExt" in seen_sections and section == "TcpExt" and not elided:
        notes.append("TcpExt is the last section (net-tools prints IpExt after it): the capture may be cut "
                     "there, so a TcpExt counter it does not show is unknown, not 0")
        record = dataclasses.replace(record, warnings=tuple(notes))
    elif "TcpExt" in seen_sections and not elided:
        # net-tools prints TcpExt counters only when non-zero (opt_number / unknown entries in
        # statistics.c printval), so inside a whole TcpExt section (IpExt follows) a missing counter is 0
        zeros: dict[str, Any] = {f: 0 for f in _TCPEXT_FIELDS if getattr(record, f) is None and not ambiguous & set(names[f])}
        record = dataclasses.replace(record, **zeros)
    if all(getattr(record, f) is None for f in _FIELDS):
        if not saw_section:
            raise ParseError("no netstat -s section headers (Ip:, Tcp:, TcpExt: ...) and no known TCP counter "
                             "wording: not netstat -s output")
        if "Tcp" in {k.split(":", 1)[0] for k in counts}:
            notes.append("Tcp section present but no known English wording: localised output? "
                         "collect with LC_ALL=C")
            record = _typed(counts, names, "netstat", tuple(notes))
    return record


def _one_netstat_output(text: str) -> tuple[str, list[str]]:
    """``netstat -s`` printed twice into one capture (a start and an end sample pasted together)
    is not one sample: identical copies are read once with a warning, different ones are a
    ParseError (which sample would the capture be?)."""
    blocks: list[list[tuple[int, str]]] = [[]]
    seen: set[str] = set()
    repeated: list[str] = []  # the section each further output starts with
    for n, line in enumerate(text.splitlines(), 1):
        section = _SECTION.match(line)
        if section and not line[0].isspace():
            if section.group(1) in seen:
                blocks.append([])
                repeated.append(section.group(1))
                seen.clear()
            seen.add(section.group(1))
        blocks[-1].append((n, line))
    if len(blocks) == 1:
        return text, []
    bodies = {tuple(line.rstrip() for _, line in block if line.strip()) for block in blocks}
    if len(bodies) > 1:
        raise ParseError(f"section {repeated[0]!r} starts again: two different "
                         "netstat -s outputs in one capture (start and end pasted together?); save each sample "
                         "in its own file", line=blocks[1][0][0])
    return "\n".join(line for _, line in blocks[0]) + "\n", [
        f"the same netstat -s output is pasted {len(blocks)} times (again from line {blocks[1][0][0]}): read once"]
