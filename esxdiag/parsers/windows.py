"""Windows guest PowerShell outputs (formats.md section 5). Each accepts ``ConvertTo-Csv``
(with or without ``#TYPE``), ``ConvertTo-Json`` (object or array) and ``Format-List``; the
default table view is rejected because it truncates values. Adapters are keyed by ``Name`` and
advanced properties by ``RegistryKeyword`` (DisplayName/DisplayValue are localised)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError

Value = str | tuple[str, ...] | None
_RULER = re.compile(r"^\s*-{2,}(?:\s+-{2,})*\s*$")
_ARRAY_TYPES = ("System.String[]", "System.Object[]", "System.Int32[]")


def read_records(text: str) -> tuple[list[dict[str, Value]], str]:
    """(records, source) with source in csv/json/list; empty strings become None."""
    body = text.lstrip("\ufeff").strip()
    if not body:
        raise NoData("empty PowerShell output")
    lines = body.splitlines()
    ruler = next((n for n, line in enumerate(lines) if _RULER.match(line)), None)
    if ruler is not None and ruler > 0 and " : " not in lines[ruler - 1]:
        truncated = any("..." in line or "\u2026" in line for line in lines[ruler + 1:])
        raise ParseError("default table output" + (" with truncated ('...') values" if truncated else "")
                         + ": capture with '| Format-List *', '| ConvertTo-Csv -NoTypeInformation' or "
                         "'| ConvertTo-Json'", line=ruler + 1)
    if body[0] in "[{":
        return _json_records(body), "json"
    if lines[0].startswith("#TYPE") or (lines[0].startswith('"') and '","' in lines[0]):
        return _csv_records(lines), "csv"
    return _list_records(lines), "list"


def _csv_records(lines: list[str]) -> list[dict[str, Value]]:
    if lines[0].startswith("#TYPE"):
        lines = lines[1:]
    rows = list(csv.reader(lines))
    if len(rows) < 2:
        raise NoData("CSV has a header but no rows")
    header = rows[0]
    for n, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            raise ParseError(f"CSV row has {len(row)} fields, header has {len(header)}", line=n)
    return [{k: (v if v != "" else None) for k, v in zip(header, row)} for row in rows[1:]]


def _json_records(body: str) -> list[dict[str, Value]]:
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(item, dict) for item in items):
        raise ParseError("JSON is not an object or an array of objects")
    return [{k: _json_value(v) for k, v in item.items()} for item in items]


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


def _list_records(lines: list[str]) -> list[dict[str, Value]]:
    records: list[dict[str, Value]] = []
    current: dict[str, Value] = {}
    last = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            if current:
                records.append(current)
            current, last = {}, None
            continue
        if line[0].isspace() and last is not None:  # a long value wrapped by the console
            current[last] = _list_value(f"{_raw(current[last])} {line.strip()}")
            continue
        key, sep, value = line.partition(" : ")
        if not sep and line.rstrip().endswith(" :"):
            key, sep, value = line.rstrip()[:-2], " :", ""
        if not sep:
            raise ParseError(f"not a Format-List 'Property : value' line: {line.strip()[:80]!r}", line=n)
        last = key.strip()
        current[last] = _list_value(value.strip())
    if current:
        records.append(current)
    return records


def _raw(value: Value) -> str:
    if isinstance(value, tuple):
        return "{" + ", ".join(value) + "}"
    return value or ""


def _list_value(value: str) -> Value:
    if value.startswith("{") and value.endswith("}"):
        inner = value[1:-1].strip()
        return tuple(item.strip() for item in inner.split(",")) if inner else ()
    return value or None


def _need(records: list[dict[str, Value]], keys: tuple[str, ...], what: str) -> None:
    for i, record in enumerate(records, 1):
        missing = [k for k in keys if not isinstance(record.get(k), str)]
        if missing:
            raise ParseError(f"record {i} has no {', '.join(missing)}: not {what} output "
                             f"(properties seen: {', '.join(list(record)[:8])})")


def _int(value: Value) -> int | None:
    return int(value) if isinstance(value, str) and re.fullmatch(r"-?\d+", value) else None


def _text(value: Value) -> str:
    return _raw(value)


# ---------------------------------------------------------------- Get-NetAdapterAdvancedProperty

@dataclass(frozen=True)
class AdvProp:
    display_name: str | None
    display_value: str | None
    registry_value: Value  # tuple for arrays ({512} in Format-List, ["512"] in JSON)
    fields: dict[str, Value]

    @property
    def registry_scalar(self) -> str | None:
        """The registry value as one string (arrays of one element unwrapped, longer ones
        comma-joined); None when it was not captured."""
        if isinstance(self.registry_value, tuple):
            return ",".join(self.registry_value) if self.registry_value else None
        return self.registry_value


@dataclass(frozen=True)
class WinAdvProps:
    adapters: dict[str, dict[str, AdvProp]]
    source: str
    warnings: tuple[str, ...] = ()


def parse_advprops(text: str) -> WinAdvProps:
    records, source = read_records(text)
    _need(records, ("Name", "RegistryKeyword"), "Get-NetAdapterAdvancedProperty")
    adapters: dict[str, dict[str, AdvProp]] = {}
    warnings = []
    for record in records:
        registry = record.get("RegistryValue")
        if registry in _ARRAY_TYPES:  # ConvertTo-Csv writes an array's type name, not its items
            warnings.append(f"{record['Name']}/{record['RegistryKeyword']}: RegistryValue captured as "
                            f"{registry!r}; use DisplayValue or capture as JSON")
            registry = None
        prop = AdvProp(_opt(record.get("DisplayName")), _opt(record.get("DisplayValue")), registry, record)
        adapters.setdefault(str(record["Name"]), {})[str(record["RegistryKeyword"])] = prop
    return WinAdvProps(adapters, source, tuple(warnings))


def _opt(value: Value) -> str | None:
    return None if value is None else _text(value)


# ---------------------------------------------------------------- Get-NetAdapterRss

@dataclass(frozen=True)
class RssInfo:
    enabled: bool | None
    number_of_receive_queues: int | None
    max_processors: int | None
    profile: str | None
    fields: dict[str, str]


@dataclass(frozen=True)
class WinRss:
    adapters: dict[str, RssInfo]


def parse_rss(text: str) -> WinRss:
    records, _ = read_records(text)
    _need(records, ("Name",), "Get-NetAdapterRss")
    if not any("Enabled" in r or "NumberOfReceiveQueues" in r for r in records):
        raise ParseError("no Enabled/NumberOfReceiveQueues property: not Get-NetAdapterRss output")
    adapters = {}
    for record in records:
        fields = {k: _text(v) for k, v in record.items()}
        enabled = {"true": True, "false": False}.get(fields.get("Enabled", "").lower())
        adapters[fields["Name"]] = RssInfo(enabled, _int(record.get("NumberOfReceiveQueues")),
                                           _int(record.get("MaxProcessors")), _opt(record.get("Profile")), fields)
    return WinRss(adapters)


# ---------------------------------------------------------------- Get-NetAdapterStatistics

@dataclass(frozen=True)
class WinAdapterStats:
    received_discarded_packets: int | None
    received_packet_errors: int | None
    outbound_discarded_packets: int | None
    outbound_packet_errors: int | None
    received_unicast_packets: int | None
    received_bytes: int | None
    counters: dict[str, str]


@dataclass(frozen=True)
class WinStats:
    adapters: dict[str, WinAdapterStats]


_STAT_KEYS = ("ReceivedDiscardedPackets", "ReceivedPacketErrors", "OutboundDiscardedPackets",
              "OutboundPacketErrors", "ReceivedUnicastPackets", "ReceivedBytes")


def parse_stats(text: str) -> WinStats:
    records, _ = read_records(text)
    _need(records, ("Name",), "Get-NetAdapterStatistics")
    if not any(k in r for r in records for k in _STAT_KEYS):
        raise ParseError("no ReceivedBytes/ReceivedDiscardedPackets/... property: not Get-NetAdapterStatistics "
                         "output (use Format-List * to see the discard counters)")
    adapters = {}
    for record in records:
        values = [_int(record.get(k)) for k in _STAT_KEYS]
        adapters[str(record["Name"])] = WinAdapterStats(*values, {k: _text(v) for k, v in record.items()})
    return WinStats(adapters)


# ---------------------------------------------------------------- Get-NetAdapter

@dataclass(frozen=True)
class WinAdapter:
    name: str
    description: str | None
    mac: str | None  # 00:50:56:a6:66:0e (PowerShell prints 00-50-56-A6-66-0E)
    status: str | None
    link_speed: str | None
    mtu: int | None
    driver_version: str | None


@dataclass(frozen=True)
class WinNetAdapters:
    adapters: tuple[WinAdapter, ...]


def parse_netadapter(text: str) -> WinNetAdapters:
    records, _ = read_records(text)
    _need(records, ("Name",), "Get-NetAdapter")
    if not any("MacAddress" in r for r in records):
        raise ParseError("no MacAddress property: not Get-NetAdapter output")
    adapters = []
    for record in records:
        mac = _opt(record.get("MacAddress"))
        if mac is not None:
            if not re.fullmatch(r"(?:[0-9A-Fa-f]{2}[-:]){5}[0-9A-Fa-f]{2}", mac):
                raise ParseError(f"adapter {record['Name']}: MacAddress {mac!r} is not a MAC address")
            mac = mac.replace("-", ":").lower()
        adapters.append(WinAdapter(str(record["Name"]), _opt(record.get("InterfaceDescription")), mac,
                                   _opt(record.get("Status")), _opt(record.get("LinkSpeed")),
                                   _int(record.get("MtuSize")), _opt(record.get("DriverVersion"))))
    return WinNetAdapters(tuple(adapters))
