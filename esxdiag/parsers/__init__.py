"""Parser registry: kind -> pure function text -> frozen dataclass record.

Every parser raises ``ParseError(why, line)`` for unusable input and ``NoData(why)`` when the
capture ran but holds nothing; ``parse_file`` fills in the file name. Streaming parsers
(esxtop) take an open text stream instead of a string.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from esxdiag.errors import EsxdiagError, NoData, ParseError
from esxdiag.textio import open_text_stream, read_text


@dataclass(frozen=True)
class ParserEntry:
    kind: str
    module: str
    function: str
    streaming: bool = False
    about: str = ""

    def load(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(f"esxdiag.parsers.{self.module}"), self.function)


_ENTRIES = [
    ParserEntry("esxtop", "esxtop", "parse_esxtop", streaming=True, about="esxtop batch CSV (-b)"),
    ParserEntry("esxtop-cpu-panel", "esxtop", "parse_cpu_panel", about="interactive esxtop CPU screen text"),
    ParserEntry("vsish-rxsummary", "vsish", "parse_rxsummary"),
    ParserEntry("vsish-rxqueue-status", "vsish", "parse_rxqueue_status"),
    ParserEntry("vsish-clientstats", "vsish", "parse_clientstats"),
    ParserEntry("vsish-ls", "vsish", "parse_ls"),
    ParserEntry("vsish-python", "vsish_python", "parse_python_mode", about="vsish -pe get output"),
    ParserEntry("net-stats", "netstats", "parse_net_stats_list", about="net-stats -l"),
    ParserEntry("net-stats-json", "netstats", "parse_net_stats_json", about="net-stats -A -t vW"),
    ParserEntry("esxcfg-vswitch", "vswitch", "parse_vswitch_list", about="esxcfg-vswitch -l"),
    ParserEntry("net-dvs", "netdvs", "parse_net_dvs", about="net-dvs -l"),
    ParserEntry("esxcli-vm-list", "esxcli", "parse_vm_list"),
    ParserEntry("esxcli-vm-ports", "esxcli", "parse_vm_ports"),
    ParserEntry("esxcli-nic-stats", "esxcli", "parse_nic_stats"),
    ParserEntry("ethtool-stats", "ethtool_stats", "parse_stats"),
    ParserEntry("ethtool-rings", "ethtool", "parse_rings"),
    ParserEntry("ethtool-driver", "ethtool", "parse_driver"),
    ParserEntry("ethtool-permaddr", "ethtool", "parse_permaddr"),
    ParserEntry("ip-link", "linux", "parse_ip_link"),
    ParserEntry("ring-persistence", "linux", "parse_ring_persistence"),
    ParserEntry("netstat", "netstat", "parse_netstat", about="netstat -s or nstat -az"),
    ParserEntry("win-advprops", "windows", "parse_advprops"),
    ParserEntry("win-rss", "windows", "parse_rss"),
    ParserEntry("win-stats", "windows", "parse_stats"),
    ParserEntry("win-netadapter", "windows", "parse_netadapter"),
    ParserEntry("vsphere-vm", "vsphere", "parse_vm"),
    ParserEntry("vsphere-perf", "vsphere", "parse_perf"),
    ParserEntry("text", "text", "parse_text", about="one-line text output (version, counts)"),
]

PARSERS: dict[str, ParserEntry] = {e.kind: e for e in _ENTRIES}


def parse_text(kind: str, text: str, **options: Any) -> Any:
    entry = _entry(kind)
    func = entry.load()
    if entry.streaming:
        import io

        return func(io.StringIO(text), **options)
    return func(text, **options)


def parse_file(kind: str, path: str | Path, **options: Any) -> Any:
    """Parse one capture file; errors carry the file name."""
    entry = _entry(kind)
    func = entry.load()
    with naming_file(path):
        if entry.streaming:
            with open_text_stream(path) as stream:
                return func(stream, **options)
        return func(read_text(path), **options)


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
    try:
        return PARSERS[kind]
    except KeyError:
        known = ", ".join(sorted(PARSERS))
        raise EsxdiagError(f"unknown parser kind {kind!r} (known: {known})") from None
