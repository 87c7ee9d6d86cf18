"""vCenter API captures written by esxdiag.collectors.vsphere: ``vsphere_vm`` and ``vsphere_perf``.

The records mirror the JSON schemas documented in esxdiag.collectors.vsphere field for field.
Every field is checked against its declared type (ints are not bools, lists become tuples);
a missing or unexpected field, a wrong schema tag or invalid JSON is a ParseError.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.jsontext import load_json
from esxdiag.parsers.numbers import U64_MAX, is_count, json_count
from esxdiag.parsers.registry import json_schema, parser

_VMNIC = re.compile(r"vmnic[0-9]{1,4}|vusb[0-9]{1,3}")
SCHEMA_VM = "esxdiag.vsphere_vm/1"
SCHEMA_PERF = "esxdiag.vsphere_perf/1"
SCHEMA_EVENTS = "esxdiag.vsphere_events/1"
SCHEMA_HOST_PERF = "esxdiag.vsphere_host_perf/1"


@dataclass(frozen=True)
class CpuAllocation:
    limit_mhz: int | None  # None = unlimited
    reservation_mhz: int | None
    shares: int | None
    shares_level: str | None


@dataclass(frozen=True)
class GuestInfo:
    guest_id: str | None
    full_name: str | None
    family: str | None  # linuxGuest, windowsGuest, ...
    tools_status: str | None
    tools_running_status: str | None
    hostname: str | None
    ip_address: str | None
    ip_addresses: tuple[str, ...]


@dataclass(frozen=True)
class VnicConfig:
    label: str | None
    type: str  # vmxnet3, e1000, e1000e, vmxnet2, vmxnet, pcnet32, sriov, passthrough (DirectPath, no MAC), unknown
    mac: str | None
    device_key: int
    network: str | None
    dvs_uuid: str | None
    dvs_portgroup_key: str | None
    dvs_port_key: str | None
    connected: bool | None
    start_connected: bool | None


@dataclass(frozen=True)
class GuestNic:
    mac: str | None
    network: str | None
    ip_addresses: tuple[str, ...]
    connected: bool | None
    device_config_id: int | None


@dataclass(frozen=True)
class MissingProperty:
    path: str
    fault: str


@dataclass(frozen=True)
class ResourcePoolInfo:
    """A resource pool (or vApp) on the VM's path: the VM's own pool first, then each parent up to the
    compute resource's root pool."""

    name: str
    moid: str
    path: str | None  # inventory path; None when a parent could not be read
    kind: str  # pool | vapp
    cpu_limit_mhz: int | None  # config.cpuAllocation.limit; None = unlimited (-1)
    root: bool  # the root pool (its parent is the host or cluster): its limit is the capacity, not a setting


@dataclass(frozen=True)
class VmInventory:
    schema: str
    collected_at: str
    source: str  # vcenter | esxi
    name: str
    moid: str
    instance_uuid: str | None
    power_state: str | None
    host: str | None
    host_moid: str | None
    host_cpu_mhz: int | None
    cluster: str | None
    num_cpu: int | None
    cores_per_socket: int | None
    memory_mb: int | None
    cpu_allocation: CpuAllocation
    guest: GuestInfo
    vnics: tuple[VnicConfig, ...]
    guest_nics: tuple[GuestNic, ...]
    missing: tuple[MissingProperty, ...]
    latency_sensitivity: str | None = None  # config.latencySensitivity.level; absent in older bundles
    hardware_version: str | None = None  # config.version ("vmx-20"); absent in older bundles
    host_version: str | None = None  # the host's ESXi version (summary.config.product.version "8.0.2")
    resource_pools: tuple[ResourcePoolInfo, ...] | None = None  # the VM's pool chain; absent in older bundles


@dataclass(frozen=True)
class PerfSeries:
    counter: str
    instance: str
    unit: str
    values: tuple[int | None, ...]


class _Samples:
    """What both performance records answer: the samples of one counter instance."""

    series: tuple[PerfSeries, ...]

    def values(self, counter: str, instance: str) -> tuple[int | None, ...] | None:
        """The samples of one counter instance ("" = aggregate), or None when not captured."""
        return next((s.values for s in self.series if s.counter == counter and s.instance == instance), None)


@dataclass(frozen=True)
class VmPerf(_Samples):
    schema: str
    vm: str
    interval_s: int
    rollup: str  # realtime | historical
    note: str | None
    start: str
    end: str
    timestamps: tuple[str, ...]
    series: tuple[PerfSeries, ...]



