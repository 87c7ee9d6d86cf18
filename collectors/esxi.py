"""ESXi host collection plan over one SshConnection: ports by MAC, ring counters, esxtop, facts.

Every capture, failed or not, is recorded in the bundle manifest with its error kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from esxdiag.bundle import BundleWriter, Capture
from esxdiag.errors import NoData, ParseError
from esxdiag.collectors.captures import run_capture
from esxdiag.collectors.ssh import OnWait, SshConnection
from esxdiag.specs import esxtop_max_bytes
from esxdiag.parsers.netstats import normalize_mac, parse_net_stats_list
from esxdiag.parsers.vsish import parse_ls

VMXNET3_SUBTYPE = 9  # net-stats -l SubType of a vmxnet3 vNIC (formats.md 3.1)
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


def sample_ports(conn: SshConnection, writer: BundleWriter, target_id: str, ports: list[HostPort],
                 sample: int) -> list[Capture]:
    """rxSummary and clientStats for every port; each rx queue's ring sizes at sample 0."""
    captures = []
    for port in ports:
        if port.vmxnet3:
            captures.append(run_capture(conn, writer, target_id, "vsish_rxsummary", port.params, sample)[0])
        captures.append(run_capture(conn, writer, target_id, "vsish_clientstats", port.params, sample)[0])
        if sample == 0:
            for queue in port.queues:
                params = {**port.params, "queue": queue}
                captures.append(run_capture(conn, writer, target_id, "vsish_rxqueue_status", params)[0])
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
