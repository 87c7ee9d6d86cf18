"""Windows guest PowerShell outputs (formats.md section 5), read as records by
esxdiag.parsers.pwsh (CSV, JSON or Format-List). Adapters are keyed by ``Name`` and advanced
properties by ``RegistryKeyword`` (DisplayName/DisplayValue are localised). Counts (queues,
processors, MTU, statistics) are non-negative integers or a ParseError."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import ParseError
from esxdiag.parsers.pwsh import Value, counter, named, need, raw_text, read_records, unique
from esxdiag.parsers.registry import parser, win

_ARRAY_TYPES = ("System.String[]", "System.Object[]", "System.Int32[]")


def _opt(value: Value) -> str | None:
    return None if value is None else raw_text(value)


def _crlf(text: str) -> str:
    """A sample as PowerShell prints it over SSH: CRLF line ends."""
    return text.replace("\n", "\r\n")


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


_ADVPROPS_SAMPLE = _crlf("""\
[
    {
        "Name":  "Ethernet0",
        "DisplayName":  "Rx Ring #1 Size",
        "DisplayValue":  "512",
        "RegistryKeyword":  "MaxRxRing1Length",
        "RegistryValue":  [
            "512"
        ]
    },
    {
        "Name":  "Ethernet0",
        "DisplayName":  "Rx Ring #2 Size",
        "DisplayValue":  "32",
        "RegistryKeyword":  "MaxRxRing2Length",
        "RegistryValue":  [
            "32"
        ]
    }
]
""")


# The English DisplayName of each vmxnet3 property the analysis reads (formats.md 5.1): a capture that
# selected DisplayName/DisplayValue only is keyed through it (a localised name is kept as printed)
DISPLAY_KEYWORDS = {
    "Rx Ring #1 Size": "MaxRxRing1Length", "Rx Ring #2 Size": "MaxRxRing2Length", "Tx Ring Size": "MaxTxRingLength",
    "Small Rx Buffers": "NumRxBuffersSmall", "Large Rx Buffers": "NumRxBuffersLarge",
    "Receive Side Scaling": "*RSS", "Maximum number of RSS queues": "*NumRssQueues", "Max Tx Queues": "MaxTxQueues",
    "Enable adaptive rx ring sizing": "EnableAdaptiveRing", "Jumbo Packet": "*JumboPacket",
}


@parser("win-advprops", about="Get-NetAdapterAdvancedProperty: vmxnet3 ring sizes, RSS and buffer settings",
        sniff=win("DisplayName", "DisplayValue"), sample=_ADVPROPS_SAMPLE)
def parse_advprops(text: str) -> WinAdvProps:
    """Keyed by adapter ``Name`` and ``RegistryKeyword``; a capture of DisplayName/DisplayValue only
    (``Select-Object DisplayName, DisplayValue``) is keyed by the English display name's keyword,
    under adapter "" when no Name was printed (the analysis takes it for the one adapter)."""
    # a narrow console cuts RegistryKeyword first (the default table's fourth column): such a row is keyed by
    # its English DisplayName; a row with another cut value is left out on its own, with a warning
    found = read_records(text, "Get-NetAdapterAdvancedProperty", optional=("RegistryKeyword",), rows_apart=True)
    if not any(isinstance(r.get("RegistryKeyword"), str) or isinstance(r.get("DisplayName"), str)
               for r in found.items):
        need(found.items, ("RegistryKeyword",), "Get-NetAdapterAdvancedProperty")
    warnings = found.warnings
    _key_by_display_name(found.items, warnings)
    adapters: dict[str, dict[str, AdvProp]] = {}
    for record in unique(found.items, ("Name", "RegistryKeyword"), warnings):
        registry = record.get("RegistryValue")
        if registry in _ARRAY_TYPES:  # ConvertTo-Csv writes an array's type name, not its items
            warnings.append(f"{record['Name']}/{record['RegistryKeyword']}: RegistryValue captured as "
                            f"{registry!r}; use DisplayValue or capture as JSON")
            registry = None
        prop = AdvProp(_opt(record.get("DisplayName")), _opt(record.get("DisplayValue")), registry, record)
        adapters.setdefault(str(record.get("Name") or ""), {})[str(record["RegistryKeyword"])] = prop
    return WinAdvProps(adapters, found.source, tuple(warnings))


def _key_by_display_name(records: list[dict[str, Value]], warnings: list[str]) -> None:
    """Records without RegistryKeyword get the keyword of their English DisplayName (or the name
    itself), with one warning; a record with neither is not a property."""
    guessed = []
    for record in records:
        if isinstance(record.get("RegistryKeyword"), str):
            continue
        name = record.get("DisplayName")
        if not isinstance(name, str) or "DisplayValue" not in record:
            raise ParseError(f"a record without RegistryKeyword, or DisplayName and DisplayValue: not "
                             "Get-NetAdapterAdvancedProperty "
                             f"output (properties seen: {', '.join(list(record)[:8])})")
        record["RegistryKeyword"] = DISPLAY_KEYWORDS.get(name, name)
        guessed.append(name)
    if guessed:
        warnings.append(f"{len(guessed)} properties without a RegistryKeyword keyed by their English DisplayName "
                        "(a localised name is kept as printed and not recognised)")
    if records and not any(isinstance(r.get("Name"), str) for r in records):
        warnings.append("no adapter Name in the capture: the properties are taken as the one adapter's")


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
    warnings: tuple[str, ...] = ()


_RSS_SAMPLE = _crlf("""\