@dataclass(frozen=True)
class VmEvent:
    type: str  # the event's class: VmMigratedEvent, DrsVmMigratedEvent, VmEmigratingEvent, ...
    time: str  # createdTime, ISO-8601 UTC
    host: str | None  # the host the event names (a migration's destination)
    source_host: str | None  # a migration's source host (sourceHost), else None
    message: str | None  # fullFormattedMessage


@dataclass(frozen=True)
class VmEvents:
    schema: str
    vm: str
    start: str
    end: str
    events: tuple[VmEvent, ...]


@dataclass(frozen=True)
class HostPerf(_Samples):
    """A host's vCenter counters per instance (vmnicN): the uplinks' drops and errors."""

    schema: str
    host: str
    interval_s: int
    rollup: str
    note: str | None
    start: str
    end: str
    timestamps: tuple[str, ...]
    series: tuple[PerfSeries, ...]


_VM_SAMPLE = """\
{
 "schema": "esxdiag.vsphere_vm/1", "collected_at": "2026-11-21T06:01:25Z", "source": "vcenter",
 "name": "iperf-test1", "moid": "vm-29", "instance_uuid": "f057b77b-751a-5140-9ae4-8f81266c6383",
 "power_state": "poweredOn", "host": "esx0.lab.local", "host_moid": "host-24", "host_cpu_mhz": 2294,
 "cluster": "DC0_C0", "num_cpu": 2, "cores_per_socket": 1, "memory_mb": 1024,
 "cpu_allocation": {"limit_mhz": null, "reservation_mhz": 0, "shares": 0, "shares_level": "normal"},
 "guest": {"guest_id": "debian7Guest", "full_name": "Debian GNU/Linux 7 (32-bit)", "family": "linuxGuest",
  "tools_status": "toolsOk", "tools_running_status": "guestToolsRunning", "hostname": "iperf-test1",
  "ip_address": "127.0.0.11", "ip_addresses": ["127.0.0.11"]},
 "vnics": [{"label": "Network adapter 1", "type": "vmxnet3", "mac": "00:50:56:a6:55:f4", "device_key": 203,
  "network": "VM Network", "dvs_uuid": null, "dvs_portgroup_key": null, "dvs_port_key": null,
  "connected": true, "start_connected": true}],
 "guest_nics": [{"mac": "00:50:56:a6:55:f4", "network": "VM Network", "ip_addresses": ["127.0.0.11"],
  "connected": true, "device_config_id": 203}],
 "missing": []
}
"""


@parser("vsphere-vm", about="esxdiag's vCenter VM inventory JSON: vNICs, CPU allocation, host, guest",
        sniff=json_schema(SCHEMA_VM), sample=_VM_SAMPLE)
def parse_vm(text: str) -> VmInventory:
    return build_record(VmInventory, _load(text, SCHEMA_VM), "")


_PERF_SAMPLE = """\
{
 "schema": "esxdiag.vsphere_perf/1", "vm": "iperf-test1", "interval_s": 20, "rollup": "realtime", "note": null,
 "start": "2026-11-21T06:01:25Z", "end": "2026-11-21T06:01:48Z",
 "timestamps": ["2026-11-21T06:01:28Z", "2026-11-21T06:01:48Z"],
 "series": [
  {"counter": "cpu.ready.summation", "instance": "", "unit": "millisecond", "values": [93, 67]},
  {"counter": "cpu.ready.summation", "instance": "0", "unit": "millisecond", "values": [94, 102]},
  {"counter": "net.droppedRx.summation", "instance": "203", "unit": "number", "values": [0, 0]}
 ]
}
"""


@parser("vsphere-perf", about="esxdiag's vCenter performance JSON: per-vCPU ready/costop/maxlimited, vNIC drops",
        sniff=json_schema(SCHEMA_PERF), sample=_PERF_SAMPLE)
def parse_perf(text: str) -> VmPerf:
    return _perf(text, VmPerf, SCHEMA_PERF)


_EVENTS_SAMPLE = """\
{
 "schema": "esxdiag.vsphere_events/1", "vm": "iperf-test1",
 "start": "2026-11-21T06:01:25Z", "end": "2026-11-21T06:02:28Z",
 "events": [{"type": "DrsVmMigratedEvent", "time": "2026-11-21T06:01:56Z", "host": "esx1.lab.local",
   "source_host": "esx0.lab.local", "message": "Migrating iperf-test1 from esx0.lab.local to esx1.lab.local"}]
}
"""


@parser("vsphere-events", about="esxdiag's vCenter events JSON: the VM's migrations in the window",
        sniff=json_schema(SCHEMA_EVENTS), sample=_EVENTS_SAMPLE)
