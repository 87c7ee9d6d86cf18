"""Linux guest ``ethtool`` outputs: ``-g`` (ring sizes), ``-i`` (driver) and ``-P`` (permanent
MAC), docs/raw-formats.md §4.2-4.3; ``-S`` is in esxdiag.parsers.ethtool_stats (re-exported here)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.jsontext import load_json
from esxdiag.parsers.numbers import count, json_count
from esxdiag.parsers.registry import first_line, parser
from esxdiag.parsers.repeats import Agreeing
from esxdiag.parsers.ethtool_stats import GENERATIONS, EthtoolStats, RxQueueStats, TxQueueStats, parse_stats

__all__ = ["GENERATIONS", "EthtoolStats", "RxQueueStats", "TxQueueStats", "parse_stats", "parse_rings",
           "parse_driver", "parse_permaddr"]


@dataclass(frozen=True)
class RingSet:
    rx: int | None
    rx_mini: int | None
    rx_jumbo: int | None
    tx: int | None


@dataclass(frozen=True)
class EthtoolRings:
    max: RingSet
    current: RingSet
    extra: dict[str, str]
    source: str  # ioctl | netlink | json
    warnings: tuple[str, ...] = ()
    interface: str | None = None  # as printed in "Ring parameters for ens4:" (None in JSON, or not printed)


_TITLE = re.compile(r"Ring parameters for (\S{1,64}):")
_RING_KEYS = {"RX": "rx", "RX Mini": "rx_mini", "RX Jumbo": "rx_jumbo", "TX": "tx"}
_JSON_KEYS = {"rx": "rx", "rx-mini": "rx_mini", "rx-jumbo": "rx_jumbo", "tx": "tx"}


_RINGS_SAMPLE = """\
Ring parameters for eth0:
Pre-set maximums:
RX:\t\t4096
RX Mini:\t0
RX Jumbo:\t0
TX:\t\t4096
Current hardware settings:
RX:\t\t512
RX Mini:\t0
RX Jumbo:\t0
TX:\t\t1024