Name                  : Ethernet0
InterfaceDescription  : vmxnet3 Ethernet Adapter
Enabled               : False
NumberOfReceiveQueues : 1
Profile               : ClosestStatic
BaseProcessorGroup    : 0
BaseProcessorNumber   : 0
MaxProcessorGroup     : 0
MaxProcessorNumber    : 3
MaxProcessors         : 4
NumaNode              : 65535
IndirectionTable      :
PSComputerName        :



""")


@parser("win-rss", about="Get-NetAdapterRss | Format-List *: RSS enabled, receive queues, processors",
        sniff=win("NumberOfReceiveQueues", "Profile"), sample=_RSS_SAMPLE)
def parse_rss(text: str) -> WinRss:
    found = read_records(text, "Get-NetAdapterRss")
    records = named(found, ("Name",), "Get-NetAdapterRss")
    if not any("Enabled" in r or "NumberOfReceiveQueues" in r for r in records):
        raise ParseError("no Enabled/NumberOfReceiveQueues property: not Get-NetAdapterRss output")
    adapters = {}
    for record in unique(records, ("Name",), found.warnings):
        fields = {k: raw_text(v) for k, v in record.items()}
        enabled = {"true": True, "false": False}.get(fields.get("Enabled", "").lower())
        name = fields["Name"]
        adapters[name] = RssInfo(enabled, counter(record.get("NumberOfReceiveQueues"), f"{name} NumberOfReceiveQueues"),
                                 counter(record.get("MaxProcessors"), f"{name} MaxProcessors"),
                                 _opt(record.get("Profile")), fields)
    return WinRss(adapters, tuple(found.warnings))


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
    warnings: tuple[str, ...] = ()


_STAT_KEYS = ("ReceivedDiscardedPackets", "ReceivedPacketErrors", "OutboundDiscardedPackets",
              "OutboundPacketErrors", "ReceivedUnicastPackets", "ReceivedBytes")


_STATS_SAMPLE = _crlf("""\


ifAlias                  : Ethernet0
InterfaceDescription     : vmxnet3 Ethernet Adapter
Name                     : Ethernet0
OutboundDiscardedPackets : 0
OutboundPacketErrors     : 0
ReceivedBytes            : 93115410282
ReceivedDiscardedPackets : 20591
ReceivedPacketErrors     : 0
ReceivedUnicastBytes     : 93115115052
ReceivedUnicastPackets   : 61502718
SentBytes                : 0
PSComputerName           :