def parse_events(text: str) -> VmEvents:
    return build_record(VmEvents, _load(text, SCHEMA_EVENTS), "")


_HOST_PERF_SAMPLE = """\
{
 "schema": "esxdiag.vsphere_host_perf/1", "host": "esx0.lab.local", "interval_s": 20, "rollup": "realtime",
 "note": null, "start": "2026-11-21T06:01:25Z", "end": "2026-11-21T06:01:48Z",
 "timestamps": ["2026-11-21T06:01:28Z", "2026-11-21T06:01:48Z"],
 "series": [
  {"counter": "net.droppedRx.summation", "instance": "vmnic1", "unit": "number", "values": [6100, 6240]},
  {"counter": "net.errorsRx.summation", "instance": "vmnic1", "unit": "number", "values": [0, 0]}
 ]
}
"""


@parser("vsphere-host-perf", about="esxdiag's vCenter host performance JSON: per-vmnic drops and errors",
        sniff=json_schema(SCHEMA_HOST_PERF), sample=_HOST_PERF_SAMPLE)
def parse_host_perf(text: str) -> HostPerf:
    return _perf(text, HostPerf, SCHEMA_HOST_PERF)


_Perf = TypeVar("_Perf", "VmPerf", "HostPerf")


def _perf(text: str, cls: type[_Perf], schema: str) -> _Perf:
    perf = build_record(cls, _load(text, schema), "")
    host = cls is HostPerf
    if not perf.series:
        raise NoData(f"no perf series for {f'host {perf.host}' if host else perf.vm}")
    check_perf(perf, "", vmnics=host)
    return perf


def check_perf(perf: VmPerf | HostPerf, where: str, vmnics: bool = False) -> None:
    """Every series has one value per timestamp, an ASCII instance, and appears once."""
    seen: dict[tuple[str, str], PerfSeries] = {}
    for series in perf.series:
        name = f"series {series.counter[:60]}[{series.instance[:40]!r}]"
        if len(series.values) != len(perf.timestamps):
            raise ParseError(f"{where}{name} has {len(series.values)} values for {len(perf.timestamps)} timestamps")
        if vmnics and not (series.instance == "" or _VMNIC.fullmatch(series.instance)):
            raise ParseError(f"{where}{name}: instance is not a vmnic name")
        if any(ch.isdigit() and not ch.isascii() for ch in series.instance) or (
                series.instance.isdigit() and not is_count(series.instance)):
            raise ParseError(f"{where}{name}: instance is not a vCPU number / device key in ASCII digits")
        first = seen.setdefault((series.counter, series.instance), series)
        if first is not series and first != series:
            raise ParseError(f"{where}{name} appears twice with different values")


def _load(text: str, schema: str) -> dict:
    data, _ = load_json(text, schema, strict=True)
    if not isinstance(data, dict):
        raise ParseError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != schema:
        raise ParseError(f"schema is {data.get('schema')!r}, expected {schema!r}")
    return data


def build_record(cls: type, data: Any, where: str) -> Any:
    """A frozen dataclass from JSON data, every field checked against its declared type."""
    return _converter(cls)(data, where)


