"""The fleet snapshot: what one API pass saw, written before any analysis, re-analysable offline.

It is to ``esxdiag scan`` what the bundle is to ``analyze``: ``esxdiag scan --snapshot FILE``
reads one back without touching the network. Layout: docs/fleet-scan.md. Loading refuses (a
ParseError naming the file) only what is not a snapshot at all: not an object, another schema, a
top-level field of the wrong type. Each VM and host record is read on its own by
esxdiag.fleet.salvage: damage costs that record's sample, series or field, with a note, never the fleet.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from esxdiag.errors import ParseError
from esxdiag.fleet.salvage import lenient_record, salvage_perf
from esxdiag.parsers.vsphere import CpuAllocation, MissingProperty, VmEvent, VmPerf, build_record, record_values
from esxdiag.vocabulary import SCHEMA_SNAPSHOT

MAX_SNAPSHOT_BYTES = 256 * 1024**2  # ~40,000 VMs (10,000 are ~60 MB); reading takes ~7x its size in memory
MAX_WINDOW_S = 86400.0
_PERF_APART = frozenset({"perf"})  # a VM's perf is salvaged series by series (esxdiag.fleet.salvage)


@dataclass(frozen=True)
class VcenterStatus:
    url: str
    name: str  # host:port
    status: str  # scanned | failed
    error: str | None
    error_kind: str | None  # unreachable, tls, auth, timeout, not-found, internal, ...
    requests: int
    seconds: float | None
    max_query_metrics: int | None
    max_query_metrics_source: str | None
    vms: int
    perf_errors: int
    unmatched_filters: tuple[str, ...]  # place filters naming nothing in this vCenter
    whole_device_lists: int = 0  # VMs whose vNICs were not at the usual keys: read from the whole device list
    workers: int = 1  # processes that read vNICs and perf counters
    migration_events: int | None = None  # migration events read for the window (None: not read, or older snapshot)
    migration_events_truncated: bool = False  # the answer held the most the scan asks for: older ones may be missing
    migration_events_error: str | None = None  # why the events could not be read


@dataclass(frozen=True)
class FleetVnic:
    label: str | None
    type: str
    mac: str | None
    device_key: int
    network: str | None
    connected: bool | None


@dataclass(frozen=True)
class FleetGuest:
    family: str | None
    ip_address: str | None
    guest_id: str | None = None  # optional: snapshots before these were read lack them
    tools_status: str | None = None  # guestToolsRunning | guestToolsNotRunning | guestToolsExecutingScripts


@dataclass(frozen=True)
class FleetVm:
    vcenter: str
    moid: str
    name: str
    power_state: str | None
    host: str | None
    host_moid: str | None
    cluster: str | None
    datacenter: str | None
    num_cpu: int | None
    cpu_allocation: CpuAllocation
    latency_sensitivity: str | None
    guest: FleetGuest
    num_vnics: int | None
    vnics: tuple[FleetVnic, ...] | None  # None: not read (--nic-types drops and no drops)
    missing: tuple[MissingProperty, ...]
    perf: VmPerf | None
    perf_error: str | None
    # vCenter's migration events for the VM in the window, oldest first ([] none; None: not read -- an older
    # snapshot, or the events query failed): vsphere_events records, host = destination, source_host = source
    migrations: tuple[VmEvent, ...] | None = None
    damage: tuple[str, ...] = ()  # what could not be read (esxdiag.fleet.salvage), never in the file

    @property
    def key(self) -> str:
        return f"{self.vcenter}/{self.moid}"


@dataclass(frozen=True)
class FleetHost:
    vcenter: str
    moid: str
    name: str
    cluster: str | None
    perf: VmPerf | None
    perf_error: str | None


@dataclass(frozen=True)
class Snapshot:
    schema: str
    collected_at: str
    window_s: float
    nic_types: str  # all | drops: whose vNIC types were read
    filters: dict
    vcenters: tuple[VcenterStatus, ...]
    hosts: tuple[FleetHost, ...]
    vms: tuple[FleetVm, ...]
    notes: tuple[str, ...] = ()  # records that could not be read at all (esxdiag.fleet.salvage)

    def unmatched_everywhere(self) -> list[str]:
        """Place filters that named nothing in any scanned vCenter (a typo, most likely)."""
        scanned = [v for v in self.vcenters if v.status == "scanned"]
        if not scanned:
            return []
        return sorted(set.intersection(*(set(v.unmatched_filters) for v in scanned)))

    @property
    def failed(self) -> tuple[VcenterStatus, ...]:
        return tuple(v for v in self.vcenters if v.status != "scanned")


def write_snapshot(data: dict, path: str | Path) -> Path:
    """Write atomically (a partial file never looks like a snapshot)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    # dumps: the C encoder (dump is pure Python); no circular check (~10 % of the time): the collector's
    # records are trees, and a cycle would still end in an error, never in a file
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, check_circular=False)
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.replace(tmp, path)
    return path


