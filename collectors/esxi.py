"""ESXi host collection plan over one SshConnection: ports by MAC, team uplinks, ring and uplink
counters, esxtop, facts.

Every capture, failed or not, is recorded in the bundle manifest with its error kind.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from esxdiag.bundle import BundleWriter, Capture
from esxdiag.errors import NoData, ParseError
from esxdiag.collectors.captures import mark_missing, run_capture
from esxdiag.collectors.ssh import OnWait, SshConnection
from esxdiag.specs import esxtop_max_bytes
from esxdiag.parsers.esxcli import parse_vm_list, parse_vm_ports
from esxdiag.parsers.netstats import normalize_mac, parse_net_stats_list
from esxdiag.parsers.vsish import parse_ls

VMXNET3_SUBTYPE = 9  # net-stats -l SubType of a vmxnet3 vNIC (docs/raw-formats.md §3.1)
ESXTOP_MARGIN_S = 30.0  # esxtop start-up and the last row's write on a busy host


@dataclass(frozen=True)
class HostPort:
    portset: str
    port: int
    mac: str
    client: str
    queues: list[str] = field(default_factory=list)  # rx queue names from vsish ls
    vmxnet3: bool = False  # only vmxnet3 ports have the vmxnet3/ vsish nodes

    @property
    def params(self) -> dict[str, str]:
        return {"portset": self.portset, "port": str(self.port)}


def discover_ports(conn: SshConnection, writer: BundleWriter, target_id: str, macs: list[str]) -> list[HostPort]:
    """The host ports whose MAC is one of ``macs`` (the subject VMs' vNICs), with their rx queues."""
    capture, out = run_capture(conn, writer, target_id, "net_stats_list")
    if not capture.ok:
        return []
    try:
        listing = parse_net_stats_list(out.decode("utf-8", "replace"))
    except (ParseError, NoData) as exc:
        writer.note(f"{target_id}: net-stats -l unusable, no ports discovered: {exc.one_line()}")
        return []
    wanted = {normalize_mac(m) for m in macs}
    ports = []
    for entry in listing.ports:
        if entry.kind != "vnic" or entry.mac not in wanted:
            continue
        port = HostPort(entry.switch, entry.port, entry.mac, entry.client)
        if entry.subtype == VMXNET3_SUBTYPE:
            queues = _rx_queues(conn, writer, target_id, port)
            port = HostPort(port.portset, port.port, port.mac, port.client, queues, vmxnet3=True)
        ports.append(port)
    return ports


def _rx_queues(conn: SshConnection, writer: BundleWriter, target_id: str, port: HostPort) -> list[str]:
    capture, out = run_capture(conn, writer, target_id, "vsish_rxqueues", port.params)
    if not capture.ok:
        return []
    try:
        return [e for e in parse_ls(out.decode("utf-8", "replace")).entries if e.isdigit()]
    except (ParseError, NoData) as exc:
        writer.note(f"{target_id}: rx queues of port {port.port} unusable: {exc.one_line()}")
        return []


@dataclass(frozen=True)
class UplinkSubject:
    """One subject VM as the host names it: the names its world may carry in ``esxcli network vm
    list`` (the inventory name, the VM part of its ports' net-stats -l client names) and its vNIC MACs."""

    label: str
    names: frozenset[str]
    macs: frozenset[str]  # normalised (normalize_mac)


_ETH_SUFFIX = re.compile(r"\.eth\d+$")  # net-stats -l ClientName: <vmname>.ethN, the first vNIC maybe bare
NO_UPLINK_COUNTERS = ("no physical uplink (vmnic) counters: a frame lost on the uplink before the vSwitch "
                      "is not seen")


def uplink_subject(label: str, inventory_name: str | None, macs: Iterable[str], ports: Iterable[HostPort]) -> UplinkSubject:
    """The subject for a VM with these vNIC MACs; ``ports`` are the host ports net-stats -l gave."""
    wanted = frozenset(normalize_mac(m) for m in macs)
    names = {_ETH_SUFFIX.sub("", p.client) for p in ports if p.mac in wanted and p.client}
    if inventory_name:
        names.add(inventory_name)
    return UplinkSubject(label, frozenset(n for n in names if n), wanted)


def discover_uplinks(conn: SshConnection, writer: BundleWriter, target_id: str, subjects: Sequence[UplinkSubject],
                     say: Callable[[str], None]) -> list[str]:
    """The team uplinks (vmnicN) that carry the subjects' vNICs, before sample 0: ``esxcli network vm
    list`` once (world IDs by VM name), then ``esxcli network vm port list -w WORLD`` for each subject
    VM's world; the ``Team Uplink`` of every port whose MAC is one of the VM's vNICs (void or empty:
    none). Each failure is recorded, said once (``say``) with what it costs, and never stops the run;
    a host without esxcli (not found, not allowed, hung) is marked so on the connection."""
    if not subjects:
        return []
    listing_cap, out = run_capture(conn, writer, target_id, "esxcli_vm_list")
    if not listing_cap.ok:
        why = mark_missing(conn, writer, listing_cap, "esxcli", "(esxcli network vm list)", NO_UPLINK_COUNTERS)
        if why is None:
            why = f"{target_id}: esxcli network vm list failed ({listing_cap.error}): {NO_UPLINK_COUNTERS}"
            writer.note(why)
        say(why)
        return []
    try:
        listing = parse_vm_list(out.decode("utf-8", "replace"))
    except (ParseError, NoData) as exc:
        why = f"{target_id}: esxcli network vm list unusable ({exc.one_line()}): {NO_UPLINK_COUNTERS}"
        writer.note(why)
        say(why)
        return []
    worlds: dict[str, list[int]] = {}
    for vm in listing.vms:
        worlds.setdefault(vm.name, []).append(vm.world_id)
    uplinks: set[str] = set()
    for subject in subjects:
        found = sorted({world for name in subject.names for world in worlds.get(name, ())})
        if not found:
            why = (f"{target_id}: VM {subject.label!r} is not in esxcli network vm list (looked for "
                   f"{', '.join(repr(n) for n in sorted(subject.names))}): its team uplink is not known, "
                   f"{NO_UPLINK_COUNTERS}")
            writer.note(why)
            say(why)
            continue
        uplinks |= _team_uplinks(conn, writer, target_id, subject, found, say)
    return sorted(uplinks, key=_natural)


def _team_uplinks(conn: SshConnection, writer: BundleWriter, target_id: str, subject: UplinkSubject,
                  worlds: list[int], say: Callable[[str], None]) -> set[str]:
    uplinks: set[str] = set()
    read = matched = 0
    for world in worlds:
        capture, out = run_capture(conn, writer, target_id, "esxcli_vm_ports", {"world": world})
        if not capture.ok:
            say(f"esxcli_vm_ports (world {world}): {capture.error}: {NO_UPLINK_COUNTERS} for {subject.label!r}")
            continue
        try:
            ports = parse_vm_ports(out.decode("utf-8", "replace")).ports
        except (ParseError, NoData) as exc:
            why = f"{target_id}: esxcli network vm port list -w {world} unusable: {exc.one_line()}"
            writer.note(why)
            say(why)
            continue
        read += 1
        for port in ports:
            if normalize_mac(port.mac) not in subject.macs:
                continue
            matched += 1
            if port.team_uplink:
                uplinks.add(port.team_uplink)
            else:
                writer.note(f"{target_id}: port {port.port_id} ({port.mac}) of VM {subject.label!r} has no team "
                            "uplink (an internal vSwitch, or no active uplink): its frames cross no physical NIC")
    if read and not matched:
        writer.note(f"{target_id}: no port of VM {subject.label!r} in esxcli network vm port list has one of its "
                    f"vNIC MACs {', '.join(sorted(subject.macs))}: its team uplink is not known")
    return uplinks


def _natural(name: str) -> tuple:
    """vmnic2 before vmnic10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def sample_ports(conn: SshConnection, writer: BundleWriter, target_id: str, ports: list[HostPort],
                 sample: int, uplinks: Sequence[str] = ()) -> list[Capture]:
    """rxSummary and clientStats for every port; each rx queue's ring sizes at sample 0; the
    counters of every team uplink (``esxcli network nic stats get -n vmnicN``) at both samples."""
    captures = []
    for port in ports:
        if port.vmxnet3:
            captures.append(run_capture(conn, writer, target_id, "vsish_rxsummary", port.params, sample)[0])
        captures.append(run_capture(conn, writer, target_id, "vsish_clientstats", port.params, sample)[0])
        if sample == 0:
            for queue in port.queues:
                params = {**port.params, "queue": queue}
                captures.append(run_capture(conn, writer, target_id, "vsish_rxqueue_status", params)[0])
    for vmnic in uplinks:  # a name that fails PARAM_PATTERNS["vmnic"] is recorded as skipped, never sent
        captures.append(run_capture(conn, writer, target_id, "esxcli_nic_stats", {"vmnic": vmnic}, sample)[0])
    return captures


def run_esxtop(conn: SshConnection, writer: BundleWriter, target_id: str, window_s: float, delay_s: int,
               on_wait: OnWait | None = None) -> Capture:
    """``esxtop -b -d D -n N`` with N rows covering ``window_s``; waits D*N seconds plus a margin."""
    delay = max(1, int(delay_s))
    iterations = max(1, math.ceil(window_s / delay))
    timeout = delay * iterations + ESXTOP_MARGIN_S
    params = {"delay": str(delay), "iterations": str(iterations)}
    return run_capture(conn, writer, target_id, "esxtop_batch", params, timeout_s=timeout, on_wait=on_wait,
                max_bytes=esxtop_max_bytes(iterations))[0]


def host_facts(conn: SshConnection, writer: BundleWriter, target_id: str) -> Capture:
    return run_capture(conn, writer, target_id, "esxi_version")[0]
