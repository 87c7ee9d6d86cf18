"""``net-stats -l`` port listing and ``net-stats -A -t vW`` JSON (docs/raw-formats.md §3.1, §3.2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.cuts import Skipped, drop_cut_line
from esxdiag.parsers.jsontext import load_json
from esxdiag.parsers.numbers import is_count, json_count
from esxdiag.parsers.registry import first_line, parser

HEADER = ("PortNum", "Type", "SubType", "SwitchName", "MACAddress", "ClientName")
KINDS = {5: "vnic", 4: "uplink", 3: "vmknic", 0: "internal"}
_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")
_VNIC_SUFFIX = re.compile(r"^(?P<vm>.+)\.eth(?P<n>[0-9]{1,9})$")
# keys whose values are names, never booleans, even when a VM or device is called "true"
_NAME_KEYS = frozenset({"name", "switch", "devname", "mac", "hostname"})
_INTEGER_KEYS = frozenset({"id", "ring1sz", "ring2sz"})  # printed as integers; the rest are often rates (0.0)


@dataclass(frozen=True)
class NetStatsPort:
    port: int
    type: int
    subtype: int
    switch: str
    mac: str  # lower-case, colon-separated
    client: str
    kind: str  # vnic | uplink | vmknic | internal | other
    vm: str | None  # vNICs only: ClientName without a trailing .ethN
    vnic_index: int | None  # vNICs only: N of .ethN; 0 when the suffix is absent (first vNIC)


@dataclass(frozen=True)
class NetStatsList:
    ports: tuple[NetStatsPort, ...]
    warnings: tuple[str, ...] = ()

    def by_mac(self, mac: str) -> tuple[NetStatsPort, ...]:
        """Ports with this MAC (an uplink and a vmknic may share one)."""
        wanted = normalize_mac(mac)
        return tuple(p for p in self.ports if p.mac == wanted)

    def by_port(self, port: int) -> NetStatsPort | None:
        return next((p for p in self.ports if p.port == port), None)


def normalize_mac(mac: str) -> str:
    """``00-50-56-A6-55-F4`` / ``00:50:56:a6:55:f4`` -> ``00:50:56:a6:55:f4``."""
    text = mac.strip()
    if not _MAC.match(text):
        raise ValueError(f"not a MAC address: {mac!r}")
    return text.replace("-", ":").lower()


def norm_mac(mac: str | None) -> str | None:
    """Lower-case colon form, or None for a missing or malformed MAC (it then joins nothing)."""
    try:
        return normalize_mac(mac) if mac else None
    except ValueError:
        return None


_LIST_SAMPLE = """\
PortNum          Type SubType SwitchName       MACAddress         ClientName
2214592518          4       0 vSwitch0         a0:36:9f:00:00:01  vmnic0
33554436            3       0 vSwitch0         a0:36:9f:00:00:01  vmk0
33554464            5       9 vSwitch0         00:50:56:a6:55:f4  iperf-test1
33554465            5       9 vSwitch0         00:50:56:a6:44:72  iperf-test2
"""


@parser("net-stats", about="net-stats -l: every vSwitch port with its type, MAC and client (VM.ethN)",
        sniff=first_line(r"^\s*PortNum\s+Type\s+SubType\s+SwitchName\s+MACAddress\s+ClientName"),
        sample=_LIST_SAMPLE)
def parse_net_stats_list(text: str) -> NetStatsList:
    text, warnings = drop_cut_line(text)
    rows = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not rows:
        if warnings:
            raise ParseError(warnings[0])
        raise NoData("empty net-stats -l output")
    if tuple(rows[0][1].split()) == HEADER:
        rows = rows[1:]
    else:
        first = rows[0][1].split()
        if not first or not first[0].isdigit():
            raise ParseError(f"expected the net-stats -l header ({' '.join(HEADER)}), "
                             f"got {rows[0][1].strip()[:60]!r}", line=rows[0][0])
        warnings.append("no header line: columns assumed to be " + " ".join(HEADER))
    if not rows:
        raise NoData("net-stats -l listed no ports (header only)")
    ports: list[NetStatsPort] = []
    seen: dict[int, int] = {}
    skipped = Skipped(warnings)
    for number, line in rows:
        if skipped.cut_mark(number, line):
            continue
        try:
            port = _row(line, number)
        except ParseError as exc:  # a line of another shape; a bad MAC or number in a row stays an error
            if not exc.why.startswith("expected 6 columns") and line.split()[0].lstrip("-").isdigit():
                raise
            skipped.line(exc)
            continue
        if port.port in seen:
            raise ParseError(f"port {port.port} listed twice (first on line {seen[port.port]})", line=number)
        seen[port.port] = number
        ports.append(port)
    skipped.check(len(ports))
    return NetStatsList(tuple(ports), tuple(warnings))


def _row(line: str, number: int) -> NetStatsPort:
    parts = line.strip().split(None, 5)
    if len(parts) < 5:
        raise ParseError(f"expected 6 columns ({' '.join(HEADER)}), got {len(parts)}: {line.strip()[:60]!r}",
                         line=number)
    num, type_, subtype, switch, mac = parts[:5]
    client = parts[5].rstrip() if len(parts) == 6 else ""
    if not (is_count(num) and is_count(type_) and is_count(subtype)):
        raise ParseError(f"PortNum/Type/SubType must be integers: {line.strip()[:60]!r}", line=number)
    try:
        mac = normalize_mac(mac)
    except ValueError as exc:
        raise ParseError(str(exc), line=number) from None
    kind = KINDS.get(int(type_), "other")
    vm: str | None = None
    index: int | None = None
    if kind == "vnic":
        suffix = _VNIC_SUFFIX.match(client)
        vm, index = (suffix["vm"], int(suffix["n"])) if suffix else (client, 0)
    return NetStatsPort(int(num), int(type_), int(subtype), switch, mac, client, kind, vm, index)


@dataclass(frozen=True)
class NetStatsSample:
    sysinfo: dict
    stats: tuple[dict, ...]  # every sample, as printed (booleans converted)
    ports: tuple[dict, ...]  # the ports of the last sample
    warnings: tuple[str, ...] = ()


_JSON_SAMPLE = (  # raw output: about one port per line, booleans as strings
    '{"sysinfo": {"hostname": "fgvm-host"}, "stats": [ {"time": 1710144045, "interval": 10, "iteration": 0, '
    '"ports": [\n'
    '{"name": "FGVM-TIGER-15-31.eth1", "switch": "DvsPortset-0", "id": 67108889, "mac": "00:50:56:bc:03:f1", '
    '"rxmode": 0, "tunemode": 0, "uplink": "false", "ens": "true", "promisc": "false", "sink": "false" ,\n'
    '  "vnic": { "type": "vmxnet3", "ring1sz": 4096, "ring2sz": 4096, "tsopct": 0.0, "tsotputpct": 0.0, '
    '"txucastpct": 100.0, "txeps": 0.0},\n'
    '  "sys": [ "2103448", "2101791", "2101801" ],\n'
    '  "vcpu": [ "2103778", "2103780", "2103781" ]}\n'
    ']}]}\n'
)
_JSON_START = re.compile(r'^\s*\{\s*"sysinfo"\s*:')


@parser("net-stats-json", about="net-stats -A -t vW: per-port JSON sample (vNIC ring sizes, rates)",
        sniff=lambda head: bool(_JSON_START.match(head)) and '"stats"' in head, sample=_JSON_SAMPLE)
def parse_net_stats_json(text: str) -> NetStatsSample:
    if not text.strip():
        raise NoData("empty net-stats -A output")
    duplicates: list[str] = []
    document, _ = load_json(text, "net-stats", object_pairs_hook=lambda pairs: _object(pairs, duplicates))
    if not isinstance(document, dict) or not isinstance(document.get("stats"), list):
        raise ParseError("no top-level 'stats' list: not net-stats -A output", line=1)
    stats = document["stats"]
    if not all(isinstance(s, dict) for s in stats):
        raise ParseError("'stats' entries must be objects", line=1)
    if not stats:
        raise NoData("net-stats -A printed no samples")
    ports = stats[-1].get("ports")
    if not isinstance(ports, list) or not all(isinstance(p, dict) for p in ports):
        raise ParseError("the last sample has no 'ports' list of objects", line=1)
    if not ports:
        raise NoData("net-stats -A listed no ports")
    for port in ports:
        _check_counts(port, f"port {str(port.get('name', '?'))[:40]}")
    sysinfo = document.get("sysinfo", {})
    warnings = [f"duplicate key {d!r}: last value kept, earlier ones as {d}#1, {d}#2..." for d in duplicates]
    return NetStatsSample(sysinfo if isinstance(sysinfo, dict) else {"value": sysinfo},
                          tuple(stats), tuple(ports), tuple(warnings))


def _check_counts(value: object, where: str) -> None:
    """Numbers in a port (sizes, counts, ids, rates, percentages) are never negative."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_counts(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            _check_counts(item, where)
    elif isinstance(value, int) and not isinstance(value, bool) and not json_count(value):
        raise ParseError(f"{where} is {value}: not a non-negative integer")
    elif isinstance(value, float) and where.rpartition(".")[2] in _INTEGER_KEYS:
        raise ParseError(f"{where} is {value}: a size or count is an integer")
    elif isinstance(value, float) and value < 0:
        raise ParseError(f"{where} is {value}: a rate or percentage is never negative")


def _object(pairs: list[tuple[str, object]], duplicates: list[str]) -> dict:
    """JSON object hook: string booleans -> bool; a repeated key keeps the last value under its
    name and the earlier ones under ``key#1``, ``key#2`` (older ESXi prints e.g. qstop twice)."""
    counts: dict[str, int] = {}
    for key, _ in pairs:
        counts[key] = counts.get(key, 0) + 1
    result: dict = {}
    seen: dict[str, int] = {}
    for key, value in pairs:
        if isinstance(value, str) and value in ("true", "false") and key not in _NAME_KEYS:
            value = value == "true"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] < counts[key]:
            result[f"{key}#{seen[key]}"] = value
            if key not in duplicates:
                duplicates.append(key)
        else:
            result[key] = value
    return result