def snapshot_from_dict(data: object, file: str = "<snapshot>") -> Snapshot:
    try:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA_SNAPSHOT:
            found = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise ParseError(f"schema is {found!r}, expected {SCHEMA_SNAPSHOT!r}")
        for name in ("vms", "hosts"):
            if not isinstance(data.get(name), list):
                raise ParseError(f"{name}: expected a list, got {type(data.get(name)).__name__}")
        head = build_record(Snapshot, {**data, "vms": [], "hosts": []}, "")
        _check_numbers(head)
    except ParseError as exc:
        raise exc.with_file(file) from None
    notes: list[str] = []
    vms = tuple(_read_vm(raw, i) for i, raw in enumerate(data["vms"]))
    hosts = tuple(h for h in (_read_host(raw, i, notes) for i, raw in enumerate(data["hosts"])) if h is not None)
    return dataclasses.replace(head, vms=vms, hosts=hosts, notes=tuple(notes))


def _check_numbers(head: Snapshot) -> None:
    """Numbers no scan writes (NaN, infinite, negative), refused naming the field."""
    if not (math.isfinite(head.window_s) and 0 < head.window_s <= MAX_WINDOW_S):
        raise ParseError(f"window_s: {head.window_s!r} is not a window (seconds, above 0, at most {MAX_WINDOW_S:g})")
    for i, v in enumerate(head.vcenters):
        if v.seconds is not None and not (math.isfinite(v.seconds) and v.seconds >= 0):
            raise ParseError(f"vcenters[{i}].seconds: {v.seconds!r} is not a duration")


def _text(raw: object, key: str) -> str | None:
    value = raw.get(key) if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def _read_vm(raw: object, i: int) -> FleetVm:
    """One VM record: its perf salvaged series by series, the rest field by field when it must be."""
    where = f"vms[{i}]"
    try:
        values = record_values(FleetVm, raw, where, _PERF_APART)
    except ParseError:
        return _read_vm_leniently(raw, i)
    notes: list[str] = []
    raw_perf = raw.get("perf") if isinstance(raw, dict) else None  # a dict: record_values read it
    perf, why = salvage_perf(raw_perf, values["name"] or where, values["num_cpu"], notes)
    values.update(perf=perf, perf_error=values["perf_error"] or why, damage=tuple(notes))
    return FleetVm(**values)  # built once: the record whole, its perf read apart


def _read_vm_leniently(raw: object, i: int) -> FleetVm:
    """_read_vm for a record that is not whole: each field that cannot be read is unknown, with a note."""
    who = _text(raw, "name") or f"vms[{i}]"
    notes: list[str] = []
    raw_perf = raw.get("perf") if isinstance(raw, dict) else None
    try:
        vm = lenient_record(FleetVm, {**raw, "perf": None} if isinstance(raw, dict) else raw, f"vms[{i}]", notes)
    except ParseError as exc:
        notes.append(f"{who}: the snapshot's record of this VM could not be read ({exc.why})")
        return FleetVm(_text(raw, "vcenter") or "(unknown vCenter)", _text(raw, "moid") or f"vms[{i}]", who, None,
                       None, None, None, None, None, CpuAllocation(None, None, None, None), None,
                       FleetGuest(None, None), None, None, (), None, "damaged snapshot record",
                       damage=tuple(notes))
    perf, why = salvage_perf(raw_perf, who, vm.num_cpu, notes)
    return dataclasses.replace(vm, perf=perf, perf_error=vm.perf_error or why, damage=tuple(notes))


def _read_host(raw: object, i: int, notes: list[str]) -> FleetHost | None:
    who = _text(raw, "name") or f"hosts[{i}]"
    try:
        host = lenient_record(FleetHost, {**raw, "perf": None} if isinstance(raw, dict) else raw, f"hosts[{i}]",
                              notes)
    except ParseError as exc:
        notes.append(f"host {who}: its record could not be read ({exc.why}): left out of the host rollup")
        return None
    perf, why = salvage_perf(raw.get("perf") if isinstance(raw, dict) else None, f"host {who}", None, notes)
    return dataclasses.replace(host, perf=perf, perf_error=host.perf_error or why)


def load_snapshot(path: str | Path) -> Snapshot:
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_SNAPSHOT_BYTES:
        raise ParseError(f"{size} bytes: larger than any fleet snapshot ({MAX_SNAPSHOT_BYTES} bytes)", file=str(path))
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg}", line=exc.lineno, file=str(path)) from None
    except UnicodeDecodeError:
        raise ParseError("not UTF-8 text", file=str(path)) from None
    except RecursionError:
        raise ParseError("nested deeper than any fleet snapshot", file=str(path)) from None
    return snapshot_from_dict(data, str(path))