"""


@parser("ethtool-rings", about="ethtool -g IFACE: ring size maximums and current settings",
        sniff=first_line(r"^Ring parameters for \S+:"), sample=_RINGS_SAMPLE)
def parse_rings(text: str) -> EthtoolRings:
    """``ethtool -g`` (ioctl or netlink era, TABs or spaces) or ``ethtool -j -g``. Values are
    recorded as printed: old multi-queue kernels print ring size x queue count (the parser cannot
    know the queue count, so it does not undo that)."""
    stripped = text.strip()
    if not stripped:
        raise NoData("empty ethtool -g output")
    if stripped[0] in "[{":
        return _rings_json(stripped)
    text, warnings = drop_cut_line(text)
    sections = {"max": Agreeing(warnings), "current": Agreeing(warnings)}
    extra: dict[str, str] = {}
    where = None
    interface: str | None = None
    skipped, read = Skipped(warnings), 0
    for n, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if title := _TITLE.fullmatch(body):
            if interface not in (None, title.group(1)):
                raise ParseError(f"a second 'Ring parameters for {title.group(1)}:' after {interface}: two ethtool -g "
                                 "outputs in one capture? Save each interface's in its own file", line=n)
            interface = title.group(1)
            continue
        if not body or body.startswith("Ring parameters for") or skipped.cut_mark(n, line):
            continue
        if body.startswith(("Cannot get device ring settings", "netlink error")):
            raise NoData(f"ring sizes not available: {body}")
        if body == "Pre-set maximums:":
            if where is not None:
                raise ParseError("a second 'Pre-set maximums:': two ethtool -g outputs in one capture?", line=n)
            where = "max"
            continue
        if body == "Current hardware settings:":
            where = "current"
            continue
        key, sep, value = body.partition(":")
        if not sep or where is None:
            skipped.line(ParseError(f"unexpected line {body[:80]!r}: not ethtool -g output", line=n),
                         started=where is not None)
            continue
        key, value, read = key.strip(), value.strip(), read + 1
        if key in _RING_KEYS:
            sections[where].put(_RING_KEYS[key], _ring_value(value, n), f"line {n}", f"{where} {key}")
        else:
            extra[key if where == "current" else f"max {key}"] = value
    skipped.check(read)
    if not all("rx" in s or "rx" in s.ambiguous for s in sections.values()):
        raise ParseError("no 'Pre-set maximums:' and 'Current hardware settings:' RX lines: not ethtool -g output")
    cut = [key for key, field in _RING_KEYS.items() if field in sections["max"] and field not in sections["current"]
           and field not in sections["current"].ambiguous]
    if cut:
        warnings.append(f"'Current hardware settings:' has no {', '.join(cut)} line where 'Pre-set maximums:' has "
                        "one: the capture may be cut")
    netlink = bool(extra) or any(v is None for s in sections.values() for v in s.values())
    return EthtoolRings(RingSet(**_fill(sections["max"])), RingSet(**_fill(sections["current"])), extra,
                        "netlink" if netlink else "ioctl", tuple(warnings), interface)


def _ring_value(value: str, n: int) -> int | None:
    if value == "n/a":
        return None
    return count(value, "ring size", n)


def _fill(values: dict[str, int | None]) -> dict[str, int | None]:
    return {name: values.get(name) for name in _RING_KEYS.values()}


def _rings_json(text: str) -> EthtoolRings:
    data, warnings = load_json(text, "ethtool -j -g")
    obj = data[0] if isinstance(data, list) and data else data
    if not isinstance(obj, dict) or "rx-max" not in obj and "rx" not in obj:
        raise ParseError("JSON has no rx/rx-max keys: not ethtool -j -g output")
    current = {f: _json_size(obj.get(k), k) for k, f in _JSON_KEYS.items()}
    maxima = {f: _json_size(obj.get(f"{k}-max"), f"{k}-max") for k, f in _JSON_KEYS.items()}
    known = set(_JSON_KEYS) | {f"{k}-max" for k in _JSON_KEYS}
    extra = {k: str(v) for k, v in obj.items() if k not in known}
    return EthtoolRings(RingSet(**maxima), RingSet(**current), extra, "json", tuple(warnings))


def _json_size(value, key: str) -> int | None:
    if value is None:
        return None
    if not json_count(value):
        raise ParseError(f"ring size {key!r} is {str(value)[:40]!r}: not a non-negative integer")
    return value


# ---------------------------------------------------------------- ethtool -i / -P

@dataclass(frozen=True)
class EthtoolDriver:
    driver: str
    version: str | None
    version_tuple: tuple[int, ...] | None
    firmware_version: str | None
    bus_info: str | None
    fields: dict[str, str]
    warnings: tuple[str, ...] = ()


_DRIVER_SAMPLE = """\
driver: vmxnet3
firmware-version: N/A
bus-info: 0000:03:00.0
supports-statistics: yes
supports-test: no
supports-eeprom-access: no
supports-register-dump: yes
supports-priv-flags: no
"""


@parser("ethtool-driver", about="ethtool -i IFACE: driver name and version",
        sniff=lambda head: bool(re.match(r"^driver: \S*", head)) and "bus-info:" in head, sample=_DRIVER_SAMPLE)
def parse_driver(text: str) -> EthtoolDriver:
    """``ethtool -i``. Debian 7's in-tree driver prints no ``version:`` line: version is None."""
    fields: dict[str, str] = {}
    text, warnings = drop_cut_line(text)
    skipped = Skipped(warnings)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or skipped.cut_mark(n, line):
            continue
        key, sep, value = line.partition(":")
        if not sep or " " in key.strip():
            skipped.line(ParseError(f"unexpected line {line.strip()[:80]!r}: not ethtool -i output", line=n),
                         started="driver" in fields)
            continue
        fields[key.strip()] = value.strip()
    skipped.check(len(fields))
    if not fields:
        raise NoData("empty ethtool -i output")
    if not fields.get("driver"):
        raise ParseError("no 'driver:' line: not ethtool -i output")
    version = fields.get("version") or None
    firmware = fields.get("firmware-version") or None
    return EthtoolDriver(fields["driver"], version, _version_tuple(version),
                         None if firmware == "N/A" else firmware, fields.get("bus-info") or None, fields,
                         tuple(warnings))


def _version_tuple(version: str | None) -> tuple[int, ...] | None:
    if not version:
        return None
    cleaned = version.replace("(debug)", "").replace("-NAPI", "").replace("-k", "")
    m = re.match(r"[0-9]{1,9}(?:\.[0-9]{1,9})*", cleaned.strip())
    return tuple(int(part) for part in m.group().split(".")) if m else None


@dataclass(frozen=True)
class PermAddr:
    mac: str
    warnings: tuple[str, ...] = ()  # what was left out: the shell prompts around a pasted output, a cut mark


@parser("ethtool-permaddr", about="ethtool -P IFACE: the permanent MAC (joins the guest interface to its vNIC)",
        sniff=first_line(r"^Permanent address: "), sample="Permanent address: 00:50:56:a6:55:f4\n")
def parse_permaddr(text: str) -> PermAddr:
    """``ethtool -P``; an all-zero address means the driver does not report one."""
    warnings: list[str] = []  # a last line without its line end is read: a cut MAC does not match below
    skipped = Skipped(warnings)
    body = "\n".join(line for n, line in enumerate(text.splitlines(), 1)
                     if line.strip() and not skipped.cut_mark(n, line)).strip()
    if not body:
        raise NoData("empty ethtool -P output")
    m = re.fullmatch(r"Permanent address:\s*((?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2})", body)
    if not m:
        if "Operation not supported" in body:
            raise NoData(f"permanent address not available: {body.splitlines()[0]}")
        raise ParseError(f"expected 'Permanent address: xx:xx:xx:xx:xx:xx', got {body.splitlines()[0]!r}", line=1)
    mac = m.group(1).lower()
    if mac == "00:00:00:00:00:00":
        raise NoData("driver reports an all-zero permanent address")
    return PermAddr(mac, tuple(warnings))