def record_values(cls: type, data: Any, where: str, apart: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The checked field values build_record would give cls, by name, less the fields named in
    ``apart``: those count as present and are left to the caller (who reads them its own way), so
    a record can be built once with them rather than built and then replaced. An optional field
    the data lacks is absent (its default applies)."""
    return _field_reader(cls, apart)(data, where)


def _record_converter(cls: type) -> Callable[[Any, str], Any]:
    read = _field_reader(cls, frozenset())
    return lambda data, where: cls(**read(data, where))


@functools.lru_cache(maxsize=None)
def _field_reader(cls: type, apart: frozenset[str]) -> Callable[[Any, str], dict[str, Any]]:
    fields = dataclasses.fields(cls)
    optional = frozenset(f.name for f in fields if f.default is not dataclasses.MISSING)  # added after schema /1
    names = frozenset(f.name for f in fields)
    required = names - optional - apart
    hints = typing.get_type_hints(cls)
    converters = tuple((f.name, _converter(hints[f.name]), _plain_types(hints[f.name]))
                       for f in fields if f.name not in apart)
    scalars = tuple((n, plain) for n, _, plain in converters if plain)
    nested = tuple((n, conv) for n, conv, plain in converters if not plain)

    def read(data: Any, where: str) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ParseError(f"{where or 'record'}: expected an object, got {type(data).__name__}")
        keys = data.keys()
        if not (keys <= names and keys >= required):
            missing = [f.name for f in fields if f.name in required and f.name not in data]
            extra = sorted(set(data) - names)
            raise ParseError(f"{where or cls.__name__}: missing fields {missing}, unexpected fields {extra}")
        for n, plain in scalars:
            value: Any = data.get(n)  # an optional field the data lacks reads as None here: its default applies
            kind = type(value)
            if kind not in plain or kind is int and not 0 <= value <= U64_MAX:
                return _field_by_field(data, where, converters)
        values = dict(data)  # every scalar kept as it is (the common case): copied at once, the rest converted
        for n in apart:
            values.pop(n, None)
        for n, conv in nested:
            if n in data:
                values[n] = conv(data[n], f"{where}.{n}" if where else n)
        return values
    return read


def _field_by_field(data: dict, where: str, converters: tuple) -> dict[str, Any]:
    """A record's values one field at a time, in field order: a value to convert (an int for a float), or
    the first field that cannot be read named in the ParseError."""
    values = {}
    for n, conv, plain in converters:
        if n not in data:
            continue
        value = data[n]
        kind = type(value)
        if kind in plain and (kind is not int or 0 <= value <= U64_MAX):
            values[n] = value  # what conv would return, without building the field's path
        else:
            values[n] = conv(value, f"{where}.{n}" if where else n)
    return values


def _plain_types(hint: Any) -> frozenset:
    """The exact types a scalar field keeps as they are (an int also needs the count range); the
    converter decides everything else."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (types.UnionType, typing.Union) else (hint,)
    if not all(o in (str, int, float, bool, type(None)) for o in options):
        return frozenset()
    return frozenset(options)


@functools.lru_cache(maxsize=None)
def _converter(hint: Any) -> Callable[[Any, str], Any]:
    """The checking converter for one declared type, built once per type (the snapshot has thousands of records)."""
    origin = typing.get_origin(hint)
    if hint is Any:  # free-form values (a finding's observed value): JSON as it is
        return lambda value, where: value
    if origin is dict:
        key_conv, value_conv = (_converter(h) for h in typing.get_args(hint))
        return lambda value, where: _dict(value, where, key_conv, value_conv)
    if origin in (types.UnionType, typing.Union):
        options = typing.get_args(hint)
        nullable = type(None) in options
        (inner,) = [o for o in options if o is not type(None)]
        inner_conv = _converter(inner)
        return lambda value, where: None if value is None and nullable else inner_conv(value, where)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        flat, item_conv = _flat_item(item), _converter(item)

        def convert_tuple(value: Any, where: str) -> tuple:
            if not isinstance(value, list):
                raise ParseError(f"{where}: expected a list, got {type(value).__name__}")
            if not value:
                return ()
            if flat is not None and flat(value):
                return tuple(value)  # the common case checked in one pass; otherwise the precise error below
            return tuple([item_conv(v, f"{where}[{i}]") for i, v in enumerate(value)])
        return convert_tuple
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _record_converter(hint)

    def convert_scalar(value: Any, where: str) -> Any:
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if hint is int and isinstance(value, bool) or not isinstance(value, hint):
            raise ParseError(f"{where}: expected {hint.__name__}, got {type(value).__name__} {str(value)[:40]!r}")
        if hint is int and not json_count(value):  # counts, sizes, MHz, keys: never negative
            raise ParseError(f"{where}: {value} is not a non-negative integer below 2^64")
        return value
    return convert_scalar


def _dict(value: Any, where: str, key_conv: Callable, value_conv: Callable) -> dict:
    if not isinstance(value, dict):
        raise ParseError(f"{where}: expected an object, got {type(value).__name__}")
    return {key_conv(k, where): value_conv(v, f"{where}.{k}") for k, v in value.items()}


@functools.lru_cache(maxsize=None)
def _flat_item(hint: Any):
    """A whole-list check for items that are int (a count), str or bool, each maybe None; else None."""
    nullable = typing.get_origin(hint) in (types.UnionType, typing.Union) and type(None) in typing.get_args(hint)
    options = [o for o in typing.get_args(hint) if o is not type(None)] if nullable else [hint]
    if len(options) != 1 or options[0] not in (int, str, bool):
        return None
    kind = options[0]
    allowed = {kind, type(None)} if nullable else {kind}

    def check(values: list) -> bool:
        if not set(map(type, values)) <= allowed:  # type(), not isinstance: a bool is not a count
            return False
        if kind is not int or not values:
            return True
        present = [v for v in values if v is not None] if nullable else values
        return not present or (min(present) >= 0 and max(present) <= U64_MAX)
    return check