""")


_STATS_TABLE = win("ReceivedBytes", "ReceivedUnicastPackets", "SentBytes")  # the default view: no discards


@parser("win-stats", about="Get-NetAdapterStatistics | Format-List *: received discarded packets and errors",
        sniff=lambda head: win("ReceivedDiscardedPackets")(head) or _STATS_TABLE(head), sample=_STATS_SAMPLE)
def parse_stats(text: str) -> WinStats:
    found = read_records(text, "Get-NetAdapterStatistics")  # a last line without a line end is not read
    records = named(found, ("Name",), "Get-NetAdapterStatistics")
    if not any(k in r for r in records for k in _STAT_KEYS):
        raise ParseError("no ReceivedBytes/ReceivedDiscardedPackets/... property: not Get-NetAdapterStatistics "
                         "output (use Format-List * to see the discard counters)")
    adapters = {str(record["Name"]): _adapter_stats(record, str(record["Name"]))
                for record in unique(records, ("Name",), found.warnings)}
    return WinStats(adapters, tuple(found.warnings))


def _adapter_stats(record: dict[str, Value], name: str) -> WinAdapterStats:
    def value(key: str) -> int | None:
        return counter(record.get(key), f"{name} {key}")
    return WinAdapterStats(value("ReceivedDiscardedPackets"), value("ReceivedPacketErrors"),
                           value("OutboundDiscardedPackets"), value("OutboundPacketErrors"),
                           value("ReceivedUnicastPackets"), value("ReceivedBytes"),
                           {k: raw_text(v) for k, v in record.items()})


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
    warnings: tuple[str, ...] = ()


_NETADAPTER_SAMPLE = _crlf("""\
"Name","InterfaceDescription","MacAddress","Status","LinkSpeed","MtuSize","DriverVersion"
"Ethernet0","vmxnet3 Ethernet Adapter","00-50-56-A6-66-0E","Up","10 Gbps","1500","1.2.8.0"
""")
_ADAPTER_KEYS = win("InterfaceDescription", "LinkSpeed")
_RSS_KEYS = win("NumberOfReceiveQueues")  # Get-NetAdapterRss and -Statistics name the adapter too
_STATS_KEYS = win("ReceivedBytes")


@parser("win-netadapter", about="Get-NetAdapter: adapters with MAC, link speed, MTU and driver version",
        sniff=lambda head: _ADAPTER_KEYS(head) and not _RSS_KEYS(head) and not _STATS_KEYS(head),
        sample=_NETADAPTER_SAMPLE)
def parse_netadapter(text: str) -> WinNetAdapters:
    """Get-NetAdapter in any view; a capture without MacAddress (Select-Object without it) is read
    with a warning: its adapters then cannot be told apart by MAC."""
    # the description only names the adapter type (the VMware MAC prefix still finds the vNIC): a narrow
    # console's cut InterfaceDescription is read without it; a cut Name, MAC, status or speed is refused
    found = read_records(text, "Get-NetAdapter", optional=("InterfaceDescription",))
    records = named(found, ("Name",), "Get-NetAdapter")
    for key, other in (("ReceivedBytes", "Get-NetAdapterStatistics"), ("NumberOfReceiveQueues", "Get-NetAdapterRss"),
                       ("RegistryKeyword", "Get-NetAdapterAdvancedProperty")):
        if any(key in r for r in found.items):
            raise ParseError(f"{key} property: this is {other} output, not Get-NetAdapter")
    if not any(k in r for r in records for k in ("MacAddress", "InterfaceDescription", "LinkSpeed", "Status")):
        raise ParseError("no MacAddress, InterfaceDescription, LinkSpeed or Status property: not Get-NetAdapter output")
    if not any("MacAddress" in r for r in records):
        found.warnings.append("no MacAddress in the capture: the adapters cannot be joined to vNICs by MAC "
                              "(capture 'Get-NetAdapter | Format-List *')")
    adapters = []
    for record in unique(records, ("Name",), found.warnings):
        mac = _opt(record.get("MacAddress"))
        if mac is not None:
            if not re.fullmatch(r"(?:[0-9A-Fa-f]{2}[-:]){5}[0-9A-Fa-f]{2}", mac):
                raise ParseError(f"adapter {record['Name']}: MacAddress {mac!r} is not a MAC address")
            mac = mac.replace("-", ":").lower()
        adapters.append(WinAdapter(str(record["Name"]), _opt(record.get("InterfaceDescription")), mac,
                                   _opt(record.get("Status")), _opt(record.get("LinkSpeed")),
                                   counter(record.get("MtuSize"), f"{record['Name']} MtuSize"),
                                   _opt(record.get("DriverVersion"))))
    return WinNetAdapters(tuple(adapters), tuple(found.warnings))
